"""Every torch estimator on CUDA against the same fit on the CPU (skipped without a GPU).

The two devices round differently, and random draws come from a generator on the fit's device
(a seed gives the same fit on the same device, not across devices), so labels are compared by ARI
on well-separated blobs, where every seed finds the same partition; ``device_`` must say where the
fit ran. CLAM starts from k-means++ here: from its default Gaussian prototypes a single restart
merges two of these blobs in about half the seeds on either device (measured on an H100).
"""

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from clusterbench import methods
from tests.helpers import Interrupted, stop_after_saves

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")

DEEP = {"layers": (16, 4), "pretrain_epochs": 15, "pretrain_batch_size": 64, "batch_size": 64, "epochs": 3}
CASES = {
    "CLAM": {"epochs": 20, "restarts": 3, "init": "k-means++"},
    "DEC": {"max_iter": 200, "update_interval": 20},
    "DCEC": {
        "image_shape": (1, 8, 8),
        "channels": (8, 16, 16),
        "pretrain_epochs": 40,
        "pretrain_batch_size": 64,
        "batch_size": 64,
        "max_iter": 50,
    },
    "DKM": DEEP,
    "IDEC": {**DEEP, "max_iter": None, "update_interval": None},
    "IsotropicGMM": {"n_init": 3},
    "KMeansCPrime": {"n_init": 3},
    "KhatriRaoDKM": {**DEEP, "pretrain_epochs_step": 5, "reference_pretrain_epochs": 5},
    "KhatriRaoIDEC": {**DEEP, "pretrain_epochs_step": 5, "reference_pretrain_epochs": 5},
    "KhatriRaoKMeans": {"n_init": 5},
    "KhatriRaoNaive": {"n_init": 3},
    "LazyKMeans": {"n_init": 3},
    "PRCut": {"steps": 300, "batch_size": 64, "n_neighbors": 10, "lr": 1e-3, "optimizer": "adam"},
}
# The DEPICT autoencoder's tanh embedding wants inputs in [-1, 1] (the blobs are scaled for it), and
# 60 pretraining epochs: with 15, two blobs share a cluster in some seeds on the CPU already.
DEPICT = {
    "pretrain_epochs": 60,
    "init_epochs": 3,
    "epochs": 5,
    "init": "kmeans",
    "n_init": 3,
    "batch_size": 64,
}
DEPICT_CASES = ("MIADM", "MID", "SRKMeans")


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CLUSTERBENCH_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def blobs():
    """Four blobs in 64 dimensions (an 8 × 8 image for DCEC), far apart."""
    rng = np.random.default_rng(0)
    u, v = rng.standard_normal((2, 64)) * 2.0
    centres = np.array([i * u + j * v for i in (0, 1) for j in (0, 1)])
    X, y = make_blobs(256, n_features=64, centers=centres, cluster_std=0.4, random_state=0)
    return X.astype(np.float32), y


@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_fit_agrees_with_the_cpu_fit(name, blobs):
    X, y = blobs
    cls = getattr(methods, name)
    params = {"n_clusters": 4, "random_state": 0, **CASES[name]}
    cpu = cls(**params, device="cpu").fit(X)
    gpu = cls(**params, device="cuda").fit(X)
    assert str(gpu.device_).startswith("cuda")
    assert isinstance(gpu.labels_, np.ndarray)
    assert adjusted_rand_score(y, cpu.labels_) > 0.95  # a clear optimum, which both must find
    assert adjusted_rand_score(cpu.labels_, gpu.labels_) > 0.95
    if hasattr(gpu, "predict") and name != "PRCut":
        assert adjusted_rand_score(gpu.predict(X), gpu.labels_) > 0.95


@pytest.mark.parametrize("name", DEPICT_CASES)
def test_depict_family_fit_on_cuda_agrees_with_the_cpu_fit(name, blobs):
    X, y = blobs
    X = X / np.abs(X).max()
    cls = getattr(methods, name)
    cpu = cls(n_clusters=4, random_state=0, device="cpu", **DEPICT).fit(X)
    gpu = cls(n_clusters=4, random_state=0, device="cuda", **DEPICT).fit(X)
    assert str(gpu.device_).startswith("cuda")
    assert adjusted_rand_score(y, cpu.labels_) > 0.95
    assert adjusted_rand_score(cpu.labels_, gpu.labels_) > 0.95
    assert len(gpu.mutual_information_) > 0  # the Fig. 1 trace; its length follows the stopping rule


def test_supervised_mlp_on_cuda_learns_the_labels(blobs):
    X, y = blobs
    model = methods.SupervisedMLP(epochs=20, random_state=0, device="cuda").fit(X, y)
    assert str(model.device_).startswith("cuda")
    assert adjusted_rand_score(y, model.labels_) > 0.95


def test_an_interrupted_prcut_fit_on_cuda_resumes_to_the_same_fit(blobs, monkeypatch, tmp_path):
    """The checkpoint holds the CUDA generator's state (a CPU byte tensor) and the network's
    weights, restored onto the GPU: a fit stopped after its 100th step and run again ends where a
    fit never stopped ends, on the same device."""
    from clusterbench.methods.deep import cache

    X, _ = blobs
    params = {"n_clusters": 4, "random_state": 0, "device": "cuda", **CASES["PRCut"]}
    whole = methods.PRCut(**params).fit(X)
    with pytest.raises(Interrupted):
        saves, original_save = stop_after_saves(monkeypatch, 100)
        methods.PRCut(**params).fit(X)
    assert saves[-1] == 100
    monkeypatch.setattr(cache, "save_progress", original_save)
    resumed = methods.PRCut(**params).fit(X)
    np.testing.assert_array_equal(resumed.labels_, whole.labels_)
    np.testing.assert_allclose(resumed.history_["bound"], whole.history_["bound"], rtol=1e-5, atol=1e-7)
    assert not list((tmp_path / "cache").glob("*.partial"))


# A model fitted on the GPU, loaded in a process that sees none (CUDA_VISIBLE_DEVICES empty).
LOAD_WITHOUT_GPU = """
import pickle, sys, warnings
import numpy as np
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    model = pickle.loads(open(sys.argv[1], "rb").read())
assert any("no CUDA GPU is visible here" in str(w.message) for w in caught), caught
np.save(sys.argv[3], model.predict(np.load(sys.argv[2])))
print(model.device_)
"""


@pytest.mark.parametrize("name", ["IDEC", "PRCut", "SRKMeans"])
def test_a_model_fitted_on_cuda_predicts_in_a_process_without_a_gpu(name, blobs, tmp_path):
    """Pickle's own form of a CUDA tensor loads only where CUDA is: the network, head and prior
    travel device-free and load on the CPU, with a warning, where no GPU is (a network with its
    head, PRCut's state dict, SR-K-means' prior tensor)."""
    X, _ = blobs
    if name == "SRKMeans":
        X, params = X / np.abs(X).max(), DEPICT
    else:
        params = CASES[name]
    model = getattr(methods, name)(n_clusters=4, random_state=0, device="cuda", **params).fit(X)
    (tmp_path / "model.pkl").write_bytes(pickle.dumps(model))
    np.save(tmp_path / "X.npy", X)
    environment = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    command = [
        sys.executable,
        "-c",
        LOAD_WITHOUT_GPU,
        *(str(tmp_path / f) for f in ("model.pkl", "X.npy", "p.npy")),
    ]
    result = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["cpu"]
    # The same weights on another device: labels equal up to points on a rounding's edge.
    assert adjusted_rand_score(model.predict(X), np.load(tmp_path / "p.npy")) > 0.99
