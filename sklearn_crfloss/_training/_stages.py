"""The training stages of ``CRFTagger.fit``: an optional CLL start, then the loss.

:func:`train_stages` runs the ``init='cll'`` stage (if asked) and then every
stage of the loss (one, or an annealing schedule), each through
:func:`run_stage`, which checks what the solver returns: the objective is
evaluated at the start and at the returned parameters of every stage, a
stage that ends above its start keeps the start (and says so), and the
objective recorded as ``objective_`` is the one at the returned parameters.
"""

import time
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from .._utils import release_free_heap
from ..exceptions import PotentialMagnitudeError
from ..losses import ConditionalLogLikelihood, get_loss_tags
from ..solvers import (ConvergenceMonitor, default_solver, FitInfo, get_solver_tags, make_solver,
                       stage_summary, takes_model)
from ._components import starts_from_cll

__all__ = ["StageSettings", "early_stopping_scoring", "run_stage", "train_stages", "warn_if_iob1_segments",
           "warn_if_unscaled"]

#: Relative fall of the objective below which a stage from zero made no progress.
_NO_PROGRESS = 1e-6

#: Share of saturated terms at a nonconvex loss's start above which fit warns.
SATURATED_START = 0.95

#: Largest feature magnitude that trains without a warning (indicators are 1).
UNSCALED_LIMIT = 10.0


def warn_if_unscaled(X, attributes, limit=UNSCALED_LIMIT):
    """Warn when feature values are far from the 0/1 scale of indicator features.

    A numeric feature of magnitude ``v`` multiplies its weights' curvature
    by about ``v**2``: with values in the tens or more the objective is
    badly conditioned, L-BFGS crawls, the step calibration of SGD finds no
    step and the nonconvex losses saturate.

    Parameters
    ----------
    X : scipy.sparse matrix of shape (n_tokens, n_attributes)
        The vectorised training features (an int8 matrix holds indicators
        only and is not checked).
    attributes : array-like of str of shape (n_attributes,)
        Column names, for the message.
    limit : float, default=10.0
        Largest absolute value without a warning.

    Warns
    -----
    UserWarning
        Naming the attribute of the largest absolute value, its value and
        how many attributes exceed ``limit``, with the remedy.
    """
    if X.dtype == np.int8 or X.nnz == 0:
        return
    top = np.asarray(abs(X).max(axis=0).todense()).ravel()
    over = np.flatnonzero(top > limit)
    if over.shape[0] == 0:
        return
    worst = over[np.argmax(top[over])]
    warnings.warn(
        f"{over.shape[0]} feature(s) have values larger than {limit:g} in magnitude, e.g. "
        f"{attributes[worst]!r} up to {top[worst]:.6g}: features on a scale far from the 0/1 "
        "of indicators make training badly conditioned (slow or stalled solvers, steps "
        "calibrated to nothing, saturated MCE losses). Scale them to about [-1, 1] (divide "
        "by their largest value; for array input sklearn.preprocessing.MaxAbsScaler).",
        UserWarning, stacklevel=3)


def warn_if_iob1_segments(loss, y, tag_scheme):
    """Warn when a segment loss compares label strings on IOB1 labels as given.

    With ``segment_match='labels'`` the segment F-score loss
    (``loss='mce_f'``) measures a segment by the labels on its span, but in
    IOB1 (and under conlleval's reading) one chunk has two encodings (``O
    I-PER`` and ``O B-PER``): a competitor that differs from the gold labels
    only there is counted as a segment error. In IOB2, IOBES or BILOU every
    chunk has one encoding. ``segment_match='chunks'`` compares chunks and
    needs no warning.

    Parameters
    ----------
    loss : loss object
    y : list of label sequences
        The labels given to ``fit``.
    tag_scheme : str or None
        The estimator's ``tag_scheme``.

    Warns
    -----
    UserWarning
        For ``loss='mce_f'`` with ``segment_match='labels'``,
        ``tag_scheme=None`` and labels detected as IOB1, naming
        ``tag_scheme='iob2'``.
    """
    if (get_loss_tags(loss).name != "mce_f" or tag_scheme is not None
            or loss.segment_match == "chunks"):
        return
    from ..segments import detect_scheme

    try:
        scheme = detect_scheme(y)
    except ValueError:  # labels of no chunk scheme: nothing to say here
        return
    if scheme == "iob1":
        warnings.warn(
            "loss='mce_f' on IOB1 labels: a chunk that starts with I- can also be written "
            "with B-, and with segment_match='labels' the loss counts a competitor that differs from the gold labels only "
            "there as a segment error. Train in a scheme where every chunk has one encoding: "
            "tag_scheme='iob2' (predictions are converted back to IOB1), or compare chunks: "
            "segment_match='chunks'.",
            UserWarning, stacklevel=4)


def early_stopping_scoring(scoring, y, offsets, classes, *, warn=True):
    """The held-out score early stopping uses for these labels.

    Segment F1 cannot change on labels that form no chunk (POS tags, names
    without ``B-``/``I-`` prefixes): it is 0 at every iteration.

    Parameters
    ----------
    scoring : {None, 'f1', 'accuracy', 'loss'}
        The estimator's ``scoring``; None chooses.
    y : ndarray of intp of shape (n_tokens,)
        The training labels, as indices into ``classes``.
    offsets : ndarray of intp of shape (n_sequences + 1,)
    classes : ndarray of shape (n_classes,)
    warn : bool, default=True
        Whether to warn (below).

    Returns
    -------
    {'f1', 'accuracy', 'loss'}
        ``scoring``, or for None: ``'f1'`` if the training labels contain a
        chunk (conlleval's decoding), else ``'accuracy'``.

    Warns
    -----
    UserWarning
        If ``scoring='f1'`` and the training labels contain no chunk.
    """
    if scoring not in (None, "f1"):
        return scoring
    from ..segments import segments_from_codes

    has_chunks = segments_from_codes(y, offsets, classes)[0].shape[0] > 0
    if scoring is None:
        return "f1" if has_chunks else "accuracy"
    if not has_chunks and warn:
        warnings.warn(
            "early stopping with scoring='f1': the training labels form no chunk (no "
            "B-/I-/E-/S- prefixed labels, as for POS tags), so segment F1 is 0 at every "
            "iteration and cannot tell when to stop. Use scoring='accuracy' (or leave "
            "scoring=None, which chooses it for such labels).", UserWarning, stacklevel=4)
    return scoring


def _warn_if_saturated_start(loss, x0, stage):
    """Warn when a nonconvex loss starts where almost all its terms are flat.

    The MCE losses record, at each evaluation, the weighted share of their
    terms (sequences, or segments for MCE-F) whose smoothed loss has
    almost no gradient (``saturation_``); from a start where that share
    exceeds :data:`SATURATED_START`, training cannot move far.
    """
    tags = get_loss_tags(loss)
    share = loss.saturation_ if tags.reports_saturation else None
    if share is None or not np.any(x0) or not share > SATURATED_START:
        return
    name = tags.name or type(loss).__name__
    unit = "segments" if name == "mce_f" else "sequences"
    warnings.warn(
        f"{stage}: at the starting parameters {100 * share:.1f}% of the weighted training "
        f"{unit} are saturated (the smoothed loss or its derivative is below 1% there), so "
        "the loss has almost nothing to correct. The start is usually a CLL fit too strongly "
        "or too weakly regularised for it: with init='cll', try a smaller init_C (the start's "
        "C) so that more training sequences lie near the decision boundary, a smaller alpha "
        "(a wider sigmoid), or another C for the loss.", UserWarning, stacklevel=4)


class _Watched:
    """A stage's objective that counts its evaluations which are not finite.

    The solvers see it in place of the objective (every other attribute is
    the objective's), so that :func:`run_stage` can tell a solver that
    stalled because the objective overflowed at every trial step. The
    evaluation :func:`run_stage` made at the start point is the answer to
    the solver's first call if that asks for the same point (bit for bit,
    with the same loss, prior and C), as the batch solvers' first call
    does: one evaluation fewer, the same numbers. It is dropped at the
    first call or the first other attribute read, so that it is not held
    through the solve. Likewise the value of the last evaluation (with its
    loss, prior and C; forgotten at any other call or attribute read) is
    the objective at the solver's result when the solver records that it
    returns the point it evaluated last (:meth:`result_value`).

    Parameters
    ----------
    objective : CRFObjective or DistributedObjective
    start : tuple or None, default=None
        ``(x0, loss, prior, C, (value, grad))``: the start point (a copy)
        and the objective's answer there.
    """

    def __init__(self, objective, start=None):
        self.objective = objective
        self.non_finite = 0
        self._start = start
        self._last = None  # (loss, prior, C, value) of the last value_and_grad

    def __getattr__(self, name):
        if name.startswith("__") or name in ("objective", "_start", "_last"):
            raise AttributeError(name)
        self._start = self._last = None
        return getattr(self.objective, name)

    def _count(self, out):
        value, grad = out
        if not (np.isfinite(value) and np.all(np.isfinite(grad))):
            self.non_finite += 1
        return out

    def _at_start(self, theta, loss, prior, C):
        """The start's evaluation if ``(theta, loss, prior, C)`` is its point (once), else None."""
        start, self._start = self._start, None
        if start is None or not isinstance(theta, np.ndarray):
            return None
        x0, start_loss, start_prior, start_C, out = start
        if (loss is start_loss and prior is start_prior and C == start_C
                and theta.dtype == np.float64 and theta.shape == x0.shape
                and np.array_equal(theta.view(np.uint64), x0.view(np.uint64))):
            return out
        return None

    def value_and_grad(self, theta, loss, prior, C, out=None):
        """The objective's ``value_and_grad``, counted (``out`` passed on if given)."""
        self._last = None
        start = self._at_start(theta, loss, prior, C)
        if start is not None:
            if out is not None:  # the solver's own vector gets the start's gradient
                out[:] = start[1]
                start = (start[0], out)
                release_free_heap()  # the start's point and gradient, freed just now
            result = self._count(start)
        else:
            extra = {} if out is None else {"out": out}
            result = self._count(self.objective.value_and_grad(theta, loss, prior, C, **extra))
        self._last = (loss, prior, C, result[0])
        return result

    def result_value(self, theta, loss, prior, C, recorded):
        """The objective at the solver's result ``theta``, evaluated again only if need be.

        ``recorded``: the value the solver recorded for ``theta``, the point
        it evaluated last (``ConvergenceMonitor.result_value``), or None.
        If the last evaluation made here was that one (the same value, and
        ``loss``, ``prior`` and ``C``), its value is the objective at
        ``theta``, bit for bit (the objective is deterministic); else
        ``theta`` is evaluated.
        """
        last, self._last = self._last, None
        if (recorded is not None and last is not None and last[0] is loss
                and last[1] is prior and last[2] == C and last[3] == recorded):
            return float(last[3])
        return float(self.objective.value_and_grad(theta, loss, prior, C)[0])

    def loss_value_and_grad(self, theta, loss, out=None):
        """The objective's ``loss_value_and_grad``, counted (``out`` passed on if given)."""
        self._start = self._last = None
        extra = {} if out is None else {"out": out}
        return self._count(self.objective.loss_value_and_grad(theta, loss, **extra))


def _culprits(objective):
    """The sequences of the largest feature value and sample weight, for a divergence's message.

    Empty for an objective whose data are elsewhere (the dask workers').
    """
    try:
        X, offsets, weights = objective.stored_X, objective.offsets, objective.sample_weight
    except AttributeError:
        return ""
    notes = []
    if X.nnz:
        k = int(np.argmax(np.abs(X.data)))
        value = float(abs(X.data[k]))
        if value > UNSCALED_LIMIT:
            row = int(np.searchsorted(X.indptr, k, side="right") - 1)
            seq = int(np.searchsorted(offsets, row, side="right") - 1)
            notes.append(f"Sequence {seq} (token {row - int(offsets[seq])}) holds the largest "
                         f"feature value in magnitude, {value:.6g}")
    if weights is not None and np.asarray(weights).shape[0]:
        seq = int(np.argmax(weights))
        if weights[seq] > 1.0:
            notes.append(f"Sequence {seq} has the largest sample weight, {weights[seq]:.6g}")
    return "".join(f". {note}" for note in notes)


def _diverged(monitor, objective, what):
    """The stage's divergence error (:meth:`ConvergenceMonitor.diverged`), naming sequences."""
    return monitor.diverged(what + _culprits(objective))


def _check_start(value, grad, monitor, objective):
    """Refuse a stage whose objective, gradient or gradient norm is not finite at its start.

    The solvers measure their steps by the gradient's norm: one that
    overflows (a feature value near the float64 limit) leaves them without a
    first step.
    """
    if not np.isfinite(value):
        raise _diverged(monitor, objective,
                        f"the objective is {value} at the starting parameters")
    if not np.isfinite(np.einsum("i,i->", grad, grad)):  # (no BLAS threads woken)
        where = "" if np.all(np.isfinite(grad)) else " (some entries are not finite)"
        raise _diverged(monitor, objective,
                        f"the gradient's norm overflows at the starting parameters{where}, "
                        f"where the objective is {value}")


def run_stage(solver, objective, loss, prior, C, x0, monitor, *, stage):
    """Run ``solver`` from ``x0``; the parameters to keep and their objective.

    Parameters
    ----------
    solver : BaseSolver
    objective : CRFObjective
    loss, prior : loss and prior objects
    C : float
    x0 : ndarray of float64 of shape (n_params,)
    monitor : ConvergenceMonitor
        The stage's monitor; its outcome is corrected here when the start
        is kept.
    stage : str
        The stage's name, for warnings.

    Returns
    -------
    theta : ndarray of float64 of shape (n_params,)
        The solver's result (the best held-out score's parameters with early
        stopping), or ``x0`` if the objective there is above the start's.
    value : float
        The objective at ``theta``.

    Raises
    ------
    ValueError
        If the objective or its gradient's norm is not finite at ``x0``, the
        objective or the parameters are not finite at the solver's result or
        at a reported iteration, or the solver stalled without a single step
        because the objective was not finite at its trial points: naming the
        stage and the likely causes (:meth:`ConvergenceMonitor.diverged`).

    Warns
    -----
    ConvergenceWarning
        If the stage ended above its starting objective (the start is kept,
        ``stop_reason`` 'stalled').
    UserWarning
        If training of a loss other than CLL started at zero parameters and
        lowered the objective by less than 1e-6 (relative): ``stop_reason``
        'stalled', ``init='cll'`` is the remedy.
    """
    start = objective.value_and_grad(x0, loss, prior, C)
    start_value = float(start[0])
    _check_start(start_value, start[1], monitor, objective)
    # The set-up's and the first evaluation's freed blocks (the kept
    # accumulators' row lists, the vectorisation's temporaries) stay
    # resident in glibc's heap through the solve unless given back before it.
    release_free_heap()
    tags = get_loss_tags(loss)
    monitor.gradient_test = tags.smooth
    _warn_if_saturated_start(loss, x0, stage)
    # the start's answer for the solver's first call (not held through the solve)
    watched = _Watched(objective, (np.array(x0, dtype=np.float64), loss, prior, C, start))
    del start
    # The solvers' vector operations (norms, dots of the whole parameter
    # vector) are BLAS calls; a multi-threaded BLAS wakes its threads for
    # them, which then spin beside the kernels' own threads (n_jobs), in CPU
    # time and on the cores. The kernels' OpenMP threads are not BLAS.
    with threadpool_limits(limits=1, user_api="blas"):
        try:
            theta = monitor.result(solver.solve(watched, loss, prior, C, x0, monitor))
        except PotentialMagnitudeError as exc:
            raise _diverged(monitor, objective,
                            f"the weights grew out of range during training ({exc})") from exc
    value = watched.result_value(theta, loss, prior, C, monitor.result_value(theta))
    if not (np.isfinite(value) and np.all(np.isfinite(theta))):
        raise _diverged(monitor, objective, f"the objective is {value} at the solver's result"
                        if not np.isfinite(value) else "the solver's result is not finite")
    if watched.non_finite and monitor.n_iter == 0 and monitor.stop_reason == "stalled":
        raise _diverged(
            monitor, objective,
            f"the objective or its gradient was not finite at {watched.non_finite} trial "
            "point(s) and the solver found no step from the starting parameters")
    tolerance = 1e-12 * max(abs(start_value), 1.0)
    own_rule = get_solver_tags(solver).own_rule  # (the perceptron, MIRA)
    if (not own_rule and not monitor.early_stopped
            and value > start_value + tolerance):
        message = (f"the objective at the solver's result, {value:.10g}, is above the "
                   f"{start_value:.10g} it started from; the starting parameters are kept")
        monitor.converged, monitor.stop_reason, monitor.message = False, "stalled", message
        warnings.warn(f"{stage}: {message}. Try another solver or step size, or check the "
                      "scale of numeric features.", ConvergenceWarning, stacklevel=4)
        theta, value = np.array(x0, dtype=np.float64), start_value
    name = tags.name or type(loss).__name__
    if (not np.any(x0) and name != "cll" and not own_rule
            and not monitor.early_stopped
            and start_value - value <= _NO_PROGRESS * max(abs(start_value), 1.0)):
        # From zero every label sequence has the same score: a loss with a
        # maximum over the outputs is not differentiable there and its
        # (sub)gradient may give no descent, so steps stay (almost) at zero.
        message = (f"the objective fell only from {start_value:.10g} to {value:.10g} from "
                   "zero parameters, where every label sequence has the same score")
        monitor.converged, monitor.stop_reason, monitor.message = False, "stalled", message
        warnings.warn(
            f"{stage}: training of loss={name!r} made no progress: {message} (its gradient "
            "there is zero or gives no descent). Start from a CLL fit: init='cll' (or "
            "warm_start=True after a CLL fit); with SGD epochs, a step size of your own "
            "(eta0) may also help.", UserWarning, stacklevel=4)
    return theta, value


@dataclass
class StageSettings:
    """The estimator's parameters that :func:`train_stages` reads.

    Parameters
    ----------
    C : float
    init : {'auto', 'cll'} or None
    init_C : float or None
    tol : float
    max_iter : int or None
    verbose : int
        ``>= 2``: a summary line after every stage.
    callback : callable or None
    n_iter_no_change : int or None
        As the estimator's parameters of these names; None: the solver's
        (``SolverTags.n_iter_no_change``).
    early_stopping : bool, default=True
        Whether the validation score of ``train_stages`` stops training;
        False: it is only recorded.
    """

    C: float
    init: str
    init_C: float
    tol: float
    max_iter: int
    verbose: int
    callback: object
    n_iter_no_change: int
    early_stopping: bool = True


def _stage_done(verbose, stage, monitor, solver_name, seconds):
    """Print the ``verbose >= 2`` summary line of one training stage."""
    if verbose >= 2:
        print(stage_summary(stage, monitor, solver_name, seconds), flush=True)


def train_stages(settings, objective, loss, prior, solver, x0, from_zero, validation=None,
                 snapshot=None):
    """Run the training stages; the final parameters and a :class:`FitInfo`.

    Parameters
    ----------
    settings : StageSettings
        The estimator's training parameters.
    objective : CRFObjective
    loss, prior, solver
        The resolved components.
    x0 : ndarray of float64 of shape (n_params,)
    from_zero : bool
        Whether ``x0`` is zeros (no warm start).
    validation : HeldOutScore or None, default=None
        The held-out score, recorded after every iteration of the loss's
        stages (``info.validation_scores``); early stopping's if
        ``settings.early_stopping``.
    snapshot : callable or None, default=None
        ``snapshot(theta)``: the model a three-argument callback receives.

    Returns
    -------
    theta : ndarray of float64 of shape (n_params,)
    info : FitInfo
    """
    C = float(settings.C)
    tags = get_loss_tags(loss)
    name = tags.name or type(loss).__name__
    if starts_from_cll(settings.init, tags, warm=not from_zero) and name != "cll":
        t0 = time.perf_counter()
        cll = ConditionalLogLikelihood()
        init_solver = make_solver(default_solver(cll, prior))
        monitor = ConvergenceMonitor(settings.tol,
                                     settings.max_iter or init_solver.default_max_iter,
                                     verbose=settings.verbose, stage="init='cll'")
        init_C = C if settings.init_C is None else float(settings.init_C)
        x0, _ = run_stage(init_solver, objective, cll, prior, init_C, x0, monitor,
                          stage="init='cll'")
        init_n_iter = monitor.n_iter
        _stage_done(settings.verbose, "init='cll'", monitor, init_solver.name,
                    time.perf_counter() - t0)
    else:
        init_n_iter = 0
        if (from_zero and get_solver_tags(solver).line_search
                and tags.needs_init and not tags.smooth):
            warnings.warn(
                f"loss={name!r} starts from zero parameters, where every label sequence "
                "has the same score: its maximum over the incorrect outputs is not "
                "differentiable there and L-BFGS usually stops at once. Use init='cll' "
                "(or warm_start=True after a CLL fit).", UserWarning, stacklevel=4)
    # A loss with an annealing schedule (e.g. labelwise with a list of
    # alpha) is trained stage by stage, each warm-started from the last.
    stages = tags.stages
    info = FitInfo(init_n_iter=init_n_iter,
                   validation_scores=None if validation is None else [])
    callback, on_params = settings.callback, None
    if callback is not None and snapshot is not None and takes_model(callback):
        def on_params(k, theta, value):
            settings.callback(k, value, snapshot(theta))
        callback = None
    solver_tags = get_solver_tags(solver)
    patience = (solver_tags.n_iter_no_change if settings.n_iter_no_change is None
                else settings.n_iter_no_change)
    for k, stage in enumerate(stages):
        # Every stage is named (in warnings and verbose lines), also a single one.
        stage_name = f"loss={name!r}" + (f" {k + 1}/{len(stages)}" if len(stages) > 1 else "")
        t0 = time.perf_counter()
        monitor = ConvergenceMonitor(
            settings.tol, settings.max_iter or solver.default_max_iter, verbose=settings.verbose,
            callback=callback, on_params=on_params, validation=validation,
            n_iter_no_change=patience, early_stopping=settings.early_stopping,
            unit=solver_tags.unit, stage=stage_name)
        x0, info.objective = run_stage(solver, objective, stage, prior, C, x0, monitor,
                                       stage=stage_name)
        info.n_iter += monitor.n_iter
        info.loss_curve += monitor.history
        info.converged = monitor.converged
        info.stop_reason = monitor.stop_reason
        info.message = monitor.message
        if validation is not None:
            info.validation_scores += monitor.validation_scores
            info.best_validation_score = monitor.best_score
        _stage_done(settings.verbose, stage_name, monitor, solver.name, time.perf_counter() - t0)
    return x0, info

