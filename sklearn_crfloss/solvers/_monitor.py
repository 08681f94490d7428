"""One convergence monitor for every solver (hmmlearn's ``ConvergenceMonitor`` is the model).

Solvers report each iteration (or epoch) to a :class:`ConvergenceMonitor`,
which records the objective, prints the verbose line, calls the callbacks,
scores the held-out sequences of early stopping (:class:`HeldOutScore`)
and says when to stop. Early stopping, verbose output and callbacks are
therefore the same for every solver: a solver only passes its objective,
its current parameters and a few named fields.
"""

import copy
from dataclasses import dataclass, field
import inspect
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import ShuffleSplit

__all__ = ["ConvergenceMonitor", "HeldOutScore", "diverged", "split_sequences",
           "take_sequences", "takes_model"]


def diverged(stage, what):
    """The ``ValueError`` of training whose objective or parameters are not finite.

    Parameters
    ----------
    stage : str or None
        The stage (e.g. ``"loss='cll'"``), or None.
    what : str
        What is not finite, and where.

    Returns
    -------
    ValueError
        Naming the stage, ``what`` and the likely causes, to be raised.
    """
    where = f" (stage {stage})" if stage else ""
    return ValueError(
        f"training diverged{where}: {what}. Likely causes: a cost of the loss that is "
        "very large, sample weights of a very large magnitude, feature values of a very "
        "large magnitude (scale numeric features, e.g. to [-1, 1]), or a step size too "
        "large (lower eta0, or leave eta0='auto'). The estimator was left as it was.")


class ConvergenceMonitor:
    """Records the objective after each iteration (or epoch) and decides when to stop.

    Stopping rules, any of which ends the run:

    - the objective's (CRFsuite's ``delta`` and ``period``, on the best
      objective seen): the lowest objective improved by less than ``tol``
      relative over the last ``period`` reports, ``(b[k - period] - b[k]) /
      max(|b[k]|, 1) < tol`` with ``b[k] = min(f[1..k])`` (only for reports
      made with ``check=True``). The run has converged only if the last
      objective is also within ``tol`` of the best one (an objective that
      rose for ``period`` reports has *stalled*: the solver is not
      descending) and, for the solvers that pass ``grad_norm`` (L-BFGS,
      OWL-QN), the gradient norm is at most ``sqrt(tol) max(|f|, 1)``
      (else the objective crawls down a badly scaled valley: stalled);
    - early stopping (with ``validation`` and ``early_stopping=True``): the
      held-out score did not improve on the best one by more than ``tol *
      max(1, |best|)`` for ``n_iter_no_change`` consecutive reports
      (scikit-learn's ``SGDClassifier`` rule). The parameters of the best
      score are kept (:attr:`best_theta`).

    A non-finite objective (or parameters) is never reported: :meth:`report`
    raises a ``ValueError`` (:meth:`diverged`) naming the stage and the
    likely causes.

    Parameters
    ----------
    tol : float
        Relative improvement threshold (objective over ``period`` reports;
        validation score from one report to the next).
    max_iter : int
        The iteration (epoch) budget; reaching it is not convergence.
    period : int, default=10
        Window of the relative-improvement test.
    verbose : int, default=0
        If > 0, print one line per report: stage, iteration (or epoch),
        objective, the fields the solver passes to :meth:`report` (step size,
        gradient norm, ...), the validation score if any, seconds since the
        start.
    callback : callable or None, default=None
        Called as ``callback(iteration, objective)`` after every report.
    stage : str or None, default=None
        A name for warnings and verbose output (e.g. ``"init='cll'"``).
    validation : callable or None, default=None
        ``validation(theta) -> float``, higher is better (e.g. a
        :class:`HeldOutScore`): scored after every report, and early
        stopping on its value if ``early_stopping``.
    n_iter_no_change : int, default=5
        Reports without improvement of the validation score before stopping.
    early_stopping : bool, default=True
        Whether the validation score stops the run and the parameters of
        its best value are kept. False: the scores are only recorded
        (:attr:`validation_scores`, :attr:`best_score`, :attr:`best_iter`);
        the run and its result are those without ``validation``.
    on_params : callable or None, default=None
        Called as ``on_params(iteration, theta, value)`` after every report, with
        the solver's current parameters (e.g. to evaluate a model snapshot).
    unit : str, default='iter'
        What a report counts (``'epoch'`` for the online solvers), for the
        verbose lines.

    Attributes
    ----------
    history : list of float
        The reported objectives, in order (the estimator's ``loss_curve_``).
    validation_scores : list of float
        The validation score after each report (empty without validation).
    best_score : float or None
        The best validation score.
    best_theta : ndarray or None
        A copy of the parameters of the best validation score (None
        unless ``early_stopping``).
    best_iter : int
        The report (1-based) of the best validation score, or 0.
    best_value : float
        The lowest objective reported (inf before the first report).
    gradient_test : bool
        Whether ``grad_norm`` counts in the objective's rule (True; the
        estimator sets False for losses that are not smooth, such as MCE,
        whose gradient need not vanish at a minimum).
    early_stopped : bool
        Whether the early-stopping rule ended the run.
    converged : bool
        Set by :meth:`finish`: True if :attr:`stop_reason` is
        ``'converged'`` or ``'early_stopping'``.
    stop_reason : {'converged', 'max_iter', 'stalled', 'early_stopping'} or None
        Why the run ended, set by :meth:`finish`: a stopping test held at a
        minimum (``'converged'``), the budget ran out (``'max_iter'``), the
        solver could not lower the objective further although it is not at
        a minimum (``'stalled'``: a failed line search, an objective that
        rose, a large gradient), or the held-out score stopped improving.
    message : str
        Why the run ended, in words, set by :meth:`finish`.
    """

    def __init__(self, tol, max_iter, *, period=10, verbose=0, callback=None, stage=None,
                 validation=None, n_iter_no_change=5, early_stopping=True, on_params=None,
                 unit="iter"):
        self.tol = tol
        self.max_iter = max_iter
        self.period = period
        self.verbose = verbose
        self.callback = callback
        self.stage = stage
        self.validation = validation
        self.n_iter_no_change = n_iter_no_change
        self.early_stopping = early_stopping
        self.on_params = on_params
        self.unit = unit
        self.history = []
        self.validation_scores = []
        self.best_score = None
        self.best_theta = None
        self.best_iter = 0
        self.best_value = np.inf
        self.early_stopped = False
        self.converged = False
        self.stop_reason = None
        self.message = ""
        self.gradient_test = True
        self._best_history = []
        self._rule = None  # (reason, message) once the objective's rule has held
        self._no_change = 0
        self.offset = 0  # reports made by earlier stages of a schedule (see Schedule)
        self._t0 = time.perf_counter()
        self._evaluated = None  # (result, value): see record_result_value

    @property
    def n_iter(self):
        """Number of reports so far."""
        return len(self.history)

    @property
    def needs_theta(self):
        """Whether :meth:`report` uses the parameters (validation or ``on_params``)."""
        return self.validation is not None or self.on_params is not None

    def report(self, value, theta=None, *, check=True, grad_norm=None, **fields):
        """Record one iteration's objective; True if a stopping rule holds.

        Parameters
        ----------
        value : float
            The objective (or the epoch's summed loss / mistakes).
        theta : ndarray of shape (n_params,) or callable or None, default=None
            The current parameters, or a function of no argument returning
            them (called only if :attr:`needs_theta`: a solver whose
            parameters are costly to assemble passes a function). Needed
            for early stopping and ``on_params``.
        check : bool, default=True
            Apply the objective's relative-improvement test (online solvers
            that run a fixed number of epochs pass False). Early stopping
            applies either way.
        grad_norm : float or None, default=None
            The norm of the (pseudo-)gradient at the reported point: when
            given, the objective's rule is convergence only if it is at
            most ``sqrt(tol) max(|f|, 1)`` (printed as ``|grad|``).
        **fields : float
            Printed with ``verbose`` (e.g. ``eta=...``, ``**{"|grad|": g}``).

        Returns
        -------
        bool

        Raises
        ------
        ValueError
            If ``value`` or ``theta`` (an array) is not finite (the message
            names the stage, the iteration and the likely causes), or if
            the parameters are needed and ``theta`` is None.
        """
        value = float(value)
        k = len(self.history) + 1
        if not np.isfinite(value):
            raise self.diverged(f"the objective is {value} at {self.unit} {k}")
        if isinstance(theta, np.ndarray) and not np.all(np.isfinite(theta)):
            raise self.diverged(f"the parameters are not finite at {self.unit} {k} (the "
                                f"objective is {value})")
        self.history.append(value)
        self.best_value = min(self.best_value, value)
        self._best_history.append(self.best_value)
        if grad_norm is not None:
            fields = {"|grad|": float(grad_norm), **fields}
        stop = False
        score_note = ""
        if self.needs_theta:
            if theta is None:
                raise ValueError(
                    "the solver reported no parameters: early stopping and callbacks "
                    "taking the model need them (report(value, theta=...)).")
            theta = theta() if callable(theta) else theta
            if self.validation is not None:
                stop, score_note = self._validate(theta, k)
            if self.on_params is not None:
                self.on_params(k, theta, value)
        if self.verbose:
            extra = "".join(f"  {name} {val:.3e}" for name, val in fields.items())
            stage = f"[{self.stage}] " if self.stage else ""
            print(f"{stage}{self.unit} {k:4d}  objective {value:.6e}{extra}{score_note}  "
                  f"{time.perf_counter() - self._t0:8.2f} s", flush=True)
        if self.callback is not None:
            self.callback(k, value)
        if stop:
            self.early_stopped = True
            return True
        if not (check and k > self.period):
            return False
        best, scale = self.best_value, max(abs(self.best_value), 1.0)
        if (self._best_history[-1 - self.period] - best) / scale >= self.tol:
            return False
        if value - best > self.tol * scale:
            self._rule = ("stalled", (
                f"the objective rose from its best, {best:.6e}, to {value:.6e} and did "
                f"not improve in {self.period} {self.unit}s: the solver is not descending "
                "here; the parameters of the best objective are returned"))
        elif (grad_norm is not None and self.gradient_test
              and grad_norm > np.sqrt(self.tol) * scale):
            self._rule = ("stalled", (
                f"the objective stopped improving but the gradient norm is still "
                f"{grad_norm:.3e} (more than sqrt(tol) * |objective| = "
                f"{np.sqrt(self.tol) * scale:.3e}): the problem is badly scaled, usually by "
                "numeric feature values far from the 0/1 of indicators; scale them"))
        else:
            self._rule = ("converged", "the objective stopped improving")
        return True

    def diverged(self, what):
        """The ``ValueError`` of a stage whose objective or parameters are not finite.

        Parameters
        ----------
        what : str
            What is not finite, and where (e.g. ``"the objective is nan at
            iter 3"``).

        Returns
        -------
        ValueError
            Naming the stage, ``what`` and the likely causes, to be raised.
        """
        return diverged(self.stage, what)

    def _validate(self, theta, k):
        """Score ``theta`` on the held-out data; (stop, verbose note)."""
        score = float(self.validation(theta))
        self.validation_scores.append(score)
        best = self.best_score
        if best is None or score > best + self.tol * max(1.0, abs(best)):
            self._no_change = 0
        else:
            self._no_change += 1
        improved = best is None or score > best
        if improved:
            self.best_score = score
            if self.early_stopping:
                self.best_theta = np.array(theta, dtype=np.float64, copy=True)
            self.best_iter = self.offset + k  # numbered across the stages of a schedule
        note = f"  validation {score:.4f}{' *' if improved else ''}"
        return self.early_stopping and self._no_change >= self.n_iter_no_change, note

    def for_stage(self, max_iter, stage, offset, unit):
        """A monitor for one stage of a schedule: these settings, an empty history.

        Its callback numbers iterations after the ``offset`` iterations of the
        stages before it, so that the numbers run on across the schedule;
        :meth:`end_stage` takes its results back.

        Parameters
        ----------
        max_iter : int
            The stage's budget.
        stage : str
            Its name in messages.
        offset : int
            Iterations of the stages before it.
        unit : str
            What one of its iterations is (``SolverTags.unit``).

        Returns
        -------
        ConvergenceMonitor
        """
        child = copy.copy(self)
        child.max_iter = max_iter
        child.history = []
        child.best_value = np.inf
        child._best_history = []
        child._rule = None
        child.converged = False
        child.stop_reason = None
        child.message = ""
        child.stage = stage
        child.offset = self.offset + offset
        if self.callback is not None:
            child.callback = lambda k, value: self.callback(offset + k, value)
        if self.on_params is not None:
            child.on_params = lambda k, theta, value: self.on_params(offset + k, theta, value)
        child.unit = unit
        return child

    def end_stage(self, child):
        """Take over the results of a stage's monitor (:meth:`for_stage`).

        Returns
        -------
        bool
            Whether the stage stopped early (the schedule then stops).
        """
        self.history.extend(child.history)
        self.converged, self.message = child.converged, child.message
        self.stop_reason = child.stop_reason
        self.best_value = min(self.best_value, child.best_value)
        # Early stopping runs across the stages: the best held-out score
        # so far (validation_scores is one list, shared by the copies).
        if child.best_iter != self.best_iter:
            self.best_score, self.best_theta = child.best_score, child.best_theta
            self.best_iter = child.best_iter  # already numbered across stages
        self._no_change = child._no_change
        if child.early_stopped:
            self.early_stopped = True
        return child.early_stopped

    def finish(self, converged, message="", *, solver="the solver", reason=None):
        """Record the outcome; warn with the stage and reason if not converged.

        The outcome of the monitor's own rules wins over the solver's: a run
        ended by early stopping has converged (its message says so), and
        one ended by the objective's rule has converged or stalled as
        :meth:`report` found.

        Parameters
        ----------
        converged : bool
            The solver's verdict when it stopped on its own test (True) or
            not (False).
        message : str, default=''
            The reason the run ended.
        solver : str, default='the solver'
            Its name, for the warning.
        reason : {'converged', 'max_iter', 'stalled'} or None, default=None
            The solver's stop reason; None: ``'converged'`` if ``converged``
            else ``'max_iter'``.

        Warns
        -----
        ConvergenceWarning
            If the run did not converge: the stage, the reason, and the
            remedy (more iterations for ``'max_iter'``).
        """
        if self.early_stopped:
            reason = "early_stopping"
            message = (f"early stopping: no validation improvement in "
                       f"{self.n_iter_no_change} {self.unit}s (best at {self.best_iter})")
        elif self._rule is not None:
            reason, message = self._rule
        elif reason is None:
            reason = "converged" if converged else "max_iter"
        self.stop_reason = reason
        self.converged = reason in ("converged", "early_stopping")
        self.message = message
        if not self.converged:
            where = f" (stage {self.stage})" if self.stage else ""
            unit = "iterations" if self.unit == "iter" else f"{self.unit}s"
            remedy = " Increase max_iter or tol." if reason == "max_iter" else ""
            warnings.warn(
                f"{solver}{where} did not converge in {self.n_iter} {unit}: {message}.{remedy}",
                ConvergenceWarning, stacklevel=4,
            )

    def result(self, theta):
        """The parameters to keep: those of the best validation score, else ``theta``."""
        return theta if self.best_theta is None else self.best_theta

    def record_result_value(self, result, value):
        """Record that the solver's last evaluation of its objective was at ``result``.

        Called by a solver that knows it (``minimize_liblbfgs``): ``result``
        is the array it returns, whose point it evaluated last, getting
        ``value``; the caller that knows which objective that was can then
        use ``value`` instead of evaluating it again (:meth:`result_value`).

        Parameters
        ----------
        result : ndarray
            The very array the solver returns.
        value : float
        """
        self._evaluated = (result, value)

    def result_value(self, theta):
        """The value recorded for ``theta`` (:meth:`record_result_value`), or None; forgets it.

        Parameters
        ----------
        theta : ndarray
            The parameters kept (:meth:`result`).

        Returns
        -------
        float or None
            The recorded value if ``theta`` is the very array recorded (not
            the best validation score's parameters, nor a copy), else None.
        """
        evaluated, self._evaluated = self._evaluated, None
        if evaluated is None or evaluated[0] is not theta:
            return None
        return evaluated[1]


def split_sequences(n_sequences, validation_fraction, random_state):
    """Indices of the training and of the held-out sequences (early stopping).

    Parameters
    ----------
    n_sequences : int
    validation_fraction : float
        In (0, 1): the held-out share, rounded up to whole sequences.
    random_state : int, RandomState instance or None

    Returns
    -------
    train, held_out : ndarray of intp
        Sorted, disjoint, both non-empty.

    Raises
    ------
    ValueError
        If either part would be empty.
    """
    if n_sequences < 2:
        raise ValueError(f"early_stopping holds out sequences for validation: it needs at "
                         f"least 2 training sequences, got {n_sequences}.")
    split = ShuffleSplit(n_splits=1, test_size=validation_fraction, random_state=random_state)
    try:
        train, held_out = next(split.split(np.zeros((n_sequences, 1))))
    except ValueError as exc:
        raise ValueError(f"validation_fraction={validation_fraction} leaves no training "
                         f"sequence: {exc}") from None
    return np.sort(train).astype(np.intp), np.sort(held_out).astype(np.intp)


def hold_out(X, y, offsets, sample_weight, token_weight, validation_fraction, random_state):
    """Split vectorised training data into a training part and a held-out part.

    Parameters
    ----------
    X : sparse matrix of shape (n_tokens, n_attributes)
    y : ndarray of intp of shape (n_tokens,)
    offsets : ndarray of intp of shape (n_sequences + 1,)
    sample_weight : ndarray of shape (n_sequences,) or None
    token_weight : ndarray of shape (n_tokens,) or None
    validation_fraction, random_state
        As :func:`split_sequences`.

    Returns
    -------
    train : tuple
        ``(X, y, offsets, sample_weight, token_weight)`` of the training part.
    held_out : tuple
        ``(X, y, offsets)`` of the held-out sequences.
    """
    train, held = split_sequences(offsets.shape[0] - 1, validation_fraction, random_state)
    rows, held_offsets = take_sequences(offsets, held)
    held_out = (X[rows], y[rows], held_offsets)
    rows, offsets = take_sequences(offsets, train)
    return ((X[rows], y[rows], offsets,
             None if sample_weight is None else sample_weight[train],
             None if token_weight is None else token_weight[rows]), held_out)


def take_sequences(offsets, index):
    """Token rows of the sequences ``index``, and their offsets among those rows.

    Parameters
    ----------
    offsets : ndarray of intp of shape (n_sequences + 1,)
    index : ndarray of intp of shape (n_selected,)

    Returns
    -------
    rows : ndarray of intp of shape (n_selected_tokens,)
        Rows of the selected sequences, in the order of ``index``.
    sub_offsets : ndarray of intp of shape (n_selected + 1,)
    """
    lengths = offsets[index + 1] - offsets[index]
    sub = np.zeros(index.shape[0] + 1, dtype=np.intp)
    np.cumsum(lengths, out=sub[1:])
    rows = np.repeat(offsets[index] - sub[:-1], lengths) + np.arange(sub[-1])
    return rows, sub


class HeldOutScore:
    """Score of parameters on held-out sequences, for early stopping.

    Parameters
    ----------
    objective : CRFObjective
        The held-out sequences bound with the training layout.
    scoring : {'f1', 'accuracy', 'loss'}
        ``'f1'``: segment F1 (conlleval, micro) of the decoded sequences;
        ``'accuracy'``: token accuracy of the decoded sequences; ``'loss'``:
        minus the training loss on the held-out sequences (no prior).
    classes : ndarray of shape (n_labels,)
        Label names (segments are decoded from them).
    decode : callable
        ``decode(unary, transition, start, end, offsets) -> (path, score)``,
        the estimator's decoder with its constraints.
    loss : loss object
        The training loss (for ``scoring='loss'``).
    """

    def __init__(self, objective, scoring, classes, decode, loss):
        self.objective = objective
        self.scoring = scoring
        self.classes = np.asarray(classes)
        self.decode = decode
        self.loss = loss

    def __call__(self, theta):
        obj = self.objective
        if self.scoring == "loss":
            return -obj.loss_value_and_grad(theta, self.loss)[0]
        path, _ = self.decode(*obj.potentials(theta), obj.offsets)
        if self.scoring == "accuracy":
            return float(np.mean(path == obj.y))
        from ..metrics import segment_f1_score

        cuts = obj.offsets[1:-1]
        return segment_f1_score(np.split(self.classes[obj.y], cuts),
                                np.split(self.classes[path], cuts))


def takes_model(callback):
    """Whether a user callback takes a third argument (the model snapshot)."""
    try:
        inspect.signature(callback).bind(0, 0.0, None)
    except TypeError:
        return False
    except ValueError:  # no signature (some builtins): the two-argument form
        return False
    return True


@dataclass
class FitInfo:
    """How training went: what ``CRFTagger`` records as fitted attributes.

    Attributes
    ----------
    n_iter : int
        Iterations (epochs) of the training of ``loss``, all stages.
    init_n_iter : int
        Iterations of the ``init='cll'`` stage.
    loss_curve : list of float
        The objective after each iteration of ``loss``'s stages.
    converged : bool
        The last stage's outcome.
    stop_reason : str or None
        Why the last stage ended (its monitor's ``stop_reason``).
    message : str
        Why the last stage ended, in words (its monitor's ``message``).
    objective : float
        The objective at the returned parameters (NaN if not evaluated).
    validation_scores : list of float or None
        Early stopping's held-out score after each iteration of ``loss``.
    best_validation_score : float or None
        The best held-out score of the last stage (its parameters are kept).
    """

    n_iter: int = 0
    init_n_iter: int = 0
    loss_curve: list = field(default_factory=list)
    converged: bool = True
    stop_reason: str = None
    message: str = ""
    objective: float = float("nan")
    validation_scores: list = None
    best_validation_score: float = None

    def summary(self, objective, with_init, seconds):
        """The ``verbose`` summary line at the end of fit.

        Parameters
        ----------
        objective : float
            The final objective.
        with_init : bool
            Whether an ``init='cll'`` stage ran before (its iterations are shown).
        seconds : float
            Wall time of the fit.

        Returns
        -------
        str
        """
        init = f" (+ {self.init_n_iter} of init='cll')" if with_init else ""
        status = "converged" if self.converged else "not converged"
        why = f": {self.message}" if self.message else ""
        return (f"fit done: {self.n_iter} iterations{init}, objective {objective:.6e}, "
                f"{status}{why}, {seconds:.2f} s")


def stage_summary(stage, monitor, solver_name, seconds):
    """The ``verbose >= 2`` summary line of one training stage.

    Parameters
    ----------
    stage : str
        The stage's name (e.g. ``"init='cll'"``).
    monitor : ConvergenceMonitor
        The stage's monitor, after :meth:`ConvergenceMonitor.finish`.
    solver_name : str
    seconds : float
        Wall time of the stage.

    Returns
    -------
    str
    """
    last = monitor.history[-1] if monitor.history else float("nan")
    status = "converged" if monitor.converged else "not converged"
    why = f": {monitor.message}" if monitor.message else ""
    return (f"[{stage}] {solver_name}: {monitor.n_iter} iterations, objective "
            f"{last:.6e}, {status}{why}, {seconds:.2f} s")
