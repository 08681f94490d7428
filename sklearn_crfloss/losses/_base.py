"""Base class of training losses: the contract every loss implements."""

from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator

from .._utils import RECORD_METHOD_DOC, RECORD_NAME_DOC, declared_record, fill_doc
from ..inference import inner_positions

__all__ = ["BaseLoss", "LossTags", "get_loss_tags"]


class BaseLoss(BaseEstimator):
    """Base class of CRF training losses.

    A loss sees only potentials, never features: the objective computes the
    unary potentials ``U = X @ W``, calls :meth:`value_and_grad` on the whole
    training batch, and applies the chain rule ``dW = X.T @ dU`` and the prior
    itself. Because the whole batch is handed over, a loss may be a sum over
    sequences (most are) or a function of corpus-level sums (an F-score).

    Hyperparameters are ``__init__`` arguments stored unchanged, so
    ``get_params``/``set_params`` work and ``GridSearchCV`` reaches them as
    ``loss__<name>`` through :class:`~sklearn_crfloss.CRFTagger`.

    Their ranges are declared in the class attribute
    ``_parameter_constraints`` (scikit-learn's constraints: ``Interval``,
    ``StrOptions``, ...) and checked once, when the loss is resolved for
    training: :func:`~sklearn_crfloss.losses.get_loss` (which
    :meth:`CRFTagger.fit <sklearn_crfloss.CRFTagger.fit>` calls) returns a
    validated copy and raises a ValueError naming the parameter otherwise.
    :meth:`value_and_grad` does not check them again: call it on the result
    of ``get_loss(loss)``. Checks that need the data (shapes, label names)
    stay in :meth:`value_and_grad`.

    Attributes
    ----------
    name : str
        The registry name (``CRFTagger(loss=name)``).

    What a loss is (convex, smooth, its default solver, ...) is declared in
    one record, :class:`LossTags`, which :meth:`__loss_tags__` returns and
    which training reads through :func:`get_loss_tags`, as scikit-learn's
    ``__sklearn_tags__`` is for estimators. A subclass changes the fields
    that differ from its parent's:

    >>> from sklearn_crfloss.losses import BaseLoss, get_loss_tags
    >>> class MyLoss(BaseLoss):
    ...     name = "my_loss"
    ...     def __loss_tags__(self):
    ...         tags = super().__loss_tags__()
    ...         tags.convex = False
    ...         return tags
    >>> get_loss_tags(MyLoss()).convex
    False

    The estimator reads nothing else from a loss but this record and
    :meth:`value_and_grad` (and :meth:`set_classes` when the record's
    ``needs_classes`` is set, :meth:`fused_value_and_grad` when its
    ``fused_evaluation`` is, ``value_and_grad_trusted`` when its
    ``trusted_evaluation`` is).

    A loss may also own a **fused evaluation**, a compiled kernel on the
    training features that builds no (n_tokens, n_labels) array: the
    objective asks :meth:`fused_value_and_grad` before it computes the
    potentials (see ``losses/_fused.py``).

    A loss may also declare its **definition by enumeration**, a slow
    reference that :func:`~sklearn_crfloss.losses.check_loss` compares
    :meth:`value_and_grad` with on tiny chains: the loss of one sequence
    from the scores of all its label sequences (:meth:`enumerated_loss`),
    or, for a loss that is not a sum over sequences (an F-score), of the
    whole batch (:meth:`enumerated_batch_loss`). Training never calls them.

    Notes
    -----
    Labels reach a loss as integer indices. A loss that needs the label
    names (e.g. to decode segments with
    :func:`sklearn_crfloss.segments.get_segments`) reads them from
    ``classes_``: :class:`~sklearn_crfloss.CRFTagger` calls
    :meth:`set_classes` with its sorted ``classes_`` before training (on a
    clone of a loss object passed by the user, which stays unchanged), and
    ``y[t] == k`` means label ``classes_[k]``.
    """

    _parameter_constraints: dict = {}

    name = None

    @fill_doc(record_method=RECORD_METHOD_DOC.format(method="__loss_tags__", record="LossTags"))
    def __loss_tags__(self):
        """The loss's declared capabilities (see :class:`LossTags`).

        {record_method}
            Here: ``name`` from the class attribute, ``convex=True``,
            ``needs_classes=True``, ``fused_evaluation=True``, ``stages``
            from :meth:`stages`, and the other fields at their defaults.

        Raises
        ------
        ValueError
            If :meth:`stages` refuses the loss's schedule.
        """
        return LossTags(name=self.name, convex=True, needs_classes=True, fused_evaluation=True,
                        stages=self.stages())

    def fused_value_and_grad(self, objective, theta):
        """The loss and its gradient in the parameters by a fused kernel, or None.

        Called by :meth:`CRFObjective.loss_value_and_grad
        <sklearn_crfloss._model.CRFObjective.loss_value_and_grad>` before the
        general path (potentials, :meth:`value_and_grad`, chain rule). A loss
        with a compiled kernel on the features overrides it (see
        ``losses/_fused.py``), for its own class only: a subclass may change
        :meth:`value_and_grad`.

        Parameters
        ----------
        objective : CRFObjective
            The bound training data, read through its public members.
        theta : ndarray of float64 of shape (n_params,)

        Returns
        -------
        (float, ndarray of shape (n_params,)) or None
            The value (no prior) and its gradient, or None: here, always
            (the general path).
        """
        return None

    def stages(self):
        """The losses to train in turn, each from the last one's solution.

        An annealing schedule (e.g. the labelwise loss with a list of
        sharpness values ``alpha``) returns one loss per stage.

        Returns
        -------
        list of loss objects
            ``[self]`` by default.
        """
        return [self]

    def set_classes(self, classes):
        """Tell the loss the label name of every label index.

        Called by :meth:`CRFTagger.fit <sklearn_crfloss.CRFTagger.fit>`
        before training; any loss may use the names.

        Parameters
        ----------
        classes : array-like of shape (n_labels,)
            ``classes[k]`` is the name of label index ``k``.

        Returns
        -------
        self : BaseLoss
        """
        self.classes_ = np.asarray(classes)
        return self

    def enumerated_loss(self, paths, scores, gold, token_weight=None):
        """The loss of one sequence from its definition, by enumeration.

        A reference, not used in training: the loss written directly from
        its definition on the distribution ``p(y | x)``, with every label
        sequence ``y`` of the chain and its score at hand.
        :func:`~sklearn_crfloss.losses.check_loss` compares
        :meth:`value_and_grad` with it on tiny chains (at most a few hundred
        label sequences). Override it in a loss that is a weighted sum over
        sequences; a loss of corpus-level sums overrides
        :meth:`enumerated_batch_loss` instead.

        Parameters
        ----------
        paths : ndarray of intp of shape (n_labels ** length, length)
            Every label sequence of the chain, in lexicographic order
            (``itertools.product(range(n_labels), repeat=length)``), so
            ``paths[-1, 0] + 1`` is ``n_labels``.
        scores : ndarray of float64 of shape (n_labels ** length,)
            ``score(paths[k])`` under the potentials (start, unary,
            transitions, end; :doc:`/user_guide/crf`), so that
            ``p(paths[k] | x) = exp(scores[k]) / sum(exp(scores))``.
        gold : ndarray of intp of shape (length,)
            The gold label index of every token (one of the rows of
            ``paths``).
        token_weight : ndarray of float64 of shape (length,), default=None
            Per-token weights, passed only to a loss with
            ``supports_token_weight = True``; ``None`` means 1.

        Returns
        -------
        float
            The loss of this sequence, not multiplied by its
            ``sample_weight``.

        Raises
        ------
        NotImplementedError
            Here, in the base class: the loss declares no definition by
            enumeration (:func:`~sklearn_crfloss.losses.check_loss` then
            skips the value check and reports it).

        Examples
        --------
        The conditional log-likelihood, ``log Z - score(gold)``:

        >>> import numpy as np
        >>> from scipy.special import logsumexp
        >>> from sklearn_crfloss.losses import BaseLoss
        >>> class MyCLL(BaseLoss):
        ...     def enumerated_loss(self, paths, scores, gold, token_weight=None):
        ...         is_gold = np.all(paths == gold, axis=1)
        ...         return float(logsumexp(scores) - scores[is_gold][0])
        >>> paths = np.array([[0], [1]])
        >>> round(MyCLL().enumerated_loss(paths, np.array([0.0, 0.0]), np.array([1])), 4)
        0.6931
        """
        raise NotImplementedError(
            f"{type(self).__name__} declares no definition by enumeration "
            "(BaseLoss.enumerated_loss)")

    def enumerated_batch_loss(self, paths, scores, gold, sample_weight=None,
                              token_weight=None):
        """The loss of a batch of sequences from its definition, by enumeration.

        By default ``sum_i sample_weight[i] * enumerated_loss(paths[i],
        scores[i], gold[i], token_weight[i])``. A loss that is not a sum over
        sequences (a ratio of corpus-level sums such as
        :class:`~sklearn_crfloss.losses.SegmentFScoreMCE`) overrides this
        method instead of :meth:`enumerated_loss`.

        Parameters
        ----------
        paths, scores, gold : list of ndarray, one entry per sequence
            As in :meth:`enumerated_loss`, for each sequence of the batch.
        sample_weight : ndarray of shape (n_sequences,), default=None
            Per-sequence weights; ``None`` means 1.
        token_weight : list of ndarray or None, default=None
            Per-token weights of each sequence (only for a loss with
            ``supports_token_weight``); ``None`` means 1.

        Returns
        -------
        float
            The loss of the batch, to be compared with the value of
            :meth:`value_and_grad` on the same potentials.

        Raises
        ------
        NotImplementedError
            If the loss declares no definition by enumeration.
        """
        n_seq = len(paths)
        w = np.ones(n_seq) if sample_weight is None else np.asarray(sample_weight, float)
        total = 0.0
        for i in range(n_seq):
            extra = {} if token_weight is None else {"token_weight": token_weight[i]}
            total += w[i] * self.enumerated_loss(paths[i], scores[i], gold[i], **extra)
        return float(total)

    def value_and_grad(self, unary, transition, start, end, y, offsets,
                       sample_weight=None, n_threads=1):
        """Loss value and its gradient with respect to the potentials.

        Parameters
        ----------
        unary : ndarray of float64 of shape (n_tokens, n_labels)
            Unary potentials of all tokens of the batch, C-contiguous.
        transition : ndarray of float64 of shape (n_labels, n_labels)
            Transition potentials.
        start, end : ndarray of float64 of shape (n_labels,)
            Start and end potentials.
        y : ndarray of intp of shape (n_tokens,)
            Gold label index of every token.
        offsets : ndarray of intp of shape (n_sequences + 1,)
            Sequence boundaries; every sequence is non-empty.
        sample_weight : ndarray of shape (n_sequences,), default=None
            Per-sequence weights; ``None`` means 1.
        n_threads : int, default=1
            Threads the kernels may use.

        Returns
        -------
        value : float
            The loss (to be minimised), summed (not averaged) over sequences.
        d_unary : ndarray of shape (n_tokens, n_labels)
        d_transition : ndarray of shape (n_labels, n_labels)
        d_start, d_end : ndarray of shape (n_labels,)
            Gradients of ``value`` with respect to each potential.
        """
        raise NotImplementedError


@fill_doc(record_name=RECORD_NAME_DOC.format(what="loss"))
@dataclass
class LossTags:
    """The capabilities of a loss that training reads (``BaseLoss.__loss_tags__``).

    {record_name}
    convex : bool, default=False
        Whether the loss is convex in the parameters
        (:func:`~sklearn_crfloss.losses.check_loss` then checks it along
        random lines). :class:`BaseLoss` declares True.
    smooth : bool, default=True
        Whether it is differentiable everywhere. The ``'lbfgs'`` solver
        refuses a loss that is not, unless the loss names it as its
        ``default_solver`` or ``needs_init`` is set (MCE: smooth but at ties
        of its best incorrect output).
    needs_init : bool, default=False
        Whether training should start from a CLL fit (``init='cll'``):
        :class:`~sklearn_crfloss.CRFTagger` warns when such a loss that is
        not smooth starts L-BFGS from zero.
    default_solver : str, default='lbfgs'
        The solver of :data:`sklearn_crfloss.solvers.SOLVERS` used when the
        estimator's ``solver`` is None. A loss whose default is a
        mistake-driven rule (``'perceptron'``, ``'mira'``) accepts no other.
    supports_token_weight : bool, default=False
        Whether ``value_and_grad`` accepts ``token_weight=`` (per-token
        weights, ``CRFTagger.fit(token_weight=...)``); the objective passes
        them only to such losses.
    additive : bool, default=True
        Whether the value is a sum over sequences (of ``sample_weight``
        times the loss of each), so that the loss of a batch is the sum of
        the losses of its parts. :class:`~sklearn_crfloss.dask.DaskCRFTagger`
        sums the parts held by its workers and refuses a loss that is not
        (a ratio of corpus-level sums such as an F-score).
    needs_classes : bool, default=False
        Whether training calls ``set_classes(classes)`` (the label names)
        before the first evaluation. :class:`BaseLoss` declares True.
    stages : list of loss objects or None, default=None
        The losses to train in turn, each from the last one's solution (an
        annealing schedule); None: the loss itself, one stage.
    fused_evaluation : bool, default=False
        Whether the objective asks ``loss.fused_value_and_grad(objective,
        theta)`` first (a compiled kernel on the features; None: the general
        path). :class:`BaseLoss` declares True (its method returns None).
    trusted_evaluation : bool, default=False
        Whether the loss has ``value_and_grad_trusted``, ``value_and_grad``
        on potentials, labels and offsets that a solver built from checked
        data (C-contiguous, of the right dtypes), which it does not check
        again; the SGD solver's minibatch path calls it then
        (:class:`SegmentFScoreMCE`).
    label_bigrams : bool, default=False
        Whether ``value_and_grad`` takes observation-dependent label bigrams
        (a :class:`~sklearn_crfloss.inference.PositionTransitions` as
        ``transition``); training refuses bigram attributes otherwise.
        Declared by the registered losses for their exact class (a subclass
        may change ``value_and_grad``).
    cll_blocks : bool, default=False
        Whether the loss is the conditional log-likelihood that the
        objective's fused kernel evaluates (exactly
        :class:`ConditionalLogLikelihood`): its per-block sums
        (``CRFObjective.cll_blocks``) let
        :class:`~sklearn_crfloss.dask.DaskCRFTagger` add the workers' parts
        as one process does.
    sgd_step : {'sum', 'max'} or None, default=None
        The compiled per-sequence step of :class:`~sklearn_crfloss.solvers.SGD`
        that gives this loss's gradient: ``'sum'`` forward-backward (the
        log-likelihood, softmax-margin), ``'max'`` Viterbi (max-margin), on
        the unary potentials plus the rows of ``sgd_cost``; None: the
        generic minibatch path through ``value_and_grad``. Exact classes
        only; a cost-sensitive loss declares it once ``set_classes`` has
        set its ``cost_matrix_``.
    sgd_cost : ndarray of shape (n_labels, n_labels) or None, default=None
        The cost the compiled step adds (``cost_matrix_``); None: none.
    reports_saturation : bool, default=False
        Whether the loss has ``saturation_`` (None until ``value_and_grad``
        has run in this process, which sets it): the weighted share of
        terms whose smoothed loss has almost no gradient (the MCE losses).
        Training warns when a stage starts mostly saturated.
    for_start : bool, default=False
        Whether a setting of the loss depends on where training starts
        (MCE-F's ``beta='auto'``): training then trains
        ``loss.for_start(from_zero)``, the loss resolved for a start from
        zero parameters or from a fit.
    fused_out : bool, default=False
        Whether ``fused_value_and_grad`` takes ``out=`` (an ndarray of
        float64 of shape (n_params,), or None): the gradient is then written
        into ``out`` and ``out`` is returned, so that training writes it
        straight into the solver's own vector (no array of ``n_params``
        per evaluation). Declared by
        :class:`~sklearn_crfloss.losses.ConditionalLogLikelihood` for its
        exact class.
    """

    name: str = None
    convex: bool = False
    smooth: bool = True
    needs_init: bool = False
    default_solver: str = "lbfgs"
    supports_token_weight: bool = False
    additive: bool = True
    needs_classes: bool = False
    stages: list = field(default=None, repr=False)
    fused_evaluation: bool = False
    trusted_evaluation: bool = False
    label_bigrams: bool = False
    cll_blocks: bool = False
    sgd_step: str = None
    sgd_cost: object = field(default=None, repr=False, compare=False)
    reports_saturation: bool = False
    for_start: bool = False
    fused_out: bool = False


def get_loss_tags(loss):
    """The declared capabilities of a loss: ``loss.__loss_tags__()``.

    The one place where the defaults of a loss object that declares no
    record (an object with ``value_and_grad`` only) are set.

    Parameters
    ----------
    loss : loss object
        A :class:`BaseLoss` or any object with ``value_and_grad``.

    Returns
    -------
    LossTags
        Its ``stages`` always a non-empty list (``[loss]`` for one stage).

    Raises
    ------
    ValueError
        If the loss's schedule of stages is invalid.

    Examples
    --------
    >>> from sklearn_crfloss.losses import get_loss, get_loss_tags
    >>> tags = get_loss_tags(get_loss("mce"))
    >>> tags.smooth, tags.needs_init, tags.default_solver
    (False, True, 'suzuki2006')
    """
    tags = declared_record(loss, "__loss_tags__", lambda loss: LossTags())
    if tags.stages is None:
        tags.stages = [loss]
    return tags


def gold_counts(y, offsets, n_labels, sample_weight=None):
    """Weighted empirical counts of the gold label sequences.

    Parameters
    ----------
    y : ndarray of intp of shape (n_tokens,)
    offsets : ndarray of intp of shape (n_sequences + 1,)
        Boundaries of non-empty sequences.
    n_labels : int
    sample_weight : ndarray of shape (n_sequences,), default=None

    Returns
    -------
    token_weight : ndarray of shape (n_tokens,) or None
        The weight of every token's sequence (None when unweighted).
    transition : ndarray of shape (n_labels, n_labels)
    start, end : ndarray of shape (n_labels,)
        Counts of gold transitions, first labels and last labels.
    """
    lengths = np.diff(offsets)
    inner = inner_positions(offsets, y.shape[0])
    if sample_weight is None:
        token_weight = None
        w_inner = None
        w_seq = None
    else:
        token_weight = np.repeat(sample_weight, lengths)
        w_inner = token_weight[inner]
        w_seq = sample_weight
    transition = np.bincount(
        y[inner - 1] * n_labels + y[inner], weights=w_inner, minlength=n_labels * n_labels
    ).reshape(n_labels, n_labels).astype(np.float64)
    start = np.bincount(y[offsets[:-1]], weights=w_seq, minlength=n_labels).astype(np.float64)
    end = np.bincount(y[offsets[1:] - 1], weights=w_seq, minlength=n_labels).astype(np.float64)
    return token_weight, transition, start, end


def enumerated_gold_score(paths, scores, gold):
    """``score(gold)``: the entry of ``scores`` whose row of ``paths`` is ``gold``.

    A helper of the definitions by enumeration
    (:meth:`BaseLoss.enumerated_loss`).
    """
    return float(scores[np.all(paths == gold, axis=1)][0])


def enumerated_marginals(paths, scores):
    """Node marginals ``p(y_t = j | x)`` of one chain by summing over its paths.

    Returns
    -------
    ndarray of shape (length, n_labels)
        A helper of the definitions by enumeration
        (:meth:`BaseLoss.enumerated_loss`).
    """
    n_labels = int(paths[-1, 0]) + 1
    prob = np.exp(scores - logsumexp(scores))
    return np.array([np.bincount(paths[:, t], weights=prob, minlength=n_labels)
                     for t in range(paths.shape[1])])
