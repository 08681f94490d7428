import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def data_home():
    """The data directory: SKLEARN_CRFLOSS_DATA, else ../shared/data beside the checkout.

    Tests that need real data fail (never skip) when it is missing.
    """
    env = os.environ.get("SKLEARN_CRFLOSS_DATA")
    path = Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "data"
    assert (path / "conll2000" / "train.txt").is_file(), (
        f"CoNLL data not found under {path}; set SKLEARN_CRFLOSS_DATA to the data folder "
        "(in CI: ../shared/data)."
    )
    os.environ["SKLEARN_CRFLOSS_DATA"] = str(path)
    return path
