"""Real data in CI for the marginal losses: a small CoNLL-2002 Spanish subset.

The full Table 1 layout is the benchmark's job
(benchmarks/conll2002_marginal_losses.py); 150 training sentences keep
this fast.
"""

import numpy as np
import pytest

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.decoding import iob2_allowed
from sklearn_crfloss.features import TemplateFeatures
from sklearn_crfloss.losses import MixedLoss
from sklearn_crfloss.metrics import segment_f1_score, token_accuracy

TEMPLATE = "U00:%x[-1,0]\nU01:%x[0,0]\nU02:%x[1,0]\nU03:%x[0,1]\nU04"


@pytest.fixture(scope="module")
def esp_subset(corpus):
    X, y = corpus("conll2002", "esp", "train")
    Xa, ya = corpus("conll2002", "esp", "testa")
    feats = TemplateFeatures(TEMPLATE).fit([])
    return feats.transform(X[:150]), y[:150], feats.transform(Xa[:150]), ya[:150]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_markov_loss_mea_and_iob2_on_conll2002_subset(esp_subset):
    F, y, Fa, ya = esp_subset
    crf = CRFTagger(loss=MixedLoss(markov_order=3), init="cll", C=1.0, max_iter=40,
                    constraints="iob2").fit(F, y)
    assert crf.init_n_iter_ > 0 and crf.n_iter_ > 0
    pred = crf.predict(Fa)
    f1 = segment_f1_score(ya, pred)
    # 150 sentences (~2 % of the corpus) with word features only: about
    # 0.29, well above zero, far below the full-data ~77.
    assert 0.2 < f1 < 0.8
    allowed, start = iob2_allowed(crf.classes_)
    for p in pred:
        idx = np.searchsorted(crf.classes_, p)
        assert start[idx[0]] and np.all(allowed[idx[:-1], idx[1:]])
    crf.set_params(decoder="mea", constraints=None)
    # 'O' alone is right on about 85 % of the tokens; MEA must do better.
    all_o = token_accuracy(ya, [["O"] * len(s) for s in ya])
    assert token_accuracy(ya, crf.predict(Fa)) > all_o + 0.01
