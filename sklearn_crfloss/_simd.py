"""The sum-product kernels for this CPU: the widest vector build it can run.

A portable build (the default; ``-Dnative_arch=true`` compiles everything
for the building machine instead) compiles ``_forward_backward`` and
``_fused_losses`` three times: for the baseline x86-64 instruction set,
with AVX2 + FMA (modules ``*_avx2``) and with AVX-512 (F, CD, BW, DQ, VL;
modules ``*_avx512``). The widest copy whose instructions numpy's CPU
detection reports is imported; elsewhere (other architectures, or a build
without the copies) the baseline kernels run. All give the same results up
to rounding (fused multiply-adds round once).
"""

import importlib

from . import _forward_backward, _fused_losses

__all__ = ["KERNEL_BUILD", "cll_features_batch", "forward_backward_batch",
           "marginal_loss_features_batch"]

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


def kernel_modules(build):
    """``(_forward_backward, _fused_losses)`` of a build ('baseline', 'avx2', 'avx512').

    Raises ImportError if this installation has no such build.
    """
    if build == "baseline":
        return _forward_backward, _fused_losses
    return tuple(importlib.import_module(f"{__package__}.{name}_{build}")
                 for name in ("_forward_backward", "_fused_losses"))


def _select():
    """The widest build the CPU runs and this installation has, and its modules."""
    features = _cpu_features()
    for build, needs in _BUILDS.items():
        if all(features.get(f) for f in needs):
            try:
                return build, kernel_modules(build)
            except ImportError:  # a native or non-x86 build has no copies
                continue
    return "baseline", kernel_modules("baseline")


#: The build whose kernels run: 'avx512', 'avx2' or 'baseline'.
KERNEL_BUILD, (_fb, _fused) = _select()
cll_features_batch = _fb.cll_features_batch
forward_backward_batch = _fb.forward_backward_batch
marginal_loss_features_batch = _fused.marginal_loss_features_batch
