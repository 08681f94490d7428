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

from dataclasses import dataclass, field
from numbers import Integral, Real

import warnings

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ._compat import HasMethods, Interval, StrOptions, validate_params
from ._objective import CRFObjective
from ._params import ParameterLayout, observed_pairs
from ._validation import (check_sample_weight, check_sequences, check_token_weight,
                          encode_labels)
from ._vectorize import SequenceVectorizer
from .decoding import CONSTRAINTS, DECODERS, decode
from .inference import forward_backward
from .losses import LOSSES, ConditionalLogLikelihood, get_loss
from .priors import PRIORS, get_prior
from .solvers import SOLVERS, ConvergenceMonitor, default_solver, make_solver

__all__ = ["CRFTagger"]


@dataclass
class FitInfo:
    """How training went: what :meth:`CRFTagger._set_fitted` records.

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
    """

    n_iter: int = 0
    init_n_iter: int = 0
    loss_curve: list = field(default_factory=list)
    converged: bool = True


class CRFTagger(BaseEstimator):
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
        :class:`sklearn_crfloss.losses.BaseLoss`). Hyperparameters of a loss
        object are reachable as ``loss__<name>`` (GridSearchCV). A loss with
        a ``set_classes`` method receives ``classes_`` before training (on a
        clone; the object passed stays unchanged).
    prior : str or prior object, default='l2'
        Prior on all parameters: ``'l2'`` (Gaussian, ``||theta||^2 / (2C)``),
        ``'l1'`` (Laplacian, ``||theta||_1 / C``, exact zeros),
        ``'hyperbolic'`` (``sum log cosh(theta / sqrt(C))``), ``'none'``, or
        an object with ``value_and_grad(theta, C)`` such as
        ``GaussianPrior(mean=0.5, feature_dependent=True)`` (see
        :mod:`sklearn_crfloss.priors` and :doc:`/user_guide/priors`).
        Transitions and start/end potentials are penalised too.
    C : float, default=1.0
        Inverse prior strength, ``C > 0``; larger is weaker. ``C=1`` with
        ``prior='l2'`` equals CRFsuite's ``c2=0.5`` (``c2 = 1 / (2C)``).
    max_iter : int or None, default=None
        Maximum number of L-BFGS iterations (None: 1000), or the number of
        epochs of an online solver (None: 10).
    tol : float, default=1e-5
        Stop when the objective improved by less than ``tol`` (relative)
        over the last 10 iterations (CRFsuite's ``delta``/``period``).
    min_freq : int, default=1
        Feature-dict input only: keep the attributes (``'key=value'``
        columns) that are non-zero in at least ``min_freq`` training tokens.
    all_possible_states : bool, default=False
        If False, only the (attribute, label) weights observed together in
        the training data are trained, the others stay 0 (CRFsuite's default
        ``feature.possible_states=0``): fewer parameters, faster L-BFGS. If
        True, every attribute gets a weight for every label.
    feature_hashing : int or None, default=None
        Feature-dict input only: if an int, vectorise with
        :class:`~sklearn.feature_extraction.FeatureHasher` into that many
        columns instead of :class:`~sklearn.feature_extraction.DictVectorizer`.
    init : {None, 'cll'}, default=None
        Starting point of training. None: zeros (or the previous fit with
        ``warm_start=True``). ``'cll'``: first fit conditional log-likelihood
        with the same prior and ``C``, then train ``loss`` from there (the
        MAP initialisation that nonconvex losses need, Suzuki et al. 2006,
        Table 2); a no-op when ``loss='cll'``. Usable inside GridSearchCV and
        Pipelines, unlike a manual ``warm_start`` sequence.
    solver : str, solver object, list or None, default=None
        Training procedure: a name registered in
        :data:`sklearn_crfloss.solvers.SOLVERS`, a
        :class:`~sklearn_crfloss.solvers.BaseSolver` object (used with its
        own parameters), or a list of stages run one after the other, each
        from the last one's result (a
        :class:`~sklearn_crfloss.solvers.Schedule`): a solver or a pair
        ``(solver, n_iter)``, e.g. ``[('sgd', 10), 'quickprop']``; a stage
        without ``n_iter`` runs ``max_iter``. None: the loss's own choice
        (:func:`~sklearn_crfloss.solvers.default_solver`): ``'lbfgs'``
        (scipy's L-BFGS-B) for smooth losses, ``'owlqn'`` (OWL-QN) for them
        with ``prior='l1'``, Suzuki et al.'s schedule (ten SGD epochs from
        zero only, then ``'quickprop'``) for ``'mce'`` and ``'mce_f'``,
        ``'sgd'`` for ``'max_margin'``, the online rules ``'perceptron'``
        and ``'mira'`` for those losses (which accept no other).
        ``'rprop'`` and ``'quickprop'`` are full-batch first-order solvers
        without line search, for nonsmooth and nonconvex losses. ``'sgd'``
        (any loss that sums over sequences, L2 or no prior) steps on one
        sequence at a time, shuffled with ``random_state``, with step
        ``1 / (lambda (t0 + t))``, ``lambda = 1 / (C n_sequences)``, first
        step ``eta0``. Online solvers train a weight for every label of
        every attribute they see (``all_possible_states`` does not apply;
        in a schedule, every stage trains that layout). See
        :doc:`/user_guide/solvers`.
    average : bool, default=True
        Online trainers (perceptron, MIRA, ``solver='sgd'``): return the
        average of the parameters over all steps (averaged perceptron;
        Polyak-Ruppert averaging for SGD). Ignored by L-BFGS.
    eta0 : float, default=0.1
        First step size of ``solver='sgd'``.
    decoder : {'viterbi', 'mea'}, default='viterbi'
        Decoder used by :meth:`predict` and :meth:`decode`. ``'viterbi'``:
        the most probable label sequence. ``'mea'``: maximum expected
        accuracy (posterior) decoding, the label of highest marginal
        probability at each position (Gross et al. 2006, Eq. (2)), which
        maximises the expected number of correct labels; the decoder that
        ``loss='labelwise'`` trains for.
    constraints : {None, 'iob2'}, default=None
        Decode-time constraints for both decoders. ``'iob2'``: a label
        ``I-X`` may only follow ``B-X`` or ``I-X`` (so ``O -> I-X``,
        ``B-X -> I-Y``, ``I-X -> I-Y`` and a sequence starting with ``I-X``
        are forbidden); every label must be ``'O'``, ``'B-<type>'`` or
        ``'I-<type>'``. Viterbi uses ``-inf`` for the forbidden transitions;
        MEA becomes a Viterbi search over the log-marginals restricted to the
        allowed transitions (the allowed path of maximum
        ``sum_t log p(y_t | x)``).
    n_jobs : int or None, default=None
        Threads for the inference kernels (OpenMP over sequences). None
        means 1 unless in a :func:`joblib.parallel_backend` context; -1 means
        all processors.
    warm_start : bool, default=False
        If True and the estimator is fitted, start from the previous
        parameters (matched by attribute name and label, new ones start at 0).
    verbose : int, default=0
        If > 0, print one line per iteration (epoch for online solvers):
        the training stage, objective, gradient norm (L-BFGS), seconds.
    random_state : int, RandomState instance or None, default=None
        Shuffling of the online solvers (same value, same model); L-BFGS
        from zero is deterministic and ignores it.
    callback : callable or None, default=None
        Called as ``callback(iteration, objective)`` after each iteration.

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
        Column names: ``'key=value'`` or ``'key'`` attributes for dict input
        (``DictVectorizer``), ``'hash_<k>'`` with hashing, ``'x<k>'`` for arrays.
    vectorizer_ : DictVectorizer, FeatureHasher or None
        The fitted vectoriser of feature-dict input (None for array input).
    input_kind_ : {'dict', 'array'}
        The kind of X seen in fit; predict expects the same.
    n_parameters_ : int
        Number of trained parameters (free state weights + transitions +
        start + end).
    n_iter_ : int
        Number of L-BFGS iterations run on ``loss`` (epochs for online solvers).
    init_n_iter_ : int
        Iterations of the CLL fit that ``init='cll'`` ran first (else 0).
    loss_curve_ : list of float
        Objective (loss + prior) after each iteration; for online solvers the
        number of mistakes (perceptron, MIRA) or the summed loss (sgd) of
        each epoch.
    objective_ : float
        Final objective: the loss summed over training sequences plus the
        prior's penalty (for ``'cll'``: negative log-likelihood + penalty).
    converged_ : bool
        Whether a stopping rule other than ``max_iter`` ended training.
    sparsity_ : float
        Fraction of the ``n_parameters_`` trained parameters that are exactly
        0 after fit (large with ``prior='l1'``, about 0 otherwise).

    See Also
    --------
    sklearn_crfloss.features.TemplateFeatures : token tuples to feature dicts.
    sklearn_crfloss.metrics.segment_f1_score : conlleval segment F1.

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
    >>> [p.tolist() for p in crf.predict(X)]
    [['B-NP', 'I-NP'], ['B-NP', 'I-NP', 'B-VP']]
    """

    _parameter_constraints = {
        "loss": [StrOptions(set(LOSSES)), HasMethods(["value_and_grad"])],
        "prior": [StrOptions(set(PRIORS)), HasMethods(["value_and_grad"])],
        "C": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [None, Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "min_freq": [Interval(Integral, 1, None, closed="left")],
        "all_possible_states": ["boolean"],
        "feature_hashing": [None, Interval(Integral, 1, None, closed="left")],
        "init": [None, StrOptions({"cll"})],
        "solver": [None, StrOptions(set(SOLVERS)), list, tuple, HasMethods(["solve"])],
        "average": ["boolean"],
        "eta0": [Interval(Real, 0, None, closed="neither")],
        "decoder": [StrOptions(set(DECODERS))],
        "constraints": [None, StrOptions(set(CONSTRAINTS))],
        "n_jobs": [None, Integral],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "callback": [None, callable],
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
        feature_hashing=None,
        init=None,
        solver=None,
        average=True,
        eta0=0.1,
        decoder="viterbi",
        constraints=None,
        n_jobs=None,
        warm_start=False,
        verbose=0,
        random_state=None,
        callback=None,
    ):
        self.loss = loss
        self.prior = prior
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.feature_hashing = feature_hashing
        self.init = init
        self.solver = solver
        self.average = average
        self.eta0 = eta0
        self.decoder = decoder
        self.constraints = constraints
        self.n_jobs = n_jobs
        self.warm_start = warm_start
        self.verbose = verbose
        self.random_state = random_state
        self.callback = callback

    # ------------------------------------------------------------------ fit

    def fit(self, X, y, sample_weight=None, token_weight=None):
        """Train the CRF.

        Parameters
        ----------
        X : list of sequences
            Each sequence is a list of per-token feature dicts (str -> str is
            the one-hot attribute ``'key=value'``, str -> number a numeric
            attribute, str -> bool 0/1, str -> list of str one attribute per
            string) or a 2-D array / sparse matrix of shape
            (n_tokens_i, n_features).
        y : list of sequences of hashable labels
            ``len(y[i]) == len(X[i])``; at least two distinct labels.
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
            If X or y is not a list of sequences.
        """
        validate_params(self)
        loss, prior, solver = self._components()
        kind, tokens, offsets = check_sequences(X)
        lengths = np.diff(offsets)
        classes, y_enc = encode_labels(y, lengths)
        sample_weight = check_sample_weight(sample_weight, lengths.shape[0])
        token_weight = check_token_weight(token_weight, lengths)
        if token_weight is not None:
            if not getattr(loss, "supports_token_weight", False):
                raise ValueError(
                    f"token_weight is not supported by loss {getattr(loss, 'name', loss)!r}; "
                    "use 'pointwise', 'mixed' or 'labelwise'.")
            if solver.dense_states:
                raise ValueError(f"token_weight needs a batch solver such as 'lbfgs', "
                                 f"not {solver.name!r}.")
        features = SequenceVectorizer(self.min_freq, self.feature_hashing)
        Xc = features.fit_transform(kind, tokens, offsets)
        return self._fit_vectorized(features, Xc, offsets, classes, y_enc, sample_weight,
                                    token_weight, components=(loss, prior, solver))

    def _components(self):
        """The resolved loss, prior and solver (ValueError on a bad combination)."""
        loss = get_loss(self.loss)
        prior = get_prior(self.prior)
        if hasattr(loss, "stages"):
            loss.stages()  # a schedule's values are checked here, before any training
        default = default_solver(loss, prior)
        spec = default if self.solver is None else self.solver
        if isinstance(default, str) and default in ("perceptron", "mira") and spec != default:
            raise ValueError(f"loss={default!r} is trained by its own online rule; leave "
                             f"solver=None (got solver={self.solver!r}).")
        solver = make_solver(spec, average=self.average, eta0=self.eta0,
                             random_state=self.random_state)
        if hasattr(solver, "for_start"):  # a schedule's warm-up runs from zero only
            from_fit = ((self.init == "cll" and getattr(loss, "name", None) != "cll")
                        or (self.warm_start and hasattr(self, "coef_")))
            solver = solver.for_start(from_zero=not from_fit)
        solver.check(loss, prior)
        return loss, prior, solver

    def _fit_vectorized(self, features, Xc, offsets, classes, y_enc, sample_weight=None,
                        token_weight=None, *, components=None, labels=None):
        """Train on vectorised data and set the fitted state.

        The entry point of :meth:`fit` after validation, and of the experts
        of :class:`~sklearn_crfloss.LOPTagger` (a column subset of the pool's
        features, ``labels``: the label mask of a label expert).
        """
        if components is None:
            validate_params(self)
            components = self._components()
        loss, prior, solver = components
        if hasattr(loss, "set_classes"):  # label names for the loss (BaseLoss.set_classes)
            loss.set_classes(classes)
        n_labels = classes.shape[0]
        dense = self.all_possible_states or solver.dense_states
        layout = ParameterLayout(Xc.shape[1], n_labels,
                                 None if dense else observed_pairs(Xc, y_enc, n_labels),
                                 labels=labels)
        if hasattr(prior, "bind"):
            prior = prior.bind(Xc, y_enc, offsets, layout)
        objective = CRFObjective(Xc, y_enc, offsets, layout, sample_weight=sample_weight,
                                 token_weight=token_weight,
                                 n_threads=effective_n_jobs(self.n_jobs))
        warm = self.warm_start and hasattr(self, "coef_")
        x0 = (layout.remap(features.attributes, classes, self.attributes_, self.classes_,
                           self.coef_, self.transition_, self.start_, self.end_)
              if warm else layout.zeros())
        theta, info = self._train(objective, loss, prior, solver, x0, from_zero=not warm)
        self._set_fitted(features, classes, layout, theta, info, loss, prior)
        return self

    def _train(self, objective, loss, prior, solver, x0, from_zero):
        """Run the training stages; return the final ``theta`` and a :class:`FitInfo`."""
        C = float(self.C)
        name = getattr(loss, "name", type(loss).__name__)
        if self.init == "cll" and name != "cll":
            monitor = ConvergenceMonitor(self.tol, self.max_iter or 1000, verbose=self.verbose,
                                         stage="init='cll'")
            cll = ConditionalLogLikelihood()
            x0 = make_solver(default_solver(cll, prior)).solve(objective, cll, prior, C, x0,
                                                               monitor)
            init_n_iter = monitor.n_iter
        else:
            init_n_iter = 0
            if (from_zero and solver.name in ("lbfgs", "owlqn")
                    and getattr(loss, "needs_init", False) and not getattr(loss, "smooth", True)):
                warnings.warn(
                    f"loss={name!r} starts from zero parameters, where every label sequence "
                    "has the same score: its maximum over the incorrect outputs is not "
                    "differentiable there and L-BFGS usually stops at once. Use init='cll' "
                    "(or warm_start=True after a CLL fit).", UserWarning, stacklevel=3)
        # A loss with an annealing schedule (e.g. labelwise with a list of
        # alpha) is trained stage by stage, each warm-started from the last.
        stages = loss.stages() if hasattr(loss, "stages") else [loss]
        info = FitInfo(init_n_iter=init_n_iter)
        for k, stage in enumerate(stages):
            monitor = ConvergenceMonitor(
                self.tol, self.max_iter or solver.default_max_iter, verbose=self.verbose,
                callback=self.callback,
                stage=f"{name} {k + 1}/{len(stages)}" if len(stages) > 1 else None)
            x0 = solver.solve(objective, stage, prior, C, x0, monitor)
            info.n_iter += monitor.n_iter
            info.loss_curve += monitor.history
            info.converged = monitor.converged
        return x0, info

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
        self.objective_ = info.loss_curve[-1] if info.loss_curve else float("nan")
        self.sparsity_ = float(np.mean(theta == 0.0))
        self.converged_ = info.converged
        self._loss = loss
        self._prior = prior

    # -------------------------------------------------------------- predict

    def _unary(self, Xc):
        """Unary potentials ``Xc @ coef_.T``, C-contiguous (n_tokens, n_classes)."""
        return np.ascontiguousarray(Xc @ self.coef_.T)

    def _potentials(self, X):
        """Unary potentials (n_tokens, n_classes) and offsets of X."""
        check_is_fitted(self)
        kind, tokens, offsets = check_sequences(
            X, kind=self.input_kind_,
            n_features=self.n_features_in_ if self.input_kind_ == "array" else None,
            allow_empty=True,
        )
        return self._unary(self._features.transform(tokens, offsets)), offsets

    def _split(self, values, offsets):
        return np.split(values, offsets[1:-1]) if offsets.shape[0] > 1 else []

    def decode(self, X):
        """Decoded label sequences (``decoder``, ``constraints``) and their scores.

        Parameters
        ----------
        X : list of sequences
            As in :meth:`fit`; empty sequences are allowed.

        Returns
        -------
        labels : list of ndarray of shape (n_tokens_i,)
            The decoded label sequence of each input sequence: the most
            probable one (``'viterbi'``) or the one of maximum expected
            accuracy (``'mea'``), among the allowed ones if ``constraints``.
        scores : ndarray of shape (n_sequences,)
            ``'viterbi'``: its score (unnormalised log-probability
            ``score(y)``; subtract the log partition function to get
            ``log p(y | x)``). ``'mea'``: its expected number of correct
            labels ``sum_t p(y_t | x)``.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before fit.
        ValueError
            If X does not match the training data's kind or width; with
            ``constraints='iob2'``, if a label is not ``'O'``,
            ``'B-<type>'`` or ``'I-<type>'``.
        """
        unary, offsets = self._potentials(X)
        path, score = decode(self.decoder, self.constraints, self.classes_, unary,
                             self.transition_, self.start_, self.end_, offsets,
                             n_threads=effective_n_jobs(self.n_jobs))
        return self._split(self.classes_[path], offsets), score

    def predict(self, X):
        """Decoded label sequence of each sequence (``decoder``: Viterbi or MEA).

        Parameters
        ----------
        X : list of sequences
            As in :meth:`fit`; empty sequences are allowed.

        Returns
        -------
        list of ndarray of shape (n_tokens_i,)
            Labels from ``classes_``; an empty array for an empty sequence.

        Raises
        ------
        sklearn.exceptions.NotFittedError, ValueError
            As :meth:`decode`.
        """
        return self.decode(X)[0]

    def predict_marginals(self, X):
        """Posterior marginal probability of every label at every token.

        Parameters
        ----------
        X : list of sequences
            As in :meth:`fit`; empty sequences are allowed.

        Returns
        -------
        list of ndarray of shape (n_tokens_i, n_classes)
            ``p(y_t = classes_[j] | x)``; each row sums to 1.
        """
        unary, offsets = self._potentials(X)
        fb = forward_backward(unary, self.transition_, self.start_, self.end_, offsets,
                              n_threads=effective_n_jobs(self.n_jobs))
        return self._split(fb.marginals, offsets)

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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        tags.target_tags.one_d_labels = False
        return tags
