"""The data cache's maintenance: ``clusterbench data import`` and ``data verify``."""

from __future__ import annotations

import filecmp
import shutil
from pathlib import Path

from clusterbench.catalog import load_option, options
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


def verify_cache(cache: Path) -> int:
    """Check each cached dataset's shape and class count against its config, and its SHA-256
    against ``MANIFEST.csv`` where the cache has one; exit 1 on any mismatch."""
    import hashlib

    import numpy as np
    import pandas as pd

    from clusterbench.data.sources import read_npz, reads_cache

    manifest_path = cache / "MANIFEST.csv"
    manifest = pd.read_csv(manifest_path).set_index("name") if manifest_path.exists() else None
    problems = 0
    for name in options("dataset"):
        spec = load_option("dataset", name)
        if not reads_cache(spec.source):
            continue
        path = cache / f"{spec.source.name}.npz"
        if not path.exists():
            print(f"  {name:<20} not cached")
            continue
        try:
            raw = read_npz(path)
        except UserError as exc:  # report it and go on with the other files
            problems += 1
            print(f"  {name:<20} MISMATCH: {exc}")
            continue
        found = [list(raw.X.shape), len(np.unique(raw.y))]
        # n_classes: where n_clusters is a choice rather than the number of labels (kdd_protein)
        expected = [list(spec.get("shape") or found[0]), spec.get("n_classes", spec.get("n_clusters"))]
        if expected[1] is None:
            expected[1] = found[1]  # the config says nothing to check the labels against
        issues = [] if found == expected else [f"X {found[0]}, labels {found[1]}"]
        if manifest is not None and spec.source.name in manifest.index:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if digest != manifest.loc[spec.source.name, "sha256_of_npz"]:
                issues.append("sha256 differs from MANIFEST.csv")
        problems += bool(issues)
        print(f"  {name:<20} {'MISMATCH: ' + '; '.join(issues) if issues else 'ok'}")
    return 1 if problems else 0
