"""Each registered loss declares its capabilities (LossTags) as it behaves."""

import inspect

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_crfloss.losses import LOSSES, BaseLoss, LossTags, get_loss, get_loss_tags
from sklearn_crfloss.priors import get_prior
from sklearn_crfloss.solvers import SOLVERS, make_solver

from _oracle import random_problem
from test_losses import named_loss


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_record_names_the_registry_entry_and_its_stages(name):
    tags = get_loss_tags(get_loss(name))
    assert isinstance(tags, LossTags)
    assert tags.name == name
    assert tags.needs_classes  # every registered loss is a BaseLoss
    assert tags.stages and all(type(s) is type(get_loss(name)) for s in tags.stages)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_default_solver_exists_and_accepts_the_loss(name):
    loss = get_loss(name)
    tags = get_loss_tags(loss)
    assert tags.default_solver in SOLVERS
    make_solver(tags.default_solver).check(loss, get_prior("l2"))


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_token_weight_is_accepted_exactly_when_declared(name):
    loss = named_loss(name)
    tags = get_loss_tags(loss)
    accepts = "token_weight" in inspect.signature(loss.value_and_grad).parameters
    assert accepts == tags.supports_token_weight
    if accepts:  # and the weights are used
        U, T, s, e, y, off = random_problem(np.random.default_rng(3), lengths=(2, 3))
        plain = loss.value_and_grad(U, T, s, e, y, off)[0]
        ones = loss.value_and_grad(U, T, s, e, y, off, token_weight=np.ones(5))[0]
        half = loss.value_and_grad(U, T, s, e, y, off, token_weight=np.full(5, 0.5))[0]
        assert_allclose(ones, plain, rtol=1e-12)
        assert abs(half - plain) > 1e-3 * abs(plain)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_additive_means_the_batch_value_is_the_sum_of_its_parts(name):
    loss = named_loss(name)
    rng = np.random.default_rng(5)
    U, T, s, e, y, off = random_problem(rng, lengths=(2, 3, 4, 2), scale=2.0)
    whole = loss.value_and_grad(U, T, s, e, y, off)[0]
    parts = 0.0
    for lo, hi in ((0, 2), (2, 4)):  # sequences 0-1 and 2-3
        a, b = off[lo], off[hi]
        parts += loss.value_and_grad(U[a:b], T, s, e, y[a:b], off[lo:hi + 1] - a)[0]
    if get_loss_tags(loss).additive:
        assert_allclose(parts, whole, rtol=1e-10, atol=1e-12)
    else:
        assert abs(parts - whole) > 1e-6 * max(1.0, abs(whole))


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_smooth_means_no_kink(name):
    # A loss declared not smooth has a kink where all label sequences tie
    # (zero potentials: one-sided slopes differ, the second difference over
    # h stays put as h shrinks); a smooth one shrinks like h at a generic
    # point. (The labelwise loss with q='sigmoid' also has a max, over the
    # labels' marginals, with a kink at their ties: like MCE it is trained
    # from a CLL fit, where ties are not met.)
    loss = named_loss(name)
    rng = np.random.default_rng(7)
    U, T, s, e, y, off = random_problem(rng, lengths=(3, 2))
    smooth = get_loss_tags(loss).smooth
    at = [np.zeros_like(a) if not smooth else a for a in (U, T, s, e)]
    direction = [rng.normal(size=a.shape) for a in at]

    def value(h):
        return loss.value_and_grad(*(a + h * d for a, d in zip(at, direction)), y, off)[0]

    def second_difference(h):  # ~ f'' h where smooth, ~ |slope jump| at a kink
        return abs(value(h) + value(-h) - 2 * value(0.0)) / h

    shrink = second_difference(1e-3) / second_difference(1e-4)
    if smooth:
        assert shrink > 5
    else:
        assert shrink < 2


def test_an_object_without_a_record_gets_the_defaults_in_one_place():
    class Bare:
        def value_and_grad(self, *args, **kwargs):
            raise NotImplementedError

    bare = Bare()
    tags = get_loss_tags(bare)
    assert (tags.name, tags.convex, tags.smooth, tags.needs_init, tags.default_solver,
            tags.supports_token_weight, tags.additive, tags.needs_classes) == (
        None, False, True, False, "lbfgs", False, True, False)
    assert tags.stages == [bare]


def test_a_subclass_overrides_fields_of_its_parent():
    class NotConvex(BaseLoss):
        name = "not_convex"

        def __loss_tags__(self):
            tags = super().__loss_tags__()
            tags.convex = False
            return tags

    tags = get_loss_tags(NotConvex())
    assert tags.name == "not_convex" and not tags.convex and tags.needs_classes
    assert get_loss_tags(BaseLoss()).convex
