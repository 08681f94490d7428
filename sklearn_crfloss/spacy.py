"""spaCy pipeline components backed by :class:`~sklearn_crfloss.CRFTagger`.

Importing this module (it needs the ``spacy`` extra: ``pip install
sklearn-crfloss[spacy]``) registers two factories with spaCy (spaCy
imports it by itself through the package's ``spacy_factories`` and
``spacy_misc`` entry points, e.g. in ``spacy.load`` of a saved pipeline):

- ``"crfloss_ner"``: a named-entity recogniser. It trains on the IOB2 tags of
  the examples' entities (``doc.ents``) and sets ``doc.ents``;
- ``"crfloss_tagger"``: a tagger. It trains on ``token.tag_`` and sets it.

A CRF is not trained by spaCy's optimiser steps: ``nlp.initialize(get_examples)``
fits the CRF on all the examples at once (L-BFGS by default), and
``update`` is a no-op that only reports a loss of 0 (train again with
``nlp.initialize``). ``nlp.to_disk`` stores the model in the package's
pickle-free file format (:func:`sklearn_crfloss.io.save_model`), and
``spacy.load`` reads it back.

The features of a token are a dict computed from the words of the
document (and their tags where the pipeline has set them) by a feature
function, chosen in the component's config from spaCy's ``misc`` registry:
by default the package's feature sets, ``{"@misc": "crfloss.ner_features.v1"}``
(:class:`~sklearn_crfloss.features.NERFeatures`) for ``"crfloss_ner"`` and
``{"@misc": "crfloss.pos_features.v1"}``
(:class:`~sklearn_crfloss.features.POSFeatures`) for ``"crfloss_tagger"``
(see :func:`make_feature_set`); ``"crfloss.word_features.v1"`` is a smaller
set (:class:`WordFeatures`); register a function of your own the same way.
"""

import json
from pathlib import Path

from spacy.language import Language
from spacy.tokens import Span
from spacy.training import biluo_to_iob
from spacy.util import registry

from ._tagger import CRFTagger
from .features import NERFeatures, POSFeatures
from .io import load_model, save_model
from .segments import get_segments

__all__ = ["CRFComponent", "FeatureSetFunction", "WordFeatures", "doc_labels", "gold_labels",
           "make_feature_set", "make_word_features", "set_labels"]

_MODEL_FILE = "model.crfl"
_CONFIG_FILE = "cfg.json"


def _shape(word):
    """Word shape, runs collapsed: ``'Madrid'`` -> ``'Xx'``, ``'1.5'`` -> ``'d.d'``."""
    out = []
    for ch in word:
        s = "X" if ch.isupper() else "x" if ch.isalpha() else "d" if ch.isdigit() else ch
        if not out or out[-1] != s:
            out.append(s)
    return "".join(out)


class WordFeatures:
    """A simple NER feature function of the words: one feature dict per token.

    Per token: a bias, the lower-cased word, its last two and three
    characters, its shape (``'Xx'``, ``'d.d'``), whether it is upper case,
    title case or a number, its tag (``'tag'``, when tags are given), and
    the lower-cased word, title case and upper case of the ``window`` words
    before and after it (``'-1:word.lower()'``, ...); ``'BOS'`` and
    ``'EOS'`` mark the first and last token.

    Parameters
    ----------
    window : int, default=1
        How many neighbours on each side, ``>= 0``.

    Examples
    --------
    >>> features = WordFeatures()
    >>> features(["Vive", "en", "Madrid"])[2]["shape"], sorted(features(["Hola"])[0])[:3]
    ('Xx', ['BOS', 'EOS', 'bias'])
    """

    def __init__(self, window=1):
        if int(window) != window or window < 0:
            raise ValueError(f"window must be an integer >= 0, got {window!r}.")
        self.window = int(window)

    def __call__(self, words, tags=None):
        """Feature dicts of one document.

        Parameters
        ----------
        words : list of str
        tags : list of str or None, default=None
            One tag per word (e.g. ``token.tag_``), or None.

        Returns
        -------
        list of dict
            One dict per word, python-crfsuite's format.
        """
        out = []
        for i, word in enumerate(words):
            f = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:],
                 "word[-2:]": word[-2:], "shape": _shape(word), "word.isupper()": word.isupper(),
                 "word.istitle()": word.istitle(), "word.isdigit()": word.isdigit()}
            if tags is not None and tags[i]:
                f["tag"] = tags[i]
            for k in range(1, self.window + 1):
                for j, name in ((i - k, f"-{k}"), (i + k, f"+{k}")):
                    if 0 <= j < len(words):
                        f.update({f"{name}:word.lower()": words[j].lower(),
                                  f"{name}:word.istitle()": words[j].istitle(),
                                  f"{name}:word.isupper()": words[j].isupper()})
            if i == 0:
                f["BOS"] = True
            if i == len(words) - 1:
                f["EOS"] = True
            out.append(f)
        return out


@registry.misc("crfloss.word_features.v1")
def make_word_features(window: int = 1):
    """A smaller feature function of the words than the default: :class:`WordFeatures`.

    Registered in spaCy's ``misc`` registry as ``"crfloss.word_features.v1"``;
    in a config: ``features = {"@misc": "crfloss.word_features.v1", "window": 2}``.

    Parameters
    ----------
    window : int, default=1

    Returns
    -------
    WordFeatures
    """
    return WordFeatures(window)


class FeatureSetFunction:
    """One of the package's feature-set transformers as a feature function of a document.

    The document's words are the tokens' first column, their tags (where
    the pipeline has set them) the second, as the transformers read CoNLL
    tokens (``(word, POS)``).

    Parameters
    ----------
    transformer : NERFeatures or POSFeatures
        Any transformer of :mod:`sklearn_crfloss.features` that takes
        sentences of token tuples; it learns nothing in ``fit``.

    Examples
    --------
    >>> from sklearn_crfloss.features import NERFeatures
    >>> features = FeatureSetFunction(NERFeatures())
    >>> features(["Vive", "en", "Madrid"])[2] == NERFeatures().fit_transform(
    ...     [[("Vive",), ("en",), ("Madrid",)]])[0][2]
    True
    """

    def __init__(self, transformer):
        self.transformer = transformer

    def __call__(self, words, tags=None):
        """Feature dicts of one document: ``words`` (list of str), ``tags`` (list of str or None)."""
        tokens = ([(w,) for w in words] if tags is None or not all(tags)
                  else list(zip(words, tags)))
        return self.transformer.fit_transform([tokens])[0]


@registry.misc("crfloss.ner_features.v1")
def make_ner_features():
    """The default features of ``"crfloss_ner"``: :class:`~sklearn_crfloss.features.NERFeatures`.

    Returns
    -------
    FeatureSetFunction
    """
    return make_feature_set(NERFeatures())


@registry.misc("crfloss.pos_features.v1")
def make_pos_features():
    """The default features of ``"crfloss_tagger"``: :class:`~sklearn_crfloss.features.POSFeatures`.

    Returns
    -------
    FeatureSetFunction
    """
    return make_feature_set(POSFeatures())


def make_feature_set(transformer):
    """A feature function of documents from a feature-set transformer (:class:`FeatureSetFunction`).

    Parameters
    ----------
    transformer : NERFeatures, POSFeatures, ChunkFeatures or TemplateFeatures
        With the parameters wanted.

    Returns
    -------
    FeatureSetFunction
    """
    return FeatureSetFunction(transformer)


def doc_labels(doc, kind):
    """The labels of a document's tokens: IOB2 entity tags or ``token.tag_``.

    Parameters
    ----------
    doc : spacy.tokens.Doc
    kind : {'ner', 'tagger'}

    Returns
    -------
    list of str
        ``'B-<type>'``, ``'I-<type>'`` or ``'O'`` per token (``'ner'``), or
        the tags (``'tagger'``).
    """
    if kind == "tagger":
        return [t.tag_ for t in doc]
    return [f"{t.ent_iob_}-{t.ent_type_}" if t.ent_iob_ in ("B", "I") else "O" for t in doc]


def gold_labels(example, kind):
    """The reference labels of an example, aligned to its predicted tokens.

    Parameters
    ----------
    example : spacy.training.Example
    kind : {'ner', 'tagger'}

    Returns
    -------
    list of str or None
        IOB2 entity tags (``'ner'``; a token without an aligned tag is
        ``'O'``), or the tags (``'tagger'``; None if a token has no aligned
        tag). When both documents have the same tokens, the reference's
        labels as :func:`doc_labels` reads them.
    """
    x, y = example.predicted, example.reference
    if len(x) == len(y) and all(a.text == b.text for a, b in zip(x, y)):
        return doc_labels(y, kind)  # the same tokens (an I- tag after O stays as it is)
    if kind == "tagger":
        tags = example.get_aligned("TAG", as_string=True)
        return None if any(t is None for t in tags) else list(tags)
    biluo = [t if t not in (None, "-", "") else "O" for t in example.get_aligned_ner()]
    return biluo_to_iob(biluo)


def set_labels(doc, labels, kind):
    """Write predicted labels on a document: ``doc.ents`` or ``token.tag_``.

    Parameters
    ----------
    doc : spacy.tokens.Doc
    labels : list of str
        One label per token; for ``'ner'`` IOB2 tags, whose chunks (read as
        conlleval reads them, so an ``I-X`` after ``O`` opens an entity)
        become the entities.
    kind : {'ner', 'tagger'}

    Returns
    -------
    spacy.tokens.Doc
        ``doc``, changed in place.
    """
    if kind == "tagger":
        for token, label in zip(doc, labels):
            token.tag_ = label
    else:
        doc.set_ents([Span(doc, a, b, label=t) for a, b, t in get_segments(labels)],
                     default="outside")
    return doc


class CRFComponent:
    """A spaCy pipeline component that labels tokens with a linear-chain CRF.

    Created by ``nlp.add_pipe("crfloss_ner")`` or
    ``nlp.add_pipe("crfloss_tagger")`` (the config's keys are the parameters
    below but ``nlp`` and ``name``).

    Parameters
    ----------
    nlp : spacy.language.Language
    name : str
    kind : {'ner', 'tagger'}
        What is learnt and set: entities (``doc.ents``, as IOB2 tags) or
        ``token.tag_``.
    features : callable
        ``features(words, tags) -> list of dict``: the feature dicts of one
        document from its words and their tags (``token.tag_``, None when
        no token has a tag).
    loss, C, max_iter, constraints : as :class:`~sklearn_crfloss.CRFTagger`
    crf_params : dict
        Further :class:`~sklearn_crfloss.CRFTagger` parameters (JSON
        values), e.g. ``{"prior": "l1", "n_jobs": 2}``.

    Attributes
    ----------
    model : CRFTagger or None
        The fitted CRF (None before ``initialize`` or ``from_disk``).
    """

    def __init__(self, nlp, name, *, kind, features, loss="cll", C=1.0, max_iter=None,
                 constraints=None, crf_params=None):
        if kind not in ("ner", "tagger"):
            raise ValueError(f"kind must be 'ner' or 'tagger', got {kind!r}.")
        if not callable(features):
            raise TypeError(f"features must be a callable, got {type(features).__name__}.")
        self.name = name
        self.kind = kind
        self.features = features
        self.params = dict(loss=loss, C=C, max_iter=max_iter, constraints=constraints,
                           **(crf_params or {}))
        self.model = None

    def _features(self, doc):
        tags = [t.tag_ for t in doc]
        return self.features([t.text for t in doc], tags if any(tags) else None)

    def initialize(self, get_examples, *, nlp=None):
        """Fit the CRF on the examples.

        The features come from each example's ``predicted`` document, after
        the components before this one in ``nlp`` have run on it (so a
        tagger earlier in the pipeline gives its tags at training as at
        prediction); the labels are the reference's entities (or tags)
        aligned to its tokens (:meth:`spacy.training.Example.get_aligned_ner`;
        tokens without an aligned entity tag are ``'O'``). For the tagger,
        an example whose tokens are not all aligned to a reference tag is
        skipped.

        Parameters
        ----------
        get_examples : callable
            Returns an iterable of :class:`spacy.training.Example`.
        nlp : spacy.language.Language or None, default=None
            The pipeline (spaCy passes it).

        Raises
        ------
        ValueError
            If no example has a token, or as :meth:`CRFTagger.fit`.
        """
        before = []
        for name, proc in (nlp.pipeline if nlp is not None else []):
            if name == self.name:
                break
            before.append(proc)
        X, y = [], []
        for eg in get_examples():
            labels = gold_labels(eg, self.kind)
            if not labels or labels is None:
                continue
            doc = eg.predicted
            for proc in before:
                doc = proc(doc)
            X.append(self._features(doc))
            y.append(labels)
        if not X:
            raise ValueError(f"{self.name}: initialize needs at least one non-empty example.")
        self.model = CRFTagger(**self.params).fit(X, y)

    def update(self, examples, *, drop=0.0, sgd=None, losses=None):
        """A no-op: the CRF is trained by :meth:`initialize`, not by optimiser steps.

        Parameters
        ----------
        examples : iterable of spacy.training.Example
        drop : float, default=0.0
        sgd : optional
        losses : dict or None, default=None

        Returns
        -------
        dict
            ``losses`` with 0.0 added under the component's name.
        """
        losses = {} if losses is None else losses
        losses.setdefault(self.name, 0.0)
        return losses

    def __call__(self, doc):
        """Label one document (see :meth:`pipe`)."""
        return next(iter(self.pipe([doc])))

    def pipe(self, docs, batch_size=128):
        """Label documents in batches: set ``doc.ents`` or ``token.tag_``.

        Parameters
        ----------
        docs : iterable of spacy.tokens.Doc
        batch_size : int, default=128

        Yields
        ------
        spacy.tokens.Doc

        Raises
        ------
        ValueError
            If the component has not been initialised (or loaded).
        """
        if self.model is None:
            raise ValueError(f"{self.name} is not trained: call nlp.initialize(get_examples) "
                             "or load a trained pipeline first.")
        batch = []
        for doc in docs:
            batch.append(doc)
            if len(batch) >= batch_size:
                yield from self._label(batch)
                batch = []
        yield from self._label(batch)

    def _label(self, docs):
        labels = self.model.predict([self._features(doc) for doc in docs]) if docs else []
        return [set_labels(doc, seq, self.kind) for doc, seq in zip(docs, labels)]

    @property
    def labels(self):
        """The labels of the fitted CRF (a tuple; empty before training)."""
        return () if self.model is None else tuple(self.model.classes_.tolist())

    def to_disk(self, path, *, exclude=tuple()):
        """Write the model (``model.crfl``, :func:`~sklearn_crfloss.io.save_model`) to a folder.

        Parameters
        ----------
        path : str or path-like
            A folder, created if missing.
        exclude : iterable of str, default=()
        """
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / _CONFIG_FILE).write_text(json.dumps({"kind": self.kind,
                                                     "trained": self.model is not None}))
        if self.model is not None:
            save_model(self.model, path / _MODEL_FILE)

    def from_disk(self, path, *, exclude=tuple()):
        """Read the model written by :meth:`to_disk`.

        Parameters
        ----------
        path : str or path-like
        exclude : iterable of str, default=()

        Returns
        -------
        CRFComponent
            ``self``.
        """
        path = Path(path)
        cfg = json.loads((path / _CONFIG_FILE).read_text())
        if cfg["kind"] != self.kind:
            raise ValueError(f"{path} holds a {cfg['kind']!r} model, not {self.kind!r}.")
        self.model = load_model(path / _MODEL_FILE) if cfg["trained"] else None
        return self




@Language.factory("crfloss_ner", assigns=["doc.ents", "token.ent_iob", "token.ent_type"],
                  default_config={"features": {"@misc": "crfloss.ner_features.v1"}, "loss": "cll",
                                  "C": 1.0, "max_iter": None, "constraints": "iob2",
                                  "crf_params": {}})
def make_crfloss_ner(nlp, name, features, loss, C, max_iter, constraints, crf_params):
    """Factory of ``"crfloss_ner"``: a :class:`CRFComponent` with ``kind='ner'``.

    Decodes with ``constraints='iob2'`` by default (well-formed entities).
    """
    return CRFComponent(nlp, name, kind="ner", features=features, loss=loss, C=C,
                        max_iter=max_iter, constraints=constraints, crf_params=crf_params)


@Language.factory("crfloss_tagger", assigns=["token.tag"],
                  default_config={"features": {"@misc": "crfloss.pos_features.v1"}, "loss": "cll",
                                  "C": 1.0, "max_iter": None, "constraints": None,
                                  "crf_params": {}})
def make_crfloss_tagger(nlp, name, features, loss, C, max_iter, constraints, crf_params):
    """Factory of ``"crfloss_tagger"``: a :class:`CRFComponent` with ``kind='tagger'``."""
    return CRFComponent(nlp, name, kind="tagger", features=features, loss=loss, C=C,
                        max_iter=max_iter, constraints=constraints, crf_params=crf_params)
