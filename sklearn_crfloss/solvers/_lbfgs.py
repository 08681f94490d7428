"""L-BFGS: scipy's L-BFGS-B with the CRFsuite-style stopping rule of the monitor."""

import numpy as np
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from ._base import BaseSolver

__all__ = ["LBFGS", "minimize_lbfgs"]


def minimize_lbfgs(fun, x0, monitor, *, bounds=None, max_corrections=6):
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
        if monitor.report(intermediate_result.fun, **{"|grad|": gnorm}):
            raise StopIteration

    # scipy's L-BFGS-B calls BLAS on small vectors every iteration; a
    # multi-threaded BLAS makes each call wait for its threads (scipy#22438).
    # Measured on CoNLL-2000 (50 iterations, 2 cores): one BLAS thread cuts the
    # fit from 17-19 s to 12-13 s wall, 30-32 s to 19-20 s CPU. The kernels'
    # own OpenMP threads (n_jobs) are not BLAS and keep running in parallel.
    with threadpool_limits(limits=1, user_api="blas"):
        res = minimize(
            wrapped, x0, method="L-BFGS-B", jac=True, bounds=bounds, callback=on_iteration,
            options={"maxiter": monitor.max_iter, "maxcor": max_corrections,
                     "ftol": 1e-12, "gtol": 1e-8},
        )
    stopped_by_tol = res.status == 99 or "StopIteration" in str(res.message)
    message = str(res.message)
    if message.startswith("ABNORMAL"):
        message = ("the line search found no step that lowers the objective enough "
                   "(scipy: ABNORMAL); the objective may be nonsmooth here")
    monitor.finish(res.success or stopped_by_tol, message, solver="L-BFGS")
    return res.x


class LBFGS(BaseSolver):
    """Limited-memory BFGS (``solver='lbfgs'``) through scipy's L-BFGS-B.

    Full batch; the default for smooth losses. A prior with a
    ``parametrisation`` (the Laplacian's split ``theta = z+ - z-``,
    ``z >= 0``) is optimised in its own variables with box bounds, which
    leaves exact zeros.

    Parameters
    ----------
    max_corrections : int, default=6
        L-BFGS memory (CRFsuite's ``lbfgs.num_memories``).

    References
    ----------
    D. C. Liu, J. Nocedal (1989). On the limited memory BFGS method for
    large scale optimization. Mathematical Programming 45.
    R. H. Byrd, P. Lu, J. Nocedal, C. Zhu (1995). A limited memory
    algorithm for bound constrained optimization. SIAM J. Sci. Comput. 16.
    """

    name = "lbfgs"

    def __init__(self, max_corrections=6):
        self.max_corrections = max_corrections

    def check(self, loss, prior):
        # Docstring inherited.
        # The MCE losses (needs_init: trained from a fit) are smooth but at
        # ties of their best incorrect output: L-BFGS may be tried on them.
        if not getattr(loss, "smooth", True) and not getattr(loss, "needs_init", False):
            raise ValueError(
                f"loss={getattr(loss, 'name', loss)!r} is not differentiable where its best "
                "path changes: L-BFGS does not apply, use solver='sgd'."
            )

    def solve(self, objective, loss, prior, C, x0, monitor):
        # Docstring inherited.
        par = prior.parametrisation(objective.n_params) if hasattr(
            prior, "parametrisation") else None
        if par is None:
            return minimize_lbfgs(lambda x: objective.value_and_grad(x, loss, prior, C), x0,
                                  monitor, max_corrections=self.max_corrections)

        def fun(z):
            value, grad = objective.loss_value_and_grad(par.to_theta(z), loss)
            p_value, p_grad = par.penalty(z, C)
            return value + p_value, par.chain(grad, z) + p_grad

        z = minimize_lbfgs(fun, par.from_theta(x0), monitor, bounds=par.bounds,
                           max_corrections=self.max_corrections)
        return par.to_theta(z)
