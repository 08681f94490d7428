"""The package version (one place; ``sklearn_crfloss.__version__`` re-exports it)."""

__version__ = "0.1.0.dev0"
