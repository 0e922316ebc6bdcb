"""A table's cells as text: Markdown and LaTeX display frames, ours beside the paper's.

Here are the ▲/▼ relative gains, the W/L rows, the bold of a row's best value and the marks of
a partial cell (†), of one whose run found fewer clusters than it asked for (‡) and of one
that holds fewer seeds than its table (or column) names (§).
"""

from __future__ import annotations

import math

import pandas as pd
from omegaconf import OmegaConf

from clusterbench.tables.spec import per_metric

# Marks a cell chosen from only the runs that finished with a value (``n_ok`` of ``n_runs`` in the .csv).
PARTIAL_MARK = "†"
PARTIAL_NOTE = (
    "chosen from the runs that finished with a value; others failed, timed out, were skipped or have"
    " none (SC of a one-cluster labeling) (n_ok of n_runs in the .csv)."
)
PARTIAL_NOTE_LATEX = PARTIAL_NOTE.replace("_", r"\_")
# Marks a cell whose selected run's labeling has fewer clusters than it asked for.
FEWER_MARK = "‡"
FEWER_NOTE = "the selected run's labeling has fewer clusters than asked (n_found of n_clusters in the .csv)."
FEWER_NOTE_LATEX = FEWER_NOTE.replace("_", r"\_")
# Marks a cell whose finished runs hold fewer of the spec's ``seeds`` than it names.
SEEDS_MARK = "§"
SEEDS_NOTE = "from fewer seeds than its table (or column) names (n_seeds of n_seeds_named in the .csv)."
SEEDS_NOTE_LATEX = SEEDS_NOTE.replace("_", r"\_")


def relative_gain(a: float, b: float) -> float:
    """CLAM's gain of ``a`` over baseline ``b``: (a - b) / |b| × 100%. The paper writes / b, over
    baselines that are all positive; |b| keeps its reading (positive: a gain) over a negative SC."""
    return (a - b) / abs(b) * 100.0 if b and not (math.isnan(a) or math.isnan(b)) else math.nan


def cell_gain(spec, side: str, values: pd.Series, dataset: str, metric: str, column: str) -> float:
    """The ▲/▼ gain a cell prints: on a ``gain.columns`` column (default: all but the reference),
    the reference's gain over it. Ours from our unrounded values; the paper's as it prints it
    (``paper_gain``) where the spec gives that, since recomputing it from rounded cells can be a
    point off."""
    reference = OmegaConf.select(spec, "gain.reference")
    if reference is None or column == reference:
        return math.nan
    if column not in (OmegaConf.select(spec, "gain.columns") or spec.columns):
        return math.nan
    if side == "paper":
        printed = OmegaConf.select(spec, f"paper_gain.{metric}.{dataset}.{column}", default="not given")
        if printed != "not given":  # null: the paper prints no gain there
            return math.nan if printed is None else float(printed)
    return relative_gain(values[reference], values[column])


def metric_label(spec, metric: str) -> str:
    return (spec.get("metric_labels") or {}).get(metric, metric.upper())


def win_loss(spec, cells: pd.DataFrame, value: str) -> dict[str, dict[str, str]]:
    """Per W/L row (a column key) and metric: 'wins/losses' of that column against each other column.

    Values are compared as the table prints them (rounded to ``digits``), in the direction the
    metric's ``better`` names; ties count neither.
    """
    rows = {}
    for reference in spec.get("win_loss", []):
        for metric in spec.metrics:
            digits = per_metric(spec, "digits", metric, 3)
            sign = -1 if per_metric(spec, "better", metric, "max") == "min" else 1
            frame = cells[cells["metric"] == metric].pivot(index="dataset", columns="column", values=value)
            line = {}
            for column in spec.columns:
                if column == reference:
                    continue
                a, b = sign * as_printed(frame[reference], digits), sign * as_printed(frame[column], digits)
                both = a.notna() & b.notna()
                if both.any():
                    line[column] = f"{int((a[both] > b[both]).sum())}/{int((a[both] < b[both]).sum())}"
            rows[(reference, metric)] = line
    return rows


def _format(
    value: float,
    digits: int,
    gain: float,
    bold: bool,
    latex: bool,
    std: float = math.nan,
    best: float = math.nan,
    partial: bool = False,
    fewer: bool = False,
    seeds_short: bool = False,
) -> str:
    if math.isnan(value):
        return ""
    text = f"{value:.{digits}f}"
    if not math.isnan(std):
        text += f" ± {std:.{digits}f}"
    if not math.isnan(best):
        text += f" / {best:.{digits}f}"
    if bold:
        text = f"\\textbf{{{text}}}" if latex else f"**{text}**"
    if partial:
        text += "$^\\dagger$" if latex else PARTIAL_MARK
    if fewer:
        text += "$^\\ddagger$" if latex else FEWER_MARK
    if seeds_short:
        text += "$^\\S$" if latex else SEEDS_MARK
    if not math.isnan(gain):
        arrows = ("$\\blacktriangle$", "$\\blacktriangledown$", "\\%") if latex else ("▲", "▼", "%")
        text += f" {arrows[0] if gain >= 0 else arrows[1]}{abs(gain):.0f}{arrows[2]}"
    return text


def sides(spec) -> tuple[str, ...]:
    """The values each column prints: ours beside the paper's, or ours alone in a table of the
    user's that gives no paper values."""
    return ("ours", "paper") if spec.get("paper") else ("ours",)


def render(spec, cells: pd.DataFrame, latex: bool) -> pd.DataFrame:
    """The display frame: a row per dataset (x metric), 'ours' beside 'paper' for every column
    (only ours, labelled plainly, in a table of the user's that gives no paper values).

    Protocol ``mean_best`` prints each cell as "mean / best", ``best_of`` as "mean ± std [P reach]";
    bold marks the best mean.
    """
    multi_metric = len(spec.metrics) > 1
    shown = sides(spec)
    lines = []
    for (dataset, metric), group in cells.groupby(["dataset", "metric"], sort=False):
        cell = group.set_index("column")
        digits = per_metric(spec, "digits", metric, 3)
        line = {"Dataset": spec.rows[dataset]} | (
            {"Metric": metric_label(spec, metric)} if multi_metric else {}
        )
        for side in shown:
            values = cell[side]
            best = as_printed(_best(values, per_metric(spec, "better", metric, "max")), digits)
            for column in spec.columns:
                std = cell.loc[column, "ours_std"] if side == "ours" else math.nan
                text = _format(
                    values[column],
                    digits,
                    cell_gain(spec, side, values, dataset, metric, column),
                    as_printed(values[column], digits) == best,
                    latex,
                    std,
                    cell.loc[column, f"{side}_best"],
                    side == "ours" and is_partial(cell.loc[column]),
                    side == "ours" and found_fewer(cell.loc[column]),
                    side == "ours" and fewer_seeds(cell.loc[column]),
                )
                reach = cell.loc[column, "reach"] if side == "ours" and "reach" in cell else math.nan
                if text and not math.isnan(reach):
                    text += f" [P {reach:.2f}]"
                if not text and side == "ours" and cell.loc[column, "status"] != "missing":
                    text = cell.loc[column, "status"]
                line[(column, side)] = text or "—"
        lines.append(line)
    for (reference_column, metric), results in _wl_rows(spec, cells).items():
        label = f"{spec.columns[reference_column].label} W/L"
        line = {"Dataset": label + (f" ({metric_label(spec, metric)})" if multi_metric else "")}
        line |= {"Metric": ""} if multi_metric else {}
        for side in shown:
            line |= {(column, side): results[side].get(column, "—") for column in spec.columns}
        lines.append(line)
    frame = pd.DataFrame(lines)
    # Interleave so that each of our columns stands beside the paper's.
    ordered = [key for key in frame.columns if not isinstance(key, tuple)]
    ordered += [(column, side) for column in spec.columns for side in shown]
    frame = frame[ordered]
    frame.columns = [
        key
        if not isinstance(key, tuple)
        else spec.columns[key[0]].label + (f" ({key[1]})" if len(shown) > 1 else "")
        for key in ordered
    ]
    return frame


def is_partial(cell: pd.Series) -> bool:
    """Whether a cell with a value was chosen from only some of its runs: the others failed,
    timed out, were skipped or hold no value of its metric, so a fuller run might change it."""
    return cell["status"] == "ok" and not math.isnan(cell["ours"]) and cell["n_ok"] < cell["n_runs"]


def found_fewer(cell: pd.Series) -> bool:
    """Whether a cell's selected run found fewer clusters than it asked for."""
    return bool(cell.get("n_found", math.nan) < cell.get("n_clusters", math.nan))


def fewer_seeds(cell: pd.Series) -> bool:
    """Whether a cell with a value was computed from fewer of the ``seeds`` its table or column
    names (a mean over one seed in a table of two): its ± is not the others'. A cell where none
    are named, or of a CSV older than the count, is never marked."""
    if cell["status"] != "ok" or math.isnan(cell["ours"]):
        return False
    return bool(cell.get("n_seeds", math.nan) < cell.get("n_seeds_named", math.nan))


def as_printed(values, digits: int):
    """A value (or a Series of them) as the table prints it: Python's formatting, which rounds a
    float's exact binary value (0.2875 is 0.28749…, printed 0.287), where numpy's round gives
    0.288. Bold and W/L compare these, so a cell printed lower never ties or wins."""
    if isinstance(values, pd.Series):
        return values.map(lambda value: as_printed(value, digits))
    return values if math.isnan(values) else float(f"{values:.{digits}f}")


def _best(values: pd.Series, better: str) -> float:
    if values.isna().all():
        return math.nan
    return values.min() if better == "min" else values.max()


def _wl_rows(spec, cells: pd.DataFrame) -> dict:
    """Ours and the paper's W/L rows; the paper's as it prints them (``paper_win_loss``) where the
    spec gives them, which need not follow from its printed cells."""
    ours, paper = win_loss(spec, cells, "ours"), win_loss(spec, cells, "paper")
    for reference, metric in paper:
        printed = OmegaConf.select(spec, f"paper_win_loss.{metric}.{reference}")
        if printed is not None:
            paper[(reference, metric)] = {column: str(text) for column, text in printed.items()}
    return {key: {"ours": ours[key], "paper": paper[key]} for key in ours}
