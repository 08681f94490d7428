"""The sum-product kernels run sequences in batches: batches against enumeration and one at a time.

The forward-backward kernels advance the consecutive sequences of a chunk
of 8 together (at most ``GROUP_ROWS`` tokens, or the chunk's longest
sequence), one pass over the transition matrix per position for all of
them, and add the batch's pair sums as one matrix product. A sequence's log
Z and marginals must not depend on its batch (the same sums in the same
order), and the counts must equal enumeration and the sum of the sequences
run alone.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_crfloss._chain._forward_backward import GROUP_ROWS
from sklearn_crfloss.inference import forward_backward

from _oracle import brute_force, random_problem


def _assert_matches(fb, ref, atol):
    """Every output of forward_backward against brute_force's."""
    for name in ("log_z", "marginals", "transition_counts", "start_counts", "end_counts"):
        assert_allclose(getattr(fb, name), ref[name], rtol=1e-12, atol=atol, err_msg=name)


def _alone(U, T, s, e, off, w):
    """forward_backward of every sequence as a batch of one, and the summed counts."""
    log_z, marg = [], []
    counts = [np.zeros_like(T), np.zeros_like(s), np.zeros_like(e)]
    for k, (a, b) in enumerate(zip(off[:-1], off[1:])):
        fb = forward_backward(U[a:b], T, s, e, [0, b - a], sample_weight=w[k:k + 1])
        log_z.append(fb.log_z[0])
        marg.append(fb.marginals)
        for acc, c in zip(counts, (fb.transition_counts, fb.start_counts, fb.end_counts)):
            acc += c
    return np.array(log_z), np.concatenate(marg), counts


@pytest.mark.parametrize("seed", range(3))
def test_batches_of_mixed_lengths_match_enumeration(seed):
    # 11 sequences: a full chunk of 8 of different lengths, then 3.
    rng = np.random.default_rng(seed)
    lengths = rng.permutation([1, 2, 3, 4, 5, 6, 1, 2, 6, 3, 1])
    U, T, s, e, y, off = random_problem(rng, 3, lengths=lengths, scale=1.5)
    w = rng.uniform(0.2, 2.0, size=len(off) - 1)
    ref = brute_force(U, T, s, e, off, sample_weight=w)
    for n_threads in (1, 2):
        fb = forward_backward(U, T, s, e, off, sample_weight=w, n_threads=n_threads)
        assert fb.n_fallback == 0
        _assert_matches(fb, ref, 1e-12)


def test_fallback_inside_a_batch_leaves_the_others_alone():
    # The third sequence of the chunk needs log space; its neighbours in
    # the batch keep the scaled pass, and everything matches enumeration.
    rng = np.random.default_rng(7)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(4, 5, 6, 3, 2, 5), scale=1.0)
    U[off[2]:off[3]] *= 800.0
    w = rng.uniform(0.5, 1.5, size=len(off) - 1)
    ref = brute_force(U, T, s, e, off, sample_weight=w)
    fb = forward_backward(U, T, s, e, off, sample_weight=w)
    assert fb.n_fallback == 1
    _assert_matches(fb, ref, 1e-10)


@pytest.mark.parametrize("n_labels", [5, 33, 70])
def test_batch_results_do_not_depend_on_the_batch(n_labels):
    # Lengths whose chunk needs several batches (more than GROUP_ROWS rows)
    # and label counts on both sides of the products' column panels (8, 32).
    rng = np.random.default_rng(n_labels)
    lengths = [120, 1, 90, 200, 7, GROUP_ROWS + 40, 3, 60, 25, 2]
    U, T, s, e, y, off = random_problem(rng, n_labels, lengths=lengths, scale=1.0)
    w = rng.uniform(0.2, 2.0, size=len(off) - 1)
    log_z, marg, (trans, start, end) = _alone(U, T, s, e, off, w)
    fb = forward_backward(U, T, s, e, off, sample_weight=w)
    assert fb.n_fallback == 0
    # A sequence's own results: the same sums in the same order, in any batch.
    assert_array_equal(fb.log_z, log_z)
    assert_array_equal(fb.marginals, marg)
    # The counts: added in another grouping, equal to rounding.
    assert_allclose(fb.transition_counts, trans, rtol=1e-12, atol=1e-12)
    assert_allclose(fb.start_counts, start, rtol=1e-12, atol=1e-12)
    assert_allclose(fb.end_counts, end, rtol=1e-12, atol=1e-12)
    for n_threads in (2, 4):
        other = forward_backward(U, T, s, e, off, sample_weight=w, n_threads=n_threads)
        assert_array_equal(other.log_z, fb.log_z)
        assert_array_equal(other.transition_counts, fb.transition_counts)
