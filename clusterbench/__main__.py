"""``python -m clusterbench`` and the ``clusterbench`` script."""

import signal
import sys

from clusterbench.errors import INTERRUPTED, Terminated


def _terminate(signum, frame):
    raise Terminated


def main() -> int:
    """Run the command line. Its libraries (Hydra, pandas, scikit-learn) take a few tenths of a
    second to import; a Ctrl-C meanwhile ends it as quietly as one during a run, not in a
    traceback of the import. (The package's own import, before this runs, is kept light; the
    interpreter's start, before that, is beyond any guard.) A SIGTERM is handled as a Ctrl-C
    (exit 143): without that, a killed run left its notes folder behind and said nothing."""
    signal.signal(signal.SIGTERM, _terminate)
    try:
        from clusterbench.cli import main as cli_main
    except KeyboardInterrupt as exc:
        print(INTERRUPTED, file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
