"""CRFTagger with the marginal losses: MEA decoding, IOB2 constraints, token weights,
alpha annealing; the synthetic HMM data set."""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.decoding import iob2_allowed
from sklearn_crfloss.datasets import make_hmm_sequences
from sklearn_crfloss.inference import forward_backward

from conftest import make_toy_chunks

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def fitted():
    X, y = make_toy_chunks(40, seed=1)
    return CRFTagger(C=1.0, max_iter=50).fit(X, y), X, y


def test_mea_is_argmax_of_marginals(fitted):
    crf, X, _ = fitted
    mea = crf.set_params(decoder="mea")
    labels, scores = mea.decode(X)
    marg = mea.predict_marginals(X)
    for lab, m, sc in zip(labels, marg, scores):
        assert_array_equal(lab, crf.classes_[m.argmax(axis=1)])
        assert_allclose(sc, m.max(axis=1).sum())
    crf.set_params(decoder="viterbi")


def _allowed_path(rules, path):
    allowed, start = rules
    return start[path[0]] and all(allowed[a, b] for a, b in zip(path[:-1], path[1:]))


@pytest.mark.parametrize("decoder", ["viterbi", "mea"])
def test_iob2_constraints_by_enumeration(decoder):
    # Random transitions make invalid sequences likely; the constrained
    # decoders must return the best allowed path, found here by enumeration.
    X, y = make_toy_chunks(30, seed=3, max_len=4)
    crf = CRFTagger(C=0.05, max_iter=50, decoder=decoder, constraints="iob2").fit(X, y)
    rng = np.random.default_rng(0)
    crf.coef_ = crf.coef_ * 0.2
    crf.transition_ = rng.normal(scale=0.5, size=crf.transition_.shape)
    crf.start_ = rng.normal(scale=0.5, size=crf.start_.shape)
    o, inp, ivp = (list(crf.classes_).index(c) for c in ("O", "I-NP", "I-VP"))
    crf.transition_[o, inp] += 2.0  # favour invalid O -> I-NP and I-NP -> I-VP
    crf.transition_[inp, ivp] += 2.0
    crf.start_[inp] += 2.0
    unary, offsets, _ = crf._potentials(X)
    classes = crf.classes_
    rules = iob2_allowed(classes)
    L = classes.shape[0]
    labels, _ = crf.decode(X)
    n_changed = 0
    unconstrained = crf.set_params(constraints=None).predict(X)
    crf.set_params(constraints="iob2")
    for i, lab in enumerate(labels):
        s, e = offsets[i], offsets[i + 1]
        idx = np.searchsorted(classes, lab)
        assert _allowed_path(rules, idx)
        if decoder == "viterbi":
            def obj(p):
                return (crf.start_[p[0]] + crf.end_[p[-1]] + unary[s + np.arange(e - s), p].sum()
                        + sum(crf.transition_[a, b] for a, b in zip(p[:-1], p[1:])))
        else:
            m = forward_backward(unary[s:e], crf.transition_, crf.start_, crf.end_,
                                 np.array([0, e - s])).marginals

            def obj(p):
                return np.log(m[np.arange(e - s), p]).sum()
        best = max((p for p in itertools.product(range(L), repeat=e - s)
                    if _allowed_path(rules, p)), key=lambda p: obj(np.array(p)))
        assert_allclose(obj(idx), obj(np.array(best)), rtol=1e-10)
        n_changed += int(np.any(unconstrained[i] != lab))
    assert n_changed > 0  # the constraints did something


@pytest.mark.parametrize("decoder", ["viterbi", "mea"])
@pytest.mark.parametrize("constraints", [None, "iob2"])
def test_decoders_accept_empty_sequences(fitted, decoder, constraints):
    crf, X, _ = fitted
    crf.set_params(decoder=decoder, constraints=constraints)
    labels, scores = crf.decode([[], X[0], []])
    assert [len(lab) for lab in labels] == [0, len(X[0]), 0]
    assert scores[0] == 0 and scores[2] == 0
    crf.set_params(decoder="viterbi", constraints=None)


def test_iob2_constraints_reject_other_labels():
    X = [[{"w": "a"}, {"w": "b"}]]
    with pytest.raises(ValueError, match="constraints='iob2' needs labels"):
        CRFTagger(constraints="iob2", max_iter=3).fit(X, [["X", "Y"]])  # at fit already
    crf = CRFTagger(max_iter=3).fit(X, [["X", "Y"]]).set_params(constraints="iob2")
    with pytest.raises(ValueError, match="constraints='iob2' needs labels"):
        crf.predict(X)


def test_decoder_parameter_is_validated():
    X, y = make_toy_chunks(5)
    with pytest.raises(ValueError, match="decoder"):
        CRFTagger(decoder="posterior").fit(X, y)
    with pytest.raises(ValueError, match="constraints"):
        CRFTagger(constraints="bio").fit(X, y)


@pytest.mark.parametrize("loss", ["pointwise", "mixed", "labelwise"])
def test_marginal_losses_fit_and_predict(loss):
    X, y = make_toy_chunks(40, seed=2)
    crf = CRFTagger(loss=loss, init="cll", C=1.0, max_iter=30, decoder="mea").fit(X, y)
    assert crf.init_n_iter_ > 0 and crf.n_iter_ > 0
    assert crf.score(X, y) > 0.7


def test_token_weight_zero_equals_dropping_tokens_from_the_loss():
    # A token of weight 0 does not contribute: all-ones weights equal no weights,
    # and doubling every weight doubles the loss part of the objective.
    X, y = make_toy_chunks(20, seed=4)
    ones = [np.ones(len(s)) for s in y]
    a = CRFTagger(loss="pointwise", prior="none", max_iter=5).fit(X, y)
    b = CRFTagger(loss="pointwise", prior="none", max_iter=5).fit(X, y, token_weight=ones)
    assert_allclose(a.coef_, b.coef_)
    rng = np.random.default_rng(0)
    tw = [rng.uniform(0, 3, len(s)) for s in y]
    c = CRFTagger(loss="pointwise", prior="none", max_iter=5).fit(X, y, token_weight=tw)
    assert not np.allclose(a.coef_, c.coef_)


def test_token_weight_validation():
    X, y = make_toy_chunks(5)
    with pytest.raises(ValueError, match="not supported by loss 'cll'"):
        CRFTagger().fit(X, y, token_weight=[np.ones(len(s)) for s in y])
    with pytest.raises(ValueError, match=r"token_weight\[0\] has"):
        CRFTagger(loss="pointwise").fit(X, y, token_weight=[np.ones(len(s) + 1) for s in y])
    with pytest.raises(ValueError, match="sequences"):
        CRFTagger(loss="pointwise").fit(X, y, token_weight=[np.ones(len(y[0]))])
    with pytest.raises(ValueError, match="non-negative"):
        CRFTagger(loss="pointwise").fit(X, y, token_weight=[-np.ones(len(s)) for s in y])


def test_alpha_schedule_trains_stage_by_stage():
    from sklearn_crfloss.losses import LabelwiseAccuracyLoss

    X, y = make_toy_chunks(30, seed=5)
    one = CRFTagger(loss=LabelwiseAccuracyLoss(alpha=5.0), init="cll", max_iter=4).fit(X, y)
    two = CRFTagger(loss=LabelwiseAccuracyLoss(alpha=[5.0, 15.0]), init="cll",
                    max_iter=4).fit(X, y)
    # the second stage starts from the first stage's solution
    manual = CRFTagger(loss=LabelwiseAccuracyLoss(alpha=15.0), max_iter=4, warm_start=True)
    manual.__dict__.update({k: v for k, v in one.__dict__.items() if k.endswith("_")})
    manual.fit(X, y)
    assert_allclose(two.coef_, manual.coef_, rtol=1e-8, atol=1e-10)
    assert one.n_iter_ > 0 and manual.n_iter_ > 0
    assert two.n_iter_ == one.n_iter_ + manual.n_iter_
    assert_allclose(two.loss_curve_, list(one.loss_curve_) + list(manual.loss_curve_))


def test_make_hmm_sequences_shapes_and_noise():
    X, y, y_clean = make_hmm_sequences(50, 40, noise=0.0, random_state=0)
    assert len(X) == len(y) == len(y_clean) == 50
    assert all(len(s) == 40 for s in X)
    assert y == y_clean
    assert {t["base"] for s in X for t in s} == {"A", "C", "G", "T"}
    X2, y2, c2 = make_hmm_sequences(50, 40, noise=0.0, random_state=0)
    assert X2 == X and c2 == y_clean
    # noise only flips C -> I, whole runs at a time
    _, noisy, clean = make_hmm_sequences(200, 50, noise=0.5, random_state=1)
    noisy, clean = np.concatenate(noisy), np.concatenate(clean)
    assert np.all(noisy[clean == "I"] == "I")
    flipped = (clean == "C") & (noisy == "I")
    assert 0.3 < flipped.sum() / (clean == "C").sum() < 0.7
    # within a run of C, all or nothing is flipped
    runs = np.split(np.arange(len(clean)), np.flatnonzero(np.diff(clean == "C")) + 1)
    for r in runs:
        if clean[r[0]] == "C" and r.size > 1 and (r[0] // 50 == r[-1] // 50):
            assert len(set(noisy[r])) == 1
    _, all_flipped, clean = make_hmm_sequences(10, 30, noise=1.0, random_state=2)
    assert set(np.concatenate(all_flipped)) == {"I"}


@pytest.mark.parametrize("name", ["long_runs", "strong_emissions", "short_runs", "explicit"])
def test_make_hmm_sequences_statistics_match_the_documented_chain(name):
    from sklearn_crfloss.datasets import HMM_PARAMETERS

    if name == "explicit":  # arrays override the named set
        transition, emission = [[0.7, 0.3], [0.2, 0.8]], [[0.1, 0.2, 0.3, 0.4]] * 2
        kw = dict(transition=transition, emission=emission)
    else:
        transition, emission = HMM_PARAMETERS[name]
        kw = dict(parameters=name)
    X, _, y = make_hmm_sequences(400, 100, random_state=0, **kw)
    states = np.array([[s == "I" for s in seq] for seq in y], dtype=int)
    letters = np.array([["ACGT".index(t["base"]) for t in seq] for seq in X])
    for i in range(2):
        prev = states[:, :-1] == i
        assert abs((states[:, 1:][prev] == i).mean() - transition[i][i]) < 0.01
        emit = np.bincount(letters[states == i], minlength=4) / (states == i).sum()
        assert_allclose(emit, emission[i], atol=0.01)
    # the first state follows the stationary distribution (C: p_IC / (p_CI + p_IC))
    p_c = transition[1][0] / (transition[0][1] + transition[1][0])
    assert abs((states[:, 0] == 0).mean() - p_c) < 0.08


def test_make_hmm_sequences_default_and_old_parameters():
    from sklearn_crfloss.datasets import HMM_PARAMETERS

    default = make_hmm_sequences(5, 50, noise=0.3, random_state=3)
    assert default == make_hmm_sequences(5, 50, noise=0.3, parameters="long_runs",
                                         random_state=3)
    old = make_hmm_sequences(5, 50, noise=0.3, parameters="short_runs", random_state=3)
    T, E = HMM_PARAMETERS["short_runs"]
    assert old == make_hmm_sequences(5, 50, noise=0.3, transition=T, emission=E,
                                     start=[1 / 3, 2 / 3], random_state=3)
    assert old != default
    with pytest.raises(ValueError, match="transition must be an array of shape"):
        make_hmm_sequences(5, 5, transition=[[0.5, 0.6], [0.5, 0.5]])
    with pytest.raises(ValueError, match="emission"):
        make_hmm_sequences(5, 5, emission=[[1.0, 0, 0], [1.0, 0, 0]])
    with pytest.raises(ValueError, match="parameters"):
        make_hmm_sequences(5, 5, parameters="paper")


def test_make_hmm_sequences_validates():
    with pytest.raises(ValueError, match="noise"):
        make_hmm_sequences(5, 5, noise=1.5)
    with pytest.raises(ValueError, match="length"):
        make_hmm_sequences(5, 0)
