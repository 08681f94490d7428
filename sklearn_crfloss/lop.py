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
from joblib import cpu_count, delayed, effective_n_jobs, Parallel
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import check_cv
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from scipy.special import softmax

from ._data import (attribute_key, check_sequences, encode_labels, join_nested_keys,
                    SequenceVectorizer)
from ._lop import count_trained, expert_parts, normalised_weights, pool_blocks
from ._model import BigramLayout, pack_blocks, ParameterLayout
from ._tagger import CRFTagger
from ._training import (check_validation_set, keyword_only_after_y, to_model_labels,
                        to_training_labels)
from ._utils import (Interval, SequenceTaggerTagsMixin, StrOptions, validate_params,
                     VersionedStateMixin)
from .inference import PositionTransitions
from .losses import ConditionalLogLikelihood, get_loss
from .priors import get_prior
from .segments import split_label
from .solvers import ConvergenceMonitor, FitInfo, minimize_lbfgs, take_sequences

__all__ = ["LOPTagger", "EXPERT_SETS", "WEIGHTS", "attribute_position", "boundary_positions",
           "entity_type", "template_positions"]

#: Names of the built-in expert sets of :class:`LOPTagger`.
EXPERT_SETS = ("simple", "positional", "label", "random")
#: Names of the ways :class:`LOPTagger` sets the pool's weights.
WEIGHTS = ("uniform", "cv", "fit")

_POSITION_RE = re.compile(r"\[([-+]?\d+)\]$")
_BOUNDARY_RE = re.compile(r"_B([-+]\d+)")


def attribute_position(name, keys=None):
    """Relative token position of an attribute, by the naming convention of :class:`LOPTagger`.

    The key of an attribute is the feature-dict key it was formed from:
    ``'w[-1]:the'`` has key ``'w[-1]'`` (the text before the first ``':'``,
    or, given the training ``keys``, the longest of them the name starts
    with). A key ending in ``[<int>]`` refers
    to the token at that offset from the current one (``'w[-1]'``: the
    previous token, ``'w[+2]'`` or ``'w[2]'``: two ahead); any other key
    refers to the current token (offset 0).

    Parameters
    ----------
    name : str
        Attribute name, e.g. ``'w[-1]:the'`` or ``'U02:the'``.
    keys : set of str or None, default=None
        The keys of the training feature dicts (for keys that hold ``':'``).

    Returns
    -------
    int
        The offset.
    """
    key = attribute_key(name, keys)
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


def boundary_positions(X):
    """Offsets of the keys of template features, read from their boundary symbols.

    :class:`~sklearn_crfloss.features.TemplateFeatures` (like CRF++) expands
    a macro ``%x[o,c]`` that falls before the sentence to ``_B-1``,
    ``_B-2``, ... and after it to ``_B+1``, ``_B+2``, ...: at the first
    token a macro of offset ``o < 0`` always reads ``_B<o>``, at the last
    token one of offset ``o > 0`` always reads ``_B+<o>``. So the values of
    a key at the sentence ends tell its offsets:

    - *behind* (every offset < 0): its value at the first token is the same
      in every sentence and holds ``_B-``; the offsets are those read there;
    - *ahead* (every offset > 0): the same at the last token with ``_B+``;
    - otherwise, if a boundary symbol appears at either end, the key spans
      the current token: the offsets read, and 0.

    Keys whose values never hold a boundary symbol at a sentence end (the
    current token's, constants) are left out. The test "the same in every
    sentence" needs sentences that do not all begin (end) with the same
    tokens, as in any real corpus; for exact offsets pass
    ``positions=template_positions(features)``. This is the default of
    ``LOPTagger(positions=None)`` for keys that do not follow the
    ``'w[-1]'`` naming convention of :func:`attribute_position`, so that the
    positional experts work after ``TemplateFeatures`` with no further
    parameter.

    Parameters
    ----------
    X : list of list of dict
        Sequences of feature dicts, e.g. the output of
        ``TemplateFeatures.transform``; non-str values are ignored.

    Returns
    -------
    dict
        ``key -> tuple of int`` (sorted offsets).

    Examples
    --------
    >>> from sklearn_crfloss.features import TemplateFeatures
    >>> from sklearn_crfloss.lop import boundary_positions
    >>> feats = TemplateFeatures(["U00:%x[-1,0]", "U01:%x[0,0]", "U02:%x[0,0]/%x[1,0]",
    ...                           "U03:%x[1,0]/%x[2,0]"])
    >>> X = feats.fit_transform([[("a",), ("b",), ("c",)], [("d",), ("e",)]])
    >>> boundary_positions(X)
    {'U00': (-1,), 'U02': (0, 1), 'U03': (1, 2)}
    """
    seqs = [x for x in X if len(x)]
    return _boundary_positions([x[0] for x in seqs], [x[-1] for x in seqs])


def _boundary_positions(firsts, lasts):
    """:func:`boundary_positions` from the first and last token dicts of the sequences."""
    found = {}
    for side, dicts in ((-1, firsts), (1, lasts)):
        values = {}  # key -> set of str values at this end
        for d in dicts:
            for key, value in d.items():
                if isinstance(value, str):
                    values.setdefault(key, set()).add(value)
        for key, vals in values.items():
            offs = {int(m) for v in vals for m in _BOUNDARY_RE.findall(v)
                    if (int(m) < 0) == (side < 0)}
            if offs:
                entry = found.setdefault(key, [set(), set()])
                entry[side > 0] |= offs
                if len(vals) == 1:  # constant at this end: every offset is on this side
                    entry.append(side)
    out = {}
    for key, (neg, pos, *sides) in found.items():
        if sides == [-1]:
            out[key] = tuple(sorted(neg))
        elif sides == [1]:
            out[key] = tuple(sorted(pos))
        else:
            out[key] = tuple(sorted(neg | pos | {0}))
    return out


class LOPTagger(SequenceTaggerTagsMixin, VersionedStateMixin, BaseEstimator):
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
    experts : {'simple', 'positional', 'label', 'random'}, callable or list, default='simple'
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
          them, their start and end potentials, and with observation-
          dependent label bigrams the entries of the bigram blocks from or
          to them (the others stay 0; the experts' ``estimator`` then needs
          a batch solver: ``'lbfgs'``, ``'owlqn'``, ``'rprop'`` or
          ``'quickprop'``);
        - ``'random'``: a random partition of the columns into 4
          (``random_state``);
        - a list of groups, each a callable ``attribute_name -> bool`` or an
          array-like of column indices (user-defined partition or subsets);
        - a callable ``attribute_names -> list of groups`` as above.
    weights : {'uniform', 'cv', 'fit'} or array-like of shape (n_experts,), default='uniform'
        How the pool's weights are set:

        - ``'uniform'``: equal weights ``1 / n_experts``;
        - ``'cv'``: maximise the pool's likelihood of held-out data: the
          sequences are split by ``cv``, every expert is refitted on each
          training part, and the weights maximise the summed
          log-likelihood of the held-out parts under those experts (then
          the experts fitted on all the data are pooled with them). Costs
          ``n_splits + 1`` fits of every expert;
        - ``'fit'``: maximise the training log-likelihood of the pool
          (Smith, Cohn & Osborne 2005). With unregularised experts it puts
          most of the weight on the monolithic expert, which fits the
          training data best, and the pool gains little over it; with
          ``fit(X, y, X_val=..., y_val=...)`` the log-likelihood of that
          validation set instead;
        - an array: fixed non-negative weights, monolithic expert first,
          normalised to sum 1.

        ``'cv'`` and ``'fit'`` use the softmax parametrisation ``w =
        softmax(v)`` and L-BFGS (the gradient in ``w_a`` is the difference
        between the gold and the pool-expected scores of expert ``a``).
        Measured on CoNLL-2002 Spanish NER after ``TemplateFeatures()``,
        positional experts (benchmarks/README.md): against the unregularised
        monolithic CRF, uniform weights gain +0.93 test F1 (full data),
        ``'fit'`` +0.34, ``'cv'`` -9.4 (2,000 sentences: it drops the
        monolithic expert).
    estimator : CRFTagger or None, default=None
        Template of every expert (cloned). None: ``CRFTagger(prior='none')``.
        Its ``min_freq`` and ``feature_hashing`` define the columns; with a
        ``tag_scheme`` the experts train in that scheme (the label experts'
        types are read from the converted labels) and the pool predicts in
        the scheme of the labels given to :meth:`fit`, as a ``CRFTagger``.
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
        are < 0, ahead if all are > 0, else at). None: the offsets read
        from the boundary symbols of template features
        (:func:`boundary_positions`, so that the experts work after
        :class:`~sklearn_crfloss.features.TemplateFeatures`), else the
        ``'w[-1]'`` naming convention (:func:`attribute_position`).
    max_iter : int, default=200
        Iterations of the weight training (``weights='cv'`` or ``'fit'``).
    tol : float, default=1e-7
        Relative tolerance of the weight training.
    n_jobs : int or None, default=None
        Experts trained in parallel (joblib processes); None means 1.
    random_state : int, RandomState instance or None, default=None
        For ``experts='random'``.
    cv : int or cross-validation splitter, default=3
        For ``weights='cv'``: the split of the sequences (an int is the
        number of folds of :class:`~sklearn.model_selection.KFold`).

    Attributes
    ----------
    experts_ : list of CRFTagger
        The fitted experts, monolithic first; each predicts from the same
        input as the pool (it keeps only its columns).
    expert_columns_ : list of ndarray of intp
        Columns (into ``attributes_``) of each expert.
    weights_ : ndarray of shape (n_experts,)
        The pool's weights (sum 1).
    pool_ : CRFTagger
        The pool as one fitted CRF: ``coef_`` etc. are the weighted sums
        (with observation-dependent label bigrams, ``bigram_coef_`` too: the
        experts whose columns hold bigram attributes train their blocks,
        the label experts in their own labels' entries, and the pool sums
        them like the rest);
        its ``n_iter_``, ``converged_`` and ``loss_curve_`` are those of the
        weight fit (0, True and one value for fixed weights) and
        ``objective_`` the pool's negative training log-likelihood.
    classes_ : ndarray of shape (n_classes,)
    attributes_ : ndarray of shape (n_features,)
    n_features_in_ : int
    weights_n_iter_ : int
        Iterations of the weight training (0 for fixed or uniform weights).

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
    After :class:`~sklearn_crfloss.features.TemplateFeatures`, the
    positional experts read the offsets of its templates from their
    boundary symbols:

    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_crfloss.features import TemplateFeatures
    >>> from sklearn_crfloss.lop import LOPTagger
    >>> sents = [[("He", "PRP"), ("runs", "VBZ")],
    ...          [("The", "DT"), ("dog", "NN"), ("barks", "VBZ"), (".", ".")]]
    >>> tags = [["B-NP", "B-VP"], ["B-NP", "I-NP", "B-VP", "O"]]
    >>> pipe = make_pipeline(TemplateFeatures(), LOPTagger(experts="positional")).fit(sents, tags)
    >>> lop = pipe[-1]
    >>> [sorted({a.split(":")[0] for a in lop.attributes_[cols]})
    ...  for cols in lop.expert_columns_[1:]]  # doctest: +NORMALIZE_WHITESPACE
    [['U00', 'U01', 'U10', 'U11', 'U15'],
     ['U02', 'U05', 'U06', 'U12', 'U16', 'U17', 'U20', 'U21', 'U22'],
     ['U03', 'U04', 'U13', 'U14', 'U18']]
    >>> lop.weights_.tolist()
    [0.25, 0.25, 0.25, 0.25]

    Attributes named ``'w[-1]'``, ``'w[+1]'`` follow the naming convention:

    >>> X = [[{"w": "the", "w[+1]": "dog"}, {"w": "dog", "w[-1]": "the"}]] * 3
    >>> y = [["B-NP", "I-NP"]] * 3
    >>> lop = LOPTagger(experts="positional", weights=[0.4, 0.2, 0.2, 0.2]).fit(X, y)
    >>> lop.predict(X[:1])
    [['B-NP', 'I-NP']]
    """

    _parameter_constraints = {
        "experts": [StrOptions(set(EXPERT_SETS)), callable, list, tuple],
        "weights": [StrOptions(set(WEIGHTS)), "array-like"],
        "estimator": [None, CRFTagger],  # the experts are CRFs on column subsets
        "reduced": [None, callable, list, tuple],
        "positions": [None, callable, dict],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_jobs": [None, Interval(Integral, None, -1, closed="right"),
                   Interval(Integral, 1, None, closed="left")],  # 0 means nothing
        "random_state": ["random_state"],
        "cv": ["cv_object"],
    }

    def __init__(self, *, experts="simple", weights="uniform", estimator=None, reduced=None,
                 positions=None, max_iter=200, tol=1e-7, n_jobs=None, random_state=None,
                 cv=3):
        self.experts, self.weights, self.estimator = experts, weights, estimator
        self.reduced, self.positions = reduced, positions
        self.max_iter, self.tol, self.n_jobs = max_iter, tol, n_jobs
        self.random_state, self.cv = random_state, cv

    # ------------------------------------------------------------ expert sets

    def _offsets_of(self, names, inferred, keys):
        pos = self.positions
        if pos is None:  # boundary symbols of template features, else the 'w[-1]' convention
            return [inferred.get(attribute_key(n, keys), (attribute_position(n, keys),))
                    for n in names]
        if callable(pos):
            return [np.atleast_1d(pos(n)).tolist() for n in names]
        out = []
        for n in names:
            key = attribute_key(n, keys)
            if key not in pos:
                raise ValueError(f"positions has no entry for the attribute key {key!r}")
            out.append(np.atleast_1d(pos[key]).tolist())
        return out

    def _expert_columns(self, names, types=(), inferred=None, keys=None):
        """Column groups of the non-monolithic experts (``inferred``: boundary_positions)."""
        inferred = inferred or {}
        n = len(names)
        experts = self.experts
        if isinstance(experts, str):
            if experts == "simple":
                red = self.reduced
                if red is None:
                    offs = self._offsets_of(names, inferred, keys)
                    mask = np.array([all(o == 0 for o in off) for off in offs], dtype=bool)
                elif callable(red):
                    mask = np.array([bool(red(a)) for a in names], dtype=bool)
                else:
                    reduced = set(red)
                    mask = np.array([attribute_key(a, keys) in reduced for a in names],
                                    dtype=bool)
                groups = [np.flatnonzero(mask)]
            elif experts == "positional":
                offs = self._offsets_of(names, inferred, keys)
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
                        if idx.shape != (n,):
                            raise ValueError(
                                f"expert group {k} is a boolean mask of shape {idx.shape}, but "
                                f"there are {n} feature columns: a mask needs one entry per "
                                "column (attributes_), or pass column indices")
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

    @keyword_only_after_y
    def fit(self, X, y, *, X_val=None, y_val=None):
        """Train the experts, then set the pool's weights (see ``weights``).

        The features are vectorised once (with the ``estimator``'s
        ``min_freq`` and ``feature_hashing``); every expert is a clone of
        ``estimator`` trained on its columns of that one matrix, and the
        pool is a fitted :class:`~sklearn_crfloss.CRFTagger` (``pool_``)
        whose training is the weight fit. With ``weights='cv'`` every
        expert is also trained on the training part of each split of
        ``cv``.

        Parameters
        ----------
        X : list of sequences
            As in :meth:`CRFTagger.fit <sklearn_crfloss.CRFTagger.fit>`.
        y : list of sequences of labels
        X_val : list of sequences or None, default=None
            With ``weights='fit'``: a validation set (e.g. a development
            set) whose pool log-likelihood the weights maximise, instead of
            the training data's. The experts are trained on ``X`` only.
        y_val : list of sequences of labels or None, default=None
            The labels of ``X_val``, among those of ``y``.

        Returns
        -------
        self : LOPTagger

        Raises
        ------
        ValueError
            On invalid parameters, an empty expert, fixed ``weights`` of
            the wrong length, negative or summing to 0, or a validation set
            with other ``weights`` than ``'fit'``, without its labels or
            with labels not in ``y`` (naming ``X_val``/``y_val`` and the
            sequence); if an expert's ``estimator`` refuses the input (e.g.
            observation-dependent label bigrams with a loss or solver that
            does not take them; for the label experts, an online solver).
        TypeError
            If more than X and y are passed positionally.
        """
        validate_params(self)
        base = CRFTagger(prior="none") if self.estimator is None else self.estimator
        base_params = base.get_params()
        if base_params.get("order", 1) != 1:
            raise ValueError("order=2 is not supported by LOPTagger (its experts are first "
                             "order); use an estimator with order=1")
        kind, tokens, offsets = check_sequences(X)
        y, schemes = to_training_labels(base_params.get("tag_scheme"), y)  # the experts' scheme
        classes, y_enc = encode_labels(y, np.diff(offsets))
        features = SequenceVectorizer(base_params.get("min_freq", 1),
                                      base_params.get("feature_hashing"))
        Xc = sp.csr_matrix(features.fit_transform(kind, tokens, offsets))
        types = [entity_type(c) for c in classes]
        type_names = sorted({t for t in types if t is not None})
        inferred = {}
        if kind == "dict" and self.positions is None:
            ends = [(tokens[a], tokens[b - 1]) for a, b in zip(offsets[:-1], offsets[1:]) if b > a]
            inferred = _boundary_positions([f for f, _ in ends], [e for _, e in ends])
        keys = set().union(*join_nested_keys(tokens)[0]) if kind == "dict" else None
        groups = self._expert_columns(list(features.attributes), type_names, inferred, keys)
        labels = [None] * len(groups)
        if isinstance(self.experts, str) and self.experts == "label":
            if not type_names:
                raise ValueError("experts='label' needs labels other than 'O'")
            labels[1:] = [np.flatnonzero([t == name for t in types]) for name in type_names]
        mode = self.weights if isinstance(self.weights, str) else "fixed"
        if (X_val is not None or y_val is not None) and mode != "fit":
            raise ValueError(f"X_val and y_val are used by weights='fit' only, not "
                             f"weights={self.weights!r}.")
        val = check_validation_set(features, classes, X_val, None if y_val is None else
                                   to_model_labels(schemes, y_val), None, kind)
        fixed = np.ones(len(groups)) if mode == "uniform" else None
        if mode == "fixed":
            fixed = normalised_weights(self.weights, len(groups),
                                        f"the expert set {self.experts!r}")

        def fit_experts(seqs):
            """The experts trained on the sequences ``seqs`` (all: None)."""
            Xs, offs, ys = (Xc, offsets, y_enc) if seqs is None else _subset(
                Xc, offsets, y_enc, seqs)
            # (n_jobs resolved as scikit-learn's, at most the cores: one process each)
            return Parallel(n_jobs=min(effective_n_jobs(self.n_jobs), cpu_count()))(
                delayed(_fit_expert)(clone(base), features.select(cols), Xs[:, cols], offs,
                                     classes, ys, lab, schemes)
                for cols, lab in zip(groups, labels))

        def blocks(experts, seqs):
            """(parts, y, offsets) of the sequences ``seqs`` under ``experts``."""
            Xs, offs, ys = (Xc, offsets, y_enc) if seqs is None else _subset(
                Xc, offsets, y_enc, seqs)
            return expert_parts(experts, groups, Xs, offs, features.attributes), ys, offs

        experts = fit_experts(None)
        if mode == "cv":  # held-out likelihood: each fold's experts score the other sequences
            splits = check_cv(self.cv).split(np.arange(offsets.shape[0] - 1))
            held_out = [blocks(fit_experts(train), test) for train, test in splits]
            weights, monitor = _fit_weights(held_out, self.max_iter, self.tol)
        elif mode == "fit":
            data = blocks(experts, None) if val is None else (
                expert_parts(experts, groups, val.X, val.offsets, features.attributes), val.y,
                val.offsets)
            weights, monitor = _fit_weights([data], self.max_iter, self.tol)
        if fixed is None:
            weights = normalised_weights(weights, len(groups), "the pool")  # NaN: diverged
            info = FitInfo(n_iter=monitor.n_iter, loss_curve=monitor.history,
                           converged=monitor.converged, stop_reason=monitor.stop_reason,
                           objective=_pool_nll(weights, *blocks(experts, None))[0])
        else:
            weights = normalised_weights(fixed, len(groups), "the pool")
            nll = _pool_nll(weights, *blocks(experts, None))[0]
            info = FitInfo(loss_curve=[nll], stop_reason="converged", objective=nll)

        if not np.isfinite(info.objective):
            raise ConvergenceMonitor(0.0, 1, stage="LOP pool").diverged(
                f"the pool's negative log-likelihood is {info.objective}")
        pool = _make_pool(clone(base), features, experts, groups, weights, info)
        # Every fitted attribute in one update, once the pool is known to be finite.
        self.__dict__.update(experts_=experts, expert_columns_=groups,
                             weights_=np.asarray(weights), weights_n_iter_=info.n_iter,
                             pool_=pool, classes_=classes, attributes_=features.attributes,
                             n_features_in_=pool.n_features_in_)
        return self

    # ---------------------------------------------------------------- predict

    def predict(self, X):
        """Viterbi paths of the pool (a CRF with the weighted potentials).

        Parameters
        ----------
        X : list of sequences

        Returns
        -------
        list of list
            One list of labels per sequence, as :meth:`CRFTagger.predict`.
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
            On a wrong length, negative, non-finite or all-zero weights.
        """
        check_is_fitted(self)
        w = normalised_weights(weights, len(self.experts_), "this pool")
        new = copy.copy(self)
        new.weights = w
        new.weights_ = w
        new.weights_n_iter_ = 0
        pool = self.pool_
        new.pool_ = _make_pool(clone(pool), pool._features, self.experts_,
                               self.expert_columns_, w, FitInfo(loss_curve=[]))
        return new

    def score(self, X, y):
        """Token accuracy of :meth:`predict`."""
        check_is_fitted(self)
        return self.pool_.score(X, y)


def entity_type(label):
    """The entity type of a label for the label experts of :class:`LOPTagger`.

    Parameters
    ----------
    label : object
        A label; compared through ``str``.

    Returns
    -------
    str or None
        None for ``'O'``; the type of a ``<prefix>-<type>`` label with a
        one-letter prefix ``B``, ``I``, ``E`` or ``S`` (conlleval's split,
        :func:`sklearn_crfloss.segments.split_label`); any other label is
        its own type.
    """
    text = str(label)
    if text == "O":
        return None
    prefix, typ = split_label(text)
    return typ if prefix in ("B", "I", "E", "S") and typ else text


def _make_pool(pool, features, experts, groups, weights, info):
    """Fit ``pool`` (an unfitted CRFTagger) to the weighted sums of the experts' potentials."""
    classes = experts[0].classes_
    L = classes.shape[0]
    blocks, columns = pool_blocks(experts, groups, weights, features.attributes)
    layout = (ParameterLayout(features.n_features, L) if blocks is None
              else BigramLayout(features.n_features, L, None, columns))
    W = np.zeros((features.n_features, L))
    T = np.zeros((L, L))
    start = np.zeros(L)
    end = np.zeros(L)
    for w, e, cols in zip(weights, experts, groups):
        W[cols] += w * e.coef_.T
        T += w * e.transition_
        start += w * e.start_
        end += w * e.end_
    theta = pack_blocks(layout, W, T, start, end, blocks)
    if not np.all(np.isfinite(theta)):
        raise ConvergenceMonitor(0.0, 1, stage="LOP pool").diverged(
            "the pool's weighted sums of the experts' parameters are not finite")
    pool._set_fitted(features, classes, layout, theta, info, get_loss("cll"), get_prior("none"))
    pool.tag_schemes_ = experts[0].tag_schemes_  # (the estimator's tag_scheme)
    return pool


def _subset(Xc, offsets, y, seqs):
    """Rows, offsets and labels of the sequences ``seqs`` (indices, in order)."""
    rows, sub_offsets = take_sequences(offsets, np.asarray(seqs, dtype=np.intp))
    return Xc[rows], sub_offsets, y[rows]


def _fit_expert(estimator, features, X, offsets, classes, y, labels, schemes):
    # X, the expert's column subset, is its own matrix: handed over (ordered in place).
    return count_trained(estimator._fit_vectorized(features, [X], offsets, classes, y,
                                                   labels=labels, tag_schemes=schemes), labels)


def _table(transition):
    """The array of a transition matrix or of a PositionTransitions' table."""
    return transition.table if isinstance(transition, PositionTransitions) else transition


def _pool_potentials(weights, parts):
    """The weighted sums of the experts' potentials (tables on one index: ``expert_parts``)."""
    U, T, s, e = (sum(w * _table(p[k]) for w, p in zip(weights, parts)) for k in range(4))
    if isinstance(parts[0][1], PositionTransitions):
        T = parts[0][1]._replace(table=T)
    return U, T, s, e


def _pool_nll(weights, parts, y, offsets):
    """Negative training log-likelihood of the pool and its gradient in the weights.

    ``d(-LL)/dw_a = sum_i (E_pbar[score_a] - score_a(y_i))``: the chain rule
    of the CLL gradient in the pooled potentials (expected minus gold counts)
    through ``phi = sum_a w_a phi_a`` (Smith, Cohn & Osborne 2005).
    """
    U, T, s, e = _pool_potentials(weights, parts)
    value, dU, dT, ds, de = ConditionalLogLikelihood().value_and_grad(
        np.ascontiguousarray(U), T, s, e, y, offsets)
    grad = np.array([np.vdot(dU, p[0]) + np.vdot(dT, _table(p[1])) + ds @ p[2] + de @ p[3]
                     for p in parts])
    return value, grad


def _fit_weights(blocks, max_iter, tol):
    """Weights on the simplex maximising the pool's likelihood (softmax, L-BFGS).

    ``blocks``: list of ``(parts, y, offsets)``, whose negative
    log-likelihoods are summed (the training data, or the held-out folds of
    ``weights='cv'``, each with its own experts). Returns the weights and
    the :class:`~sklearn_crfloss.solvers.ConvergenceMonitor`.
    """
    def fun(v):
        w = softmax(v)
        value, g = 0.0, 0.0
        for parts, y, offsets in blocks:
            v_b, g_b = _pool_nll(w, parts, y, offsets)
            value, g = value + v_b, g + g_b
        return value, w * (g - w @ g)

    monitor = ConvergenceMonitor(tol, max_iter, stage="LOP weights")
    return softmax(minimize_lbfgs(fun, np.zeros(len(blocks[0][0])), monitor)), monitor
