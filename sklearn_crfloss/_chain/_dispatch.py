"""The chain kernels for this CPU: per module, the widest vector build it can run.

A portable build (the default; ``-Dnative_arch=true`` compiles everything
for the building machine instead) compiles the kernels that the training
objective and the inference functions call (``_potentials``,
``_forward_backward``, ``_fused_losses``, ``_marginal_vjp``, ``_viterbi``,
``_max_marginals``, ``_chunk_queries``, ``_positions``) for the baseline
x86-64 instruction set and, for the modules where it measured faster, also
with AVX2 + FMA (modules ``*_avx2``) and with AVX-512 (F, CD, BW, DQ, VL;
modules ``*_avx512``); ``_ext/meson.build`` lists which. For each module,
the widest copy that this installation has and whose instructions numpy's
CPU detection reports is imported; elsewhere (other architectures, a build
without the copies, a module without them) the baseline kernels run. All
give the same results up to rounding (fused multiply-adds round once).
"""

import importlib

__all__ = ["KERNEL_BUILD", "chunk_queries_batch", "chunk_segments", "cll_features_batch", "forward_backward_batch",
           "marginal_loss_features_batch", "marginals_vjp_batch", "max_incorrect_batch",
           "max_incorrect_from_tables",
           "max_marginals_batch", "mce_f_labels_batch", "n_best_batch", "pair_gradient",
           "pair_potentials",
           "position_cll_features_batch", "position_forward_backward_batch",
           "position_viterbi_batch", "segment_margins_batch", "span_gradients_batch", "viterbi_batch"]

#: The kernel modules that have vector builds.
MODULES = ("_potentials", "_forward_backward", "_fused_losses", "_marginal_vjp", "_viterbi",
           "_max_marginals", "_chunk_queries", "_positions")

#: The CPU features each build needs (numpy's names), widest first.
_BUILDS = {
    "avx512": ("AVX2", "FMA3", "AVX512F", "AVX512CD", "AVX512BW", "AVX512DQ", "AVX512VL"),
    "avx2": ("AVX2", "FMA3"),
}


def _cpu_features():
    """numpy's run-time CPU feature detection, or {} if it is not there."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # numpy < 2
        try:
            from numpy.core._multiarray_umath import __cpu_features__
        except ImportError:
            return {}
    return __cpu_features__


def _import(name, build):
    suffix = "" if build == "baseline" else f"_{build}"
    return importlib.import_module(f"{__package__}.{name}{suffix}")


def kernel_modules(build):
    """The kernel modules that a build ('baseline', 'avx2', 'avx512') has, by name.

    The baseline build has every module of ``MODULES``; a vector build only
    those compiled for it (the others are missing from the dict). Raises
    ImportError if this installation has no module of that build.
    """
    if build == "baseline":
        return {name: _import(name, build) for name in MODULES}
    found = {}
    for name in MODULES:
        try:
            found[name] = _import(name, build)
        except ImportError:  # not compiled for this build, or a native / non-x86 build
            continue
    if not found:
        raise ImportError(f"this installation has no kernel module of the build {build!r}")
    return found


def _select():
    """Per module, the widest build that the CPU runs and this installation has.

    Returns ``(builds, modules)``: the build's name and the module, by module name.
    """
    features = _cpu_features()
    builds = dict.fromkeys(MODULES, "baseline")
    modules = kernel_modules("baseline")
    for build, needs in reversed(_BUILDS.items()):  # narrowest first: wider ones override
        if not all(features.get(f) for f in needs):
            continue
        try:
            found = kernel_modules(build)
        except ImportError:
            continue
        builds.update(dict.fromkeys(found, build))
        modules.update(found)
    return builds, modules


#: The build whose kernels run, by module name: 'avx512', 'avx2' or 'baseline'.
KERNEL_BUILD, _modules = _select()
pair_potentials = _modules["_potentials"].pair_potentials
pair_gradient = _modules["_potentials"].pair_gradient
cll_features_batch = _modules["_forward_backward"].cll_features_batch
forward_backward_batch = _modules["_forward_backward"].forward_backward_batch
marginal_loss_features_batch = _modules["_fused_losses"].marginal_loss_features_batch
marginals_vjp_batch = _modules["_marginal_vjp"].marginals_vjp_batch
viterbi_batch = _modules["_viterbi"].viterbi_batch
n_best_batch = _modules["_viterbi"].n_best_batch
max_incorrect_batch = _modules["_viterbi"].max_incorrect_batch
position_viterbi_batch = _modules["_viterbi"].position_viterbi_batch
max_marginals_batch = _modules["_max_marginals"].max_marginals_batch
segment_margins_batch = _modules["_max_marginals"].segment_margins_batch
span_gradients_batch = _modules["_max_marginals"].span_gradients_batch
max_incorrect_from_tables = _modules["_max_marginals"].max_incorrect_from_tables
mce_f_labels_batch = _modules["_max_marginals"].mce_f_labels_batch
chunk_queries_batch = _modules["_chunk_queries"].chunk_queries_batch
chunk_segments = _modules["_chunk_queries"].chunk_segments
position_forward_backward_batch = _modules["_positions"].position_forward_backward_batch
position_cll_features_batch = _modules["_positions"].position_cll_features_batch
