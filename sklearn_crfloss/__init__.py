"""sklearn-crfloss: linear-chain CRFs trained with the loss that matches the evaluation.

The estimator is :class:`CRFTagger` (and :class:`LOPTagger` for
logarithmic opinion pools of CRFs); losses live in :mod:`sklearn_crfloss.losses`,
priors in :mod:`sklearn_crfloss.priors`, training procedures in
:mod:`sklearn_crfloss.solvers`, decoders in :mod:`sklearn_crfloss.decoding`,
inference on potentials in :mod:`sklearn_crfloss.inference`, label schemes and
chunks in :mod:`sklearn_crfloss.segments`, evaluation (conlleval segment F1,
scorers) in :mod:`sklearn_crfloss.metrics`, feature templates in
:mod:`sklearn_crfloss.features`, corpora in :mod:`sklearn_crfloss.datasets`
and warnings in :mod:`sklearn_crfloss.exceptions`.
"""

import os as _os
import sys as _sys


def _has_kernels():
    """Whether the compiled kernels can be found, without importing anything that needs them."""
    name, path = __name__ + "._chain._potentials", [_os.path.join(__path__[0], "_chain")]
    return any(finder.find_spec(name, path) is not None for finder in _sys.meta_path
               if hasattr(finder, "find_spec"))


# The compiled kernels exist only in a built package (pip install ., or -e).
if not _has_kernels():
    raise ImportError(
        f"sklearn_crfloss was imported from {__path__[0]}, which has no compiled "
        "kernels (sklearn_crfloss._chain._potentials etc. are built by meson-python at "
        "install time). This happens when the checkout root comes first on sys.path "
        "(python run from the checkout root, python -m pytest). Run from another "
        "directory (pytest tests works from the root), or install in editable mode: "
        "pip install --no-build-isolation -e ."
    )

from ._tagger import CRFTagger
from ._version import __version__
from .lop import LOPTagger

__all__ = ["CRFTagger", "LOPTagger", "__version__"]
