"""Progress bars that also work off a terminal.

On a terminal (or in a notebook) :func:`progress_bar` is tqdm's bar, as it always was. Off one
(``nohup``, a batch scheduler's job, ``make tables > log 2>&1``) tqdm would draw nothing, or a single
line of carriage returns; a fit of hours then says nothing until it ends. There the bar writes a
whole line, stamped with the time, every ``CLUSTERBENCH_PROGRESS_SECONDS`` (default 60; 0: never),
starting once the bar has run that long, so short fits stay silent:

    2026-11-27 01:20:03 pretraining:   6%|6         | 242/4000 [1:29:00<23:02:11, 22.1s/epoch]
"""

from __future__ import annotations

import os
import sys
from datetime import datetime

from tqdm import tqdm as plain_tqdm
from tqdm.auto import tqdm as auto_tqdm

from clusterbench.errors import UserError

INTERVAL_ENV = "CLUSTERBENCH_PROGRESS_SECONDS"
DEFAULT_INTERVAL = 60.0
# tqdm.auto's bar is a notebook widget under Jupyter (then its class derives from tqdm.notebook's).
IN_NOTEBOOK = any(cls.__module__ == "tqdm.notebook" for cls in auto_tqdm.__mro__)


def progress_bar(iterable=None, shown: bool = True, **options) -> plain_tqdm:
    """tqdm's bar over ``iterable`` with tqdm's ``options`` on a terminal or in a notebook;
    elsewhere a line every :func:`line_interval` seconds on standard error (none if 0).
    ``shown=False``: no bar (a loop of one item, say)."""
    if not shown:
        return plain_tqdm(iterable, disable=True, **options)
    if IN_NOTEBOOK or sys.stderr.isatty():
        return auto_tqdm(iterable, disable=None, **options)
    interval = line_interval()
    if interval == 0:
        return plain_tqdm(iterable, disable=True, **options)
    return plain_tqdm(
        iterable,
        file=_TimestampedLines(sys.stderr),
        mininterval=interval,
        maxinterval=interval,
        delay=interval,
        ascii=True,
        **options,
    )


def line_interval() -> float:
    """Seconds between the lines of a bar off a terminal (``CLUSTERBENCH_PROGRESS_SECONDS``)."""
    text = os.environ.get(INTERVAL_ENV, "").strip()
    if not text:
        return DEFAULT_INTERVAL
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also NaN
        example = f"{INTERVAL_ENV}=300"
        raise UserError(f"{INTERVAL_ENV}={text!r} is not a number of seconds ≥ 0; set e.g. {example}")
    return seconds


class _TimestampedLines:
    """A text stream for tqdm that turns each redraw into one line of its own.

    tqdm redraws a bar in place: a carriage return, the bar, no newline (and cursor moves for
    nested bars; blanks to clear a bar). Each write's printable text becomes a line with the
    time in front; writes with none (the clearing, the moves) are dropped, and so is a repeat
    of the last line (a bar kept at its close draws its last state again).
    """

    def __init__(self, stream) -> None:
        self.stream = stream
        self.last = ""

    def write(self, text: str) -> None:
        line = text.replace("\x1b[A", "").replace("\r", "").replace("\n", "").strip()
        if line and line != self.last:
            self.last = line
            self.stream.write(f"{datetime.now():%Y-%m-%d %H:%M:%S} {line}\n")
            self.stream.flush()

    def flush(self) -> None:
        self.stream.flush()
