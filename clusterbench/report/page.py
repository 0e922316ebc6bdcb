"""The page: its head, the status table (a row per paper), the legend and the style, then a
section per paper."""

from __future__ import annotations

from pathlib import Path

from clusterbench.report.gathering import gather
from clusterbench.report.judging import COUNTED_KINDS, EMPTY_KINDS, RUN_KINDS, TOLERANCE, Tally
from clusterbench.report.papers import OTHER, Paper, status_share
from clusterbench.report.sections import DOCS, Page, esc, paper_section
from clusterbench.results import folder_words, profile_words
from clusterbench.tables import FEWER_MARK, FEWER_NOTE, PARTIAL_MARK, PARTIAL_NOTE, SEEDS_MARK, SEEDS_NOTE


def report_html(results_dir: Path, profile: str, out: Path) -> str:
    """The page's text, its links relative to ``out``'s folder."""
    page = Page(out.parent)
    gathered = gather(results_dir, profile)
    papers = [files.paper for files in gathered]
    empty_heads = "".join(f"<th>{label.capitalize()}</th>" for label, _ in EMPTY_KINDS.values())
    run_heads = "".join(f"<th>{heading}</th>" for heading, _ in RUN_KINDS.values())

    sections, rows = [], []
    for files in gathered:
        section, tally, specs = paper_section(page, files, results_dir, profile)
        sections.append(section)
        share = status_share(files.paper, results_dir / "tables" / profile)
        rows.append(status_row(page, files.paper, tally, files.tables, specs, share))

    # How this page is rebuilt: the commands name its profile and folder where not the defaults.
    words = profile_words(profile, "--profile ") + folder_words(results_dir, "--results-dir ")
    make_words = profile_words(profile, "PROFILE=") + folder_words(results_dir, "RESULTS=")
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
<p>Every paper table we reproduce, from the tables of profile <code>{esc(profile)}</code>
({page.link(results_dir / "tables" / profile, "tables folder")}), our value beside the paper's and
their difference; then the paper's figures and our benchmarks. Documentation:
{page.link(DOCS / "index.md", "docs/index.md")}. Rebuild with <code>make report{esc(make_words)}</code>
(<code>clusterbench report{esc(words)}</code>) after <code>clusterbench table --all{esc(words)}</code>.</p>
<nav>{" · ".join(f'<a href="#{paper.key}">{esc(paper.title)}</a>' for paper in papers)}</nav>
</header>
<main>
<h2 id="status">Status per paper</h2>
<table class="status">
<thead><tr><th>Paper</th><th>Tables</th>
<th>Cells within {TOLERANCE} of the paper (each once: {page.link(DOCS / "tables.md", "how")})</th>
{empty_heads}
{run_heads}<th>Docs</th></tr></thead>
<tbody>
{"".join(rows)}</tbody>
</table>
{LEGEND}
"""
    return head + "".join(sections) + "</main>\n</body>\n</html>\n"


def status_row(
    page: Page, paper: Paper, tally: Tally, built: list[str], specs: list[str], share: tuple[int, int]
) -> str:
    title = (
        f'<a href="#{paper.key}">{esc(paper.title)}</a> <span class="citation">{esc(paper.citation)}</span>'
    )
    docs = page.link(DOCS / paper.docs, paper.docs) if paper.docs else ""
    if not (built or specs) and paper is not OTHER:
        columns = 2 + len(COUNTED_KINDS) + 1  # tables, cells, each kind of empty cell, docs
        unimplemented = f'<td colspan="{columns}" class="unimplemented">not yet implemented</td>'
        return f'<tr><th scope="row">{title}</th>{unimplemented}</tr>\n'
    within, cells = share if paper.counted else (tally.close, tally.compared)
    shown = f"{within} of {cells} ({within / cells:.0%})" if cells else "—"
    tables = f"{len(built)} of {len(specs)}" if specs else str(len(built))
    counts = [tables, shown, *(tally.kinds[kind] for kind in COUNTED_KINDS)]
    cells = "".join(f'<td class="count">{count}</td>' for count in counts)
    return f'<tr><th scope="row">{title}</th>{cells}<td>{docs}</td></tr>\n'


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
its runs <span class="ours stopped">stopped</span> with (skipped, failed, timeout, no value), or
<span class="ours mixed">mixed …</span>: its runs differ in a hyperparameter the protocol would
pool with the seeds (an override run into the table's folder; give the column params).
<span class="paper none">—</span> in the paper's column: it gives no value. Bold: the best of a
row; ▲/▼: a relative gain as the paper prints it; {PARTIAL_MARK}: {esc(PARTIAL_NOTE)}
{FEWER_MARK}: {esc(FEWER_NOTE)}
{SEEDS_MARK}: {esc(SEEDS_NOTE)}</p>
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
.ours.mixed { color: #8a5a00; text-align: center; font-style: italic; }
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
