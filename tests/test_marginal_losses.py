"""Pointwise, mixed and labelwise losses: enumeration oracle, gradients, Theorem 1."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_crfloss.losses import (
    ConditionalLogLikelihood,
    LabelwiseAccuracyLoss,
    MixedLoss,
    PointwiseLoss,
    get_loss,
)

from _oracle import loss_by_enumeration, markov_loss_by_enumeration, random_problem
from test_losses import finite_difference_gradient


def check_gradient(loss, U, T, s, e, y, off, **kw):
    shapes = [U.shape, T.shape, s.shape, e.shape]
    sizes = [int(np.prod(sh)) for sh in shapes]

    def split(x):
        parts = np.split(x, np.cumsum(sizes)[:-1])
        return [p.reshape(sh) for p, sh in zip(parts, shapes)]

    x0 = np.concatenate([U.ravel(), T.ravel(), s, e])
    _, dU, dT, ds, de = loss.value_and_grad(U, T, s, e, y, off, **kw)
    analytic = np.concatenate([dU.ravel(), dT.ravel(), ds, de])
    fd = finite_difference_gradient(lambda x: loss.value_and_grad(*split(x), y, off, **kw)[0],
                                    x0)
    assert_allclose(analytic, fd, rtol=1e-6, atol=1e-7)


LOSSES_TO_TEST = [
    PointwiseLoss(),
    MixedLoss(lam=0.3),
    MixedLoss(markov_order=2),
    LabelwiseAccuracyLoss(alpha=5.0),
    LabelwiseAccuracyLoss(alpha=[1.0, 15.0]),
    LabelwiseAccuracyLoss(q="identity"),
    LabelwiseAccuracyLoss(q="log"),
]


@pytest.mark.parametrize("loss", LOSSES_TO_TEST, ids=repr)
@pytest.mark.parametrize("seed", range(2))
def test_value_and_gradient_with_token_and_sample_weights(loss, seed):
    rng = np.random.default_rng(seed)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(1, 2, 4, 3))
    w = rng.uniform(0.5, 2.0, size=len(off) - 1)
    tw = rng.uniform(0.0, 2.0, size=len(y))
    value = loss.value_and_grad(U, T, s, e, y, off, sample_weight=w, token_weight=tw)[0]
    assert_allclose(value, loss_by_enumeration(loss, U, T, s, e, y, off, w, tw), rtol=1e-10)
    check_gradient(loss, U, T, s, e, y, off, sample_weight=w, token_weight=tw)


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("seed", range(3))
def test_theorem_1_mixed_loss_is_markov_loss(k, seed):
    # Tsuboi & Kashima Theorem 1: L_λ / (1 - λ) = M_k for λ = k / (k + 1),
    # M_k enumerated with the dummy boundary labels of Eq. (3.8)-(3.9).
    # Our start/end potentials are the transitions from/to the dummy label,
    # and the identity holds exactly: no boundary term.
    rng = np.random.default_rng(seed)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(1, 2, 4, 5))
    loss = MixedLoss(markov_order=k)
    lam = k / (k + 1)
    value = loss.value_and_grad(U, T, s, e, y, off)[0]
    m_k = markov_loss_by_enumeration(k, U, T, s, e, y, off)
    assert_allclose(value / (1 - lam), m_k, rtol=1e-10)
    # and it is not the identity for a different k (the test can fail)
    assert abs(value / (1 - lam) - markov_loss_by_enumeration(k + 1, U, T, s, e, y, off)) > 1e-3


def test_markov_order_zero_is_pointwise_and_lam_one_is_cll():
    rng = np.random.default_rng(5)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(2, 5))
    w = rng.uniform(0.5, 2.0, size=2)
    for a, b in zip(MixedLoss(markov_order=0).value_and_grad(U, T, s, e, y, off, w),
                    PointwiseLoss().value_and_grad(U, T, s, e, y, off, w)):
        assert_allclose(a, b, atol=1e-12)
    for a, b in zip(MixedLoss(lam=1.0).value_and_grad(U, T, s, e, y, off, w),
                    ConditionalLogLikelihood().value_and_grad(U, T, s, e, y, off, w)):
        assert_allclose(a, b, atol=1e-12)
    # q='log' of the labelwise family is the pointwise loss
    for a, b in zip(LabelwiseAccuracyLoss(q="log").value_and_grad(U, T, s, e, y, off, w),
                    PointwiseLoss().value_and_grad(U, T, s, e, y, off, w)):
        assert_allclose(a, b, atol=1e-12)


def test_labelwise_sharp_sigmoid_counts_mea_errors():
    # As alpha grows, the loss tends to the number of tokens that MEA decoding gets wrong.
    rng = np.random.default_rng(2)
    U, T, s, e, y, off = random_problem(rng, 4, lengths=(6, 6, 6), scale=2.0)
    from sklearn_crfloss.inference import forward_backward

    mea = forward_backward(U, T, s, e, off).marginals.argmax(axis=1)
    errors = int(np.sum(mea != y))
    value = LabelwiseAccuracyLoss(alpha=1e6).value_and_grad(U, T, s, e, y, off)[0]
    assert abs(value - errors) < 1e-3


def test_stages_follow_the_alpha_schedule():
    stages = LabelwiseAccuracyLoss(alpha=[1, 5, 15], q="sigmoid").stages()
    assert [st.alpha for st in stages] == [1.0, 5.0, 15.0]
    single = LabelwiseAccuracyLoss(alpha=15)
    assert single.stages() == [single]


@pytest.mark.parametrize("loss, match", [
    (MixedLoss(lam=1.5), "'lam' parameter of MixedLoss"),
    (MixedLoss(markov_order=-1), "'markov_order' parameter of MixedLoss"),
    (MixedLoss(markov_order=1.5), "'markov_order' parameter of MixedLoss"),
    (LabelwiseAccuracyLoss(alpha=0.0), "'alpha' parameter of LabelwiseAccuracyLoss"),
    (LabelwiseAccuracyLoss(q="cubic"), "'q' parameter of LabelwiseAccuracyLoss"),
])
def test_invalid_hyperparameters(loss, match):
    # Checked once, when the loss is resolved for training (get_loss, CRFTagger.fit).
    with pytest.raises(ValueError, match=match):
        get_loss(loss)


@pytest.mark.parametrize("alpha, match", [
    ([], "non-empty sequence"),
    ([[1.0, 5.0]], "non-empty sequence"),
    ([1.0, 0.0], "'alpha' parameter of LabelwiseAccuracyLoss schedule"),
    ([5.0, np.inf], "'alpha' parameter of LabelwiseAccuracyLoss schedule"),
])
def test_invalid_alpha_schedule(alpha, match):
    # A sequence passes the constraints; its values are checked by stages(),
    # which CRFTagger.fit and value_and_grad call.
    loss = get_loss(LabelwiseAccuracyLoss(alpha=alpha))
    rng = np.random.default_rng(0)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(2,))
    with pytest.raises(ValueError, match=match):
        loss.stages()
    with pytest.raises(ValueError, match=match):
        loss.value_and_grad(U, T, s, e, y, off)


def test_invalid_token_weight():
    rng = np.random.default_rng(0)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(2, 3))
    with pytest.raises(ValueError, match="one weight per token"):
        PointwiseLoss().value_and_grad(U, T, s, e, y, off, token_weight=np.ones(4))
    with pytest.raises(ValueError, match="non-negative"):
        PointwiseLoss().value_and_grad(U, T, s, e, y, off, token_weight=-np.ones(5))
