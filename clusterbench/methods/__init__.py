"""The papers' own methods, one module each, as scikit-learn estimators."""

from clusterbench.methods.ac_pic import ACPIC
from clusterbench.methods.clam import CLAM
from clusterbench.methods.dcec import DCEC
from clusterbench.methods.dec import DEC
from clusterbench.methods.dkm import DKM
from clusterbench.methods.idec import IDEC
from clusterbench.methods.kmeans_cprime import IsotropicGMM, KMeansCPrime
from clusterbench.methods.kr_deep import KhatriRaoDKM, KhatriRaoIDEC
from clusterbench.methods.kr_kmeans import KhatriRaoKMeans
from clusterbench.methods.kr_naive import KhatriRaoNaive
from clusterbench.methods.lazy_kmeans import LazyKMeans
from clusterbench.methods.mi_adm import MIADM
from clusterbench.methods.mi_d import MID
from clusterbench.methods.prcut import PRCut
from clusterbench.methods.spectral_knn import SpectralKNN
from clusterbench.methods.sr_kmeans import SRKMeans
from clusterbench.methods.supervised_mlp import SupervisedMLP

__all__ = [
    "ACPIC",
    "CLAM",
    "DCEC",
    "DEC",
    "DKM",
    "IDEC",
    "MIADM",
    "MID",
    "IsotropicGMM",
    "KMeansCPrime",
    "KhatriRaoDKM",
    "KhatriRaoIDEC",
    "KhatriRaoKMeans",
    "KhatriRaoNaive",
    "LazyKMeans",
    "PRCut",
    "SRKMeans",
    "SpectralKNN",
    "SupervisedMLP",
]
