"""The vector builds of the chain kernels (sklearn_crfloss._chain._dispatch).

A portable build compiles the chain kernel modules for the baseline
instruction set and, for the modules listed in _ext/meson.build and where the
compiler can, for AVX2 and AVX-512; per module, the widest copy the CPU runs
is used. Every build this machine can run must give the results of the
baseline one, up to rounding.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose

import sklearn_crfloss.losses._fused as fused_module
import sklearn_crfloss._model._objective as objective_module
from sklearn_crfloss._chain import _dispatch as _simd
from sklearn_crfloss.losses import LabelwiseAccuracyLoss, Risk, SoftmaxMargin

from test_objective import make_objective


def runnable_builds():
    """The builds this installation has and this CPU can run, baseline first."""
    builds = ["baseline"]
    features = _simd._cpu_features()
    for build, needs in reversed(list(_simd._BUILDS.items())):
        try:
            _simd.kernel_modules(build)
        except ImportError:
            continue
        if all(features.get(f) for f in needs):
            builds.append(build)
    return builds


def build_modules(build):
    """A build's kernel modules, the baseline ones where it has no copy."""
    return {**_simd.kernel_modules("baseline"), **_simd.kernel_modules(build)}


def evaluate(build, loss, monkeypatch):
    modules = build_modules(build)
    monkeypatch.setattr(objective_module, "cll_features_batch",
                        modules["_forward_backward"].cll_features_batch)
    monkeypatch.setattr(fused_module, "marginal_loss_features_batch",
                        modules["_fused_losses"].marginal_loss_features_batch)
    rng = np.random.default_rng(0)
    objective, theta, _ = make_objective(rng, n_labels=13, n_features=20, binary=False,
                                         weighted=True, lengths=tuple(range(1, 30)))
    return objective.loss_value_and_grad(theta, loss)


def test_each_module_runs_the_widest_runnable_build_that_has_it():
    for name in _simd.MODULES:
        widest = [b for b in runnable_builds() if name in _simd.kernel_modules(b)][-1]
        assert _simd.KERNEL_BUILD[name] == widest, name
    assert _simd.cll_features_batch is _simd.kernel_modules(
        _simd.KERNEL_BUILD["_forward_backward"])["_forward_backward"].cll_features_batch
    assert _simd.viterbi_batch is _simd.kernel_modules(
        _simd.KERNEL_BUILD["_viterbi"])["_viterbi"].viterbi_batch


@pytest.mark.parametrize("loss", [None, SoftmaxMargin(), Risk(), LabelwiseAccuracyLoss()],
                         ids=["cll", "softmax_margin", "risk", "labelwise"])
def test_every_runnable_build_gives_the_baseline_results(loss, monkeypatch):
    from sklearn_crfloss.losses import ConditionalLogLikelihood

    loss = ConditionalLogLikelihood() if loss is None else loss
    value, grad = evaluate("baseline", loss, monkeypatch)
    for build in runnable_builds()[1:]:
        other_value, other_grad = evaluate(build, loss, monkeypatch)
        assert_allclose(other_value, value, rtol=1e-12)
        assert_allclose(other_grad, grad, rtol=1e-10, atol=1e-12 * np.abs(grad).max())


def test_an_unknown_build_is_an_import_error():
    with pytest.raises(ImportError):
        _simd.kernel_modules("sse9")


def use_build(build, monkeypatch):
    """Point the inference functions at one build's kernels."""
    import sklearn_crfloss.inference as inference

    modules = build_modules(build)
    for name in ("forward_backward_batch", "marginals_vjp_batch", "max_incorrect_batch",
                 "max_marginals_batch", "n_best_batch", "segment_margins_batch",
                 "viterbi_batch"):
        kernel = next(getattr(m, name) for m in modules.values() if hasattr(m, name))
        monkeypatch.setattr(inference, name, kernel)
    return inference


def test_every_runnable_build_gives_the_baseline_inference(monkeypatch):
    rng = np.random.default_rng(1)
    L, lengths = 13, rng.integers(1, 12, size=30)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    n = offsets[-1]
    unary, transition = rng.normal(size=(n, L)), rng.normal(size=(L, L))
    start, end = rng.normal(size=L), rng.normal(size=L)
    y = rng.integers(L, size=n).astype(np.intp)
    grad = rng.normal(size=(n, L))
    segments = (np.arange(30), np.zeros(30, dtype=np.intp), np.minimum(lengths, 2))

    def run(build):
        inf = use_build(build, monkeypatch)
        fb = inf.forward_backward(unary, transition, start, end, offsets)
        mm = inf.max_marginals(unary, transition, start, end, offsets)
        return [fb.log_z, fb.marginals, fb.transition_counts,
                *inf.marginals_vjp(unary, transition, start, end, offsets, grad),
                *inf.viterbi(unary, transition, start, end, offsets),
                *inf.viterbi_excluding(unary, transition, start, end, offsets, y),
                mm.alpha, mm.beta, mm.bp_fwd, mm.bp_bwd,
                *inf.segment_margins(unary, transition, start, end, offsets, y, segments,
                                     coef=np.ones(30))[:2]]

    reference = run("baseline")
    for build in runnable_builds()[1:]:
        for got, expected in zip(run(build), reference):
            assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_a_module_without_a_copy_runs_its_next_widest_build(monkeypatch):
    real_import = _simd._import
    dropped = {("_viterbi", "avx512"), ("_viterbi", "avx2"), ("_potentials", "avx512")}

    def without_copies(name, build):
        if (name, build) in dropped:
            raise ImportError(f"no {name}_{build}")
        return real_import(name, build)

    monkeypatch.setattr(_simd, "_import", without_copies)
    builds, modules = _simd._select()
    runnable = runnable_builds()
    assert builds["_viterbi"] == "baseline"
    assert modules["_viterbi"] is _simd.kernel_modules("baseline")["_viterbi"]
    expected = "avx2" if "avx2" in runnable and "_potentials" in _simd.kernel_modules("avx2") \
        else "baseline"
    assert builds["_potentials"] == expected
    assert modules["_potentials"].__name__.endswith(
        "" if expected == "baseline" else "_avx2")
    assert builds["_forward_backward"] == _simd.KERNEL_BUILD["_forward_backward"]
