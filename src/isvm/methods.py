"""Each multiclass SVM formulation as data: variables, dual kernel structure, decision.

All formulations here are bias-free and share one dual,

    max_alpha  sum(alpha) - 1/2 alpha' Q alpha,    0 <= alpha_ij <= C,

with ``Q[(i,j), (i',j')] = K[i,i'] * <u_ij, M u_i'j'>``. Each variable (i, j)
carries a sparse *coding vector* ``u_ij`` in R^D (at most two non-zeros), and
``M = I - c 11'`` with a scalar ``c``. The solvers keep the score matrix

    S[d, r] = sum_(i,j) alpha_ij u_ij[d] K[i, r]        (D x N)

so a gradient costs O(1) and an update O(N): the NL x NL matrix Q is never
formed. Class scores at a point are ``f = A' S[:, r]`` for a fixed ``D x L``
decision matrix A, then ``f - c * sum(f)``.

| name | variables | u_ij | c | Q block | decision |
| --- | --- | --- | --- | --- | --- |
| isvm | all (i, j) | y_ij e_j | 1/L | K (I(j=j') - 1/L) y y' | eq. 4.12 (argmax = eq. 4.15) |
| ova | all (i, j) | y_ij e_j | 0 | K I(j=j') y y' | f_j = sum_i alpha_ij y_ij K_i |
| ww | j != y_i | e_(y_i) - e_j | 0 | K (I(y=y') - I(y=j') - I(j=y') + I(j=j')) | f_m = <w, Phi_m> |
| ww_paper | j != y_i | (e_(y_i), e_j) in R^2L | 0 | K (I(y=y') + I(j=j')) | S[:L] - S[L:] |
| llw | j != y_i | -e_j | 1/L | K (I(j=j') - 1/L) | f_m = <w_m, phi(x)>, sum_m w_m = 0 |
| isvm_neg | j != y_i | y_ij e_j = -e_j | 1/L | K (I(j=j') - 1/L) | as isvm |
| scatter | (i, y_i) only | e_(y_i) | 1/L | K (I(y=y') - 1/L) | f_m = <w_m - w_bar, phi(x)> |

Weston-Watkins decision (derived): with w = sum_i sum_(j != y_i) alpha_ij (Phi_(y_i)(x_i) -
Phi_j(x_i)), the class score is f_m(x) = <w, Phi_m(x)> = sum_i K(x_i, x) B_im with
B_(i, y_i) = sum_(j != y_i) alpha_ij and B_im = -alpha_im otherwise. For the
appendix-E kernel we keep the same decision rule (class score = the two halves of
the doubled feature space, positive minus negative), which is the only reading
under which its dual is a classifier; see docs/methods.md.

Lee-Lin-Wahba (bias-free, margin 1): ``min 1/2 sum_m ||w_m||^2 + C sum_i sum_(j != y_i)
[f_j(x_i) + 1]_+`` subject to ``sum_m w_m = 0``, with ``f_m = <w_m, phi>``. The Lagrangian
multiplier of the sum-to-zero constraint projects ``w = -sum alpha_ij (M e_j) (x) phi(x_i)``
onto the sum-zero subspace (M = I - 11'/L is that projection, so M^(1/2) = M), hence
``u_ij = -e_j``, ``c = 1/L``, and the class scores are ``S - mean(S)``. The published margin
1/(L-1) is the same problem up to scale: ``w_LLW = w / (L-1)`` solves it at
``C_LLW = C / (L-1)`` (so C here is (L-1) times the printed C; argmax unchanged).

ISVM without its positive examples (``isvm_neg``): the paper's conclusion proposes that
"the ISVM can be made consistent by eliminating the positive examples from the primal".
Dropping the constraints ``y_(i,y_i) g_(y_i)(x_i) >= 1 - xi_(i,y_i)`` (g = inhibited scores
f - mean(f)) drops the dual variables alpha_(i,y_i): the ISVM dual restricted to j != y_i,
with ``u_ij = y_ij e_j = -e_j`` and c = 1/L, which is term for term the ``llw`` dual above,
at the same C. In the primal: min 1/2 sum_m ||w_m||^2 + C sum_i sum_(j != y_i)
[1 + g_j(x_i)]_+ depends on W only through its projection W M except in the norm, so the
optimum has sum_m w_m = 0 and g = f: Lee-Lin-Wahba with margin 1, i.e. the published
margin 1/(L-1) at C / (L-1) (same decisions). It is kept as its own entry, built from the
ISVM coding, so that tests can show the identity rather than assume it.

Scatter SVM (Jenssen et al. 2012, bias-free, hinge loss, margin 1): ``min 1/2 sum_m ||w_m -
w_bar||^2 + C sum_i [1 - (f_(y_i)(x_i) - mean_m f_m(x_i))]_+``: one variable per point,
``u_i = e_(y_i)``, ``c = 1/L``. The paper's dual (its eq. 15) instead has a free margin rho, so
``0 <= alpha <= mu`` and ``sum alpha = L``; that is the same family of classifiers: if alpha
solves this box dual at C, then ``beta = L alpha / sum(alpha)`` solves eq. 15 at
``mu = C L / sum(alpha)`` (the KKT conditions map onto each other with rho = L / sum(alpha)),
and the scores differ by the positive factor L / sum(alpha). See docs/methods.md.

For every formulation here ``M (e_a - e_b) = e_a - e_b``, so a raw score difference
``S_a(x) - S_b(x) = <w, (e_a - e_b) (x) phi(x)>`` has norm factor sqrt(2) (``score_diff_norm``);
``ww_paper`` compares two differences in R^2L, hence 2.

A new formulation with the same kind of box-constrained dual is one new entry in
:data:`FORMULATIONS`, not a new solver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class Coding:
    """Per-variable coding vectors of one problem, in the arrays the numba solvers take.

    ``cols[i, j, t]`` / ``vals[i, j, t]`` are the t-th non-zero of u_ij (column -1
    when absent); ``var_mask[i, j]`` says whether alpha_ij is a variable at all.
    """

    cols: NDArray[np.int64]  # (N, L, 2)
    vals: NDArray[np.float64]  # (N, L, 2)
    var_mask: NDArray[np.bool_]  # (N, L)
    n_columns: int  # D
    mean_coef: float  # c in M = I - c 11'
    #: one point's block of Q is ``K_ii (I + block_sigma * w w')`` with ``w = block_w[i]``
    #: over its variables; the solvers use it to update a point's multipliers together
    block_w: NDArray[np.float64]  # (N, L)
    block_sigma: float
    #: (N,) each point's margin, the linear term of its variables in the dual: 1 (None
    #: gives ones), or a weighted problem's weights (:func:`weighted`)
    margin: NDArray[np.float64] | None = None

    def __post_init__(self) -> None:
        if self.margin is None:
            object.__setattr__(self, "margin", np.ones(self.var_mask.shape[0]))


@dataclass(frozen=True)
class Formulation:
    """A bias-free multiclass SVM as data (see the module docstring)."""

    name: str
    title: str
    encode: Callable[[NDArray[np.int64], int], Coding]
    decision_matrix: Callable[[int], NDArray[np.float64]]  # (D, L)
    #: bound on ||psi_a(x) - psi_b(x)|| / sqrt(K(x, x)) over class pairs a != b, where
    #: f_a - f_b = <w, psi_a - psi_b>; used to certify predictions from a duality gap.
    score_diff_norm: float


def _signs(y: NDArray[np.int64], n_classes: int) -> NDArray[np.float64]:
    """The paper's coding matrix y_ij (eq. 3.1): +1 for the true class, -1 elsewhere."""
    out = -np.ones((y.shape[0], n_classes))
    out[np.arange(y.shape[0]), y] = 1.0
    return out


def _one_column(y: NDArray[np.int64], n_classes: int, mean_coef: float) -> Coding:
    n = y.shape[0]
    cols = -np.ones((n, n_classes, 2), dtype=np.int64)
    vals = np.zeros((n, n_classes, 2))
    cols[:, :, 0] = np.arange(n_classes)[None, :]
    vals[:, :, 0] = _signs(y, n_classes)
    mask = np.ones((n, n_classes), dtype=bool)
    # <y_ij e_j, (I - c 11') y_ij' e_j'> = I(j=j') - c y_ij y_ij'
    return Coding(cols, vals, mask, n_classes, mean_coef, vals[:, :, 0].copy(), -mean_coef)


def _encode_isvm(y: NDArray[np.int64], n_classes: int) -> Coding:
    return _one_column(y, n_classes, 1.0 / n_classes)


def _encode_ova(y: NDArray[np.int64], n_classes: int) -> Coding:
    return _one_column(y, n_classes, 0.0)


def _encode_pair(y: NDArray[np.int64], n_classes: int, second_offset: int, second_sign: float):
    """Weston-Watkins style codings: u_ij = e_(y_i) + second_sign * e_(offset + j), j != y_i.

    Any two variables of one point share the column y_i, so their block is I + 11'.
    """
    n = y.shape[0]
    cols = np.empty((n, n_classes, 2), dtype=np.int64)
    vals = np.empty((n, n_classes, 2))
    cols[:, :, 0] = y[:, None]
    vals[:, :, 0] = 1.0
    cols[:, :, 1] = second_offset + np.arange(n_classes)[None, :]
    vals[:, :, 1] = second_sign
    mask = np.ones((n, n_classes), dtype=bool)
    mask[np.arange(n), y] = False
    cols[~mask] = -1
    vals[~mask] = 0.0
    return cols, vals, mask


def _encode_ww(y: NDArray[np.int64], n_classes: int) -> Coding:
    cols, vals, mask = _encode_pair(y, n_classes, 0, -1.0)
    return Coding(cols, vals, mask, n_classes, 0.0, mask.astype(np.float64), 1.0)


def _encode_ww_paper(y: NDArray[np.int64], n_classes: int) -> Coding:
    cols, vals, mask = _encode_pair(y, n_classes, n_classes, 1.0)
    return Coding(cols, vals, mask, 2 * n_classes, 0.0, mask.astype(np.float64), 1.0)


def _encode_llw(y: NDArray[np.int64], n_classes: int) -> Coding:
    """Lee-Lin-Wahba: u_ij = -e_j for j != y_i; one point's block is I - 11'/L."""
    n = y.shape[0]
    cols = np.broadcast_to(np.arange(n_classes)[None, :, None], (n, n_classes, 2)).copy()
    cols[:, :, 1] = -1
    vals = np.zeros((n, n_classes, 2))
    vals[:, :, 0] = -1.0
    mask = np.ones((n, n_classes), dtype=bool)
    mask[np.arange(n), y] = False
    cols[~mask] = -1
    vals[~mask] = 0.0
    # <-e_j, (I - 11'/L) (-e_j')> = I(j=j') - 1/L
    inv = 1.0 / n_classes
    return Coding(cols, vals, mask, n_classes, inv, mask.astype(np.float64), -inv)


def _encode_isvm_neg(y: NDArray[np.int64], n_classes: int) -> Coding:
    """The ISVM coding with its positive variables alpha_(i, y_i) removed."""
    isvm = _encode_isvm(y, n_classes)
    negative = np.ones((y.shape[0], n_classes), dtype=bool)
    negative[np.arange(y.shape[0]), y] = False
    cols, vals = isvm.cols.copy(), isvm.vals.copy()
    cols[~negative] = -1
    vals[~negative] = 0.0
    block_w = np.where(negative, isvm.block_w, 0.0)
    return Coding(cols, vals, negative, n_classes, isvm.mean_coef, block_w, isvm.block_sigma)


def _encode_scatter(y: NDArray[np.int64], n_classes: int) -> Coding:
    """Scatter SVM: one variable per point, alpha_(i, y_i), u = e_(y_i); block 1 - 1/L."""
    n = y.shape[0]
    cols = -np.ones((n, n_classes, 2), dtype=np.int64)
    vals = np.zeros((n, n_classes, 2))
    rows = np.arange(n)
    cols[rows, y, 0] = y
    vals[rows, y, 0] = 1.0
    mask = np.zeros((n, n_classes), dtype=bool)
    mask[rows, y] = True
    inv = 1.0 / n_classes
    return Coding(cols, vals, mask, n_classes, inv, mask.astype(np.float64), -inv)


def _identity(n_classes: int) -> NDArray[np.float64]:
    return np.eye(n_classes)


def _plus_minus(n_classes: int) -> NDArray[np.float64]:
    return np.vstack([np.eye(n_classes), -np.eye(n_classes)])


FORMULATIONS: dict[str, Formulation] = {
    f.name: f
    for f in (
        Formulation("isvm", "Inhibitory SVM", _encode_isvm, _identity, np.sqrt(2.0)),
        Formulation("ova", "1-vs-all SVM (bias-free)", _encode_ova, _identity, np.sqrt(2.0)),
        Formulation("ww", "Weston-Watkins (bias-free)", _encode_ww, _identity, np.sqrt(2.0)),
        Formulation(
            "ww_paper",
            "Weston-Watkins, kernel as printed in appendix E",
            _encode_ww_paper,
            _plus_minus,
            2.0,
        ),
        Formulation("llw", "Lee-Lin-Wahba (bias-free)", _encode_llw, _identity, np.sqrt(2.0)),
        Formulation(
            "isvm_neg",
            "ISVM without positive examples (the paper's consistent variant)",
            _encode_isvm_neg,
            _identity,
            np.sqrt(2.0),
        ),
        Formulation("scatter", "Scatter SVM (bias-free)", _encode_scatter, _identity, np.sqrt(2.0)),
    )
}


def get_formulation(name: str) -> Formulation:
    """The formulation called ``name``, with a clear error for unknown names."""
    try:
        return FORMULATIONS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; choose one of {sorted(FORMULATIONS)}") from None


def separable_by_column(coding: Coding) -> bool:
    """Whether Q is block diagonal by coding column: L separate binary problems (1-vs-all).

    True when there is no mean term (``mean_coef == 0``) and each variable's coding
    vector has a single non-zero, in its own class's column; False for every coupled
    formulation (ISVM's mean term, WW's shared column y_i).
    """
    cols, mask = coding.cols, coding.var_mask
    n, n_classes = mask.shape
    if coding.mean_coef != 0.0 or coding.block_sigma != 0.0 or n_classes < 2:
        return False
    own = np.broadcast_to(np.arange(n_classes)[None, :], (n, n_classes))
    return not (np.any(cols[..., 1][mask] >= 0) or np.any(cols[..., 0][mask] != own[mask]))


def coefficient_matrix(alpha: NDArray[np.float64], coding: Coding) -> NDArray[np.float64]:
    """B (N x D) with ``S = (K @ B).T``: B[i, d] = sum_j alpha_ij u_ij[d]."""
    n, n_classes = alpha.shape
    B = np.zeros((n, coding.n_columns))
    rows = np.broadcast_to(np.arange(n)[:, None], (n, n_classes))
    for t in range(2):
        c = coding.cols[:, :, t]
        ok = c >= 0
        np.add.at(B, (rows[ok], c[ok]), alpha[ok] * coding.vals[:, :, t][ok])
    return B


def dual_coefficients(
    alpha: NDArray[np.float64], coding: Coding, formulation: Formulation
) -> NDArray[np.float64]:
    """Per-training-point class weights (N x L): class scores are ``K(X, X_train) @ coef``."""
    n_classes = alpha.shape[1]
    return coefficient_matrix(alpha, coding) @ formulation.decision_matrix(n_classes)


def class_scores(raw: NDArray[np.float64], mean_coef: float) -> NDArray[np.float64]:
    """Apply ``f - c * sum(f)`` row-wise (eq. 4.12 for ISVM; identity when c = 0)."""
    if mean_coef == 0.0:
        return raw
    return raw - mean_coef * raw.sum(axis=1, keepdims=True)


def dual_matrix(K: NDArray[np.float64], coding: Coding) -> NDArray[np.float64]:
    """The dense NL x NL dual matrix Q, for tests and small problems only."""
    n, n_classes = coding.var_mask.shape
    var_i, var_j = np.divmod(np.arange(n * n_classes), n_classes)
    U = coding_vectors(coding, var_i, var_j)
    M = np.eye(coding.n_columns) - coding.mean_coef * np.ones((coding.n_columns,) * 2)
    T = U @ M @ U.T
    return np.kron(K, np.ones((n_classes, n_classes))) * T


def coding_vectors(
    coding: Coding, var_i: NDArray[np.int64], var_j: NDArray[np.int64]
) -> NDArray[np.float64]:
    """The coding vectors u_ij of the listed pairs as dense rows (len(var_i) x D)."""
    U = np.zeros((var_i.shape[0], coding.n_columns))
    rows = np.arange(var_i.shape[0])
    for t in range(2):
        col = coding.cols[var_i, var_j, t]
        ok = col >= 0
        U[rows[ok], col[ok]] += coding.vals[var_i, var_j, t][ok]
    return U
