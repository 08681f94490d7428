"""Decoders and decode-time constraints of :class:`~sklearn_crfloss.CRFTagger`.

A decoder turns potentials into one label sequence per input sequence;
a constraint forbids label transitions at decode time. Both are registries
(seqlearn's ``DECODERS`` is the model): ``CRFTagger(decoder=name,
constraints=name)`` looks the name up in :data:`DECODERS` and
:data:`CONSTRAINTS`.

- ``'viterbi'``: the most probable label sequence (max-product).
- ``'mea'``: maximum expected accuracy, the label of highest marginal
  probability at each position (Gross et al. 2006, Eq. (2)); with
  constraints, the allowed path of maximum ``sum_t log p(y_t | x)``.
- ``'iob2'``: ``I-X`` may only follow ``B-X`` or ``I-X`` and may not start a
  sequence.
- ``'iobes'``, ``'bilou'``: ``I-X`` and ``E-X`` (``L-X``) only after ``B-X``
  or ``I-X``, which only ``I-X`` or ``E-X`` (``L-X``) may follow; a sequence
  starts with ``O``, ``B`` or ``S`` (``U``) and ends with ``O``, ``E``
  (``L``) or ``S`` (``U``).

:func:`nbest_decode` lists the ``n_best`` highest-scoring sequences (the
first is Viterbi's), under the same constraints.

To add a decoder: a function with the signature of :func:`viterbi_decode`,
registered in :data:`DECODERS`; a constraint: a function of the labels
returning the allowed transitions and first labels, registered in
:data:`CONSTRAINTS`.
"""

from functools import partial

import numpy as np

from ._utils import fill_doc, resolve, validate_parameter_constraints
from .inference import (forward_backward, PositionTransitions, second_order_viterbi, viterbi,
                        viterbi_nbest)
from .segments import split_label

__all__ = ["CONSTRAINTS", "DECODERS", "apply_allowed", "check_decoding", "decode", "get_allowed",
           "iob2_allowed", "iobes_allowed", "mea_decode", "nbest_decode", "second_order_decode",
           "viterbi_decode"]


# The potentials' parameters of the decoders, documented once.
_POTENTIALS = """unary : ndarray of float64 of shape (n_tokens, n_labels)
    Unary potentials of all tokens, the sequences laid end to end.
transition : ndarray of shape (n_labels, n_labels)
    ``transition[i, j]`` scores label ``i`` followed by label ``j``.
start, end : ndarray of shape (n_labels,)
    Potentials of the first and of the last label of a sequence.
offsets : ndarray of intp of shape (n_sequences + 1,)
    Sequence boundaries (CSR ``indptr`` style)."""


def apply_allowed(transition, start, allowed):
    """Transition and start potentials with ``-inf`` where ``allowed`` forbids.

    Parameters
    ----------
    transition : ndarray of shape (n_labels, n_labels) or PositionTransitions
        Transition potentials (position-dependent ones: every matrix of
        the table gets the constraint).
    start : ndarray of shape (n_labels,)
        Potentials of the first label.
    allowed : tuple (allowed_transitions, allowed_start[, allowed_end]) or None
        Boolean arrays of shapes (n_labels, n_labels) and (n_labels,) (and
        (n_labels,), the allowed last labels, which the decoders apply to
        the end potentials), as returned by a constraint of
        :data:`CONSTRAINTS`; None allows all.

    Returns
    -------
    transition, start : ndarray
        New arrays (the inputs themselves when ``allowed`` is None).

    Raises
    ------
    ValueError
        If the shapes of ``allowed`` do not match the potentials' number of
        labels.
    """
    if allowed is None:
        return transition, start
    by_position = isinstance(transition, PositionTransitions)
    shared = np.asarray(transition.table[0] if by_position else transition, dtype=np.float64)
    start = np.asarray(start, dtype=np.float64)
    if (len(allowed) not in (2, 3) or np.shape(allowed[0]) != shared.shape
            or any(np.shape(a) != start.shape for a in allowed[1:])):
        raise ValueError(
            f"allowed must be two boolean arrays of shapes {shared.shape} and "
            f"{start.shape} (one row and column per label; a third of shape {start.shape} "
            f"for the allowed last labels), got shapes {tuple(np.shape(a) for a in allowed)}")
    forbid = np.where(allowed[0], 0.0, -np.inf)
    start = start + np.where(allowed[1], 0.0, -np.inf)
    if by_position:  # every matrix of the table
        return transition._replace(table=np.asarray(transition.table, np.float64) + forbid), start
    return shared + forbid, start


def _allowed_end(end, allowed):
    """``end`` with ``-inf`` where a constraint's third array (allowed last labels) forbids."""
    if allowed is None or len(allowed) < 3:
        return end
    return end + np.where(allowed[2], 0.0, -np.inf)


@fill_doc(potentials=_POTENTIALS)
def viterbi_decode(unary, transition, start, end, offsets, allowed=None, n_threads=1):
    """Viterbi paths and their scores, among the allowed paths.

    Parameters
    ----------
    {potentials}
    allowed : tuple (allowed_transitions, allowed_start[, allowed_end]) or None, default=None
        Boolean arrays of shapes (n_labels, n_labels), (n_labels,) and
        optionally (n_labels,); a forbidden transition, first or last label
        gets a ``-inf`` potential.
    n_threads : int, default=1
        OpenMP threads over sequences.

    Returns
    -------
    path : ndarray of intp of shape (n_tokens,)
        Label index of every token.
    score : ndarray of shape (n_sequences,)
        The unnormalised log-probability ``score(y)`` of each path.
    """
    end = _allowed_end(end, allowed)
    transition, start = apply_allowed(transition, start, allowed)
    return viterbi(unary, transition, start, end, offsets, n_threads=n_threads)


@fill_doc(potentials=_POTENTIALS)
def nbest_decode(unary, transition, start, end, offsets, n_best, allowed=None, n_threads=1):
    """The ``n_best`` highest-scoring allowed paths of each sequence, best first.

    Parameters
    ----------
    {potentials}
    n_best : int
        Number of paths per sequence, ``>= 1``.
    allowed : tuple (allowed_transitions, allowed_start) or None, default=None
        As for :func:`viterbi_decode`.
    n_threads : int, default=1
        OpenMP threads over sequences.

    Returns
    -------
    paths : ndarray of intp of shape (k, n_tokens)
        ``paths[m]``: the ``m``-th best path of every sequence (0 where a
        sequence has fewer than ``m + 1`` allowed paths);
        ``k = min(n_best, n_labels ** max_length)``.
    scores : ndarray of shape (n_sequences, k)
        ``score(paths[m])``, non-increasing along a row, ``-inf`` past the
        number of allowed paths; the first column is :func:`viterbi_decode`'s.

    Raises
    ------
    ValueError
        If ``n_best < 1`` (see :func:`sklearn_crfloss.inference.viterbi_nbest`).
    """
    end = _allowed_end(end, allowed)
    transition, start = apply_allowed(transition, start, allowed)
    return viterbi_nbest(unary, transition, start, end, offsets, n_best, n_threads=n_threads)


def mea_decode(unary, transition, start, end, offsets, allowed=None, n_threads=1):
    """Maximum expected accuracy paths (Gross et al. 2006, Eq. (2)).

    Parameters
    ----------
    unary, transition, start, end, offsets, allowed, n_threads
        As for :func:`viterbi_decode`.

    Returns
    -------
    path : ndarray of intp of shape (n_tokens,)
        The per-position argmax of the marginals, or with ``allowed`` the
        allowed path of maximum ``sum_t log p(y_t | x)``.
    score : ndarray of shape (n_sequences,)
        Its expected number of correct labels ``sum_t p(y_t | x)``.
    """
    marg = forward_backward(unary, transition, start, end, offsets,
                            n_threads=n_threads).marginals
    offsets = np.asarray(offsets, dtype=np.intp)
    if allowed is None:
        path = np.argmax(marg, axis=1)
    else:
        L = marg.shape[1]
        path, _ = viterbi_decode(np.log(np.maximum(marg, 1e-300)), np.zeros((L, L)),
                                 np.zeros(L), np.zeros(L), offsets, allowed, n_threads)
    n_seq = offsets.shape[0] - 1
    seq_id = np.repeat(np.arange(n_seq), np.diff(offsets))
    score = np.bincount(seq_id, weights=marg[np.arange(path.shape[0]), path], minlength=n_seq)
    return path, score


def iob2_allowed(classes):
    """Allowed transitions and first labels under IOB2.

    ``I-X`` may follow only ``B-X`` or ``I-X`` and may not start a sequence.

    Parameters
    ----------
    classes : array-like of str of shape (n_labels,)

    Returns
    -------
    allowed_transitions : ndarray of bool of shape (n_labels, n_labels)
    allowed_start : ndarray of bool of shape (n_labels,)

    Raises
    ------
    ValueError
        If a label is not ``'O'``, ``'B-<type>'`` or ``'I-<type>'``, or a
        label ``I-X`` has no ``B-X`` among the labels (no allowed sequence
        could carry it), or there are no labels.
    """
    classes = classes.tolist() if isinstance(classes, np.ndarray) else list(classes)
    parsed = []
    for label in classes:
        prefix, typ = split_label(label)
        if not (label == "O" or (prefix in ("B", "I") and typ)):
            raise ValueError(
                f"constraints='iob2' needs labels 'O', 'B-<type>' or 'I-<type>', got {label!r}"
            )
        parsed.append((prefix, typ))
    begins = {typ for prefix, typ in parsed if prefix == "B"}
    orphans = [label for label, (prefix, typ) in zip(classes, parsed)
               if prefix == "I" and typ not in begins]
    if orphans or not parsed:
        raise ValueError(
            "constraints='iob2' lets 'I-<type>' follow only 'B-<type>' or 'I-<type>', but "
            + (f"the labels {orphans} have no 'B-' label of their type: "
               "no allowed sequence could carry them. Label the data in IOB2 (every chunk "
               "starts with 'B-'), or use constraints=None." if orphans
               else "there are no labels."))
    L = len(parsed)
    allowed = np.ones((L, L), dtype=bool)
    start = np.ones(L, dtype=bool)
    for j, (pj, tj) in enumerate(parsed):
        if pj == "I":
            start[j] = False
            for i, (pi, ti) in enumerate(parsed):
                allowed[i, j] = pi in ("B", "I") and ti == tj
    return allowed, start


def iobes_allowed(classes, scheme="iobes"):
    """Allowed transitions, first and last labels under IOBES (or BILOU).

    ``I-X`` and ``E-X`` may follow only ``B-X`` or ``I-X``, which may be
    followed only by ``I-X`` or ``E-X``; a sequence may not start with
    ``I`` or ``E`` nor end with ``B`` or ``I``. With ``scheme="bilou"``
    the prefixes ``L`` and ``U`` stand for ``E`` and ``S``.

    Parameters
    ----------
    classes : array-like of str of shape (n_labels,)
    scheme : {"iobes", "bilou"}, default="iobes"

    Returns
    -------
    allowed_transitions : ndarray of bool of shape (n_labels, n_labels)
    allowed_start : ndarray of bool of shape (n_labels,)
    allowed_end : ndarray of bool of shape (n_labels,)

    Raises
    ------
    ValueError
        If a label is not ``'O'`` or ``<prefix>-<type>`` with a prefix of
        the scheme.
    """
    parsed = [split_label(label, scheme) for label in classes]
    inside = "I" + ("L" if scheme == "bilou" else "E")  # the labels that continue a chunk
    open_ = np.array([p in ("B", "I") for p, _ in parsed], dtype=bool)
    cont = np.array([p in inside for p, _ in parsed], dtype=bool)
    types = np.array([t for _, t in parsed], dtype=object)
    same = types[:, None] == types[None, :]
    allowed = np.where(cont[None, :], open_[:, None] & same, ~open_[:, None])
    return allowed, ~cont, ~open_


#: Registry of decoder names accepted by ``CRFTagger(decoder=...)``.
DECODERS = {"viterbi": viterbi_decode, "mea": mea_decode}

#: Registry of constraint names accepted by ``CRFTagger(constraints=...)``.
CONSTRAINTS = {"iob2": iob2_allowed, "iobes": iobes_allowed,
               "bilou": partial(iobes_allowed, scheme="bilou")}


def decode(decoder, constraints, classes, unary, transition, start, end, offsets, n_threads=1):
    """Decode with registered names: the paths (label indices) and their scores.

    Parameters
    ----------
    decoder : str or callable
        A key of :data:`DECODERS` (or a function with the signature of
        :func:`viterbi_decode`).
    constraints : str, callable or None
        A key of :data:`CONSTRAINTS` (or a function with the signature of
        :func:`iob2_allowed`), or None.
    classes : array-like of shape (n_labels,)
        Label names (read by the constraints).
    unary, transition, start, end, offsets, n_threads
        As for :func:`viterbi_decode`.

    Returns
    -------
    path : ndarray of intp of shape (n_tokens,)
    score : ndarray of shape (n_sequences,)

    Raises
    ------
    ValueError
        On an unknown name, or labels a constraint does not understand.
    """
    decode_paths = resolve(decoder, DECODERS, "decoder", method="__call__")
    allowed = get_allowed(constraints, classes)
    return decode_paths(unary, transition, start, end, offsets, allowed, n_threads)


def second_order_decode(decoder, constraints, classes, unary, transition, trigram, start, end,
                        offsets, allowed_pairs, n_threads=1):
    """Decode a second-order (label-trigram) chain: Viterbi paths and their scores.

    Parameters
    ----------
    decoder : str
        Must be ``'viterbi'`` (no other decoder has a second-order version).
    constraints, classes
        As for :func:`decode`; the constraints restrict the allowed label
        pairs and the first (and last) labels.
    unary, transition, start, end, offsets, n_threads
        As for :func:`viterbi_decode`.
    trigram : ndarray of shape (n_labels, n_labels, n_labels)
        Label-trigram potentials.
    allowed_pairs : ndarray of bool of shape (n_labels, n_labels)
        The label pairs the model allows.

    Returns
    -------
    path, score : ndarray
        The label index of every token (intp, shape (n_tokens,)) and the
        score of each path (shape (n_sequences,)), as :func:`decode`.

    Raises
    ------
    ValueError
        If ``decoder`` is not ``'viterbi'``; as :func:`decode` otherwise.
    """
    if decoder != "viterbi":
        raise ValueError(f"order=2 does not support decoder={decoder!r} (use 'viterbi')")
    allowed = get_allowed(constraints, classes)
    pairs = np.asarray(allowed_pairs, dtype=bool)
    if allowed is not None:
        end = _allowed_end(end, allowed)
        pairs = pairs & allowed[0]
        start = np.where(allowed[1], start, -np.inf)
    return second_order_viterbi(unary, transition, trigram, start, end, offsets, pairs,
                                n_threads=n_threads)


def get_allowed(constraints, classes):
    """The allowed transitions and first labels of a registered constraint.

    Parameters
    ----------
    constraints : str, callable or None
        A key of :data:`CONSTRAINTS` (or a function with the signature of
        :func:`iob2_allowed`), or None.
    classes : array-like of shape (n_labels,)
        Label names.

    Returns
    -------
    tuple (allowed_transitions, allowed_start[, allowed_end]) or None
        Boolean arrays of shapes (n_labels, n_labels) and (n_labels,) (and
        (n_labels,) for the allowed last labels of ``'iobes'`` and
        ``'bilou'``); None when ``constraints`` is None.

    Raises
    ------
    ValueError
        On an unknown name, or labels the constraint does not understand.
    """
    if constraints is None:
        return None
    return resolve(constraints, CONSTRAINTS, "constraints", method="__call__")(classes)


def check_decoding(estimator):
    """Validate an estimator's ``decoder`` and ``constraints`` at decode time.

    ``fit`` validates every parameter; these two may be changed after fit
    (``set_params(decoder=...)``) and are used by ``predict``, so the
    prediction methods check them again, against the same entries of the
    estimator's ``_parameter_constraints`` (scikit-learn's declarative
    constraints).

    Parameters
    ----------
    estimator : estimator with ``decoder``, ``constraints`` and ``_parameter_constraints``
        E.g. a :class:`~sklearn_crfloss.CRFTagger`.

    Returns
    -------
    decoder : str
        ``estimator.decoder``, a key of :data:`DECODERS`.
    constraints : str or None
        ``estimator.constraints``, a key of :data:`CONSTRAINTS` or None; for
        an estimator fitted in another tag scheme (its ``tag_schemes_`` is
        not None), the constraints of that training scheme instead.

    Raises
    ------
    sklearn.utils._param_validation.InvalidParameterError
        A subclass of ValueError and TypeError, naming the parameter, the
        values it accepts and the value it got.
    """
    names = ("decoder", "constraints")
    validate_parameter_constraints(
        {name: estimator._parameter_constraints[name] for name in names},
        {name: getattr(estimator, name) for name in names},
        caller_name=type(estimator).__name__)
    schemes = getattr(estimator, "tag_schemes_", None)
    return estimator.decoder, estimator.constraints if schemes is None else schemes[1]
