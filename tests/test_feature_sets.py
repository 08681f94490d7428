"""The feature-set transformers: exact dicts, column layouts, pipelines, file and table errors."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.features import (ChunkFeatures, EmbeddingFeatures, FeatureDictUnion,
                                      NERFeatures, POSFeatures, TemplateFeatures,
                                      WordClusterFeatures, read_word_clusters)

SENT = [("He", "PRP", "B-NP"), ("reckons", "VBZ", "B-VP"), ("Jan-2", "NNP", "B-NP")]
CLUSTERS = {"He": "0010", "reckons": "110110", "the": "0111"}
EMB = {"He": [1.0, -1.0], "reckons": [3.0, -3.0]}


def _toy(n=12):
    X = [[("He", "PRP"), ("reckons", "VBZ"), ("the", "DT"), ("deficit", "NN")],
         [("The", "DT"), ("Madrid", "NNP"), ("bank", "NN")]] * (n // 2)
    y = [["B-NP", "B-VP", "B-NP", "I-NP"], ["B-NP", "I-NP", "I-NP"]] * (n // 2)
    return X, y


def test_chunk_features_exact():
    rows = ChunkFeatures(window=1, pos_ngram_order=2).fit([]).transform([SENT[:2]])[0]
    assert rows[1] == {
        "w[-1]": "He", "w[0]": "reckons", "w[+1]": "_B+1",
        "w[-1]|w[0]": "He|reckons", "w[0]|w[+1]": "reckons|_B+1",
        "pos[-1]": "PRP", "pos[0]": "VBZ", "pos[+1]": "_B+1",
        "pos[-1]|pos[0]": "PRP|VBZ", "pos[0]|pos[+1]": "VBZ|_B+1"}
    # The defaults: Sha & Pereira's 19 features, those of CRF++'s template.
    assert len(ChunkFeatures().fit([]).transform([SENT])[0][1]) == 19
    extra = ChunkFeatures(window=0, pos_column=None, suffix_length=2, shape=True)
    assert extra.fit([]).transform([SENT])[0][2] == {
        "w[0]": "Jan-2", "suf1": "2", "suf2": "-2", "shape": "Xxx-d"}


def test_chunk_features_same_model_as_the_crfpp_template():
    X, y = _toy()
    a = CRFTagger(max_iter=30).fit(ChunkFeatures().fit_transform(X), y)
    b = CRFTagger(max_iter=30).fit(TemplateFeatures().fit_transform(X), y)
    np.testing.assert_allclose(a.objective_, b.objective_, rtol=1e-10)


def test_ner_features_exact_word_only_tokens():
    words = [[("El",), ("Real-2",)]]
    rows = NERFeatures(window=1, affix_length=2, conjunctions=False).fit([]).transform(words)[0]
    assert rows[0] == {"lower[0]": "el", "pre1[0]": "E", "suf1[0]": "l", "shape[0]": "Xx",
                       "sshape[0]": "Xx", "title[0]": True, "lower[-1]": "_B-1",
                       "lower[+1]": "real-2", "shape[+1]": "Xxxx-d", "sshape[+1]": "Xx-d",
                       "BOS": True}
    assert rows[1] == {"lower[0]": "real-2", "pre1[0]": "R", "pre2[0]": "Re", "suf1[0]": "2",
                       "suf2[0]": "-2", "shape[0]": "Xxxx-d", "sshape[0]": "Xx-d",
                       "title[0]": True, "digit[0]": True, "hyphen[0]": True,
                       "lower[-1]": "el", "shape[-1]": "Xx", "sshape[-1]": "Xx",
                       "lower[+1]": "_B+1", "EOS": True}
    # The conjunctions: the cased word, word bigrams, the short-shape trigram; no POS column.
    full = NERFeatures(window=1, affix_length=2).fit([]).transform(words)[0]
    assert {k: v for k, v in full[1].items() if k not in rows[1]} == {
        "word[0]": "Real-2", "lower[-1]|lower[0]": "el|real-2",
        "lower[0]|lower[+1]": "real-2|_B+1", "sshape[-1..+1]": "Xx|Xx-d|_"}
    assert full[0]["lower[-1]|lower[0]"] == "_B-1|el"


def test_ner_features_pos_conjunctions():
    row = NERFeatures().fit([]).transform([SENT])[0]
    assert (row[0]["pos[-1]|pos[0]"], row[0]["pos[0]|pos[+1]"]) == ("_|PRP", "PRP|VBZ")
    assert row[-1]["pos[0]|pos[+1]"] == f"{SENT[-1][1]}|_"


def test_ner_features_columns_where_present_and_layouts():
    f = NERFeatures(window=1, context_features=("pos", "chunk")).fit([])
    row = f.transform([SENT])[0][1]
    assert (row["pos[0]"], row["chunk[0]"], row["pos[-1]"], row["chunk[+1]"]) == (
        "VBZ", "B-VP", "PRP", "B-NP")
    assert "lower[-1]" not in row
    two = f.transform([[t[:2] for t in SENT]])[0][1]  # CoNLL-2002 (word, POS)
    assert "pos[0]" in two and not any(k.startswith("chunk") for k in two)
    # Another layout: (POS, word) tokens, no chunk column.
    swapped = NERFeatures(word_column=1, pos_column=0, chunk_column=None, window=0).fit([])
    row = swapped.transform([[("PRP", "He")]])[0][0]
    assert (row["lower[0]"], row["pos[0]"]) == ("he", "PRP")
    with pytest.raises(ValueError, match="unknown group"):
        NERFeatures(context_features=("words",)).fit([])
    with pytest.raises(ValueError, match="Sentence 0, token 1: the word is column 1"):
        swapped.transform([[("PRP", "He"), ("VBZ",)]])
    with pytest.raises(ValueError, match="Sentence 1, token 0"):
        swapped.transform([[("PRP", "He")], ["He"]])


def test_pos_features_exact():
    rows = POSFeatures(window=1, affix_length=3).fit([]).transform([[("Pre-war", "JJ"), ("1",)]])
    assert rows[0][0] == {"w[-1]": "_B-1", "w[0]": "Pre-war", "w[+1]": "1",
                          "pre1": "P", "pre2": "Pr", "pre3": "Pre",
                          "suf1": "r", "suf2": "ar", "suf3": "war",
                          "upper": True, "hyphen": True, "shape": "Xxx-xxx"}
    assert rows[0][1] == {"w[-1]": "Pre-war", "w[0]": "1", "w[+1]": "_B+1", "digit": True,
                          "shape": "d"}


def test_word_cluster_features_exact_and_file(tmp_path):
    path = tmp_path / "paths"
    path.write_text("0010\tHe\t5\n110110\treckons\t2\n\n0111\tthe\t9\n", encoding="utf-8")
    assert read_word_clusters(path) == CLUSTERS
    rows = WordClusterFeatures(path, prefix_lengths=(2, 4), window=1).fit([]).transform(
        [[("He",), ("reckons",), ("x",)]])[0]
    assert rows == [{"c2[0]": "00", "c4[0]": "0010", "c2[+1]": "11", "c4[+1]": "1101"},
                    {"c2[-1]": "00", "c4[-1]": "0010", "c2[0]": "11", "c4[0]": "1101"},
                    {"c2[-1]": "11", "c4[-1]": "1101"}]
    low = WordClusterFeatures({"he": "01"}, prefix_lengths=(4,), window=0, lowercase=True)
    assert low.fit([]).transform([[("He",)]]) == [[{"c4[0]": "01"}]]


@pytest.mark.parametrize("text, match", [
    ("0010 He 5\n", "line 1: expected 'bitstring<TAB>word<TAB>count'"),
    ("0010\tHe\t5\n01a\tthe\t3\n", "line 2: the cluster '01a' is not a bit string"),
    ("0010\tHe\tfive\n", "line 1: the count 'five'"),
    ("0010\tHe\t5\n0011\tHe\t1\n", "line 2: the word 'He' is listed twice"),
    ("\n\n", "no word clusters"),
])
def test_cluster_file_errors(tmp_path, text, match):
    path = tmp_path / "paths"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        WordClusterFeatures(path).fit([])


def test_cluster_map_and_prefix_errors():
    with pytest.raises(ValueError, match="the value of 'a' is '012'"):
        WordClusterFeatures({"a": "012"}).fit([])
    with pytest.raises(ValueError, match="prefix_lengths must be positive"):
        WordClusterFeatures({"a": "01"}, prefix_lengths=(0, 4)).fit([])
    with pytest.raises(FileNotFoundError):
        WordClusterFeatures("/nonexistent/paths").fit([])


def test_embedding_scaling_and_features():
    table = np.array([[1.0, -1.0], [3.0, -3.0]])
    emb = EmbeddingFeatures(table, vocabulary=["He", "reckons"], window=1).fit([])
    # Turian et al. eq. 1: E * 0.1 / std(E); std of the table is sqrt(5).
    np.testing.assert_allclose(emb.vectors_, table * 0.1 / np.sqrt(5.0))
    assert emb.vectors_.std() == pytest.approx(0.1)
    rows = emb.transform([[("He",), ("x",)]])[0]
    v = emb.vectors_[0]
    assert rows == [{"emb0[0]": v[0], "emb1[0]": v[1]}, {"emb0[-1]": v[0], "emb1[-1]": v[1]}]
    dict_emb = EmbeddingFeatures(EMB, scale=0.5, window=0).fit([])
    assert dict_emb.vectors_.std() == pytest.approx(0.5)
    unk = EmbeddingFeatures(EMB, scale=None, window=0, unknown_word="He").fit([])
    assert unk.transform([[("zzz",)]]) == [[{"emb0[0]": 1.0, "emb1[0]": -1.0}]]


@pytest.mark.parametrize("kwargs, match", [
    (dict(embeddings=np.ones((2, 2)), vocabulary=["a"]), "one word per row"),
    (dict(embeddings=np.ones((2, 2)), vocabulary=["a", "b"]), "no standard deviation"),
    (dict(embeddings={"a": [1.0, 2.0], "b": [1.0]}), "same length"),
    (dict(embeddings={"a": [1.0, np.nan], "b": [1.0, 2.0]}), "vector of 'a' has a NaN"),
    (dict(embeddings=np.eye(2), vocabulary=["a", "a"]), "listed twice"),
    (dict(embeddings=EMB, unknown_word="*UNK*"), "not in the table"),
])
def test_embedding_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        EmbeddingFeatures(**kwargs).fit([])


@pytest.mark.parametrize("features", [
    ChunkFeatures(), NERFeatures(), POSFeatures(), WordClusterFeatures(CLUSTERS),
    EmbeddingFeatures(EMB), FeatureDictUnion([("t", TemplateFeatures()),
                                              ("c", WordClusterFeatures(CLUSTERS))]),
], ids=lambda f: type(f).__name__)
def test_pipeline_with_tagger(features):
    X, y = _toy()
    pipe = make_pipeline(clone(features), CRFTagger(max_iter=20)).fit(X, y)
    assert [len(s) for s in pipe.predict(X[:2])] == [4, 3]
    assert clone(features).get_params().keys() == features.get_params().keys()


def test_grid_search_over_a_feature_parameter():
    X, y = _toy()
    pipe = make_pipeline(NERFeatures(), CRFTagger(max_iter=10))
    search = GridSearchCV(pipe, {"nerfeatures__window": [0, 1],
                                 "nerfeatures__affix_length": [2]}, cv=2).fit(X, y)
    assert search.best_params_["nerfeatures__window"] in (0, 1)
    union = make_pipeline(FeatureDictUnion([("chunk", ChunkFeatures()),
                                            ("pos", POSFeatures())]), CRFTagger(max_iter=10))
    GridSearchCV(union, {"featuredictunion__chunk__window": [1, 2]}, cv=2).fit(X, y)


def test_feature_dict_union_keys():
    X = [[("He", "PRP"), ("ran", "VBD")]]
    union = FeatureDictUnion([("t", TemplateFeatures(["U0:%x[0,0]", "B1:%x[0,1]"])),
                              ("c", ChunkFeatures(window=0, pos_ngram_order=1))])
    assert union.fit_transform(X)[0][1] == {"t__U0": "ran", "~t__B1": "VBD",
                                            "c__w[0]": "ran", "c__pos[0]": "VBD"}
    plain = clone(union).set_params(verbose_feature_names_out=False)
    plain.set_params(t=TemplateFeatures(["U0:%x[0,0]"]))
    assert plain.fit_transform(X)[0][0] == {"U0": "He", "w[0]": "He", "pos[0]": "PRP"}
    clash = FeatureDictUnion([("a", ChunkFeatures(window=0)), ("b", POSFeatures(window=0))],
                             verbose_feature_names_out=False)
    with pytest.raises(ValueError, match=r"Sentence 0, token 0: two transformers give the "
                                         r"key 'w\[0\]'"):
        clash.fit_transform(X)
    assert "transformer_weights" not in union.get_params()


def test_bad_input_and_set_output():
    for f in (ChunkFeatures(), NERFeatures(), POSFeatures()):
        f.fit([])
        with pytest.raises(ValueError, match="X must be a list of sentences"):
            f.transform("He reckons")
        with pytest.raises(TypeError, match="Sentence 0, token 0: expected a token tuple"):
            f.transform([[{"w": "He"}]])
        with pytest.raises(ValueError, match="cannot output 'pandas'"):
            f.set_output(transform="pandas")
        assert f.transform([[]]) == [[]]


FAR_OFFSET = textwrap.dedent("""
    import resource, time
    from sklearn_crfloss.features import TemplateFeatures
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    f = TemplateFeatures(["U01:%x[1000000000,0]", "U02:%x[-1000000000,0]/%x[0,0]"]).fit([])
    rows = f.transform([[("a",), ("b",)]] * 1000)
    seconds = time.perf_counter() - t0
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert rows[0][1] == {"U01": "_B+1000000000", "U02": "_B-999999999/b"}, rows[0]
    assert seconds < 2.0 and grown_kb < 50_000, (seconds, grown_kb)
""")


def test_far_template_offsets_need_no_padding():
    # Before: every boundary symbol up to the offset was built (10**7: 967 MB).
    subprocess.run([sys.executable, "-c", FAR_OFFSET], check=True, timeout=120)
    # Offsets that worked before keep their symbols.
    rows = TemplateFeatures(["U0:%x[-3,0]/%x[70,0]", "U1:%x[-64,0]"]).fit([]).transform(
        [[("a",), ("b",)]])[0]
    assert rows == [{"U0": "_B-3/_B+69", "U1": "_B-64"}, {"U0": "_B-2/_B+70", "U1": "_B-63"}]
