"""Synthetic sequence-labelling data: the two-state HMM of Gross et al. (2006)."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from .._compat import Interval, validate_call

__all__ = ["HMM_EMISSION", "HMM_START", "HMM_TRANSITION", "make_hmm_sequences"]

#: States of the HMM, in the order of the probability tables.
HMM_STATES = ("C", "I")
#: Emission alphabet, in the order of the columns of :data:`HMM_EMISSION`.
HMM_ALPHABET = ("A", "C", "G", "T")
#: ``HMM_TRANSITION[i, j] = P(state j at t + 1 | state i at t)``.
HMM_TRANSITION = np.array([[0.90, 0.10],
                           [0.05, 0.95]])
#: Initial state distribution (the stationary distribution of the chain).
HMM_START = np.array([1.0 / 3.0, 2.0 / 3.0])
#: ``HMM_EMISSION[i, k] = P(letter k | state i)``; 'C' favours C and G.
HMM_EMISSION = np.array([[0.15, 0.35, 0.35, 0.15],
                         [0.30, 0.20, 0.20, 0.30]])


@validate_call(
    {
        "n_sequences": [Interval(Integral, 1, None, closed="left")],
        "length": [Interval(Integral, 1, None, closed="left")],
        "noise": [Interval(Real, 0, 1, closed="both")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_hmm_sequences(n_sequences=100, length=100, *, noise=0.0, random_state=None):
    """Sequences from a two-state HMM with run-level label noise (Gross et al. 2006).

    A generator in the spirit of Gross et al. (2006), Figure 1a and
    Section 4.1: hidden states ``'C'`` and ``'I'`` emit letters over
    ``{A, C, G, T}``; the training labels are corrupted by flipping each run
    of consecutive ``'C'`` labels to ``'I'`` with probability ``noise``
    (the paper's ``p``). The paper's figure gives its probabilities only in
    the (unavailable) drawing, so this generator documents its own:

    * transitions ``P(C -> C) = 0.90``, ``P(C -> I) = 0.10``,
      ``P(I -> I) = 0.95``, ``P(I -> C) = 0.05`` (:data:`HMM_TRANSITION`);
      the first state is drawn from the stationary distribution
      ``(1/3, 2/3)`` (:data:`HMM_START`);
    * emissions over ``(A, C, G, T)``: ``C``: ``(.15, .35, .35, .15)``,
      ``I``: ``(.30, .20, .20, .30)`` (:data:`HMM_EMISSION`).

    The letters are weak evidence on their own, so a good tagger must use the
    label transitions (runs of ``'C'`` average 10 letters).

    Parameters
    ----------
    n_sequences : int >= 1, default=100
        Number of sequences.
    length : int >= 1, default=100
        Letters per sequence.
    noise : float in [0, 1], default=0.0
        Probability of flipping each maximal run of ``'C'`` labels to ``'I'``
        in the returned training labels ``y``.
    random_state : int, RandomState instance or None, default=None
        Seed of the generator.

    Returns
    -------
    X : list of list of dict
        ``X[i][t] = {'base': letter}``, a feature dict per letter
        (:class:`~sklearn_crfloss.CRFTagger` input).
    y : list of list of str
        Noisy labels (``'C'`` / ``'I'``): the hidden states after the
        run-flipping noise.
    y_clean : list of list of str
        The hidden states themselves (for evaluation).

    Raises
    ------
    sklearn.utils._param_validation.InvalidParameterError
        (a ValueError) on an invalid parameter.

    Examples
    --------
    >>> from sklearn_crfloss.datasets import make_hmm_sequences
    >>> X, y, y_clean = make_hmm_sequences(2, 5, noise=0.2, random_state=0)
    >>> len(X), len(X[0]), sorted(X[0][0])
    (2, 5, ['base'])

    References
    ----------
    S. S. Gross, O. Russakovsky, C. B. Do, S. Batzoglou (2006). Training
    conditional random fields for maximum labelwise accuracy. NIPS,
    Section 4.1 and Figure 1.
    """
    rng = check_random_state(random_state)
    n_tokens = n_sequences * length
    states = np.empty((n_sequences, length), dtype=np.intp)
    u = rng.random_sample((n_sequences, length))
    states[:, 0] = (u[:, 0] >= HMM_START[0]).astype(np.intp)
    for t in range(1, length):
        stay = HMM_TRANSITION[states[:, t - 1], states[:, t - 1]]
        states[:, t] = np.where(u[:, t] < stay, states[:, t - 1], 1 - states[:, t - 1])
    cum = np.cumsum(HMM_EMISSION, axis=1)
    v = rng.random_sample(n_tokens).reshape(n_sequences, length)
    letters = (v[..., None] >= cum[states][..., :-1]).sum(axis=-1)
    noisy = states.copy()
    if noise > 0:
        for i in range(n_sequences):
            row = states[i]
            t = 0
            while t < length:
                if row[t] == 0:
                    e = t
                    while e < length and row[e] == 0:
                        e += 1
                    if rng.random_sample() < noise:
                        noisy[i, t:e] = 1
                    t = e
                else:
                    t += 1
    names = np.array(HMM_STATES)
    alphabet = np.array(HMM_ALPHABET)
    X = [[{"base": b} for b in alphabet[letters[i]].tolist()] for i in range(n_sequences)]
    y = [names[noisy[i]].tolist() for i in range(n_sequences)]
    y_clean = [names[states[i]].tolist() for i in range(n_sequences)]
    return X, y, y_clean
