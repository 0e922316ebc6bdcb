"""Seeding shared by the torch estimators: the seed of a fit and of each restart, and the CLAM
authors' Gaussian prototype initialisation (CLAM's and DEC's ``init="gaussian"``)."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.utils import check_random_state

from clusterbench.validation import is_int

# init="gaussian": prototypes start at N(0.1, 0.1²) in every coordinate (the authors' code).
INIT_MEAN, INIT_STD = 0.1, 0.1


def _seed63(entropy=None) -> int:
    """A 63-bit seed hashed from ``entropy`` (fresh OS entropy when None)."""
    return int(np.random.SeedSequence(entropy).generate_state(1, np.uint64)[0]) >> 1


def resolve_seed(random_state) -> int:
    """The seed of a fit: ``random_state`` itself (an int), a fresh random 63-bit seed when it is
    None, or one drawn from a NumPy RandomState or Generator, whose state each fit advances (as
    scikit-learn's estimators draw from one)."""
    if random_state is None:
        return _seed63()
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**63 - 1, dtype=np.int64))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**63 - 1))
    return int(random_state)


def repeatable(random_state) -> bool:
    """Whether a fit's seed is one a later fit can ask for again, an integer: only then may it key
    a cache file or a checkpoint (a seed drawn from nothing, or from a RandomState or Generator,
    keys a file no later fit asks for)."""
    return is_int(random_state)


def numpy_random_state(random_state) -> np.random.RandomState:
    """scikit-learn's ``check_random_state`` that also takes a NumPy Generator (seeding a
    RandomState from one draw of it): for the estimators whose randomness is NumPy's."""
    if isinstance(random_state, np.random.Generator):
        return np.random.RandomState(int(random_state.integers(2**32)))
    return check_random_state(random_state)


def restart_seeds(random_state, restarts: int) -> list[int]:
    """The torch seed of each restart.

    Restart 0 takes the fit's seed (:func:`resolve_seed`: an int ``random_state`` itself), so
    ``restarts=1`` is the plain seeded run; restart r > 0 takes a 63-bit hash of (seed, r), so
    jobs with neighbouring seeds share no restart. A fit with ``restarts=1,
    random_state=restart_seeds(s, R)[r]`` repeats restart r of a fit with ``random_state=s``
    exactly, and adding restarts leaves the existing ones unchanged.
    """
    base = resolve_seed(random_state)
    return [base, *(_seed63([base, r]) for r in range(1, restarts))]


def gaussian_prototypes(k: int, d: int, generator: torch.Generator) -> torch.Tensor:
    """(k, d) prototypes, every coordinate N(0.1, 0.1²), on the generator's device: the CLAM
    authors' initialisation (no data-based seeding), also their DEC^r's."""
    return torch.randn(k, d, generator=generator, device=generator.device) * INIT_STD + INIT_MEAN
