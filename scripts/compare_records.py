"""Which committed records a fresh rerun does not reproduce.

A record says what some code computed once; after the code changes, nothing re-checks it (the
config hash leaves code out, so that reruns resume across commits). This check reruns points
into a scratch folder and compares every record there with the committed record of the same
point (same path: profile, experiment, dataset, method, config hash):

    clusterbench run -m experiment=clam_table1 profile=paper dataset=zoo results_dir=/tmp/fresh
    python scripts/compare_records.py /tmp/fresh                # against ./results

One line per point that differs (its status, or each metric that moved by more than --tol:
old → new) or that the committed folder lacks; exit status 1 if any point differs, or if no
point was compared at all (a wrong folder checks nothing, and must not pass). A differing
point is adopted by copying its record and labels file over the committed ones (or by rerunning
it with force=true).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clusterbench.results import record_differences, records_folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("fresh", type=Path, help="results_dir of the rerun")
    parser.add_argument("--against", type=Path, default=Path("results"), help="committed results_dir")
    parser.add_argument("--tol", type=float, default=1e-9, help="largest absolute metric difference allowed")
    args = parser.parse_args(argv)
    for folder, what in ((args.fresh, "fresh"), (args.against, "--against")):
        if not records_folder(folder).is_dir():
            parser.error(f"{what} '{folder}' holds no runs/ folder: name a results_dir")
    lines, compared, differing = record_differences(args.fresh, args.against, atol=args.tol)
    for line in lines:
        print(line)
    print(f"{compared} points compared, {differing} differ")
    if not compared:
        print(
            f"compare_records.py: no point of {args.fresh} is in {args.against}: nothing was checked",
            file=sys.stderr,
        )
        return 1
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
