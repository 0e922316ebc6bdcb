"""What the scripts under ``scripts/`` share with the command line: a user error ends them in one
line (exit 2, as ``clusterbench`` does), arguments are checked before any work, and what they
write lands whole (a temporary file renamed into place, as records are written).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from clusterbench.errors import UserError, first_line, is_invalid_parameter


def run_script(main: Callable[[], int | None]) -> NoReturn:
    """``sys.exit(main())``, but a user error (an unknown dataset, data not in the cache, an
    invalid hyperparameter, ``device=cuda`` without a GPU) prints one line and exits 2, and
    Ctrl-C exits 130 without a traceback. Anything else is a bug and keeps its traceback."""
    prog = Path(sys.argv[0]).name
    try:
        code = main()
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        if not (isinstance(exc, UserError) or is_invalid_parameter(exc)):
            raise
        print(f"{prog}: error: {first_line(exc)}", file=sys.stderr)
        sys.exit(2)
    sys.exit(code or 0)


def positive_int(text: str) -> int:
    """An argparse ``type``: an integer ≥ 1 (threads, repeats, restarts, epochs, sizes)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer ≥ 1, got {text!r}")
    return value


def output_folder(parser: argparse.ArgumentParser, folder: Path) -> Path:
    """``folder`` if it is or can be made a writable folder, checked before the work whose output
    it is to hold (a benchmark's minutes are not lost to a file in the way); else a usage error."""
    from clusterbench.results import check_writable

    try:
        check_writable(folder, "--out")
    except UserError as exc:
        parser.error(str(exc))
    return folder
