"""The papers' own methods, one module each, as scikit-learn estimators."""

from clusterbench.methods.clam import CLAM
from clusterbench.methods.dec import DEC

__all__ = ["CLAM", "DEC"]
