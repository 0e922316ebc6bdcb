"""The papers' own methods, one module each, as scikit-learn estimators."""

from clusterbench.methods.clam import CLAM

__all__ = ["CLAM"]
