"""OWL-QN and L-BFGS through libLBFGS (the PyLBFGS package), CRFsuite's optimiser."""

import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from ..losses import get_loss_tags
from ..priors import get_prior_tags
from ._base import BaseSolver, prior_name

__all__ = ["LineSearchSolver", "OWLQN", "minimize_liblbfgs"]

# The messages PyLBFGS warns with when libLBFGS stops early but returns a point.
_STOPPED_EARLY = {
    "A rounding error occurred; alternatively, no line-search step satisfies the "
    "sufficient decrease and curvature conditions.": "line search",
    "The line-search routine reaches the maximum number of evaluations.": "line search",
    "The algorithm routine reaches the maximum number of iterations.": "max_iter",
}


#: What the progress callback returns to stop libLBFGS: its code
#: LBFGS_ALREADY_MINIMIZED. libLBFGS frees its work vectors and returns the
#: callback's value as its own code, for which PyLBFGS returns the point (a
#: copy made then, not while libLBFGS holds its 2m + 5 vectors of n).
_STOP = 2


def _liblbfgs():
    try:
        import lbfgs
    except ImportError as exc:  # pragma: no cover - PyLBFGS is a dependency
        raise ImportError("solver='owlqn' needs the PyLBFGS package (libLBFGS): "
                          "pip install PyLBFGS") from exc
    return lbfgs


def minimize_liblbfgs(fun, x0, monitor, *, l1=0.0, max_corrections=6, epsilon=1e-5,
                      max_linesearch=20, name=None, to_theta=None, grad_out=False):
    """Minimise ``fun(x) + l1 * ||x||_1`` with libLBFGS (OWL-QN if ``l1 > 0``).

    libLBFGS (N. Okazaki) is the optimiser of CRFsuite; PyLBFGS wraps it.
    With ``l1 > 0`` it runs OWL-QN (Andrew & Gao 2007) with the
    backtracking line search CRFsuite uses for it; else L-BFGS with the
    More-Thuente line search. Stops after ``monitor.max_iter`` iterations
    (not converged), when the monitor's relative-improvement rule holds, or
    when ``||g|| < epsilon max(1, ||x||)`` (``g``: the pseudo-gradient for
    OWL-QN; CRFsuite's ``epsilon``).

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, grad)`` of the smooth part; ``x`` is a view of
        libLBFGS's memory, valid during the call only.
    x0 : ndarray of float64 of shape (n,)
    monitor : ConvergenceMonitor
        Receives the objective (``fun + l1 ||x||_1``) of every iteration.
    l1 : float, default=0.0
        Coefficient of the L1 norm, ``>= 0``.
    max_corrections : int, default=6
        L-BFGS memory (libLBFGS's ``m``, CRFsuite's ``num_memories``).
    epsilon : float, default=1e-5
        Gradient-norm test (libLBFGS's ``epsilon``).
    max_linesearch : int, default=20
        Evaluations allowed per line search.
    name : str or None, default=None
        The solver's name in warnings (None: ``'OWL-QN'`` if ``l1 > 0``,
        else ``'L-BFGS (libLBFGS)'``).
    to_theta : callable or None, default=None
        Maps ``x`` to the CRF parameters reported to the monitor (early
        stopping, callbacks taking the model); None: ``x`` itself.
    grad_out : bool, default=False
        Whether ``fun`` is called as ``fun(x, g)``, with ``g`` libLBFGS's
        own gradient vector to write the gradient into (a view valid
        during the call only): a returned gradient that is ``g`` itself is
        not copied, so that an evaluation needs no array of ``n`` for it.

    Returns
    -------
    ndarray of float64 of shape (n,)
        The last accepted point. When it is the point that ``fun`` was
        evaluated at last, ``monitor.record_result_value(x, value)`` records
        that evaluation's value (``ConvergenceMonitor.result_value``).

    Raises
    ------
    Exception
        Whatever ``fun`` raised (libLBFGS is stopped at once).
    """
    lbfgs = _liblbfgs()
    x0 = np.ascontiguousarray(x0, dtype=np.float64)  # copied into libLBFGS's own vector
    options = dict(orthantwise_c=float(l1), line_search="wolfe" if l1 > 0 else "default",
                   m=max_corrections, epsilon=epsilon, max_linesearch=max_linesearch)
    # No copy of the point is kept through the solve: libLBFGS's own is the one.
    state = {"error": None, "stopped": False, "k": 0, "value": None}

    def evaluate(x, g):
        if state["error"] is not None:  # unwind libLBFGS quickly
            g[:] = 0.0
            return np.nan
        try:
            value, grad = fun(x, g) if grad_out else fun(x)
        except BaseException as exc:  # re-raised after libLBFGS returns
            state["error"] = exc
            g[:] = 0.0
            return np.nan
        if grad is not g:
            g[:] = grad
        state["value"] = value
        return value

    def progress(x, g, fx, xnorm, gnorm, step, k, n_evals):
        state["k"] = k
        state["gtest"] = gnorm <= 1e-6 * max(1.0, xnorm)
        if state["error"] is not None:
            return 1
        theta = (lambda: to_theta(x.copy())) if to_theta is not None else x.copy
        try:
            stop = monitor.report(fx, theta=theta, grad_norm=gnorm, step=step)
        except BaseException as exc:  # e.g. a callback's KeyboardInterrupt: re-raised below
            state["error"] = exc
            return 1
        if stop:
            state["stopped"] = True
            return _STOP
        return 0

    # As for scipy's L-BFGS-B (see minimize_lbfgs): one BLAS thread.
    with threadpool_limits(limits=1, user_api="blas"), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            x = lbfgs.fmin_lbfgs(evaluate, x0, progress, max_iterations=monitor.max_iter,
                                 **options)
            reason = None
        except lbfgs.LBFGSError as exc:
            x, reason = None, str(exc)
            if state["error"] is None:  # an error of libLBFGS itself
                x = _replay(lbfgs, evaluate, x0, state["k"], options)
    early = None
    for w in caught:
        kind = _STOPPED_EARLY.get(str(w.message))
        if kind is None:
            warnings.warn(w.message, w.category, stacklevel=2)
        else:
            early = (kind, str(w.message))
    if state["error"] is not None:
        raise state["error"]
    if name is None:
        name = "OWL-QN" if l1 > 0 else "L-BFGS (libLBFGS)"
    if state["stopped"]:
        monitor.finish(True, "the objective stopped improving", solver=name)
    elif reason is not None:
        monitor.finish(False, reason.rstrip("."), solver=name, reason="stalled")
    elif early is not None and early[0] == "line search" and _at_precision(monitor, state):
        # scipy's L-BFGS-B reports this as convergence (its ftol test).
        monitor.finish(True, "the objective cannot be lowered further at rounding "
                       "precision", solver=name)
    elif early is not None:
        message = early[1].rstrip(".")
        if early[0] == "line search":
            message = ("the line search found no acceptable step (libLBFGS: "
                       f"{message}); the objective may be nonsmooth here")
        monitor.finish(False, message, solver=name,
                       reason="stalled" if early[0] == "line search" else "max_iter")
    else:
        monitor.finish(True, "the gradient norm test holds", solver=name)
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    # The point returned is the last one evaluated (libLBFGS accepts a step
    # at its last evaluation) unless libLBFGS went back to the previous point
    # (a failed line search, warned) or raised and was run again (_replay).
    if state["stopped"] or (reason is None and all(
            _STOPPED_EARLY.get(str(w.message)) == "max_iter" for w in caught)):
        monitor.record_result_value(x, state["value"])
    return x


def _replay(lbfgs, evaluate, x0, n_iter, options):
    """libLBFGS's point after ``n_iter`` iterations from ``x0``, computed again.

    When libLBFGS stops on an error of its own (a line search that PyLBFGS
    does not report as a warning), or PyLBFGS does not return the point at
    the monitor's stop (``_STOP``), PyLBFGS raises and frees its vector, so
    the last accepted point is lost: the same iterations from the same
    start give it again, bit for bit (the objective is deterministic).
    Rare, and the price of keeping no copy of the point through the solve.
    """
    if n_iter == 0:
        return np.array(x0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (its own stop at max_iterations)
        return lbfgs.fmin_lbfgs(evaluate, x0, None, max_iterations=n_iter, **options)


#: Early stopping's default patience for L-BFGS and OWL-QN, in iterations
#: (measured: benchmarks/early_stopping_patience.py; the held-out F1 of
#: L-BFGS can stay flat for 40 iterations before it rises again).
LINE_SEARCH_PATIENCE = 50


class LineSearchSolver(BaseSolver):
    """The quasi-Newton solvers with a line search (L-BFGS, OWL-QN): their record and loss check.

    A line search needs a loss that is differentiable along the search
    direction: the MCE losses (``needs_init``: trained from a fit) are
    smooth but at ties of their best incorrect output, so a line-search
    method may be tried on them; the margin losses are piecewise linear
    everywhere and are refused. ``display_name`` names the method in
    messages.
    """

    display_name = None

    def __solver_tags__(self):
        # Docstring inherited.
        tags = super().__solver_tags__()
        tags.takes_bigrams = tags.trains_label_experts = tags.line_search = True
        tags.n_iter_no_change = LINE_SEARCH_PATIENCE
        return tags

    def check(self, loss, prior):
        """Refuse a loss whose subgradient changes at every best-path change.

        Raises
        ------
        ValueError
            Naming the method and the loss.
        """
        super().check(loss, prior)
        tags = get_loss_tags(loss)
        if not tags.smooth and not tags.needs_init:
            raise ValueError(
                f"loss={tags.name or loss!r} is not differentiable where its best "
                f"path changes: {self.display_name} does not apply, use solver='sgd'.")


def _at_precision(monitor, state):
    """Whether a failed line search happened at the optimum's rounding precision.

    True if the last iteration lowered the objective by at most 1e-10
    (relative), or the gradient norm was below ``1e-6 max(1, ||x||)``.
    """
    h = monitor.history
    small_step = len(h) >= 2 and h[-2] - h[-1] <= 1e-10 * max(abs(h[-1]), 1.0)
    return small_step or state.get("gtest", False)


class OWLQN(LineSearchSolver):
    """OWL-QN for the L1 prior, L-BFGS otherwise (``solver='owlqn'``), through libLBFGS.

    Orthant-wise limited-memory quasi-Newton (Andrew & Gao 2007) minimises
    ``loss + ||theta||_1 / C`` (``prior='l1'``) directly on ``theta``: each
    iteration takes an L-BFGS direction computed from the loss's curvature,
    built on the pseudo-gradient of the L1 term (its one-sided derivative
    that points downhill, 0 where neither does) and constrained to the
    orthant of the current point, and the line search projects every trial
    point back onto that orthant, so weights that would cross 0 stop
    exactly at 0. It keeps ``n_params`` variables (the L-BFGS-B split of
    ``solver='lbfgs'`` doubles them) and is the default for ``prior='l1'``
    with a smooth loss. This is CRFsuite's ``c1 > 0`` training (libLBFGS,
    backtracking line search, 6 corrections, stopping on ``delta``/``period``
    here through ``tol``, and on ``||g|| < epsilon max(1, ||theta||)``).

    An elastic net (:class:`~sklearn_crfloss.priors.ElasticNetPrior`,
    ``prior='elasticnet'``) is trained the same way with its L2 part added
    to the smooth loss and ``l1_ratio / C`` as the L1 coefficient (CRFsuite's
    ``c1 > 0, c2 > 0``).

    A feature-dependent Laplacian prior (``LaplacianPrior(feature_dependent=True)``,
    penalty ``sum_k d_k |theta_k| / C``) is optimised in the variables
    ``u_k = d_k theta_k``, where its penalty is the plain ``||u||_1 / C``.
    With another differentiable prior (``'l2'``, ``'hyperbolic'``,
    ``'none'``) this is plain L-BFGS with libLBFGS's More-Thuente line
    search (CRFsuite's ``c1 = 0`` training).

    Parameters
    ----------
    max_corrections : int, default=6
        L-BFGS memory (CRFsuite's ``num_memories``).
    epsilon : float, default=1e-5
        Stop when ``||g|| < epsilon max(1, ||theta||)`` (CRFsuite's
        ``epsilon``); ``g`` is the pseudo-gradient for OWL-QN.
    max_linesearch : int, default=20
        Objective evaluations allowed per line search (CRFsuite's
        ``max_linesearch``).

    References
    ----------
    G. Andrew, J. Gao (2007). Scalable training of L1-regularized log-linear
    models. ICML. Section 3 (Algorithm 1, OWL-QN).
    N. Okazaki (2007). libLBFGS: a library of limited-memory
    Broyden-Fletcher-Goldfarb-Shanno (L-BFGS). https://www.chokkan.org/software/liblbfgs/
    """

    name = "owlqn"
    display_name = "OWL-QN"

    def __init__(self, max_corrections=6, epsilon=1e-5, max_linesearch=20):
        self.max_corrections = max_corrections
        self.epsilon = epsilon
        self.max_linesearch = max_linesearch

    def check(self, loss, prior):
        # Docstring inherited.
        super().check(loss, prior)
        tags = get_prior_tags(prior)
        if not tags.l1 and not tags.smooth:
            raise ValueError(f"solver='owlqn' trains prior='l1' or a differentiable prior, "
                             f"not {prior_name(tags, prior)!r}.")

    def solve(self, objective, loss, prior, C, x0, monitor):
        # Docstring inherited.
        options = dict(max_corrections=self.max_corrections, epsilon=self.epsilon,
                       max_linesearch=self.max_linesearch)
        tags = get_prior_tags(prior)
        if not tags.l1:
            return minimize_liblbfgs(
                lambda x, g: objective.value_and_grad(x, loss, prior, C, out=g), x0, monitor,
                grad_out=True, **options)
        # An elastic net: its L1 share in the orthant-wise steps, its L2 part
        # in the smooth objective (as CRFsuite and Wapiti).
        l1 = float(tags.l1_ratio) / C
        smooth = prior.smooth_value_and_grad if tags.l2_part else None

        def smooth_fun(theta, out=None):
            value, grad = objective.loss_value_and_grad(theta, loss, out=out)
            if smooth is not None:
                p_value, p_grad = smooth(theta, C)
                value += p_value
                grad += p_grad
            return value, grad

        # The penalty's weights d_k: its subgradient at theta = 1, times C.
        d = prior.value_and_grad(np.ones(objective.n_params), C)[1] * C
        if np.all(d == 1.0):
            return minimize_liblbfgs(smooth_fun, x0, monitor, l1=l1, grad_out=True, **options)
        if not np.all(d > 0):
            raise ValueError("solver='owlqn' needs positive L1 weights d_k.")

        def fun(u):  # theta = u / d
            value, grad = smooth_fun(u / d)
            return value, grad / d

        return minimize_liblbfgs(fun, d * x0, monitor, l1=l1, to_theta=lambda u: u / d,
                                 **options) / d
