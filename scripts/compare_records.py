"""Which committed records a fresh rerun does not reproduce.

A record says what some code computed once; after the code changes, nothing re-checks it (the
config hash leaves code out, so that reruns resume across commits). This check reruns points
into a scratch folder and compares every record there with the committed record of the same
point (same path: profile, experiment, dataset, method, config hash):

    clusterbench run -m experiment=clam_table1 profile=paper dataset=zoo results_dir=/tmp/fresh
    python scripts/compare_records.py /tmp/fresh                # against ./results

One line per point that differs (its status, or each metric that moved by more than --tol:
old → new) or that the committed folder lacks; exit status 1 if any point differs. A differing
point is adopted by copying its record and labels file over the committed ones (or by rerunning
it with force=true).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from clusterbench.results import read_record


def differences(fresh: Path, committed: Path, tol: float) -> tuple[list[str], int, int]:
    """(lines for the points that differ or are missing, points compared, points that differ)."""
    lines, compared, differing = [], 0, 0
    for path in sorted((fresh / "runs").rglob("*.csv")):
        relative = path.relative_to(fresh)
        if not (committed / relative).exists():
            lines.append(f"{relative}: not in {committed}")
            continue
        new, old = read_record(path), read_record(committed / relative)
        compared += 1
        if new["status"].iloc[0] != old["status"].iloc[0]:
            changes = [f"status {old['status'].iloc[0]} → {new['status'].iloc[0]}"]
        else:
            old_values = old.set_index("metric")["value"]
            new_values = new.set_index("metric")["value"]
            changes = [
                f"{metric} {old_values[metric]:.6g} → {new_values[metric]:.6g}"
                for metric in old_values.index.intersection(new_values.index)
                if not np.isclose(old_values[metric], new_values[metric], rtol=0, atol=tol, equal_nan=True)
            ]
        if changes:
            differing += 1
            lines.append(f"{relative}: {', '.join(changes)}")
    return lines, compared, differing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("fresh", type=Path, help="results_dir of the rerun")
    parser.add_argument("--against", type=Path, default=Path("results"), help="committed results_dir")
    parser.add_argument("--tol", type=float, default=1e-9, help="largest absolute metric difference allowed")
    args = parser.parse_args(argv)
    lines, compared, differing = differences(args.fresh, args.against, args.tol)
    for line in lines:
        print(line)
    print(f"{compared} points compared, {differing} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
