"""``CRFTagger.partial_fit``: one pass of an online solver over a batch, continued across calls.

:class:`PartialFit` holds what successive calls share: the vectoriser (the
hashing columns fixed by the first call, or a vocabulary that grows with
the stream), the labels given by the first call's ``classes``, the resolved
loss, prior and solver, and the solver's own state
(:class:`~sklearn_crfloss.solvers._sgd_state.SGDState`: the scaled iterate, the
averaging sums, the step count and step size of Bottou's SGD;
:class:`~sklearn_crfloss.solvers._online.OnlineState`: the parameters and
averaging sums of the perceptron and MIRA). Each call vectorises its batch,
runs one epoch of the solver's ``partial_solve`` and returns what
``CRFTagger`` records as its fitted state, so that ``predict`` works
between calls.
"""

import copy
import warnings

import numpy as np

from .._data import (check_sample_weight, check_sequences, encode_known_labels, encode_labels,
                     SequenceVectorizer)
from .._model import bigram_columns, BigramLayout, pack_blocks, ParameterLayout
from .._utils import validate_params
from ..losses import get_loss, get_loss_tags
from ..priors import get_prior
from ..solvers import (ConvergenceMonitor, default_solver, FitInfo, get_solver_tags, make_solver,
                       takes_model)
from ._tag_scheme import refuse_tag_scheme

__all__ = ["PartialFit", "PartialFitMixin", "check_classes"]


def check_classes(classes):
    """The distinct labels of ``partial_fit``'s ``classes``, ordered and kept as ``fit`` keeps them.

    Labels are any hashable values, as in ``fit``: a tuple stays a tuple and
    a mix of ints and strings keeps its types (no ``np.asarray`` of the
    list, which would flatten the one and turn the other into strings).

    Parameters
    ----------
    classes : list or 1-D array of hashable labels

    Returns
    -------
    ndarray of shape (n_classes,)
        As the ``classes_`` of a ``fit`` on these labels (sorted where
        ``<`` orders them; :func:`~sklearn_crfloss._data.classes_array`).

    Raises
    ------
    ValueError
        If there are fewer than two distinct labels, or one is None or NaN.
    TypeError
        If ``classes`` is not a list (or array) of labels, or a label is not
        hashable (naming its index).
    """
    if isinstance(classes, (str, bytes)) or not hasattr(classes, "__len__"):
        raise TypeError(f"classes must be a list of labels, got {type(classes).__name__}.")
    values = classes.tolist() if isinstance(classes, np.ndarray) else list(classes)
    for i, label in enumerate(values):
        if label is None:
            raise ValueError("classes contains None.")
        try:
            hash(label)
        except TypeError:
            raise TypeError(f"classes[{i}] = {label!r:.60} of type {type(label).__name__} is "
                            "not hashable; labels must be hashable values (str, int, tuple, "
                            "...), e.g. a tuple instead of a list.") from None
    try:
        return encode_labels([values], np.array([len(values)]))[0]
    except ValueError as exc:
        if "NaN" in str(exc):
            raise ValueError(f"classes contains NaN, which equals no label: {values!r}.") from None
        raise ValueError(f"classes must hold at least two distinct labels, got {values!r}.") \
            from None


def online_solver(spec, loss, prior, *, average, eta0, random_state):
    """The online solver ``partial_fit`` runs for the estimator's ``solver`` and ``loss``.

    ``solver=None``: the loss's own rule (the perceptron, MIRA) or SGD for
    every other loss. A named or given ``'sgd'``, ``'perceptron'`` or
    ``'mira'`` is used as ``fit`` would.

    Parameters
    ----------
    spec : str, solver object, list or None
        The estimator's ``solver``.
    loss, prior
        The resolved loss and prior.
    average, eta0, random_state
        The estimator's parameters of those names.

    Returns
    -------
    solver object
        One whose record declares ``online`` (:class:`SolverTags`).

    Raises
    ------
    ValueError
        If ``solver`` is a batch solver or a schedule.
    """
    given = spec
    if spec is None:
        rule = default_solver(loss, prior)
        spec = rule if isinstance(rule, str) and rule in ("perceptron", "mira") else "sgd"
    solver = make_solver(spec, average=average, eta0=eta0, random_state=random_state)
    if not get_solver_tags(solver).online:
        raise ValueError(
            "partial_fit trains with an online solver, one epoch per call: solver=None, "
            f"'sgd', 'perceptron' or 'mira', not {given!r} (use fit for batch "
            "solvers).")
    solver.check(loss, prior)
    return solver


class PartialFit:
    """The state that successive ``partial_fit`` calls of one estimator share.

    Parameters
    ----------
    classes : array-like
        Every label the stream may hold.
    loss, prior, C, solver, average, eta0, random_state, feature_hashing, \
all_possible_states, min_freq, boundary_potentials, tag_scheme
        The estimator's parameters of those names, read once, at the first
        call (:data:`PARAMETERS`).

    Raises
    ------
    ValueError
        On ``min_freq > 1`` (a count over the whole stream that one pass
        cannot know), ``boundary_potentials=False``, a ``tag_scheme`` (the
        labels' scheme is detected on all of them), a batch solver, or a
        loss/prior the solver refuses.
    """

    #: The estimator parameters ``partial_fit`` reads (the keyword arguments).
    PARAMETERS = ("loss", "prior", "C", "solver", "average", "eta0", "random_state",
                  "feature_hashing", "all_possible_states", "min_freq", "boundary_potentials",
                  "tag_scheme")

    def __init__(self, classes, *, loss, prior, C, solver, average, eta0, random_state,
                 feature_hashing, all_possible_states, min_freq, boundary_potentials=True,
                 tag_scheme=None):
        refuse_tag_scheme(tag_scheme, "partial_fit",
                          "the scheme of the labels is detected on all of them, and each call "
                          "sees one batch")
        if min_freq > 1:
            raise ValueError(
                f"partial_fit cannot apply min_freq={min_freq}: the attribute "
                "counts of the whole stream are not known while it is read. Use min_freq=1 "
                "(with feature_hashing to bound the memory), or fit on a re-iterable stream.")
        if not boundary_potentials:
            raise ValueError(
                "partial_fit trains the start and end potentials: boundary_potentials=False "
                "is supported by fit only.")
        self.classes = check_classes(classes)
        self.loss = get_loss(loss)
        tags = get_loss_tags(self.loss)  # stages checked here, as in fit; trains the loss itself
        self.prior = get_prior(prior)
        if tags.needs_classes:
            self.loss.set_classes(self.classes)
        self.solver = online_solver(solver, self.loss, self.prior, average=average, eta0=eta0,
                                    random_state=random_state)
        self.C = float(C)
        self.all_states = bool(all_possible_states)
        self.features = SequenceVectorizer(1, feature_hashing)
        self.run = None  # the solver's state, made at the first batch
        self.info = FitInfo(converged=False)
        self.coef = None  # the estimator's coef_ after the last call (fit replaces it)

    def step(self, X, y, sample_weight=None, verbose=0):
        """Vectorise a batch and run one epoch of the solver over it.

        Parameters
        ----------
        X : list of sequences
            As for ``fit``; of the kind (and width, for arrays) of the first
            call.
        y : list of sequences of labels
            Labels from ``classes``.
        sample_weight : array-like of shape (n_sequences,) or None

        Returns
        -------
        tuple
            ``(features, classes, layout, theta, info, loss, prior)``: the
            arguments of the estimator's fitted state.

        Raises
        ------
        ValueError, TypeError
            On bad input (naming the sequence) or a label outside
            ``classes``; the state is then unchanged. A ``ValueError`` also
            if the objective or the parameters are not finite after the
            epoch: the solver has put its state back (its own solvers do;
            otherwise the state is dropped, ``run`` is None, and
            ``partial_fit`` starts anew at its next call).
        """
        first = self.run is None
        kind, tokens, offsets = check_sequences(
            X, kind=None if first else self.features.kind,
            n_features=(self.features.n_input
                        if not first and self.features.kind == "array" else None))
        lengths = np.diff(offsets)
        y_enc = encode_known_labels(y, lengths, self.classes)
        sample_weight = check_sample_weight(sample_weight, lengths.shape[0])
        features = copy.copy(self.features)
        if first and kind == "dict" and features.feature_hashing is not None:
            # Every hashing column from the first call on: the size is fixed.
            Xc = features.fit_counts({}).transform(tokens, offsets)
        elif first:
            Xc = features.fit_transform(kind, tokens, offsets)
        else:
            Xc = features.extend_transform(tokens, offsets)
        columns = bigram_columns(features.attributes)  # (new ones after the old ones)
        L = self.classes.shape[0]
        run = self.solver.new_state(Xc.shape[1], L, self.all_states) if first else self.run
        # The solver grows its state to the new attributes, and puts it back
        # as it was if the epoch diverges (a ValueError).
        value = self.solver.partial_solve(Xc, y_enc, offsets, sample_weight, self.loss,
                                          self.prior, self.C, run, verbose=verbose,
                                          bigram_columns=columns)
        info = copy.copy(self.info)
        info.n_iter += 1
        info.loss_curve = self.info.loss_curve + [float(value)]
        info.objective = float(value)  # the batch's epoch estimate (SGD's Notes)
        info.message = f"partial_fit: {info.n_iter} batches"
        out = self._fitted(run, features, info)
        if not (np.isfinite(value) and np.all(np.isfinite(out[3]))):
            # (a solver that does not check, or averaged parameters that overflow)
            self.run = None  # (the state cannot be trusted: dropped)
            raise ConvergenceMonitor(0.0, 1, stage="partial_fit").diverged(
                f"the objective of the batch is {value}" if not np.isfinite(value) else
                "the parameters are not finite after the batch")
        self.run, self.features, self.info = run, features, info
        if verbose:
            print(f"partial_fit batch {info.n_iter}: {lengths.shape[0]} sequences, "
                  f"{Xc.shape[1]} attributes, objective {value:.6e}", flush=True)
        return out

    def _fitted(self, run, features, info):
        """The arguments of the estimator's fitted state for the parameters of ``run``."""
        W, T, s, e, *blocks = self.solver.parameters_of(run)
        # (the online rules train every pair; SGD those observed, or all)
        dense = self.all_states or self.solver.dense_states
        state_index = None if dense else np.flatnonzero(run.mask)
        columns = bigram_columns(features.attributes)
        layout = (BigramLayout(W.shape[0], W.shape[1], state_index, columns) if columns.shape[0]
                  else ParameterLayout(W.shape[0], W.shape[1], state_index))
        theta = pack_blocks(layout, W, T, s, e, *blocks)
        info = copy.copy(info)
        info.loss_curve = list(info.loss_curve)
        return (features, self.classes, layout, theta, info, self.loss, self.prior)


class PartialFitMixin:
    """``partial_fit`` for :class:`~sklearn_crfloss.CRFTagger` (out-of-core training)."""

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One epoch of the online solver over a batch, continuing the previous calls.

        For data that do not fit in memory, or arrive over time (scikit-learn's
        out-of-core convention, as ``SGDClassifier.partial_fit``).
        ``solver=None`` trains with SGD (averaged, ASGD, with ``average``), or
        the loss's own rule for ``'perceptron'`` and ``'mira'``; ``'sgd'``,
        ``'perceptron'`` and ``'mira'`` may be named, batch solvers cannot.
        The step schedule, the averaging and the L2 scale continue across
        calls. Every sequence passed counts as a new one: after batches of
        ``N`` sequences in all, the prior is that of :meth:`fit` on ``N``
        sequences (a corpus streamed ``k`` times weighs ``k`` times against
        the prior, as ``C`` times ``k`` would). ``eta0='auto'`` is calibrated
        on the first batch; with ``average=True`` averaging starts after it.
        The estimator's parameters are read at the first call; after
        :meth:`fit` or on a model loaded from a file (neither keeps the
        online state), the next call starts anew from zero parameters and
        warns (``UserWarning``): to train further from fitted parameters,
        use :meth:`fit` with ``warm_start=True``. ``max_iter``, ``tol``,
        ``init``, ``warm_start`` and ``early_stopping`` do not apply (each
        call is one epoch from where the last one ended); ``callback`` is
        called after each call, as after each epoch of :meth:`fit`, with
        ``n_iter_`` and the call's objective estimate (and a copy of the
        fitted estimator if it takes three arguments). ``tag_scheme`` is
        refused: convert the labels first.

        With ``feature_hashing`` the parameter size is fixed by the first
        call: ``feature_hashing * n_classes`` state weights, and as many
        averaging sums (2 x 184 MB for ``2**20`` columns and 22 labels).
        Without it, attributes not seen before extend the model as they
        arrive, so the memory grows with the vocabulary of the stream.
        ``min_freq > 1`` needs the counts of the whole stream and is refused.
        With ``all_possible_states=False`` (SGD) the (attribute, label) pairs
        trained are those observed in the batches so far.

        Parameters
        ----------
        X : list of sequences
            As in :meth:`fit`, of the same kind (and width) in every call.
        y : list of sequences of labels
            Labels from ``classes``.
        classes : array-like or None, default=None
            All the labels of the stream: required on the first call; if
            given later, the same as on the first call.
        sample_weight : array-like of shape (n_sequences,), default=None
            Non-negative weight of each sequence.

        Returns
        -------
        self : CRFTagger
            Fitted after every call, so ``predict`` works between calls;
            ``n_iter_`` counts the calls, ``loss_curve_`` holds one objective
            estimate per call (the batch's losses, each before its step,
            plus the penalty) and ``converged_`` is False.

        Raises
        ------
        ValueError
            If ``classes`` is missing on the first call or differs later,
            ``order=2``, a
            label is not in ``classes`` (naming the sequence), the solver is a
            batch solver, ``min_freq > 1``, ``tag_scheme`` is set, a given
            ``eta0`` is so large that a step would zero the weights, the
            batch's objective or the parameters after it are not finite
            (the batch is undone: the
            model and the online state stay those of the calls before), or
            on the errors of :meth:`fit`.
        TypeError
            If X, y or ``classes`` is not a list.
        """
        state = self.__dict__.get("_partial")
        if state is not None and state.coef is not self.__dict__.get("coef_"):
            state = None  # fit ran since: start anew
        if state is None:
            validate_params(self)
            if self.get_params(deep=False).get("order", 1) != 1:
                raise ValueError("order=2 does not support partial_fit (online training is "
                                 "first order); use fit")
            if classes is None:
                raise ValueError("classes must be given on the first call to partial_fit: "
                                 "every label the batches may hold.")
            params = self.get_params(deep=False)
            state = PartialFit(classes, **{name: params[name] for name in PartialFit.PARAMETERS
                                           if name in params})
            if "coef_" in self.__dict__:  # fitted by fit, or loaded: no online state
                warnings.warn(
                    "partial_fit starts anew: this estimator was fitted by fit or loaded "
                    "from a model file, which keep no online state (step schedule, "
                    "averages), so its fitted parameters are replaced by online training "
                    "from zero parameters. To train further from the fitted parameters, "
                    "call fit with warm_start=True.", UserWarning, stacklevel=2)
        elif classes is not None and check_classes(classes).tolist() != state.classes.tolist():
            raise ValueError(f"classes={list(classes)!r} differs from the first call's "
                             f"{state.classes.tolist()!r}.")
        try:
            fitted = state.step(X, y, sample_weight, verbose=self.verbose)
        except ValueError:
            if state.run is None:  # the online state could not be kept: start anew
                self.__dict__.pop("_partial", None)
            raise
        self._set_fitted(*fitted)
        state.coef = self.coef_
        self._partial = state
        if self.callback is not None:  # as after each epoch of fit
            if takes_model(self.callback):
                self.callback(self.n_iter_, self.objective_, copy.copy(self))
            else:
                self.callback(self.n_iter_, self.objective_)
        return self
