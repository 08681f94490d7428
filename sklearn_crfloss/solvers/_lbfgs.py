"""L-BFGS: scipy's L-BFGS-B with the CRFsuite-style stopping rule of the monitor."""

from numbers import Integral

import numpy as np
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from .._utils import Interval, StrOptions
from ..priors import get_prior_tags
from ._owlqn import LineSearchSolver, minimize_liblbfgs

__all__ = ["LBFGS", "minimize_lbfgs"]


def minimize_lbfgs(fun, x0, monitor, *, bounds=None, max_corrections=6, to_theta=None):
    """Minimise ``fun`` with ``scipy.optimize.minimize(method='L-BFGS-B', jac=True)``.

    Stops after ``monitor.max_iter`` iterations (not converged), when
    scipy's own tests succeed, or when the monitor's relative-improvement
    rule holds.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, grad)``.
    x0 : ndarray of shape (n,)
    monitor : ConvergenceMonitor
    bounds : sequence of (min, max) or None, default=None
        Box constraints, passed to scipy.
    max_corrections : int, default=6
        L-BFGS memory (scipy's ``maxcor``; CRFsuite's default 6). Each
        iteration streams ``2 * max_corrections`` vectors of the parameters'
        size, which on CoNLL-2000 costs as much as a third of an objective
        evaluation at scipy's default of 10.
    to_theta : callable or None, default=None
        Maps the optimised variables to the CRF parameters reported to the
        monitor (early stopping, callbacks); None: the identity.

    Returns
    -------
    ndarray of shape (n,)
        The final point.
    """
    last_grad = []

    def wrapped(x):
        value, grad = fun(x)
        last_grad[:] = [grad]
        return value, grad

    def on_iteration(intermediate_result):
        gnorm = float(np.linalg.norm(last_grad[0])) if last_grad else float("nan")
        x = intermediate_result.x
        theta = x if to_theta is None else (lambda: to_theta(x))
        if monitor.report(intermediate_result.fun, theta=theta, grad_norm=gnorm):
            raise StopIteration

    # scipy's L-BFGS-B calls BLAS on small vectors every iteration; a
    # multi-threaded BLAS makes each call wait for its threads (scipy#22438),
    # so one BLAS thread runs faster (benchmarks/README.md). The kernels'
    # own OpenMP threads (n_jobs) are not BLAS and keep running in parallel.
    with threadpool_limits(limits=1, user_api="blas"):
        res = minimize(
            wrapped, x0, method="L-BFGS-B", jac=True, bounds=bounds, callback=on_iteration,
            options={"maxiter": monitor.max_iter, "maxcor": max_corrections,
                     "ftol": 1e-12, "gtol": 1e-8},
        )
    stopped_by_tol = res.status == 99 or "StopIteration" in str(res.message)
    message = str(res.message)
    reason = None
    if message.startswith("ABNORMAL"):
        message = ("the line search found no step that lowers the objective enough "
                   "(scipy: ABNORMAL); the objective may be nonsmooth here")
        reason = "stalled"
    monitor.finish(res.success or stopped_by_tol, message, solver="L-BFGS", reason=reason)
    return res.x


class LBFGS(LineSearchSolver):
    """Limited-memory BFGS (``solver='lbfgs'``), through libLBFGS or scipy's L-BFGS-B.

    Full batch; the default for smooth losses. By default the iterations
    are libLBFGS's (CRFsuite's optimiser, through PyLBFGS:
    :func:`minimize_liblbfgs`, More-Thuente line search): they follow
    scipy's L-BFGS-B iterates closely for less time per iteration, because
    its step does less work (the solvers guide compares them). A prior
    with a ``parametrisation`` (the Laplacian's split ``theta = z+ - z-``,
    ``z >= 0``) is optimised in its own variables with box bounds, which
    needs scipy's L-BFGS-B and leaves exact zeros (``prior='l1'`` trains
    with ``solver='owlqn'`` by default).

    Parameters
    ----------
    max_corrections : int, default=6
        L-BFGS memory (CRFsuite's ``lbfgs.num_memories``).
    backend : {'liblbfgs', 'scipy'}, default='liblbfgs'
        Which implementation runs the iterations without bounds; the split
        of ``prior='l1'`` always runs scipy's L-BFGS-B. libLBFGS stops on
        the monitor's rule, ``max_iter``, a failed line search or
        ``||g|| < 1e-8 max(1, ||theta||)``; scipy's on the first three and
        its own ``ftol=1e-12``, ``gtol=1e-8`` tests.

    References
    ----------
    D. C. Liu, J. Nocedal (1989). On the limited memory BFGS method for
    large scale optimization. Mathematical Programming 45.
    R. H. Byrd, P. Lu, J. Nocedal, C. Zhu (1995). A limited memory
    algorithm for bound constrained optimization. SIAM J. Sci. Comput. 16.
    """

    name = "lbfgs"
    display_name = "L-BFGS"

    _parameter_constraints: dict = {
        "max_corrections": [Interval(Integral, 1, None, closed="left")],
        "backend": [StrOptions({"liblbfgs", "scipy"})],
    }

    def __init__(self, max_corrections=6, backend="liblbfgs"):
        self.max_corrections = max_corrections
        self.backend = backend

    def solve(self, objective, loss, prior, C, x0, monitor):
        # Docstring inherited.
        par = (None if get_prior_tags(prior).smooth
               else prior.parametrisation(objective.n_params))
        if par is None:
            fun = lambda x, g=None: objective.value_and_grad(x, loss, prior, C, out=g)  # noqa: E731
            if self.backend == "liblbfgs":
                return minimize_liblbfgs(fun, x0, monitor, max_corrections=self.max_corrections,
                                         epsilon=1e-8, name="L-BFGS", grad_out=True)
            return minimize_lbfgs(fun, x0, monitor, max_corrections=self.max_corrections)

        def fun(z):
            value, grad = objective.loss_value_and_grad(par.to_theta(z), loss)
            p_value, p_grad = par.penalty(z, C)
            return value + p_value, par.chain(grad, z) + p_grad

        z = minimize_lbfgs(fun, par.from_theta(x0), monitor, bounds=par.bounds,
                           max_corrections=self.max_corrections, to_theta=par.to_theta)
        return par.to_theta(z)
