"""Speed of SR-K-means' epochs (issue 29) and of MI-ADM's beside it, and what a warm cache saves.

    python scripts/bench_sr.py                                 # USPS and MNIST-full, 2 threads
    python scripts/bench_sr.py --datasets usps_11000 --threads 1 --repeats 3
    python scripts/bench_sr.py --quick                         # 1000 USPS images: seconds; writes nothing
    python scripts/bench_sr.py --device cuda                   # on a GPU: sr_kmeans_cuda.csv

What is measured, on the data as the SR tables prepare it (``pixels_symmetric``: (X − 127.5)/127.5)
and the paper's settings (DEPICT autoencoder, batch 100, Adam):

- per **pretraining epoch** of SR-K-means (one pass of the denoising autoencoder over the 90%
  training split, then the validation pass that early stopping reads): the difference of two fits
  with 1 and 1 + ``--extra`` pretraining epochs, each from an empty cache, divided by ``--extra``;
- per **clustering epoch** (phase 2: one pass of eq. 46 over all N, then the clean re-encoding
  and the closed-form updates of eq. 27-28) of SR-K-means and of MI-ADM (its peer in the paper:
  cross-entropy on the targets of eq. 14): fits with the network in the cache, 1 and
  1 + ``--extra`` phase-2 epochs (tol 0, so none stops early), phase 1 left out;
- **cold** and **warm** fit: the same fit (1 pretraining epoch, 1 clustering epoch) with an empty
  cache and with its network cached; the warm one must load the network (else the benchmark
  fails); their difference is one pretraining epoch and the cache write, less the cache read.

The initial clustering is k-means with one restart (AC-PIC's cost is not an epoch's); it and the
set-up cancel in each difference, and a difference of zero or less (the machine's noise above the
epochs' time) fails the benchmark rather than reaching the CSV. Each dataset keeps its own K.
Configurations alternate within each repeat and each keeps its least time, so a busy spell of the
machine falls on all alike; the 1-minute load average is recorded. Rows go to
results/benchmarks/sr_kmeans_<device>.csv (``--out`` folder): what, method, dataset, rows, threads,
seconds, repeats, load, date, and the processor or GPU that ran them (``hardware``). On a GPU each
time includes bringing the labels back to the host, so the device's queue is drained in it.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from clusterbench.catalog import load_option
from clusterbench.data import Dataset, load_dataset
from clusterbench.methods import MIADM, SRKMeans
from clusterbench.methods.deep import cache
from clusterbench.results import atomic_write_text, processor
from clusterbench.scripting import output_folder, positive_int, run_script

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "results" / "benchmarks"
METHODS = {"sr_kmeans": SRKMeans, "mi_adm": MIADM}
# Every fit: the paper's network and batches; no early stop of any phase inside a measurement.
FIXED = {"init": "kmeans", "n_init": 1, "init_epochs": 0, "pretrain_patience": 10**6, "tol": 0.0}


def prepared(name: str, rows: int | None) -> Dataset:
    """The dataset as the SR tables prepare it (pixels to [−1, 1]), as float32, with its own K."""
    config = load_option("dataset", name)
    config.preprocess = "pixels_symmetric"
    data = load_dataset(config, max_samples=rows)
    return dataclasses.replace(data, X=data.X.astype(np.float32))


def fit_seconds(
    method: str, data: Dataset, folder: Path, threads: int, device: str = "cpu", **settings
) -> tuple[float, object]:
    """Seconds of one fit whose pretraining cache is ``folder`` (the caller's cache setting is
    restored after it)."""
    settings = {**FIXED, **settings, "n_clusters": data.n_clusters, "random_state": 0, "n_threads": threads}
    model = METHODS[method](**settings, device=device)
    with cache.folder_for_block(folder):
        start = time.perf_counter()
        model.fit(data.X)
        return time.perf_counter() - start, model


def least_seconds(
    data: Dataset, threads: int, extra: int, repeats: int, device: str = "cpu"
) -> dict[str, float]:
    """The least seconds over ``repeats`` of each fit the rows are differences of, by label:
    ``pretrain E`` (cold cache, E pretraining epochs), ``<method> E`` (warm, E clustering epochs)."""
    least: dict[str, float] = {}

    def keep(label: str, seconds: float) -> None:
        least[label] = min(least.get(label, np.inf), seconds)

    with tempfile.TemporaryDirectory() as scratch:
        warm = Path(scratch) / "warm"
        fit_seconds("sr_kmeans", data, warm, threads, device, pretrain_epochs=1, epochs=1)  # fills the cache
        for repeat in range(repeats):
            for pretrain in (1, 1 + extra):
                cold = Path(scratch) / f"cold-{repeat}-{pretrain}"
                seconds = fit_seconds(
                    "sr_kmeans", data, cold, threads, device, pretrain_epochs=pretrain, epochs=1
                )[0]
                keep(f"pretrain {pretrain}", seconds)
            for method in METHODS:
                for epochs in (1, 1 + extra):
                    seconds, model = fit_seconds(
                        method, data, warm, threads, device, pretrain_epochs=1, epochs=epochs
                    )
                    if not model.pretrained_from_cache_ or model.n_iter_ != epochs:
                        raise SystemExit(
                            f"bench_sr.py: the {method} fit with {epochs} epochs did not run as set"
                        )
                    keep(f"{method} {epochs}", seconds)
    return least


def measure(data: Dataset, threads: int, extra: int, repeats: int, device: str = "cpu") -> list[dict]:
    least = least_seconds(data, threads, extra, repeats, device)

    def per_epoch(longer: str, shorter: str) -> float:
        seconds = (least[longer] - least[shorter]) / extra
        if seconds <= 0:  # the machine's noise exceeded the epochs' time: no number to keep
            raise SystemExit(
                f"bench_sr.py: {longer!r} took no longer than {shorter!r} on {data.name}; "
                "rerun with a larger --extra or more --repeats on a quieter machine"
            )
        return seconds

    row = {"dataset": data.name, "rows": len(data.X), "threads": threads, "repeats": repeats}
    row |= {"load": round(os.getloadavg()[0], 2), "date": datetime.date.today().isoformat()}
    row |= {"hardware": processor(device)}
    rows = [
        {"what": "pretraining epoch (s)", "method": "sr_kmeans",
         "seconds": per_epoch(f"pretrain {1 + extra}", "pretrain 1")},
        *({"what": "clustering epoch (s)", "method": method,
           "seconds": per_epoch(f"{method} {1 + extra}", f"{method} 1")} for method in METHODS),
        {"what": "cold fit, 1+1 epochs (s)", "method": "sr_kmeans", "seconds": least["pretrain 1"]},
        {"what": "warm fit, 1+1 epochs (s)", "method": "sr_kmeans", "seconds": least["sr_kmeans 1"]},
    ]  # fmt: skip
    return [{**entry, **row, "seconds": round(entry["seconds"], 3)} for entry in rows]


def merged(path: Path, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` after the rows of ``path`` (if it exists) whose dataset, threads and hardware were
    not measured now: another machine's rows stay beside this one's."""
    if not path.exists():
        return frame
    old = pd.read_csv(path, keep_default_na=False)
    key = ["dataset", "threads", "hardware"]
    measured_now = set(frame[key].itertuples(index=False, name=None))
    kept = [row not in measured_now for row in old.reindex(columns=key).itertuples(index=False, name=None)]
    return pd.concat([old[kept], frame], ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["usps_11000", "mnist"], help="dataset configs")
    parser.add_argument("--threads", type=positive_int, default=2, help="torch threads (default 2)")
    parser.add_argument(
        "--extra", type=positive_int, default=2, help="epochs between the two fits (default 2)"
    )
    parser.add_argument("--repeats", type=positive_int, default=2, help="alternating repeats (default 2)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the fits run")
    parser.add_argument("--quick", action="store_true", help="1000 USPS images, one repeat; writes nothing")
    parser.add_argument("--out", type=Path, default=OUT, help=f"output folder (default {OUT})")
    args = parser.parse_args()
    output_folder(parser, args.out)
    datasets, rows, repeats = (["usps_11000"], 1000, 1) if args.quick else (args.datasets, None, args.repeats)
    measured = []
    for name in datasets:
        measured += measure(prepared(name, rows), args.threads, args.extra, repeats, args.device)
        print(pd.DataFrame(measured).to_string(index=False), flush=True)
    if not args.quick:
        path = args.out / f"sr_kmeans_{args.device}.csv"
        frame = merged(path, pd.DataFrame(measured))
        atomic_write_text(path, frame.to_csv(index=False))
        print(f"-> {path}")


if __name__ == "__main__":
    run_script(main)
