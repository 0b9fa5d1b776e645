"""scikit-learn estimators: ``InhibitorySVC``, ``OneVsAllSVC``, ``WestonWatkinsSVC``,
``CrammerSingerSVC``, ``LeeLinWahbaSVC``, ``ScatterSVC``.

All are bias-free multiclass kernel SVMs. All but Crammer-Singer are trained on the
box-constrained dual of :mod:`isvm.methods` by a solver of :mod:`isvm.solvers`;
Crammer-Singer, whose dual has a per-point equality constraint, by its own solver
(:mod:`isvm.solvers.crammer_singer`). They follow scikit-learn's
conventions (``fit`` / ``predict`` / ``decision_function``, fitted attributes end
in ``_``, parameters are only stored in ``__init__``), so they work in pipelines,
grid searches and cross-validation.

``decision_function`` returns the (n_samples, n_classes) class scores; for two
classes it returns ``f_1 - f_0`` of shape (n_samples,), as scikit-learn's scorers
expect. ``class_scores`` always returns the full matrix.
"""

from __future__ import annotations

import warnings
from numbers import Integral

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.validation import _check_sample_weight

from isvm._kernel_estimator import KERNELS as KERNELS  # re-exported: isvm.estimators.KERNELS
from isvm._kernel_estimator import POSITIVE, KernelClassifier
from isvm.methods import class_scores, dual_coefficients, get_formulation
from isvm.solvers import SOLVERS, SolverResult, solve
from isvm.solvers.crammer_singer import SOLVER_NAME as CS_SOLVER
from isvm.solvers.crammer_singer import solve_crammer_singer
from isvm.warmup import announce_compile

#: numba's cache files of the solvers' kernels (:mod:`isvm.solvers`): a fit finds one
#: where its solvers were compiled before
SOLVER_KERNELS = ("epochs.*.nbi", "greedy.*.nbi", "crammer_singer.*.nbi")
#: the error of a fit whose every sample has weight 0
ALL_ZERO_WEIGHTS = "every sample weight is zero: nothing to train on"
#: what the first fit of a fresh install compiles, about how long, how to do it ahead
FIT_COMPILE_NOTE = (
    "isvm: compiling the solvers' numba kernels for this first fit (first use of this "
    "version: about half a minute of one core, cached afterwards; `python -m isvm warmup` "
    "compiles them and the LOO engine's ahead)"
)


_COMMON_PARAMETERS = """\
    C : float, default=1.0
        Box constraint of the dual, > 0.
    gamma : float, default=5.0
        Width of the kernel ``exp(-gamma ||x - x'||^2 / n_features)``, per feature as in
        the paper: ours = scikit-learn SVC's gamma x n_features (``SVC(gamma=0.1)`` on 13
        features is ``gamma=1.3``); the same convention for "poly" and "sigmoid".
    kernel : {"rbf", "linear", "poly", "sigmoid", "precomputed"} or callable, default="rbf"
        "rbf" is the paper's; a callable is ``kernel(X, Y) -> (n_X, n_Y)``; "precomputed"
        takes kernel matrices as X. The formulas are in :mod:`isvm.kernels`."""

_SOLVER_PARAMETERS = """\
    solver : {"cd", "smo", "sgd", "mu"}, default="cd"
        "cd" (fast coordinate descent), "smo" (Algorithm 1), "sgd" (Algorithm 2), "mu"
        (the multiplicative update of Cristianini et al., exact but slow).
    tol : float, default=1e-3
        Stopping tolerance on the KKT violation, > 0.
    max_iter : int or None, default=None
        Iteration cap (cd: steps per variable, per class for 1-vs-all, per point where a
        point's multipliers are stepped together; smo/sgd/mu: steps); None for the
        solver's default.
    random_state : int, RandomState instance or None, default=None
        Seed of the smo/sgd visiting order (unused by cd, whose steps are
        deterministic: greedy by class for 1-vs-all, threshold passes over the points
        for the others; docs/methods.md).
    class_weight : dict, "balanced" or None, default=None
        Per class, a factor of C: the multipliers of a point of class k are bounded by
        ``C * class_weight[k]`` (times its ``sample_weight`` in ``fit``). "balanced"
        gives ``n_samples / (n_classes * np.bincount(y))``, as scikit-learn's SVC."""

_KERNEL_PARAMETERS = """\
    degree : int, default=3
        Degree of the "poly" kernel ``(gamma <x, x'> / n_features + coef0) ** degree``.
    coef0 : float, default=0.0
        Constant term of the "poly" and "sigmoid" kernels."""

_ATTRIBUTES = """\
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    alpha_ : ndarray of shape (n_samples, n_classes)
        The dual multipliers (zeros where a formulation has no variable).
    dual_coef_ : ndarray of shape (n_samples, n_classes)
        Class-score coefficients: the raw scores are ``K(X, X_train) @ dual_coef_``.
    n_iter_ : int
        Iterations of the solver (cd: for 1-vs-all the largest class's steps over its
        variables, for the others the block steps over the points, rounded up).
    converged_ : bool
        Whether the solver reached ``tol`` before ``max_iter`` (else a ConvergenceWarning).
    kkt_violation_ : float
        The largest KKT violation of the returned multipliers.
    objective_ : float
        The dual objective."""


class _BiasFreeMulticlassSVC(KernelClassifier):
    """Shared parameters and fit of the bias-free multiclass SVMs (not public).

    A formulation of :mod:`isvm.methods` is one subclass that names it in ``_method``;
    prediction is the base class's.
    """

    _method: str = ""
    _parameter_constraints: dict = {
        **KernelClassifier._parameter_constraints,
        "C": [POSITIVE],
        "solver": [StrOptions(set(SOLVERS))],
        "tol": [POSITIVE],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "class_weight": [StrOptions({"balanced"}), dict, None],
    }

    def __init__(
        self,
        C=1.0,
        gamma=5.0,
        kernel="rbf",
        solver="cd",
        tol=1e-3,
        max_iter=None,
        random_state=None,
        degree=3,
        coef0=0.0,
        class_weight=None,
    ):
        self.class_weight = class_weight
        self.C = C
        self.gamma = gamma
        self.kernel = kernel
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.degree = degree
        self.coef0 = coef0

    def _formulation_name(self) -> str:
        return self._method

    def _loo_method(self) -> str:
        """This estimator's name in :data:`isvm.loo.LOO_METHODS` (its kernel="rbf" LOO)."""
        return self._formulation_name()

    def _solve(
        self,
        K: NDArray[np.float64],
        y_idx: NDArray[np.int64],
        n_classes: int,
        seed: int,
        weights: NDArray[np.float64] | None = None,
    ) -> tuple[SolverResult, NDArray[np.float64], float]:
        """Solve the dual: (result, dual_coef (N x L), mean coefficient of the class scores).

        ``weights`` (positive, or None) bound each point's multipliers by C times its own.
        """
        formulation = get_formulation(self._formulation_name())
        result = solve(
            K,
            y_idx,
            n_classes,
            formulation,
            float(self.C),
            solver=self.solver,
            tol=float(self.tol),
            max_iter=self.max_iter,
            seed=seed,
            sample_weight=weights,
        )
        coding = formulation.encode(y_idx.astype(np.int64), n_classes)
        return result, dual_coefficients(result.alpha, coding, formulation), coding.mean_coef

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> _BiasFreeMulticlassSVC:
        """Train on X (n_samples, n_features), or a precomputed (n, n) kernel, and labels y.

        ``sample_weight`` (non-negative, one per sample) multiplies C per sample, on top
        of ``class_weight``; samples of weight 0 take no part in the fit.
        """
        self._validate_params()
        X, y_idx, K, seed = self._validate_fit(X, y)
        announce_compile(FIT_COMPILE_NOTE, SOLVER_KERNELS)
        weights = self._weights(X, y_idx, sample_weight)
        n_classes = self.classes_.shape[0]
        if weights is None:
            result, self.dual_coef_, self._mean_coef = self._solve(K, y_idx, n_classes, seed)
            self.alpha_ = result.alpha
        else:
            kept = np.flatnonzero(weights > 0)
            K_kept = K if kept.shape[0] == K.shape[0] else K[np.ix_(kept, kept)]  # no copy
            result, coef, self._mean_coef = self._solve(
                K_kept, y_idx[kept], n_classes, seed, weights[kept]
            )
            self.dual_coef_ = np.zeros((y_idx.shape[0], coef.shape[1]))
            self.dual_coef_[kept] = coef
            self.alpha_ = np.zeros((y_idx.shape[0], result.alpha.shape[1]))
            self.alpha_[kept] = result.alpha
        self.n_iter_ = result.iterations
        self.converged_ = result.converged
        self.kkt_violation_ = result.kkt_violation
        self.objective_ = result.objective
        if not result.converged:
            warnings.warn(
                f"{type(self).__name__}: solver {self.solver!r} stopped at its iteration cap "
                f"({result.iterations}) with KKT violation {result.kkt_violation:.3g} > "
                f"tol={self.tol}; raise max_iter or tol",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _weights(
        self, X: NDArray[np.float64], y_idx: NDArray[np.int64], sample_weight: ArrayLike | None
    ) -> NDArray[np.float64] | None:
        """Each sample's factor of C (class_weight times sample_weight), or None for none."""
        if self.class_weight is None and sample_weight is None:
            return None
        if sample_weight is not None and np.all(np.asarray(sample_weight) == 0):
            raise ValueError(ALL_ZERO_WEIGHTS)  # before scikit-learn's (>= 1.7) own words
        weights = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        if self.class_weight is not None:
            if isinstance(self.class_weight, dict):
                unknown = set(self.class_weight) - set(self.classes_.tolist())
                if unknown:
                    raise ValueError(
                        f"class_weight names classes not in y: {sorted(unknown, key=str)}"
                    )
            weights = weights * compute_sample_weight(self.class_weight, self.classes_[y_idx])
        if not np.any(weights > 0):
            raise ValueError(ALL_ZERO_WEIGHTS)
        return weights

    def class_scores(self, X: ArrayLike) -> NDArray[np.float64]:
        """Class scores, shape (n_samples, n_classes); ISVM gives eq. 4.12 (rows sum to 0)."""
        return class_scores(self._test_kernel(X) @ self.dual_coef_, self._mean_coef)


def _document(cls: type) -> type:
    """Fill the ``{parameters}`` and ``{attributes}`` of a docstring (numpydoc sections)."""
    if cls.__doc__ is None:  # python -OO
        return cls
    cls.__doc__ = cls.__doc__.format(
        parameters="\n".join((_COMMON_PARAMETERS, _SOLVER_PARAMETERS, _KERNEL_PARAMETERS)),
        common=_COMMON_PARAMETERS,
        kernel_parameters=_KERNEL_PARAMETERS,
        attributes=_ATTRIBUTES,
    )
    return cls


@_document
class InhibitorySVC(_BiasFreeMulticlassSVC):
    """The inhibitory multiclass SVM (ISVM) of Huerta et al. (2012).

        Class scores ``f_j(x) = sum_i alpha_ij y_ij K(x_i, x) - mean_j(...)`` (eq. 4.12):
        each class is inhibited by the mean of all classes, with the inhibition
        factor mu = 1/L that the paper derives (theorem 1).

        Parameters
        ----------
    {parameters}

    {attributes}
    """

    _method = "isvm"


@_document
class OneVsAllSVC(_BiasFreeMulticlassSVC):
    """Bias-free 1-vs-all SVM: L binary SVMs, class j against the rest, argmax of scores.

        Parameters
        ----------
    {parameters}

    {attributes}
    """

    _method = "ova"


@_document
class LeeLinWahbaSVC(_BiasFreeMulticlassSVC):
    """Bias-free Lee-Lin-Wahba multiclass SVM (Lee, Lin and Wahba 2004), margin 1.

        Primal, with ``f_m(x) = <w_m, phi(x)>``::

            min 1/2 sum_m ||w_m||^2 + C sum_i sum_(j != y_i) [f_j(x_i) + 1]_+
            s.t. sum_m w_m = 0.

        Dual (variables ``(i, j)``, ``j != y_i``)::

            max sum alpha - 1/2 sum alpha_ij alpha_i'j' K(x_i, x_i') (I(j=j') - 1/L),
            0 <= alpha_ij <= C,

        with ``f_m(x) = -sum_i alpha_im K(x_i, x) + 1/L sum_i sum_j alpha_ij K(x_i, x)`` (the
        scores sum to 0 at every x). The published problem has margin ``1/(L-1)``
        (``[f_j(x_i) + 1/(L-1)]_+``; Huerta et al. 2012, table 1): it is the same classifier,
        its ``w`` this one's divided by ``L-1``, at ``C_LLW = C / (L-1)``. So this ``C`` is
        ``(L-1)`` times the printed one and ``class_scores`` are ``(L-1)`` times the printed
        ``f``; predictions are identical. It is also the ISVM without its positive examples,
        the consistent variant the paper's conclusion proposes (method ``isvm_neg``).
        Derivations in docs/methods.md.

        Parameters
        ----------
    {parameters}

    {attributes}
    """

    _method = "llw"


@_document
class ScatterSVC(_BiasFreeMulticlassSVC):
    """Bias-free Scatter SVM (Jenssen, Kloft, Zien, Sonnenburg and Mueller 2012), hinge loss.

        Each class score is compared with the mean score, with one slack per point::

            min 1/2 sum_m ||w_m - w_bar||^2 + C sum_i [1 - (f_(y_i)(x_i) - mean_m f_m(x_i))]_+,

        ``f_m(x) = <w_m, phi(x)>``, ``w_bar = mean_m w_m``. Dual (one variable per point)::

            max sum alpha - 1/2 sum alpha_i alpha_i' K(x_i, x_i') (I(y_i = y_i') - 1/L),
            0 <= alpha_i <= C,

        and ``f_m(x) = sum_(i: y_i = m) alpha_i K(x_i, x)`` (the prototype score, eq. 18 of the
        paper without bias), reported minus its mean over classes. The paper fixes no margin:
        its primal (eq. 13) maximises a margin rho, so its dual (eq. 15) is
        ``min 1/2 a' K a`` with ``0 <= a <= mu``, ``sum a = L``. Both give the same classifiers:
        this fit is the paper's solution at ``mu = C L / sum(alpha)``, with ``a = L alpha /
        sum(alpha)``; the fitted ``mu_`` gives that value. Derivation in docs/methods.md.

        Parameters
        ----------
    {parameters}

    {attributes}
        mu_ : float
            The paper's box (eq. 15) at which this fit is its solution.
    """

    _method = "scatter"

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> ScatterSVC:
        """Train as :meth:`InhibitorySVC.fit`; also sets ``mu_``, the paper's box (eq. 15)."""
        super().fit(X, y, sample_weight)
        total = float(self.alpha_.sum())
        self.mu_ = float(self.C) * self.classes_.shape[0] / total if total > 0 else np.inf
        return self


@_document
class WestonWatkinsSVC(_BiasFreeMulticlassSVC):
    """Bias-free Weston-Watkins multiclass SVM (appendix E of the paper).

        Which dual kernel produced the paper's numbers is open (docs/methods.md); both are
        here.

        Parameters
        ----------
    {parameters}
        ww_kernel : {{"full", "paper"}}, default="full"
            "full" solves the exact bias-free dual with kernel
            ``K (I(y=y') - I(y=j') - I(j=y') + I(j=j'))``; "paper" uses the kernel as printed
            in appendix E, ``K (I(y=y') + I(j=j'))``.

    {attributes}
    """

    _parameter_constraints: dict = {
        **_BiasFreeMulticlassSVC._parameter_constraints,
        "ww_kernel": [StrOptions({"full", "paper"})],
    }

    def __init__(
        self,
        C=1.0,
        gamma=5.0,
        kernel="rbf",
        solver="cd",
        tol=1e-3,
        max_iter=None,
        random_state=None,
        ww_kernel="full",
        degree=3,
        coef0=0.0,
        class_weight=None,
    ):
        super().__init__(
            C=C,
            gamma=gamma,
            kernel=kernel,
            solver=solver,
            tol=tol,
            max_iter=max_iter,
            random_state=random_state,
            degree=degree,
            coef0=coef0,
            class_weight=class_weight,
        )
        self.ww_kernel = ww_kernel

    def _formulation_name(self) -> str:
        return "ww" if self.ww_kernel == "full" else "ww_paper"


@_document
class CrammerSingerSVC(_BiasFreeMulticlassSVC):
    """Bias-free kernel Crammer-Singer multiclass SVM (Crammer and Singer 2001; appendix F).

        Primal, one weight vector per class and one slack per point::

            min_W  1/2 sum_m ||w_m||^2 + C sum_i xi_i,
            xi_i = max_m (1 - I(m = y_i) + <w_m, phi(x_i)> - <w_(y_i), phi(x_i)>)   (>= 0).

        Dual (LIBLINEAR's form; ``alpha_`` is (n_samples, n_classes))::

            min  1/2 sum_(i,i') K_ii' <alpha_i, alpha_i'> + sum_(i,m) (1 - I(m = y_i)) alpha_i^m
            s.t. sum_m alpha_i^m = 0,   alpha_i^m <= C I(m = y_i),

        with ``w_m = sum_i alpha_i^m phi(x_i)``, so the class scores are
        ``K(X, X_train) @ alpha_`` and ``dual_coef_`` is ``alpha_``. Appendix F's
        multipliers are ``-alpha_i^j`` for ``j != y_i``.

        Parameters
        ----------
    {common}
        solver : {{"bcd"}}, default="bcd"
            The exact per-point block coordinate descent of :mod:`isvm.solvers.crammer_singer`.
            The box-constrained solvers "cd", "smo", "sgd" and "mu" cannot express the
            per-point equality constraint and are refused.
        tol : float, default=1e-3
            Stopping tolerance on the KKT violation, > 0.
        max_iter : int or None, default=None
            Cap on the epochs; None for the solver's default.
        random_state : int, RandomState instance or None, default=None
            Seed of the visiting order.
    {kernel_parameters}

    {attributes}
            In maximisation form: the primal optimum at convergence.
        duality_gap_ : float
            The primal at the returned ``W`` minus ``objective_``.
    """

    _parameter_constraints: dict = {
        **_BiasFreeMulticlassSVC._parameter_constraints,
        "solver": [StrOptions({CS_SOLVER})],
    }

    def __init__(
        self,
        C=1.0,
        gamma=5.0,
        kernel="rbf",
        solver=CS_SOLVER,
        tol=1e-3,
        max_iter=None,
        random_state=None,
        degree=3,
        coef0=0.0,
        class_weight=None,
    ):
        super().__init__(
            C=C,
            gamma=gamma,
            kernel=kernel,
            solver=solver,
            tol=tol,
            max_iter=max_iter,
            random_state=random_state,
            degree=degree,
            coef0=coef0,
            class_weight=class_weight,
        )

    def _loo_method(self) -> str:
        return "cs"

    def _solve(
        self,
        K: NDArray[np.float64],
        y_idx: NDArray[np.int64],
        n_classes: int,
        seed: int,
        weights: NDArray[np.float64] | None = None,
    ) -> tuple[SolverResult, NDArray[np.float64], float]:
        result = solve_crammer_singer(
            K,
            y_idx,
            n_classes,
            float(self.C),
            tol=float(self.tol),
            max_iter=self.max_iter,
            seed=seed,
            sample_weight=weights,
        )
        self.duality_gap_ = result.duality_gap
        return result, result.alpha, 0.0
