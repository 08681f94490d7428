"""Tests of sklearn_crfloss.features (CRF++ feature templates)."""

import pickle

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction import DictVectorizer
from sklearn.pipeline import Pipeline

from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures

# The start of the example sentence of CRF++'s documentation (chunking),
# small enough to check the expansions by hand.
SENT = [
    ("He", "PRP"),
    ("reckons", "VBZ"),
    ("the", "DT"),
    ("current", "JJ"),
    ("account", "NN"),
]


# --------------------------------------------------------------------------
# Template parsing
# --------------------------------------------------------------------------


def test_parse_conll2000_template():
    tf = TemplateFeatures().fit(None)
    assert tf.keys_ == [
        "U00", "U01", "U02", "U03", "U04", "U05", "U06",
        "U10", "U11", "U12", "U13", "U14", "U15", "U16", "U17", "U18",
        "U20", "U21", "U22",
    ]  # fmt: skip
    assert len(tf.templates_) == 19
    assert tf.n_columns_ == 2
    key, macros, literals = tf.templates_[5]
    assert key == "U05"
    assert macros == ((-1, 0), (0, 0))
    assert literals == ("", "/", "")
    assert tf.templates_[16] == ("U20", ((-2, 1), (-1, 1), (0, 1)), ("", "/", "/", ""))


def test_parse_comments_blank_and_bigram_lines():
    template = """
    # a comment
       # an indented comment

    U00:%x[0,0]
    B
    B01
    U01:pre-%x[1,1]-post\t
    """
    tf = TemplateFeatures(template).fit([])
    assert tf.templates_ == [
        ("U00", ((0, 0),), ("", "")),
        ("U01", ((1, 1),), ("pre-", "-post")),
    ]
    # The same template given as a list of lines.
    tf2 = TemplateFeatures(template.split("\n")).fit([])
    assert tf2.templates_ == tf.templates_


def test_template_from_path(tmp_path):
    path = tmp_path / "template"
    path.write_text(CONLL2000_TEMPLATE, encoding="utf-8")
    tf = TemplateFeatures(path).fit([])
    assert tf.templates_ == TemplateFeatures().fit([]).templates_


def test_constant_template_line():
    tf = TemplateFeatures(["U99", "U98:bias", "U00:%x[0,0]"]).fit([])
    assert tf.transform([[("a",), ("b",)]]) == [
        [
            {"U99": "", "U98": "bias", "U00": "a"},
            {"U99": "", "U98": "bias", "U00": "b"},
        ]
    ]


def test_literal_braces_and_percent_free_text():
    # str.format is used internally: braces in literals must stay literal.
    tf = TemplateFeatures(["U0:{%x[0,0]}|%x[1,0]"]).fit([])
    assert tf.transform([[("a",), ("b",)]]) == [
        [{"U0": "{a}|b"}, {"U0": "{b}|_B+1"}]
    ]


@pytest.mark.parametrize(
    "line, match",
    [
        ("X00:%x[0,0]", "unknown template type"),
        ("U00:%x[0]", "invalid macro"),
        ("U00:%x[0,-1]", "invalid macro"),
        ("U00:%x[a,0]", "invalid macro"),
        ("U00:%y[0,0]", "invalid macro"),
        ("U00:%x[0, 0]", "invalid macro"),
        ("U%x[0,0]", "expected 'Uid:text'"),
        ("U 00:%x[0,0]", "expected 'Uid:text'"),
        ("u:w=%X[0,0]", "Wapiti's %X, %t and %m"),
        ("b:%x[@0,0]", "invalid macro"),
        ("B 01:%x[0,0]", "expected 'Bid:text'"),
    ],
)
def test_invalid_template_lines(line, match):
    tf = TemplateFeatures(["U01:%x[0,0]", line])
    with pytest.raises(ValueError, match=match) as excinfo:
        tf.fit([])
    # The message quotes the offending line and gives its number.
    assert repr(line) in str(excinfo.value)
    assert "line 2" in str(excinfo.value)


def test_duplicate_identifier():
    with pytest.raises(ValueError, match="duplicate identifier 'U00'"):
        TemplateFeatures("U00:%x[0,0]\nU00:%x[1,0]").fit([])


def test_template_without_unigram_lines():
    with pytest.raises(ValueError, match="no unigram"):
        TemplateFeatures("# only a bigram\nB\n").fit([])


@pytest.mark.parametrize("template", [None, 3, ["U00:%x[0,0]", 5]])
def test_template_type_error(template):
    with pytest.raises(TypeError, match="template"):
        TemplateFeatures(template).fit([])


def test_init_stores_parameters_unchanged_and_fit_validates():
    template = ["U00:%x[0,0]", "bad line"]
    tf = TemplateFeatures(template)  # no validation in __init__
    assert tf.template is template
    assert tf.get_params() == {"template": template}
    with pytest.raises(ValueError, match="'bad line'"):
        tf.fit([])


# --------------------------------------------------------------------------
# Expansion
# --------------------------------------------------------------------------


def test_boundary_symbols_two_token_sentence():
    template = [
        "U0:%x[-3,0]",
        "U1:%x[-2,0]",
        "U2:%x[-1,0]",
        "U3:%x[0,0]",
        "U4:%x[1,0]",
        "U5:%x[2,0]",
        "U6:%x[3,0]",
    ]
    out = TemplateFeatures(template).fit_transform([[("a", "A"), ("b", "B")]])
    assert out == [
        [
            {"U0": "_B-3", "U1": "_B-2", "U2": "_B-1", "U3": "a",
             "U4": "b", "U5": "_B+1", "U6": "_B+2"},
            {"U0": "_B-2", "U1": "_B-1", "U2": "a", "U3": "b",
             "U4": "_B+1", "U5": "_B+2", "U6": "_B+3"},
        ]
    ]  # fmt: skip


def test_conll2000_template_expected_dicts():
    out = TemplateFeatures().fit_transform([SENT])
    assert len(out) == 1 and len(out[0]) == len(SENT)
    assert all(len(d) == 19 for d in out[0])
    # Token 0, "He": two boundary positions on the left.
    assert out[0][0] == {
        "U00": "_B-2",
        "U01": "_B-1",
        "U02": "He",
        "U03": "reckons",
        "U04": "the",
        "U05": "_B-1/He",
        "U06": "He/reckons",
        "U10": "_B-2",
        "U11": "_B-1",
        "U12": "PRP",
        "U13": "VBZ",
        "U14": "DT",
        "U15": "_B-2/_B-1",
        "U16": "_B-1/PRP",
        "U17": "PRP/VBZ",
        "U18": "VBZ/DT",
        "U20": "_B-2/_B-1/PRP",
        "U21": "_B-1/PRP/VBZ",
        "U22": "PRP/VBZ/DT",
    }
    # Token 2, "the": full context inside the sentence.
    assert out[0][2] == {
        "U00": "He",
        "U01": "reckons",
        "U02": "the",
        "U03": "current",
        "U04": "account",
        "U05": "reckons/the",
        "U06": "the/current",
        "U10": "PRP",
        "U11": "VBZ",
        "U12": "DT",
        "U13": "JJ",
        "U14": "NN",
        "U15": "PRP/VBZ",
        "U16": "VBZ/DT",
        "U17": "DT/JJ",
        "U18": "JJ/NN",
        "U20": "PRP/VBZ/DT",
        "U21": "VBZ/DT/JJ",
        "U22": "DT/JJ/NN",
    }
    # Token 4, "account": two boundary positions on the right.
    assert out[0][4] == {
        "U00": "the",
        "U01": "current",
        "U02": "account",
        "U03": "_B+1",
        "U04": "_B+2",
        "U05": "current/account",
        "U06": "account/_B+1",
        "U10": "DT",
        "U11": "JJ",
        "U12": "NN",
        "U13": "_B+1",
        "U14": "_B+2",
        "U15": "DT/JJ",
        "U16": "JJ/NN",
        "U17": "NN/_B+1",
        "U18": "_B+1/_B+2",
        "U20": "DT/JJ/NN",
        "U21": "JJ/NN/_B+1",
        "U22": "NN/_B+1/_B+2",
    }


def test_empty_sentence_and_empty_corpus():
    tf = TemplateFeatures().fit([])
    assert tf.transform([]) == []
    assert tf.transform([[], [("a", "B")], []]) == [
        [],
        [tf.transform([[("a", "B")]])[0][0]],
        [],
    ]


def test_extra_columns_ignored_and_values_are_str():
    tf = TemplateFeatures(["U0:%x[0,0]/%x[0,2]", "U1:%x[0,1]"]).fit([])
    out = tf.transform([[("a", 1, 2.5, "ignored"), ("b", 2, 3, "x")]])
    assert out == [[{"U0": "a/2.5", "U1": "1"}, {"U0": "b/3", "U1": "2"}]]
    assert all(isinstance(v, str) for d in out[0] for v in d.values())


def test_column_out_of_range():
    tf = TemplateFeatures().fit([])  # uses columns 0 and 1
    X = [[("a", "A"), ("b", "B")], [("c", "C"), ("d",)]]
    with pytest.raises(ValueError, match=r"Sentence 1, token 1: .*column 1"):
        tf.transform(X)


def test_tokens_must_be_tuples():
    tf = TemplateFeatures(["U0:%x[0,0]"]).fit([])
    with pytest.raises(ValueError, match="Sentence 0, token 0: expected a token tuple"):
        tf.transform([["He", "reckons"]])
    with pytest.raises(ValueError, match="got a str"):
        tf.transform("He reckons")


def test_not_fitted():
    with pytest.raises(NotFittedError):
        TemplateFeatures().transform([SENT])


def test_transform_is_deterministic_and_repeatable():
    tf = TemplateFeatures().fit([SENT])
    assert tf.transform([SENT]) == tf.transform([SENT])
    assert tf.fit_transform([SENT, SENT[:2]]) == tf.transform([SENT, SENT[:2]])


# --------------------------------------------------------------------------
# scikit-learn integration
# --------------------------------------------------------------------------


def test_clone_and_pickle():
    tf = TemplateFeatures(["U00:%x[0,0]", "U01:%x[-1,1]/%x[0,0]"])
    cl = clone(tf)
    assert cl.get_params() == tf.get_params()
    assert not hasattr(cl, "templates_")

    tf.fit([SENT])
    expected = tf.transform([SENT])
    restored = pickle.loads(pickle.dumps(tf))
    assert restored.templates_ == tf.templates_
    assert restored.transform([SENT]) == expected
    # Unfitted estimators pickle too.
    assert pickle.loads(pickle.dumps(TemplateFeatures())).template == CONLL2000_TEMPLATE


def test_sklearn_tags():
    tags = TemplateFeatures().__sklearn_tags__()
    assert tags.input_tags.two_d_array is False
    assert tags.requires_fit is True
    assert tags.transformer_tags is not None


class _DictCountingEstimator(BaseEstimator):
    """Tiny sequence "estimator": one-hot encodes tokens, predicts by lookup.

    ``fit`` memorises, for every U02 (current word) value, the label seen
    most often; ``predict`` returns those labels (or the most frequent
    label) -- just enough to check the pipeline wiring.
    """

    def fit(self, X, y):
        self.vectorizer_ = DictVectorizer().fit([d for sent in X for d in sent])
        counts = {}
        for sent, labels in zip(X, y):
            for d, label in zip(sent, labels):
                counts.setdefault(d["U02"], {}).setdefault(label, 0)
                counts[d["U02"]][label] += 1
        self.lookup_ = {w: max(c, key=c.get) for w, c in counts.items()}
        flat = [label for labels in y for label in labels]
        self.default_ = max(set(flat), key=flat.count)
        return self

    def predict(self, X):
        return [[self.lookup_.get(d["U02"], self.default_) for d in s] for s in X]


def test_pipeline_with_dummy_estimator():
    X = [SENT, [("He", "PRP"), ("agrees", "VBZ")]]
    y = [["B-NP", "B-VP", "B-NP", "I-NP", "I-NP"], ["B-NP", "B-VP"]]
    pipe = Pipeline([("feat", TemplateFeatures()), ("crf", _DictCountingEstimator())])
    pipe.fit(X, y)
    assert pipe.predict(X) == y
    assert pipe.named_steps["crf"].vectorizer_.feature_names_[0].startswith("U")
    assert "U05=He/reckons" in pipe.named_steps["crf"].vectorizer_.vocabulary_
    # set_params/clone on the pipeline reach the transformer's template.
    pipe2 = clone(pipe).set_params(feat__template=["U02:%x[0,0]"])
    pipe2.fit(X, y)
    assert pipe2.named_steps["crf"].vectorizer_.feature_names_ == [
        "U02=He",
        "U02=account",
        "U02=agrees",
        "U02=current",
        "U02=reckons",
        "U02=the",
    ]


def test_first_100_conll2000_sentences(corpus):
    X, y = corpus("conll2000", "train")
    X, y = X[:100], y[:100]
    feats = TemplateFeatures().fit_transform(X, y)
    assert len(feats) == 100
    assert [len(s) for s in feats] == [len(s) for s in X]
    assert all(len(d) == 19 for s in feats for d in s)
    # Cross-check every position against a direct, slow implementation.
    rng = np.random.RandomState(0)
    for i in rng.choice(100, size=20, replace=False):
        sent = X[i]
        n = len(sent)

        def at(k, col, sent=sent, n=n):
            if k < 0:
                return f"_B{k}"
            if k >= n:
                return f"_B+{k - n + 1}"
            return sent[k][col]

        for t in range(n):
            d = feats[i][t]
            for j, key in enumerate(["U00", "U01", "U02", "U03", "U04"]):
                assert d[key] == at(t + j - 2, 0)
            for j, key in enumerate(["U10", "U11", "U12", "U13", "U14"]):
                assert d[key] == at(t + j - 2, 1)
            assert d["U05"] == at(t - 1, 0) + "/" + at(t, 0)
            assert d["U06"] == at(t, 0) + "/" + at(t + 1, 0)
            assert d["U21"] == "/".join(at(t + k, 1) for k in (-1, 0, 1))
    # One-hot encoding works and gives the expected attribute names.
    vec = DictVectorizer().fit([d for s in feats for d in s])
    assert "U02=Confidence" in vec.vocabulary_
    assert "U05=_B-1/Confidence" in vec.vocabulary_


def test_suzuki2006_template_is_the_documented_set():
    # words and POS at -2..2, and every pair of two window positions of each type
    from itertools import combinations

    from sklearn_crfloss.features import SUZUKI2006_TEMPLATE

    feats = TemplateFeatures(SUZUKI2006_TEMPLATE).fit([])
    macros = [m for _, m, _ in feats.templates_]
    window = range(-2, 3)
    expected = ([((o, c),) for c in (0, 1) for o in window]
                + [((a, c), (b, c)) for c in (0, 1) for a, b in combinations(window, 2)])
    assert macros == expected


def test_a_file_name_given_as_text_gets_a_hint(tmp_path):
    with pytest.raises(ValueError, match=r"unknown template type 't'.*pathlib\.Path\('template'\)"):
        TemplateFeatures("template").fit([[("a", "DT")]])
    with pytest.raises(ValueError, match="unknown template type") as info:
        TemplateFeatures("X01:%x[0,0]").fit([[("a", "DT")]])
    assert "pathlib" not in str(info.value)  # a template line, not a file name
