"""The papers' own methods, one module each, as scikit-learn estimators."""

from clusterbench.methods.clam import CLAM
from clusterbench.methods.dec import DEC
from clusterbench.methods.kr_kmeans import KhatriRaoKMeans
from clusterbench.methods.kr_naive import KhatriRaoNaive

__all__ = ["CLAM", "DEC", "KhatriRaoKMeans", "KhatriRaoNaive"]
