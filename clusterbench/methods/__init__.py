"""The papers' own methods, one module each, as scikit-learn estimators."""

from clusterbench.methods.clam import CLAM
from clusterbench.methods.dec import DEC
from clusterbench.methods.kmeans_cprime import IsotropicGMM, KMeansCPrime
from clusterbench.methods.kr_kmeans import KhatriRaoKMeans
from clusterbench.methods.kr_naive import KhatriRaoNaive
from clusterbench.methods.lazy_kmeans import LazyKMeans

__all__ = ["CLAM", "DEC", "IsotropicGMM", "KMeansCPrime", "KhatriRaoKMeans", "KhatriRaoNaive", "LazyKMeans"]
