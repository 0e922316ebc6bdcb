"""The scikit-learn contract every torch estimator shares: checked seeds, checked predict input."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from clusterbench.errors import HyperparameterError
from clusterbench.methods import (
    CLAM,
    DEC,
    DKM,
    IDEC,
    IsotropicGMM,
    KhatriRaoIDEC,
    KhatriRaoKMeans,
    KhatriRaoNaive,
    KMeansCPrime,
    LazyKMeans,
)
from clusterbench.methods.deep.base import AutoencoderClusterer

ESTIMATORS = {
    "CLAM": lambda **kw: CLAM(n_clusters=3, epochs=2, restarts=1, device="cpu", **kw),
    "DEC": lambda **kw: DEC(n_clusters=3, n_init=2, max_iter=20, device="cpu", **kw),
    "KhatriRaoKMeans": lambda **kw: KhatriRaoKMeans(n_clusters=4, n_init=2, device="cpu", **kw),
    "KhatriRaoNaive": lambda **kw: KhatriRaoNaive(
        n_clusters=4, n_init=2, als_max_iter=50, device="cpu", **kw
    ),
    "KMeansCPrime": lambda **kw: KMeansCPrime(3, c_prime=2, n_init=2, device="cpu", **kw),
    "LazyKMeans": lambda **kw: LazyKMeans(3, n_init=2, device="cpu", **kw),
    "IsotropicGMM": lambda **kw: IsotropicGMM(3, n_init=2, device="cpu", **kw),
}
# The deep family at the smallest scale: a 3-2 autoencoder (allowed to widen one-feature data),
# one pretraining epoch, a few steps.
TINY_NETWORK = dict(layers=(3, 2), allow_wider_embedding=True, pretrain_epochs=1, n_init=1, device="cpu")
ESTIMATORS |= {
    "IDEC": lambda **kw: IDEC(n_clusters=3, **TINY_NETWORK, max_iter=5, **kw),
    "DKM": lambda **kw: DKM(n_clusters=3, **TINY_NETWORK, epochs=1, **kw),
    "KhatriRaoIDEC": lambda **kw: KhatriRaoIDEC(
        n_clusters=4, **TINY_NETWORK, hadamard_multiplier=None, kr_n_init=1, epochs=1, **kw
    ),
}
X = np.random.default_rng(0).normal(size=(60, 4))


@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_negative_seed_is_a_hyperparameter_error(name):
    with pytest.raises(HyperparameterError, match="random_state must be None or an integer"):
        ESTIMATORS[name](random_state=-1).fit(X)


@pytest.mark.parametrize("init", ["random", "k-means++"])
def test_clam_seeded_from_data_points_refuses_more_clusters_than_points(init):
    """With init='random' CLAM drew at most n distinct points and silently returned fewer
    prototypes. Its default Gaussian prototypes need no points (a test of CLAM's uses 50 for 40)."""
    with pytest.raises(
        HyperparameterError, match=r"CLAM n_clusters must be at most the number of points \(10\)"
    ):
        CLAM(n_clusters=11, init=init, epochs=2, restarts=1, device="cpu").fit(X[:10])


@pytest.mark.parametrize(
    ("model", "init"),
    [
        (
            KMeansCPrime(3, n_init=1, device="cpu"),
            np.array([[np.nan, 0, 0, 0], [1, 1, 1, 1], [-1, -1, -1, -1]]),
        ),
        (KhatriRaoKMeans(h=[2, 2], n_init=1, device="cpu"), [np.full((2, 4), np.inf), np.zeros((2, 4))]),
    ],
    ids=["KMeansCPrime", "KhatriRaoKMeans"],
)
def test_a_non_finite_init_array_is_refused(model, init):
    """A NaN starting centre put every point in cluster 0 with a NaN objective, silently."""
    with pytest.raises(ValueError, match="must hold finite values"):
        model.set_params(init=init).fit(X)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_predict_names_a_wrong_number_of_features(name):
    model = ESTIMATORS[name](random_state=0).fit(X)
    assert model.predict(X).shape == (len(X),)
    with pytest.raises(ValueError, match=f"X has 2 features, but {name} is expecting 4 features as input"):
        model.predict(X[:, :2])


@pytest.mark.parametrize("name", ["KhatriRaoKMeans", "KMeansCPrime"])
def test_init_none_is_a_hyperparameter_error(name):
    with pytest.raises(HyperparameterError, match="init must be one of"):
        ESTIMATORS[name](init=None).fit(X)


def test_khatri_rao_init_takes_a_list_an_array_or_a_tensor_of_the_sets():
    import torch

    sets = [X[:2], X[2:4]]
    labels = [
        KhatriRaoKMeans(n_clusters=4, init=init, device="cpu").fit(X).labels_
        for init in (sets, np.stack(sets), torch.as_tensor(np.stack(sets)))
    ]
    np.testing.assert_array_equal(labels[0], labels[1])
    np.testing.assert_array_equal(labels[0], labels[2])


# KMeansCPrime with C′ = 2 refuses the n_clusters = 1 that these checks set (C′ ≤ C, eq. 5); the
# C′ = 1 instance runs them.
C_PRIME_ABOVE_ONE_CLUSTER = "sets n_clusters=1, below c_prime=2 (C′ ≤ C is checked)"
SKLEARN_CHECKED = [
    ESTIMATORS["CLAM"](random_state=0),
    ESTIMATORS["CLAM"](random_state=0, weighted=True, spherical=True),
    ESTIMATORS["DEC"](random_state=0),
    ESTIMATORS["DEC"](random_state=0, init="gaussian"),
    ESTIMATORS["KhatriRaoKMeans"](random_state=0),
    ESTIMATORS["KhatriRaoKMeans"](random_state=0, aggregator="product"),
    ESTIMATORS["KhatriRaoNaive"](random_state=0),
    ESTIMATORS["KMeansCPrime"](random_state=0),
    KMeansCPrime(3, c_prime=1, n_init=2, device="cpu", random_state=0),
    ESTIMATORS["LazyKMeans"](random_state=0),
    ESTIMATORS["IsotropicGMM"](random_state=0),
    ESTIMATORS["IDEC"](random_state=0),
    ESTIMATORS["DKM"](random_state=0),
    ESTIMATORS["KhatriRaoIDEC"](random_state=0),
]
# The deep family refuses k < 2 (a clustering loss over one centroid is constant), which these set.
ONE_CLUSTER_CHECKS = [
    "check_dont_overwrite_parameters",
    "check_methods_subset_invariance",
    "check_fit2d_1sample",
    "check_fit2d_1feature",
    "check_fit2d_predict1d",
]


def _expected_failures(estimator) -> dict[str, str]:
    if type(estimator) is KMeansCPrime and estimator.c_prime > 1:
        return dict.fromkeys(
            [
                "check_dont_overwrite_parameters",
                "check_methods_subset_invariance",
                "check_fit2d_1sample",
                "check_fit2d_1feature",
                "check_fit2d_predict1d",
            ],
            C_PRIME_ABOVE_ONE_CLUSTER,
        )
    if isinstance(estimator, AutoencoderClusterer):
        return dict.fromkeys(ONE_CLUSTER_CHECKS, "sets n_clusters=1; k ≥ 2 is checked")
    return {}


@parametrize_with_checks(SKLEARN_CHECKED, expected_failed_checks=_expected_failures)
def test_scikit_learn_estimator_checks(estimator, check):
    """scikit-learn's own contract for estimators: cloning, parameters, fit/predict input handling,
    n_features_in_, pickling, idempotent fit and more."""
    check(estimator)
