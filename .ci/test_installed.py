"""Run the test suite against the installed sklearn_crfloss, not the checkout.

Used by ``.ci/run`` (after installing the wheel into a fresh virtualenv) and
by cibuildwheel's test step (``[tool.cibuildwheel]`` in pyproject.toml)::

    python .ci/test_installed.py path/to/tests [pytest options]

Checks that ``import sklearn_crfloss`` resolves to a ``site-packages`` copy
(the wheel), then runs pytest from a temporary directory, so that neither
the working directory nor the checkout root is on ``sys.path`` (pytest puts
only the tests folder there). The corpora are read from
``SKLEARN_CRFLOSS_DATA``; if it is unset they are downloaded into a
temporary data home first (the loaders check their sha256).
"""

import os
import sys
import tempfile
from pathlib import Path


def main():
    """Check the import location, get the data, run pytest; return its exit code."""
    tests = Path(sys.argv[1]).resolve()
    checkout = tests.parent
    sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != checkout]

    import sklearn_crfloss

    location = Path(sklearn_crfloss.__file__).resolve()
    if "site-packages" not in location.parts or location.parent == checkout / "sklearn_crfloss":
        sys.exit(f"sklearn_crfloss is imported from {location}, not from an installed wheel")
    print(f"testing the installed sklearn_crfloss {sklearn_crfloss.__version__} at {location.parent}")

    if not os.environ.get("SKLEARN_CRFLOSS_DATA"):
        from sklearn_crfloss.datasets import load_conll2000, load_conll2002

        os.environ["SKLEARN_CRFLOSS_DATA"] = tempfile.mkdtemp(prefix="sklearn_crfloss_data_")
        for subset in ("train", "test"):
            load_conll2000(subset)
        for subset in ("train", "testa", "testb"):
            load_conll2002("esp", subset)
    os.environ["SKLEARN_CRFLOSS_DATA"] = os.path.abspath(os.environ["SKLEARN_CRFLOSS_DATA"])

    import pytest

    os.chdir(tempfile.mkdtemp(prefix="sklearn_crfloss_tests_"))
    return pytest.main([str(tests), "-p", "no:cacheprovider", *sys.argv[2:]])


# The guard matters: the dask test starts worker processes that import this
# script again as their main module (multiprocessing's spawn).
if __name__ == "__main__":
    sys.exit(main())
