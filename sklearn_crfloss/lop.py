"""Logarithmic opinion pools of CRFs (LOP-CRFs), Smith & Osborne (2005), section 4.

A pool of expert CRFs ``p_a(y | x)``, each trained without a prior on a
subset of the features, combined as

``p_bar(y | x) = prod_a p_a(y | x)^{w_a} / Z_bar(x)``, ``w_a >= 0``, ``sum_a w_a = 1``

(the LOP definition before Eq. 5). Because each expert is log-linear, the
pool is itself a linear-chain CRF whose potentials are the ``w``-weighted
sums of the experts' potentials (section 4, "Decoding LOPs for CRFs"), so
Viterbi decoding and marginals run on one set of potentials.

Design: a separate estimator, :class:`LOPTagger`, rather than
``CRFTagger(prior='lop')``. A prior in this package is a penalty on one
parameter vector (``value_and_grad(theta, C)``); a LOP is a different model
(several parameter vectors, trained separately, then mixed), so it composes
:class:`~sklearn_crfloss.CRFTagger` instead: every expert is a clone of
``estimator`` fitted on a column subset, and the fitted pool is exposed as a
:class:`~sklearn_crfloss.CRFTagger` (``pool_``) that predicts.
"""

import copy
import re
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._compat import HasMethods, Interval, StrOptions, validate_params
from ._optim import lbfgs
from ._tagger import CRFTagger
from ._validation import check_labels, check_sequences
from .inference import forward_backward
from .losses import ConditionalLogLikelihood
from .priors import BasePrior, Parametrisation

__all__ = ["LOPTagger", "EXPERT_SETS", "attribute_position", "template_positions"]

#: Names of the built-in expert sets of :class:`LOPTagger`.
EXPERT_SETS = ("simple", "positional", "label", "random")

_POSITION_RE = re.compile(r"\[([-+]?\d+)\]$")


def attribute_position(name):
    """Relative token position of an attribute, by the naming convention of :class:`LOPTagger`.

    The key of an attribute is the text before its first ``'='``
    (``'w[-1]=the'`` has key ``'w[-1]'``). A key ending in ``[<int>]`` refers
    to the token at that offset from the current one (``'w[-1]'``: the
    previous token, ``'w[+2]'`` or ``'w[2]'``: two ahead); any other key
    refers to the current token (offset 0).

    Parameters
    ----------
    name : str
        Attribute name, e.g. ``'w[-1]=the'`` or ``'U02=the'``.

    Returns
    -------
    int
        The offset.
    """
    key = str(name).split("=", 1)[0]
    m = _POSITION_RE.search(key)
    return int(m.group(1)) if m else 0


def template_positions(features):
    """Offsets of each key of a fitted :class:`~sklearn_crfloss.features.TemplateFeatures`.

    For ``LOPTagger(positions=...)``: a CRF++ template ``U05:%x[-1,0]/%x[0,0]``
    spans offsets ``(-1, 0)``; a constant template (no macro) offset 0.

    Parameters
    ----------
    features : TemplateFeatures
        Fitted (``templates_`` is read).

    Returns
    -------
    dict
        ``key -> tuple of int``.
    """
    check_is_fitted(features, "templates_")
    return {key: tuple(off for off, _ in macros) or (0,)
            for key, macros, _ in features.templates_}


def _softmax(v):
    e = np.exp(v - v.max())
    return e / e.sum()


class LOPTagger(BaseEstimator):
    """Logarithmic opinion pool of CRF experts (LOP-CRF).

    Smith & Osborne (2005), section 4; weight training from Smith, Cohn &
    Osborne (2005). The monolithic model (all features) is always the first
    expert; the expert set adds further experts, each a CRF trained on a
    subset of the feature columns. Experts are trained independently (in
    parallel with joblib, ``n_jobs``) as clones of ``estimator`` (by default
    without a prior, as in the paper), then combined with weights ``w``:
    the pool's potentials are ``sum_a w_a phi_a``.

    Parameters
    ----------
    experts : {'simple', 'positional', 'random'}, callable or list, default='simple'
        The expert set, besides the monolithic expert:

        - ``'simple'``: one reduced expert, the columns chosen by ``reduced``;
        - ``'positional'``: three experts with the attributes behind
          (offset < 0), at (0) and ahead of (> 0) the current token, offsets
          from ``positions``;
        - ``'label'``: one expert per entity type ``X`` (labels ``B-X``,
          ``I-X``; a label without a ``B-``/``I-`` prefix is its own type,
          ``'O'`` excluded) over all columns, whose only free parameters
          involve the type's labels at the current or previous position:
          the state weights of those labels, the transitions from or to
          them, their start and end potentials (the others stay 0);
        - ``'random'``: a random partition of the columns into 4
          (``random_state``);
        - a list of groups, each a callable ``attribute_name -> bool`` or an
          array-like of column indices (user-defined partition or subsets);
        - a callable ``attribute_names -> list of groups`` as above.
    weights : 'fit' or array-like of shape (n_experts,), default='fit'
        ``'fit'``: maximise the training log-likelihood of the pool over
        the simplex, with the softmax parametrisation ``w = softmax(v)`` and
        L-BFGS (the gradient in ``w_a`` is the difference between the gold
        and the pool-expected scores of expert ``a``). An array: fixed
        non-negative weights, monolithic expert first, normalised to sum 1.
    estimator : CRFTagger or None, default=None
        Template of every expert (cloned). None: ``CRFTagger(prior='none')``.
        Its ``min_freq`` and ``feature_hashing`` define the columns.
    reduced : callable, list of str or None, default=None
        For ``experts='simple'``: the reduced expert's columns, as a
        callable ``attribute_name -> bool`` or a list of attribute keys (the
        text before ``'='``). None: the attributes of the current token
        (:func:`attribute_position` 0).
    positions : callable or dict or None, default=None
        For ``'positional'`` (and the default ``reduced``): the offset of an
        attribute, a callable ``attribute_name -> int`` or a dict
        ``key -> int or tuple of int`` (an attribute spanning several
        offsets, e.g. a bigram of positions -1 and 0, counts as behind if all
        are < 0, ahead if all are > 0, else at). None:
        :func:`attribute_position`.
    max_iter : int, default=200
        Iterations of the weight training.
    tol : float, default=1e-7
        Relative tolerance of the weight training.
    n_jobs : int or None, default=None
        Experts trained in parallel (joblib processes); None means 1.
    random_state : int, RandomState instance or None, default=None
        For ``experts='random'``.

    Attributes
    ----------
    experts_ : list of CRFTagger
        The fitted experts, monolithic first (array input: their columns).
    expert_columns_ : list of ndarray of intp
        Columns (into ``attributes_``) of each expert.
    weights_ : ndarray of shape (n_experts,)
        The pool's weights (sum 1).
    pool_ : CRFTagger
        The pool as one fitted CRF (``coef_`` etc. the weighted sums).
    classes_ : ndarray of shape (n_classes,)
    attributes_ : ndarray of shape (n_features,)
    n_features_in_ : int
    weights_n_iter_ : int
        Iterations of the weight training (0 for fixed weights).

    References
    ----------
    A. Smith, M. Osborne (2005). Regularisation techniques for conditional
    random fields: parameterised versus parameter-free. IJCNLP, section 4.
    A. Smith, T. Cohn, M. Osborne (2005). Logarithmic opinion pools for
    conditional random fields. ACL.
    T. Heskes (1998). Selecting weighting factors in logarithmic opinion
    pools. NIPS.

    Examples
    --------
    >>> from sklearn_crfloss.lop import LOPTagger
    >>> X = [[{"w": "the", "w[+1]": "dog"}, {"w": "dog", "w[-1]": "the"}]] * 3
    >>> y = [["B-NP", "I-NP"]] * 3
    >>> lop = LOPTagger(experts="positional", weights=[0.4, 0.2, 0.2, 0.2]).fit(X, y)
    >>> [p.tolist() for p in lop.predict(X[:1])]
    [['B-NP', 'I-NP']]
    """

    _parameter_constraints = {
        "experts": [StrOptions(set(EXPERT_SETS)), callable, list, tuple],
        "weights": [StrOptions({"fit"}), "array-like"],
        "estimator": [None, HasMethods(["fit", "predict"])],
        "reduced": [None, callable, list, tuple],
        "positions": [None, callable, dict],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_jobs": [None, Integral],
        "random_state": ["random_state"],
    }

    def __init__(self, *, experts="simple", weights="fit", estimator=None, reduced=None,
                 positions=None, max_iter=200, tol=1e-7, n_jobs=None, random_state=None):
        self.experts = experts
        self.weights = weights
        self.estimator = estimator
        self.reduced = reduced
        self.positions = positions
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs
        self.random_state = random_state

    # ------------------------------------------------------------ expert sets

    def _offsets_of(self, names):
        pos = self.positions
        if pos is None:
            return [(attribute_position(n),) for n in names]
        if callable(pos):
            return [np.atleast_1d(pos(n)).tolist() for n in names]
        out = []
        for n in names:
            key = str(n).split("=", 1)[0]
            if key not in pos:
                raise ValueError(f"positions has no entry for the attribute key {key!r}")
            out.append(np.atleast_1d(pos[key]).tolist())
        return out

    def _expert_columns(self, names, types=()):
        """Column groups of the non-monolithic experts."""
        n = len(names)
        experts = self.experts
        if isinstance(experts, str):
            if experts == "simple":
                red = self.reduced
                if red is None:
                    offs = self._offsets_of(names)
                    mask = np.array([all(o == 0 for o in off) for off in offs], dtype=bool)
                elif callable(red):
                    mask = np.array([bool(red(a)) for a in names], dtype=bool)
                else:
                    keys = set(red)
                    mask = np.array([str(a).split("=", 1)[0] in keys for a in names], dtype=bool)
                groups = [np.flatnonzero(mask)]
            elif experts == "positional":
                offs = self._offsets_of(names)
                behind = np.array([max(o) < 0 for o in offs], dtype=bool)
                ahead = np.array([min(o) > 0 for o in offs], dtype=bool)
                at = ~(behind | ahead)
                groups = [np.flatnonzero(m) for m in (behind, at, ahead)]
            elif experts == "label":
                groups = [np.arange(n) for _ in types]
            else:  # random
                part = check_random_state(self.random_state).randint(4, size=n)
                groups = [np.flatnonzero(part == k) for k in range(4)]
        else:
            spec = experts(np.asarray(names)) if callable(experts) else experts
            groups = []
            for k, g in enumerate(spec):
                if callable(g):
                    groups.append(np.flatnonzero([bool(g(a)) for a in names]))
                else:
                    idx = np.asarray(g)
                    if idx.dtype == bool:
                        idx = np.flatnonzero(idx)
                    if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer) or (
                            idx.size and (idx.min() < 0 or idx.max() >= n)):
                        raise ValueError(
                            f"expert group {k} must be a callable on attribute names or "
                            f"column indices in [0, {n}), got {g!r}"
                        )
                    groups.append(np.unique(idx))
        for k, g in enumerate(groups):
            if g.size == 0:
                raise ValueError(
                    f"expert {k + 1} of the expert set {self.experts!r} has no feature column; "
                    "check reduced / positions / the groups"
                )
        return [np.arange(n, dtype=np.intp)] + [g.astype(np.intp) for g in groups]

    # -------------------------------------------------------------------- fit

    def fit(self, X, y):
        """Train the experts, then the pool's weights (unless fixed).

        Parameters
        ----------
        X : list of sequences
            As in :meth:`CRFTagger.fit <sklearn_crfloss.CRFTagger.fit>`.
        y : list of sequences of labels

        Returns
        -------
        self : LOPTagger

        Raises
        ------
        ValueError
            On invalid parameters, an empty expert, or fixed ``weights`` of
            the wrong length, negative or summing to 0.
        """
        validate_params(self)
        base = CRFTagger(prior="none") if self.estimator is None else self.estimator
        kind, tokens, offsets = check_sequences(X)
        flat_y = check_labels(y, np.diff(offsets))
        vec_est = clone(base)
        vectorizer, columns, Xc, attributes = vec_est._vectorize_fit(kind, tokens, offsets)
        Xc = sp.csr_matrix(Xc)
        classes_all = np.unique(np.asarray(flat_y))
        types = sorted({_entity_type(c) for c in classes_all} - {None})
        groups = self._expert_columns(list(attributes), types)
        masks = [None] * len(groups)
        if isinstance(self.experts, str) and self.experts == "label":
            if not types:
                raise ValueError("experts='label' needs labels other than 'O'")
            masks[1:] = [np.flatnonzero([_entity_type(c) == t for c in classes_all])
                         for t in types]
        n_exp = len(groups)
        fixed = None
        if not (isinstance(self.weights, str) and self.weights == "fit"):
            fixed = np.asarray(self.weights, dtype=np.float64)
            if fixed.shape != (n_exp,):
                raise ValueError(
                    f"weights has shape {fixed.shape} but the expert set {self.experts!r} has "
                    f"{n_exp} experts (the monolithic one first)"
                )
            if np.any(fixed < 0) or not np.isfinite(fixed).all() or fixed.sum() <= 0:
                raise ValueError(f"weights must be finite, >= 0 and not all 0, got {fixed}")
            fixed = fixed / fixed.sum()

        bounds = offsets
        y_seqs = [np.asarray(flat_y[bounds[i]:bounds[i + 1]], dtype=object)
                  for i in range(len(bounds) - 1)]

        def subset(cols):
            sub = Xc[:, cols].tocsr()
            return [sub[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]

        def expert(k):
            est = clone(base)
            if masks[k] is not None:
                est.set_params(prior=_LabelExpertPrior(labels=masks[k]))
            return est

        experts = Parallel(n_jobs=self.n_jobs)(
            delayed(_fit_expert)(expert(k), subset(cols), y_seqs)
            for k, cols in enumerate(groups)
        )
        classes = experts[0].classes_
        for e in experts[1:]:
            if not np.array_equal(e.classes_, classes):  # pragma: no cover - same y
                raise RuntimeError("experts disagree on the classes")
        parts = []
        for e, cols in zip(experts, groups):
            parts.append((np.ascontiguousarray(Xc[:, cols] @ e.coef_.T),
                          e.transition_, e.start_, e.end_))
        n_iter = 0
        if fixed is None:
            y_enc = np.searchsorted(classes, np.asarray(flat_y)).astype(np.intp)
            weights, n_iter = _fit_weights(parts, y_enc, offsets, self.max_iter, self.tol)
        else:
            weights = fixed

        pool = _make_pool(clone(base), experts, groups, weights, Xc.shape[1])
        pool.attributes_ = attributes
        pool.vectorizer_ = vectorizer
        pool._columns = columns
        pool.input_kind_ = kind

        self.experts_ = experts
        self.expert_columns_ = groups
        self.weights_ = np.asarray(weights)
        self.weights_n_iter_ = n_iter
        self.pool_ = pool
        self.classes_ = classes
        self.attributes_ = attributes
        self.n_features_in_ = Xc.shape[1]
        return self

    # ---------------------------------------------------------------- predict

    def predict(self, X):
        """Viterbi paths of the pool (a CRF with the weighted potentials).

        Parameters
        ----------
        X : list of sequences

        Returns
        -------
        list of ndarray of shape (n_tokens_i,)
        """
        check_is_fitted(self)
        return self.pool_.predict(X)

    def decode(self, X):
        """Viterbi paths and scores of the pool; see :meth:`CRFTagger.decode`."""
        check_is_fitted(self)
        return self.pool_.decode(X)

    def predict_marginals(self, X):
        """Marginals ``p_bar(y_t | x)`` of the pool.

        Returns
        -------
        list of ndarray of shape (n_tokens_i, n_classes)
        """
        check_is_fitted(self)
        return self.pool_.predict_marginals(X)

    def with_weights(self, weights):
        """A copy of this fitted pool with other fixed weights (experts not retrained).

        Parameters
        ----------
        weights : array-like of shape (n_experts,)
            Non-negative, normalised to sum 1.

        Returns
        -------
        LOPTagger
            Fitted, ``weights`` set to the normalised array.

        Raises
        ------
        ValueError
            On a wrong length, negative or all-zero weights.
        """
        import copy

        check_is_fitted(self)
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (len(self.experts_),) or np.any(w < 0) or not w.sum() > 0:
            raise ValueError(
                f"weights must be {len(self.experts_)} non-negative numbers, not all 0; got {w}"
            )
        w = w / w.sum()
        new = copy.copy(self)
        new.weights = w
        new.weights_ = w
        new.weights_n_iter_ = 0
        new.pool_ = _make_pool(copy.copy(self.pool_), self.experts_, self.expert_columns_, w,
                               self.n_features_in_)
        return new

    def score(self, X, y):
        """Token accuracy of :meth:`predict`."""
        check_is_fitted(self)
        return self.pool_.score(X, y)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        tags.target_tags.one_d_labels = False
        return tags


def _entity_type(label):
    """``'PER'`` for ``'B-PER'``/``'I-PER'``, the label itself without a prefix, None for 'O'."""
    label = str(label)
    if label == "O":
        return None
    if len(label) > 2 and label[1] == "-" and label[0] in "BIES":
        return label[2:]
    return label


class _LabelExpertPrior(BasePrior):
    """No penalty; only the parameters involving ``labels`` are free (the 'label' experts).

    Uses the ``bind`` and ``parametrisation`` hooks of the prior contract:
    ``theta`` is ``z`` scattered into the free positions, 0 elsewhere.

    Parameters
    ----------
    labels : ndarray of int
        Label indices (into the sorted classes) of the expert's entity type.
    """

    name = "label-expert"

    def __init__(self, labels=None):
        self.labels = labels

    def bind(self, X, y, offsets, n_labels, state_index=None):
        bound = copy.copy(self)
        if state_index is None:
            state_index = np.arange(X.shape[1] * n_labels)
        mine = np.zeros(n_labels, dtype=bool)
        mine[np.asarray(self.labels, dtype=np.intp)] = True
        trans = mine[:, None] | mine[None, :]
        bound.mask_ = np.concatenate([mine[state_index % n_labels], trans.ravel(), mine, mine])
        return bound

    def value_and_grad(self, theta, C):
        return 0.0, np.zeros_like(theta)

    def parametrisation(self, n_params):
        mask = self.mask_
        if mask.shape[0] != n_params:
            raise ValueError(f"bound to {mask.shape[0]} parameters, got {n_params}")
        idx = np.flatnonzero(mask)

        def to_theta(z):
            theta = np.zeros(n_params)
            theta[idx] = z
            return theta

        return Parametrisation(
            idx.shape[0], None, to_theta, lambda theta: theta[idx],
            lambda grad, z: grad[idx], lambda z, C: (0.0, np.zeros_like(z)))


def _make_pool(pool, experts, groups, weights, n_features):
    """Set the fitted potentials of ``pool`` (a CRFTagger) to the weighted sums of the experts'."""
    classes = experts[0].classes_
    L = classes.shape[0]
    coef = np.zeros((L, n_features))
    T = np.zeros((L, L))
    start = np.zeros(L)
    end = np.zeros(L)
    for w, e, cols in zip(weights, experts, groups):
        coef[:, cols] += w * e.coef_
        T += w * e.transition_
        start += w * e.start_
        end += w * e.end_
    pool.classes_ = classes
    pool.coef_ = coef
    pool.transition_ = T
    pool.start_ = start
    pool.end_ = end
    pool.n_features_in_ = n_features
    return pool


def _fit_expert(estimator, X, y):
    return estimator.fit(X, y)


def _pool_nll(weights, parts, y, offsets):
    """Negative training log-likelihood of the pool and its gradient in the weights.

    ``d(-LL)/dw_a = sum_i (E_pbar[score_a] - score_a(y_i))``: the chain rule
    of the CLL gradient in the pooled potentials (expected minus gold counts)
    through ``phi = sum_a w_a phi_a`` (Smith, Cohn & Osborne 2005).
    """
    U = sum(w * p[0] for w, p in zip(weights, parts))
    T = sum(w * p[1] for w, p in zip(weights, parts))
    s = sum(w * p[2] for w, p in zip(weights, parts))
    e = sum(w * p[3] for w, p in zip(weights, parts))
    value, dU, dT, ds, de = ConditionalLogLikelihood().value_and_grad(
        np.ascontiguousarray(U), T, s, e, y, offsets)
    grad = np.array([np.vdot(dU, p[0]) + np.vdot(dT, p[1]) + ds @ p[2] + de @ p[3]
                     for p in parts])
    return value, grad


def _fit_weights(parts, y, offsets, max_iter, tol):
    """Weights on the simplex maximising the pool's training likelihood (softmax, L-BFGS)."""
    def fun(v):
        w = _softmax(v)
        value, g = _pool_nll(w, parts, y, offsets)
        return value, w * (g - w @ g)

    info = lbfgs(fun, np.zeros(len(parts)), max_iter=max_iter, tol=tol)
    return _softmax(info.x), info.n_iter


# Exposed for tests: the pool's marginals by forward-backward on summed potentials.
def _pool_marginals(weights, parts, offsets):
    U = sum(w * p[0] for w, p in zip(weights, parts))
    T = sum(w * p[1] for w, p in zip(weights, parts))
    s = sum(w * p[2] for w, p in zip(weights, parts))
    e = sum(w * p[3] for w, p in zip(weights, parts))
    return forward_backward(np.ascontiguousarray(U), T, s, e, offsets).marginals
