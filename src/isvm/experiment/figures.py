"""The study's figures, from LOO records and Table 3 (matplotlib, Agg backend).

* :func:`plot_curves` -- LOO accuracy against C for each gamma, one row per Ns,
  the methods overlaid (mean over subsamples, a band from the 25th to the 75th
  percentile over subsamples), with a strip under each panel marking the C
  values where each method's mean is within ``near`` points of the best mean of
  the whole (data set, Ns) grid: the paper's claim that ISVM is good over a
  wider area of the grid is the length of those strips.
* :func:`plot_near_best` -- the share of grid points within x points of the
  best, against x, per method (one panel per data set and Ns). Per subsample
  the reference is the best LOO accuracy of *any* method on that subsample, so
  the methods are measured against the same yardstick; shares are averaged over
  subsamples.
* :func:`plot_table3_differences` -- Table 3 differences, ISVM minus each rival,
  as a heat map, ours beside the paper's.
* :func:`plot_table3_vs_paper` -- our Table 3 cells against the paper's, with
  the line y = x.
* :func:`plot_isvm_advantage` -- ISVM minus each rival (mean of the Table 3
  percentile columns) against Ns, one panel per data set, ours beside the
  paper's: the paper's claim that the advantage fades as Ns grows.

Every figure is written as PNG and PDF with a footer stating the settings;
metadata that would change between runs (PDF creation date, PNG software tag)
is left out, and the SVG hash salt is fixed. The numbers behind the
near-best figure are written beside it as CSV.

CLI::

    python -m isvm figures curves --records R.parquet... --dataset iris --out F.png
    python -m isvm figures near-best --records R.parquet... --out F.png
    python -m isvm figures table3 --table3 T3.csv --vs-paper T3_vs_paper.csv \\
        --heatmap H.png --scatter S.png --advantage A.png
"""

from __future__ import annotations

import textwrap
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from isvm.experiment.paper import PAPER_NAMES, paper_table
from isvm.experiment.pooling import printed_name

#: Colours, markers and labels of the methods (the same in every figure).
METHOD_STYLE: dict[str, dict[str, str]] = {
    "isvm": {"color": "#d62728", "marker": "o", "label": "ISVM (inhibitory)"},
    "ova": {"color": "#1f77b4", "marker": "s", "label": "1-vs-all"},
    "ww": {"color": "#2ca02c", "marker": "^", "label": "Weston-Watkins"},
    "ww_paper": {"color": "#9467bd", "marker": "v", "label": "WW (paper kernel)"},
    "llw": {"color": "#8c564b", "marker": "D", "label": "Lee-Lin-Wahba"},
    "isvm_neg": {"color": "#ff9896", "marker": "h", "label": "ISVM, no positive examples"},
    "scatter": {"color": "#e377c2", "marker": "P", "label": "Scatter SVM"},
    "cs": {"color": "#ff7f0e", "marker": "X", "label": "Crammer-Singer"},
    "ovo": {"color": "#17becf", "marker": "<", "label": "1-vs-1"},
    "perceptron": {"color": "#7f7f7f", "marker": "*", "label": "kernel perceptron"},
    "bsvm": {"color": "#bcbd22", "marker": ">", "label": "B-SVM (1-vs-rest)"},
}
RIVAL_LABELS: dict[str, str] = {"ova": "1-vs-all", "ww": "Weston-Watkins"}
RIVAL_SHORT: dict[str, str] = {"ova": "1vA", "ww": "WW"}
DEFAULT_NEAR = 1.0
DEFAULT_TOLERANCES = np.round(np.arange(0.0, 10.0001, 0.25), 2)


# --------------------------------------------------------------------- helpers


def _plt():
    """pyplot on the Agg backend with reproducibility settings."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "isvm"
    matplotlib.rcParams["path.simplify"] = True
    return plt


#: colours and markers of methods METHOD_STYLE does not name (a config's own_methods),
#: by a stable hash of the name, so a method keeps its look across figures and runs
OTHER_COLORS = ("#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d")
OTHER_MARKERS = ("x", "d", "p", "8", "H")


def _style(method: str) -> dict[str, str]:
    if method in METHOD_STYLE:
        return METHOD_STYLE[method]
    k = zlib.crc32(method.encode())
    return {
        "color": OTHER_COLORS[k % len(OTHER_COLORS)],
        "marker": OTHER_MARKERS[k % len(OTHER_MARKERS)],
        "label": method,
    }


def _method_order(methods) -> list[str]:
    known = [m for m in METHOD_STYLE if m in set(methods)]
    return known + sorted(set(methods) - set(known))


def _title(dataset: str) -> str:
    return printed_name(dataset)


def save_figure(fig, path: str | Path, *, caption: str = "") -> list[Path]:
    """Write ``path`` (.png) and a .pdf beside it, with ``caption`` as a footer."""
    plt = _plt()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if caption:
        wrapped = "\n".join(textwrap.wrap(caption, width=int(fig.get_figwidth() * 17)))
        fig.text(0.005, 0.002, wrapped, fontsize=7, va="bottom", ha="left", color="0.25")
    outs = [path.with_suffix(".png"), path.with_suffix(".pdf")]
    for out in outs:
        meta = {"Software": None} if out.suffix == ".png" else {"CreationDate": None}
        fig.savefig(out, dpi=110, metadata=meta)
    plt.close(fig)
    return outs


def _footer_space(fig, caption: str, per_line_in: float = 0.13) -> float:
    """Fraction of the figure height to leave for the caption."""
    if not caption:
        return 0.0
    lines = len(textwrap.wrap(caption, width=int(fig.get_figwidth() * 17)))
    return min(0.3, (lines * per_line_in + 0.1) / fig.get_figheight())


# ----------------------------------------------------------------- statistics


def curve_stats(records: pd.DataFrame, band: tuple[float, float] = (25, 75)) -> pd.DataFrame:
    """Per (dataset, Ns, method, gamma, C): mean, band low/high (%) over subsamples, count."""
    acc = records.assign(acc=100.0 * records["loo_accuracy"].astype(float))
    keys = ["dataset", "Ns", "method", "gamma", "C"]
    g = acc.groupby(keys, sort=True)["acc"]
    out = g.agg(mean="mean", n="count").reset_index()
    out["lo"] = g.quantile(band[0] / 100.0).to_numpy()
    out["hi"] = g.quantile(band[1] / 100.0).to_numpy()
    return out


def near_best_share(
    records: pd.DataFrame, tolerances: Sequence[float] = DEFAULT_TOLERANCES
) -> pd.DataFrame:
    """Share of the grid within x points of the best, per (dataset, Ns, method, x).

    For each subsample the best LOO accuracy over all methods and grid points
    is the reference; a method's share at tolerance x is the fraction of its
    grid points whose accuracy is >= best - x (percentage points). Shares are
    averaged over subsamples.
    """
    acc = records.assign(acc=100.0 * records["loo_accuracy"].astype(float))
    best = acc.groupby(["dataset", "Ns", "subsample"])["acc"].transform("max")
    gap = (best - acc["acc"]).to_numpy()
    tol = np.asarray(tolerances, dtype=float)
    within = gap[:, None] <= tol[None, :] + 1e-9
    wide = pd.DataFrame(within, columns=[f"{t:g}" for t in tol])
    wide = pd.concat(
        [acc[["dataset", "Ns", "method", "subsample"]].reset_index(drop=True), wide], axis=1
    )
    per_sub = wide.groupby(["dataset", "Ns", "method", "subsample"], sort=True).mean()
    mean = per_sub.groupby(level=["dataset", "Ns", "method"], sort=True).mean()
    long = mean.reset_index().melt(
        id_vars=["dataset", "Ns", "method"], var_name="tolerance", value_name="share"
    )
    long["tolerance"] = long["tolerance"].astype(float)
    return long.sort_values(
        ["dataset", "Ns", "method", "tolerance"], kind="mergesort", ignore_index=True
    )


def table3_differences(table3: pd.DataFrame, percentiles: Sequence[float]) -> pd.DataFrame:
    """ISVM minus each rival per (dataset, Ns) and percentile: columns '1vA q%', 'WW q%'."""
    out = table3[["dataset", "Ns"]].copy()
    for rival in RIVAL_LABELS:
        for q in percentiles:
            a, b = f"isvm_{q:g}", f"{rival}_{q:g}"
            if a in table3 and b in table3:
                out[f"{RIVAL_SHORT[rival]} {q:g}%"] = table3[a] - table3[b]
    return out


# ----------------------------------------------------------------- the figures


def plot_curves(
    records: pd.DataFrame,
    path: str | Path,
    *,
    dataset: str | None = None,
    near: float = DEFAULT_NEAR,
    caption: str = "",
) -> list[Path]:
    """LOO accuracy vs C per gamma (columns) and Ns (rows) for one data set."""
    plt = _plt()
    if dataset is not None:
        records = records[records["dataset"] == dataset]
    if records.empty:
        raise ValueError(f"no LOO records for data set {dataset!r}")
    dataset = str(records["dataset"].iloc[0])
    stats = curve_stats(records)
    sizes = sorted(stats["Ns"].unique())
    gammas = sorted(stats["gamma"].unique())
    methods = _method_order(stats["method"].unique())
    n_sub = int(records.groupby(["Ns", "method"])["subsample"].nunique().min())
    width = 4.8 * len(gammas) + 0.9
    height = 3.7 * len(sizes) + 1.3
    fig = plt.figure(figsize=(width, height))
    bottom = _footer_space(fig, caption) + 0.02
    outer = fig.add_gridspec(
        len(sizes),
        1,
        hspace=0.32,
        top=1 - 0.85 / height,
        bottom=bottom + 0.3 / height,
        left=0.75 / width,
        right=1 - 0.1 / width,
    )
    for i, ns in enumerate(sizes):
        inner = outer[i].subgridspec(
            2, len(gammas), height_ratios=[4, 1.2], hspace=0.06, wspace=0.3
        )
        cell = stats[stats["Ns"] == ns]
        best = cell["mean"].max()
        for j, gamma in enumerate(gammas):
            ax = fig.add_subplot(inner[0, j])
            strip = fig.add_subplot(inner[1, j], sharex=ax)
            sub = cell[cell["gamma"] == gamma]
            shares = []
            for k, m in enumerate(methods):
                s = sub[sub["method"] == m].sort_values("C")
                st = _style(m)
                if s.empty:
                    shares.append("")
                    continue
                ax.plot(s["C"], s["mean"], color=st["color"], lw=1.8, label=st["label"])
                ax.fill_between(s["C"], s["lo"], s["hi"], color=st["color"], alpha=0.15, lw=0)
                ok = s["mean"].to_numpy() >= best - near - 1e-9
                Cs = s["C"].to_numpy()
                strip.scatter(
                    Cs[ok], np.full(ok.sum(), k), marker="s", s=14, color=st["color"], lw=0
                )
                shares.append(f"{100 * ok.mean():.0f}%")
            ax.axhline(best, color="0.5", lw=0.8, ls=":")
            ax.set_title(f"{_title(dataset)}, Ns = {ns}, gamma = {gamma:g}", fontsize=10)
            ax.grid(alpha=0.3)
            ax.tick_params(labelbottom=False)
            if j == 0:
                ax.set_ylabel("LOO accuracy (%)")
                strip.set_ylabel(f"within\n{near:g} pt", fontsize=7)
            strip.set_yticks(range(len(methods)), shares, fontsize=7)
            for label, m in zip(strip.get_yticklabels(), methods, strict=True):
                label.set_color(_style(m)["color"])
            strip.set_ylim(-0.7, len(methods) - 0.3)
            strip.grid(alpha=0.3, axis="x")
            strip.set_xlabel("C", fontsize=8, labelpad=1)
            if i == 0 and j == len(gammas) - 1:
                ax.legend(fontsize=8, loc="lower right")
    fig.suptitle(
        f"{_title(dataset)}: LOO accuracy over the (C, gamma) grid, mean over {n_sub} "
        "subsamples (band: 25th-75th percentile)\n"
        f"strips: C values where the mean is within {near:g} point(s) of the best mean "
        "at that Ns (dotted line), and the share of the C axis they cover",
        fontsize=9,
    )
    return save_figure(fig, path, caption=caption)


def plot_near_best(
    records: pd.DataFrame,
    path: str | Path,
    *,
    tolerances: Sequence[float] = DEFAULT_TOLERANCES,
    caption: str = "",
    csv: str | Path | None = None,
) -> list[Path]:
    """Share of grid points within x points of the best vs x; rows data sets, columns Ns."""
    plt = _plt()
    share = near_best_share(records, tolerances)
    if csv is not None:
        Path(csv).parent.mkdir(parents=True, exist_ok=True)
        share.to_csv(csv, index=False, float_format="%.4f", lineterminator="\n")
    order = {name: i for i, name in enumerate(PAPER_NAMES)}
    datasets = sorted(share["dataset"].unique(), key=lambda d: (order.get(d, 99), d))
    n_cols = int(share.groupby("dataset")["Ns"].nunique().max())
    methods = _method_order(share["method"].unique())
    width, height = 3.0 * n_cols + 0.8, 2.2 * len(datasets) + 1.6
    fig, axes = plt.subplots(
        len(datasets), n_cols, figsize=(width, height), squeeze=False, sharey=True
    )
    bottom = _footer_space(fig, caption) + 0.3 / height
    fig.subplots_adjust(
        top=1 - 1.25 / height,
        bottom=bottom + 0.3 / height,
        left=0.6 / width,
        right=1 - 0.2 / width,
        hspace=0.55,
        wspace=0.12,
    )
    last_in_column = {
        j: max(i for i, d in enumerate(datasets) if _n_sizes(share, d) > j) for j in range(n_cols)
    }
    x_max = float(share["tolerance"].max())
    for i, ds in enumerate(datasets):
        sizes = sorted(share.loc[share["dataset"] == ds, "Ns"].unique())
        for j in range(n_cols):
            ax = axes[i, j]
            if j >= len(sizes):
                ax.set_visible(False)
                continue
            ns = sizes[j]
            cell = share[(share["dataset"] == ds) & (share["Ns"] == ns)]
            for m in methods:
                s = cell[cell["method"] == m]
                if s.empty:
                    continue
                st = _style(m)
                ax.plot(
                    s["tolerance"], 100 * s["share"], color=st["color"], lw=1.6, label=st["label"]
                )
            ax.set_title(f"{_title(ds)}, Ns = {ns}", fontsize=9)
            ax.grid(alpha=0.3)
            ax.set_xlim(0, x_max)
            ax.set_ylim(-3, 103)
            if j == 0:
                ax.set_ylabel("% of grid", fontsize=8)
            if i == last_in_column[j]:
                ax.set_xlabel("x: accuracy points below the best", fontsize=8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="upper center",
        bbox_to_anchor=(0.5, 1 - 0.62 / height),
        ncol=len(methods),
        fontsize=8,
        frameon=False,
    )
    title = (
        "Share of the (C, gamma) grid within x accuracy points of the best model of the "
        "subsample (any method), mean over subsamples: higher = a wider good region"
    )
    fig.suptitle(
        "\n".join(textwrap.wrap(title, width=int(width * 14))),
        fontsize=9,
        y=1 - 0.08 / height,
        va="top",
    )
    return save_figure(fig, path, caption=caption)


def _n_sizes(share: pd.DataFrame, dataset: str) -> int:
    return int(share.loc[share["dataset"] == dataset, "Ns"].nunique())


def plot_table3_differences(
    table3: pd.DataFrame,
    path: str | Path,
    *,
    percentiles: Sequence[float] = (10, 25, 50),
    caption: str = "",
) -> list[Path]:
    """Heat map of ISVM minus each rival (Table 3 cells), ours beside the paper's."""
    plt = _plt()
    from matplotlib.colors import TwoSlopeNorm

    ours = table3_differences(table3, percentiles)
    paper = paper_table(3)
    paper_diff = table3_differences(paper, percentiles)
    keys = ours[["dataset", "Ns"]].astype({"Ns": int})
    paper_diff = keys.merge(paper_diff.astype({"Ns": int}), on=["dataset", "Ns"], how="left")
    cols = [c for c in ours.columns if c not in ("dataset", "Ns")]
    values = [ours[cols].to_numpy(float), paper_diff.reindex(columns=cols).to_numpy(float)]
    finite = np.concatenate([v[np.isfinite(v)] for v in values])
    lim = float(np.clip(np.abs(finite).max() if finite.size else 1.0, 0.5, 10.0))
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-lim, vmax=lim)
    rows = [f"{d}  {n}" for d, n in zip(keys["dataset"], keys["Ns"], strict=True)]
    width = 2 * (0.55 * len(cols) + 1.6) + 1.2
    height = 0.32 * len(rows) + 2.4
    fig, axes = plt.subplots(1, 2, figsize=(width, height), sharey=True)
    bottom = _footer_space(fig, caption) + 0.75 / height
    fig.subplots_adjust(top=1 - 0.8 / height, bottom=bottom, left=1.5 / width, right=0.9)
    image = None
    for ax, vals, name in zip(axes, values, ("ours", "paper"), strict=True):
        image = ax.imshow(vals, cmap="RdBu_r", norm=norm, aspect="auto")
        ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right", fontsize=8)
        ax.set_yticks(range(len(rows)), rows, fontsize=8)
        ax.set_title(f"{name}: ISVM minus rival (points)", fontsize=10)
        for (r, c), v in np.ndenumerate(vals):
            text = "-" if not np.isfinite(v) else f"{v:.1f}"
            dark = np.isfinite(v) and abs(v) > 0.6 * lim
            colour = "white" if dark else "black"
            ax.text(c, r, text, ha="center", va="center", fontsize=6.5, color=colour)
    cax = fig.add_axes((0.92, bottom, 0.015, 1 - 0.8 / height - bottom))
    fig.colorbar(image, cax=cax)
    cax.set_ylabel("points; red: ISVM better, blue: rival better", fontsize=8)
    fig.suptitle(
        "Table 3 differences: ISVM minus 1-vs-all (1vA) and ISVM minus Weston-Watkins (WW), "
        "per percentile of best models",
        fontsize=10,
    )
    return save_figure(fig, path, caption=caption)


def plot_table3_vs_paper(
    comparison: pd.DataFrame, path: str | Path, *, caption: str = ""
) -> list[Path]:
    """Our Table 3 cells (y) against the paper's (x), y = x dashed, each data set labelled."""
    plt = _plt()
    both = comparison[comparison["ours"].notna() & comparison["paper"].notna()]
    fig, ax = plt.subplots(figsize=(6.6, 6.8))
    bottom = _footer_space(fig, caption) + 0.08
    fig.subplots_adjust(bottom=bottom, top=0.9, left=0.12, right=0.97)
    markers = {10: "o", 25: "s", 50: "^"}
    if both.empty:
        ax.text(
            0.5,
            0.5,
            "no Table 3 cell in common with the paper",
            ha="center",
            transform=ax.transAxes,
        )
        lo, hi = 0.0, 100.0
    else:
        lo = float(min(both["ours"].min(), both["paper"].min())) - 2
        hi = float(max(both["ours"].max(), both["paper"].max())) + 2
        for m in _method_order(both["method"].unique()):
            for q, mk in markers.items():
                s = both[(both["method"] == m) & (both["percentile"].astype(float) == q)]
                if s.empty:
                    continue
                st = _style(m)
                ax.scatter(
                    s["paper"],
                    s["ours"],
                    color=st["color"],
                    marker=mk,
                    s=26,
                    alpha=0.8,
                    label=f"{st['label']}, top {q}%",
                )
        several_sizes = both.groupby("dataset")["Ns"].nunique().max() > 1
        for (ds, ns), cell in both.groupby(["dataset", "Ns"], sort=False):
            # one label per data set (and size), at the mean of its cells
            name = f"{ds} {ns}" if several_sizes else str(ds)
            ax.annotate(
                name,
                (cell["paper"].mean(), cell["ours"].mean()),
                fontsize=6,
                xytext=(3, 3),
                textcoords="offset points",
                color="0.25",
            )
        diff = both["ours"] - both["paper"]
        ax.text(
            0.02,
            0.98,
            f"{len(both)} cells; mean diff {diff.mean():+.2f}, mean |diff| "
            f"{diff.abs().mean():.2f} points",
            transform=ax.transAxes,
            va="top",
            fontsize=8,
        )
        ax.legend(fontsize=7, loc="lower right")
    ax.plot([lo, hi], [lo, hi], color="0.3", ls="--", lw=1, label="_y = x")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    ax.set_xlabel("paper's Table 3 (%)")
    ax.set_ylabel("our Table 3 (%)")
    ax.set_title("Table 3: ours against the paper's (dashed: y = x)", fontsize=10)
    return save_figure(fig, path, caption=caption)


def isvm_advantage(table3: pd.DataFrame, percentiles: Sequence[float]) -> pd.DataFrame:
    """Per (dataset, Ns, rival): ISVM minus the rival, averaged over ``percentiles``."""
    diffs = table3_differences(table3, percentiles)
    rows = []
    for rival in RIVAL_LABELS:
        cols = [c for c in diffs.columns if c.startswith(f"{RIVAL_SHORT[rival]} ")]
        if cols:
            rows.append(diffs[["dataset", "Ns"]].assign(rival=rival, diff=diffs[cols].mean(axis=1)))
    if not rows:
        return pd.DataFrame(columns=["dataset", "Ns", "rival", "diff"])
    return pd.concat(rows, ignore_index=True).astype({"Ns": int})


def plot_isvm_advantage(
    table3: pd.DataFrame,
    path: str | Path,
    *,
    percentiles: Sequence[float] = (10, 25, 50),
    caption: str = "",
) -> list[Path]:
    """ISVM minus 1-vs-all and minus WW against Ns, one panel per data set of ``table3``:
    ours (filled markers, solid) at the sizes run, the paper's (hollow, dashed) at all of
    its sizes."""
    plt = _plt()
    ours = isvm_advantage(table3, percentiles)
    paper = isvm_advantage(paper_table(3), percentiles)
    datasets = list(dict.fromkeys(table3["dataset"]))
    n_cols = min(4, max(1, len(datasets)))
    n_rows = -(-len(datasets) // n_cols) if datasets else 1
    fig, axes = plt.subplots(
        n_rows, n_cols, figsize=(3.2 * n_cols, 2.5 * n_rows + 1.2), squeeze=False
    )
    bottom = _footer_space(fig, caption) + 0.5 / fig.get_figheight()
    fig.subplots_adjust(top=1 - 0.9 / fig.get_figheight(), bottom=bottom, hspace=0.55, wspace=0.3)
    for ax in axes.flat[len(datasets) :]:
        ax.set_visible(False)
    for ax, ds in zip(axes.flat, datasets, strict=False):
        ax.axhline(0.0, color="0.5", lw=0.8)
        for rival in RIVAL_LABELS:
            st = _style(rival)
            for src, frame, kw in (
                ("paper", paper, {"ls": "--", "mfc": "none", "alpha": 0.8}),
                ("ours", ours, {"ls": "-"}),
            ):
                g = frame[(frame["dataset"] == ds) & (frame["rival"] == rival)].sort_values("Ns")
                if g.empty:
                    continue
                ax.plot(
                    g["Ns"],
                    g["diff"],
                    color=st["color"],
                    marker=st["marker"],
                    ms=5,
                    label=f"ISVM - {RIVAL_LABELS[rival]}, {src}",
                    **kw,
                )
        ax.set_title(_title(ds), fontsize=9)
        ax.set_xscale("log")
        sizes = sorted(
            set(paper.loc[paper["dataset"] == ds, "Ns"])
            | set(ours.loc[ours["dataset"] == ds, "Ns"])
        )
        ax.set_xticks(sizes, [str(s) for s in sizes], fontsize=7)
        ax.minorticks_off()
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(alpha=0.3)
    if datasets:
        axes.flat[0].set_ylabel("points")
        handles, labels = axes.flat[0].get_legend_handles_labels()
        fig.legend(
            handles,
            labels,
            loc="upper center",
            ncol=4,
            fontsize=7,
            frameon=False,
            bbox_to_anchor=(0.5, 1 - 0.35 / fig.get_figheight()),
        )
    fig.suptitle(
        "ISVM minus rival against Ns (mean of the Table 3 columns "
        + ", ".join(f"{q:g}%" for q in percentiles)
        + "): ours solid, the paper's dashed",
        fontsize=10,
        y=1 - 0.05 / fig.get_figheight(),
    )
    return save_figure(fig, path, caption=caption)
