import functools
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


@pytest.fixture(scope="session")
def corpus(data_home):
    """Load a CoNLL split once per session: ``corpus("conll2000", "train")``,
    ``corpus("conll2002", "esp", "testa")``.

    Returns the loader's ``(X, y)`` unchanged; the lists are shared by every
    test that asks for the same split, so tests only read them (slice,
    transform), never modify them in place.
    """
    from sklearn_crfloss.datasets import load_conll2000, load_conll2002

    loaders = {"conll2000": load_conll2000, "conll2002": load_conll2002}

    @functools.cache
    def load(name, *args):
        return loaders[name](*args, data_home=data_home, download_if_missing=False)

    return load


def make_toy_chunks(n_sequences=60, seed=0, max_len=8):
    """A small synthetic chunking data set (feature dicts, IOB2 labels).

    Labels follow a Markov chain over O, B-NP, I-NP, B-VP, I-VP; each token's
    word is drawn from a label-specific vocabulary with 20% noise, so a CRF
    learns it well but not perfectly.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    labels = ["O", "B-NP", "I-NP", "B-VP", "I-VP"]
    nxt = {"O": ["O", "B-NP", "B-VP"], "B-NP": ["I-NP", "O", "B-VP"],
           "I-NP": ["I-NP", "O", "B-VP"], "B-VP": ["I-VP", "O", "B-NP"],
           "I-VP": ["O", "B-NP"]}
    vocab = {lab: [f"{lab.lower()}{k}" for k in range(4)] for lab in labels}
    X, y = [], []
    for _ in range(n_sequences):
        n = int(rng.integers(1, max_len + 1))
        lab = ["B-NP" if rng.random() < 0.5 else "O"]
        for _ in range(n - 1):
            options = nxt[lab[-1]]
            lab.append(options[int(rng.integers(len(options)))])
        words = [
            vocab[lab_t][int(rng.integers(4))] if rng.random() > 0.2
            else vocab[labels[int(rng.integers(5))]][0]
            for lab_t in lab
        ]
        X.append([{"w": w, "prev": words[t - 1] if t else "<s>", "bias": 1.0}
                  for t, w in enumerate(words)])
        y.append(lab)
    return X, y


@pytest.fixture
def toy_chunks():
    return make_toy_chunks()


def make_switch_data(n, length, seed, first_labels, step):
    """Labels that keep or flip the previous label as column 1 says: only a bigram sees it.

    Column 0 is the label at the first token (one of ``first_labels``; 'w'
    after); column 1 is 'keep' or 'flip', and ``step(previous_label, op)``
    is the next label. A CRF with unigram features and one transition
    matrix cannot tell a kept from a flipped label; one with
    ``B01:%x[0,1]`` can.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        labels = [str(rng.choice(first_labels))]
        tokens = [(labels[0], "start")]
        for _ in range(length - 1):
            op = str(rng.choice(["keep", "flip"]))
            labels.append(step(labels[-1], op))
            tokens.append(("w", op))
        X.append(tokens)
        y.append(labels)
    return X, y
