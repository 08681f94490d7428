"""Second-order (label-trigram) CRFs: the allowed label pairs, the trigram parameters, the objective.

``CRFTagger(order=2)`` adds to the first-order score a weight
``W3[y_{t-2}, y_{t-1}, y_t]`` per label trigram (Sha & Pereira 2003's
second-order CRF; McDonald et al. 2005). Only label pairs that are allowed
may occur in a sequence (:func:`allowed_label_pairs`), and only the triples
``(a, b, c)`` whose pairs ``(a, b)`` and ``(b, c)`` are both allowed get a
parameter: :class:`SecondOrderLayout` appends them to the flat ``theta``
after the first-order parameters (so that the priors penalise them), and
:class:`SecondOrderObjective` evaluates the conditional log-likelihood (and
softmax-margin, whose cost enters the unary potentials) by exact
second-order forward-backward (:mod:`sklearn_crfloss._chain._trigram`).
"""

import numpy as np

from .._chain import (pair_potentials, PairStates, second_order_forward_backward,
                      second_order_gold_counts)
from ..losses import get_loss_tags
from ._objective import CRFObjective, fused_evaluation
from ._parameters import ParameterLayout

__all__ = ["ORDER_DOC", "SecondOrderLayout", "SecondOrderObjective", "allowed_label_pairs",
           "check_second_order", "second_order_state"]

ORDER_DOC = dict(
    order_parameter="""order : {1, 2}, default=1
    Order of the label chain. ``2``: a second-order (label-trigram)
    CRF, whose score adds ``transition2_[y_{t-2}, y_{t-1}, y_t]`` for
    every ``t >= 2`` (Sha & Pereira 2003), with exact inference over
    label pairs. Only the label pairs seen in the training data may
    follow each other (with ``constraints`` or ``tag_scheme``, those the
    tag scheme allows), and only the label triples made of two such pairs get a
    weight (``allowed_pairs_``). Trains with ``loss='cll'`` or
    ``'softmax_margin'`` and the batch solvers; the other losses, the
    online solvers, ``decoder='mea'``, observation-dependent label
    bigrams, ``early_stopping``, ``warm_start``, ``partial_fit``,
    :meth:`predict_nbest` and :meth:`explain` raise a ``ValueError``
    naming ``order``. See :ref:`crf_second_order`.""",
    order_attributes="""transition2_ : ndarray of shape (n_classes, n_classes, n_classes) or None
    ``order=2``: ``transition2_[i, j, k]`` scores ``classes_[i]``,
    ``classes_[j]``, ``classes_[k]`` in a row (0 for triples that are not
    allowed). None for ``order=1``.
allowed_pairs_ : ndarray of bool of shape (n_classes, n_classes) or None
    ``order=2``: the label pairs that may follow each other. None for
    ``order=1``.""",
)

#: The losses a second-order fit trains (their fused path is the CLL kernel's).
SECOND_ORDER_LOSSES = ("cll", "softmax_margin")


def check_second_order(order, *, loss, solver_tags, decoder, n_bigram, early_stopping,
                       warm):
    """Refuse what a second-order fit does not support, naming ``order`` and the option.

    Parameters
    ----------
    order : int
        The estimator's ``order``; nothing is checked for 1.
    loss : loss object
    solver_tags : SolverTags
        The solver's record.
    decoder : str
    n_bigram : int
        Observation-dependent label-bigram attributes of the layout.
    early_stopping, warm : bool
        ``early_stopping``, and whether the fit continues a previous one.

    Raises
    ------
    ValueError
        For a loss other than CLL and softmax-margin, an online solver,
        ``decoder='mea'``, label-bigram attributes, early stopping or a warm start.
    """
    if order == 1:
        return
    name = get_loss_tags(loss).name
    problems = []
    if name not in SECOND_ORDER_LOSSES:
        problems.append(f"loss={name!r} (use 'cll' or 'softmax_margin')")
    if solver_tags.online:
        problems.append(f"the online solver {solver_tags.name!r} (use a batch solver such "
                        "as 'lbfgs')")
    if decoder != "viterbi":
        problems.append(f"decoder={decoder!r} (use 'viterbi')")
    if n_bigram:
        problems.append("observation-dependent label-bigram attributes")
    if early_stopping:
        problems.append("early_stopping=True")
    if warm:
        problems.append("warm_start=True")
    if problems:
        raise ValueError("order=2 does not support " + "; ".join(problems))


def allowed_label_pairs(y, offsets, n_labels, scheme_allowed=None):
    """The label pairs a second-order model allows: observed ones, or a tag scheme's.

    Parameters
    ----------
    y : ndarray of intp of shape (n_tokens,)
        Gold label indices.
    offsets : ndarray of intp of shape (n_sequences + 1,)
    n_labels : int
    scheme_allowed : ndarray of bool of shape (n_labels, n_labels) or None
        The transitions a tag scheme's constraints allow (``constraints``);
        None: the label bigrams seen in ``y`` (as MALLET's second-order
        CRFs connect only the observed label pairs).

    Returns
    -------
    ndarray of bool of shape (n_labels, n_labels)

    Raises
    ------
    ValueError
        With ``scheme_allowed``, if a training sequence has a bigram the
        scheme forbids (the message names the first such sequence).
    """
    y = np.asarray(y, dtype=np.intp)
    offsets = np.asarray(offsets, dtype=np.intp)
    inner = np.ones(y.shape[0], dtype=bool)
    inner[offsets[:-1][np.diff(offsets) > 0]] = False  # first tokens have no predecessor
    t = np.flatnonzero(inner)
    observed = np.zeros((n_labels, n_labels), dtype=bool)
    observed[y[t - 1], y[t]] = True
    if scheme_allowed is None:
        return observed
    allowed = np.asarray(scheme_allowed, dtype=bool)
    bad = t[~allowed[y[t - 1], y[t]]]
    if bad.shape[0]:
        seq = int(np.searchsorted(offsets, bad[0], side="right") - 1)
        raise ValueError(f"order=2 with constraints: training sequence {seq} has a label "
                         f"bigram that the constraints forbid (token {bad[0] - offsets[seq]})")
    return allowed.copy()


class SecondOrderLayout(ParameterLayout):
    """A first-order layout with the allowed label-trigram weights appended to ``theta``.

    Parameters
    ----------
    base : ParameterLayout
        The first-order layout (its parameters come first, unchanged).
    allowed : ndarray of bool of shape (n_labels, n_labels)
        The allowed label pairs; triple ``(a, b, c)`` gets a parameter when
        ``(a, b)`` and ``(b, c)`` are allowed.

    Attributes
    ----------
    states : PairStates
        The allowed pairs and triples.
    n_first_order : int
        Parameters of ``base`` (the first entries of ``theta``).
    n_params : int
        ``n_first_order`` plus the number of allowed triples.
    """

    order = 2

    def __init__(self, base, allowed):  # pylint: disable=super-init-not-called
        self.__dict__.update(vars(base))
        self.states = PairStates(np.asarray(allowed, dtype=bool))
        self.n_first_order = base.n_params
        self.n_params = base.n_params + self.states.n_triples

    def unpack_tail(self, theta):
        # Docstring inherited (the trigram weights are not part of the tail).
        return super().unpack_tail(theta[:self.n_first_order])

    def trigram(self, theta):
        """The label-trigram weights of ``theta`` as an (L, L, L) array (0 where not allowed)."""
        L = self.n_labels
        out = np.zeros(L ** 3)
        out[self.states.triple_index] = theta[self.n_first_order:]
        return out.reshape(L, L, L)

    def pack(self, W, transition, start, end, trigram=None):
        """The flat ``theta``; ``trigram`` (L, L, L) or None (zeros) fills the trigram block."""
        first = super().pack(W, transition, start, end)
        tri = (np.zeros(self.states.n_triples) if trigram is None
               else np.asarray(trigram, dtype=np.float64).ravel()[self.states.triple_index])
        return np.concatenate([first, tri])


def second_order_state(layout, theta):
    """The fitted ``transition2_`` and ``allowed_pairs_`` (None, None for a first-order layout).

    Parameters
    ----------
    layout : ParameterLayout or SecondOrderLayout
    theta : ndarray of float64 of shape (layout.n_params,)

    Returns
    -------
    transition2 : ndarray of shape (n_labels, n_labels, n_labels) or None
    allowed : ndarray of bool of shape (n_labels, n_labels) or None
    """
    if layout.order == 2:
        return layout.trigram(theta), layout.states.allowed.copy()
    return None, None


class SecondOrderObjective(CRFObjective):
    """The training objective of a second-order CRF (CLL and softmax-margin).

    Parameters as :class:`~sklearn_crfloss._model._objective.CRFObjective`,
    with a :class:`SecondOrderLayout`. The losses' fused evaluations reach
    :meth:`cll_value_and_grad`, which runs the second-order forward-backward
    on ``U = X @ W`` (plus softmax-margin's cost columns) and takes the
    state-weight gradient ``X.T @ (weighted marginals)`` through the
    feature kernel; a loss without such a path is refused.
    """

    @property
    def n_blocks(self):
        """0: the per-block sums of the first-order kernel are not available."""
        return 0

    def observed_counts(self):
        # Docstring inherited (the gold trigram counts fill the trigram block).
        if self._observed is None:
            observed = super().observed_counts()
            gold = second_order_gold_counts(self.y, self.offsets, self.n_labels,
                                            self.sample_weight)
            observed[self.layout.n_first_order:] = gold.ravel()[self.layout.states.triple_index]
        return self._observed

    def cll_value_and_grad(self, theta, extra_columns=None, out=None):
        # Docstring inherited.
        layout = self.layout
        if extra_columns is None:
            unary = self.potentials(theta)[0]
        else:  # softmax-margin: U + cost(y*_t, .) from the cost-widened features
            _, w, W_hot = self.kernel_weights(theta)
            W_wide, _ = extra_columns.weights(W_hot, np.zeros((1, 1, 1)))
            unary = np.empty((self.n_tokens, self.n_labels))
            pair_potentials(*extra_columns.csr, extra_columns.code, w, W_wide, unary,
                            self.n_threads)
        transition, start, end = layout.unpack_tail(theta)
        weights = self.sequence_weights()
        fb = second_order_forward_backward(unary, transition, layout.trigram(theta), start, end,
                                           self.offsets, layout.states, weights, self.n_threads)
        observed = self.observed_counts()
        value = float(np.dot(weights, fb.log_z)) - float(np.dot(theta, observed))
        grad = np.empty(self.n_params) if out is None else out
        d_unary = fb.marginals
        d_unary *= np.repeat(weights, np.diff(self.offsets))[:, None]
        self.state_gradient(d_unary, grad[:layout.n_state])
        tail = layout.pack_tail(fb.transition_counts, fb.start_counts, fb.end_counts)
        grad[layout.n_state:layout.n_first_order] = tail
        grad[layout.n_first_order:] = fb.trigram_counts.ravel()[layout.states.triple_index]
        grad -= observed
        return value, grad

    def loss_value_and_grad(self, theta, loss, out=None):
        # Docstring inherited: the loss's fused path (CLL's kernel) or an error.
        tags = get_loss_tags(loss)
        if tags.fused_evaluation:
            fused = fused_evaluation(loss, tags, self, theta, out)
            if fused is not None:
                return fused
        raise ValueError(f"order=2 does not support loss={tags.name!r} (use "
                         "'cll' or 'softmax_margin')")
