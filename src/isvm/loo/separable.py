"""The full fit of a dual that is L separate problems (1-vs-all), one class at a time.

1-vs-all's Q is block diagonal by class: ``Q[(i, j), (k, m)] = K_ik y_ij y_km [j = m]``
(no mean term, one coding column per class). Its free face's block ``H = Q_FF`` is then
block diagonal too, and factorising, inverting and moving it per class costs about
L^2 times less than as one dense block (Yeast, 10 classes, about 2,000 free
variables: ten blocks of about 200), and the outside products ``Q[v, F] Hinv`` L^2
times less. :func:`separable_parts` finds such a coding's classes, and
:func:`exact_separable_fit` runs :func:`~isvm.loo.full_fit.exact_full_fit` on each
class's binary problem (one coding column) and merges the parts into the one
:class:`~isvm.loo.full_fit.FullOptimum` the folds take: the same optimum, inverse
and products, with the zero blocks written out. Along a C path each class keeps its
own previous optimum (``FullOptimum.parts``), so each class's inverse is updated
from its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from isvm.loo.full_fit import FullOptimum, _gather, exact_full_fit
from isvm.loo.settings import DEFAULT_SETTINGS
from isvm.methods import Coding, get_formulation, separable_by_column
from isvm.seeding import derive_seed
from isvm.solvers import variable_list


@dataclass(frozen=True)
class ClassPart:
    """One class's binary problem: its coding (one column) and its variables' global ids."""

    column: int
    coding: Coding
    var_ids: NDArray[np.int64]  # global variable index of each of the part's points
    points: NDArray[np.int64]  # the points with a variable in this class (its var_i)


def separable_parts(coding: Coding) -> tuple[ClassPart, ...] | None:
    """One :class:`ClassPart` per coding column where Q is block diagonal by column.

    That holds for 1-vs-all (:func:`~isvm.methods.separable_by_column`); None for
    every coupled formulation. The parts' global variable ids are positions in
    ``variable_list(coding)``, the order every problem of the coding uses.
    """
    if not separable_by_column(coding):
        return None
    vals, mask = coding.vals, coding.var_mask
    n, n_classes = mask.shape
    var_i, var_j = variable_list(coding)
    var_id = np.full(mask.shape, -1, dtype=np.int64)
    var_id[var_i, var_j] = np.arange(var_i.shape[0])
    parts = []
    for j in range(n_classes):
        points = np.flatnonzero(mask[:, j]).astype(np.int64)
        sub_cols = np.full((n, 1, 2), -1, dtype=np.int64)
        sub_vals = np.zeros((n, 1, 2))
        sub_cols[points, 0, 0] = 0
        sub_vals[points, 0, 0] = vals[points, j, 0]
        sub = Coding(
            sub_cols,
            sub_vals,
            np.ascontiguousarray(mask[:, j : j + 1]),
            1,
            0.0,
            np.ascontiguousarray(coding.block_w[:, j : j + 1]),
            0.0,
            coding.margin,
        )
        parts.append(ClassPart(j, sub, np.ascontiguousarray(var_id[points, j]), points))
    return tuple(parts)


def separable_method(method: str) -> bool:
    """Whether ``method``'s dual is L separate problems (:func:`separable_parts`)."""
    return separable_parts(get_formulation(method).encode(np.arange(3), 3)) is not None


def exact_separable_fit(
    K: NDArray[np.float64],
    parts: tuple[ClassPart, ...],
    n_var: int,
    alpha0: NDArray[np.float64],
    C: float,
    *,
    max_free: int,
    outside_max_entries: int = DEFAULT_SETTINGS.outside_max_entries,
    previous: FullOptimum | None = None,
    seed: int = 0,
    **kwargs,
) -> FullOptimum | None:
    """:func:`~isvm.loo.full_fit.exact_full_fit` class by class, merged.

    ``kwargs`` go to each class's fit as they are. Returns None where any class's fit
    does (its sets never settled) or the merged free set exceeds ``max_free`` (the
    folds take the whole inverse, dense). The merged outside products are kept only
    within ``outside_max_entries``, as for one dense fit.
    """
    prev_parts = None if previous is None else previous.parts
    fits = []
    for k, part in enumerate(parts):
        fit = exact_full_fit(
            K,
            part.coding,
            part.points,
            np.zeros(part.points.shape[0], dtype=np.int64),
            np.ascontiguousarray(alpha0[:, part.column : part.column + 1]),
            C,
            max_free=max_free,
            outside_max_entries=outside_max_entries,
            seed=derive_seed(seed, "class", k),
            previous=None if prev_parts is None else prev_parts[k],
            **kwargs,
        )
        if fit is None:
            return None
        fits.append(fit)
    if sum(fit.free_vars.shape[0] for fit in fits) > max_free:
        return None
    return _merged(parts, fits, n_var, outside_max_entries)


def _merged(
    parts: tuple[ClassPart, ...], fits: list[FullOptimum], n_var: int, max_outside_entries: int
) -> FullOptimum:
    """The classes' optima as one: columns side by side, the inverse block diagonal,
    each outside row non-zero only in its own class's block of columns."""
    n = fits[0].alpha.shape[0]
    n_classes = len(parts)
    alpha = np.zeros((n, n_classes))
    S = np.zeros((n_classes, n))
    S_bound = np.zeros((n_classes, n))
    status = np.zeros(n_var, dtype=np.int8)
    free, outside = [], []
    for part, fit in zip(parts, fits, strict=True):
        alpha[:, part.column] = fit.alpha[:, 0]
        S[part.column] = fit.S[0]
        S_bound[part.column] = fit.S_bound[0]
        status[part.var_ids] = fit.status
        free.append(part.var_ids[fit.free_vars])
        outside.append(np.flatnonzero(fit.free_pos < 0))  # the part's own indices
    free_vars = np.concatenate(free)
    nf = free_vars.shape[0]
    free_pos = np.full(n_var, -1, dtype=np.int64)
    free_pos[free_vars] = np.arange(nf)
    out_pos = np.full(n_var, -1, dtype=np.int64)
    Q_out, Y_out = np.zeros((0, nf)), np.zeros((0, nf))
    n_out = sum(rows.shape[0] for rows in outside)
    with_products = all(
        fit.Q_out.shape[0] == rows.shape[0] for fit, rows in zip(fits, outside, strict=True)
    )
    if with_products and n_out * nf <= max_outside_entries:
        Q_out, Y_out = np.zeros((n_out, nf)), np.zeros((n_out, nf))
        r0 = c0 = 0
        for fit, rows in zip(fits, outside, strict=True):
            # the part's products are in its own row order (its out_pos)
            order = fit.out_pos[rows]
            r1, c1 = r0 + rows.shape[0], c0 + fit.free_vars.shape[0]
            columns = np.arange(c1 - c0)
            _gather(fit.Q_out, order, columns, Q_out[r0:r1, c0:c1])
            _gather(fit.Y_out, order, columns, Y_out[r0:r1, c0:c1])
            r0, c0 = r1, c1
        global_ids = [part.var_ids[rows] for part, rows in zip(parts, outside, strict=True)]
        out_pos[np.concatenate(global_ids)] = np.arange(n_out)
    return FullOptimum(
        alpha=alpha,
        S=S,
        ssum=S.sum(axis=0),
        status=status,
        free_vars=free_vars,
        free_pos=free_pos,
        Hinv=_block_diagonal([fit.Hinv for fit in fits]),
        S_bound=S_bound,
        ssum_bound=S_bound.sum(axis=0),
        iterations=sum(fit.iterations for fit in fits),
        Q_out=Q_out,
        Y_out=Y_out,
        out_pos=out_pos,
        exact_inverse=all(fit.exact_inverse for fit in fits),
        products_updated=all(fit.products_updated for fit in fits),
        parts=tuple(fits),
    )


def _block_diagonal(blocks: list[NDArray[np.float64]]) -> NDArray[np.float64]:
    """The square blocks on a zero matrix's diagonal, in order (one write per block:
    ``scipy.linalg.block_diag`` copies the whole matrix once per block)."""
    size = sum(block.shape[0] for block in blocks)
    out = np.zeros((size, size))
    start = 0
    for block in blocks:
        stop = start + block.shape[0]
        out[start:stop, start:stop] = block
        start = stop
    return out
