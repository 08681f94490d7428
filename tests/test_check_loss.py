"""The public loss checker: a user's loss written to the contract passes, wrong ones fail readably."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import logsumexp

from sklearn_crfloss.inference import forward_backward
from sklearn_crfloss.losses import (
    BaseLoss,
    ConditionalLogLikelihood,
    LossCheckError,
    MixedLoss,
    PointwiseLoss,
    SegmentFScoreMCE,
    check_loss,
    enumerate_paths,
    loss_by_enumeration,
)

from _oracle import path_score, random_problem


class UserCLL:
    """A CLL written to the contract from scratch, not derived from BaseLoss."""

    def value_and_grad(self, unary, transition, start, end, y, offsets, sample_weight=None,
                       n_threads=1):
        n_seq = offsets.shape[0] - 1
        w = np.ones(n_seq) if sample_weight is None else np.asarray(sample_weight)
        fb = forward_backward(unary, transition, start, end, offsets, sample_weight=w)
        tw = np.repeat(w, np.diff(offsets))
        d_unary = fb.marginals * tw[:, None]
        d_unary[np.arange(y.shape[0]), y] -= tw
        d_trans, d_start, d_end = fb.transition_counts, fb.start_counts, fb.end_counts
        value = float(np.dot(w, fb.log_z))
        for i in range(n_seq):
            a, b = offsets[i], offsets[i + 1]
            value -= w[i] * path_score(unary[a:b], transition, start, end, y[a:b])
            np.add.at(d_trans, (y[a:b - 1], y[a + 1:b]), -w[i])
            d_start[y[a]] -= w[i]
            d_end[y[b - 1]] -= w[i]
        return value, d_unary, d_trans, d_start, d_end

    def enumerated_loss(self, paths, scores, gold, token_weight=None):
        return float(logsumexp(scores) - scores[np.all(paths == gold, axis=1)][0])


def test_user_loss_written_to_the_contract_passes():
    report = check_loss(UserCLL())
    assert report.passed and not report.skipped
    assert [r.check for r in report.results[:4]] == ["contract", "value", "value (weighted)",
                                                     "gradient"]
    # A duck-typed loss declares no convexity: that check does not run.
    assert "convexity" not in {r.check for r in report.results}
    assert len(report.results) == 3 * 4 and len(report.problems) == 3
    assert max(r.max_abs_error for r in report.results if r.check == "gradient") < 1e-6


def test_loss_by_enumeration_matches_the_model_definition():
    # Independent of any loss's code: CLL from the paths and scores equals the
    # CRF's log Z - score(gold), and the enumerated scores are path scores.
    rng = np.random.default_rng(3)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(2, 3))
    paths, scores = enumerate_paths(U[:2], T, s, e)
    assert paths.shape == (9, 2)
    assert_allclose(scores, [path_score(U[:2], T, s, e, p) for p in paths])
    log_z = forward_backward(U, T, s, e, off).log_z
    gold = [path_score(U[a:b], T, s, e, y[a:b]) for a, b in zip(off[:-1], off[1:])]
    assert_allclose(loss_by_enumeration(ConditionalLogLikelihood(), U, T, s, e, y, off),
                    np.sum(log_z - gold), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="declares no definition by enumeration"):
        loss_by_enumeration(object(), U, T, s, e, y, off)


class WrongGradient(ConditionalLogLikelihood):
    def value_and_grad(self, *args, **kwargs):
        value, dU, dT, ds, de = super().value_and_grad(*args, **kwargs)
        return value, dU, 0.5 * dT, ds, de


class WrongValue(ConditionalLogLikelihood):
    def value_and_grad(self, *args, **kwargs):
        value, *grads = super().value_and_grad(*args, **kwargs)
        return (value + 1e-3, *grads)


class IgnoresWeights(ConditionalLogLikelihood):
    def value_and_grad(self, unary, transition, start, end, y, offsets, sample_weight=None,
                       n_threads=1):
        return super().value_and_grad(unary, transition, start, end, y, offsets)


def test_wrong_gradient_fails_with_the_worst_entry_named():
    with pytest.raises(LossCheckError) as info:
        check_loss(WrongGradient())
    report = info.value.report
    assert {r.check for r in report.failed} == {"gradient"}
    assert len(report.failed) == 3  # every problem
    worst = report.failed[0]
    assert worst.max_rel_error == pytest.approx(0.5, rel=1e-4)
    assert "worst entry d_transition[" in worst.detail and "finite differences" in worst.detail
    # The exception's message is the readable table.
    message = str(info.value)
    assert message.startswith("check_loss(WrongGradient()): 3 of 15 checks FAILED")
    assert "gradient                0" in message and "FAILED: worst entry d_transition" in message


def test_wrong_value_fails_the_enumeration_checks():
    report = check_loss(WrongValue(), raise_on_failure=False)
    assert not report.passed
    assert {r.check for r in report.failed} == {"value", "value (weighted)"}
    assert all(r.max_abs_error == pytest.approx(1e-3) for r in report.failed)
    assert "the definition by enumeration" in report.failed[0].detail


def test_ignored_sample_weight_is_caught():
    # The gradient is consistent with the (wrong) value; the enumeration is not.
    report = check_loss(IgnoresWeights(), raise_on_failure=False)
    assert {r.check for r in report.failed} == {"value (weighted)"}


def test_failure_reproduces_from_the_reported_problem():
    report = check_loss(WrongValue(), raise_on_failure=False, n_problems=1)
    p = report.problems[0]
    args = (p["unary"], p["transition"], p["start"], p["end"], p["y"], p["offsets"])
    value = WrongValue().value_and_grad(*args)[0]
    assert value - loss_by_enumeration(ConditionalLogLikelihood(), *args) == pytest.approx(1e-3)


class BadShape(ConditionalLogLikelihood):
    def value_and_grad(self, *args, **kwargs):
        value, dU, dT, ds, de = super().value_and_grad(*args, **kwargs)
        return value, dU, dT.ravel(), ds, de


class ModifiesInput(ConditionalLogLikelihood):
    def value_and_grad(self, unary, *args, **kwargs):
        out = super().value_and_grad(unary, *args, **kwargs)
        unary -= 1.0
        return out


class Raises(ConditionalLogLikelihood):
    def value_and_grad(self, *args, sample_weight=None, **kwargs):
        if sample_weight is not None:
            raise ValueError("weights are not supported")
        return super().value_and_grad(*args, **kwargs)


@pytest.mark.parametrize("loss, check, detail", [
    (BadShape(), "contract", "d_transition has shape (9,), expected (3, 3)"),
    (ModifiesInput(), "contract", "value_and_grad modified its argument 'unary'"),
    (Raises(), "contract", "raised ValueError: weights are not supported"),
])
def test_contract_violations_are_named(loss, check, detail):
    report = check_loss(loss, raise_on_failure=False, n_problems=1)
    failed = report.failed
    assert failed and failed[0].check == check
    assert failed[0].detail == detail
    assert detail in str(report)


def test_false_convexity_claim_fails():
    class ConvexPointwise(PointwiseLoss):
        def __loss_tags__(self):
            tags = super().__loss_tags__()
            tags.convex = True
            return tags

    report = check_loss(ConvexPointwise(), raise_on_failure=False)
    assert {r.check for r in report.failed} == {"convexity"}
    assert "declares convex, but the value is not convex along" in report.failed[0].detail


def test_loss_without_definition_is_reported_as_skipped():
    class NoDefinition(BaseLoss):
        def value_and_grad(self, *args, **kwargs):
            return ConditionalLogLikelihood().value_and_grad(*args, **kwargs)

    report = check_loss(NoDefinition())
    assert report.passed
    assert {r.check for r in report.skipped} == {"value", "value (weighted)"}
    assert "NoDefinition declares no definition by enumeration" in report.skipped[0].detail
    assert ", 6 skipped" in str(report).splitlines()[0]


def test_wrong_definition_fails_too():
    # The definition and value_and_grad must agree: a definition that drops
    # the false positives of MCE-F is caught.
    class NoFalsePositives(SegmentFScoreMCE):
        def enumerated_batch_loss(self, paths, scores, gold, sample_weight=None,
                                  token_weight=None):
            return 0.0

    report = check_loss(NoFalsePositives(), raise_on_failure=False, n_problems=1)
    assert {r.check for r in report.failed} == {"value", "value (weighted)"}


def test_check_loss_leaves_the_callers_loss_unchanged_and_is_reproducible():
    loss = SegmentFScoreMCE(gamma=0.5)
    first = check_loss(loss, n_problems=1, random_state=7)
    assert not hasattr(loss, "classes_")
    second = check_loss(loss, n_problems=1, random_state=7)
    assert [r.max_abs_error for r in first.results] == [r.max_abs_error for r in second.results]
    other = check_loss(loss, n_problems=1, random_state=8)
    assert not np.array_equal(first.problems[0]["unary"], other.problems[0]["unary"])


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(loss="nope"), ValueError, "Unknown loss 'nope'"),
    (dict(loss=3), TypeError, "value_and_grad"),
    (dict(loss="cll", classes=["O"]), ValueError, "at least 2 labels"),
    (dict(loss="cll", lengths=(2, 0)), ValueError, "lengths >= 1"),
    (dict(loss="cll", n_problems=0), ValueError, "'n_problems' parameter of check_loss"),
    (dict(loss=MixedLoss(lam=2.0)), ValueError, "'lam' parameter of MixedLoss"),
])
def test_bad_arguments_raise(kwargs, error, match):
    with pytest.raises(error, match=match):
        check_loss(**kwargs)
