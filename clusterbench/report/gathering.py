"""What the page is built from: each paper's committed tables, figures and benchmarks, and a
table's cells (its CSV) and cell texts (its Markdown)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from clusterbench.report.papers import OTHER, PAPERS, Paper


@dataclass
class PaperFiles:
    """A paper's files on the page: its built tables (by name), its figures and its benchmarks."""

    paper: Paper
    tables: list[str]
    figures: list[Path]
    benchmarks: list[Path]


def gather(results_dir: Path, profile: str) -> list[PaperFiles]:
    """Every paper's files under ``results_dir`` (tables of ``profile``), each kind in natural
    order; then, if there are any, the files no paper's prefix claims, under :data:`OTHER`."""
    tables = sorted((path.stem for path in (results_dir / "tables" / profile).glob("*.csv")), key=natural)
    figures = sorted((results_dir / "figures").glob("*.png"), key=lambda path: natural(path.name))
    benchmarks = sorted((results_dir / "benchmarks").glob("*.csv"), key=lambda path: natural(path.name))
    claimed = [paper for paper in PAPERS if paper.prefixes]
    others = [
        name
        for name in [*tables, *(path.stem for path in figures + benchmarks)]
        if not any(paper.owns(name) for paper in claimed)
    ]
    papers = [*PAPERS, OTHER] if others else list(PAPERS)
    gathered = []
    for paper in papers:
        owned = (lambda name: name in others) if paper is OTHER else paper.owns
        gathered.append(
            PaperFiles(
                paper,
                [name for name in tables if owned(name)],
                [path for path in figures if owned(path.stem)],
                [path for path in benchmarks if owned(path.stem)],
            )
        )
    return gathered


def natural(name: str) -> tuple:
    """A sort key that puts table2 before table10 (and fig9 before fig10)."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name))


@dataclass
class Markdown:
    """What a committed ``<table>.md`` holds: its title, its note and its table's cell texts."""

    title: str
    note: str
    header: list[str]
    rows: list[list[str]]


def read_markdown(path: Path) -> Markdown | None:
    if not path.exists():
        return None
    title, note, header, rows = "", "", [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("### "):
            title = line[4:].strip()
        elif line.startswith("|"):
            texts = [text.strip() for text in line.strip().strip("|").split("|")]
            if not header:
                header = texts
            elif not set("".join(texts)) <= set(":-"):  # not the alignment line
                rows.append(texts)
        elif line.strip() and title and not header:
            note = f"{note} {line.strip()}".strip()
    return Markdown(title, note, header, rows)


def read_cells(path: Path, spec) -> tuple[pd.DataFrame, bool]:
    """A table's cells from its CSV, one per (row, metric, column) of ``spec`` in its order (a
    cell the CSV lacks is one not run), and whether the CSV matched the spec."""
    cells = pd.read_csv(path, keep_default_na=False, na_values=[""])
    keys = ["dataset", "metric", "column"]
    cells[keys] = cells[keys].astype(str)
    wanted = pd.DataFrame(
        [(row, metric, column) for row in spec.rows for metric in spec.metrics for column in spec.columns],
        columns=keys,
    )
    matched = len(cells) == len(wanted) and cells[keys].equals(wanted)
    if matched:
        return cells, True
    cells = wanted.merge(cells, on=keys, how="left")
    cells["status"] = cells["status"].fillna("missing")
    cells[["n_runs", "n_ok"]] = cells[["n_runs", "n_ok"]].fillna(0)
    return cells, False
