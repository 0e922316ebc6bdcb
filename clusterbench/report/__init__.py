"""Write the results report: one static HTML page with every paper's tables (ours beside the
paper's, each difference coloured), its figures, its benchmarks and a status per paper.

The page is built from what is committed under ``results/``: the tables ``tables/<profile>/*.csv``
(and their ``.md``, whose title, note and cell texts the page repeats), the figures
``figures/*.png`` and the benchmarks ``benchmarks/*.csv``; the table specs in ``conf/table``
say which column is the paper's only. It links every file by a path relative to the page
(images are referenced, not copied) and the docs as ``docs/<page>.md``. Inline CSS, no script,
no timestamp: it reads offline, and rebuilding it from the same results gives the same bytes.

An empty cell of ours is one of three kinds, each drawn differently: *not available* (a row whose
data we do not hold: the spec's ``unavailable``), *not implemented* (a column without ``method``:
the paper's only) and *not run* (no records: status ``missing``, or ``not run`` for a row the
spec's ``not_run`` leaves for other hardware, its reason in the CSV). A cell whose runs all stopped
(skipped, failed, timed out, no value) shows its status, as does one whose runs differ in a
setting its protocol would pool with the seeds (``mixed …``); the status table counts both.

The package, in the order the page is made: :mod:`.papers` says which files each paper owns and
counts its status share, :mod:`.gathering` finds the files and reads a table's CSV and Markdown,
:mod:`.judging` judges a cell against the paper's, :mod:`.sections` draws a paper's tables,
figures and benchmarks, and :mod:`.page` puts the page together.
"""

from __future__ import annotations

from pathlib import Path

from clusterbench.errors import UserError
from clusterbench.report.page import report_html
from clusterbench.results import (
    atomic_write_text,
    check_writable,
    elsewhere_or,
    folder_words,
    profile_words,
    profiles_with_tables,
)


def write_report(results_dir: Path, profile: str = "paper", out: Path | None = None) -> Path:
    """Write the report of ``results_dir``'s ``profile`` tables to ``out`` (default
    ``<results_dir>/report/index.html``); returns where it went."""
    results_dir = Path(results_dir)
    out = Path(out) if out is not None else results_dir / "report" / "index.html"
    tables_dir = results_dir / "tables" / profile
    if not any(tables_dir.glob("*.csv")):
        # The likeliest slip: `make tables PROFILE=smoke` (or `table --all --profile smoke`) read as
        # the paper's, the default; name the profiles whose tables are there.
        others = profiles_with_tables(results_dir, besides=profile)
        also = f"; make report PROFILE={others[0]}{folder_words(results_dir, 'RESULTS=')}" if others else ""
        remedy = elsewhere_or(
            others,
            f"build them first (clusterbench table --all{profile_words(profile, '--profile ')}"
            f"{folder_words(results_dir, '--results-dir ')}) or name the folder and profile that hold"
            " them (--results-dir, --profile)",
            also,
        )
        raise UserError(f"no tables under {tables_dir}; {remedy}")
    check_writable(out.parent, "the report folder")
    atomic_write_text(out, report_html(results_dir, profile, out))
    return out
