"""CRFTagger: a linear-chain CRF estimator with a choice of training loss."""

from numbers import Integral, Real

import warnings

import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator
from sklearn.feature_extraction import DictVectorizer, FeatureHasher
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._compat import HasMethods, Interval, StrOptions, validate_params
from ._objective import CRFObjective, FreeParameterObjective
from ._optim import lbfgs
from ._validation import check_finite_tokens, check_labels, check_sample_weight, check_sequences
from .inference import forward_backward, viterbi
from .losses import LOSSES, ConditionalLogLikelihood, get_loss
from ._online import online_fit
from .priors import PRIORS, GaussianPrior, NoPrior, get_prior

__all__ = ["CRFTagger"]


class CRFTagger(BaseEstimator):
    """Linear-chain conditional random field for sequence labelling.

    A first-order linear-chain CRF scores a label sequence ``y`` of a
    sequence ``x`` of ``T`` tokens as
    ``score(y) = start[y_0] + sum_t W[:, y_t] . x_t + sum_{t>0}
    transition[y_{t-1}, y_t] + end[y_{T-1}]`` and ``p(y | x)`` is
    proportional to ``exp(score(y))``. The parameters are trained by
    minimising ``loss + prior`` with L-BFGS; predictions are Viterbi paths.

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
    solver : {None, 'lbfgs', 'sgd'}, default=None
        None: the loss's own choice (``default_solver``): L-BFGS for smooth
        losses, stochastic subgradient descent for ``'max_margin'``, the
        online rules for ``'perceptron'`` and ``'mira'`` (which accept no
        other). ``'sgd'`` (any loss that sums over sequences, L2 or no
        prior) steps on one sequence at a time, shuffled with
        ``random_state``, with step ``1 / (lambda (t0 + t))``,
        ``lambda = 1 / (C n_sequences)``, first step ``eta0``; see
        :mod:`sklearn_crfloss._online`. Online solvers train a weight for
        every label of every attribute they see (``all_possible_states``
        does not apply).
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
        If > 0, print one line per iteration: objective, gradient norm, seconds.
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
        "solver": [None, StrOptions({"lbfgs", "sgd"})],
        "average": ["boolean"],
        "eta0": [Interval(Real, 0, None, closed="neither")],
        "decoder": [StrOptions({"viterbi", "mea"})],
        "constraints": [None, StrOptions({"iob2"})],
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
            (``'pointwise'``, ``'mixed'`` (its pointwise part),
            ``'labelwise'``); they multiply ``sample_weight``. Not used by
            the ``init='cll'`` stage.

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
        loss = get_loss(self.loss)
        prior = get_prior(self.prior)
        kind, tokens, offsets = check_sequences(X)
        lengths = np.diff(offsets)
        flat_y = check_labels(y, lengths)
        sample_weight = check_sample_weight(sample_weight, lengths.shape[0])
        token_weight = _check_token_weight(token_weight, lengths, loss)
        if any(label is None for label in flat_y):
            raise ValueError("y contains None; every token needs a label.")
        classes, y_enc = np.unique(np.asarray(flat_y), return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError(
                f"y has a single label {classes[0]!r}; a CRF needs at least two distinct labels."
            )
        y_enc = np.ascontiguousarray(y_enc.ravel(), dtype=np.intp)
        if hasattr(loss, "set_classes"):  # label names for the loss (BaseLoss.set_classes)
            loss.set_classes(classes)
        vectorizer, columns, Xc, attributes = self._vectorize_fit(kind, tokens, offsets)
        n_labels = classes.shape[0]
        state_index = None
        if not self.all_possible_states:
            state_index = _observed_pairs(Xc, y_enc, n_labels)
        if hasattr(prior, "bind"):
            prior = prior.bind(Xc, y_enc, offsets, n_labels, state_index)
        objective = CRFObjective(
            Xc, y_enc, offsets, n_labels, loss, prior, float(self.C),
            sample_weight=sample_weight, state_index=state_index,
            n_threads=effective_n_jobs(self.n_jobs),
        )
        solver = self._resolve_solver(loss, prior)
        max_iter = self.max_iter or (1000 if solver == "lbfgs" else 10)
        x0 = self._initial_parameters(objective, attributes, classes)
        # A prior may optimise in its own variables (the Laplacian's split
        # theta = z+ - z-, z >= 0); see sklearn_crfloss.priors.
        par = prior.parametrisation(objective.n_params) if hasattr(
            prior, "parametrisation") else None
        fun, bounds = objective, None
        if par is not None:
            fun, bounds, x0 = FreeParameterObjective(objective, par), par.bounds, par.from_theta(x0)
        init_n_iter = 0
        from_zero = self.init != "cll" and not (self.warm_start and hasattr(self, "coef_"))
        if (solver == "lbfgs" and from_zero and getattr(loss, "needs_init", False)
                and not getattr(loss, "smooth", True)):
            warnings.warn(
                f"loss={getattr(loss, 'name', loss)!r} starts from zero parameters, where "
                "every label sequence has the same score: its maximum over the incorrect "
                "outputs is not differentiable there and L-BFGS usually stops at once. "
                "Use init='cll' (or warm_start=True after a CLL fit).",
                UserWarning, stacklevel=2,
            )
        if self.init == "cll" and getattr(loss, "name", None) != "cll":
            objective.loss = ConditionalLogLikelihood()
            init_info = lbfgs(fun, x0, max_iter=self.max_iter or 1000, tol=self.tol,
                              bounds=bounds, verbose=self.verbose)
            objective.loss = loss
            x0, init_n_iter = init_info.x, init_info.n_iter
        objective.token_weight = token_weight
        if solver == "lbfgs":
            # A loss with an annealing schedule (e.g. labelwise with a list of
            # alpha) is trained stage by stage, each warm-started from the last.
            stages = loss.stages() if hasattr(loss, "stages") else [loss]
            n_iter, curve = 0, []
            for stage in stages:
                objective.loss = stage
                info = lbfgs(fun, x0, max_iter=max_iter, tol=self.tol, bounds=bounds,
                             verbose=self.verbose, callback=self.callback)
                x0 = info.x
                n_iter += info.n_iter
                curve += list(info.loss_curve)
            objective.loss = loss
            converged = info.converged
            theta = par.to_theta(info.x) if par is not None else info.x
            W = objective.dense_weights(theta)
            _, T, start, end = objective.unpack(theta)
            n_params = objective.n_params
        else:
            if token_weight is not None:
                raise ValueError(f"token_weight needs solver='lbfgs', not {solver!r}.")
            theta0 = par.to_theta(x0) if par is not None else x0
            _, T0, s0, e0 = objective.unpack(theta0)
            (W, T, start, end), curve = online_fit(
                Xc, y_enc, offsets, n_labels, rule=solver, loss=loss,
                cost_matrix=getattr(loss, "_cost_matrix", None),
                C=None if (solver == "sgd" and isinstance(prior, NoPrior)) else float(self.C),
                max_iter=max_iter, average=self.average, eta0=self.eta0,
                random_state=check_random_state(self.random_state),
                init=(objective.dense_weights(theta0), T0, s0, e0),
                sample_weight=sample_weight, verbose=self.verbose, callback=self.callback,
            )
            n_iter, converged = max_iter, True
            n_params = W.size + T.size + start.size + end.size
            theta = np.concatenate([W.ravel(), np.ravel(T), start, end])

        # Only now, with everything computed, change the estimator's state.
        self.classes_ = classes
        self.coef_ = W.T  # (n_classes, n_features); W itself stays C-ordered
        self.transition_ = np.array(T)
        self.start_ = np.array(start)
        self.end_ = np.array(end)
        self.n_features_in_ = Xc.shape[1]
        self.attributes_ = attributes
        self.vectorizer_ = vectorizer
        self._columns = columns
        self.input_kind_ = kind
        self.n_parameters_ = n_params
        self.n_iter_ = n_iter
        self.init_n_iter_ = init_n_iter
        self.loss_curve_ = curve
        self.objective_ = curve[-1] if curve else float("nan")
        self.sparsity_ = float(np.mean(theta == 0.0))
        self.converged_ = converged
        self._loss = loss
        self._prior = prior
        return self

    def _resolve_solver(self, loss, prior):
        """The training procedure for this loss; ValueError on a bad combination."""
        default = getattr(loss, "default_solver", "lbfgs")
        name = getattr(loss, "name", type(loss).__name__)
        if getattr(loss, "needs_online_solver", False):
            if self.solver is not None:
                raise ValueError(f"loss={name!r} is trained by its own online rule; "
                                 f"leave solver=None (got solver={self.solver!r}).")
            return default
        solver = self.solver or default
        if solver == "lbfgs" and default != "lbfgs":
            # e.g. max-margin: nonsmooth everywhere a path changes. (MCE with
            # psi=inf is nonsmooth too but trained with L-BFGS as the paper's
            # QuickProp substitute; its class keeps default_solver='lbfgs'.)
            raise ValueError(f"loss={name!r} is not differentiable: L-BFGS does not apply, "
                             "use solver='sgd'.")
        if solver == "sgd" and not (isinstance(prior, NoPrior) or (
                isinstance(prior, GaussianPrior) and not np.any(prior.mean))):
            raise ValueError("solver='sgd' supports prior='l2' (zero mean) or 'none'.")
        return solver

    def _vectorize_fit(self, kind, tokens, offsets):
        """Fit the vectoriser; return (vectorizer, columns, CSR, attribute names)."""
        columns = None
        if kind == "array":
            Xc = tokens
            return None, None, Xc, np.array([f"x{k}" for k in range(Xc.shape[1])])
        if self.feature_hashing is not None:
            vectorizer = FeatureHasher(n_features=self.feature_hashing, input_type="dict",
                                       alternate_sign=False, dtype=np.float64)
            Xc = vectorizer.transform(tokens).tocsr()
            attributes = np.array([f"hash_{k}" for k in range(self.feature_hashing)])
        else:
            vectorizer = DictVectorizer(dtype=np.float64)
            try:
                Xc = vectorizer.fit_transform(tokens).tocsr()
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"Could not vectorise the feature dicts: {exc}") from exc
            attributes = np.asarray(vectorizer.get_feature_names_out(), dtype=object)
        Xc.eliminate_zeros()
        check_finite_tokens(Xc, offsets)
        if self.min_freq > 1:
            keep = np.bincount(Xc.indices, minlength=Xc.shape[1]) >= self.min_freq
            Xc = Xc[:, keep].tocsr()
            attributes = attributes[keep]
            if isinstance(vectorizer, DictVectorizer):
                vectorizer.restrict(keep)
            else:
                columns = np.flatnonzero(keep)
        return vectorizer, columns, Xc, attributes

    def _initial_parameters(self, objective, attributes, classes):
        """Zeros, or the previous fit's parameters mapped by name (warm start)."""
        if not (self.warm_start and hasattr(self, "coef_")):
            return np.zeros(objective.n_params)
        L, F = classes.shape[0], attributes.shape[0]
        old_cls = {c: i for i, c in enumerate(self.classes_)}
        new_c = np.array([i for i, c in enumerate(classes) if c in old_cls], dtype=np.intp)
        old_c = np.array([old_cls[classes[i]] for i in new_c], dtype=np.intp)
        old_att = {a: i for i, a in enumerate(self.attributes_)}
        new_a = np.array([i for i, a in enumerate(attributes) if a in old_att], dtype=np.intp)
        old_a = np.array([old_att[attributes[i]] for i in new_a], dtype=np.intp)
        W = np.zeros((F, L))
        T = np.zeros((L, L))
        start = np.zeros(L)
        end = np.zeros(L)
        W[np.ix_(new_a, new_c)] = self.coef_.T[np.ix_(old_a, old_c)]
        T[np.ix_(new_c, new_c)] = self.transition_[np.ix_(old_c, old_c)]
        start[new_c] = self.start_[old_c]
        end[new_c] = self.end_[old_c]
        return objective.pack(W, T, start, end)

    # -------------------------------------------------------------- predict

    def _potentials(self, X):
        """Unary potentials (n_tokens, n_classes) and offsets of X."""
        check_is_fitted(self)
        kind, tokens, offsets = check_sequences(
            X, kind=self.input_kind_,
            n_features=self.n_features_in_ if self.input_kind_ == "array" else None,
            allow_empty=True,
        )
        if self.input_kind_ == "dict":
            if len(tokens) == 0:
                Xc = sp.csr_matrix((0, self.n_features_in_))
            else:
                Xc = self.vectorizer_.transform(tokens).tocsr()
                if self._columns is not None:
                    Xc = Xc[:, self._columns].tocsr()
                check_finite_tokens(Xc, offsets)
        else:
            Xc = tokens
        unary = np.ascontiguousarray(Xc @ self.coef_.T)
        return unary, offsets

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
        ValueError
            With ``constraints='iob2'``, if a label is not ``'O'``,
            ``'B-<type>'`` or ``'I-<type>'``.
        """
        unary, offsets = self._potentials(X)
        n_threads = effective_n_jobs(self.n_jobs)
        L = self.classes_.shape[0]
        if self.constraints == "iob2":
            allowed_trans, allowed_start = _iob2_allowed(self.classes_)
            forbid_trans = np.where(allowed_trans, 0.0, -np.inf)
            forbid_start = np.where(allowed_start, 0.0, -np.inf)
        else:
            forbid_trans, forbid_start = np.zeros((L, L)), np.zeros(L)
        if self.decoder == "viterbi":
            path, score = viterbi(unary, self.transition_ + forbid_trans,
                                  self.start_ + forbid_start, self.end_, offsets,
                                  n_threads=n_threads)
        else:
            marg = forward_backward(unary, self.transition_, self.start_, self.end_, offsets,
                                    n_threads=n_threads).marginals
            if self.constraints is None:
                path = np.argmax(marg, axis=1)
            else:
                path, _ = viterbi(np.log(np.maximum(marg, 1e-300)), forbid_trans,
                                  forbid_start, np.zeros(L), offsets, n_threads=n_threads)
            n_seq = offsets.shape[0] - 1
            seq_id = np.repeat(np.arange(n_seq), np.diff(offsets))
            score = np.bincount(seq_id, weights=marg[np.arange(path.shape[0]), path],
                                minlength=n_seq)
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
        sklearn.exceptions.NotFittedError
            Before fit.
        ValueError
            If X does not match the training data's kind or width.
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


def _check_token_weight(token_weight, lengths, loss):
    """Flatten per-token weights (a list of per-sequence arrays) or return None."""
    if token_weight is None:
        return None
    if not getattr(loss, "supports_token_weight", False):
        raise ValueError(
            f"token_weight is not supported by loss {getattr(loss, 'name', loss)!r}; "
            "use 'pointwise', 'mixed' or 'labelwise'."
        )
    if isinstance(token_weight, (str, bytes)) or not hasattr(token_weight, "__len__"):
        raise TypeError("token_weight must be a list of per-token weight arrays")
    if len(token_weight) != lengths.shape[0]:
        raise ValueError(
            f"token_weight has {len(token_weight)} sequences, X has {lengths.shape[0]}"
        )
    parts = []
    for i, (tw, n) in enumerate(zip(token_weight, lengths)):
        tw = np.asarray(tw, dtype=np.float64).ravel()
        if tw.shape[0] != n:
            raise ValueError(f"token_weight[{i}] has {tw.shape[0]} weights, sequence has {n} tokens")
        parts.append(tw)
    flat = np.concatenate(parts) if parts else np.zeros(0)
    if not np.all(np.isfinite(flat)) or np.any(flat < 0):
        raise ValueError("token_weight must be finite and non-negative")
    return flat


def _iob2_allowed(classes):
    """Allowed transitions (L, L) and first labels (L,) under IOB2.

    ``I-X`` may follow only ``B-X`` or ``I-X`` and may not start a sequence.

    Raises
    ------
    ValueError
        If a label is not ``'O'``, ``'B-<type>'`` or ``'I-<type>'``.
    """
    parsed = []
    for label in classes:
        text = label if isinstance(label, str) else str(label)
        prefix, sep, typ = text.partition("-")
        if text == "O":
            parsed.append(("O", ""))
        elif sep and typ and prefix in ("B", "I"):
            parsed.append((prefix, typ))
        else:
            raise ValueError(
                f"constraints='iob2' needs labels 'O', 'B-<type>' or 'I-<type>', got {label!r}"
            )
    L = len(parsed)
    allowed = np.ones((L, L), dtype=bool)
    start = np.ones(L, dtype=bool)
    for j, (pj, tj) in enumerate(parsed):
        if pj == "I":
            start[j] = False
            for i, (pi, ti) in enumerate(parsed):
                allowed[i, j] = pi in ("B", "I") and ti == tj
    return allowed, start


def _observed_pairs(Xc, y_enc, n_labels):
    """Flat indices ``attribute * n_labels + label`` of the pairs seen in training."""
    binary = sp.csr_matrix((np.ones_like(Xc.data), Xc.indices, Xc.indptr), shape=Xc.shape)
    onehot = sp.csr_matrix(
        (np.ones(y_enc.shape[0]), (np.arange(y_enc.shape[0]), y_enc)),
        shape=(y_enc.shape[0], n_labels),
    )
    pairs = (binary.T @ onehot).tocoo()
    index = pairs.row.astype(np.intp) * n_labels + pairs.col
    index.sort()
    return index
