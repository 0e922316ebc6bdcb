"""The page's parts in HTML: a paper's section, each table in it (ours, the paper's and Δ for
every cell), its figures and its benchmarks; links relative to the page."""

from __future__ import annotations

import csv
import html
import math
import os
import re
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from clusterbench.catalog import CONF_DIR, option_file, option_label, options
from clusterbench.report.gathering import PaperFiles, natural, read_cells, read_markdown
from clusterbench.report.judging import (
    EMPTY_KINDS,
    RELATIVE_METRICS,
    RUN_KINDS,
    Tally,
    cell_kind,
    delta_class,
    is_number,
    tolerance_text,
)
from clusterbench.results import folder_words, profile_words
from clusterbench.tables import per_metric, render, sides, table_spec

DOCS = CONF_DIR.parent / "docs"


class Page:
    """Links from the page's folder: relative, so the page and what it shows move together."""

    def __init__(self, folder: Path):
        self.folder = folder.resolve()

    def href(self, target: Path) -> str:
        return quote(Path(os.path.relpath(target.resolve(), self.folder)).as_posix())

    def link(self, target: Path, text: str) -> str:
        return f'<a href="{self.href(target)}">{esc(text)}</a>'


def paper_section(
    page: Page, files: PaperFiles, results_dir: Path, profile: str
) -> tuple[str, Tally, list[str]]:
    """A paper's section, its cell tally and its table specs."""
    paper, tables, figures, benchmarks = files.paper, files.tables, files.figures, files.benchmarks
    specs = sorted((name for name in options("table") if paper.owns(name)), key=natural)
    docs = f" · {page.link(DOCS / paper.docs, f'docs/{paper.docs}')}" if paper.docs else ""
    parts = [f'<section class="paper" id="{paper.key}">\n<h2>{esc(paper.title)}</h2>\n']
    parts.append(f'<p class="citation">{esc(paper.citation)}{docs}</p>\n')
    tally = Tally()
    if not (tables or figures or benchmarks or specs):
        parts.append('<p class="unimplemented">Not yet implemented: no tables, figures or benchmarks.</p>\n')
        return "".join(parts) + "</section>\n", tally, specs
    unbuilt = [name for name in specs if name not in tables]
    if unbuilt:
        words = profile_words(profile, "--profile ") + folder_words(results_dir, "--results-dir ")
        parts.append(
            f'<p class="warning">Not built for profile <code>{esc(profile)}</code>: '
            f"{', '.join(f'<code>{esc(name)}</code>' for name in unbuilt)} "
            f"(<code>clusterbench table NAME{esc(words)}</code>).</p>\n"
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
    return "".join(parts) + "</section>\n", tally, specs


def table_section(page: Page, folder: Path, name: str) -> tuple[str, Tally]:
    """One table: its title, note and files, then a row per (dataset, metric) with ours, the
    paper's and the difference for every column."""
    csv_path = folder / f"{name}.csv"
    if name not in options("table"):
        return (
            f'<section class="table" id="{esc(name)}">\n<h3>{esc(name)}</h3>\n'
            f'<p class="warning">No spec table/{esc(name)}.yaml in conf/ or $CLUSTERBENCH_CONFIG_DIR: '
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
        (option_file("table", name), option_label("table", name)),
        (folder / f"{name}.md", "Markdown"),
        (csv_path, "CSV"),
        (folder / f"{name}.tex", "LaTeX"),
    ]
    links = " · ".join(page.link(path, label) for path, label in files if path.exists())
    parts = [f'<section class="table" id="{esc(name)}">\n<h3>{esc(title)}</h3>\n']
    parts.append(f'<p class="note">{inline(note)}</p>\n<p class="files">{links}</p>\n')
    if not matched:
        parts.append(
            f'<p class="warning">The CSV does not match {esc(option_label("table", name))}; rebuild it '
            f"(<code>clusterbench table {esc(name)}</code>).</p>\n"
        )
    parts.append(table_head(spec))
    tally = Tally()
    labels = 2 if len(spec.metrics) > 1 else 1
    keys = list(cells.groupby(["dataset", "metric"], sort=False).groups)  # render's row order
    by_key = cells.set_index(["dataset", "metric", "column"])
    for index, row in enumerate(texts):
        if "paper" in sides(spec):
            pairs = list(zip(row[labels::2], row[labels + 1 :: 2], strict=True))  # (ours, paper) per column
        else:  # a table of the user's without paper values renders ours alone
            pairs = [(ours, "—") for ours in row[labels:]]
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
    heads = '<th class="side">ours</th><th class="side">paper</th><th class="side">Δ</th>' * len(spec.columns)
    return (
        f'<div class="scroll"><table class="cells">\n<thead><tr><th rowspan="2">Dataset</th>{metric}{methods}'
        f"</tr>\n<tr>{heads}</tr></thead>\n<tbody>\n"
    )


def cell_html(spec, cell: pd.Series, column_spec, ours: str, paper: str, tally: Tally) -> str:
    """A cell's three table cells (ours, the paper's, Δ), counted into ``tally``; ``ours`` and
    ``paper`` are the table's texts of them."""
    where = f'data-cell="{esc(cell.name[0])}/{esc(cell.name[1])}/{esc(cell.name[2])}"'
    kind = cell_kind(cell, column_spec)
    if kind == "value":
        parts = [f'<td class="ours" {where}>{inline(ours)}</td>']
    elif kind in RUN_KINDS:
        status, why = esc(cell["status"]), RUN_KINDS[kind][1]
        parts = [f'<td class="ours {kind}" {where} title="{why}: {status}">{status}</td>']
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


def signed(value: float, digits: int) -> str:
    text = f"{value:+.{digits}f}"
    if float(text) == 0:
        return text[1:]  # no sign on a difference that rounds to zero
    return text.replace("-", "−")


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
    """A benchmark cell's class: ``number`` (set right) for a finite number as written (``0.417``,
    ``221.387``, ``70000``), else ``text`` (dates, names, ``nan``)."""
    try:
        return "number" if math.isfinite(float(text)) and text == text.strip() else "text"
    except ValueError:
        return "text"


def esc(text) -> str:
    return html.escape(str(text), quote=True)


def inline(text: str) -> str:
    """Markdown's inline marks of the tables (``**bold**``, ```code```) as HTML."""
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", esc(text))
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
