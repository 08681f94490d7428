"""Logarithmic opinion pools: the pool is the product of experts, weights, expert sets."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.features import TemplateFeatures
from sklearn_crfloss.lop import (
    LOPTagger,
    _fit_weights,
    _pool_nll,
    attribute_position,
    template_positions,
)
from sklearn_crfloss.metrics import segment_f1_scorer

from _oracle import enumerate_paths, random_problem
from conftest import make_toy_chunks
from test_losses import finite_difference_gradient


# Experts for the tests that check structure, not fit quality: an L2 prior
# and a loose tolerance converge in ~20 iterations (the default prior='none'
# estimator takes 40 to 120 on the toy data).
FAST = CRFTagger(C=1.0, tol=1e-3)


def _toy(n=50, seed=0):
    X, y = make_toy_chunks(n_sequences=n, seed=seed, max_len=5)
    # Add an attribute ahead so that every positional expert has columns.
    for seq in X:
        for t, tok in enumerate(seq):
            tok["w[+1]"] = seq[t + 1]["w"] if t + 1 < len(seq) else "</s>"
            tok["w[-1]"] = tok.pop("prev")
    return X, y


def test_pool_is_the_normalised_product_of_experts():
    X, y = _toy()
    lop = LOPTagger(experts="positional", weights=[0.4, 0.1, 0.3, 0.2],
                    estimator=CRFTagger(prior="l2", C=1.0)).fit(X, y)
    seq = X[3]
    probs = []
    for expert, cols in zip(lop.experts_, lop.expert_columns_):
        Xs = lop.pool_.vectorizer_.transform(seq)[:, cols]
        U = Xs @ expert.coef_.T
        paths, scores = enumerate_paths(np.asarray(U), expert.transition_, expert.start_,
                                        expert.end_)
        probs.append(scores - np.logaddexp.reduce(scores))
    log_prod = sum(w * p for w, p in zip(lop.weights_, probs))
    pbar = np.exp(log_prod - np.logaddexp.reduce(log_prod))
    L = len(lop.classes_)
    marg = np.zeros((len(seq), L))
    for path, p in zip(paths, pbar):
        marg[np.arange(len(seq)), path] += p
    assert_allclose(lop.predict_marginals([seq])[0], marg, atol=1e-10)
    best = lop.classes_[paths[np.argmax(pbar)]]
    assert lop.predict([seq])[0] == best.tolist()


def test_weight_gradient_finite_differences():
    rng = np.random.default_rng(0)
    parts = []
    for _ in range(3):
        U, T, s, e, y, off = random_problem(rng, 3, lengths=(2, 3, 4))
        parts.append((U, T, s, e))
    w = np.array([0.5, 0.3, 0.2])
    value, grad = _pool_nll(w, parts, y, off)
    fd = finite_difference_gradient(lambda v: _pool_nll(v, parts, y, off)[0], w)
    assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)
    # Trained weights: on the simplex and no worse than uniform.
    w_fit, _ = _fit_weights([(parts, y, off)], max_iter=200, tol=1e-10)
    assert_allclose(w_fit.sum(), 1.0)
    assert np.all(w_fit >= 0)
    assert _pool_nll(w_fit, parts, y, off)[0] <= _pool_nll(np.full(3, 1 / 3), parts, y, off)[0]
    # Several blocks (held-out folds): their likelihoods add up. Another
    # block with other experts moves the optimum; the same block twice does not.
    w_twice, _ = _fit_weights([(parts, y, off)] * 2, max_iter=200, tol=1e-10)
    assert_allclose(w_twice, w_fit, atol=1e-5)
    U2, T2, s2, e2, y2, off2 = random_problem(rng, 3, lengths=(3, 3))
    other = [(U2 * k, T2, s2, e2) for k in (3.0, 0.1, -1.0)]
    w_two, _ = _fit_weights([(parts, y, off), (other, y2, off2)], max_iter=200, tol=1e-10)
    both = lambda w: _pool_nll(w, parts, y, off)[0] + _pool_nll(w, other, y2, off2)[0]
    assert both(w_two) <= min(both(w_fit), both(np.full(3, 1 / 3))) + 1e-9
    assert not np.allclose(w_two, w_fit, atol=1e-3)


def test_expert_sets():
    X, y = _toy()
    simple = LOPTagger(experts="simple", estimator=FAST).fit(X, y)
    names = simple.attributes_
    assert len(simple.experts_) == 2
    assert_allclose(simple.weights_.sum(), 1.0)
    assert all(attribute_position(n) == 0 for n in names[simple.expert_columns_[1]])
    assert len(simple.expert_columns_[0]) == len(names)  # monolithic first

    pos = LOPTagger(experts="positional", weights=[0.25] * 4, estimator=FAST).fit(X, y)
    behind, at, ahead = pos.expert_columns_[1:]
    assert all(n.startswith("w[-1]:") for n in names[behind])
    assert all(n.startswith("w[+1]:") for n in names[ahead])
    assert sorted(np.concatenate([behind, at, ahead]).tolist()) == list(range(len(names)))

    r1 = LOPTagger(experts="random", random_state=0, weights=[0.2] * 5, estimator=FAST).fit(X, y)
    r2 = LOPTagger(experts="random", random_state=0, weights=[0.2] * 5, estimator=FAST).fit(X, y)
    assert len(r1.experts_) == 5
    for a, b in zip(r1.expert_columns_, r2.expert_columns_):
        assert_allclose(a, b)
    parts = np.concatenate(r1.expert_columns_[1:])
    assert sorted(parts.tolist()) == list(range(len(names)))

    user = LOPTagger(experts=[lambda n: n.startswith("w:"), np.array([0, 1, 2])],
                     weights=[2.0, 1.0, 1.0], estimator=FAST).fit(X, y)
    assert_allclose(user.weights_, [0.5, 0.25, 0.25])
    assert all(n.startswith("w:") for n in names[user.expert_columns_[1]])
    assert_allclose(user.expert_columns_[2], [0, 1, 2])
    reduced = LOPTagger(experts="simple", reduced=["w[-1]"], weights=[0.5, 0.5],
                        estimator=FAST).fit(X, y)
    assert all(n.startswith("w[-1]:") for n in names[reduced.expert_columns_[1]])


def test_parallel_experts_match_serial():
    X, y = _toy(30)
    a = LOPTagger(experts="random", random_state=1, n_jobs=1, weights="fit",
                  estimator=FAST).fit(X, y)
    b = LOPTagger(experts="random", random_state=1, n_jobs=2, weights="fit",
                  estimator=FAST).fit(X, y)
    assert_allclose(a.weights_, b.weights_, rtol=1e-8)
    assert_allclose(a.pool_.coef_, b.pool_.coef_, rtol=1e-8, atol=1e-10)


def test_bad_lop_parameters():
    X, y = _toy(20)
    with pytest.raises(ValueError, match="2 experts"):
        LOPTagger(experts="simple", weights=[1.0, 1.0, 1.0]).fit(X, y)
    with pytest.raises(ValueError, match=">= 0"):
        LOPTagger(experts="simple", weights=[1.5, -0.5]).fit(X, y)
    with pytest.raises(ValueError, match="no feature column"):
        LOPTagger(experts="simple", reduced=["nope"]).fit(X, y)
    with pytest.raises(ValueError, match="column indices"):
        LOPTagger(experts=[np.array([10**6])]).fit(X, y)
    with pytest.raises(ValueError, match="experts"):
        LOPTagger(experts="labels").fit(X, y)


def test_template_positions():
    feats = TemplateFeatures(["U00:%x[-1,0]", "U01:%x[0,0]/%x[1,0]", "U02:%x[1,1]", "U03"]).fit([])
    assert template_positions(feats) == {"U00": (-1,), "U01": (0, 1), "U02": (1,), "U03": (0,)}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_gridsearch_over_expert_sets_and_weights_on_conll2002_subset(corpus):
    # Every mean test score equals the one recomputed from fresh LOPTaggers
    # built with those parameters on the same folds; the weights change the
    # scores; the best parameters are the argmax of the recomputed scores
    # and the refitted pool is a fresh fit with them. Experts stopped at 25
    # iterations (not converged) score within 0.04 F1 of converged ones here.
    X, y = corpus("conll2002", "esp", "train")
    X, y = X[:80], y[:80]
    feats = TemplateFeatures(["U00:%x[-1,0]", "U01:%x[0,0]", "U02:%x[1,0]", "U03:%x[0,1]"])
    Xf = feats.fit_transform(X)
    positions = template_positions(feats)
    cv = KFold(2)

    def lop(**params):
        return LOPTagger(positions=positions,
                         estimator=CRFTagger(prior="none", max_iter=25), **params)

    grid = GridSearchCV(
        lop(),
        [{"experts": ["simple"], "weights": [[0.5, 0.5], [0.95, 0.05]]},
         {"experts": ["positional"], "weights": [[0.25, 0.25, 0.25, 0.25]]}],
        scoring=segment_f1_scorer, cv=cv, error_score="raise",
    )
    grid.fit(Xf, y)
    recomputed = [
        cross_val_score(lop(**params), Xf, y, cv=cv, scoring=segment_f1_scorer).mean()
        for params in grid.cv_results_["params"]
    ]
    scores = grid.cv_results_["mean_test_score"]
    assert_allclose(scores, recomputed, rtol=1e-12)
    assert np.all((scores > 0.1) & (scores < 1.0))
    assert scores[0] != scores[1]  # same experts, other weights
    assert grid.best_params_ == grid.cv_results_["params"][int(np.argmax(recomputed))]
    fresh = lop(**grid.best_params_).fit(Xf, y)
    best = grid.best_estimator_
    assert len(best.experts_) == (2 if grid.best_params_["experts"] == "simple" else 4)
    assert_allclose(best.weights_, fresh.weights_)
    assert_allclose(best.pool_.coef_, fresh.pool_.coef_, rtol=1e-10, atol=1e-12)
    assert grid.score(Xf, y) == segment_f1_scorer(fresh, Xf, y)


def test_with_weights_equals_fixed_weights_fit():
    X, y = _toy(30)
    fitted = LOPTagger(experts="simple", weights="fit", estimator=FAST).fit(X, y)
    fixed = LOPTagger(experts="simple", weights=[0.3, 0.7], estimator=FAST).fit(X, y)
    moved = fitted.with_weights([3, 7])
    assert_allclose(moved.weights_, [0.3, 0.7])
    assert_allclose(moved.pool_.coef_, fixed.pool_.coef_, atol=1e-12)
    assert_allclose(fitted.pool_.coef_.shape, moved.pool_.coef_.shape)
    assert not np.allclose(fitted.weights_, moved.weights_)
    with pytest.raises(ValueError, match="non-negative"):
        fitted.with_weights([1.0])


def test_label_experts_only_own_their_labels_parameters():
    X, y = _toy(40)
    lop = LOPTagger(experts="label", estimator=CRFTagger(prior="none", tol=1e-4)).fit(X, y)
    classes = lop.classes_.tolist()
    assert len(lop.experts_) == 3  # monolithic, NP, VP
    assert_allclose(lop.weights_.sum(), 1.0)
    for expert, kind in zip(lop.experts_[1:], ["NP", "VP"]):
        mine = np.array([c.endswith(kind) for c in classes])
        assert np.all(expert.coef_[~mine] == 0) and np.any(expert.coef_[mine] != 0)
        T = expert.transition_
        assert np.all(T[np.ix_(~mine, ~mine)] == 0)
        assert np.any(T[mine] != 0)
        assert np.all(expert.start_[~mine] == 0) and np.all(expert.end_[~mine] == 0)
    # The monolithic expert is unrestricted.
    assert np.all(lop.experts_[0].coef_.any(axis=1))
    assert lop.score(X, y) > 0.8


def test_pool_and_experts_are_fitted_taggers():
    # The pool is a fitted CRFTagger in every respect: training record, repr,
    # pickle; the experts predict from the pool's input (their own columns).
    import pickle

    from sklearn_crfloss.losses import ConditionalLogLikelihood
    from sklearn_crfloss.lop import _pool_nll

    X, y = _toy(30)
    lop = LOPTagger(experts="positional", weights="fit", estimator=FAST).fit(X, y)
    pool = lop.pool_
    assert pool.n_iter_ == lop.weights_n_iter_ > 0
    assert pool.converged_ is True and len(pool.loss_curve_) == pool.n_iter_
    # objective_: the pool's negative training log-likelihood at its weights.
    unary, offsets, _ = pool._potentials(X)
    y_enc = np.searchsorted(pool.classes_, np.concatenate(y))
    nll = ConditionalLogLikelihood().value_and_grad(unary, pool.transition_, pool.start_,
                                                    pool.end_, y_enc, offsets)[0]
    assert_allclose(pool.objective_, nll, rtol=1e-6)
    assert "CRFTagger" in repr(pool)
    again = pickle.loads(pickle.dumps(lop))
    for a, b in zip(again.predict(X), lop.predict(X)):
        assert_array_equal(a, b)
    fixed = LOPTagger(experts="simple", weights=[0.5, 0.5], estimator=FAST).fit(X, y)
    assert fixed.pool_.n_iter_ == 0 and fixed.pool_.converged_
    parts = [(e._potentials(X)[0], e.transition_, e.start_, e.end_) for e in fixed.experts_]
    assert_allclose(fixed.pool_.objective_, _pool_nll(fixed.weights_, parts, y_enc, offsets)[0])
    for expert, cols in zip(lop.experts_, lop.expert_columns_):
        assert_array_equal(expert.attributes_, lop.attributes_[cols])
        assert len(expert.predict(X)) == len(X)


def test_boundary_positions_equal_the_template_offsets(corpus):
    # On real sentences the offsets read from the boundary symbols are the
    # template's, for every key that has an offset other than 0.
    from sklearn_crfloss.lop import boundary_positions

    X, _ = corpus("conll2002", "esp", "train")
    feats = TemplateFeatures().fit(X[:200])
    inferred = boundary_positions(feats.transform(X[:200]))
    exact = template_positions(feats)
    assert inferred == {k: v for k, v in exact.items() if v != (0,)}
    assert set(exact) - set(inferred) == {"U02", "U12"}
    # a key spanning both sides, on length-1 sentences, is "at"; non-str values are ignored
    assert boundary_positions([[{"a": "_B-1/_B+1", "n": 1.0}]] * 2) == {"a": (-1, 0, 1)}
    assert boundary_positions([[], [{"w": "x"}]]) == {}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("experts", ["simple", "positional", "label", "random"])
def test_every_expert_set_after_template_features(corpus, experts):
    # Pipeline([TemplateFeatures(), LOPTagger(experts=...)]) with defaults
    # (only the experts' fit shortened): the positional groups are the
    # template's behind / at / ahead keys, the simple expert's the current token's.
    from sklearn.pipeline import make_pipeline

    X, y = corpus("conll2002", "esp", "train")
    X, y = X[:40], y[:40]
    pipe = make_pipeline(TemplateFeatures(), LOPTagger(experts=experts, estimator=FAST,
                                                       random_state=0)).fit(X, y)
    lop = pipe[-1]
    assert_allclose(lop.weights_, np.full(len(lop.experts_), 1 / len(lop.experts_)))
    keys = [sorted({a.split(":")[0] for a in lop.attributes_[c]})
            for c in lop.expert_columns_[1:]]
    offsets = template_positions(pipe[0])
    if experts == "positional":
        assert keys == [sorted(k for k, o in offsets.items() if max(o) < 0),
                        sorted(k for k, o in offsets.items() if min(o) <= 0 <= max(o)),
                        sorted(k for k, o in offsets.items() if min(o) > 0)]
    elif experts == "simple":
        assert keys == [["U02", "U12"]]
    pred = pipe.predict(X[:5])
    assert [len(p) for p in pred] == [len(s) for s in X[:5]]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_cv_weights_maximise_the_held_out_likelihood():
    # weights='cv' equals the weights fitted by hand on held-out folds, each
    # scored by experts refitted without it; the pooled experts are the full fits.
    from sklearn.base import clone

    X, y = _toy(40)
    cv = KFold(2)
    lop = LOPTagger(experts="positional", weights="cv", cv=cv, estimator=FAST).fit(X, y)
    full = LOPTagger(experts="positional", estimator=FAST).fit(X, y)
    assert_allclose(lop.pool_.coef_.shape, full.pool_.coef_.shape)
    for a, b in zip(lop.experts_, full.experts_):
        assert_allclose(a.coef_, b.coef_)
    blocks = []
    for train, test in cv.split(X):
        fold = LOPTagger(experts="positional", estimator=FAST).fit(
            [X[i] for i in train], [y[i] for i in train])
        Xt, yt = [X[i] for i in test], [y[i] for i in test]
        unary_offsets = [e._potentials(Xt) for e in fold.experts_]
        parts = [(u, e.transition_, e.start_, e.end_)
                 for (u, _, _), e in zip(unary_offsets, fold.experts_)]
        y_enc = np.searchsorted(fold.classes_, np.concatenate(yt))
        blocks.append((parts, y_enc, unary_offsets[0][1]))
    expected, _ = _fit_weights(blocks, max_iter=200, tol=1e-7)
    assert_allclose(lop.weights_, expected, rtol=1e-6)
    assert lop.weights_n_iter_ > 0 and not np.allclose(lop.weights_, 0.25)
    assert clone(lop).get_params()["cv"].n_splits == 2
