"""CRFTagger: a linear-chain CRF estimator with a choice of training loss.

The estimator composes the stages of the package and owns only validation
and the fitted state:

``check_sequences`` / ``encode_labels`` (:mod:`._validation`) ->
:class:`~._vectorize.SequenceVectorizer` -> :class:`~._params.ParameterLayout`
-> :class:`~._objective.CRFObjective` -> a solver of
:data:`~sklearn_crfloss.solvers.SOLVERS` (per training stage, each reporting
to a :class:`~sklearn_crfloss.solvers.ConvergenceMonitor`) -> fitted
attributes; ``predict`` runs the vectoriser and a decoder of
:data:`~sklearn_crfloss.decoding.DECODERS`.
"""

import copy
from numbers import Integral, Real
import time

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from . import inspection
from ._chain import kernel_threads
from ._data import (check_sample_weight, check_sequences, check_token_weight, encode_known_labels,
                    encode_labels, is_stream, names_like, SequenceVectorizer, vectorize_stream)
from ._evaluation import check_scorer_call
from ._model import (allowed_label_pairs, BIGRAM_DOC, bigram_state, check_second_order,
                     make_layout, make_objective, model_transitions, observed_pairs, ORDER_DOC,
                     second_order_state, SecondOrderLayout)
from ._training import (FIT_DOC, TAG_SCHEME_DOC, TRAINING_PARAMS_DOC, check_token_weight_use,
                        check_validation_set, early_stopping_scoring, fitted_state,
                        keyword_only_after_y, PartialFitMixin, print_header, resolve_components,
                        snapshot_methods, StageSettings, to_model_labels,
                        to_training_labels, to_user_labels, train_stages, validation_score,
                        warn_if_iob1_segments, warn_if_unscaled)
from ._utils import (fill_doc, HasMethods, Interval, RegisteredParamsMixin, release_free_heap,
                     SequenceTaggerTagsMixin, StrOptions, validate_params, VersionedStateMixin)
from .decoding import (CONSTRAINTS, DECODERS, check_decoding, decode, get_allowed, nbest_decode,
                       second_order_decode)
from .inference import (forward_backward, second_order_forward_backward, second_order_scores,
                        sequence_scores)
from .losses import LOSSES, get_loss_tags
from .priors import PRIORS, get_prior_tags
from .solvers import SOLVERS, FitInfo, get_solver_tags, hold_out, solvers_with

__all__ = ["CRFTagger"]


# The sections the predict methods share (decode, predict,
# predict_marginals): their one parameter, and the errors of fitted-model
# checks and of X (completed where a method raises more).
_PREDICT_DOC = dict(
    predict_X="""Parameters
----------
X : list of sequences
    As in :meth:`fit`; empty sequences are allowed.""",
    predict_raises="""Raises
------
sklearn.exceptions.NotFittedError
    Before fit.
TypeError, ValueError
    If X is not a list of sequences of the training data's kind (feature
    dicts or arrays) and width.""",
)


@fill_doc(**TAG_SCHEME_DOC, **BIGRAM_DOC, **TRAINING_PARAMS_DOC, **ORDER_DOC)
@snapshot_methods("decode", "predict_nbest", "sequence_log_proba", "predict_marginals",
                  "top_state_features", "explain")  # consistent with a concurrent refit
class CRFTagger(SequenceTaggerTagsMixin, PartialFitMixin, VersionedStateMixin,
                RegisteredParamsMixin, BaseEstimator):
    """Linear-chain conditional random field for sequence labelling.

    A first-order linear-chain CRF scores a label sequence ``y`` of a
    sequence ``x`` of ``T`` tokens as
    ``score(y) = start[y_0] + sum_t W[:, y_t] . x_t + sum_{t>0}
    transition[y_{t-1}, y_t] + end[y_{T-1}]`` and ``p(y | x)`` is
    proportional to ``exp(score(y))``. The parameters are trained by
    minimising ``loss + prior`` with a solver (L-BFGS for smooth losses);
    predictions are Viterbi paths (or another ``decoder``).

    Parameters
    ----------
    loss : str or loss object, default='cll'
        Training loss: a name registered in
        :data:`sklearn_crfloss.losses.LOSSES` (``'cll'``: conditional
        log-likelihood; ``'mce'``, ``'mce_f'``: minimum classification error
        and segment F-score MCE; ``'pointwise'``, ``'mixed'``, ``'labelwise'``:
        the marginal-based losses; ``'softmax_margin'``, ``'risk'``,
        ``'jrb'``, ``'max_margin'``, ``'perceptron'``, ``'mira'``: the
        cost-sensitive and margin losses; the nonconvex ones want
        ``init='cll'``) or an object with a ``value_and_grad`` method (see
        :class:`sklearn_crfloss.losses.BaseLoss`). Its hyperparameters are
        ``loss__<name>``: ``set_params(loss='mixed', loss__lam=0.5)`` sets
        ``loss=MixedLoss(lam=0.5)``. A loss with ``set_classes`` receives
        ``classes_`` before training (on a clone; the object stays unchanged).
    prior : str or prior object, default='l2'
        Prior on all parameters: ``'l2'`` (Gaussian, ``||theta||^2 / (2C)``),
        ``'l1'`` (Laplacian, ``||theta||_1 / C``, exact zeros),
        ``'elasticnet'`` (both: ``ElasticNetPrior(l1_ratio)``, CRFsuite's
        ``c1``, ``c2``), ``'hyperbolic'``, ``'none'``, or an object with
        ``value_and_grad(theta, C)`` such as ``GaussianPrior(mean=0.5)``
        (see :mod:`sklearn_crfloss.priors` and :doc:`/user_guide/priors`).
        Transitions and start/end potentials are penalised too.
    C : float, default=1.0
        Inverse prior strength, ``C > 0``; larger is weaker. ``C=1`` with
        ``prior='l2'`` equals CRFsuite's ``c2=0.5`` (``c2 = 1 / (2C)``).
    max_iter : int or None, default=None
        Maximum number of L-BFGS iterations (None: 1000), or the number of
        epochs of an online solver (None: 10), **per training stage**: with
        ``init='cll'`` the CLL stage (always L-BFGS) runs at most
        ``max_iter`` iterations (None: 1000), then each stage of ``loss``
        (one, or one per step of an annealing schedule such as a list of
        ``alpha`` for ``'labelwise'``) runs at most ``max_iter`` more, so a
        fit runs at most ``(1 + n_stages) * max_iter`` iterations.
        ``init_n_iter_`` and ``n_iter_`` count them separately, and a
        :class:`~sklearn.exceptions.ConvergenceWarning` names the stage that
        ran out and why.
    tol : float, default=1e-5
        Stop when the objective improved by less than ``tol`` (relative)
        over the last 10 iterations (CRFsuite's ``delta``/``period``).
    min_freq : int, default=1
        Feature-dict input only: keep the attributes (``'key:value'``
        columns) that are non-zero in at least ``min_freq`` training tokens.
    all_possible_states : bool, default=False
        If False, only the (attribute, label) weights observed together in
        the training data are trained, the others stay 0 (CRFsuite's default
        ``feature.possible_states=0``): fewer parameters, faster L-BFGS. If
        True, every attribute gets a weight for every label.
    boundary_potentials : bool, default=True
        Train the start and end potentials (``start_``, ``end_``). False:
        they stay 0 and are not trained, as in CRFsuite, whose model has
        none (:func:`sklearn_crfloss.io.export_crfsuite` needs False).
    feature_hashing : int or None, default=None
        Feature-dict input only: if an int (below 2**31), hash with
        :class:`~sklearn.feature_extraction.FeatureHasher` into that many columns
        (keeping those seen in training) instead of a ``DictVectorizer``.
    init : {'auto', None, 'cll'}, default='auto'
        Starting point of training. None: zeros (or the previous fit with
        ``warm_start=True``). ``'cll'``: first fit conditional log-likelihood
        with the same prior and ``init_C``, then train ``loss`` from there (the
        MAP initialisation of Suzuki et al. 2006, Table 2); a no-op when
        ``loss='cll'``. ``'auto'``: ``'cll'`` for the losses trained from a fit
        (MCE, MCE-F, the marginal losses, risk, JRB) unless warm-starting, else None.
    init_C : float or None, default=None
        ``C`` of the ``init='cll'`` stage, ``> 0``; None: ``C``. The start
        and the loss may need different strengths: the MCE losses' data
        term is bounded (a sigmoid per sequence or segment), far weaker
        than CLL's at the same ``C``, and a CLL start with a large ``C``
        leaves few training sequences near the decision boundary, where
        the MCE losses have a gradient.
    {solver_parameters}
    decoder : {'viterbi', 'mea'}, default='viterbi'
        Decoder used by :meth:`predict` and :meth:`decode`. ``'viterbi'``:
        the most probable label sequence. ``'mea'``: maximum expected
        accuracy (posterior) decoding, the label of highest marginal
        probability at each position (Gross et al. 2006, Eq. (2)), which
        maximises the expected number of correct labels; the decoder that
        ``loss='labelwise'`` trains for.
    constraints : {None, 'iob2', 'iobes', 'bilou'}, default=None
        Decode-time constraints for both decoders. ``'iob2'``: a label
        ``I-X`` may only follow ``B-X`` or ``I-X`` (so ``O -> I-X``,
        ``B-X -> I-Y``, ``I-X -> I-Y`` and a sequence starting with ``I-X``
        are forbidden); every label must be ``'O'``, ``'B-<type>'`` or
        ``'I-<type>'``. Viterbi uses ``-inf`` for the forbidden transitions;
        MEA becomes a Viterbi search over the log-marginals restricted to the
        allowed transitions (the allowed path of maximum
        ``sum_t log p(y_t | x)``). ``'iobes'``, ``'bilou'``: see ``tag_scheme``.
    {tag_scheme_parameter}
    {order_parameter}
    n_jobs : int or None, default=None
        Threads for the inference kernels (OpenMP over sequences), resolved
        as scikit-learn's: None means 1 unless in a
        :func:`joblib.parallel_backend` context, -1 all processors (0 is
        refused); never more than the cores this process may use, and 3 runs as 2 (the
        kernels' sums are taken in four blocks: with 1 to 4 threads a fit
        is bitwise the same).
    warm_start : bool, default=False
        If True and the estimator is fitted, start from the previous
        parameters (matched by attribute name and label, new ones start at 0).
    verbose : int, default=0
        ``1``: print a header (loss, prior, ``C``, solver, init; sequences,
        tokens, attributes, labels, parameters), one line per iteration
        (epoch for online solvers: the training stage, objective, gradient
        norm for L-BFGS, seconds) and a summary line at the end of fit
        (iterations, final objective, converged or not and why, seconds).
        ``2`` (or more): also the time taken to vectorise the feature dicts
        and one summary line per training stage (``init='cll'``, each stage
        of an annealing schedule). Training only; prediction prints nothing.
    random_state : int, RandomState instance or None, default=None
        Shuffling of the online solvers (same value, same model); L-BFGS
        from zero is deterministic and ignores it.
    callback : callable or None, default=None
        Called as ``callback(iteration, objective)`` after each iteration,
        or, if it takes three arguments, ``callback(iteration, objective,
        model)`` with ``model`` a fitted copy of the estimator holding the
        parameters of that iteration (to follow the test score during
        training; it costs one copy of the weights per call).
    {early_stopping_parameters}
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels, sorted.
    coef_ : ndarray of shape (n_classes, n_features)
        State weights: ``coef_[j] . x_t`` is the unary potential of label
        ``classes_[j]`` at token ``t``.
    transition_ : ndarray of shape (n_classes, n_classes)
        ``transition_[i, j]`` scores ``classes_[i]`` followed by ``classes_[j]``.
    start_ : ndarray of shape (n_classes,)
        Potential of the first label of a sequence.
    end_ : ndarray of shape (n_classes,)
        Potential of the last label of a sequence.
    n_features_in_ : int
        Number of feature columns: the width of the arrays seen in fit, or the
        number of attributes kept from the feature dicts.
    attributes_ : ndarray of str of shape (n_features,)
        Column names: ``'key:value'`` or ``'key'`` attributes for dict input
        (python-crfsuite's names), ``'hash_<k>'`` with hashing, ``'x<k>'`` for arrays.
    vectorizer_ : DictVectorizer, FeatureHasher or None
        The fitted vectoriser of feature-dict input (None for array input).
    input_kind_ : {'dict', 'array'}
        The kind of X seen in fit; predict expects the same.
    n_parameters_ : int
        Number of trained parameters (free state weights, transitions and,
        with ``boundary_potentials``, start and end potentials).
    n_iter_ : int
        Number of iterations run on ``loss``, all its stages (epochs for
        online solvers); the ``init='cll'`` stage is not counted here.
    init_n_iter_ : int
        Iterations of the CLL fit that ``init='cll'`` ran first (else 0).
    loss_curve_ : list of float
        Objective (loss + prior) after each iteration; for online solvers the
        number of mistakes (perceptron, MIRA) or the summed loss (sgd) of
        each epoch.
    objective_ : float
        The objective at the returned parameters: the loss summed over
        training sequences plus the prior's penalty (for ``'cll'``: negative
        log-likelihood + penalty), of the last training stage.
    converged_ : bool
        Whether training ended at a minimum (``stop_reason_`` is
        ``'converged'``) or by early stopping; never after ``max_iter``, a
        failed line search or an objective that rose.
    stop_reason_ : {'converged', 'max_iter', 'stalled', 'early_stopping'}
        Why the last training stage ended: a stopping test held at a
        minimum; the iteration budget ran out; the solver could not lower
        the objective although it is not at a minimum (a failed line
        search, an objective that rose, a gradient still large: a
        ``ConvergenceWarning`` gives the cause), in which case the
        parameters of the lowest objective are returned; or the held-out
        score stopped improving. A stage whose objective would end above
        its start keeps the start ('stalled'). A non-finite objective stops
        ``fit`` with a ``ValueError`` instead.
    sparsity_ : float
        Fraction of the ``n_parameters_`` trained parameters that are exactly
        0 after fit (large with ``prior='l1'``, about 0 otherwise).
    state_features_ : dict of {(str, label): float}
        The non-zero state weights, ``{(attribute, label): coef_[label,
        attribute]}``, as sklearn-crfsuite's ``state_features_`` (computed
        from ``coef_`` on access; see
        :func:`sklearn_crfloss.inspection.state_features`).
    {transition_attributes}
    {order_attributes}
    {tag_schemes_attribute}
    {validation_attributes}

    See Also
    --------
    sklearn_crfloss.features.TemplateFeatures : token tuples to feature dicts.
    sklearn_crfloss.metrics.segment_f1_score : conlleval segment F1.
    sklearn_crfloss.inspection : weights by name and per-token explanations.

    References
    ----------
    J. Lafferty, A. McCallum, F. Pereira (2001). Conditional random fields:
    probabilistic models for segmenting and labeling sequence data. ICML.
    F. Sha, F. Pereira (2003). Shallow parsing with conditional random fields.
    HLT-NAACL.

    Examples
    --------
    >>> from sklearn_crfloss import CRFTagger
    >>> X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}, {"w": "runs"}]]
    >>> y = [["B-NP", "I-NP"], ["B-NP", "I-NP", "B-VP"]]
    >>> crf = CRFTagger(C=10.0).fit(X, y)
    >>> crf.predict(X)
    [['B-NP', 'I-NP'], ['B-NP', 'I-NP', 'B-VP']]
    >>> import numpy as np
    >>> for labels, log_p in crf.predict_nbest(X[:1], n_best=2)[0]:
    ...     print(labels, round(float(np.exp(log_p)), 2))
    ['B-NP', 'I-NP'] 0.88
    ['B-NP', 'B-VP'] 0.04
    >>> crf.transition_features_["B-NP", "I-NP"] > 0
    True
    """

    _registered_params = {"loss": LOSSES, "prior": PRIORS}  # see RegisteredParamsMixin
    _parameter_constraints = {
        "loss": [StrOptions(set(LOSSES)), HasMethods(["value_and_grad"])],
        "prior": [StrOptions(set(PRIORS)), HasMethods(["value_and_grad"])],
        "C": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [None, Interval(Integral, 1, 2**31 - 1, closed="both")],  # a C int
        "tol": [Interval(Real, 0, None, closed="left")],
        "min_freq": [Interval(Integral, 1, None, closed="left")],
        "all_possible_states": ["boolean"],
        "boundary_potentials": ["boolean"],
        "feature_hashing": [None, Interval(Integral, 1, 2**31 - 1, closed="both")],  # int32
        "init": [None, StrOptions({"cll", "auto"})],
        "init_C": [None, Interval(Real, 0, None, closed="neither")],
        "solver": [None, StrOptions(set(SOLVERS)), list, tuple, HasMethods(["solve"])],
        "average": ["boolean", Interval(Integral, 1, None, closed="left")],
        "eta0": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "decoder": [StrOptions(set(DECODERS))],
        "constraints": [None, StrOptions(set(CONSTRAINTS))],
        "tag_scheme": [None, StrOptions({"iob2", "iobes", "bilou"})],
        "n_jobs": [None, Interval(Integral, None, -1, closed="right"),
                   Interval(Integral, 1, None, closed="left")],  # 0 means nothing
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "callback": [None, callable],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left"), None],
        "scoring": [None, StrOptions({"f1", "accuracy", "loss"})],
        "order": [Interval(Integral, 1, 2, closed="both")],
    }

    def __init__(
        self,
        *,
        loss="cll",
        prior="l2",
        C=1.0,
        max_iter=None,
        tol=1e-5,
        min_freq=1,
        all_possible_states=False,
        boundary_potentials=True,
        feature_hashing=None,
        init="auto",
        init_C=None,
        solver=None,
        average=True,
        eta0="auto",
        decoder="viterbi",
        constraints=None,
        tag_scheme=None,
        n_jobs=None,
        warm_start=False,
        verbose=0,
        random_state=None,
        callback=None,
        early_stopping=False,
        validation_fraction=0.1,
        n_iter_no_change=None,
        scoring=None,
        order=1,
    ):
        self.loss = loss
        self.prior = prior
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.boundary_potentials = boundary_potentials
        self.feature_hashing = feature_hashing
        self.init = init
        self.init_C = init_C
        self.solver = solver
        self.average = average
        self.eta0 = eta0
        self.decoder = decoder
        self.constraints = constraints
        self.tag_scheme = tag_scheme
        self.n_jobs = n_jobs
        self.warm_start = warm_start
        self.verbose = verbose
        self.random_state = random_state
        self.callback = callback
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.scoring = scoring
        self.order = order

    # ------------------------------------------------------------------ fit

    @keyword_only_after_y
    @fill_doc(**FIT_DOC)
    def fit(self, X, y, *, X_val=None, y_val=None, sample_weight_val=None, sample_weight=None,
            token_weight=None):
        """Train the CRF.

        Parameters
        ----------
        {fit_x_y}
        {fit_validation}
        sample_weight : array-like of shape (n_sequences,), default=None
            Non-negative weight of each sequence in the loss.
        token_weight : list of array-like, default=None
            Non-negative weight of each token, one array of length
            ``len(y[i])`` per sequence: the position-dependent weights of
            Tsuboi & Kashima (Section 6). Only for losses that support them
            (``supports_token_weight``: ``'pointwise'``, ``'mixed'`` (its
            pointwise part), ``'labelwise'``) and batch solvers; they
            multiply ``sample_weight``. Not used by the ``init='cll'`` stage.

        Returns
        -------
        self : CRFTagger
            The fitted estimator.

        Raises
        ------
        ValueError
            On invalid parameters or inconsistent data (the message names the
            sequence index); the estimator is then left as it was.
        TypeError
            If X or y is not a list of sequences, or more than X and y are
            passed positionally.
        """
        validate_params(self)
        loss, prior, solver = self._components()
        t0 = time.perf_counter()
        if is_stream(X):
            # (with a tag_scheme the labels, not the features, are read at once)
            y, schemes = to_training_labels(self.tag_scheme, y if self.tag_scheme is None
                                            else [list(labels) for labels in y])
            features, Xc, offsets, classes, y_enc, sample_weight = vectorize_stream(
                X, y, sample_weight, token_weight, min_freq=self.min_freq,
                feature_hashing=self.feature_hashing)
            kind, lengths, token_weight = features.kind, np.diff(offsets), None
        else:
            kind, tokens, offsets = check_sequences(X)
            lengths = np.diff(offsets)
            y_train, schemes = to_training_labels(self.tag_scheme, y)  # published with the fit
            classes, y_enc = encode_labels(y_train, lengths)
            warn_if_iob1_segments(loss, y, self.tag_scheme)
            sample_weight = check_sample_weight(sample_weight, lengths.shape[0])
            token_weight = check_token_weight(token_weight, lengths)
            if token_weight is not None:
                check_token_weight_use(loss, solver)
            features = SequenceVectorizer(self.min_freq, self.feature_hashing)
            Xc = features.fit_transform(kind, tokens, offsets)
            del tokens  # (a list as long as the tokens) not held through training
            warn_if_unscaled(Xc, features.column_names)
        if self.verbose >= 2:
            print(f"vectorised {lengths.shape[0]} sequences ({Xc.shape[0]} tokens, {kind} input) "
                  f"into {Xc.shape[1]} attributes in {time.perf_counter() - t0:.2f} s",
                  flush=True)
        validation_set = check_validation_set(  # (the scoring only checks sample_weight_val)
            features, classes, X_val, y_val, sample_weight_val, kind,
            scoring=None if sample_weight_val is None else early_stopping_scoring(
                self.scoring, y_enc, offsets, classes, warn=False))
        handed = [Xc]  # _fit_vectorized takes the matrix: freed with the objective
        del Xc
        return self._fit_vectorized(features, handed, offsets, classes, y_enc, sample_weight,
                                    token_weight, components=(loss, prior, solver),
                                    validation_set=validation_set, tag_schemes=schemes)

    def _components(self):
        """The resolved loss, prior and solver (ValueError on a bad combination)."""
        return resolve_components(self.loss, self.prior, self.solver, average=self.average,
                                  eta0=self.eta0, random_state=self.random_state,
                                  init=self.init, warm=self.warm_start and hasattr(self, "coef_"))

    def _fit_vectorized(self, features, Xc, offsets, classes, y_enc, sample_weight=None,
                        token_weight=None, *, components=None, labels=None,
                        validation_set=None, tag_schemes=None):
        """Train on vectorised data and set the fitted state.

        The entry point of :meth:`fit` after validation, and of the experts
        of :class:`~sklearn_crfloss.LOPTagger` (a column subset of the pool's
        features, ``labels``: the label mask of a label expert); ``tag_schemes``
        is published as ``tag_schemes_`` with the other fitted attributes.
        ``Xc`` may be handed over in a one-element list (emptied here): then
        no reference to the matrix is kept past the objective, which orders its rows in place
        (no copy) and frees it with its buffers before the fitted state is built.
        """
        handed = isinstance(Xc, list)  # then the objective may order Xc's arrays in place
        Xc = Xc.pop() if handed else Xc
        if components is None:
            validate_params(self)
            components = self._components()
        loss, prior, solver = components
        get_allowed(self.constraints, classes)  # labels the constraints refuse: before training
        if get_loss_tags(loss).needs_classes:  # label names for the loss (BaseLoss.set_classes)
            loss.set_classes(classes)
        held_out = validation_set  # fit(X_val=, y_val=): logged, or early stopping's
        if self.early_stopping and validation_set is None:
            (Xc, y_enc, offsets, sample_weight, token_weight), held_out = hold_out(
                Xc, y_enc, offsets, sample_weight, token_weight, self.validation_fraction,
                self.random_state)
            handed = True  # a new matrix, the training sequences'
        n_labels = classes.shape[0]
        dense = self.all_possible_states or solver.dense_states
        layout = make_layout(features, Xc.shape[1], n_labels,
                             None if dense else observed_pairs(Xc, y_enc, n_labels), labels=labels,
                             boundary=self.boundary_potentials, loss=loss,
                             solver_tags=get_solver_tags(solver),
                             warm=self.warm_start and hasattr(self, "coef_"),
                             solvers_with=solvers_with)
        if self.order == 2:  # the label-trigram weights (_model/_second_order.py)
            check_second_order(2, loss=loss, solver_tags=get_solver_tags(solver),
                               decoder=self.decoder, n_bigram=layout.n_bigram,
                               early_stopping=self.early_stopping,
                               warm=self.warm_start and hasattr(self, "coef_"))
            schemes = self.__dict__.get("_tag_schemes")
            scheme = get_allowed(self.constraints if schemes is None else schemes[1], classes)
            layout = SecondOrderLayout(layout, allowed_label_pairs(
                y_enc, offsets, n_labels, None if scheme is None else scheme[0]))
        if get_prior_tags(prior).needs_bind:
            prior = prior.bind(Xc, y_enc, offsets, layout)
        objective = make_objective(Xc, y_enc, offsets, layout, sample_weight=sample_weight,
                                   token_weight=token_weight,
                                   n_threads=kernel_threads(self.n_jobs), owns_features=handed)
        del Xc  # the objective's (an indicator matrix: its values freed, see CRFObjective)
        release_free_heap()  # what the vectorisation freed, before the solver's vectors
        warm = self.warm_start and hasattr(self, "coef_")
        x0 = (layout.remap(names_like(features, self), classes, self.attributes_, self.classes_,
                           self.coef_, self.transition_, self.start_, self.end_)
              if warm else layout.zeros())
        validation = (None if held_out is None else validation_score(
            held_out, layout, classes, loss,
            early_stopping_scoring(self.scoring, y_enc, offsets, classes),
            decoder=self.decoder, constraints=self.constraints, n_jobs=self.n_jobs))
        t0 = time.perf_counter()
        if self.verbose:
            print_header(loss, prior, solver, (objective.n_tokens, objective.n_features), offsets,
                         n_labels, layout.n_params, C=self.C, init=self.init, tol=self.tol,
                         max_iter=self.max_iter)
        theta, info = self._train(
            objective, loss, prior, solver, x0, from_zero=not warm, validation=validation,
            snapshot=lambda t: self._snapshot(features, classes, layout, t, loss, prior,
                                              schemes=tag_schemes))
        # The objective's buffers (kept accumulators, codes, counts) and the solver's
        # freed before the fitted state is built: the fit's peak stays its training's.
        del objective
        release_free_heap()
        staged = self._snapshot(features, classes, layout, theta, loss, prior, info,
                                schemes=tag_schemes)
        # one C-level update of __dict__: atomic for other threads (see _fitted_state)
        self.__dict__.update(fitted_state(vars(staged), self.get_params(deep=False)))
        if self.verbose:
            print(info.summary(self.objective_, info.init_n_iter > 0,
                               time.perf_counter() - t0), flush=True)
        return self

    def _snapshot(self, features, classes, layout, theta, loss, prior, info=None, schemes=None):
        """A fitted copy of the estimator holding ``theta`` (the callback's model, the fit's)."""
        model = copy.copy(self)
        model._set_fitted(features, classes, layout, theta, info or FitInfo(), loss, prior)
        model.tag_schemes_ = schemes
        return model

    def _train(self, objective, loss, prior, solver, x0, from_zero, validation=None,
               snapshot=None):
        """Run the training stages (:func:`~._training.train_stages`)."""
        settings = StageSettings(C=self.C, init=self.init, init_C=self.init_C, tol=self.tol,
                                 max_iter=self.max_iter, verbose=self.verbose,
                                 callback=self.callback, n_iter_no_change=self.n_iter_no_change,
                                 early_stopping=self.early_stopping)
        return train_stages(settings, objective, loss, prior, solver, x0, from_zero,
                            validation=validation, snapshot=snapshot)

    def _set_fitted(self, features, classes, layout, theta, info, loss, prior):
        """Set every fitted attribute at once (nothing before training succeeded)."""
        W, T, start, end = layout.unpack(theta)
        self.classes_ = classes
        self.coef_ = W.T  # (n_classes, n_features); W itself stays C-ordered
        self.transition_ = np.array(T)
        self.start_ = np.array(start)
        self.end_ = np.array(end)
        self.n_features_in_ = features.n_input if features.kind == "array" else features.n_features
        self.attributes_ = features.attributes
        self.vectorizer_ = features.vectorizer
        self.input_kind_ = features.kind
        self._features = features
        self.n_parameters_ = layout.n_params
        self.n_iter_ = info.n_iter
        self.init_n_iter_ = info.init_n_iter
        self.loss_curve_ = info.loss_curve
        self.objective_ = info.objective
        self.stop_reason_ = info.stop_reason
        self.sparsity_ = float(np.mean(theta == 0.0))
        self.converged_ = info.converged
        self.validation_scores_ = info.validation_scores
        self.best_validation_score_ = info.best_validation_score
        self._loss = loss
        self._prior = prior
        self.tag_schemes_ = None  # (a fit in another tag scheme sets it after)
        self.bigram_attributes_, self.bigram_coef_ = bigram_state(layout, theta, self.attributes_)
        self.transition2_, self.allowed_pairs_ = second_order_state(layout, theta)

    # -------------------------------------------------------------- predict

    def _unary(self, Xc):
        """Unary potentials ``Xc @ coef_.T``, C-contiguous (n_tokens, n_classes)."""
        return np.ascontiguousarray(Xc @ self.coef_.T)

    def _vectorize(self, X):
        """Feature matrix (CSR, n_tokens x n_features) and offsets of X (predict time)."""
        check_is_fitted(self)
        kind, tokens, offsets = check_sequences(
            X, kind=self.input_kind_,
            n_features=self.n_features_in_ if self.input_kind_ == "array" else None,
            allow_empty=True,
        )
        return self._features.transform(tokens, offsets), offsets

    def _potentials(self, X):
        """Unary potentials (n_tokens, n_classes), offsets and transitions of X."""
        Xc, offsets = self._vectorize(X)
        return self._unary(Xc), offsets, model_transitions(
            Xc, offsets, self.transition_, getattr(self, "bigram_coef_", None), self.attributes_)

    def _split(self, values, offsets):
        return np.split(values, offsets[1:-1]) if offsets.shape[0] > 1 else []

    def _split_labels(self, path, offsets):
        """Label indices of all tokens -> one list of labels (Python objects) per sequence."""
        labels = self.classes_[path].tolist()
        return to_user_labels(getattr(self, "tag_schemes_", None),
                              [labels[a:b] for a, b in zip(offsets[:-1], offsets[1:])])

    def _decode_paths(self, unary, offsets, transition=None):
        """Label indices of the decoded sequences (``decoder``, ``constraints``) and scores."""
        T = self.transition_ if transition is None else transition
        if self._second_order():
            return second_order_decode(*check_decoding(self), self.classes_, unary, T,
                                       self.transition2_, self.start_, self.end_, offsets,
                                       self.allowed_pairs_, n_threads=kernel_threads(self.n_jobs))
        return decode(*check_decoding(self), self.classes_, unary, T,
                      self.start_, self.end_, offsets, n_threads=kernel_threads(self.n_jobs))

    def _second_order(self, refuse=None):
        """Whether the fit is second order; ``refuse``: what it does not support (ValueError)."""
        second = getattr(self, "transition2_", None) is not None
        if second and refuse:
            raise ValueError(f"order=2 does not support {refuse}")
        return second

    def _forward_backward(self, unary, offsets, transition):
        """Log partition functions and token marginals (first or second order)."""
        if self._second_order():
            return second_order_forward_backward(
                unary, transition, self.transition2_, self.start_, self.end_, offsets,
                self.allowed_pairs_, n_threads=kernel_threads(self.n_jobs))
        return forward_backward(unary, transition, self.start_, self.end_, offsets,
                                n_threads=kernel_threads(self.n_jobs))

    def _log_z(self, unary, offsets, transition):
        """Log partition function of each sequence (0 for an empty one)."""
        return self._forward_backward(unary, offsets, transition).log_z

    @fill_doc(**_PREDICT_DOC)
    def decode(self, X):
        """Decoded label sequences (``decoder``, ``constraints``) and their scores.

        {predict_X}

        Returns
        -------
        labels : list of list
            The decoded label sequence of each input sequence, as
            :meth:`predict` returns it: the most probable one
            (``'viterbi'``) or the one of maximum expected accuracy
            (``'mea'``), among the allowed ones if ``constraints``.
        scores : ndarray of shape (n_sequences,)
            ``'viterbi'``: its score (unnormalised log-probability
            ``score(y)``; :meth:`sequence_log_proba` gives the normalised
            ``log p(y | x)``). ``'mea'``: its expected number of correct
            labels ``sum_t p(y_t | x)``.

        {predict_raises}
        ValueError
            If ``decoder`` or ``constraints`` is invalid (set after fit), or
            with ``constraints='iob2'`` a label is not ``'O'``,
            ``'B-<type>'`` or ``'I-<type>'``.
        """
        unary, offsets, T = self._potentials(X)
        path, score = self._decode_paths(unary, offsets, T)
        return self._split_labels(path, offsets), score

    @fill_doc(**_PREDICT_DOC)
    def predict(self, X):
        """Decoded label sequence of each sequence (``decoder``: Viterbi or MEA).

        {predict_X}

        Returns
        -------
        list of list
            One list of labels per sequence, the labels being elements of
            ``classes_`` as Python objects (``str`` for string labels; an
            empty list for an empty sequence), as sklearn-crfsuite's
            ``predict_single`` gives them: ``json.dumps`` works and ``==``
            compares with gold lists. Use ``np.concatenate`` for one flat
            array; :mod:`sklearn_crfloss.metrics` and the scorers accept
            lists and arrays alike.

        {predict_raises}
        ValueError
            As :meth:`decode`; also when a scikit-learn scorer of flat labels
            (``scoring='f1'``, ...) calls it (use those of
            :mod:`sklearn_crfloss.metrics`).
        """
        check_scorer_call(self)
        return self.decode(X)[0]

    def predict_nbest(self, X, n_best=5):
        """The ``n_best`` most probable label sequences of each sequence.

        An exact list Viterbi (:func:`sklearn_crfloss.inference.viterbi_nbest`,
        compiled, parallel over sequences with ``n_jobs``): distinct
        sequences, most probable first, among those that ``constraints``
        allow. The first is the Viterbi path (:meth:`predict` with
        ``decoder='viterbi'``; ``decoder`` is not used here).

        Parameters
        ----------
        X : list of sequences
            As in :meth:`fit`; empty sequences are allowed (their list holds
            the empty labelling, of probability 1).
        n_best : int, default=5
            Number of sequences per input sequence, ``>= 1``; fewer are
            returned when a sequence has fewer (allowed) labellings.

        Returns
        -------
        list of list of (list, float)
            For each input sequence, up to ``n_best`` pairs ``(labels,
            log_proba)``: a label sequence (as :meth:`predict` gives it) and
            its ``log p(y | x)`` under the model (``score(y) - log Z``;
            constraints only restrict which sequences are listed), in
            non-increasing order of probability.

        Raises
        ------
        ValueError
            If ``n_best`` is not an integer >= 1; as :meth:`decode`
            otherwise.
        sklearn.exceptions.NotFittedError
            Before fit.
        """
        self._second_order(refuse="predict_nbest")
        unary, offsets, T = self._potentials(X)
        allowed = get_allowed(check_decoding(self)[1], self.classes_)
        paths, scores = nbest_decode(unary, T, self.start_, self.end_, offsets,
                                     n_best, allowed, n_threads=kernel_threads(self.n_jobs))
        log_proba = scores - self._log_z(unary, offsets, T)[:, None]
        ranked = [self._split_labels(paths[m], offsets) for m in range(paths.shape[0])]
        return [[(ranked[m][k], float(log_proba[k, m]))
                 for m in range(paths.shape[0]) if np.isfinite(log_proba[k, m])]
                for k in range(offsets.shape[0] - 1)]

    def sequence_log_proba(self, X, y=None):
        """Log-probability ``log p(y | x)`` of a labelling of each sequence.

        ``log p(y | x) = score(y) - log Z(x)``, with the forward algorithm for
        ``log Z``; ``np.exp`` of it is the probability. With ``y=None`` it is
        the probability of the decoded sequences (:meth:`predict`), the
        confidence of the whole predicted sequence (pycrfsuite's
        ``Tagger.probability``).

        Parameters
        ----------
        X : list of sequences
            As in :meth:`fit`; empty sequences are allowed (log-probability 0).
        y : list of sequences of labels or None, default=None
            One label sequence per sequence of X, of the same length, with
            labels from ``classes_``; None: the decoded sequences.

        Returns
        -------
        ndarray of float64 of shape (n_sequences,)
            ``log p(y_i | x_i) <= 0`` under the model (constraints are not
            applied: a labelling they forbid still has its model probability).

        Raises
        ------
        ValueError
            If y has a different number of sequences or a sequence of a
            different length than X, or a label not in ``classes_`` (the
            message names the sequence); as :meth:`decode` otherwise.
        TypeError
            If y is not a list of label sequences.
        sklearn.exceptions.NotFittedError
            Before fit.
        """
        unary, offsets, T = self._potentials(X)
        if y is None:
            path, _ = self._decode_paths(unary, offsets, T)
        else:
            path = encode_known_labels(to_model_labels(getattr(self, "tag_schemes_", None), y),
                                       np.diff(offsets), self.classes_)
        if self._second_order():
            scores = second_order_scores(unary, T, self.transition2_, self.start_, self.end_,
                                         path, offsets, self.allowed_pairs_)
        else:
            scores = sequence_scores(unary, T, self.start_, self.end_, path, offsets)
        return scores - self._log_z(unary, offsets, T)

    @fill_doc(**_PREDICT_DOC)
    def predict_marginals(self, X):
        """Posterior marginal probability of every label at every token.

        {predict_X}

        Returns
        -------
        list of ndarray of shape (n_tokens_i, n_classes)
            ``p(y_t = classes_[j] | x)``; each row sums to 1. (sklearn-crfsuite
            returns one ``{label: probability}`` dict per token instead:
            ``[dict(zip(crf.classes_.tolist(), row.tolist())) for row in m]``
            converts.)

        {predict_raises}
        """
        unary, offsets, T = self._potentials(X)
        return self._split(self._forward_backward(unary, offsets, T).marginals, offsets)

    # ----------------------------------------------------------- inspection

    @property
    def state_features_(self):
        # Documented in the class docstring (Attributes).
        return inspection.state_features(self)

    @property
    def transition_features_(self):
        # Documented in the class docstring (Attributes).
        return inspection.transition_features(self)

    @fill_doc(**inspection.TOP_STATE_FEATURES_DOC)
    def top_state_features(self, n=10, *, label=None, sign="positive"):
        """The ``n`` largest positive (or most negative) state weights.

        Parameters
        ----------
        {top_parameters}

        {top_returns}

        See Also
        --------
        sklearn_crfloss.inspection.top_state_features : The same function.
        """
        return inspection.top_state_features(self, n, label=label, sign=sign)

    @fill_doc(**inspection.EXPLAIN_DOC)
    def explain(self, x, token, *, against=None):
        """Why token ``token`` of sequence ``x`` got its label rather than the runner-up.

        Per-attribute and transition/start/end contributions that add up to
        the score difference of the two sequences; see
        :func:`sklearn_crfloss.inspection.explain_token`.

        Parameters
        ----------
        {explain_parameters}

        {explain_returns}
        """
        check_is_fitted(self)
        self._second_order(refuse="explain")
        if getattr(self, "bigram_coef_", None) is not None:
            raise ValueError("explain does not support taggers with observation-dependent "
                             "label bigrams (bigram_coef_)")
        Xc, offsets = self._vectorize([x])
        return inspection.explain_vectorized(
            Xc, token, against=against, unary=self._unary,
            decode_paths=lambda unary: self._decode_paths(unary, offsets)[0],
            labels=self.classes_.tolist(), attributes=self.attributes_, coef=self.coef_,
            transition=self.transition_, start=self.start_, end=self.end_,
            allowed=get_allowed(self.constraints, self.classes_))

    def score(self, X, y):
        """Token accuracy of :meth:`predict` on X against y.

        The fraction of tokens (all tokens, ``O`` included) whose predicted
        label equals the gold label, as in sklearn-crfsuite. For segment F1
        use :func:`sklearn_crfloss.metrics.segment_f1_score` or
        ``scoring=segment_f1_scorer``.

        Parameters
        ----------
        X : list of sequences
        y : list of sequences of labels

        Returns
        -------
        float
            In [0, 1].
        """
        from .metrics import token_accuracy

        return token_accuracy(y, self.predict(X))
