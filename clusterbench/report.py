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
the paper's only) and *not run* (status ``missing``: no records). A cell whose runs all stopped
(skipped, failed, timed out, no value) shows its status.
"""

from __future__ import annotations

import csv
import html
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from clusterbench.catalog import CONF_DIR, options
from clusterbench.errors import UserError
from clusterbench.results import atomic_write_text, check_writable
from clusterbench.tables import (
    FEWER_MARK,
    FEWER_NOTE,
    PARTIAL_MARK,
    PARTIAL_NOTE,
    per_metric,
    render,
    table_spec,
)

REPO = CONF_DIR.parent
DOCS = REPO / "docs"
# A cell of ours is "close" to the paper's when |ours − paper| is at most this.
TOLERANCE = 0.02
# φ is a sum of squared distances in the thousands: 0.02 of it is rounding, so it is held to
# TOLERANCE as a share of the paper's value instead.
RELATIVE_METRICS = ("quantization_error",)
# Times come from other hardware and frameworks (CLAM Table 3's note): shown, never judged.
UNCOMPARED_METRICS = ("fit_seconds",)
# What an empty cell of ours is, and how the page says it.
EMPTY_KINDS = {
    "not-available": ("not available", "data not held by us (the spec's unavailable:)"),
    "not-implemented": ("not implemented", "a column of the paper's only: the method is not reimplemented"),
    "not-run": ("not run", "no records for this cell: run the table's experiments"),
}


@dataclass(frozen=True)
class Paper:
    """A paper of the benchmark and the files that belong to it, by name prefix."""

    key: str
    title: str
    citation: str
    prefixes: tuple[str, ...] = ()  # of its tables, figures and benchmarks
    docs: str | None = None  # its reproduction page under docs/
    # What its status share counts (:func:`status_share`): these tables' cells, each paper cell
    # once (a table repeating another's cells is left out), less those 0.02 cannot judge.
    counted: tuple[str, ...] = ()
    left_out: Callable[[dict], bool] = lambda cell: False

    def owns(self, name: str) -> bool:
        return any(name.startswith(prefix) for prefix in self.prefixes)


PAPERS = (
    Paper(
        "clam",
        "CLAM",
        "Saha et al., ICML 2023",
        ("clam_",),
        "reproduction/clam.md",
        # Table 2 repeats Table 9's NMI at two digits, Table 3 Table 1's SC (and times of other
        # hardware).
        counted=("clam_table1", "clam_table9", "clam_table8", "clam_table10"),
    ),
    Paper(
        "khatri_rao",
        "Khatri-Rao clustering",
        "Ciaperoni et al.",
        ("kr_",),
        "reproduction/khatri_rao.md",
        # The seeds and restart-odds tables restate Table 2's cells; the centred reseed is ours,
        # held against the paper's sum; k-means (h1·h2)'s ratios (Table 2) and IDEC's and DKM's
        # params (Table 3) are 1 on both sides by definition.
        counted=("kr_table2", "kr_table3"),
        left_out=lambda cell: (
            cell["column"] == "kr_sum_centred"
            or (cell["column"] == "kmeans" and cell["metric"] in ("inertia", "n_params"))
            or (cell["column"] in ("idec", "dkm") and cell["metric"] == "n_params")
        ),
    ),
    Paper(
        "kcprime",
        "k-means-C′",
        "Lücke & Forster",
        ("kcprime_", "kc_"),
        "reproduction/kcprime.md",
        # φ is in the thousands, where 0.02 is no tolerance (the tables show it within 2.4%).
        counted=("kcprime_tableS1",),
        left_out=lambda cell: cell["metric"] == "quantization_error",
    ),
    Paper("prcut", "PRCut", "Ghriss & Monteleoni", ("prcut_",)),
    Paper("sr_kmeans", "SR-K-means", "Jabi et al., TPAMI"),
)


def status_share(paper: Paper, tables: Path) -> tuple[int, int]:
    """(cells within :data:`TOLERANCE` of the paper, cells with both values) of the paper's
    counted tables in folder ``tables``: the README's status column (docs/tables.md says how)."""
    within = cells = 0
    for name in paper.counted:
        path = tables / f"{name}.csv"
        if not path.exists():
            continue
        for cell in pd.read_csv(path).to_dict("records"):
            if pd.notna(cell["ours"]) and pd.notna(cell["paper"]) and not paper.left_out(cell):
                cells += 1
                within += bool(abs(cell["delta"]) <= TOLERANCE)
    return within, cells


# Files no paper's prefix claims still go on the page.
OTHER = Paper("other", "Other results", "files that match no paper's prefix")


@dataclass
class Tally:
    """Cell counts of a table or a paper: compared (both values, a judged metric), close, and
    the empty cells of ours by kind."""

    compared: int = 0
    close: int = 0
    kinds: dict[str, int] = field(default_factory=lambda: dict.fromkeys([*EMPTY_KINDS, "stopped"], 0))

    def add(self, other: Tally) -> None:
        self.compared += other.compared
        self.close += other.close
        for kind, count in other.kinds.items():
            self.kinds[kind] += count


def write_report(results_dir: Path, profile: str = "paper", out: Path | None = None) -> Path:
    """Write the report of ``results_dir``'s ``profile`` tables to ``out`` (default
    ``<results_dir>/report/index.html``); returns where it went."""
    results_dir = Path(results_dir)
    out = Path(out) if out is not None else results_dir / "report" / "index.html"
    tables_dir = results_dir / "tables" / profile
    if not any(tables_dir.glob("*.csv")):
        raise UserError(
            f"no tables under {tables_dir}; build them first (clusterbench table --all --profile {profile}"
            " --results-dir ...) or name the folder and profile that hold them (--results-dir, --profile)"
        )
    check_writable(out.parent, "the report folder")
    atomic_write_text(out, report_html(results_dir, profile, out))
    return out


def report_html(results_dir: Path, profile: str, out: Path) -> str:
    """The page's text, its links relative to ``out``'s folder."""
    page = Page(out.parent)
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
    empty_heads = "".join(f"<th>{label.capitalize()}</th>" for label, _ in EMPTY_KINDS.values())

    sections, rows = [], []
    for paper in papers:
        owned = (lambda name, paper=paper: name in others) if paper is OTHER else paper.owns
        section, tally, built, specs = paper_section(
            page,
            paper,
            results_dir,
            profile,
            [name for name in tables if owned(name)],
            [path for path in figures if owned(path.stem)],
            [path for path in benchmarks if owned(path.stem)],
        )
        sections.append(section)
        share = status_share(paper, results_dir / "tables" / profile)
        rows.append(status_row(page, paper, tally, built, specs, share))

    head = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>clusterbench: our results beside the papers' (profile {esc(profile)})</title>
<style>{STYLE}</style>
</head>
<body>
<header>
<h1>clusterbench: our results beside the papers'</h1>
<p>Every paper table we reproduce, from the committed tables of profile <code>{esc(profile)}</code>
({page.link(results_dir / "tables" / profile, "tables folder")}), our value beside the paper's and
their difference; then the paper's figures and our benchmarks. Documentation:
{page.link(DOCS / "index.md", "docs/index.md")}. Rebuild with <code>make report</code>
(<code>clusterbench report</code>) after <code>clusterbench table --all</code>.</p>
<nav>{" · ".join(f'<a href="#{paper.key}">{esc(paper.title)}</a>' for paper in papers)}</nav>
</header>
<main>
<h2 id="status">Status per paper</h2>
<table class="status">
<thead><tr><th>Paper</th><th>Tables</th>
<th>Cells within {TOLERANCE} of the paper (each once: {page.link(DOCS / "tables.md", "how")})</th>
{empty_heads}
<th>Stopped</th><th>Docs</th></tr></thead>
<tbody>
{"".join(rows)}</tbody>
</table>
{LEGEND}
"""
    return head + "".join(sections) + "</main>\n</body>\n</html>\n"


class Page:
    """Links from the page's folder: relative, so the page and what it shows move together."""

    def __init__(self, folder: Path):
        self.folder = folder.resolve()

    def href(self, target: Path) -> str:
        return quote(Path(os.path.relpath(target.resolve(), self.folder)).as_posix())

    def link(self, target: Path, text: str) -> str:
        return f'<a href="{self.href(target)}">{esc(text)}</a>'


def paper_section(
    page: Page,
    paper: Paper,
    results_dir: Path,
    profile: str,
    tables: list[str],
    figures: list[Path],
    benchmarks: list[Path],
) -> tuple[str, Tally, list[str], list[str]]:
    """A paper's section, its cell tally, its built tables and its table specs."""
    specs = sorted((name for name in options("table") if paper.owns(name)), key=natural)
    docs = f" · {page.link(DOCS / paper.docs, f'docs/{paper.docs}')}" if paper.docs else ""
    parts = [f'<section class="paper" id="{paper.key}">\n<h2>{esc(paper.title)}</h2>\n']
    parts.append(f'<p class="citation">{esc(paper.citation)}{docs}</p>\n')
    tally = Tally()
    if not (tables or figures or benchmarks or specs):
        parts.append('<p class="unimplemented">Not yet implemented: no tables, figures or benchmarks.</p>\n')
        return "".join(parts) + "</section>\n", tally, [], specs
    unbuilt = [name for name in specs if name not in tables]
    if unbuilt:
        parts.append(
            f'<p class="warning">Not built for profile <code>{esc(profile)}</code>: '
            f"{', '.join(f'<code>{esc(name)}</code>' for name in unbuilt)} "
            f"(<code>clusterbench table NAME --profile {esc(profile)}</code>).</p>\n"
        )
    for name in tables:
        section, table_tally = table_section(page, results_dir / "tables" / profile, name)
        parts.append(section)
        tally.add(table_tally)
    if figures:
        parts.append(
            f'<h3 id="{paper.key}-figures">Figures</h3>\n'
            f'<p class="files">{page.link(DOCS / "figures.md", "docs/figures.md")}</p>\n'
            '<div class="figures">\n'
        )
        parts.extend(figure_html(page, path) for path in figures)
        parts.append("</div>\n")
    if benchmarks:
        parts.append(
            f'<h3 id="{paper.key}-benchmarks">Benchmarks</h3>\n'
            f'<p class="files">{page.link(DOCS / "benchmarks.md", "docs/benchmarks.md")}</p>\n'
        )
        parts.extend(benchmark_html(page, path) for path in benchmarks)
    return "".join(parts) + "</section>\n", tally, tables, specs


def status_row(
    page: Page, paper: Paper, tally: Tally, built: list[str], specs: list[str], share: tuple[int, int]
) -> str:
    title = (
        f'<a href="#{paper.key}">{esc(paper.title)}</a> <span class="citation">{esc(paper.citation)}</span>'
    )
    docs = page.link(DOCS / paper.docs, paper.docs) if paper.docs else ""
    if not (built or specs) and paper is not OTHER:
        unimplemented = '<td colspan="7" class="unimplemented">not yet implemented</td>'
        return f'<tr><th scope="row">{title}</th>{unimplemented}</tr>\n'
    within, cells = share if paper.counted else (tally.close, tally.compared)
    shown = f"{within} of {cells} ({within / cells:.0%})" if cells else "—"
    tables = f"{len(built)} of {len(specs)}" if specs else str(len(built))
    counts = [tables, shown, *(tally.kinds[kind] for kind in [*EMPTY_KINDS, "stopped"])]
    cells = "".join(f'<td class="count">{count}</td>' for count in counts)
    return f'<tr><th scope="row">{title}</th>{cells}<td>{docs}</td></tr>\n'


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


def table_section(page: Page, folder: Path, name: str) -> tuple[str, Tally]:
    """One table: its title, note and files, then a row per (dataset, metric) with ours, the
    paper's and the difference for every column."""
    csv_path = folder / f"{name}.csv"
    if name not in options("table"):
        return (
            f'<section class="table" id="{esc(name)}">\n<h3>{esc(name)}</h3>\n'
            f'<p class="warning">No spec conf/table/{esc(name)}.yaml: '
            f"{page.link(csv_path, 'CSV')} only.</p>\n</section>\n",
            Tally(),
        )
    spec = table_spec(name)
    cells, matched = read_cells(csv_path, spec)
    markdown = read_markdown(folder / f"{name}.md")
    frame = render(spec, cells, latex=False)
    # The committed Markdown's texts where it is this table (CSV values keep 6 digits, so a
    # 4-digit cell re-rendered from them can differ in its last digit); else the CSV's.
    if markdown and matched and markdown.header == list(frame.columns) and len(markdown.rows) == len(frame):
        texts = markdown.rows
    else:
        texts = frame.astype(str).to_numpy().tolist()
    title = markdown.title if markdown and markdown.title else spec.get("title", name)
    note = markdown.note if markdown and markdown.note else spec.get("note", "")
    files = [
        (CONF_DIR / "table" / f"{name}.yaml", f"conf/table/{name}.yaml"),
        (folder / f"{name}.md", "Markdown"),
        (csv_path, "CSV"),
        (folder / f"{name}.tex", "LaTeX"),
    ]
    links = " · ".join(page.link(path, label) for path, label in files if path.exists())
    parts = [f'<section class="table" id="{esc(name)}">\n<h3>{esc(title)}</h3>\n']
    parts.append(f'<p class="note">{inline(note)}</p>\n<p class="files">{links}</p>\n')
    if not matched:
        parts.append(
            f'<p class="warning">The CSV does not match conf/table/{esc(name)}.yaml; rebuild it '
            f"(<code>clusterbench table {esc(name)}</code>).</p>\n"
        )
    parts.append(table_head(spec))
    tally = Tally()
    labels = 2 if len(spec.metrics) > 1 else 1
    keys = list(cells.groupby(["dataset", "metric"], sort=False).groups)  # render's row order
    by_key = cells.set_index(["dataset", "metric", "column"])
    for index, row in enumerate(texts):
        pairs = list(zip(row[labels::2], row[labels + 1 :: 2], strict=True))  # (ours, paper) per column
        if index >= len(keys):  # a W/L row
            line = [f'<tr class="win-loss"><th scope="row" colspan="{labels}">{inline(row[0])}</th>']
            line += [
                f'<td class="ours">{inline(ours)}</td><td class="paper">{inline(paper)}</td><td></td>'
                for ours, paper in pairs
            ]
            parts.append("".join(line) + "</tr>\n")
            continue
        dataset, metric = keys[index]
        line = ["<tr>"]
        if labels == 1:
            line.append(f'<th scope="row">{inline(row[0])}</th>')
        else:  # the dataset once, over its metrics' rows
            if index == 0 or keys[index - 1][0] != dataset:
                span = sum(1 for key in keys if key[0] == dataset)
                line.append(f'<th scope="rowgroup" rowspan="{span}">{inline(row[0])}</th>')
            line.append(f'<th scope="row" class="metric">{inline(row[1])}</th>')
        for (column, column_spec), (ours, paper) in zip(spec.columns.items(), pairs, strict=True):
            cell = by_key.loc[(dataset, metric, column)]
            line.append(cell_html(spec, cell, column_spec, ours, paper, tally))
        parts.append("".join(line) + "</tr>\n")
    parts.append("</tbody></table></div>\n")
    share = (
        f"{tally.close} within ({tally.close / tally.compared:.0%})" if tally.compared else "none compared"
    )
    empty = ", ".join(f"{count} {kind.replace('-', ' ')}" for kind, count in tally.kinds.items() if count)
    parts.append(
        f'<p class="tally">{tally.compared} cells with both values compared, {share}'
        f"{f'; ours empty: {empty}' if empty else ''}.</p>\n</section>\n"
    )
    return "".join(parts), tally


def table_head(spec) -> str:
    """Two header rows: each column's label over its ours | paper | Δ."""
    metric = '<th rowspan="2">Metric</th>' if len(spec.metrics) > 1 else ""
    methods = "".join(
        f'<th colspan="3" class="method">{esc(column.label)}</th>' for column in spec.columns.values()
    )
    sides = '<th class="side">ours</th><th class="side">paper</th><th class="side">Δ</th>' * len(spec.columns)
    return (
        f'<div class="scroll"><table class="cells">\n<thead><tr><th rowspan="2">Dataset</th>{metric}{methods}'
        f"</tr>\n<tr>{sides}</tr></thead>\n<tbody>\n"
    )


def cell_html(spec, cell: pd.Series, column_spec, ours: str, paper: str, tally: Tally) -> str:
    """A cell's three table cells (ours, the paper's, Δ), counted into ``tally``; ``ours`` and
    ``paper`` are the table's texts of them."""
    where = f'data-cell="{esc(cell.name[0])}/{esc(cell.name[1])}/{esc(cell.name[2])}"'
    kind = cell_kind(cell, column_spec)
    if kind == "value":
        parts = [f'<td class="ours" {where}>{inline(ours)}</td>']
    elif kind == "stopped":
        status = esc(cell["status"])
        parts = [f'<td class="ours stopped" {where} title="its runs stopped: {status}">{status}</td>']
    else:
        text, why = EMPTY_KINDS[kind]
        parts = [f'<td class="ours {kind}" {where} title="{esc(why)}">{text}</td>']
    if kind != "value":
        tally.kinds[kind] += 1
    if paper == "—":
        parts.append('<td class="paper none" title="the paper gives no value">—</td>')
    else:
        parts.append(f'<td class="paper">{inline(paper)}</td>')
    metric = cell.name[1]
    judged = delta_class(cell, metric)
    if judged is None:
        return "".join(parts) + f'<td class="delta" {where}></td>'
    if judged != "uncompared":
        tally.compared += 1
        tally.close += judged == "close"
    deltas = [cell[key] for key in ("delta", "delta_best") if is_number(cell[key])]
    digits = per_metric(spec, "digits", metric, 3)
    if judged != "uncompared" and metric not in RELATIVE_METRICS:
        digits = max(digits, 3)  # a 2-digit "0.02" would hide which side of the tolerance it is
    shown = " / ".join(signed(delta, digits) for delta in deltas)
    exact = ", ".join(f"{delta:.4g}" for delta in deltas)
    why = "not compared: another machine's time" if judged == "uncompared" else tolerance_text(metric)
    parts.append(
        f'<td class="delta {judged}" {where} title="ours − paper = {exact}; {esc(why)}">{shown}</td>'
    )
    return "".join(parts)


def cell_kind(cell: pd.Series, column_spec) -> str:
    """``value``, one of the EMPTY_KINDS, or ``stopped`` (its runs ended without a value)."""
    if cell["status"] == "not available":
        return "not-available"
    if column_spec.get("method") is None:
        return "not-implemented"
    if cell["status"] == "missing":
        return "not-run"
    return "value" if is_number(cell["ours"]) else "stopped"


def delta_class(cell: pd.Series, metric: str) -> str | None:
    """``close`` or ``far`` for a cell with both values (far if its mean or its best is), or
    ``uncompared`` for a metric not judged; None when there is no difference to show."""
    deltas = [
        (cell[delta], cell[paper])
        for delta, paper in (("delta", "paper"), ("delta_best", "paper_best"))
        if is_number(cell[delta])
    ]
    if not deltas:
        return None
    if metric in UNCOMPARED_METRICS:
        return "uncompared"
    return "close" if all(is_close(delta, paper, metric) for delta, paper in deltas) else "far"


def is_close(delta: float, paper: float, metric: str) -> bool:
    allowed = TOLERANCE * abs(paper) if metric in RELATIVE_METRICS else TOLERANCE
    return round(abs(delta), 9) <= allowed  # 0.418 − 0.398 is 0.020000000000000018


def tolerance_text(metric: str) -> str:
    if metric in RELATIVE_METRICS:
        return f"close: within {TOLERANCE:.0%} of the paper's value"
    return f"close: within {TOLERANCE} of the paper's value"


def signed(value: float, digits: int) -> str:
    text = f"{value:+.{digits}f}"
    if float(text) == 0:
        return text[1:]  # no sign on a difference that rounds to zero
    return text.replace("-", "−")


def is_number(value) -> bool:
    return isinstance(value, int | float) and not math.isnan(value)


def figure_html(page: Page, path: Path) -> str:
    number = re.search(r"fig(\w+)$", path.stem)
    label = f"Fig. {number[1]}" if number else path.stem
    pdf = path.with_suffix(".pdf")
    files = page.link(path, path.name) + (f" · {page.link(pdf, 'PDF')}" if pdf.exists() else "")
    image = f'<a href="{page.href(path)}"><img src="{page.href(path)}" alt="{esc(path.stem)}"></a>'
    caption = f"<figcaption><strong>{esc(label)}</strong> {files}</figcaption>"
    return f'<figure id="{esc(path.stem)}">{image}{caption}</figure>\n'


def benchmark_html(page: Page, path: Path) -> str:
    with path.open(newline="", encoding="utf-8") as handle:
        header, *rows = list(csv.reader(handle))
    head = "".join(f"<th>{esc(name)}</th>" for name in header)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="{kind_of(text)}">{esc(number_text(text))}</td>' for text in row)
        + "</tr>\n"
        for row in rows
    )
    return (
        f'<div class="benchmark" id="{esc(path.stem)}"><h4>{esc(path.stem)}</h4>'
        f'<p class="files">{page.link(path, path.name)}</p>\n'
        f'<div class="scroll"><table class="bench"><thead><tr>{head}</tr></thead>\n'
        f"<tbody>\n{body}</tbody></table></div></div>\n"
    )


def number_text(text: str) -> str:
    """A benchmark value as the page shows it: integers as written, other numbers to 4 digits."""
    if re.fullmatch(r"-?\d+", text):
        return text
    try:
        return f"{float(text):.4g}"
    except ValueError:
        return text


def kind_of(text: str) -> str:
    return "number" if number_text(text) != text or re.fullmatch(r"-?\d+", text) else "text"


def natural(name: str) -> tuple:
    """A sort key that puts table2 before table10 (and fig9 before fig10)."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name))


def esc(text) -> str:
    return html.escape(str(text), quote=True)


def inline(text: str) -> str:
    """Markdown's inline marks of the tables (``**bold**``, ```code```) as HTML."""
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", esc(text))
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


LEGEND = f"""<div class="legend">
<p><strong>How to read the tables.</strong> Each method has three columns: ours, the paper's, and
Δ = ours − paper, coloured <span class="delta close">close</span> when |Δ| ≤ {TOLERANCE}
(φ, the quantization error: within {TOLERANCE:.0%} of the paper's value) and
<span class="delta far">far</span> otherwise; training times are
<span class="delta uncompared">not compared</span> (other hardware). A mean / best cell is close
when both are. An empty cell of ours says why:
<span class="ours not-available">{EMPTY_KINDS["not-available"][0]}</span> (data not held),
<span class="ours not-implemented">{EMPTY_KINDS["not-implemented"][0]}</span> (the paper's column
only), <span class="ours not-run">{EMPTY_KINDS["not-run"][0]}</span> (no records), or the status
its runs <span class="ours stopped">stopped</span> with (skipped, failed, timeout, no value).
<span class="paper none">—</span> in the paper's column: it gives no value. Bold: the best of a
row; ▲/▼: a relative gain as the paper prints it; {PARTIAL_MARK}: {esc(PARTIAL_NOTE)}
{FEWER_MARK}: {esc(FEWER_NOTE)}</p>
</div>
"""

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2430;
  margin: 0; background: #fafbfc; }
header, main { max-width: 1500px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 16px; }
h1 { font-size: 24px; margin: 8px 0; }
h2 { font-size: 20px; border-bottom: 2px solid #d5dae1; padding-bottom: 4px; margin-top: 36px; }
h3 { font-size: 16px; margin: 28px 0 4px; }
h4 { font-size: 14px; margin: 16px 0 2px; }
nav a { font-weight: 600; }
a { color: #0b57d0; }
code { font-size: 12px; background: #eef1f5; padding: 0 3px; border-radius: 3px; }
.citation { color: #57606a; font-weight: normal; }
.note { color: #3d4652; max-width: 1100px; margin: 2px 0; font-size: 13px; }
.files { font-size: 12px; margin: 2px 0 6px; }
.warning { background: #fff4d6; border-left: 4px solid #d19a00; padding: 4px 8px; }
.unimplemented { color: #57606a; font-style: italic; }
.legend { background: #fff; border: 1px solid #d5dae1; border-radius: 6px; padding: 4px 12px;
  margin: 16px 0; font-size: 13px; }
.legend span { padding: 0 4px; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; background: #fff; font-size: 12.5px; }
th, td { border: 1px solid #d5dae1; padding: 2px 6px; white-space: nowrap; }
thead th { background: #eef1f5; }
th.method { border-bottom: none; }
th.side { font-weight: 500; font-size: 11px; color: #57606a; }
tbody th { text-align: left; font-weight: 600; }
th.metric { font-weight: 500; }
td { text-align: right; font-variant-numeric: tabular-nums; }
td.paper { color: #3d4652; background: #f7f8fa; }
td.paper.none { color: #9aa3ad; text-align: center; }
td.delta { font-size: 11.5px; }
.delta.close { background: #dcf2dc; color: #1b5e20; }
.delta.far { background: #fbdcda; color: #a0211b; font-weight: 600; }
.delta.uncompared { background: #f0f1f3; color: #6b7480; }
.ours.not-available { color: #6b7480; font-style: italic; text-align: center;
  background: repeating-linear-gradient(135deg, #f3f4f6 0 6px, #e4e7eb 6px 8px); }
.ours.not-implemented { color: #5b3f8c; text-align: center; background: #eee8f7; }
.ours.not-run { color: #8a5a00; text-align: center; background: #fff4d6; outline: 1px dashed #d19a00;
  outline-offset: -3px; }
.ours.stopped { color: #a0211b; text-align: center; font-style: italic; }
tr.win-loss th, tr.win-loss td { background: #f7f8fa; font-style: italic; }
table.status td.count { text-align: right; }
table.status td { text-align: left; }
.tally { font-size: 12px; color: #57606a; margin: 4px 0; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 16px;
  align-items: start; }
figure { margin: 0; background: #fff; border: 1px solid #d5dae1; border-radius: 6px; padding: 8px; }
figure img { width: 100%; height: auto; display: block; }
figcaption { font-size: 12px; margin-top: 4px; }
table.bench td.text { text-align: left; }
"""
