"""How the page judges a cell of ours against the paper's: close or far (within a tolerance),
not compared, or empty and why; and the counts of a table or a paper."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from clusterbench.tables.protocols import MIXED_STATUS

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
    "not-run": (
        "not run",
        "no records for this cell: run the table's experiments (a row under the spec's not_run: is "
        "left for other hardware, why in the table's CSV)",
    ),
}

# Empty cells of ours whose runs did run, shown with their status: (the status table's heading,
# why, the cell's title before its status). They ended without a value (``stopped``), or they
# finished under more than one setting that the cell's protocol would pool (``mixed``).
RUN_KINDS = {
    "stopped": ("Stopped", "its runs stopped"),
    "mixed": ("Mixed settings", "its runs differ in more than the seed, so they are not pooled"),
}
# Every kind of empty cell, in the status table's column order.
COUNTED_KINDS = [*EMPTY_KINDS, *RUN_KINDS]


@dataclass
class Tally:
    """Cell counts of a table or a paper: compared (both values, a judged metric), close, and
    the empty cells of ours by kind."""

    compared: int = 0
    close: int = 0
    kinds: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTED_KINDS, 0))

    def add(self, other: Tally) -> None:
        self.compared += other.compared
        self.close += other.close
        for kind, count in other.kinds.items():
            self.kinds[kind] += count


def cell_kind(cell: pd.Series, column_spec) -> str:
    """``value``, one of the EMPTY_KINDS, ``mixed`` (its runs differ in a setting the protocol
    would pool) or ``stopped`` (its runs ended without a value)."""
    if cell["status"] == "not available":
        return "not-available"
    if column_spec.get("method") is None:
        return "not-implemented"
    if cell["status"] in ("missing", "not run"):
        return "not-run"
    if is_number(cell["ours"]):
        return "value"
    return "mixed" if str(cell["status"]).startswith(MIXED_STATUS) else "stopped"


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
    return round(abs(delta), 9) <= allowed  # 0.62 − 0.6 is 0.020000000000000018


def tolerance_text(metric: str) -> str:
    if metric in RELATIVE_METRICS:
        return f"close: within {TOLERANCE:.0%} of the paper's value"
    return f"close: within {TOLERANCE} of the paper's value"


def is_number(value) -> bool:
    return isinstance(value, int | float) and not math.isnan(value)
