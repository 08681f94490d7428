"""solver='sgd' (Bottou's SGD, compiled and generic paths), early stopping, verbose."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.exceptions import UndefinedLossError
from sklearn_crfloss._model._objective import CRFObjective
from sklearn_crfloss._model._parameters import ParameterLayout, observed_pairs
from sklearn_crfloss.losses import ConditionalLogLikelihood, get_loss
from sklearn_crfloss.priors import GaussianPrior
from sklearn_crfloss.solvers import SGD, BaseSolver, ConvergenceMonitor
from sklearn_crfloss.solvers._sgd import _compiled_kind, _ScaledModel

from conftest import make_toy_chunks

_CLASSES = np.array(["B-X", "I-X", "O"])


def _problem(seed=3, lengths=(3, 1, 4, 2, 5, 2), n_features=8, labels=None, weights=True):
    """Features, labels, offsets, an observed-pairs layout (not every pair:
    the mask matters) and sequence weights."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    L = _CLASSES.shape[0]
    X = sp.random(offsets[-1], n_features, density=0.35, random_state=seed + 1, format="csr")
    X.data *= 2.0  # not binary: the kernels' valued path
    y = rng.integers(0, L, offsets[-1]).astype(np.intp)
    layout = ParameterLayout(n_features, L, observed_pairs(X, y, L), labels=labels)
    assert not layout.all_states
    w = rng.uniform(0.5, 2.0, len(lengths)) if weights else None
    return X, y, offsets, layout, w


def _loss(name, **params):
    loss = get_loss(name)
    loss.set_params(**params)
    if hasattr(loss, "set_classes"):
        loss.set_classes(_CLASSES)
    return loss


def _reference_steps(X, y, offsets, layout, w, loss, C, orders, eta0, power, avg_start,
                     batch=1, x0=None):
    """Plain SGD in theta itself (no scale, no lazy averaging): every iterate
    and the mean of those after ``avg_start`` sequences. Each gradient comes
    from the batch objective bound to the minibatch's sequences."""
    n = offsets.shape[0] - 1
    lam = 1.0 / (C * n)
    theta = layout.zeros() if x0 is None else x0.copy()
    steps, total, n_avg, t = [], np.zeros_like(theta), 0, 0
    for order in orders:
        for k in range(0, n, batch):
            seqs = order[k:k + batch]
            rows = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in seqs])
            sub = np.concatenate([[0], np.cumsum(offsets[seqs + 1] - offsets[seqs])])
            objective = CRFObjective(X[rows], y[rows], sub.astype(np.intp), layout,
                                     sample_weight=None if w is None else w[seqs])
            _, g = objective.loss_value_and_grad(theta, loss)
            eta = eta0 / (1.0 + eta0 * lam * t) ** power
            theta = (1.0 - eta * lam * len(seqs)) * theta - eta * g
            if t >= avg_start:
                total += theta
                n_avg += 1
            t += len(seqs)
            steps.append(theta.copy())
    return steps, (total / n_avg if n_avg else None)


def _check_steps(name, *, batch=1, labels=None, average_start=None, x0=None, C=2.0,
                 eta0=0.3, power=0.75, **params):
    X, y, offsets, layout, w = _problem(labels=labels)
    loss = _loss(name, **params)
    n = offsets.shape[0] - 1
    rng = np.random.default_rng(5)
    orders = [rng.permutation(n) for _ in range(3)]
    steps, mean = _reference_steps(X, y, offsets, layout, w, loss, C, orders, eta0, power,
                                   np.inf if average_start is None else average_start,
                                   batch=batch, x0=x0)
    objective = CRFObjective(X, y, offsets, layout, sample_weight=w)
    kind, cost = _compiled_kind(loss, layout.n_labels)
    model = _ScaledModel(objective, layout.zeros() if x0 is None else x0, loss, kind, cost,
                         average_start)
    lam = 1.0 / (C * n)
    schedule = (eta0, lam, lam, power)
    k = 0
    for order in orders:
        for p in range(0, n, batch):
            model.run(order[p:p + batch], schedule, batch_size=batch)
            assert_allclose(model.theta(averaged=False), steps[k], rtol=1e-9, atol=1e-12)
            k += 1
    if average_start is not None:
        assert_allclose(model.theta(), mean, rtol=1e-9, atol=1e-12)
    return kind


@pytest.mark.parametrize("name, params, kind", [
    ("cll", {}, 0),
    ("softmax_margin", {"cost_scale": 2.0}, 0),
    ("max_margin", {"cost_scale": 1.5}, 1),
])
@pytest.mark.parametrize("average_start", [None, 1, 7])
def test_compiled_path_equals_plain_sgd_step_by_step(name, params, kind, average_start):
    # The scaled representation, the sparse steps, the masks of the
    # observed pairs and the lazy averaging give exactly the plain SGD
    # iterates (and their mean) of the same schedule.
    assert _check_steps(name, average_start=average_start, **params) == kind


@pytest.mark.parametrize("name, batch", [("risk", 1), ("mce", 3), ("pointwise", 2)])
def test_generic_path_equals_plain_sgd_step_by_step(name, batch):
    assert _check_steps(name, batch=batch, average_start=4) is None


def test_minibatch_of_a_compiled_loss_and_label_expert_tails():
    # batch_size > 1 sends CLL through the generic path; a label expert's
    # layout keeps the transitions outside its labels at exactly 0.
    assert _check_steps("cll", batch=4, labels=[0], average_start=2) == 0
    _check_steps("cll", labels=[1], average_start=None)


def test_scale_fold_keeps_iterates_and_average():
    # eta0 = C n makes the first shrink factor 0: the scale is folded into
    # the weights at once (every step of a large eta0 then folds again).
    X, y, offsets, layout, w = _problem()
    n = offsets.shape[0] - 1
    _check_steps("cll", eta0=2.0 * n, power=1.0, average_start=1)


def test_underflowing_sequence_goes_through_the_loss(monkeypatch):
    # Weights of a few hundred put some sequences past the scaled pass's
    # range bound (MAX_RANGE in _chain.pxd), not all: those are stepped on
    # through the loss's log-space fallback.
    X, y, offsets, layout, w = _problem()
    rng = np.random.default_rng(0)
    x0 = rng.normal(scale=200.0, size=layout.n_params)
    calls = []
    generic = _ScaledModel.generic_step
    monkeypatch.setattr(_ScaledModel, "generic_step",
                        lambda self, *a, **k: calls.append(1) or generic(self, *a, **k))
    _check_steps("cll", x0=x0, average_start=3, eta0=1e-3)
    assert 0 < len(calls) < 3 * (offsets.shape[0] - 1)  # both paths ran


def _toy(n=30, seed=4):
    X, y = make_toy_chunks(n, seed=seed)
    return X, y


def test_sgd_reaches_the_lbfgs_optimum():
    # A small strongly convex problem (C small): SGD, with and without
    # averaging, ends near the L-BFGS optimum in parameters and objective.
    X, y = _toy()
    C = 0.5
    ref = CRFTagger(C=C, tol=1e-12, max_iter=500).fit(X, y)
    for average in (False, True):
        crf = CRFTagger(C=C, solver="sgd", max_iter=60, average=average, random_state=0).fit(X, y)
        theta, opt = np.concatenate([crf.coef_.ravel(), crf.transition_.ravel()]), \
            np.concatenate([ref.coef_.ravel(), ref.transition_.ravel()])
        assert np.linalg.norm(theta - opt) < 0.02 * np.linalg.norm(opt)
        assert crf.n_iter_ == 60 and not crf.converged_  # no early stopping: max_iter


def test_same_random_state_same_model():
    X, y = _toy()
    a = CRFTagger(solver="sgd", max_iter=3, random_state=7).fit(X, y)
    b = CRFTagger(solver="sgd", max_iter=3, random_state=7).fit(X, y)
    c = CRFTagger(solver="sgd", max_iter=3, random_state=8).fit(X, y)
    assert_array_equal(a.coef_, b.coef_)
    assert_array_equal(a.transition_, b.transition_)
    assert a.loss_curve_ == b.loss_curve_
    assert not np.array_equal(a.coef_, c.coef_)


def _bound_toy():
    """The toy data bound as CRFTagger.fit binds it: (objective, layout)."""
    from sklearn_crfloss._data._validation import check_sequences, encode_labels
    from sklearn_crfloss._data._vectorize import SequenceVectorizer

    X, y = _toy()
    kind, tokens, offsets = check_sequences(X)
    classes, y_enc = encode_labels(y, np.diff(offsets))
    Xc = SequenceVectorizer(1, None).fit_transform(kind, tokens, offsets)
    layout = ParameterLayout(Xc.shape[1], len(classes), observed_pairs(Xc, y_enc, len(classes)))
    return CRFObjective(Xc, y_enc, offsets, layout), layout


def _solve(solver, epochs=2):
    objective, layout = _bound_toy()
    theta = solver.solve(objective, ConditionalLogLikelihood(), GaussianPrior(), 1.0,
                         layout.zeros(), ConvergenceMonitor(0, epochs))
    return theta, solver


def test_averaging_changes_the_result_and_starts_when_asked():
    kw = dict(eta0=0.5, power_t=1.0, random_state=0)
    last, _ = _solve(SGD(average=False, **kw))
    late, _ = _solve(SGD(average=10 ** 6, **kw))  # never starts: the last iterate
    avg, _ = _solve(SGD(average=True, **kw))
    assert_array_equal(late, last)
    assert not np.allclose(avg, last)


def test_eta0_auto_is_calibrated_and_deterministic():
    etas = [_solve(SGD(random_state=0), epochs=1)[1].eta0_ for _ in range(2)]
    assert etas[0] == etas[1]
    # crfsgd's candidates are 0.1 * 2**k; the best one is halved with
    # averaging off, kept with averaging on.
    k = np.log2(etas[0] / 0.1)
    assert abs(k - round(k)) < 1e-12
    assert _solve(SGD(random_state=0, average=False), epochs=1)[1].eta0_ == etas[0] / 2
    fixed = _solve(SGD(eta0=0.25, random_state=0), epochs=1)[1]
    assert fixed.eta0_ == 0.25


def test_sgd_decreases_the_objective_of_a_smooth_loss():
    X, y = make_toy_chunks(60, seed=4)
    crf = CRFTagger(loss="cll", solver="sgd", max_iter=8, random_state=0).fit(X, y)
    assert crf.loss_curve_[-1] < crf.loss_curve_[0]
    assert crf.score(X, y) > 0.8


def test_every_batch_loss_trains_with_sgd():
    X, y = _toy(40)
    moved = []
    for loss in ["cll", "softmax_margin", "max_margin", "risk", "jrb", "pointwise", "mixed",
                 "labelwise", "mce", "mce_f"]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            crf = CRFTagger(loss=loss, solver="sgd", max_iter=2, random_state=0,
                            eta0=0.1).fit(X, y)
        assert np.all(np.isfinite(crf.coef_)) and len(crf.loss_curve_) == 2, loss
        if np.any(crf.coef_):
            moved.append(loss)
        else:  # the objective rose from zero: the start is kept, and the fit says so
            assert crf.stop_reason_ == "stalled" and not crf.converged_, loss
            assert any("init='cll'" in str(w.message) for w in caught), loss
    # MCE from zero (all sequences tied) is the one loss two epochs do not improve here.
    assert set(moved) >= {"cll", "softmax_margin", "max_margin", "risk", "jrb", "pointwise",
                          "mixed", "labelwise", "mce_f"}


def test_bad_solver_loss_prior_combinations_raise():
    X, y = _toy(10)
    cases = [
        (dict(solver="sgd", prior="l1"), "supports prior='l2'"),
        (dict(solver="sgd", prior="hyperbolic"), "supports prior='l2'"),
        (dict(solver="sgd", prior=GaussianPrior(mean=0.5)), "zero mean"),
        (dict(solver="sgd", prior=GaussianPrior(feature_dependent=True)), "feature-dependent"),
        (dict(solver="sgd", loss="perceptron"), "own online rule"),
        (dict(solver="sgd", loss="mira"), "own online rule"),
        (dict(solver="lbfgs", loss="max_margin"), "not differentiable"),
        (dict(solver="perceptron", loss="cll"), "trains loss='perceptron' only"),
    ]
    for params, match in cases:
        with pytest.raises(ValueError, match=match):
            CRFTagger(**params).fit(X, y)
        assert not hasattr(CRFTagger(**params), "coef_")
    with pytest.raises(ValueError, match="eta0"):
        CRFTagger(solver="sgd", eta0="fast").fit(X, y)
    with pytest.raises(ValueError, match="at least 2"):
        CRFTagger(early_stopping=True).fit(X[:1], y[:1])


def test_solver_object_keeps_its_own_parameters():
    X, y = _toy()
    solver = SGD(batch_size=3, eta0=0.2, random_state=1)
    a = CRFTagger(solver=solver, max_iter=2, eta0=5.0, random_state=9).fit(X, y)
    b = CRFTagger(solver=solver, max_iter=2).fit(X, y)
    assert_array_equal(a.coef_, b.coef_)  # the estimator's eta0 and random_state do not apply
    assert solver.get_params()["batch_size"] == 3 and not hasattr(solver, "eta0_")
    with pytest.raises(ValueError, match="batch_size"):
        CRFTagger(solver=SGD(batch_size=0)).fit(X, y)


class _CorpusLevelCLL(ConditionalLogLikelihood):
    """CLL that, like a corpus-level ratio, refuses batches of one sequence."""

    min_sequences, error = 2, ValueError

    def value_and_grad(self, unary, transition, start, end, y, offsets, **kwargs):
        if len(offsets) - 1 < self.min_sequences:
            raise self.error(f"needs {self.min_sequences} sequences")
        return super().value_and_grad(unary, transition, start, end, y, offsets, **kwargs)


def test_a_minibatch_on_which_the_loss_is_undefined_raises():
    X, y = _toy(6)
    with pytest.raises(ValueError, match="undefined on a minibatch of 1"):
        CRFTagger(loss=_CorpusLevelCLL(), solver=SGD(batch_size=1, random_state=0)).fit(X, y)
    CRFTagger(loss=_CorpusLevelCLL(), solver=SGD(batch_size=3, random_state=0),
              max_iter=2).fit(X, y)


class _UndefinedOnSmallBatches(_CorpusLevelCLL):
    """CLL that, like an F-score at badly fitted parameters, is undefined on
    fewer than eight sequences."""

    min_sequences, error = 8, UndefinedLossError


def test_sgd_steps_on_a_larger_minibatch_where_the_loss_is_undefined():
    X, y = _toy(32)
    kw = dict(loss=_UndefinedOnSmallBatches(), max_iter=2, random_state=0)
    with pytest.warns(UserWarning, match=r"undefined on 8 of 8 minibatches of 4 .*8 stepped "
                      r"on a larger minibatch, 0 skipped.*batch_size"):
        small = CRFTagger(solver=SGD(batch_size=4, eta0=0.1, random_state=0), **kw).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)  # max_iter=2
        eight = CRFTagger(solver=SGD(batch_size=8, eta0=0.1, random_state=0), **kw).fit(X, y)
    # Every step of 4 was taken on the 8 sequences from it: the same run.
    assert_array_equal(small.coef_, eight.coef_)
    assert_array_equal(small.transition_, eight.transition_)
    # 30 sequences: the last 6 of every epoch cannot be enlarged and are skipped.
    X, y = _toy(30)
    with pytest.warns(UserWarning, match=r"6 stepped on a larger minibatch, 2 skipped"):
        crf = CRFTagger(solver=SGD(batch_size=4, eta0=0.1, random_state=0), **kw).fit(X, y)
    assert np.isfinite(crf.objective_) and np.any(crf.coef_)
    # Undefined on the full batch: the error stays.
    with pytest.raises(ValueError, match="needs 8 sequences"):
        CRFTagger(loss=_UndefinedOnSmallBatches()).fit(X[:7], y[:7])


def test_mce_f_trains_on_minibatches_without_gold_segments():
    # MCE-F is a ratio of corpus sums; a minibatch without gold segments
    # counts its false positives at TP = S (SegmentFScoreMCE).
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "c"}, {"w": "d"}]] * 3
    y = [["O", "O"], ["B-NP", "I-NP"]] * 3
    crf = CRFTagger(loss="mce_f", solver=SGD(batch_size=1, random_state=0), max_iter=3,
                    eta0=0.1).fit(X, y)
    assert np.all(np.isfinite(crf.coef_)) and np.any(crf.coef_)


# ------------------------------------------------------------ early stopping


@pytest.mark.parametrize("solver, loss", [("sgd", "cll"), ("lbfgs", "cll"), ("owlqn", "cll"),
                                          ("rprop", "cll"), ("quickprop", "mce_f"),
                                          ([("sgd", 2), "quickprop"], "mce"),
                                          ("perceptron", "perceptron")], ids=str)
def test_early_stopping_keeps_the_best_parameters(solver, loss):
    X, y = _toy(80, seed=1)
    models = {}
    crf = CRFTagger(loss=loss, solver=solver, early_stopping=True, n_iter_no_change=2,
                    validation_fraction=0.3, max_iter=40, random_state=0, C=10.0, eta0=2.0,
                    callback=lambda k, f, m: models.setdefault(k, m)).fit(X, y)
    scores = crf.validation_scores_
    assert len(scores) == crf.n_iter_ == len(models) and crf.converged_
    best = int(np.argmax(scores)) + 1
    assert crf.best_validation_score_ == max(scores)
    assert_array_equal(crf.coef_, models[best].coef_)
    assert_array_equal(crf.transition_, models[best].transition_)
    # Early stopping ends a run n_iter_no_change reports after the last improvement;
    # else the solver's own test or max_iter did.
    assert crf.stop_reason_ in ("early_stopping", "converged", "max_iter")
    if crf.stop_reason_ == "early_stopping":
        assert crf.n_iter_ - best >= 2


class _NoParams(BaseSolver):
    """A solver that breaks the monitor contract: it reports no parameters."""

    name = "no_params"

    def solve(self, objective, loss, prior, C, x0, monitor):
        monitor.report(1.0)
        monitor.finish(True)
        return x0


def test_a_solver_must_report_its_parameters_for_early_stopping():
    X, y = _toy(10)
    CRFTagger(solver=_NoParams()).fit(X, y)  # fine without early stopping
    with pytest.raises(ValueError, match="reported no parameters"):
        CRFTagger(solver=_NoParams(), early_stopping=True).fit(X, y)


def test_early_stopping_holds_out_sequences_and_scores_them():
    X, y = _toy(50, seed=2)
    crf = CRFTagger(solver="sgd", early_stopping=True, validation_fraction=0.2,
                    random_state=3, scoring="accuracy", max_iter=5).fit(X, y)
    assert len(crf.validation_scores_) == crf.n_iter_
    assert all(0.0 <= s <= 1.0 for s in crf.validation_scores_)
    plain = CRFTagger(solver="sgd", max_iter=5).fit(X, y)
    assert plain.validation_scores_ is None and plain.best_validation_score_ is None
    loss = CRFTagger(solver="sgd", early_stopping=True, random_state=3, scoring="loss",
                     max_iter=5).fit(X, y)
    assert all(s < 0 for s in loss.validation_scores_)


def test_verbose_prints_one_line_per_epoch_with_step_and_validation(capsys):
    X, y = _toy()
    crf = CRFTagger(solver="sgd", max_iter=3, random_state=0, verbose=1,
                    early_stopping=True).fit(X, y)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "] epoch " in ln]
    assert len(lines) == crf.n_iter_ == 3
    assert all("objective" in ln and "eta" in ln and "validation" in ln and ln.endswith(" s")
               for ln in lines)


def test_callback_with_a_model_snapshot():
    X, y = _toy()
    seen = []
    crf = CRFTagger(solver="sgd", max_iter=3, random_state=0,
                    callback=lambda k, f, m: seen.append((k, f, m.score(X, y)))).fit(X, y)
    assert [k for k, _, _ in seen] == [1, 2, 3]
    assert [f for _, f, _ in seen] == crf.loss_curve_
    assert seen[-1][2] == crf.score(X, y)
