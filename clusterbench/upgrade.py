"""``clusterbench records upgrade``: bring the records written by earlier code to today's form in one
pass; a rerun's ledger (:mod:`clusterbench.resume`) reads records only in today's form, and would fit
again a point whose record is named by the typed hash (and not rescore one without its fit hash).

Two forms are upgraded, both of records written before ``fit_hash`` and ``data_digest`` existed: a
record named by the former, type-sensitive hash takes its name by value (``tol=1`` and ``tol=1.0``
one name), and a record lacking its fit hash and data digest gets them. Both need the point's
configuration, which a record names but does not hold: it is composed from ``conf/`` (the record's
experiment, profile, dataset, method and seed), and trusted only where its hash gives the record's
own name. A record composed otherwise (settings given on the command line when it ran) is listed,
not touched.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

from omegaconf import OmegaConf, open_dict

from clusterbench.data import load_dataset
from clusterbench.errors import UserError, first_line
from clusterbench.migrations import adopt_typed_record, complete_record
from clusterbench.results import config_hash, records_folder, typed_hash
from clusterbench.runner import compose_job, prepare_job


def outdated_records(results_dir: Path) -> list[tuple[Path, dict]]:
    """(path, first row) of every record under ``results_dir/runs`` lacking its fit hash or data
    digest: the only ones written before records were named by value, so the only ones to upgrade."""
    outdated = []
    for path in sorted(records_folder(results_dir).rglob("*.csv")):
        if path.name.startswith(".") or ".journal" in path.parts:  # a record being written, a run's notes
            continue
        with path.open(newline="") as handle:
            row = next(csv.DictReader(handle), None)
        if row and not (row.get("fit_hash") and row.get("data_digest")):
            outdated.append((path, row))
    return outdated


def upgrade_records(results_dir: Path) -> list[str]:
    """Upgrade every outdated record under ``results_dir``; one line per record changed or left."""
    results_dir = Path(results_dir).absolute()
    groups = defaultdict(list)  # records composed from one config: (profile, experiment, dataset, method)
    for path, row in outdated_records(results_dir):
        groups[row["profile"], row["experiment"], row["dataset"], row["method"]].append((path, row))
    datasets: dict[str, object] = {}

    def load(dataset_cfg, max_samples=None):  # each dataset loaded once for every record of it
        key = OmegaConf.to_yaml(dataset_cfg) + str(max_samples)
        if key not in datasets:
            datasets[key] = load_dataset(dataset_cfg, max_samples=max_samples)
        return datasets[key]

    lines = []
    for (profile, experiment, dataset, method), records in groups.items():
        try:
            cfg = compose_job(results_dir, profile, experiment, dataset, method)
        except Exception as exc:  # no such config today: every record of the group is left
            why = f"its configuration does not compose from the configs ({first_line(exc)})"
            lines += [_left(path, results_dir, why) for path, _ in records]
            continue
        for path, row in records:
            with open_dict(cfg):
                cfg.seed = int(row["seed"])
            if not path.exists():  # the typed twin of a record upgraded before it, removed then
                continue
            try:
                lines.append(_upgrade(path, row, cfg, load, results_dir))
            except UserError as exc:
                lines.append(_left(path, results_dir, first_line(exc)))
    return lines


def _upgrade(path: Path, row: dict, cfg, load, results_dir: Path) -> str:
    job = prepare_job(cfg, row["experiment"], load)
    if job is None:
        return _left(path, results_dir, f"the method does not run at seed {row['seed']} today")
    point = {"target": job.method.estimator._target_, "variant": row["variant"]}
    point["params"] = json.loads(row["params"])
    identity = {**job.identity, "method": point}
    named = job.record_of(point)
    if path.stem == typed_hash(identity) != config_hash(identity):
        earlier = named.read_bytes() if named.exists() else None
        adopt_typed_record(named, path.stem)
        kept = earlier is not None and named.read_bytes() == earlier
        done = f"removed: {named.name} holds the point's record" if kept else f"renamed to {named.name}"
    elif path == named:
        done = "given its fit hash and data digest"
    else:
        return _left(path, results_dir, "its name is not the hash of the configuration composed today")
    complete_record(named, fit_hash=job.fit_hash_of(point), data_digest=job.data.digest)
    return f"{path.relative_to(results_dir)}: {done}"


def _left(path: Path, results_dir: Path, why: str) -> str:
    return f"{path.relative_to(results_dir)}: left as it is: {why}"
