"""Multiclass hinge losses and exact minimisers of their conditional risk.

For class-probability vector ``p`` the conditional risk of a score vector
``f in R^L`` is ``R(f) = sum_j p_j h_j(f)`` (equation 10.1 of the paper). Every
loss here writes ``h_j`` as a sum of *terms*, each the maximum of zero and a few
affine pieces ``c + w . f``, so ``R`` is convex and piecewise linear and its
minimum is a linear programme. Two exact minimisers share that representation:

* :func:`minimise_lp` solves the LP with HiGHS, one ``p`` at a time (the
  reference, slow: about a millisecond per LP);
* :func:`minimise_fast` evaluates ``R`` on the finitely many vertices of the
  arrangement of breakpoint hyperplanes (:func:`candidates`), enumerated once
  per loss and ``L``; the minimum over them is the exact minimum over ``R^L``
  because ``R`` is affine on every cell of that arrangement and bounded below.

Shift-invariant losses (ISVM with or without its positive terms, WW, CS) are
minimised under ``sum_j f_j = 0``, which changes neither the minimum nor any
decision; Lee-Lin-Wahba has that constraint as part of its definition.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy.optimize import linprog

#: Losses by short name (the CLI's ``--loss`` values), with a printed name.
LOSS_NAMES: dict[str, str] = {
    "ova": "1-vs-all (regular SVM)",
    "isvm": "ISVM (inhibitory)",
    "ww": "Weston-Watkins",
    "cs": "Crammer-Singer",
    "llw": "Lee-Lin-Wahba",
    "isvm_neg": "ISVM without positive examples",
}
LOSSES: tuple[str, ...] = tuple(LOSS_NAMES)

#: HiGHS tolerances for the reference LP (tighter than the defaults, so that
#: the optimal-face LPs of :mod:`isvm.experiment.consistency` stay on the face).
HIGHS_OPTIONS: dict[str, float] = {
    "primal_feasibility_tolerance": 1e-10,
    "dual_feasibility_tolerance": 1e-10,
}


@dataclass(frozen=True, eq=False)
class Loss:
    """A multiclass loss ``h_j(f) = sum_t max(0, max_pieces c + w . f)``.

    ``pieces`` has one row ``(c, w_1..w_L)`` per affine piece, ``piece_term``
    the term of each piece, ``term_class`` the class ``j`` of each term.
    """

    name: str
    L: int
    margin: float
    pieces: np.ndarray
    piece_term: np.ndarray
    term_class: np.ndarray
    sum_zero: bool

    @property
    def n_terms(self) -> int:
        """Number of hinge terms over all classes (the LP's slack variables)."""
        return int(self.term_class.size)

    def terms(self, f: np.ndarray) -> np.ndarray:
        """Every term's value at the rows of ``f`` (shape ``(n, n_terms)``)."""
        f = np.atleast_2d(np.asarray(f, dtype=float))
        vals = self.pieces[:, 0] + f @ self.pieces[:, 1:].T
        out = np.zeros((f.shape[0], self.n_terms))
        for t in range(self.n_terms):
            out[:, t] = np.maximum(0.0, vals[:, self.piece_term == t].max(axis=1))
        return out

    def h(self, f: np.ndarray) -> np.ndarray:
        """The per-class losses ``h_j(f)`` at the rows of ``f`` (shape ``(n, L)``)."""
        return self.terms(f) @ self.class_matrix().T

    def risk(self, p: np.ndarray, f: np.ndarray) -> np.ndarray:
        """Conditional risk ``sum_j p_j h_j(f)`` row by row."""
        return np.sum(np.atleast_2d(p) * self.h(f), axis=1)

    def class_matrix(self) -> np.ndarray:
        """``(L, n_terms)`` 0/1 matrix: which terms add up to ``h_j``."""
        return (self.term_class[None, :] == np.arange(self.L)[:, None]).astype(float)


@cache
def make_loss(name: str, L: int, margin: float = 1.0) -> Loss:
    """The loss ``name`` (one of :data:`LOSSES`) for ``L`` classes.

    ``margin`` is Weston-Watkins' margin (1 as in the paper's appendix E, 2 as
    in Weston & Watkins 1999); the other losses ignore it.
    """
    if name not in LOSS_NAMES:
        raise ValueError(f"unknown loss {name!r}; choose from {', '.join(LOSSES)}")
    if L < 2:
        raise ValueError(f"need L >= 2 classes, got {L}")
    eye, mean = np.eye(L), np.full(L, 1.0 / L)
    terms: list[tuple[int, list[tuple[float, np.ndarray]]]] = []
    for j in range(L):
        others = [i for i in range(L) if i != j]
        if name == "ova":  # [1 - f_j]_+ + sum_{i != j} [1 + f_i]_+
            terms.append((j, [(1.0, -eye[j])]))
            terms += [(j, [(1.0, eye[i])]) for i in others]
        elif name == "isvm":  # the same on f - fbar
            terms.append((j, [(1.0, -(eye[j] - mean))]))
            terms += [(j, [(1.0, eye[i] - mean)]) for i in others]
        elif name == "ww":  # sum_{i != j} [m - (f_j - f_i)]_+
            terms += [(j, [(float(margin), eye[i] - eye[j])]) for i in others]
        elif name == "isvm_neg":  # isvm's negative terms only: sum_{i != j} [1 + f_i - fbar]_+
            terms += [(j, [(1.0, eye[i] - mean)]) for i in others]
        elif name == "cs":  # max_{i != j} [1 - (f_j - f_i)]_+
            terms.append((j, [(1.0, eye[i] - eye[j]) for i in others]))
        else:  # llw: sum_{i != j} [f_i + 1/(L-1)]_+ with sum_j f_j = 0
            terms += [(j, [(1.0 / (L - 1), eye[i])]) for i in others]
    rows, piece_term = [], []
    for t, (_, pcs) in enumerate(terms):
        for c, w in pcs:
            rows.append(np.concatenate([[c], w]))
            piece_term.append(t)
    return Loss(
        name=name,
        L=L,
        margin=float(margin) if name == "ww" else 1.0,
        pieces=np.array(rows),
        piece_term=np.array(piece_term),
        term_class=np.array([j for j, _ in terms]),
        sum_zero=name != "ova",
    )


def _breakpoint_hyperplanes(loss: Loss) -> np.ndarray:
    """Rows ``(w, b)`` of the distinct hyperplanes ``w . f = b`` where a term kinks."""
    planes: dict[tuple[float, ...], np.ndarray] = {}
    for t in range(loss.n_terms):
        pcs = [np.zeros(loss.L + 1), *loss.pieces[loss.piece_term == t]]
        for a, b in itertools.combinations(pcs, 2):
            w, c = a[1:] - b[1:], a[0] - b[0]
            if np.allclose(w, 0.0):
                continue
            row = np.concatenate([w, [-c]])
            row = row / row[np.flatnonzero(np.abs(w) > 1e-12)[0]]  # first w entry = 1
            planes.setdefault(tuple(np.round(row, 9)), row)
    return np.array([planes[k] for k in sorted(planes)])


@cache
def _candidates_cached(name: str, L: int, margin: float) -> np.ndarray:
    loss = make_loss(name, L, margin)
    planes = _breakpoint_hyperplanes(loss)
    A, b = planes[:, :L], planes[:, L]
    n_eq = 1 if loss.sum_zero else 0
    dim = L - n_eq
    found = []
    combos = np.array(list(itertools.combinations(range(len(A)), dim)), dtype=int)
    for start in range(0, len(combos), 200_000):
        chunk = combos[start : start + 200_000]
        M, rhs = A[chunk], b[chunk]
        if n_eq:
            M = np.concatenate([M, np.ones((len(chunk), 1, L))], axis=1)
            rhs = np.concatenate([rhs, np.zeros((len(chunk), 1))], axis=1)
        ok = np.abs(np.linalg.det(M)) > 1e-9
        if ok.any():
            found.append(np.linalg.solve(M[ok], rhs[ok][..., None])[..., 0])
    verts = np.concatenate(found)
    verts = np.unique(np.round(verts, 9) + 0.0, axis=0)  # + 0.0 turns -0.0 into 0.0
    verts.setflags(write=False)
    return verts


def candidates(loss: Loss) -> np.ndarray:
    """Vertices of the arrangement of ``loss``'s breakpoint hyperplanes.

    ``R`` is affine on each cell of the arrangement, the cells are pointed
    (within ``sum f = 0`` where that applies) and ``R`` is bounded below with a
    bounded set of minimisers for ``p`` in the open simplex, so the minimum is
    attained at these points and the set of minimisers is the convex hull of the
    optimal ones. Rows are sorted lexicographically; the array is read-only.
    Enumeration solves one small system per ``L``-subset of hyperplanes: fine
    up to ``L = 6`` or so.
    """
    return _candidates_cached(loss.name, loss.L, loss.margin)


@cache
def _candidate_h_cached(name: str, L: int, margin: float) -> np.ndarray:
    loss = make_loss(name, L, margin)
    out = loss.h(candidates(loss))
    out.setflags(write=False)
    return out


def candidate_h(loss: Loss) -> np.ndarray:
    """``h_j`` at every candidate vertex (shape ``(n_candidates, L)``, read-only)."""
    return _candidate_h_cached(loss.name, loss.L, loss.margin)


def minimise_fast(
    loss: Loss, p: np.ndarray, *, rtol: float = 1e-9
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact minimum of ``R`` for each row of ``p`` by evaluating the candidates.

    Returns ``(value, index, n_optimal)``: the minimum, the first optimal
    candidate (rows of :func:`candidates`) and how many candidates are optimal
    within ``rtol`` (more than one means the minimiser is not unique).
    """
    H = candidate_h(loss)
    p = np.atleast_2d(np.asarray(p, dtype=float))
    R = p @ H.T
    idx = np.argmin(R, axis=1)
    value = R[np.arange(len(R)), idx]
    n_opt = np.sum(R <= value[:, None] + rtol * np.maximum(1.0, np.abs(value))[:, None], axis=1)
    return value, idx, n_opt


@dataclass(frozen=True)
class LPModel:
    """The LP ``min c(p) . x`` over ``x = (f, s)`` with ``s_t >= each piece of term t``."""

    A_ub: np.ndarray
    b_ub: np.ndarray
    A_eq: np.ndarray | None
    b_eq: np.ndarray | None
    bounds: list[tuple[float | None, float | None]]

    def objective(self, loss: Loss, p: np.ndarray) -> np.ndarray:
        """Cost vector: 0 on ``f``, ``p_j`` on each term of class ``j``."""
        return np.concatenate([np.zeros(loss.L), np.asarray(p, dtype=float)[loss.term_class]])


@cache
def _lp_model_cached(name: str, L: int, margin: float) -> LPModel:
    loss = make_loss(name, L, margin)
    n_pieces = len(loss.pieces)
    A_ub = np.zeros((n_pieces, L + loss.n_terms))
    A_ub[:, :L] = loss.pieces[:, 1:]  # w . f - s_t <= -c
    A_ub[np.arange(n_pieces), L + loss.piece_term] = -1.0
    b_ub = -loss.pieces[:, 0]
    A_eq = b_eq = None
    if loss.sum_zero:
        A_eq = np.concatenate([np.ones(L), np.zeros(loss.n_terms)])[None, :]
        b_eq = np.zeros(1)
    bounds = [(None, None)] * L + [(0.0, None)] * loss.n_terms
    return LPModel(A_ub, b_ub, A_eq, b_eq, bounds)


def lp_model(loss: Loss) -> LPModel:
    """The epigraph LP of ``loss`` (cached per loss and ``L``)."""
    return _lp_model_cached(loss.name, loss.L, loss.margin)


def minimise_lp(loss: Loss, p: np.ndarray) -> tuple[float, np.ndarray]:
    """Exact minimum of ``R`` for one ``p`` by HiGHS; returns ``(value, x)``.

    ``x = (f, s)`` is the basic optimal solution HiGHS returns: ``f = x[:L]``
    and ``s`` the term values, which equal the hinge terms at ``f``.
    """
    model = lp_model(loss)
    res = linprog(
        model.objective(loss, p),
        A_ub=model.A_ub,
        b_ub=model.b_ub,
        A_eq=model.A_eq,
        b_eq=model.b_eq,
        bounds=model.bounds,
        method="highs",
        options=HIGHS_OPTIONS,
    )
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed on {loss.name} L={loss.L} p={p}: {res.message}")
    return float(res.fun), np.asarray(res.x)
