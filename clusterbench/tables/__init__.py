"""Aggregate tidy records into a paper's table, our value beside the paper's.

A table spec (``conf/table/<name>.yaml``) names the experiments whose records it reads, the
selection protocol, the rows (datasets) and columns (methods), optional relative-gain and
win/loss rows, and the paper's reported values as data. ``build_table`` writes Markdown, LaTeX
and a long CSV with ``ours``, ``paper`` and ``delta`` for every cell.

The package, in the order a table is made: :mod:`clusterbench.runs` reads records as runs,
:mod:`.spec` reads and checks the spec, :mod:`.protocols` chooses a cell's value among its runs
(the protocols, ``protocol.kind``, are documented there), :mod:`.cells` makes the cells with the
paper's values and deltas, and :mod:`.render` formats them (gains, W/L, marks).

A column with ``params: {name: value}`` reads only runs with those hyperparameters (k-means as
k-means-C′ with C′ = 1 beside C′ = 2 from one sweep).

``paper_column: <column>`` on a column compares it with that column's paper values (a variant
of a method, run beside it, against the cell the paper printed for the method).
``ratio_to: {metric: column}`` reports that metric relative to the named column on the same
dataset (the Khatri-Rao paper's inertia and parameter ratios to k-means with h1·h2 centroids).
``extends: <table>`` takes that table's spec and changes only the keys given (e.g. its seeds).
``gain: {reference: column, columns: [...]}`` prints the reference column's relative gain
(a − b)/b as ▲/▼ on the listed columns (default: all others), and ``win_loss: [column, ...]`` adds a
W/L row per listed column. The paper side prints the gains and W/L the paper prints where the
spec gives them (``paper_gain: {metric: {dataset: {column: percent}}}``, ``paper_win_loss:
{metric: {column: {other column: "w/l"}}}``), and computes them from its cells otherwise.
``paper_from: <table>`` takes the paper's values from that table's spec, only those of this
table's metrics, rows and columns (a table that re-reads some of another's cells under another
protocol); ``paper`` entries of its own are merged over them.
``seeds: [...]`` reads only the runs of those seeds (e.g. the seed a paper's script fixed); a
column's own ``seeds`` replace the table's for it (a method that ignores the seed runs at one),
and so do the agreement protocol's ``reference``'s; ``seeds: null`` in a column keeps the table's.
``unavailable: {dataset: why}`` marks a row whose data we do not hold: its cells say
``not available`` (the reason goes to the CSV) instead of the row silently missing, until
records of it exist (a user who holds the data ran it). ``not_run: {dataset: why}`` likewise marks
a row left unrun on purpose (e.g. one that needs a GPU at this profile): ``not run``, with why.

Every protocol chooses among the runs that finished (status ok) with a value; a cell whose value
was chosen without some of its runs (failed, timed out, skipped, or without a value of its metric:
SC of a one-cluster labeling) is marked † and counts them in the CSV (``n_ok`` of ``n_runs``), so
a partial grid or seed set never passes for a full one. A ``best``
cell whose selected run found fewer clusters than it asked for is marked ‡ (``n_found`` of
``n_clusters`` in the CSV), so a near-degenerate labeling never passes for a k-cluster one. A
cell whose finished runs hold fewer of the ``seeds`` its table or column names is marked §
(``n_seeds`` in the CSV), so a one-seed value never passes for a mean over those seeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from clusterbench.errors import UserError
from clusterbench.results import (
    atomic_write_text,
    folder_words,
    load_records,
    no_records_error,
    profile_words,
)
from clusterbench.runs import wide_runs
from clusterbench.tables.cells import agreement_cell, compute_cells
from clusterbench.tables.protocols import best_of_weights, select
from clusterbench.tables.render import (
    FEWER_MARK,
    FEWER_NOTE,
    FEWER_NOTE_LATEX,
    PARTIAL_MARK,
    PARTIAL_NOTE,
    PARTIAL_NOTE_LATEX,
    SEEDS_MARK,
    SEEDS_NOTE,
    SEEDS_NOTE_LATEX,
    fewer_seeds,
    found_fewer,
    is_partial,
    relative_gain,
    render,
    sides,
    win_loss,
)
from clusterbench.tables.spec import (
    _check_against_records,
    _check_one_experiment_per_point,
    per_metric,
    table_spec,
)

# What the report, the CLI and the tests import from ``clusterbench.tables``.
__all__ = [
    "FEWER_MARK",
    "FEWER_NOTE",
    "PARTIAL_MARK",
    "PARTIAL_NOTE",
    "SEEDS_MARK",
    "SEEDS_NOTE",
    "TableOutputs",
    "agreement_cell",
    "best_of_weights",
    "build_table",
    "compute_cells",
    "per_metric",
    "relative_gain",
    "render",
    "select",
    "sides",
    "table_spec",
    "win_loss",
    "write_table",
]


@dataclass
class TableOutputs:
    cells: pd.DataFrame
    markdown: str
    paths: list[Path]


def build_table(name: str, results_dir: Path, profile: str, skip_empty: bool = False) -> TableOutputs | None:
    """Build table ``name`` from the records of ``profile`` into ``<results_dir>/tables/<profile>/``.

    When none of the table's experiments has records: None with ``skip_empty``, else a user
    error (a table of dashes would hide a wrong folder or profile).
    """
    spec = table_spec(name)
    records = load_records(results_dir, profile, list(spec.experiments))
    if records.empty:
        if skip_empty:
            return None
        missing = no_records_error(
            results_dir,
            profile,
            list(spec.experiments),
            f"run them first ({run_command(spec.experiments[0], profile, results_dir)}) "
            "or name the folder and profile that hold them (--results-dir, --profile)",
        )
        raise UserError(f"table {name}: {missing}")
    _check_against_records(spec, records)
    return write_table(spec, records, Path(results_dir) / "tables" / profile, profile, results_dir)


def run_command(experiment: str, profile: str, results_dir: Path) -> str:
    """The command that writes ``experiment``'s records where a table of ``profile`` built from
    ``results_dir`` reads them (the defaults left out)."""
    return (
        f"clusterbench run -m experiment={experiment}"
        + profile_words(profile, "profile=")
        + folder_words(results_dir, "results_dir=")
    )


def write_table(
    spec, records: pd.DataFrame, out: Path, profile: str, results_dir: Path | None = None
) -> TableOutputs:
    """Compute the cells of ``spec`` from ``records``; write <name>.md, .tex and .csv into ``out``.

    ``results_dir``: where the records' labels files lie (needed by protocol ``agreement``).
    """
    runs = wide_runs(records)
    _check_one_experiment_per_point(spec, runs)
    cells = compute_cells(spec, runs, results_dir)
    sources = ", ".join(spec.experiments)
    title = spec.get("title", spec.name)
    header = f"### {title}\n\nProfile `{profile}`; records of {sources}. {spec.get('note', '')}"
    caption = title
    marks = (  # which cells a mark flags, the mark, its note, its LaTeX symbol and note
        (is_partial, PARTIAL_MARK, PARTIAL_NOTE, "dagger", PARTIAL_NOTE_LATEX),
        (found_fewer, FEWER_MARK, FEWER_NOTE, "ddagger", FEWER_NOTE_LATEX),
        (fewer_seeds, SEEDS_MARK, SEEDS_NOTE, "S", SEEDS_NOTE_LATEX),
    )
    for flags, mark, note, latex_mark, latex_note in marks:
        if cells.apply(flags, axis=1).any():
            header += f" {mark}: {note}"
            caption += f"{'' if caption.endswith('.') else '.'} $^\\{latex_mark}$: {latex_note}"
    header += "\n\n"
    markdown = header + render(spec, cells, latex=False).to_markdown(index=False, disable_numparse=True)
    latex = render(spec, cells, latex=True).to_latex(index=False, escape=False, caption=caption)
    table_csv = cells.to_csv(index=False, float_format=lambda v: f"{v:.6g}" if np.isfinite(v) else "")
    paths = [out / f"{spec.name}.md", out / f"{spec.name}.tex", out / f"{spec.name}.csv"]
    for path, text in zip(paths, (markdown + "\n", latex, table_csv), strict=True):
        atomic_write_text(path, text)
    return TableOutputs(cells=cells, markdown=markdown, paths=paths)
