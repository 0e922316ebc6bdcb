"""Shared helpers for the metric, record, runner, CLI and sweep tests (not a test module).

Test estimators live here so a config can point ``method.estimator._target_`` at them
(``tests.helpers.Exploding``), in-process and in a ``clusterbench`` subprocess alike.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

import numpy as np
import pytest
from omegaconf import DictConfig, OmegaConf
from sklearn.base import BaseEstimator, ClusterMixin

from clusterbench import catalog
from clusterbench.data.sources import DATA_ENV

REPO = Path(__file__).resolve().parent.parent
# The Makefile and CI export $CLUSTERBENCH_DATA; a checkout beside ../shared finds it by itself.
DATA_FOLDER = Path(os.environ.get(DATA_ENV) or REPO.parent / "shared" / "datasets")


def require_cached(*names: str) -> Path:
    """The data folder, or skip the calling test when one of ``<name>.npz`` is not in it."""
    for name in names:
        if not (DATA_FOLDER / f"{name}.npz").exists():
            pytest.skip(f"{name}.npz is not in {DATA_FOLDER} (set {DATA_ENV})")
    return DATA_FOLDER


# The kind of CPU that wrote the committed records of fits that amplify the last bits of the
# kernels' rounding (CLAM's 200 epochs on Zoo, the Khatri-Rao restarts of Soybean with tied
# starts): on another CPU (an Intel Xeon with AVX-512, 2026-12-07) they part from their records
# while the code is the same, as docs/records.md says of deep fits.
RECORDS_CPU = "AMD EPYC"


def require_records_cpu() -> None:
    """Skip the calling test, which refits such records, off a :data:`RECORDS_CPU`."""
    from clusterbench.results import processor

    here = processor("cpu")
    if not here.startswith(RECORDS_CPU):
        pytest.skip(f"these records amplify rounding and were written on an {RECORDS_CPU}; this CPU: {here}")


def compose_config(results_dir: Path, *overrides: str) -> DictConfig:
    """The job config that ``clusterbench run`` would get, composed from ``conf/`` (and the user's
    config folders)."""
    return catalog.compose_config([f"results_dir={results_dir}", *overrides])


def assert_refit_reproduces_committed(
    tmp_path: Path, experiment: str, *overrides: str, atol: float, rtol: float = 0.0
) -> int:
    """Refit the points of ``experiment`` that ``overrides`` select into ``tmp_path`` and assert
    that every metric equals the committed record's (``results/``); returns the points compared.
    A record said what some code computed once: this keeps committed tables honest as code moves."""
    from clusterbench.results import record_differences
    from clusterbench.runner import run_job

    fresh = run_job(compose_config(tmp_path, f"experiment={experiment}", *overrides), experiment)
    lines, compared, _ = record_differences(tmp_path, REPO / "results", atol=atol, rtol=rtol)
    assert not lines, "\n".join(lines)
    assert compared == len(fresh) > 0
    return compared


def load_script(name: str):
    """``scripts/<name>.py`` as a module, to call its functions (``main(argv)``) in-process."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cli_env(data_folder: Path | None = None) -> dict:
    env = dict(os.environ)
    env[DATA_ENV] = str(DATA_FOLDER if data_folder is None else data_folder)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["HYDRA_FULL_ERROR"] = "0"
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


def clusterbench_command() -> list[str]:
    """The installed console script (fall back to the module when it is not on PATH)."""
    script = Path(sys.executable).parent / "clusterbench"
    return [str(script)] if script.exists() else [sys.executable, "-m", "clusterbench"]


def run_cli(
    *words: str, data_folder: Path | None = None, timeout: float = 300, cwd: Path = REPO
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*clusterbench_command(), *words],
        cwd=cwd,
        env=cli_env(data_folder),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def cli(*words: str, data_folder: Path | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """``clusterbench WORDS`` run in this process, as ``run_cli`` runs it in a fresh one (see
    ``in_process``). Tests of signals, launchers and the console script itself keep ``run_cli``."""
    import clusterbench.cli

    return in_process(
        lambda: clusterbench.cli.main(list(words)), ["clusterbench", *words], data_folder=data_folder, cwd=cwd
    )


def script(name: str, *words: str, data_folder: Path | None = None) -> subprocess.CompletedProcess:
    """``python scripts/<name>.py WORDS`` run in this process (see ``in_process``)."""
    path = str(REPO / "scripts" / f"{name}.py")

    def run_as_main() -> None:
        runpy.run_path(path, run_name="__main__")

    return in_process(run_as_main, [path, *words], data_folder=data_folder)


def in_process(call, argv: list[str], *, data_folder: Path | None = None, cwd: Path = REPO):
    """``call()`` as the fresh process of ``run_cli`` would run it: that ``sys.argv``, folder,
    ``$CLUSTERBENCH_DATA`` and ``$HYDRA_FULL_ERROR``; what it writes to stdout and stderr (Python's
    streams and the file descriptors below them, which C code and child processes write to), its
    exit status as a process would give it, an uncaught error's traceback, warnings printed as a
    fresh interpreter prints them (``$PYTHONWARNINGS`` included) and log records as Python's
    last-resort handler does, returned as that process's CompletedProcess. A fresh process spends
    seconds importing scikit-learn, pandas and Hydra; the tests of what a command says and writes
    need none (``tests/test_helpers.py`` holds it to a fresh ``python``). What a run sets
    process-wide is put back after it: Hydra's singletons (the sweeper's HydraConfig), the logging
    handlers Hydra installs, torch's thread count, the caches of the configs read once."""
    from hydra.core.singleton import Singleton

    from clusterbench import catalog, overrides

    for cached in (catalog.method_names, catalog.dataset_names, overrides.file_keys, catalog.settings):
        cached.cache_clear()  # a test may have written a config file: a fresh process reads it
    stdout, stderr = io.StringIO(), io.StringIO()
    saved_argv, saved_cwd = list(sys.argv), os.getcwd()
    saved_env = {key: os.environ.get(key) for key in (DATA_ENV, "HYDRA_FULL_ERROR")}
    saved_hydra = Singleton.get_state()
    loggers = [logging.getLogger(), logging.getLogger("hydra")]
    saved_logging = [(logger, list(logger.handlers), logger.level) for logger in loggers]
    torch = sys.modules.get("torch")
    saved_threads = torch.get_num_threads() if torch else None
    os.environ[DATA_ENV] = str(DATA_FOLDER if data_folder is None else data_folder)
    os.environ["HYDRA_FULL_ERROR"] = "0"
    sys.argv = list(argv)
    os.chdir(cwd)
    logging.getLogger().handlers = []  # pytest's capture would swallow what lastResort prints
    sys.stdout.flush()
    sys.stderr.flush()
    saved_fds = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as fd1_file, tempfile.TemporaryFile() as fd2_file:
        try:
            os.dup2(fd1_file.fileno(), 1)
            os.dup2(fd2_file.fileno(), 2)
            with (
                contextlib.redirect_stdout(stdout),
                contextlib.redirect_stderr(stderr),
                warnings.catch_warnings(),
            ):
                warnings.resetwarnings()  # a fresh interpreter's filters, first to last
                warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
                for category in (
                    DeprecationWarning,
                    PendingDeprecationWarning,
                    ImportWarning,
                    ResourceWarning,
                ):
                    warnings.simplefilter("ignore", category, append=True)
                # $PYTHONWARNINGS goes in front of them, the last option first, as the interpreter
                # puts it (wcstok: empty items skipped; a malformed one ignored with a message)
                warnings._processoptions([o for o in os.environ.get("PYTHONWARNINGS", "").split(",") if o])
                warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: (
                    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))
                )
                returncode = _exit_status(call)
        finally:
            for fd, saved in zip((1, 2), saved_fds, strict=True):
                os.dup2(saved, fd)
                os.close(saved)
            os.chdir(saved_cwd)
            sys.argv = saved_argv
            for key, value in saved_env.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            Singleton.set_state(saved_hydra)
            for logger, handlers, level in saved_logging:
                for handler in set(logger.handlers) - set(handlers):
                    handler.close()
                logger.handlers, logger.level = handlers, level
            if torch:
                torch.set_num_threads(saved_threads)
        below = []
        for file in (fd1_file, fd2_file):
            file.seek(0)
            below.append(file.read().decode(errors="replace"))
    return subprocess.CompletedProcess(
        argv, returncode, stdout.getvalue() + below[0], stderr.getvalue() + below[1]
    )


def _exit_status(call) -> int:
    """What a process running ``call()`` then exiting with its return value would exit with."""
    try:
        code = call()
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:
        traceback.print_exc()
        return -signal.SIGINT  # as a process killed by Ctrl-C
    except Exception:
        traceback.print_exc()
        return 1
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)  # sys.exit("message"): printed, status 1
    return 1


def record_files(results_dir: Path) -> list[Path]:
    return sorted((Path(results_dir) / "runs").rglob("*.csv"))


class KMeansLike(ClusterMixin, BaseEstimator):
    """Takes k-means' hyperparameters (so the k-means configs and grids apply); counts its fits."""

    fits = 0

    def __init__(self, n_clusters=8, init="k-means++", n_init=1, max_iter=300, random_state=None):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.random_state = random_state


class Exploding(KMeansLike):
    """Raises in ``fit``."""

    fits = 0

    def fit(self, X, y=None):
        type(self).fits += 1
        raise RuntimeError("boom in fit")


class NeedsBandwidth(KMeansLike):
    """Takes a hyperparameter without a default (and k-means' others)."""

    def __init__(self, bandwidth, n_clusters=8, init="k-means++", n_init=1, max_iter=300, random_state=None):
        super().__init__(n_clusters, init, n_init, max_iter, random_state)
        self.bandwidth = bandwidth

    def fit(self, X, y=None):
        self.labels_ = np.zeros(len(X), dtype=int)
        return self


class NotConstructible(KMeansLike):
    """Raises in ``__init__``: an error outside any fit, which no record holds."""

    def __init__(self, n_clusters=8, init="k-means++", n_init=1, max_iter=300, random_state=None):
        raise RuntimeError("boom in __init__")


def unreadable(loader: str):
    """A dataset source that cannot read what it is given (``dataset=iris``'s ``loader``)."""
    raise FileNotFoundError(f"[Errno 2] No such file or directory: '{loader}.csv'")


class Halves(KMeansLike):
    """Splits the rows into two halves by position."""

    fits = 0

    def fit(self, X, y=None):
        type(self).fits += 1
        self.labels_ = (np.arange(len(X)) >= len(X) // 2).astype(int)
        return self


def forwarding_silhouette(X, labels, **options) -> float:
    """A metric that forwards any option (scikit-learn's silhouette_score takes random_state)."""
    from sklearn.metrics import silhouette_score

    return float(silhouette_score(X, labels, **options))


class PredictsOnly(KMeansLike):
    """Sets no ``labels_`` but predicts, as GaussianMixture does: even rows 0, odd rows 1."""

    def fit(self, X, y=None):
        return self

    def predict(self, X):
        return np.arange(len(X)) % 2


class NoLabels(PredictsOnly):
    """Neither sets ``labels_`` nor predicts."""

    predict = None


class NaNLabels(PredictsOnly):
    """Predicts NaN for its first point."""

    def predict(self, X):
        return np.where(np.arange(len(X)) == 0, np.nan, 1.0)


def spec_changed(monkeypatch, name: str, change: dict) -> None:
    """Let table ``name``'s committed spec read as if ``change`` were merged into its file."""
    import clusterbench.tables.spec as tables

    original = tables.load_option
    committed = original("table", name)
    monkeypatch.setattr(
        tables,
        "load_option",
        lambda group, option: (
            OmegaConf.merge(committed, change) if group == "table" else original(group, option)
        ),
    )


class Interrupted(Exception):
    """Raised by a test's stand-in checkpoint writer: a fit stopped halfway (a killed job)."""


def stop_after_saves(monkeypatch, saves: int):
    """Checkpoints after every step (CHECKPOINT_SECONDS = 0), the fit stopped by ``Interrupted``
    right after the ``saves``-th: returns (the steps saved, so far; the real writer)."""
    from clusterbench.methods.deep import cache

    monkeypatch.setattr(cache, "CHECKPOINT_SECONDS", 0.0)
    saved, original_save = [], cache.save_progress

    def save_then_stop(key, progress, folder=None):
        original_save(key, progress, folder)
        saved.append(progress["step"])
        if len(saved) == saves:
            raise Interrupted

    monkeypatch.setattr(cache, "save_progress", save_then_stop)
    return saved, original_save
