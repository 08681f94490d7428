"""Real data in CI: a CoNLL-2000 subset through the whole pipeline.

The full corpus is the example's and the benchmark's job; here the first
1,000 training sentences keep the suite fast.
"""

import numpy as np
import pytest
from sklearn.pipeline import Pipeline

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures
from sklearn_crfloss.metrics import segment_f1_score, segment_report, token_accuracy


@pytest.fixture(scope="module")
def conll_subset(data_home):
    X_train, y_train = load_conll2000("train")
    X_test, y_test = load_conll2000("test")
    return X_train[:1000], y_train[:1000], X_test[:500], y_test[:500]


def test_pipeline_on_conll2000_subset(conll_subset):
    X_train, y_train, X_test, y_test = conll_subset
    pipe = Pipeline([
        ("features", TemplateFeatures(CONLL2000_TEMPLATE)),
        ("crf", CRFTagger(loss="cll", prior="l2", C=1.0, n_jobs=2)),
    ])
    pipe.fit(X_train, y_train)
    crf = pipe.named_steps["crf"]
    assert crf.converged_
    pred = pipe.predict(X_test)
    f1 = segment_f1_score(y_test, pred)
    # 1,000 sentences are about 1/9 of the corpus: well above a
    # label-bigram baseline, below the full-corpus 93.7.
    assert 0.85 < f1 < 0.95
    assert token_accuracy(y_test, pred) > 0.90
    report = segment_report(y_test, pred, output_dict=True)
    assert "NP" in report
    # Training-set fit is better than test (a sanity check of the objective).
    assert segment_f1_score(y_train, pipe.predict(X_train)) > f1
    # Marginals agree with the Viterbi path on most tokens.
    features = pipe[:-1].transform(X_test[:50])
    mea = [crf.classes_[m.argmax(axis=1)] for m in crf.predict_marginals(features)]
    agree = np.mean(np.concatenate([a == b for a, b in zip(mea, pred[:50])]))
    assert agree > 0.97
