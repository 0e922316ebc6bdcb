"""The hyperparameter checks the estimators declare with validation's vocabulary: their messages
and their order of precedence, as they were when each estimator wrote its checks out in full."""

from __future__ import annotations

import hashlib
import math

import pytest
from sklearn.base import clone

from clusterbench.errors import HyperparameterError
from clusterbench.methods import (
    CLAM,
    DEC,
    IsotropicGMM,
    KhatriRaoKMeans,
    KhatriRaoNaive,
    KMeansCPrime,
    LazyKMeans,
    PRCut,
    SupervisedMLP,
)
from clusterbench.validation import (
    BOOLEAN,
    NON_NEGATIVE_INT,
    NON_NEGATIVE_REAL,
    POSITIVE_INT,
    POSITIVE_REAL,
    denormals_flushed,
    in_interval,
    one_of,
    optional,
)

ESTIMATORS = [CLAM, DEC, IsotropicGMM, KhatriRaoKMeans, KhatriRaoNaive, KMeansCPrime, LazyKMeans]
SEED_AND_DEVICE = [
    ("random_state", "None, an integer in [0, 2**63), or a NumPy RandomState or Generator"),
    ("device", "one of auto, cpu, cuda"),
    ("n_threads", "None or an integer ≥ 1"),
]
TRUNCATED_EM = [
    ("init", "one of k-means++, random or an array (n_clusters, n_features)"),
    ("n_local_trials", "null or an integer ≥ 1"),
    ("n_init", "an integer ≥ 1"),
    ("max_iter", "an integer ≥ 0"),
    ("tol", "a number ≥ 0"),
    *SEED_AND_DEVICE,
]
LAYOUT = [
    ("n_clusters", "an integer ≥ 1"),
    ("n_sets", "an integer ≥ 1"),
    ("h", "null or a non-empty list of integers ≥ 1"),
    ("aggregator", "one of sum, product"),
]
# Each estimator's hyperparameters in their order of precedence, with the allowed values its
# message names (at the defaults, for those that name another hyperparameter's value).
ALLOWED = {
    CLAM: [
        ("n_clusters", "an integer ≥ 1"),
        ("beta", "a number > 0"),
        ("beta_scale", "a number > 0"),
        ("steps", "an integer ≥ 1"),
        ("alpha", "None or in (0, 1]"),
        ("lr", "a number > 0"),
        ("min_lr", "in (0, lr=0.1]"),
        ("batch_size", "an integer ≥ 1"),
        ("epochs", "an integer ≥ 1"),
        ("restarts", "an integer ≥ 1"),
        ("mask", "true or false"),
        ("mask_prob", "in (0, 1)"),
        ("mask_value", "one of mean, min, max"),
        ("mask_sampling", "one of bernoulli, code"),
        ("init", "one of gaussian, random, k-means++"),
        ("restart_selection", "one of loss, silhouette"),
        ("weighted", "true or false"),
        ("spherical", "true or false"),
        ("prototype_snapshots", "None or a list of epochs in [0, epochs=200]"),
        *SEED_AND_DEVICE,
    ],
    DEC: [
        ("n_clusters", "an integer ≥ 1"),
        ("init", "one of kmeans, random, gaussian"),
        ("n_init", "an integer ≥ 1"),
        ("alpha", "a number > 0"),
        ("optimizer", "one of sgd, adam"),
        ("lr", "a number > 0"),
        ("momentum", "in [0, 1)"),
        ("batch_size", "an integer ≥ 1"),
        ("update_interval", "an integer ≥ 1"),
        ("max_iter", "an integer ≥ 1"),
        ("tol", "in [0, 1]"),
        *SEED_AND_DEVICE,
    ],
    IsotropicGMM: [("n_clusters", "an integer ≥ 1"), *TRUNCATED_EM],
    KMeansCPrime: [
        ("n_clusters", "an integer ≥ 1"),
        ("c_prime", "an integer between 1 and n_clusters (8)"),
        *TRUNCATED_EM[: -len(SEED_AND_DEVICE)],
        ("track_likelihood", "true or false"),
        *SEED_AND_DEVICE,
    ],
    LazyKMeans: [("n_clusters", "an integer ≥ 1"), ("epsilon", "a number ≥ 0"), *TRUNCATED_EM],
    KhatriRaoKMeans: [
        *LAYOUT,
        ("init", "one of random, k-means++ or a list of (h_l, n_features) arrays"),
        ("n_init", "an integer ≥ 1"),
        ("max_iter", "an integer ≥ 1"),
        ("tol", "a number ≥ 0"),
        ("reseed", "one of point, centred"),
        ("memory_efficient", "true or false"),
        *SEED_AND_DEVICE,
    ],
    KhatriRaoNaive: [
        *LAYOUT,
        ("n_init", "an integer ≥ 1"),
        ("max_iter", "an integer ≥ 1"),
        ("als_max_iter", "an integer ≥ 1"),
        ("als_tol", "a number ≥ 0"),
        *SEED_AND_DEVICE,
    ],
}


def outcome(estimator) -> str:
    try:
        estimator._validate_params()
    except HyperparameterError as exc:
        return str(exc)
    return "ok"


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_every_hyperparameter_is_checked_in_order_with_its_message(cls):
    """All hyperparameters invalid at once: fixing the one each message names brings the next."""
    defaults = cls().get_params()
    estimator = cls(**dict.fromkeys(defaults, "x"))
    messages = []
    while (message := outcome(estimator)) != "ok":
        messages.append(message)
        setattr(estimator, message.split()[1], defaults[message.split()[1]])
    assert messages == [f"{cls.__name__} {name} must be {allowed}, got 'x'" for name, allowed in ALLOWED[cls]]
    assert sorted(name for name, _ in ALLOWED[cls]) == sorted(defaults)


@pytest.mark.parametrize(
    ("estimator", "message"),
    [
        (CLAM(lr=0.01, min_lr=0.02), "CLAM min_lr must be in (0, lr=0.01], got 0.02"),
        (CLAM(lr=-1, min_lr=0.02), "CLAM lr must be a number > 0, got -1"),
        (
            CLAM(epochs=3, prototype_snapshots=[0, 4]),
            "CLAM prototype_snapshots must be None or a list of epochs in [0, epochs=3], got [0, 4]",
        ),
        (CLAM(alpha=0), "CLAM alpha must be None or in (0, 1], got 0"),
        (CLAM(mask_prob=1), "CLAM mask_prob must be in (0, 1), got 1"),
        (DEC(momentum=1.0), "DEC momentum must be in [0, 1), got 1.0"),
        (DEC(tol=math.nan), "DEC tol must be in [0, 1], got nan"),
        (
            KMeansCPrime(n_clusters=3, c_prime=4),
            "KMeansCPrime c_prime must be an integer between 1 and n_clusters (3), got 4",
        ),
        (KMeansCPrime(n_clusters=0, c_prime=4), "KMeansCPrime n_clusters must be an integer ≥ 1, got 0"),
        (LazyKMeans(max_iter=-1), "LazyKMeans max_iter must be an integer ≥ 0, got -1"),
        (IsotropicGMM(n_local_trials=0), "IsotropicGMM n_local_trials must be null or an integer ≥ 1, got 0"),
        (
            KhatriRaoKMeans(aggregator="product", reseed="centred"),
            "KhatriRaoKMeans reseed must be point with the product aggregator (centred solves a sum's "
            "shift), got 'centred'",
        ),
        (KhatriRaoKMeans(aggregator="sum", reseed="centred"), "ok"),
        (
            KhatriRaoNaive(h=[2, 0]),
            "KhatriRaoNaive h must be null or a non-empty list of integers ≥ 1, got [2, 0]",
        ),
        (
            KhatriRaoNaive(random_state=True),
            "KhatriRaoNaive random_state must be None, an integer in [0, 2**63), "
            "or a NumPy RandomState or Generator, got True",
        ),
    ],
    ids=lambda v: type(v).__name__ if not isinstance(v, str) else "",
)
def test_cross_parameter_and_boundary_messages(estimator, message):
    assert outcome(estimator) == message


def test_seeds_are_bounded_by_the_generators_that_take_them():
    """A seed past what torch (signed 64-bit) or NumPy's RandomState (32-bit, which scikit-learn
    seeds) accept failed inside the fit with their internal message."""
    from clusterbench.methods import SpectralKNN

    assert outcome(KMeansCPrime(random_state=2**63 - 1)) == "ok"
    assert outcome(KMeansCPrime(random_state=2**63)) == (
        "KMeansCPrime random_state must be None, an integer in [0, 2**63), "
        f"or a NumPy RandomState or Generator, got {2**63}"
    )
    with pytest.raises(
        HyperparameterError, match=r"random_state must be None, an integer in \[0, 2\*\*32\), or a NumPy"
    ):
        SpectralKNN(n_clusters=2, n_neighbors=3, random_state=2**32).fit([[0.0], [1.0], [2.0], [3.0]])


def test_the_vocabulary_says_what_it_allows():
    constants = (POSITIVE_INT, NON_NEGATIVE_INT, POSITIVE_REAL, NON_NEGATIVE_REAL, BOOLEAN)
    assert [c.allowed for c in constants] == [
        "an integer ≥ 1",
        "an integer ≥ 0",
        "a number > 0",
        "a number ≥ 0",
        "true or false",
    ]
    assert [v for v in (0, 1, 1.0, True) if POSITIVE_INT.valid(v)] == [1]
    assert [v for v in (-1e-9, 0, 0.0, math.inf, False) if NON_NEGATIVE_REAL.valid(v)] == [0, 0.0]
    intervals = {closed: in_interval(0, 1, closed=closed) for closed in ("neither", "left", "right", "both")}
    assert [c.allowed for c in intervals.values()] == ["in (0, 1)", "in [0, 1)", "in (0, 1]", "in [0, 1]"]
    assert [[v for v in (0, 0.5, 1) if c.valid(v)] for c in intervals.values()] == [
        [0.5],
        [0, 0.5],
        [0.5, 1],
        [0, 0.5, 1],
    ]
    assert in_interval(0, 0.5, closed="right", high_name="lr").allowed == "in (0, lr=0.5]"
    assert optional(POSITIVE_INT, none="null").allowed == "null or an integer ≥ 1"
    assert optional(POSITIVE_INT).valid(None) and not optional(POSITIVE_INT).valid(0)
    letters = one_of(("a", "b"))
    assert letters.allowed == "one of a, b" and letters.valid("b") and not letters.valid("c")


# Every hyperparameter of every estimator set to each of VALUES, alone and under BASES (for the
# checks that read another hyperparameter), and every ordered pair of hyperparameters set to
# PAIRS: the SHA-256 of the outcomes, one line a case, recorded with the estimators' checks as
# they were written out in full before the vocabulary (15,970 cases).
VALUES = [0, -1, 1.5, "x", None, True, False, 1, 2, 3, 8, 9, 100, 0.5, 1.0, 2.0, -0.5, 0.0, 1e-9]
VALUES += [math.nan, math.inf, [], [1, 2], [0], [2, 0], (2, 3), [1, 2.0], "1", [0, 5], [0, 51], [-1]]
VALUES += ["auto", "cpu", "cuda", "sum", "product", "point", "centred", "k-means++", "random", "kmeans"]
VALUES += ["gaussian", "mean", "min", "max", "bernoulli", "code", "loss", "silhouette", "sgd", "adam"]
PAIRS = [("x", "x"), (-1, -1), (None, "x"), (1.5, True)]
BASES = {
    CLAM: [{"lr": 0.001}, {"epochs": 3}, {"lr": "x"}],
    KhatriRaoKMeans: [{"aggregator": "product"}, {"aggregator": "x"}],
    KhatriRaoNaive: [{"aggregator": "sum"}],
    KMeansCPrime: [{"n_clusters": 2}, {"n_clusters": "x"}, {"n_clusters": 100}],
}
# Recorded again when random_state's bound was added (the old sweep with "an integer ≥ 0" replaced
# by "an integer in [0, 2**63)" in its random_state messages was that sweep, line for line), and
# when random_state took NumPy's RandomState and Generator: the previous sweep with "None or an
# integer in [0, 2**63)" replaced by "None, an integer in [0, 2**63), or a NumPy RandomState or
# Generator" (679 lines) is this sweep, line for line (checked before recording).
SWEEP_SHA256 = "504eb2309e8ad736cfb4ddbdcaaca024666118972a7b9110c4ba3607b460c9a4"
# Hyperparameters added after the digest was recorded; the ordered-messages test above covers them.
ADDED_SINCE = {KMeansCPrime: {"track_likelihood"}}


def sweep() -> list[str]:
    lines = []
    for cls in ESTIMATORS:
        names = [name for name in cls().get_params() if name not in ADDED_SINCE.get(cls, ())]
        for base in [{}, *BASES.get(cls, [])]:
            for name in names:
                for value in VALUES:
                    case = f"{cls.__name__} {base} {name}={value!r}"
                    lines.append(f"{case}: {outcome(cls(**{**base, name: value}))}")
        for a in names:
            for b in names:
                for va, vb in PAIRS if a != b else []:
                    lines.append(f"{cls.__name__} {a}={va!r} {b}={vb!r}: {outcome(cls(**{a: va, b: vb}))}")
    return lines


def test_messages_and_precedence_are_those_the_estimators_had_before_the_vocabulary():
    """On a failure, print ``sweep()`` here and before the change and diff the two."""
    assert hashlib.sha256("\n".join(sweep()).encode()).hexdigest() == SWEEP_SHA256


def test_a_users_torch_estimator_needs_no_n_threads():
    """docs/extending.md: a torch estimator takes random_state and device; the seed, device and
    thread checks apply to those it has (one without n_threads failed with an AttributeError)."""
    from sklearn.base import BaseEstimator, ClusterMixin

    from clusterbench.validation import TorchHyperparameters

    class Mine(TorchHyperparameters, ClusterMixin, BaseEstimator):
        def __init__(self, n_clusters=2, lr=0.1, random_state=None, device="cpu"):
            self.n_clusters, self.lr, self.random_state, self.device = n_clusters, lr, random_state, device

        def _checks(self):
            return [("n_clusters", POSITIVE_INT), ("lr", POSITIVE_REAL)]

    Mine()._validate_params()
    with pytest.raises(HyperparameterError, match="Mine device must be one of"):
        Mine(device="tpu")._validate_params()
    with pytest.raises(HyperparameterError, match="Mine lr must be a number > 0, got -1"):
        Mine(lr=-1)._validate_params()


@pytest.mark.parametrize(
    "estimator",
    [
        PRCut(n_clusters=3, n_neighbors=3, hidden=16, batch_size=16, steps=5, device="cpu", random_state=0),
        SupervisedMLP(hidden=16, epochs=2, device="cpu", random_state=0),
        DEC(n_clusters=3, update_interval=5, max_iter=10, device="cpu", random_state=0),
    ],
    ids=type,
)
def test_a_torch_fit_flushes_denormals_and_leaves_the_setting_as_it_found_it(estimator, monkeypatch):
    """Denormals slowed training steps 20x, so fits flush them; the caller's setting comes back."""
    import numpy as np
    import torch

    seen = []
    backward = torch.Tensor.backward

    def recorded_backward(self, *args, **kwargs):
        seen.append(denormals_flushed())
        return backward(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "backward", recorded_backward)
    X = np.random.default_rng(0).normal(size=(60, 4))
    y = np.repeat([0, 1, 2], 20)
    initial = denormals_flushed()
    try:
        for before in (False, True):
            torch.set_flush_denormal(before)
            seen.clear()
            clone(estimator).fit(X, y)
            assert seen and all(seen)
            assert denormals_flushed() == before
    finally:  # the process's setting back, also when an assertion fails
        torch.set_flush_denormal(initial)
