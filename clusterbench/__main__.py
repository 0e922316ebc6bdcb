"""``python -m clusterbench`` and the ``clusterbench`` script."""

import sys

from clusterbench.errors import INTERRUPTED


def main() -> int:
    """Run the command line. Its libraries (Hydra, pandas, scikit-learn) take a few tenths of a
    second to import; a Ctrl-C meanwhile ends it as quietly as one during a run, not in a
    traceback of the import. (The package's own import, before this runs, is kept light; the
    interpreter's start, before that, is beyond any guard.)"""
    try:
        from clusterbench.cli import main as cli_main
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
