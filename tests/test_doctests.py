"""The Examples sections of the docstrings run and print what they show."""

import doctest
import importlib

import pytest

MODULES = [
    "sklearn_crfloss._tagger",
    "sklearn_crfloss._evaluation._segment_metrics",
    "sklearn_crfloss._evaluation._token_metrics",
    "sklearn_crfloss._data._attribute_names",
    "sklearn_crfloss.priors",
    "sklearn_crfloss._evaluation._significance",
    "sklearn_crfloss.segments",
    "sklearn_crfloss.features",
    "sklearn_crfloss.datasets._conll",
    "sklearn_crfloss.lop",
    "sklearn_crfloss.dask",
    "sklearn_crfloss.losses._base",
    "sklearn_crfloss.losses._registry",
    "sklearn_crfloss.losses._check",
    "sklearn_crfloss.io",
    "sklearn_crfloss.crfsuite",
    "sklearn_crfloss.spacy",
    "sklearn_crfloss._data._attribute_names",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, data_home):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0
