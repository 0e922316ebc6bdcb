"""What rerunning a finished sweep costs: the same `clusterbench run -m experiment=...` timed on
its own finished records with Hydra's basic sweeper (every job composed twice and launched, as
before hydra_plugins/clusterbench_sweeper) and with ours (jobs whose records are all there are
counted, not launched), in one run on the same records.

    python scripts/bench_resume.py                                   # kcprime_tableS1, smoke: ~5 min
    python scripts/bench_resume.py --experiment kr_table2 --profile smoke
The sweep is first run to the end into a scratch results folder (``--results``, kept: a second
call times the resume alone). Writes results/benchmarks/resume_cpu.csv (``--out`` folder).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from clusterbench.catalog import check_option
from clusterbench.results import atomic_write_text, load_records
from clusterbench.scripting import output_folder, run_script

REPO = Path(__file__).resolve().parents[1]
SWEEPERS = {"basic": "hydra/sweeper=basic", "clusterbench": "hydra/sweeper=clusterbench"}


def sweep(experiment: str, profile: str, results: Path, *words: str) -> float:
    """Seconds ``clusterbench run -m`` takes; a run that does not end in 0 or 1 (points failed) is
    an error (its last lines are shown)."""
    command = [sys.executable, "-m", "clusterbench", "run", "-m", f"experiment={experiment}"]
    command += [f"profile={profile}", f"results_dir={results}", *words]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=os.environ.copy())
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="kcprime_tableS1")
    parser.add_argument("--profile", default="smoke")
    parser.add_argument("--results", type=Path, help="scratch results folder (default: a temp folder)")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "benchmarks")
    args = parser.parse_args()
    check_option("experiment", args.experiment)
    check_option("profile", args.profile)
    out = output_folder(parser, args.out)
    results = args.results or Path(tempfile.mkdtemp(prefix="bench-resume-"))

    def recorded() -> int:
        return len(load_records(results, args.profile, [args.experiment]).drop_duplicates("config_hash"))

    before = recorded()
    first = sweep(args.experiment, args.profile, results)
    points = recorded()
    # A --results folder kept from an earlier call holds the records already: say so.
    label = "first run" if not before else f"first run ({before} points recorded before it: a resume)"
    rows = [{"sweeper": label, "seconds": first}]
    for name, word in SWEEPERS.items():
        seconds = sweep(args.experiment, args.profile, results, word)
        rows.append({"sweeper": f"resume, {name}", "seconds": seconds})
        print(f"{args.experiment} ({args.profile}, {points} points): resume with {name}: {seconds:.1f} s")
    frame = pd.DataFrame(rows).assign(experiment=args.experiment, profile=args.profile, points=points)
    frame["seconds"] = frame["seconds"].round(1)
    path = out / "resume_cpu.csv"
    atomic_write_text(path, frame.to_csv(index=False))
    print(frame.to_string(index=False))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    run_script(main)
