"""Cost functions, softmax-margin and the Jensen risk bound (Gimpel & Smith 2010)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.losses import (
    MIRA,
    ConditionalLogLikelihood,
    HammingCost,
    JensenRiskBound,
    LabelCost,
    MaxMargin,
    Risk,
    SoftmaxMargin,
    get_loss,
)

from _oracle import loss_by_enumeration, random_problem
from conftest import make_toy_chunks


def test_cost_matrices():
    classes = np.array(["B-PER", "I-PER", "O"])
    assert_allclose(HammingCost(cost_scale=5).matrix(classes), 5 * (1 - np.eye(3)))
    M = LabelCost({("B-PER", "O"): 4.0, ("I-PER", "O"): 3.0}).matrix(classes)
    assert_allclose(M, [[0, 1, 4], [1, 0, 3], [1, 1, 0]])
    # A label that is not a training label (a typo, or the wrong case) is an
    # error, not a cost without effect; every unknown label is named.
    with pytest.raises(ValueError, match=r"not among the training labels: 'X', 'b-per' "
                                         r"\(the labels are \['B-PER', 'I-PER', 'O'\]\)"):
        LabelCost({("B-PER", "O"): 4.0, ("X", "O"): 9.0, ("O", "b-per"): 1.0}).matrix(classes)
    with pytest.raises(ValueError, match="must be 0"):
        LabelCost({("O", "O"): 1.0}).matrix(classes)
    with pytest.raises(ValueError, match="negative"):
        LabelCost({("O", "B-PER"): -1.0}).matrix(classes)


@pytest.mark.parametrize("cls", [SoftmaxMargin, JensenRiskBound, Risk, MaxMargin, MIRA])
def test_cost_matrix_is_public_after_set_classes(cls):
    classes = np.array(["B-PER", "I-PER", "O"])
    loss = get_loss(cls(cost={("B-PER", "O"): 4.0}, cost_scale=2.0)).set_classes(classes)
    assert_allclose(loss.cost_matrix_, 2.0 * np.array([[0, 1, 4], [1, 0, 1], [1, 1, 0]]))
    assert not hasattr(get_loss(cls()), "cost_matrix_")  # only set_classes sets it
    # The augmented potentials add the gold label's row of that matrix.
    U = np.zeros((2, 3))
    assert_allclose(loss._augmented(U, np.array([0, 2])), loss.cost_matrix_[[0, 2]])


@pytest.mark.parametrize("loss, match", [
    (SoftmaxMargin(cost="manhattan"), "'cost' parameter of SoftmaxMargin"),
    (Risk(cost=3.0), "'cost' parameter of Risk"),
    (MIRA(cost_scale=-1.0), "'cost_scale' parameter of MIRA"),
])
def test_invalid_cost_parameters_are_refused_by_get_loss(loss, match):
    with pytest.raises(ValueError, match=match):
        get_loss(loss)


def test_invalid_cost_object_is_refused_by_set_classes():
    # A cost object's own parameters are checked when the loss builds its matrix.
    classes = np.array(["B-PER", "O"])
    for cost, match in [(LabelCost({}, default=-1.0), "'default' parameter of LabelCost"),
                        (HammingCost(cost_scale=-2.0), "'cost_scale' parameter of HammingCost")]:
        loss = get_loss(SoftmaxMargin(cost=cost))
        with pytest.raises(ValueError, match=match):
            loss.set_classes(classes)


@pytest.mark.parametrize("cost_scale", [0.5, 5.0])
@pytest.mark.parametrize("cls", [SoftmaxMargin, JensenRiskBound])
def test_values_match_enumeration_with_label_costs(cls, cost_scale):
    rng = np.random.default_rng(4)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(1, 3, 5))
    loss = cls(cost={(0, 2): 3.0, (1, 0): 0.5}, cost_scale=cost_scale)
    loss.set_classes(np.arange(3))
    w = rng.uniform(0.5, 2, size=3)
    value = loss.value_and_grad(U, T, s, e, y, off, sample_weight=w)[0]
    assert_allclose(value, loss_by_enumeration(loss, U, T, s, e, y, off, w), rtol=1e-10)


def test_jrb_is_softmax_margin_minus_cll_and_zero_cost_is_cll():
    rng = np.random.default_rng(5)
    U, T, s, e, y, off = random_problem(rng, 4, lengths=(2, 6))
    sm = SoftmaxMargin(cost_scale=3.0).value_and_grad(U, T, s, e, y, off)
    cll = ConditionalLogLikelihood().value_and_grad(U, T, s, e, y, off)
    jrb = JensenRiskBound(cost_scale=3.0).value_and_grad(U, T, s, e, y, off)
    for a, b, c in zip(jrb, sm, cll):
        assert_allclose(a, np.asarray(b) - np.asarray(c), atol=1e-10)
    zero = SoftmaxMargin(cost_scale=0.0).value_and_grad(U, T, s, e, y, off)
    for a, b in zip(zero, cll):
        assert_allclose(a, b, atol=1e-12)
    # softmax-margin bounds CLL from above, JRB is non-negative
    assert sm[0] >= cll[0] and jrb[0] >= 0


def test_softmax_margin_is_convex_along_random_lines():
    rng = np.random.default_rng(6)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(3, 4))
    loss = SoftmaxMargin(cost_scale=2.0)
    shapes = [U.shape, T.shape, s.shape, e.shape]
    sizes = [int(np.prod(sh)) for sh in shapes]

    def f(x):
        parts = np.split(x, np.cumsum(sizes)[:-1])
        return loss.value_and_grad(*[p.reshape(sh) for p, sh in zip(parts, shapes)], y, off)[0]

    for _ in range(20):
        a = rng.normal(scale=2, size=sum(sizes))
        b = rng.normal(scale=2, size=sum(sizes))
        ts = np.linspace(0, 1, 11)
        vals = np.array([f((1 - t) * a + t * b) for t in ts])
        chord = (1 - ts) * vals[0] + ts * vals[-1]
        assert np.all(vals <= chord + 1e-9)
        assert np.all(np.diff(vals, 2) >= -1e-9)


def test_estimator_with_costs_by_label_name():
    X, y = make_toy_chunks(60, seed=3)
    costs = {("B-NP", "O"): 5.0, ("I-NP", "O"): 5.0}
    loss = SoftmaxMargin(cost=costs, cost_scale=1.0)
    crf = CRFTagger(loss=loss).fit(X, y)
    assert not hasattr(loss, "cost_matrix_")  # the parameter object is left untouched
    assert crf.score(X, y) > 0.8
    jrb = CRFTagger(loss="jrb", init="cll").fit(X, y)
    assert jrb.init_n_iter_ > 0
    sm = CRFTagger(loss=SoftmaxMargin()).set_params(loss__cost_scale=5.0)
    assert sm.get_params()["loss__cost_scale"] == 5.0


def test_risk_is_bounded_by_jrb_and_matches_enumeration():
    from sklearn_crfloss.losses import Risk

    rng = np.random.default_rng(9)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(2, 5))
    w = rng.uniform(0.5, 2, size=2)
    risk = Risk(cost_scale=2.0).value_and_grad(U, T, s, e, y, off, sample_weight=w)
    jrb = JensenRiskBound(cost_scale=2.0).value_and_grad(U, T, s, e, y, off, sample_weight=w)
    assert risk[0] <= jrb[0] + 1e-12  # Jensen: log E[exp c] >= E[c]
    loss = Risk(cost_scale=2.0)
    assert_allclose(risk[0], loss_by_enumeration(loss, U, T, s, e, y, off, w), rtol=1e-10)
