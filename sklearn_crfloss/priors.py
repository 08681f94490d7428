"""Priors (regularisers) on the CRF parameters.

A prior is an object with ``value_and_grad(theta, C) -> (value, grad)``
where ``theta`` is the flat vector of every parameter the optimiser sees:
state weights, transitions, start and end potentials, in that order (see
:class:`~sklearn_crfloss.CRFTagger`). ``C`` is the estimator's single
strength knob: larger ``C``, weaker prior, as in scikit-learn's
``LogisticRegression`` and CRF++ ``-c``.

All parameters, transitions and start/end potentials included, are
penalised, as CRFsuite and CRF++ do: the transitions of a chunking model are
few (L^2) but unpenalised they can grow large on rare label pairs, and
penalising them keeps ``C`` comparable with those tools (CRFsuite's
``c2 = 1 / (2 C)``).

Register a new prior in :data:`PRIORS`.

Three optional hooks extend the contract (all additive: a prior without them
is used as before):

``bind(X, y, offsets, layout) -> prior``
    Called once by :meth:`CRFTagger.fit <sklearn_crfloss.CRFTagger.fit>`
    with the vectorised training data before optimisation; returns the prior
    to use (a copy when it needs data-dependent state, never the user's
    object modified). :class:`BasePrior` returns ``self`` unless
    ``feature_dependent=True``, in which case the copy carries the
    per-parameter confidence weights of :func:`confidence_weights`
    (Smith & Osborne 2005, section 3.4).
``parametrisation(n_params) -> Parametrisation or None``
    A change of variables for the optimiser, ``theta = to_theta(z)`` with
    box ``bounds`` on ``z``, and the penalty written on ``z``. The objective
    then optimises ``z`` with L-BFGS-B (see
    :class:`sklearn_crfloss.solvers.LBFGS`).
    :class:`LaplacianPrior` uses it for the split ``w = w+ - w-``,
    ``w+, w- >= 0``, which makes the non-differentiable ``|w|`` linear and
    leaves exact zeros at the optimum.
``value_and_add_grad(theta, C, out) -> value``
    The penalty, its gradient added to ``out`` (the loss's gradient) in
    place: training calls it, when the prior declares
    ``PriorTags.adds_gradient``, instead of adding the array of
    ``value_and_grad``, with the same sums. :class:`BasePrior` adds that
    array; :class:`GaussianPrior` (zero mean) adds ``theta / C`` without
    an array of ``n_params``.

What the solvers and the estimator read from a prior is one record,
:class:`PriorTags`, returned by ``__prior_tags__`` and read through
:func:`get_prior_tags` (as :class:`~sklearn_crfloss.losses.LossTags` is for
losses).
"""

import copy
from dataclasses import dataclass
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator

from ._utils import (RECORD_METHOD_DOC, RECORD_NAME_DOC, RESOLVER_DOC, declared_record,
                     fill_doc, Interval, resolve)

__all__ = [
    "PRIORS",
    "BasePrior",
    "ElasticNetPrior",
    "GaussianPrior",
    "HyperbolicPrior",
    "LaplacianPrior",
    "NoPrior",
    "Parametrisation",
    "PriorTags",
    "confidence_weights",
    "get_prior",
    "get_prior_tags",
]


@fill_doc(record_name=RECORD_NAME_DOC.format(what="prior"))
@dataclass
class PriorTags:
    """The capabilities of a prior that training reads (``BasePrior.__prior_tags__``).

    {record_name}
    smooth : bool, default=True
        Whether the penalty is differentiable everywhere. A prior that is
        not gives a :class:`Parametrisation` in which it is
        (``parametrisation(n_params)``), which L-BFGS optimises; the
        Quickprop and Rprop solvers refuse it.
    l1 : bool, default=False
        Whether the penalty has an L1 part (:class:`LaplacianPrior`,
        :class:`ElasticNetPrior`): a smooth loss then trains with OWL-QN
        by default, which takes that part in its orthant-wise steps.
    l1_ratio : float, default=1.0
        The share of the L1 part in the penalty (``l1_ratio / C`` is its
        coefficient); read when ``l1`` is set.
    l2_part : bool, default=False
        Whether a prior with an L1 part has a smooth part too, given by
        ``smooth_value_and_grad(theta, C)`` (the elastic net's L2 term).
    zero : bool, default=False
        Whether the penalty is identically 0 (:class:`NoPrior`).
    weight_decay : bool, default=False
        Whether the penalty is ``||theta||^2 / (2 C)`` exactly (a zero-mean
        :class:`GaussianPrior`, not feature-dependent), which the SGD solver
        applies in closed form as a scale of the weights.
    needs_bind : bool, default=False
        Whether training calls ``bind(X, y, offsets, layout)`` with the
        vectorised training data and uses the prior it returns.
        :class:`BasePrior` declares True.
    adds_gradient : bool, default=False
        Whether the prior has ``value_and_add_grad(theta, C, out)``, which
        adds its gradient to ``out`` (the loss's gradient) in place and
        returns its value: the sums of ``out += value_and_grad(theta,
        C)[1]``, without an array of ``n_params`` where the prior can
        (:class:`GaussianPrior` with a zero mean, not feature-dependent).
        :class:`BasePrior` declares True.
    """

    name: str = None
    smooth: bool = True
    l1: bool = False
    l1_ratio: float = 1.0
    l2_part: bool = False
    zero: bool = False
    weight_decay: bool = False
    needs_bind: bool = False
    adds_gradient: bool = False


def get_prior_tags(prior):
    """The declared capabilities of a prior: ``prior.__prior_tags__()``.

    The one place where the defaults of a prior object that declares no
    record (an object with ``value_and_grad`` only) are set: its optional
    hooks ``bind`` and ``parametrisation`` are read as in the module
    docstring.

    Parameters
    ----------
    prior : prior object

    Returns
    -------
    PriorTags

    Examples
    --------
    >>> from sklearn_crfloss.priors import get_prior, get_prior_tags
    >>> tags = get_prior_tags(get_prior("elasticnet"))
    >>> tags.smooth, tags.l1, tags.l1_ratio, tags.l2_part
    (False, True, 0.5, True)
    """
    return declared_record(prior, "__prior_tags__", _undeclared_prior_tags)


def _undeclared_prior_tags(prior):
    # The record of a prior object with no __prior_tags__, from its hooks.
    parametrisation = getattr(prior, "parametrisation", None)
    return PriorTags(name=getattr(prior, "name", None),
                     smooth=parametrisation is None or parametrisation(1) is None,
                     needs_bind=hasattr(prior, "bind"))


class BasePrior(BaseEstimator):
    """Base class of priors; see the module docstring for the contract.

    Hyperparameters are ``__init__`` arguments stored unchanged
    (``prior__<name>`` in ``GridSearchCV``). Their ranges are declared in
    the class attribute ``_parameter_constraints`` (scikit-learn's
    constraints) and checked once, when the prior is resolved for training:
    :func:`get_prior` (which :meth:`CRFTagger.fit
    <sklearn_crfloss.CRFTagger.fit>` calls) returns a validated copy and
    raises a ValueError naming the parameter otherwise.
    :meth:`value_and_grad` does not check them again: call it on the result
    of ``get_prior(prior)``. Checks that need the data (the length of
    ``theta``) stay in :meth:`value_and_grad`.
    """

    _parameter_constraints: dict = {}

    name = None

    @fill_doc(record_method=RECORD_METHOD_DOC.format(method="__prior_tags__", record="PriorTags"))
    def __prior_tags__(self):
        """The prior's declared capabilities (see :class:`PriorTags`).

        {record_method}
            Here: ``name`` from the class attribute, ``smooth`` when
            :meth:`parametrisation` is None, ``needs_bind=True``,
            ``adds_gradient=True``, the other fields at their defaults.
        """
        return PriorTags(name=self.name, smooth=self.parametrisation(1) is None, needs_bind=True,
                         adds_gradient=True)

    def value_and_grad(self, theta, C):
        """Penalty (negative log prior up to a constant) and its gradient.

        Parameters
        ----------
        theta : ndarray of float64 of shape (n_params,)
            All parameters.
        C : float
            Inverse strength, ``C > 0``.

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,)
        """
        raise NotImplementedError

    def value_and_add_grad(self, theta, C, out):
        """Penalty, its gradient added to ``out`` in place.

        Here: ``out += value_and_grad(theta, C)[1]``. A subclass that can
        add its gradient without an array of ``n_params`` overrides it,
        with the same sums.

        Parameters
        ----------
        theta, C
            As :meth:`value_and_grad`.
        out : ndarray of float64 of shape (n_params,)
            The gradient to add to (e.g. the loss's), changed in place.

        Returns
        -------
        value : float
            The penalty.
        """
        value, grad = self.value_and_grad(theta, C)
        out += grad
        return value

    def bind(self, X, y, offsets, layout):
        """The prior to use on this training data.

        Returns ``self``, or, if the prior has ``feature_dependent=True``, a
        shallow copy whose ``weights_`` are :func:`confidence_weights` of
        the data for the layout's free parameters (the caller's object is
        not modified).

        Parameters
        ----------
        X : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
            The vectorised training tokens, all sequences stacked.
        y : ndarray of intp of shape (n_tokens,)
            Gold label index of every token.
        offsets : ndarray of intp of shape (n_sequences + 1,)
            Sequence boundaries in ``X`` and ``y``.
        layout : sklearn_crfloss._model._parameters.ParameterLayout
            Which parameters are trained (``n_labels``, ``state_index`` and
            the free transitions, start and end potentials).

        Returns
        -------
        prior : BasePrior
        """
        if not getattr(self, "feature_dependent", False):
            return self
        bound = copy.copy(self)
        bound.weights_ = layout.restrict(
            confidence_weights(X, y, offsets, layout.n_labels, layout.state_index))
        return bound

    def parametrisation(self, n_params):
        """Change of variables for the optimiser, or None (the identity).

        The base class returns None: the optimiser works on ``theta``
        itself. A prior that is not differentiable everywhere may return a
        :class:`Parametrisation` in which it is (see
        :class:`LaplacianPrior`).

        Parameters
        ----------
        n_params : int
            Length of the flat parameter vector ``theta``.

        Returns
        -------
        Parametrisation or None
        """
        return None

    def _weights(self, n_params):
        """Per-parameter penalty weights ``d_k`` (1 unless bound feature-dependent)."""
        w = getattr(self, "weights_", None)
        if not getattr(self, "feature_dependent", False):
            return 1.0
        if w is None:
            raise ValueError(
                f"{type(self).__name__}(feature_dependent=True) needs the training data: "
                "it is bound by CRFTagger.fit (or call prior.bind(X, y, offsets, layout))."
            )
        if w.shape[0] != n_params:
            raise ValueError(
                f"the prior was bound to {w.shape[0]} parameters but theta has {n_params}"
            )
        return w


class Parametrisation:
    """A change of variables ``theta = to_theta(z)`` with box bounds on ``z``.

    Returned by a prior's ``parametrisation(n_params)``; the objective then
    minimises ``loss(to_theta(z)) + penalty(z, C)`` over ``z`` within
    ``bounds`` (scipy's L-BFGS-B).

    Parameters
    ----------
    n_free : int
        Length of ``z``.
    bounds : list of (float or None, float or None)
        Box constraints of ``z`` (scipy's ``bounds``).
    to_theta : callable
        ``z -> theta``.
    from_theta : callable
        ``theta -> z`` (a starting point with ``to_theta(from_theta(t)) == t``).
    chain : callable
        ``(grad_theta, z) -> grad_z``, the chain rule through ``to_theta``.
    penalty : callable
        ``(z, C) -> (value, grad_z)``, the prior on ``z``.
    """

    def __init__(self, n_free, bounds, to_theta, from_theta, chain, penalty):
        self.n_free = n_free
        self.bounds = bounds
        self.to_theta = to_theta
        self.from_theta = from_theta
        self.chain = chain
        self.penalty = penalty


def confidence_weights(X, y, offsets, n_labels, state_index=None):
    """Feature-dependent penalty weights from the confidence in empirical counts.

    Smith & Osborne (2005), section 3.4 (after Kazama & Tsujii 2003): the
    empirical expected count of feature ``k`` is treated as uncertain through
    the Bernoulli parameter ``theta_k`` "the label event holds, given that
    the predicate holds", with posterior ``Beta(1 + a, 1 + b)`` and variance
    ``V = (1 + a)(1 + b) / ((a + b + 2)^2 (a + b + 3))``, so that
    ``var[E~[f_k]] = V * sum_{(o, t): h_k(o, t) = 1} p~(o)^2``. With the
    empirical ``p~(o) = 1 / N`` over ``N`` training sequences the sum is
    ``(a + b) / N^2``.

    What ``a`` and ``b`` are in our vectorised design:

    - state weight ``W[j, l]`` (attribute ``j``, label ``l``): the predicate
      ``h`` is "attribute ``j`` is non-zero at this token"; ``a`` = tokens
      where it fires with gold label ``l``, ``b`` = tokens where it fires
      with another gold label;
    - transition ``(l', l)``: the predicate holds at every position
      ``t >= 1``; ``a`` = gold bigrams ``(l', l)``, ``b`` = the other
      positions ``t >= 1``;
    - start (end) potential of ``l``: the predicate holds at the first
      (last) token of every sequence; ``a`` = sequences starting (ending)
      with ``l``, ``b`` = the others.

    Mapping to the prior (ours; the paper does not give one): the standard
    deviation ``s_k = sqrt(var[E~[f_k]])`` is the uncertainty of the count
    that the prior may discount, so each parameter's penalty term is
    multiplied by ``d_k = s_k / mean(s)`` (mean over all parameters): the
    discount in Eqs. 2-4 becomes ``d_k`` times the feature-independent one,
    larger for rarely seen or ambiguous features, smaller for frequent,
    reliable ones. Equivalently: Gaussian variance ``sigma_k^2 = C / d_k``,
    Laplacian ``beta_k = C / d_k`` (paper's notation ``|w| / beta_k``),
    hyperbolic ``d_k log cosh(beta w_k)``.

    Parameters
    ----------
    X : sparse matrix of shape (n_tokens, n_features)
    y : ndarray of int of shape (n_tokens,)
        Gold label indices.
    offsets : ndarray of int of shape (n_sequences + 1,)
    n_labels : int
    state_index : ndarray of int or None, default=None
        Sorted flat indices ``attribute * n_labels + label`` of the trained
        state weights; None: all of them.

    Returns
    -------
    ndarray of float64 of shape (n_params,)
        ``d_k`` in the order of the flat parameter vector (state weights,
        transitions, start, end); mean 1.

    Raises
    ------
    ValueError
        If the shapes of X, y and offsets disagree.
    """
    import scipy.sparse as sp

    X = sp.csr_matrix(X)
    y = np.asarray(y, dtype=np.intp)
    offsets = np.asarray(offsets, dtype=np.intp)
    if X.shape[0] != y.shape[0] or offsets[-1] != y.shape[0]:
        raise ValueError(
            f"X has {X.shape[0]} rows, y {y.shape[0]} labels and offsets end at {offsets[-1]}"
        )
    n_seq = offsets.shape[0] - 1
    L = n_labels
    # Every stored entry counts (X's arrays are not written: they may be read-only).
    binary = sp.csr_matrix((np.ones_like(X.data), X.indices, X.indptr), shape=X.shape)
    onehot = sp.csr_matrix((np.ones(y.shape[0]), (np.arange(y.shape[0]), y)),
                           shape=(y.shape[0], L))
    a_state = np.asarray((binary.T @ onehot).todense()).ravel()
    n_state = np.repeat(np.asarray(binary.sum(axis=0)).ravel(), L)
    if state_index is not None:
        a_state, n_state = a_state[state_index], n_state[state_index]
    starts, ends = offsets[:-1], offsets[1:] - 1
    inner = np.ones(y.shape[0], dtype=bool)
    inner[starts] = False
    prev = y[np.flatnonzero(inner) - 1]
    cur = y[inner]
    a_trans = np.bincount(prev * L + cur, minlength=L * L).astype(float)
    n_trans = np.full(L * L, float(inner.sum()))
    a_start = np.bincount(y[starts], minlength=L).astype(float)
    a_end = np.bincount(y[ends], minlength=L).astype(float)
    a = np.concatenate([a_state, a_trans, a_start, a_end])
    n = np.concatenate([n_state, n_trans, np.full(2 * L, float(n_seq))])
    b = n - a
    V = (1 + a) * (1 + b) / ((a + b + 2) ** 2 * (a + b + 3))
    s = np.sqrt(V * n / max(n_seq, 1) ** 2)
    return s / s.mean()


class GaussianPrior(BasePrior):
    """Gaussian prior (``prior='l2'``): penalty ``||theta - mean||^2 / (2 C)``.

    The negative log density of independent normal priors of variance
    ``C`` on every parameter, up to a constant (Smith & Osborne 2005,
    section 3.1). With ``C = 1`` it equals CRFsuite's L2 term with
    ``c2 = 0.5``.

    At the optimum, ``E~[f_k] - E_p[f_k] = d_k (theta_k - mu_k) / C``
    (paper Eq. 2 with ``sigma_k^2 = C / d_k``).

    Parameters
    ----------
    mean : float or ndarray of shape (n_params,), default=0.0
        Prior mean ``mu`` (section 3.1, "Varying the Gaussian mean"): a
        scalar for every parameter, or one value per parameter of the flat
        vector (state weights, transitions, start, end).
    feature_dependent : bool, default=False
        If True, the term of parameter ``k`` is weighted by the confidence
        weight ``d_k`` of :func:`confidence_weights` (section 3.4):
        penalty ``sum_k d_k (theta_k - mu_k)^2 / (2 C)``.

    References
    ----------
    S. F. Chen, R. Rosenfeld (1999). A Gaussian prior for smoothing maximum
    entropy models. CMU-CS-99-108.
    A. Smith, M. Osborne (2005). Regularisation techniques for conditional
    random fields: parameterised versus parameter-free. IJCNLP, section 3.1.
    """

    name = "l2"

    _parameter_constraints: dict = {
        "mean": [Real, "array-like"],
        "feature_dependent": ["boolean"],
    }

    def __init__(self, mean=0.0, feature_dependent=False):
        self.mean = mean
        self.feature_dependent = feature_dependent

    def __prior_tags__(self):
        # Docstring inherited.
        tags = super().__prior_tags__()
        tags.weight_decay = not np.any(self.mean) and not self.feature_dependent
        return tags

    def _mean(self, theta):
        """The prior mean as an array, checked against ``theta``'s shape."""
        mean = np.asarray(self.mean, dtype=np.float64)
        if mean.ndim and mean.shape != theta.shape:
            raise ValueError(
                f"GaussianPrior mean has shape {mean.shape}; expected a scalar or "
                f"({theta.shape[0]},), one value per parameter"
            )
        return mean

    def value_and_grad(self, theta, C):
        # Docstring inherited.
        mean = self._mean(theta)
        diff = theta - mean if np.any(mean) else theta
        d = self._weights(theta.shape[0])
        wdiff = d * diff
        return float(np.dot(wdiff, diff)) / (2.0 * C), wdiff / C

    #: Entries of ``theta`` per step of :meth:`value_and_add_grad` (its temporary's length).
    CHUNK = 1 << 13

    def value_and_add_grad(self, theta, C, out):
        # Docstring inherited. With a zero mean and no confidence weights
        # (``weight_decay``) ``d * diff`` is ``theta`` itself (``1.0 *
        # theta``): the same value, and ``theta / C`` added a chunk at a time
        # (the same elementwise sums as ``out += theta / C``).
        if np.any(self._mean(theta)) or self.feature_dependent:
            return super().value_and_add_grad(theta, C, out)
        value = float(np.dot(theta, theta)) / (2.0 * C)
        for start in range(0, theta.shape[0], self.CHUNK):
            part = slice(start, start + self.CHUNK)
            out[part] += theta[part] / C
        return value


class LaplacianPrior(BasePrior):
    """Laplacian prior (``prior='l1'``): penalty ``||theta||_1 / C``.

    Smith & Osborne (2005), section 3.2: ``LL - sum_k |lambda_k| / beta_k``
    with ``beta_k = C`` (``C / d_k`` if feature-dependent). At the optimum,
    for ``theta_k != 0``, ``E~[f_k] - E_p[f_k] = d_k sign(theta_k) / C``
    (Eq. 3); for ``theta_k = 0``, ``|E~[f_k] - E_p[f_k]| <= d_k / C``.

    Optimisation: :meth:`parametrisation` splits ``theta = z+ - z-`` with
    ``z+, z- >= 0`` (doubling the variables) and L-BFGS-B keeps the bounds;
    the penalty ``sum_k d_k (z+_k + z-_k) / C`` is linear, and parameters
    with both halves at their bound are exactly zero after the fit
    (``CRFTagger.sparsity_``). :meth:`value_and_grad` on ``theta`` itself
    returns the subgradient ``d sign(theta) / C`` (0 at 0).

    Parameters
    ----------
    feature_dependent : bool, default=False
        If True, weight the term of parameter ``k`` by ``d_k`` of
        :func:`confidence_weights` (section 3.4).

    References
    ----------
    P. Williams (1995). Bayesian regularisation and pruning using a Laplace
    prior. Neural Computation 7(1).
    A. Smith, M. Osborne (2005), section 3.2.
    """

    name = "l1"

    _parameter_constraints: dict = {"feature_dependent": ["boolean"]}

    def __init__(self, feature_dependent=False):
        self.feature_dependent = feature_dependent

    def __prior_tags__(self):
        # Docstring inherited.
        tags = super().__prior_tags__()
        tags.l1 = True
        return tags

    def value_and_grad(self, theta, C):
        # Docstring inherited.
        d = self._weights(theta.shape[0])
        return float(np.sum(d * np.abs(theta))) / C, d * np.sign(theta) / C

    def parametrisation(self, n_params):
        # Docstring inherited: the split theta = z[:n] - z[n:] with z >= 0 of
        # the class docstring, n_free = 2 * n_params, bounds (0, None).
        n = n_params

        def to_theta(z):
            return z[:n] - z[n:]

        def from_theta(theta):
            return np.concatenate([np.maximum(theta, 0.0), np.maximum(-theta, 0.0)])

        def chain(grad, z):
            return np.concatenate([grad, -grad])

        def penalty(z, C):
            d = self._weights(n)
            dz = np.concatenate([np.broadcast_to(d, (n,)), np.broadcast_to(d, (n,))]) / C
            return float(np.dot(dz, z)), dz

        return Parametrisation(2 * n, [(0.0, None)] * (2 * n), to_theta, from_theta,
                               chain, penalty)


class ElasticNetPrior(LaplacianPrior):
    """Elastic-net prior (``prior='elasticnet'``): L1 plus L2, as CRFsuite's ``c1`` and ``c2``.

    The penalty is ``(l1_ratio ||theta||_1 + (1 - l1_ratio) ||theta||^2 / 2) / C``,
    so the training objective times ``C`` is
    ``C * sum(loss) + l1_ratio * ||theta||_1 + (1 - l1_ratio) / 2 * ||theta||^2``,
    the parametrisation of scikit-learn's
    :class:`~sklearn.linear_model.ElasticNet` and ``SGDClassifier(
    penalty='elasticnet')`` (Zou & Hastie 2005, Eq. (6), with
    ``alpha = l1_ratio``). It is the sum of a :class:`LaplacianPrior` with
    inverse strength ``C / l1_ratio`` and a :class:`GaussianPrior` with
    variance ``C / (1 - l1_ratio)``: the L1 part leaves exact zeros, the L2
    part spreads the weight over correlated attributes and keeps the
    problem strictly convex.

    CRFsuite's (and sklearn-crfsuite's) ``c1 ||theta||_1 + c2 ||theta||^2``
    is ``C = 1 / (c1 + 2 c2)`` and ``l1_ratio = c1 / (c1 + 2 c2)``:
    ``c1 = c2 = 0.1`` is ``C = 10/3``, ``l1_ratio = 1/3``.

    Optimisation: OWL-QN (``solver='owlqn'``, the default) with the L2
    part in the smooth objective and the L1 part in its orthant-wise
    steps, as CRFsuite and Wapiti train it; ``solver='lbfgs'`` uses the
    split ``theta = z+ - z-`` of :class:`LaplacianPrior`
    (:meth:`parametrisation`). :meth:`value_and_grad` returns the
    subgradient ``d (l1_ratio sign(theta) + (1 - l1_ratio) theta) / C``
    (``sign(0) = 0``).

    Parameters
    ----------
    l1_ratio : float, default=0.5
        Share of the L1 norm, in ``[0, 1]``: 1 is :class:`LaplacianPrior`,
        0 is :class:`GaussianPrior` (with ``C`` the same).
    feature_dependent : bool, default=False
        If True, weight both terms of parameter ``k`` by ``d_k`` of
        :func:`confidence_weights` (Smith & Osborne 2005, section 3.4).

    Raises
    ------
    ValueError
        From :func:`get_prior` (and so from ``CRFTagger.fit``) if
        ``l1_ratio`` is not in ``[0, 1]``.

    References
    ----------
    H. Zou, T. Hastie (2005). Regularization and variable selection via the
    elastic net. J. R. Statist. Soc. B 67(2), Eq. (6).
    N. Okazaki (2007). CRFsuite: a fast implementation of conditional random
    fields (``c1``, ``c2`` of the ``lbfgs`` training).

    Examples
    --------
    >>> from sklearn_crfloss import CRFTagger
    >>> from sklearn_crfloss.priors import ElasticNetPrior
    >>> c1, c2 = 0.1, 0.1  # sklearn_crfsuite.CRF(c1=0.1, c2=0.1)
    >>> crf = CRFTagger(prior=ElasticNetPrior(l1_ratio=c1 / (c1 + 2 * c2)), C=1 / (c1 + 2 * c2))
    """

    name = "elasticnet"

    _parameter_constraints: dict = {
        "l1_ratio": [Interval(Real, 0, 1, closed="both")],
        "feature_dependent": ["boolean"],
    }

    def __init__(self, l1_ratio=0.5, feature_dependent=False):
        self.l1_ratio = l1_ratio
        self.feature_dependent = feature_dependent

    def __prior_tags__(self):
        # Docstring inherited.
        tags = super().__prior_tags__()
        tags.l1_ratio = self.l1_ratio
        tags.l2_part = True
        return tags

    def value_and_grad(self, theta, C):
        # Docstring inherited.
        r = float(self.l1_ratio)
        d = self._weights(theta.shape[0])
        value, grad = self.smooth_value_and_grad(theta, C)
        return value + r * float(np.sum(d * np.abs(theta))) / C, grad + r * d * np.sign(theta) / C

    def smooth_value_and_grad(self, theta, C):
        """The L2 part alone, the smooth term OWL-QN adds to the loss.

        Parameters
        ----------
        theta : ndarray of float64 of shape (n_params,)
        C : float

        Returns
        -------
        value : float
            ``(1 - l1_ratio) sum_k d_k theta_k^2 / (2 C)``.
        grad : ndarray of shape (n_params,)
        """
        scale = (1.0 - float(self.l1_ratio)) / C
        dtheta = self._weights(theta.shape[0]) * theta
        return scale * float(np.dot(dtheta, theta)) / 2.0, scale * dtheta

    def parametrisation(self, n_params):
        # Docstring inherited: LaplacianPrior's split, the L2 term on z+ - z-.
        par = super().parametrisation(n_params)
        l1_penalty, n, r = par.penalty, n_params, float(self.l1_ratio)

        def penalty(z, C):
            value, grad = l1_penalty(z, C)
            l2_value, l2_grad = self.smooth_value_and_grad(z[:n] - z[n:], C)
            return r * value + l2_value, r * grad + np.concatenate([l2_grad, -l2_grad])

        par.penalty = penalty
        return par


class HyperbolicPrior(BasePrior):
    """Hyperbolic-secant prior (``prior='hyperbolic'``): penalty ``sum_k log cosh(b w_k)``.

    Smith & Osborne (2005), section 3.3: ``LL - sum_k log((e^{b w} + e^{-b w}) / 2)``
    (the ``/ 2`` makes the penalty 0 at 0; it is a constant). At the optimum
    ``E~[f_k] - E_p[f_k] = b tanh(b theta_k)`` (Eq. 4, times ``d_k`` if
    feature-dependent): a discount that grows like the Gaussian's near 0 and
    saturates at ``b`` like the Laplacian's for large weights.

    Relation between beta and C: the paper's ``beta`` is
    ``b = beta / sqrt(C)``. Near 0, ``log cosh(b w) ~ b^2 w^2 / 2``, so with
    ``beta=1`` the prior has the curvature of ``'l2'`` with the same ``C``
    (variance ``C``), and ``C`` stays the strength knob (larger, weaker). With
    ``C = 1``, ``beta`` is exactly the paper's hyperparameter. Computed as
    ``logaddexp(x, -x) - log 2`` (``numpy.logaddexp``), finite for any
    ``|b w|``.

    Parameters
    ----------
    beta : float, default=1.0
        Shape, ``beta > 0``; see above.
    feature_dependent : bool, default=False
        If True, weight the term of parameter ``k`` by ``d_k`` of
        :func:`confidence_weights` (section 3.4).

    Raises
    ------
    ValueError
        From :func:`get_prior` (and so from ``CRFTagger.fit``) if ``beta``
        is not a finite number > 0.

    References
    ----------
    J. Goodman (2004). Exponential priors for maximum entropy models. NAACL.
    A. Smith, M. Osborne (2005), section 3.3.
    """

    name = "hyperbolic"

    _parameter_constraints: dict = {
        "beta": [Interval(Real, 0, None, closed="neither")],
        "feature_dependent": ["boolean"],
    }

    def __init__(self, beta=1.0, feature_dependent=False):
        self.beta = beta
        self.feature_dependent = feature_dependent

    def value_and_grad(self, theta, C):
        # Docstring inherited.
        b = float(self.beta) / np.sqrt(C)
        d = self._weights(theta.shape[0])
        x = b * theta
        log_cosh = np.logaddexp(x, -x) - np.log(2.0)
        return float(np.sum(d * log_cosh)), d * b * np.tanh(x)


class NoPrior(BasePrior):
    """No prior (``prior='none'``): maximum-likelihood training.

    The penalty is 0 and ``C`` is ignored. Without a prior the weights of
    separable features grow until the optimiser's tolerance stops them.
    """

    name = "none"

    def __prior_tags__(self):
        # Docstring inherited.
        tags = super().__prior_tags__()
        tags.zero = True
        return tags

    def value_and_grad(self, theta, C):
        # Docstring inherited.
        return 0.0, np.zeros_like(theta)

    def value_and_add_grad(self, theta, C, out):
        # Docstring inherited: ``out += 0.0`` (as adding zeros: a -0.0 becomes 0.0).
        out += 0.0
        return 0.0


#: Registry of prior names accepted by ``CRFTagger(prior=...)``.
PRIORS = {
    "elasticnet": ElasticNetPrior,
    "hyperbolic": HyperbolicPrior,
    "l1": LaplacianPrior,
    "l2": GaussianPrior,
    "none": NoPrior,
}


@fill_doc(resolver=RESOLVER_DOC.format(what="prior", registry="PRIORS", base="BasePrior"))
def get_prior(prior):
    """Resolve a prior name or object into a validated prior object.

    {resolver}

    Notes
    -----
    The copy of a prior bound to data (``feature_dependent=True``) has no
    ``weights_``: :meth:`BasePrior.bind` sets them again.
    """
    return resolve(prior, PRIORS, "prior")
