"""Check a loss against its definition by enumeration and finite differences.

:func:`check_loss` is for the author of a loss (a built-in one or a user's
class written to the loss contract, :class:`~sklearn_crfloss.losses.BaseLoss`):
on small random chains it compares the value of ``value_and_grad`` with the
loss computed from its definition by enumerating every label sequence
(:func:`loss_by_enumeration`), and the gradient with finite differences, and
reports what failed. The package's own tests run it on every registered loss.
"""

import itertools
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from .._utils import Interval, validate_parameter_constraints
from ._base import get_loss_tags

__all__ = ["LossCheckError", "LossCheckReport", "LossCheckResult", "check_loss",
           "enumerate_paths", "loss_by_enumeration"]

#: Default label names of the random problems: one chunk type in IOB2.
DEFAULT_CLASSES = ("B-NP", "I-NP", "O")


def enumerate_paths(unary, transition, start, end):
    """Every label sequence of one chain and its score.

    Parameters
    ----------
    unary : ndarray of float64 of shape (length, n_labels)
        Unary potentials of the chain's tokens (``length >= 1``).
    transition : ndarray of float64 of shape (n_labels, n_labels)
    start, end : ndarray of float64 of shape (n_labels,)

    Returns
    -------
    paths : ndarray of intp of shape (n_labels ** length, length)
        All label sequences in lexicographic order.
    scores : ndarray of float64 of shape (n_labels ** length,)
        ``score(y) = start[y_0] + sum_t unary[t, y_t] + sum_t transition[y_{t-1}, y_t]
        + end[y_{-1}]`` of every row of ``paths``.

    Notes
    -----
    The cost is ``n_labels ** length`` rows: keep chains tiny (a few
    labels, a handful of tokens).
    """
    length, n_labels = unary.shape
    paths = np.array(list(itertools.product(range(n_labels), repeat=length)), dtype=np.intp)
    paths = paths.reshape(n_labels ** length, length)
    scores = (start[paths[:, 0]] + end[paths[:, -1]]
              + unary[np.arange(length), paths].sum(axis=1)
              + transition[paths[:, :-1], paths[:, 1:]].sum(axis=1))
    return paths, scores


def _has_definition(loss):
    """Whether ``loss`` declares a definition by enumeration (see BaseLoss)."""
    return callable(getattr(loss, "enumerated_batch_loss", None)) or callable(
        getattr(loss, "enumerated_loss", None))


def loss_by_enumeration(loss, unary, transition, start, end, y, offsets, sample_weight=None,
                        token_weight=None):
    """A loss's value computed from its definition, by enumerating every label sequence.

    Enumerates the label sequences of each chain (:func:`enumerate_paths`)
    and hands them to the loss's ``enumerated_batch_loss`` (or, for an
    object that has only ``enumerated_loss``, sums that over sequences
    with the weights): see :meth:`BaseLoss.enumerated_loss
    <sklearn_crfloss.losses.BaseLoss.enumerated_loss>`.

    Parameters
    ----------
    loss : loss object
        A loss declaring a definition by enumeration, prepared as for
        ``value_and_grad`` (validated, with ``set_classes`` called if it
        needs label names).
    unary, transition, start, end, y, offsets
        The potentials, gold labels and sequence boundaries, as in
        :meth:`BaseLoss.value_and_grad
        <sklearn_crfloss.losses.BaseLoss.value_and_grad>`. Keep the chains
        tiny: the cost is ``n_labels ** length`` per sequence.
    sample_weight : ndarray of shape (n_sequences,), default=None
        Per-sequence weights; ``None`` means 1.
    token_weight : ndarray of shape (n_tokens,), default=None
        Per-token weights, for a loss with ``supports_token_weight``.

    Returns
    -------
    float
        The loss of the batch, comparable with the value of
        ``loss.value_and_grad`` on the same arguments.

    Raises
    ------
    NotImplementedError
        If the loss declares no definition by enumeration.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_crfloss.losses import ConditionalLogLikelihood, loss_by_enumeration
    >>> rng = np.random.default_rng(0)
    >>> U, T, s, e = rng.normal(size=(4, 2)), rng.normal(size=(2, 2)), np.zeros(2), np.zeros(2)
    >>> y, offsets = np.array([0, 1, 1, 0]), np.array([0, 1, 4])
    >>> cll = ConditionalLogLikelihood()
    >>> value = cll.value_and_grad(U, T, s, e, y, offsets)[0]
    >>> bool(np.isclose(value, loss_by_enumeration(cll, U, T, s, e, y, offsets)))
    True
    """
    if not _has_definition(loss):
        raise NotImplementedError(
            f"{type(loss).__name__} declares no definition by enumeration "
            "(enumerated_loss or enumerated_batch_loss, see BaseLoss)")
    paths, scores, gold, weights = [], [], [], []
    for i in range(offsets.shape[0] - 1):
        a, b = offsets[i], offsets[i + 1]
        P, S = enumerate_paths(unary[a:b], transition, start, end)
        paths.append(P)
        scores.append(S)
        gold.append(np.asarray(y[a:b], dtype=np.intp))
        if token_weight is not None:
            weights.append(np.asarray(token_weight[a:b], dtype=np.float64))
    token_weights = None if token_weight is None else weights
    batch = getattr(loss, "enumerated_batch_loss", None)
    if callable(batch):
        return float(batch(paths, scores, gold, sample_weight=sample_weight,
                           token_weight=token_weights))
    w = np.ones(len(paths)) if sample_weight is None else np.asarray(sample_weight, float)
    extra = [{} if token_weights is None else {"token_weight": t} for t in
             (token_weights or [None] * len(paths))]
    return float(sum(w[i] * loss.enumerated_loss(paths[i], scores[i], gold[i], **extra[i])
                     for i in range(len(paths))))


@dataclass
class LossCheckResult:
    """The outcome of one check of :func:`check_loss` on one random problem.

    Attributes
    ----------
    check : str
        ``'contract'``, ``'value'``, ``'value (weighted)'``, ``'gradient'``
        or ``'convexity'``.
    problem : int
        Index into :attr:`LossCheckReport.problems`.
    status : {'passed', 'failed', 'skipped'}
    max_abs_error, max_rel_error : float or None
        The largest absolute and relative difference found (None when the
        check compares no numbers).
    detail : str
        What was compared, or what went wrong.
    """

    check: str
    problem: int
    status: str
    max_abs_error: float = None
    max_rel_error: float = None
    detail: str = ""


@dataclass
class LossCheckReport:
    """Everything :func:`check_loss` found, check by check.

    ``str(report)`` is a table of every check; :attr:`failed` lists the
    failures (empty when the loss passed).

    Attributes
    ----------
    loss : str
        ``repr`` of the checked loss.
    setup : str
        How the random problems were drawn.
    problems : list of dict
        Every random problem, indexed by :attr:`LossCheckResult.problem`,
        as the keyword arguments of ``value_and_grad`` (``unary``,
        ``transition``, ``start``, ``end``, ``y``, ``offsets``,
        ``sample_weight`` and, for a loss with ``supports_token_weight``,
        ``token_weight``; the unweighted checks leave the weights out), so
        that a failure can be reproduced and debugged.
    results : list of LossCheckResult
        One entry per check and problem, in the order they ran.
    """

    loss: str
    setup: str = ""
    problems: list = field(default_factory=list)
    results: list = field(default_factory=list)

    @property
    def failed(self):
        """list of LossCheckResult: the checks that failed."""
        return [r for r in self.results if r.status == "failed"]

    @property
    def skipped(self):
        """list of LossCheckResult: the checks that could not run (e.g. no definition)."""
        return [r for r in self.results if r.status == "skipped"]

    @property
    def passed(self):
        """bool: whether no check failed (skipped checks do not fail)."""
        return not self.failed

    def __str__(self):
        n_fail = len(self.failed)
        head = (f"check_loss({self.loss}): "
                + ("passed" if not n_fail else f"{n_fail} of {len(self.results)} checks FAILED")
                + (f", {len(self.skipped)} skipped" if self.skipped else ""))
        lines = [head, f"problems: {self.setup}"]
        lines.append(f"  {'check':<17} {'problem':>7}  {'max abs err':>11}  "
                     f"{'max rel err':>11}  result")
        for r in self.results:
            abs_e = "-" if r.max_abs_error is None else f"{r.max_abs_error:.2e}"
            rel_e = "-" if r.max_rel_error is None else f"{r.max_rel_error:.2e}"
            status = r.status.upper() if r.status == "failed" else r.status
            lines.append(f"  {r.check:<17} {r.problem:>7}  {abs_e:>11}  {rel_e:>11}  {status}"
                         + (f": {r.detail}" if r.detail and r.status != "passed" else ""))
        return "\n".join(lines)


class LossCheckError(AssertionError):
    """Raised by :func:`check_loss` when a check fails; ``report`` holds the details.

    Its message is the report's table (``str(report)``).

    Attributes
    ----------
    report : LossCheckReport
    """

    def __init__(self, report):
        super().__init__(str(report))
        self.report = report


def _split(x, shapes):
    """Cut a flat vector into arrays of the given shapes (C-contiguous copies)."""
    sizes = [int(np.prod(sh)) for sh in shapes]
    parts = np.split(x, np.cumsum(sizes)[:-1])
    return [np.ascontiguousarray(p.reshape(sh)) for p, sh in zip(parts, shapes)]


_BLOCKS = ("d_unary", "d_transition", "d_start", "d_end")


class _Problem:
    """One random problem: potentials, gold labels, weights, and how to call the loss."""

    def __init__(self, rng, n_labels, lengths, scale, token_weighted):
        lengths = np.asarray(lengths, dtype=np.intp)
        self.offsets = np.zeros(lengths.shape[0] + 1, dtype=np.intp)
        np.cumsum(lengths, out=self.offsets[1:])
        n = int(self.offsets[-1])
        self.potentials = [rng.normal(scale=scale, size=(n, n_labels)),
                           rng.normal(scale=scale, size=(n_labels, n_labels)),
                           rng.normal(scale=scale, size=n_labels),
                           rng.normal(scale=scale, size=n_labels)]
        self.y = rng.randint(n_labels, size=n).astype(np.intp)
        self.sample_weight = rng.uniform(0.5, 2.0, size=lengths.shape[0])
        self.token_weight = rng.uniform(0.0, 2.0, size=n) if token_weighted else None
        self.shapes = [p.shape for p in self.potentials]

    def as_dict(self):
        names = ("unary", "transition", "start", "end")
        out = {n: p.copy() for n, p in zip(names, self.potentials)}
        out.update(y=self.y.copy(), offsets=self.offsets.copy(), **{
            k: v.copy() for k, v in self.weights(True).items()})
        return out

    def weights(self, weighted):
        if not weighted:
            return {}
        kw = {"sample_weight": self.sample_weight}
        if self.token_weight is not None:
            kw["token_weight"] = self.token_weight
        return kw

    def call(self, loss, potentials, weighted):
        return loss.value_and_grad(*potentials, self.y, self.offsets, **self.weights(weighted))

    def value_at(self, loss, x):
        return float(self.call(loss, _split(x, self.shapes), True)[0])


def _compare(actual, expected, rtol, atol):
    """(passed, max abs error, max rel error, index of the worst entry)."""
    actual, expected = np.atleast_1d(actual), np.atleast_1d(expected)
    err = np.abs(actual - expected)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        rel = np.where(err == 0, 0.0, err / np.abs(expected))
    excess = err - (atol + rtol * np.abs(expected))
    worst = int(np.argmax(excess))
    return bool(np.all(excess <= 0)), float(err.max()), float(rel.max()), worst


def _check_contract(loss, prob):
    """Shapes, finiteness, float value, inputs left unchanged."""
    inputs = [p.copy() for p in prob.potentials]
    for weighted in (False, True):
        out = prob.call(loss, inputs, weighted)
        if not isinstance(out, tuple) or len(out) != 5:
            return "value_and_grad must return (value, d_unary, d_transition, d_start, d_end)"
        if not np.isscalar(out[0]) or not np.isfinite(out[0]):
            return f"value must be a finite float, got {out[0]!r}"
        for name, g, p in zip(_BLOCKS, out[1:], prob.potentials):
            if np.shape(g) != p.shape:
                return f"{name} has shape {np.shape(g)}, expected {p.shape}"
            if not np.all(np.isfinite(g)):
                return f"{name} is not finite"
        for name, a, p in zip(("unary", "transition", "start", "end"), inputs,
                              prob.potentials):
            if not np.array_equal(a, p):
                return f"value_and_grad modified its argument {name!r}"
    return None


def _finite_differences(f, x, eps=1e-5):
    """Five-point central differences of a scalar function of a vector."""
    grad = np.empty_like(x)
    for i in range(x.shape[0]):
        step = np.zeros_like(x)
        step[i] = eps
        grad[i] = (-f(x + 2 * step) + 8 * f(x + step) - 8 * f(x - step)
                   + f(x - 2 * step)) / (12 * eps)
    return grad


def _locate(flat_index, shapes):
    """'d_unary[3, 1]' for a flat index into the concatenated gradients."""
    for name, shape in zip(_BLOCKS, shapes):
        size = int(np.prod(shape))
        if flat_index < size:
            return f"{name}[{', '.join(map(str, np.unravel_index(flat_index, shape)))}]"
        flat_index -= size
    raise IndexError(flat_index)


def _convexity_violations(loss, prob, rng, n_lines):
    """Number of random lines in potential space along which the value is not convex."""
    x_size = sum(int(np.prod(sh)) for sh in prob.shapes)
    ts = np.linspace(0.0, 1.0, 11)
    bad = 0
    for _ in range(n_lines):
        a, b = rng.normal(scale=2.0, size=(2, x_size))
        vals = np.array([prob.value_at(loss, (1 - t) * a + t * b) for t in ts])
        bad += bool(np.any(np.diff(vals, 2) < -1e-9 * max(1.0, np.abs(vals).max())))
    return bad


_CHECK_LOSS_CONSTRAINTS = {
    "classes": ["array-like"],
    "lengths": ["array-like"],
    "n_problems": [Interval(Integral, 1, None, closed="left")],
    "random_state": ["random_state"],
    "value_rtol": [Interval(Real, 0, None, closed="left")],
    "grad_rtol": [Interval(Real, 0, None, closed="left")],
    "grad_atol": [Interval(Real, 0, None, closed="left")],
    "eps": [Interval(Real, 0, None, closed="neither")],
    "raise_on_failure": ["boolean"],
}


def check_loss(loss, *, classes=DEFAULT_CLASSES, lengths=(1, 2, 5, 3), n_problems=3,
               random_state=0, value_rtol=1e-10, grad_rtol=1e-6, grad_atol=1e-7, eps=1e-5,
               raise_on_failure=True):
    """Check a loss's value by enumeration and its gradient by finite differences.

    On ``n_problems`` random problems (random potentials of scale 1, random
    gold labels, sequences of the given ``lengths``) the following checks
    run, each reported per problem:

    ``contract``
        ``value_and_grad`` returns ``(value, d_unary, d_transition,
        d_start, d_end)`` with a finite float value, gradients of the
        potentials' shapes, all finite, with and without weights, and
        leaves its arguments unchanged.
    ``value`` and ``value (weighted)``
        The value against the loss's definition by enumeration
        (:func:`loss_by_enumeration`), without and with random
        ``sample_weight`` (and ``token_weight`` if the loss has
        ``supports_token_weight``), to relative tolerance ``value_rtol``.
        Skipped when the loss declares no definition by enumeration
        (:meth:`BaseLoss.enumerated_loss
        <sklearn_crfloss.losses.BaseLoss.enumerated_loss>`).
    ``gradient``
        Every entry of the weighted gradient against five-point central
        finite differences of the value, ``|analytic - numeric| <=
        grad_atol + grad_rtol |numeric|``; a failure names the worst entry
        (e.g. ``d_transition[0, 2]``).
    ``convexity``
        If the loss declares ``convex`` (:class:`~sklearn_crfloss.losses.LossTags`): the value is convex along 10
        random lines in potential space.

    A non-smooth loss (max-margin, perceptron) is checked where it is
    differentiable, which random potentials almost surely are. An exception
    raised by the loss fails the check it happened in, with its message.

    Parameters
    ----------
    loss : str or loss object
        A name of :data:`~sklearn_crfloss.losses.LOSSES` or an object with
        ``value_and_grad`` (e.g. a subclass of
        :class:`~sklearn_crfloss.losses.BaseLoss`). It is validated and
        copied with :func:`~sklearn_crfloss.losses.get_loss` (the caller's
        object is not changed) and given the label names with
        ``set_classes(classes)`` if it has that method.
    classes : array-like of str, default=('B-NP', 'I-NP', 'O')
        Label names; ``n_labels = len(classes)``. The enumeration costs
        ``n_labels ** max(lengths)`` paths per sequence.
    lengths : array-like of int, default=(1, 2, 5, 3)
        Lengths of the sequences of every problem (all ``>= 1``).
    n_problems : int, default=3
        Number of random problems.
    random_state : int, RandomState instance or None, default=0
        Seed of the problems (fixed by default, so a report is reproducible).
    value_rtol : float, default=1e-10
        Relative tolerance of the value check (absolute ``1e-12``).
    grad_rtol, grad_atol : float, default=1e-6, 1e-7
        Tolerances of the gradient check.
    eps : float, default=1e-5
        Step of the finite differences.
    raise_on_failure : bool, default=True
        Raise :class:`LossCheckError` (an ``AssertionError``) if any check
        fails; otherwise return the report in every case.

    Returns
    -------
    LossCheckReport
        Every check with its problem, status and largest errors; print it
        for a table.

    Raises
    ------
    LossCheckError
        If a check fails and ``raise_on_failure=True``; its message is the
        report's table.
    ValueError
        If ``loss`` is an unknown name or has an invalid hyperparameter
        (from :func:`~sklearn_crfloss.losses.get_loss`), or ``classes`` has
        fewer than 2 names or ``lengths`` an entry below 1.
    TypeError
        If ``loss`` has no ``value_and_grad`` method.

    See Also
    --------
    BaseLoss.enumerated_loss : how a loss declares its definition.

    Examples
    --------
    >>> from sklearn_crfloss.losses import check_loss
    >>> report = check_loss("softmax_margin")
    >>> report.passed, len(report.results)
    (True, 15)

    A loss whose gradient is wrong fails with a readable report:

    >>> from sklearn_crfloss.losses import ConditionalLogLikelihood, LossCheckError
    >>> class WrongCLL(ConditionalLogLikelihood):
    ...     def value_and_grad(self, *args, **kwargs):
    ...         value, dU, dT, ds, de = super().value_and_grad(*args, **kwargs)
    ...         return value, dU, 0.5 * dT, ds, de
    >>> try:
    ...     check_loss(WrongCLL(), n_problems=1)
    ... except LossCheckError as exc:
    ...     print(sorted({r.check for r in exc.report.failed}))
    ...     print(exc.report.failed[0].detail)  # doctest: +ELLIPSIS
    ['gradient']
    worst entry d_transition[...]: value_and_grad gives ..., finite differences ...
    """
    from ._registry import get_loss

    validate_parameter_constraints(_CHECK_LOSS_CONSTRAINTS, dict(
        classes=classes, lengths=lengths, n_problems=n_problems, random_state=random_state,
        value_rtol=value_rtol, grad_rtol=grad_rtol, grad_atol=grad_atol, eps=eps,
        raise_on_failure=raise_on_failure), caller_name="check_loss")
    loss = get_loss(loss)
    classes = np.asarray(classes)
    lengths = tuple(int(n) for n in np.asarray(lengths).ravel())
    if classes.ndim != 1 or classes.shape[0] < 2:
        raise ValueError(f"classes must name at least 2 labels, got {classes!r}")
    if not lengths or min(lengths) < 1:
        raise ValueError(f"lengths must be sequence lengths >= 1, got {lengths!r}")
    tags = get_loss_tags(loss)
    if tags.needs_classes:
        loss.set_classes(classes)
    rng = check_random_state(random_state)
    token_weighted = tags.supports_token_weight
    report = LossCheckReport(loss=repr(loss), setup=(
        f"{n_problems} random draws (random_state={random_state!r}) of {len(lengths)} "
        f"sequences of lengths {lengths} over the labels {[str(c) for c in classes]}, "
        "potentials ~ N(0, 1), uniform gold labels; the weighted checks use "
        "sample_weight ~ U(0.5, 2)" + (" and token_weight ~ U(0, 2)" if token_weighted else "")
        + " (report.problems holds the arrays)"))
    for k in range(n_problems):
        prob = _Problem(rng, classes.shape[0], lengths, 1.0, token_weighted)
        report.problems.append(prob.as_dict())
        _run_checks(report, k, loss, prob, rng, value_rtol, grad_rtol, grad_atol, eps)
    if raise_on_failure and report.failed:
        raise LossCheckError(report)
    return report


def _run_checks(report, k, loss, prob, rng, value_rtol, grad_rtol, grad_atol, eps):
    """Append the results of every check on problem ``k`` to ``report``."""
    def record(check, fn):
        try:
            result = fn()
        except Exception as exc:  # the loss's own error is what we report
            result = LossCheckResult(check, k, "failed",
                                     detail=f"raised {type(exc).__name__}: {exc}")
        report.results.append(result)
        return result

    contract = record("contract", lambda: LossCheckResult(
        "contract", k, *(("failed", None, None, msg) if (msg := _check_contract(loss, prob))
                         else ("passed",))))
    if contract.status == "failed":
        return
    for weighted in (False, True):
        name = "value (weighted)" if weighted else "value"
        if not _has_definition(loss):
            report.results.append(LossCheckResult(
                name, k, "skipped", detail="the loss declares no definition by enumeration "
                "(BaseLoss.enumerated_loss)"))
            continue
        record(name, lambda weighted=weighted, name=name: _value_result(
            name, k, loss, prob, weighted, value_rtol))
    record("gradient", lambda: _gradient_result(k, loss, prob, grad_rtol, grad_atol, eps))
    if get_loss_tags(loss).convex:
        record("convexity", lambda: _convexity_result(k, loss, prob, rng))


def _value_result(name, k, loss, prob, weighted, rtol):
    value = prob.call(loss, prob.potentials, weighted)[0]
    try:
        expected = loss_by_enumeration(loss, *prob.potentials, prob.y, prob.offsets,
                                       **prob.weights(weighted))
    except NotImplementedError as exc:
        return LossCheckResult(name, k, "skipped", detail=str(exc))
    ok, abs_e, rel_e, _ = _compare(value, expected, rtol, 1e-12)
    return LossCheckResult(name, k, "passed" if ok else "failed", abs_e, rel_e,
                           f"value_and_grad gives {value!r}, the definition by enumeration "
                           f"{expected!r} (rtol {rtol:g})")


def _gradient_result(k, loss, prob, rtol, atol, eps):
    analytic = np.concatenate([np.ravel(g) for g in prob.call(loss, prob.potentials, True)[1:]])
    x0 = np.concatenate([p.ravel() for p in prob.potentials])
    numeric = _finite_differences(lambda x: prob.value_at(loss, x), x0, eps)
    ok, abs_e, rel_e, worst = _compare(analytic, numeric, rtol, atol)
    return LossCheckResult("gradient", k, "passed" if ok else "failed", abs_e, rel_e,
                           f"worst entry {_locate(worst, prob.shapes)}: value_and_grad gives "
                           f"{analytic[worst]:.8g}, finite differences {numeric[worst]:.8g} "
                           f"(rtol {rtol:g}, atol {atol:g})")


def _convexity_result(k, loss, prob, rng, n_lines=10):
    bad = _convexity_violations(loss, prob, rng, n_lines)
    return LossCheckResult("convexity", k, "failed" if bad else "passed",
                           detail=f"declares convex, but the value is not convex along {bad} of "
                           f"{n_lines} random lines in potential space")
