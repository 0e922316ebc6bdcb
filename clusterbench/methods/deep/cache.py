"""Pretrained autoencoder weights, cached on disk.

Pretraining dominates the deep family's cost (notes, C: 150 to 4000 epochs per dataset) and does not
depend on the clustering hyperparameters a sweep varies, so its result is kept, keyed by
everything that determines it: the dataset (a digest of the preprocessed, subsampled array:
``array_digest``), the architecture, the epochs, the optimiser and its settings, the seed.

Where: ``folder`` if given, else ``$CLUSTERBENCH_CACHE``, else ``~/.cache/clusterbench/pretrained``.
One file per key, ``<first 32 hex digits of sha256(key as canonical JSON)>.pt``:

    MAGIC (8 bytes) | sha256 of the payload (32 bytes) | payload

where the payload is ``torch.save({"key": key JSON, "state": state dict})``. Files are written
atomically (``clusterbench.results.atomic_write_bytes``), so a reader never sees half of one; a file
that is short, has another magic, fails its checksum, does not unpickle under
``weights_only=True``, or holds another key is rebuilt and rewritten with a warning, never loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch

from clusterbench.results import atomic_write_bytes

ENVIRONMENT_VARIABLE = "CLUSTERBENCH_CACHE"
# Fits of hours (SR-K-means' pretraining and clustering phases, PRCut's steps) save their progress
# this often, so that an interrupted fit (a session's end, a killed job) resumes where it stopped,
# bit for bit on the CPU at the same thread count. A save (weights, the optimiser's state: a few
# MB) takes well under a second, so a killed job loses at most two minutes; at 10 minutes each
# interruption cost 5 minutes of an epoch-bound run.
CHECKPOINT_SECONDS = 120.0
ELAPSED = "__elapsed_seconds__"  # a checkpoint's entry: the fit's seconds so far, over its runs
MAGIC = b"CBPRE001"  # the format's name and version: a later format change gives another magic
DIGEST_BYTES = 32  # sha256


@contextlib.contextmanager
def folder_for_block(folder: str | Path) -> Iterator[None]:
    """``$CLUSTERBENCH_CACHE`` set to ``folder`` for the block and the caller's setting restored
    after it (a benchmark that must start from an empty cache without touching the user's)."""
    before = os.environ.get(ENVIRONMENT_VARIABLE)
    os.environ[ENVIRONMENT_VARIABLE] = str(folder)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENVIRONMENT_VARIABLE, None)
        else:
            os.environ[ENVIRONMENT_VARIABLE] = before


def cache_folder(folder: str | Path | None = None) -> Path:
    """``folder``, else ``$CLUSTERBENCH_CACHE``, else ``~/.cache/clusterbench/pretrained``."""
    if folder is not None:
        return Path(folder)
    if os.environ.get(ENVIRONMENT_VARIABLE):
        return Path(os.environ[ENVIRONMENT_VARIABLE])
    return Path.home() / ".cache" / "clusterbench" / "pretrained"


def array_digest(X: np.ndarray) -> str:
    """sha256 of an array's dtype, shape and bytes: the dataset part of a key (after preprocessing
    and subsampling, so that two subsamples or scalings never share weights)."""
    X = np.ascontiguousarray(X)
    digest = hashlib.sha256(f"{X.dtype.str}{X.shape}".encode())
    digest.update(X.view(np.uint8).reshape(-1))
    return digest.hexdigest()


def _number(value):
    """A NumPy scalar (a scikit-learn grid's value) as the Python number it holds, so that it keys
    the same file; anything else stays unserialisable."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _canonical(key: dict) -> str:
    if not isinstance(key, dict):
        raise TypeError(f"pretrained_state key must be a dict, got {type(key).__name__}")
    try:
        return json.dumps(key, sort_keys=True, separators=(",", ":"), allow_nan=False, default=_number)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"pretrained_state key must be JSON-able (str, int, float, list, dict): {exc}"
        ) from None


def cache_path(key: dict, folder: str | Path | None = None) -> Path:
    """The file that holds ``key``'s state dict."""
    return cache_folder(folder) / f"{hashlib.sha256(_canonical(key).encode()).hexdigest()[:32]}.pt"


def _encode(canonical_key: str, state: dict[str, torch.Tensor]) -> bytes:
    buffer = io.BytesIO()
    torch.save({"key": canonical_key, "state": state}, buffer)
    payload = buffer.getvalue()
    return MAGIC + hashlib.sha256(payload).digest() + payload


def _decode(data: bytes, canonical_key: str) -> dict[str, torch.Tensor]:
    """The state dict in ``data``; ValueError saying why when the file is not a sound one for the key."""
    header = len(MAGIC) + DIGEST_BYTES
    if len(data) < header or not data.startswith(MAGIC):
        raise ValueError("no pretrained-cache header")
    checksum, payload = data[len(MAGIC) : header], data[header:]
    if hashlib.sha256(payload).digest() != checksum:
        raise ValueError("checksum mismatch (truncated or altered)")
    try:
        content = torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True)
    except Exception as exc:  # any unpickling failure means the same thing: do not use this file
        raise ValueError(f"unreadable payload ({type(exc).__name__})") from None
    if not isinstance(content, dict) or content.get("key") != canonical_key:
        raise ValueError("written for another key")
    return content["state"]


def _check_state(state) -> dict[str, torch.Tensor]:
    if not isinstance(state, dict) or not all(
        isinstance(name, str) and isinstance(value, torch.Tensor) for name, value in state.items()
    ):
        raise TypeError("pretrained_state build must return a dict of str to torch.Tensor (a state_dict)")
    # On the CPU and detached: a file written on a GPU machine loads on a CPU one, and a hit and a
    # miss hand back the same thing.
    return {name: value.detach().cpu().clone() for name, value in state.items()}


def pretrained_state(
    key: dict, build: Callable[[], dict[str, torch.Tensor]], folder: str | Path | None = None
) -> dict[str, torch.Tensor]:
    """The state dict cached for ``key``, else ``build()``'s, written to the cache first.

    ``key``: a JSON-able dict of everything that determines the weights (see the module
    docstring). ``build`` is called only when no sound file holds the key: on a miss, and when the
    file is corrupt (then with a warning). The tensors come back on the CPU; move them with
    ``module.load_state_dict``.
    """
    canonical_key = _canonical(key)
    path = cache_path(key, folder)
    if path.exists():
        try:
            return _decode(path.read_bytes(), canonical_key)
        except ValueError as exc:
            warnings.warn(f"pretrained cache file {path} is corrupt ({exc}); rebuilding it", stacklevel=2)
    state = _check_state(build())
    atomic_write_bytes(path, _encode(canonical_key, state))
    return state


def checkpoint_path(key: dict, folder: str | Path | None = None) -> Path:
    """Where an unfinished build of ``key`` keeps its progress: ``<its file>.partial``."""
    return cache_path(key, folder).with_suffix(".partial")


def save_progress(key: dict, progress: dict, folder: str | Path | None = None) -> None:
    """Keep an unfinished build's ``progress`` (a dict of tensors, numbers, nested dicts) for
    ``key``, atomically and in the cache's format: a pretraining of hours that is interrupted (a
    session's end, a killed job) resumes from it (:func:`load_progress`) instead of from epoch 0."""
    atomic_write_bytes(checkpoint_path(key, folder), _encode(_canonical(key), progress))


def load_progress(key: dict, folder: str | Path | None = None) -> dict | None:
    """The progress last saved for ``key``; None when there is none, or when the file is not a
    sound one for the key (then with a warning: the build starts afresh)."""
    path = checkpoint_path(key, folder)
    if not path.exists():
        return None
    try:
        return _decode(path.read_bytes(), _canonical(key))
    except ValueError as exc:
        warnings.warn(f"checkpoint {path} is unusable ({exc}); starting afresh", stacklevel=2)
        return None


def discard_progress(key: dict, folder: str | Path | None = None) -> None:
    """Remove ``key``'s progress file once its build is finished and cached."""
    checkpoint_path(key, folder).unlink(missing_ok=True)


def progress_key(estimator, device: str, seed: int, **inputs) -> dict | None:
    """What determines a seeded fit's progress: the method, its hyperparameters (threads and the
    device's name left out: they do not change the numbers' meaning), the seed, the device's type
    and ``inputs`` (digests of the data and whatever else pins the fit's start). NumPy scalars (a
    scikit-learn grid's values) count as the Python numbers they hold; None, so no checkpoint,
    when a hyperparameter is no JSON value (an object): the fit then runs without one."""
    params = {
        name: value for name, value in estimator.get_params().items() if name not in ("n_threads", "device")
    }
    try:
        json.dumps(params, allow_nan=False, default=_number)
    except (TypeError, ValueError):
        return None
    return {
        "format": 1,
        "clustering": type(estimator).__name__,
        "params": params,
        "seed": seed,
        "device": torch.device(device).type,
        **inputs,
    }


class FitProgress:
    """A seeded fit's checkpoint file (none when ``key`` is None: a drawn seed would key a file no
    later fit asks for): loaded once, saved when ``due`` (``CHECKPOINT_SECONDS`` since the last
    save), removed when the fit is done. Each save also keeps the seconds the fit has run so far,
    over all its interrupted runs: after ``load``, ``earlier_seconds`` is what the runs before this
    one spent (until their last save), which a record adds to this run's time."""

    def __init__(self, key: dict | None):
        self.key, self.last = key, time.monotonic()
        self.started, self.earlier_seconds = self.last, 0.0

    def load(self) -> dict | None:
        content = None if self.key is None else load_progress(self.key)
        if content is not None:
            self.earlier_seconds = float(content.pop(ELAPSED, 0.0))
        return content

    def due(self) -> bool:
        return self.key is not None and time.monotonic() - self.last >= CHECKPOINT_SECONDS

    def save(self, content: dict) -> None:
        self.last = time.monotonic()
        save_progress(self.key, {**content, ELAPSED: self.earlier_seconds + self.last - self.started})

    def discard(self) -> None:
        if self.key is not None:
            discard_progress(self.key)
