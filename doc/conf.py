"""Sphinx configuration of the sklearn-crfloss documentation.

Build from the repository root (warnings are errors in CI)::

    SKLEARN_CRFLOSS_DATA=../shared/data MPLBACKEND=Agg python -m sphinx -W --keep-going -b html doc doc/_build/html

The package is imported from the installed environment (``pip install .``):
the source tree is deliberately *not* put on ``sys.path``, because the
compiled kernels (``sklearn_crfloss._chain._forward_backward`` etc.) only exist in
the installed package.
"""

import os
import sys

# ``python -m sphinx`` run from the repository root puts the current
# directory first on sys.path, where ``import sklearn_crfloss`` would find the
# source tree, which lacks the compiled kernels. Drop the repository root so
# that the installed package is documented (the root is found relative to
# this file; no absolute path is configured).
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _REPO_ROOT]

# The gallery runs each example from examples/gallery/ (and Sphinx reads this
# file from doc/): a relative data path, as the README's
# ``SKLEARN_CRFLOSS_DATA=../shared/data``, is taken relative to the
# repository root, where the README's commands run, and made absolute.
if os.environ.get("SKLEARN_CRFLOSS_DATA"):
    os.environ["SKLEARN_CRFLOSS_DATA"] = os.path.join(
        _REPO_ROOT, os.path.expanduser(os.environ["SKLEARN_CRFLOSS_DATA"]))

try:
    import sklearn_crfloss
    import sklearn_crfloss.inference  # noqa: F401  (needs the compiled kernels)
except ImportError as exc:
    raise ImportError(
        "The documentation imports the installed sklearn_crfloss, with its "
        "compiled kernels; install the package first (pip install . from the "
        f"repository root). Import failed with: {exc}"
    ) from exc

# -- Project information -----------------------------------------------------

project = "sklearn-crfloss"
author = "The sklearn-crfloss developers"
copyright = "The sklearn-crfloss developers"
release = sklearn_crfloss.__version__
version = ".".join(release.split(".")[:2])

# -- General configuration ---------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "matplotlib.sphinxext.plot_directive",
]
# No sphinx.ext.intersphinx: the build must not need the network.

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip"]
root_doc = "index"
source_suffix = {".rst": "restructuredtext"}
language = "en"
nitpicky = False
default_role = "literal"

# -- autodoc / autosummary ---------------------------------------------------

# Stub pages are generated into doc/generated/ (git-ignored) on every build.
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"
# Show the value of module-level data (registries, templates, scorers).
autodoc_preserve_defaults = True

# -- numpydoc ----------------------------------------------------------------

# Methods are listed by the autosummary class template; numpydoc must not
# add a second member list (that would duplicate object descriptions).
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- Gallery (sphinx-gallery) -------------------------------------------------

# The scripts examples/gallery/plot_*.py are run at every build and rendered
# with their figures into doc/auto_examples/ (git-ignored); the long scripts
# of examples/ itself are not run. Data come from SKLEARN_CRFLOSS_DATA. A
# failing example fails the build.
sphinx_gallery_conf = {
    "examples_dirs": os.path.join(_REPO_ROOT, "examples", "gallery"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "remove_config_comments": True,
    "download_all_examples": False,
    "show_memory": False,
    "reference_url": {"sklearn_crfloss": None},  # link names in code to the API pages
    "doc_module": ("sklearn_crfloss",),
    "backreferences_dir": None,
    "line_numbers": False,
    "write_computation_times": False,  # its page loads scripts from CDNs
}

# -- plot directive ----------------------------------------------------------

# Figures drawn at build time from small data files next to the pages (the
# code runs in the page's folder, e.g. doc/user_guide/data/time_to_f1.csv).
plot_include_source = False
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 110)]

# -- HTML output -------------------------------------------------------------

# The PyData theme, as scikit-learn's documentation uses. Nothing in it
# fetches from the network at build time.
html_theme = "pydata_sphinx_theme"
html_title = f"sklearn-crfloss {release}"
html_static_path = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"index": []}


# -- Members generated by scikit-learn ---------------------------------------

def _skip_sklearn_request_methods(app, what, name, obj, skip, options):
    """Leave out the ``set_<method>_request`` methods of metadata routing.

    scikit-learn adds them to every estimator whose ``fit``/``score`` take
    extra arguments (``sample_weight``); their generated docstrings refer to
    scikit-learn's own glossary and user guide, which cannot be resolved
    here. They are documented in scikit-learn's metadata-routing guide.
    """
    if what == "class" and name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_sklearn_request_methods)
