"""One convergence monitor for every solver (hmmlearn's ``ConvergenceMonitor`` is the model)."""

import time
import warnings

from sklearn.exceptions import ConvergenceWarning

__all__ = ["ConvergenceMonitor"]


class ConvergenceMonitor:
    """Records the objective after each iteration (or epoch) and decides when to stop.

    Stopping rule (CRFsuite's ``delta`` and ``period``): stop when the
    objective improved by less than ``tol`` relative over the last
    ``period`` reports, ``(f[k - period] - f[k]) / max(|f[k]|, 1) < tol``.

    Parameters
    ----------
    tol : float
        Relative improvement threshold over ``period`` reports.
    max_iter : int
        The iteration (epoch) budget; reaching it is not convergence.
    period : int, default=10
        Window of the relative-improvement test.
    verbose : int, default=0
        If > 0, print one line per report: iteration, objective, the extra
        fields passed to :meth:`report`, seconds since the start.
    callback : callable or None, default=None
        Called as ``callback(iteration, objective)`` after every report.
    stage : str or None, default=None
        A name for warnings and verbose output (e.g. ``"init='cll'"``).

    Attributes
    ----------
    history : list of float
        The reported objectives, in order (the estimator's ``loss_curve_``).
    converged : bool
        Set by :meth:`finish`.
    message : str
        Why the run ended, set by :meth:`finish`.
    """

    def __init__(self, tol, max_iter, *, period=10, verbose=0, callback=None, stage=None):
        self.tol = tol
        self.max_iter = max_iter
        self.period = period
        self.verbose = verbose
        self.callback = callback
        self.stage = stage
        self.history = []
        self.converged = False
        self.message = ""
        self._t0 = time.perf_counter()

    @property
    def n_iter(self):
        """Number of reports so far."""
        return len(self.history)

    def report(self, value, check=True, **fields):
        """Record one iteration's objective; True if the stopping rule holds.

        Parameters
        ----------
        value : float
            The objective (or the epoch's summed loss / mistakes).
        check : bool, default=True
            Apply the relative-improvement test (online solvers that run a
            fixed number of epochs pass False).
        **fields
            Printed with ``verbose`` (e.g. ``grad_norm=...``).

        Returns
        -------
        bool
        """
        value = float(value)
        self.history.append(value)
        k = len(self.history)
        if self.verbose:
            extra = "".join(f"  {name} {val:.3e}" for name, val in fields.items())
            stage = f"[{self.stage}] " if self.stage else ""
            print(f"{stage}iter {k:4d}  objective {value:.6e}{extra}  "
                  f"{time.perf_counter() - self._t0:8.2f} s", flush=True)
        if self.callback is not None:
            self.callback(k, value)
        return (check and k > self.period
                and (self.history[-1 - self.period] - value) / max(abs(value), 1.0) < self.tol)

    def finish(self, converged, message="", *, solver="the solver"):
        """Record the outcome; warn with the stage and reason if not converged.

        Parameters
        ----------
        converged : bool
        message : str, default=''
            The reason the run ended.
        solver : str, default='the solver'
            Its name, for the warning.

        Warns
        -----
        ConvergenceWarning
            If ``converged`` is False.
        """
        self.converged = bool(converged)
        self.message = message
        if not converged:
            where = f" (stage {self.stage})" if self.stage else ""
            warnings.warn(
                f"{solver}{where} did not converge in {self.n_iter} iterations: {message}. "
                "Increase max_iter or tol.",
                ConvergenceWarning, stacklevel=4,
            )
