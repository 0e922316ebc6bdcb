"""The scikit-learn contract every torch estimator shares: checked seeds, checked predict input."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import make_blobs
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from clusterbench import methods
from clusterbench.errors import HyperparameterError
from clusterbench.methods import (
    ACPIC,
    CLAM,
    DCEC,
    DEC,
    DKM,
    IDEC,
    MIADM,
    MID,
    IsotropicGMM,
    KhatriRaoDKM,
    KhatriRaoIDEC,
    KhatriRaoKMeans,
    KhatriRaoNaive,
    KMeansCPrime,
    LazyKMeans,
    PRCut,
    SpectralKNN,
    SRKMeans,
    SupervisedMLP,
)
from clusterbench.methods.deep.base import AutoencoderClusterer, DeepClusterer
from clusterbench.validation import check_fit_input

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
    with pytest.raises(HyperparameterError, match="random_state must be None, an integer in"):
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


# Every estimator of the package at the smallest scale, on 64 features (an 8 × 8 image for the
# image methods), for the input contract scikit-learn's users rely on.
DEPICT_TINY = dict(
    channels=2, pretrain_epochs=1, pretrain_patience=1, init="kmeans", n_init=1, init_epochs=1,
    init_patience=1, epochs=1, device="cpu",
)  # fmt: skip
EVERY_ESTIMATOR = {
    **ESTIMATORS,
    "ACPIC": lambda **kw: ACPIC(3, n_neighbors=5, **kw),
    "DCEC": lambda **kw: DCEC(
        3, channels=(2, 2, 2), embedding_dim=2, pretrain_epochs=1, n_init=1, max_iter=5, device="cpu", **kw
    ),
    "KhatriRaoDKM": lambda **kw: KhatriRaoDKM(
        n_clusters=4, **TINY_NETWORK, hadamard_multiplier=None, kr_n_init=1, epochs=1, **kw
    ),
    "PRCut": lambda **kw: PRCut(3, n_neighbors=3, steps=5, hidden=8, batch_size=16, device="cpu", **kw),
    "SpectralKNN": lambda **kw: SpectralKNN(3, n_neighbors=5, n_init=2, **kw),
    "SRKMeans": lambda **kw: SRKMeans(3, **DEPICT_TINY, **kw),
    "MIADM": lambda **kw: MIADM(3, **DEPICT_TINY, **kw),
    "MID": lambda **kw: MID(3, **DEPICT_TINY, **kw),
    "SupervisedMLP": lambda **kw: SupervisedMLP(hidden=8, epochs=1, device="cpu", **kw),
}
IMAGES, IMAGE_LABELS = make_blobs(60, n_features=64, centers=3, cluster_std=2.0, random_state=0)


def test_every_estimator_of_the_package_is_in_the_contract_tests():
    assert sorted(EVERY_ESTIMATOR) == sorted(methods.__all__)


def _fit(name, X):
    model = EVERY_ESTIMATOR[name]()
    if "random_state" in model.get_params():  # ACPIC has no draw
        model.set_params(random_state=0)
    return model.fit(X, IMAGE_LABELS) if name == "SupervisedMLP" else model.fit(X)


@pytest.mark.parametrize("name", sorted(EVERY_ESTIMATOR))
def test_a_view_with_negative_strides_fits_and_predicts_as_its_copy(name, tmp_path, monkeypatch):
    """X[::-1] and a DataFrame's columns reversed are valid arrays that torch.as_tensor refused
    (negative strides): they fit and predict as their C-ordered copies."""
    monkeypatch.setenv("CLUSTERBENCH_CACHE", str(tmp_path))
    view = IMAGES[:, ::-1][::-1]
    copy = np.ascontiguousarray(view)
    if name == "SupervisedMLP":  # its labels follow the rows
        view, copy = view[::-1], np.ascontiguousarray(view[::-1])
    model = _fit(name, view)
    np.testing.assert_array_equal(model.labels_, _fit(name, copy).labels_)
    if hasattr(model, "predict"):
        np.testing.assert_array_equal(model.predict(view), model.predict(copy))


@pytest.mark.parametrize("name", sorted(EVERY_ESTIMATOR))
def test_a_dataframes_column_names_are_kept_and_checked_at_predict(name, tmp_path, monkeypatch):
    """As scikit-learn's estimators: fit on a DataFrame keeps its column names, and predict refuses
    the same columns in another order (which it had silently scored as the fitted order)."""
    monkeypatch.setenv("CLUSTERBENCH_CACHE", str(tmp_path))
    columns = [f"pixel{i}" for i in range(IMAGES.shape[1])]
    frame = pd.DataFrame(IMAGES, columns=columns)
    model = _fit(name, frame)
    assert list(model.feature_names_in_) == columns and model.n_features_in_ == 64
    assert not hasattr(_fit(name, IMAGES), "feature_names_in_")
    if hasattr(model, "predict"):
        if name != "LazyKMeans":  # whose predict takes the nearest centre, not its lazy assignment
            np.testing.assert_array_equal(model.predict(frame), model.labels_)
        with pytest.raises(ValueError, match="The feature names should match"):
            model.predict(frame[columns[::-1]])


def test_the_supervised_mlp_takes_its_labels_as_one_column():
    """y of shape (n, 1) (df[['label']]) is flattened with scikit-learn's DataConversionWarning,
    as its classifiers do; it had been refused."""
    column = pd.DataFrame({"label": IMAGE_LABELS})
    with pytest.warns(DataConversionWarning):
        model = SupervisedMLP(hidden=8, epochs=1, device="cpu", random_state=0).fit(IMAGES, column)
    flat = SupervisedMLP(hidden=8, epochs=1, device="cpu", random_state=0).fit(IMAGES, IMAGE_LABELS)
    np.testing.assert_array_equal(model.labels_, flat.labels_)
    with pytest.raises(ValueError, match=r"y must be one label per point, got shape \(60, 2\)"):
        SupervisedMLP(hidden=8, epochs=1, device="cpu").fit(IMAGES, np.stack([IMAGE_LABELS] * 2, 1))


def test_the_input_check_copies_only_what_torch_refuses():
    """A view with a negative stride is copied in C order; a Fortran-ordered array (three of the
    data folder's files: Yale, Mice Protein, Soybean) is kept as it is, so their fits do not move."""
    fortran = np.asfortranarray(IMAGES)
    assert check_fit_input(KMeansCPrime(3), fortran) is fortran
    reversed_rows = check_fit_input(KMeansCPrime(3), IMAGES[::-1])
    assert reversed_rows.flags.c_contiguous
    np.testing.assert_array_equal(reversed_rows, IMAGES[::-1])


@pytest.mark.parametrize("name", ESTIMATORS)
def test_nan_in_fit_or_predict_is_refused_in_one_line(name):
    """scikit-learn's line, without the paragraph of advice its validate_data appends for a
    named estimator (a failed record's error holds that text)."""
    holed = X.copy()
    holed[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"^Input X contains NaN\.$"):
        ESTIMATORS[name](random_state=0).fit(holed)
    with pytest.raises(ValueError, match=r"^Input X contains NaN\.$"):
        ESTIMATORS[name](random_state=0).fit(X).predict(holed)


# Noise, on which a clustering depends on its seed: a fit seeded wrongly shows in its labels.
NOISE = np.random.default_rng(1).normal(size=(60, 64))


def _seeded_fit(name, random_state):
    model = EVERY_ESTIMATOR[name](random_state=random_state)
    return model.fit(NOISE, IMAGE_LABELS) if name == "SupervisedMLP" else model.fit(NOISE)


@pytest.mark.parametrize("name", sorted(set(EVERY_ESTIMATOR) - {"ACPIC"}))  # ACPIC has no draw
@pytest.mark.parametrize("source", [np.random.RandomState, np.random.default_rng])
def test_a_numpy_random_state_seeds_a_fit_as_the_int_it_draws(name, source, tmp_path, monkeypatch):
    """random_state takes a NumPy RandomState or Generator, as scikit-learn's estimators do (it was
    refused): the fit is the one seeded by the integer it draws, for torch's generators a 63-bit
    draw, for SpectralKNN's NumPy draws the RandomState itself (a Generator's: one seeded by a
    32-bit draw of it)."""
    monkeypatch.setenv("CLUSTERBENCH_CACHE", str(tmp_path))
    if name != "SpectralKNN":
        seed = int(
            source(7).randint(2**63 - 1, dtype=np.int64)
            if source is np.random.RandomState
            else source(7).integers(2**63 - 1)
        )
    else:
        seed = 7 if source is np.random.RandomState else int(source(7).integers(2**32))
    labels = _seeded_fit(name, source(7)).labels_
    np.testing.assert_array_equal(labels, _seeded_fit(name, seed).labels_)


def test_one_random_state_seeds_each_fit_with_its_next_draw():
    """As with scikit-learn's estimators, an instance's state advances: two fits draw two seeds."""
    state, draws = np.random.RandomState(3), np.random.RandomState(3)
    model = KMeansCPrime(3, c_prime=1, device="cpu", random_state=state)
    for _ in range(2):
        assert model.fit(NOISE).restart_seeds_ == [int(draws.randint(2**63 - 1, dtype=np.int64))]


# The estimators whose fit keeps torch modules or tensors (a network, a head, a prior), and those
# whose predict works on the device they were fitted on (``device_``).
HOLDING_TORCH_STATE = [
    "DCEC", "DEC", "DKM", "IDEC", "KhatriRaoDKM", "KhatriRaoIDEC", "MIADM", "MID", "PRCut", "SRKMeans",
    "SupervisedMLP",
]  # fmt: skip
ON_A_DEVICE = sorted(set(EVERY_ESTIMATOR) - {"ACPIC", "SpectralKNN"})


def test_the_estimators_holding_torch_state_or_a_device_are_listed():
    def holds_torch(model):
        return any(isinstance(value, torch.Tensor | torch.nn.Module) for value in vars(model).values())

    fitted = {name: _fit(name, IMAGES) for name in EVERY_ESTIMATOR}
    assert sorted(name for name, model in fitted.items() if holds_torch(model)) == HOLDING_TORCH_STATE
    assert sorted(name for name, model in fitted.items() if hasattr(model, "device_")) == ON_A_DEVICE


@pytest.mark.parametrize("name", ON_A_DEVICE)
def test_a_model_fitted_on_cuda_loads_on_the_cpu_where_no_gpu_is(name, tmp_path, monkeypatch):
    """Pickle's own form of a CUDA tensor loads only where CUDA is, and predict works on
    ``device_``, so a model fitted on a GPU server did not predict on a laptop. It now loads on the
    device it was fitted on, or, with a warning, on the CPU, its torch state travelling device-free
    at any depth, and loading leaves torch's global generator as it was. Simulated here: a CPU fit
    marked as fitted on cuda, loaded where torch sees no GPU (tests/test_cuda.py runs the real one)."""
    monkeypatch.setenv("CLUSTERBENCH_CACHE", str(tmp_path))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    model = _fit(name, IMAGES)
    expected = model.predict(IMAGES)
    model.device_ = "cuda"

    state = model.__getstate__()
    if isinstance(model, DeepClusterer):  # everything in one torch.save blob, nested tensors too
        assert sorted(state) == ["_torch_state", "device_"]
    else:  # PRCut's network as a state dict of CPU tensors; the rest hold NumPy arrays only
        assert not any(isinstance(value, torch.nn.Module) for value in state.values())
    pickled = pickle.dumps(model)
    torch.manual_seed(0)
    untouched = torch.rand(1).item()
    torch.manual_seed(0)
    with pytest.warns(UserWarning, match="fitted on cuda, and no CUDA GPU is visible here"):
        loaded = pickle.loads(pickled)
    assert torch.rand(1).item() == untouched  # loading drew nothing from torch's global generator
    assert loaded.device_ == "cpu" and model.device_ == "cuda"  # the pickled model itself unchanged
    np.testing.assert_array_equal(loaded.predict(IMAGES), expected)
    model.device_ = "cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a CPU fit loads without a word
        np.testing.assert_array_equal(pickle.loads(pickle.dumps(model)).predict(IMAGES), expected)


def test_only_an_integer_seed_keys_the_pretraining_cache(tmp_path, monkeypatch):
    """A seed drawn from a RandomState (or from nothing) would key a cache file no later fit asks
    for: such fits pretrain without the cache, as an unseeded fit does; an integer seed writes one."""
    monkeypatch.setenv("CLUSTERBENCH_CACHE", str(tmp_path))
    for random_state in (None, np.random.RandomState(), np.random.default_rng()):
        ESTIMATORS["IDEC"](random_state=random_state).fit(NOISE)
    assert not list(tmp_path.rglob("*.pt"))
    ESTIMATORS["IDEC"](random_state=0).fit(NOISE)
    assert len(list(tmp_path.rglob("*.pt"))) == 1
