"""The data folders' maintenance: ``clusterbench data import`` and ``data verify``."""

from __future__ import annotations

import filecmp
import shutil
from pathlib import Path

from clusterbench.catalog import check_option, load_option, options
from clusterbench.errors import UserError


def import_folder(folder: Path, cache: Path) -> None:
    """Copy the folder's ``<name>.npz`` files into the cache, and its ``MANIFEST.csv`` rows into the
    cache's (those of the same name replaced), so that ``data verify`` checks their SHA-256."""
    import pandas as pd

    from clusterbench.data.sources import read_npz
    from clusterbench.results import atomic_write_text

    if not folder.is_dir():
        raise UserError(f"no folder {folder}; name a folder of <name>.npz files (arrays X (n, d) and y (n,))")
    files = sorted(folder.glob("*.npz"))
    if not files:
        raise UserError(f"no .npz files in {folder}; each file holds arrays X (n, d) and y (n,)")
    for file in files:
        read_npz(file)  # refuse files without X and y before copying anything
    manifest, rows = folder / "MANIFEST.csv", None
    if manifest.exists() and manifest.resolve() != (cache / manifest.name).resolve():
        rows = pd.read_csv(manifest)
        if not {"name", "sha256_of_npz"} <= set(rows.columns):
            raise UserError(
                f"{manifest} needs columns name and sha256_of_npz (or remove it to import without)"
            )
    cache.mkdir(parents=True, exist_ok=True)
    copied = [file for file in files if file.resolve() != (cache / file.name).resolve()]
    replaced = [
        file.name
        for file in copied
        if (cache / file.name).exists() and not filecmp.cmp(file, cache / file.name, shallow=False)
    ]
    for file in copied:
        shutil.copyfile(file, cache / file.name)
    if rows is not None:
        if (cache / manifest.name).exists():
            rows = pd.concat([pd.read_csv(cache / manifest.name), rows]).drop_duplicates("name", keep="last")
        atomic_write_text(cache / manifest.name, rows.to_csv(index=False))
    print(
        f"imported {len(files)} file(s) into {cache}"
        + (f" (replaced different files of the same name: {', '.join(replaced)})" if replaced else "")
    )
    unread = sorted({file.stem for file in files} - set(cached_files().values()))
    if unread:  # legitimate (a config may follow), but `dataset=<name>` would not find them yet
        print(
            f"no dataset config reads {', '.join(f + '.npz' for f in unread)}: run one with "
            f"dataset=embeddings dataset.path={cache.resolve() / (unread[0] + '.npz')}, or give it a "
            "conf/dataset/<name>.yaml (docs/extending.md)"
        )


def cached_files() -> dict[str, str]:
    """Each dataset config that reads a ``<name>.npz`` from the data folders, and that name."""
    from clusterbench.data.sources import reads_cache

    specs = {name: load_option("dataset", name) for name in options("dataset")}
    return {name: spec.source.name for name, spec in specs.items() if reads_cache(spec.source)}


def check_files(folder: Path, names: list[str] | None = None) -> dict[str, str]:
    """Check the dataset files one folder holds: each file's shape and class count against its
    config, and its SHA-256 against the folder's ``MANIFEST.csv`` where it has one. For each
    dataset config (of ``names``, else of all) whose file the folder holds: "ok" or "MISMATCH: …"."""
    import hashlib

    import numpy as np
    import pandas as pd

    from clusterbench.data.sources import read_npz, reads_cache

    manifest_path = folder / "MANIFEST.csv"
    manifest = pd.read_csv(manifest_path).set_index("name") if manifest_path.exists() else None
    verdicts = {}
    for name in options("dataset") if names is None else names:
        spec = load_option("dataset", name)
        if not reads_cache(spec.source):
            continue
        path = folder / f"{spec.source.name}.npz"
        if not path.is_file():
            continue
        try:
            raw = read_npz(path)
        except UserError as exc:  # report it and go on with the other files
            verdicts[name] = f"MISMATCH: {exc}"
            continue
        found = [list(raw.X.shape), len(np.unique(raw.y))]
        # n_classes: where n_clusters is a choice rather than the number of labels (kdd_protein)
        expected = [list(spec.get("shape") or found[0]), spec.get("n_classes", spec.get("n_clusters"))]
        if expected[1] is None:
            expected[1] = found[1]  # the config says nothing to check the labels against
        issues = (
            []
            if found == expected
            else [f"X {found[0]}, labels {found[1]} (its config: X {expected[0]}, labels {expected[1]})"]
        )
        if manifest is not None and spec.source.name in manifest.index:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if digest != manifest.loc[spec.source.name, "sha256_of_npz"]:
                issues.append("sha256 differs from MANIFEST.csv")
        verdicts[name] = "MISMATCH: " + "; ".join(issues) if issues else "ok"
    return verdicts


def how_to_get(name: str) -> str:
    """The commands that put dataset ``name``'s file in the data cache."""
    from clusterbench.data.sources import import_only

    source = load_option("dataset", name).source
    if import_only(source):  # no download to fall back on
        return f"`clusterbench data import FOLDER` (a folder holding {source.name}.npz)"
    return f"`clusterbench data pull {name}` (OpenML) or `clusterbench data import FOLDER`"


def verify_data(names: list[str] | None = None) -> int:
    """``clusterbench data verify``: check every copy the data folders hold, the bundled ones too
    (:func:`check_files`), printed folder by folder in search order: a line for each copy a run
    reads, and for a copy an earlier folder hides, a line only where it fails (one day it may be
    the copy read). 1 on a mismatch, and, with ``names``, when one of them is held in no folder
    (each named on stderr with how to get it); an unknown name is a user error before any check."""
    import sys

    from clusterbench.data.sources import cache_dir, data_folders, find_npz

    for name in names or []:
        check_option("dataset", name)
    selected = list(dict.fromkeys(names)) if names else options("dataset")
    cached = cached_files()
    files = {name: cached[name] for name in selected if name in cached}  # in the order asked
    if names:
        for name in selected:
            if name not in files:  # a generator, scikit-learn or a user's own file: none in a folder
                target = str(load_option("dataset", name).source._target_)
                if target.endswith(".npz_file"):  # it does have a file, just not a data folder's copy
                    print(f"  {name:<20} reads its own .npz where it lies: checked when a run loads it")
                    continue
                kind = "sklearn" if target.endswith(".sklearn_bundled") else f"made by {target}"
                print(f"  {name:<20} no file to check ({kind})")
    read_from = {name: find_npz(file) for name, file in files.items()}
    failed = False
    for folder in data_folders():
        verdicts = check_files(folder.path, list(files))
        failed |= any(verdict != "ok" for verdict in verdicts.values())
        lines = []
        for name, verdict in verdicts.items():
            if read_from[name][0] == folder:
                lines.append(f"  {name:<20} {verdict}")
            elif verdict != "ok":
                lines.append(f"  {name:<20} {verdict} (not read: {read_from[name][0].label} holds it first)")
        if lines:
            print(f"{folder.label} ({folder.path}):", *lines, sep="\n")
    caches = [folder.path for folder in data_folders() if folder.label != "bundled"]
    if not any(next(path.glob("*.npz"), None) for path in caches if path.is_dir()):
        print(
            f"the data cache {cache_dir()} holds no datasets: copy .npz files in with "
            "`clusterbench data import FOLDER`, or fetch one with `clusterbench data pull NAME`"
        )
    missing = [name for name, held in read_from.items() if held is None]
    if missing and names:
        for name in missing:
            print(
                f"clusterbench: {name} is held in no data folder; get it with {how_to_get(name)}",
                file=sys.stderr,
            )
        return 1
    if missing:
        from clusterbench.data.sources import import_only

        local = [name for name in missing if import_only(load_option("dataset", name).source)]
        groups = [
            ("data pull NAME or data import FOLDER", [name for name in missing if name not in local]),
            ("data import FOLDER only: no OpenML id", local),
        ]
        print("held nowhere: " + "; ".join(f"{', '.join(held)} ({how})" for how, held in groups if held))
    return 1 if failed else 0
