"""The ``clusterbench`` command: ``run`` (Hydra); ``table``, ``report``, ``summary``, ``list``, ``data``
and ``records`` (argparse).

Hydra parses all of ``sys.argv`` and has no subcommands, so ``main`` dispatches on the first
word and hands ``run``'s remaining words to the Hydra app.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from tqdm.auto import tqdm

from clusterbench.catalog import (
    CONF_DIR,
    check_option,
    load_option,
    options,
    search_path_overrides,
    user_config_dirs,
)
from clusterbench.errors import INTERRUPTED, Terminated, UserError
from clusterbench.overrides import check_overrides, expand_globs, rewrite_overrides
from clusterbench.progress import line_interval

USAGE = """usage: clusterbench COMMAND [ARGS]

commands:
  run [-m] [KEY=VALUE ...]   fit, score and record; -m sweeps comma-separated values (Hydra multirun)
                             e.g. clusterbench run method=clam dataset=zoo method.beta=3
                                  clusterbench run -m experiment=clam_baselines profile=smoke
  table NAME ... | --all     aggregate records into a paper's table, ours beside the paper's
  report                     one HTML page of every table, figure and benchmark (results/report/)
  summary [EXPERIMENT ...]   runs counted and mean ± std of each metric per dataset x method
                             (default experiment: adhoc, the runs named by no experiment)
  list                       datasets, methods, metric suites, profiles, experiments, tables
  data where                 the folders searched for <name>.npz, in order
  data import DIR            copy <name>.npz files (arrays X, y) into the data cache
  data pull NAME [--force]   download a dataset from OpenML into the data cache (skips one held)
  data path                  print the data cache folder ($CLUSTERBENCH_DATA, else ~/.cache/clusterbench)
  data verify [NAME ...]     check held files against the configs and MANIFEST.csv; exit 1 if a
                             named one is held nowhere
  records upgrade [--results-dir DIR]
                             bring records written by earlier code to today's names and columns
"""


# An absolute path: the editable install imports this module through a finder, where Hydra would
# resolve a relative config_path as a package.
@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def hydra_job(cfg: DictConfig) -> None:
    from clusterbench.runner import job_settings, method_label, run_job, seeds_not_run, summary_line

    experiment = job_settings(cfg, HydraConfig.get().runtime.choices)

    # Hyperparameters set on the command line (a sweep of method.estimator.tol=1e-3,1e-4, say):
    # each job's line names them beside its grid point, or a sweep's lines read alike.
    given = []
    for word in HydraConfig.get().overrides.task:
        key = word.lstrip("+").partition("=")[0]
        if key.startswith("method.estimator."):
            given.append(key.removeprefix("method.estimator."))

    # A sweep counts its cached points in its closing summary instead of reprinting each.
    sweep = HydraConfig.get().mode == RunMode.MULTIRUN

    def report(outcome) -> None:
        if not (sweep and outcome.status == "cached"):
            tqdm.write(summary_line(cfg.dataset.name, method_label(cfg.method), cfg.seed, outcome, given))
            sys.stdout.flush()  # in order with the bars' lines when both go to one file

    try:
        if not run_job(cfg, experiment, report=report) and not sweep:
            raise UserError(seeds_not_run(cfg))
    except UserError as exc:
        print(f"clusterbench: error: {exc}", file=sys.stderr)
        sys.exit(2)


def command_run(words: list[str]) -> int:
    """Run Hydra's app, then say what its points did and where their records are (a sweep also
    gets mean ± std per dataset x method); exit 1 if any point is recorded as failed."""
    from clusterbench.results import JOURNAL_ENV, journal_folder, read_journal
    from clusterbench.summary import run_summary

    line_interval()  # a malformed CLUSTERBENCH_PROGRESS_SECONDS stops here, before any fit
    typed, words = words, rewrite_overrides(words)
    try:
        results_dir = check_overrides(words)
    except UserError as exc:  # an override named as it was typed (method.K=V), not as rewritten
        message = str(exc)
        for was, now in zip(typed, words, strict=True):
            if now != was:
                message = message.replace(now, was)
        exc.args = (message, *exc.args[1:])
        raise
    # Jobs inherit the variable in any launcher's processes (joblib, submitit). A results_dir only
    # the running app resolves (${hydra:…}) gets a fresh temp folder instead.
    journal = journal_folder(results_dir) if results_dir else Path(tempfile.mkdtemp(prefix="clusterbench-"))
    os.environ[JOURNAL_ENV] = str(journal)
    sys.argv = ["clusterbench run", *expand_globs(words), *search_path_overrides()]
    try:
        hydra_job()
    finally:
        del os.environ[JOURNAL_ENV]
        entries = read_journal(journal)
    inspected = ("-c", "-i", "--cfg", "--info")
    if any(word in inspected or word.startswith(("--cfg=", "--info=")) for word in words):
        return 0  # Hydra printed the config (or its info) and ran nothing: no summary after the YAML
    sweep = bool({"-m", "--multirun"} & set(words))
    print(run_summary(entries, table=sweep or len(entries) > 1))
    failed = [record for status, _, record in entries if status == "failed"]
    if failed:
        earlier = sum(was for status, was, _ in entries if status == "failed")
        again = f" ({earlier} recorded earlier; retry_failed=true fits them again)" if earlier else ""
        print(f"clusterbench: {len(failed)} grid point(s) failed{again}; see {failed[0]}", file=sys.stderr)
    return 1 if failed else 0


def command_table(words: list[str]) -> int:
    from clusterbench.tables import build_table, run_command

    parser = argparse.ArgumentParser(prog="clusterbench table")
    parser.add_argument(
        "names",
        nargs="*",
        help="table specs (conf/table/ and $CLUSTERBENCH_CONFIG_DIR; see `clusterbench list`)",
    )
    parser.add_argument("--all", action="store_true", help="every table whose records exist")
    parser.add_argument("--profile", default="paper", help="which profile's records (default: paper)")
    parser.add_argument("--results-dir", default="results", type=Path)
    # Accept Hydra-style profile=… and results_dir=… too, as `run` does.
    words = [re.sub(r"^(profile|results_dir)=", lambda m: f"--{m[1].replace('_', '-')}=", w) for w in words]
    args = parser.parse_args(words)
    check_profile(args.profile, args.results_dir)
    names = options("table") if args.all else args.names
    if not names:
        raise UserError("name a table (see `clusterbench list`) or pass --all")
    from clusterbench.results import check_writable

    check_writable(args.results_dir / "tables" / args.profile, "the tables folder")
    built, refused = 0, []
    for name in names:
        try:
            outputs = build_table(name, args.results_dir, args.profile, skip_empty=args.all)
        except UserError as exc:
            if not args.all:
                raise
            message = str(exc)  # --all builds the others, then says it
            refused.append(message if message.startswith(f"table {name}") else f"table {name}: {message}")
            continue
        if outputs is None:
            continue
        built += 1
        print(outputs.markdown)
        print(f"\nwrote {', '.join(str(p) for p in outputs.paths)}\n")
    if refused:
        others = f" ({len(refused) - 1} other table(s) refused too)" if len(refused) > 1 else ""
        raise UserError(f"{refused[0]}{others}; the {built} other table(s) with records were built")
    if args.all and not built:
        raise UserError(
            f"no table's experiments have records under {args.results_dir}/runs/{args.profile}; run one "
            f"({run_command('NAME', args.profile, args.results_dir)}), or name the folder and profile "
            "that hold them (--results-dir, --profile)"
        )
    return 0


def command_list(words: list[str]) -> int:
    import numpy as np

    from clusterbench.data import split_slice
    from clusterbench.data.sources import find_npz, npz_header, reads_cache

    if words:
        raise UserError("`clusterbench list` takes no arguments")
    # Where each dataset would be read from: the first data folder holding its file, in the order
    # `clusterbench data where` prints; a file held nowhere is fetched from OpenML on first use.
    print("datasets (read from: the first data folder holding the file, see `clusterbench data where`)")
    print(f"  {'name':<20} {'n':>7} {'d':>6} {'k':>4}  {'read from':<18}  source")
    for name in options("dataset"):
        spec = load_option("dataset", name)
        source = spec.source
        target = source._target_.rsplit(".", 1)[-1]
        file = None  # the .npz a run would read, where the config names no shape
        if target == "npz_file":  # read where it lies
            path = OmegaConf.to_container(source, resolve=False).get("path")  # ${..path}: set per run
            fixed = isinstance(path, str) and "${" not in path
            read_from, origin = ("its path", path) if fixed else ("dataset.path", "a file of yours")
            file = Path(path).expanduser() if fixed else None
        elif reads_cache(source):
            origin = f"OpenML {source.openml_id}" if source.get("openml_id") else "import only"
            held = find_npz(source.name)
            read_from = held[0].label if held else "not held"
            file = held[1] if held else None
        elif target == "sklearn_bundled":
            read_from, origin = "sklearn", f"sklearn {source.loader}"
        elif source._target_.startswith("clusterbench.data.generators."):
            read_from, origin = "generated", f"generator {target}"
        else:
            read_from, origin = "function", f"function {source._target_}"
        # a config's shape and k, else those of the file it reads (a user's own), else "?"
        header = npz_header(file) if file is not None and not spec.get("shape") else None
        n, d = spec.get("shape") or ((header.n, header.d) if header else ("?", "?"))
        rows = slice(None)
        # The file's own n_train wins over the config's, as the sources read it.
        n_train = (header.n_train if header else None) or source.get("n_train")
        if spec.get("split") in ("train", "test") and n_train and isinstance(n, int):
            rows = split_slice(spec.split, n_train)
            n = len(range(n)[rows])  # the rows a run reads (MNIST-test)
        k = spec.get("n_clusters") or (len(np.unique(header.y[rows])) if header else "?")
        print(f"  {name:<20} {n:>7} {d:>6} {k:>4}  {read_from:<18}  {origin}")
    for group in ("method", "metrics", "profile", "experiment", "table"):
        print(f"{group}: {', '.join(options(group))}")
    return 0


def command_data(words: list[str]) -> int:
    from clusterbench.data.cache import import_folder, verify_data
    from clusterbench.data.sources import cache_dir, cached, data_folders, find_npz, import_only, reads_cache

    parser = argparse.ArgumentParser(prog="clusterbench data")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("import", help="copy <name>.npz files into the cache").add_argument("folder", type=Path)
    pull = sub.add_parser("pull", help="download from OpenML into the cache, unless a data folder holds it")
    pull.add_argument("name")
    pull.add_argument("--force", action="store_true", help="download again even if a data folder holds it")
    sub.add_parser("path", help="print the cache folder, where import and pull write")
    sub.add_parser("where", help="print the data folders in the order they are searched")
    verify = sub.add_parser("verify", help="check held files against their configs (and MANIFEST.csv)")
    verify.add_argument("names", nargs="*", help="datasets to check (default: every one held)")
    args = parser.parse_args(words)
    cache = cache_dir()
    if args.action == "path":
        print(cache)
    elif args.action == "where":
        print("data folders, in search order (a dataset is read from the first holding <name>.npz):")
        for number, folder in enumerate(data_folders(), start=1):
            state = "exists" if folder.path.is_dir() else "missing"
            if folder.path == cache:
                state += "; data import and data pull write here"
            print(f"  {number}. {folder.label:<18}  {folder.path}  ({state})")
    elif args.action == "verify":
        return verify_data(args.names)
    elif args.action == "import":
        import_folder(args.folder, cache)
    else:
        source = load_option("dataset", args.name).source
        if not reads_cache(source):  # scikit-learn's, generated, a function: nothing to download
            raise UserError(
                f"data pull fetches OpenML datasets; '{args.name}' comes from {source._target_}: run it, "
                "and it names any file it needs"
            )
        if import_only(source):
            raise UserError(f"dataset '{args.name}' has no OpenML id; use `clusterbench data import`")
        held = find_npz(source.name)
        if held is not None and not args.force:
            folder, path = held
            print(
                f"{args.name} is already held ({folder.label}: {path}); skipped (--force downloads it again)"
            )
            return 0
        arguments = {k: v for k, v in OmegaConf.to_container(source).items() if k != "_target_"}
        data = cached(**arguments, refresh=True)
        print(f"wrote {cache / (source.name + '.npz')}: X {data.X.shape}, {len(set(data.y))} classes")
    return 0


def command_records(words: list[str]) -> int:
    from clusterbench.results import records_folder
    from clusterbench.upgrade import upgrade_records

    parser = argparse.ArgumentParser(prog="clusterbench records")
    sub = parser.add_subparsers(dest="action", required=True)
    upgrade = sub.add_parser("upgrade", help="bring records of earlier code to today's names and columns")
    upgrade.add_argument("--results-dir", default="results", type=Path)
    args = parser.parse_args(words)
    if not records_folder(args.results_dir).is_dir():
        raise UserError(
            f"no records under {args.results_dir}/runs; name the folder that holds them (--results-dir)"
        )
    lines = upgrade_records(args.results_dir)
    if not lines:
        print(f"every record under {args.results_dir}/runs is current: nothing to upgrade")
    for line in lines:
        print(line)
    if lines:
        left = sum(": left as it is: " in line for line in lines)
        print(
            f"{len(lines) - left} record(s) upgraded, {left} left as they are under {args.results_dir}/runs"
        )
    return 0


def command_summary(words: list[str]) -> int:
    from clusterbench.results import (
        atomic_write_text,
        folder_words,
        held_by,
        profiles_holding,
        records_folder,
    )
    from clusterbench.summary import format_summary, load_summary

    parser = argparse.ArgumentParser(prog="clusterbench summary")
    parser.add_argument("experiments", nargs="*", default=["adhoc"], help="experiments (default: adhoc)")
    parser.add_argument("--profile", default="paper", help="which profile's records (default: paper)")
    parser.add_argument("--results-dir", default="results", type=Path)
    parser.add_argument(
        "--metrics", help="comma-separated (default: those held among acc, nmi, ari, sc, ratio_cut)"
    )
    parser.add_argument("--by-params", action="store_true", help="name every hyperparameter of a row")
    parser.add_argument("--csv", type=Path, help="also write the summary, one row per line, to this file")
    # Accept Hydra-style profile=… and results_dir=… too, as `run` does.
    words = [re.sub(r"^(profile|results_dir)=", lambda m: f"--{m[1].replace('_', '-')}=", w) for w in words]
    args = parser.parse_args(words)
    check_profile(args.profile, args.results_dir)
    check_experiments_held(args.experiments, args.results_dir, args.profile)
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    if args.metrics is not None and not metrics:
        raise UserError(f"--metrics names no metric, got {args.metrics!r}; e.g. --metrics acc,nmi")
    if args.csv is not None:
        check_output_file(args.csv, "--csv", "summary.csv")
    summary = load_summary(args.results_dir, args.profile, args.experiments, metrics, args.by_params)
    print(format_summary(summary))
    # Records of a smoke run beside the paper's would otherwise go unmentioned (the default profile).
    others = profiles_holding(args.results_dir, args.experiments, besides=args.profile)
    if others:
        where = folder_words(args.results_dir, "--results-dir ")
        print(f"\n({held_by(others)} records of these experiments too: --profile {others[0]}{where})")
    # An experiment named beside others that hold records would otherwise be left out unmentioned.
    summarised = set(summary["experiment"])
    empty = [name for name in dict.fromkeys(args.experiments) if name not in summarised]
    if empty:
        print(f"\n(no records of {', '.join(empty)} under {records_folder(args.results_dir, args.profile)})")
    if args.csv is not None:
        atomic_write_text(args.csv, summary.to_csv(index=False))
        print(f"\nwrote {args.csv}")
    return 0


def check_profile(profile: str, results_dir: Path) -> None:
    """``profile`` is a profile config or names a records folder (a user's, whose config may be
    gone): else a typo, refused with the known profiles."""
    from clusterbench.results import records_folder

    if not records_folder(results_dir, profile).is_dir():
        check_option("profile", profile)


def check_experiments_held(experiments: list[str], results_dir: Path, profile: str) -> None:
    """Each of ``experiments`` is ``adhoc`` (the runs of no experiment), an experiment config or a
    records folder of any profile (a user's, whose config may be gone): else a typo, named with
    the closest of those."""
    import difflib

    from clusterbench.results import records_folder

    folder = records_folder(results_dir, profile)
    held = {p.name for p in records_folder(results_dir).glob("*/*") if p.is_dir()}
    known = sorted({"adhoc", *options("experiment"), *held})
    for experiment in experiments:
        if experiment not in known:
            close = difflib.get_close_matches(experiment, known, n=1)
            hint = f"did you mean {close[0]}?" if close else f"known: {', '.join(known)}"
            raise UserError(
                f"unknown experiment '{experiment}': no conf/experiment file and no records under "
                f"{folder / experiment}; {hint}"
            )


def check_output_file(path: Path, option: str, example: str) -> None:
    """``option``'s file can be written: not a folder, in a folder that is or can be made writable."""
    from clusterbench.results import check_writable

    if path.is_dir():
        raise UserError(f"{option} {path} is a folder; give a file's path, e.g. {path / example}")
    check_writable(path.parent, f"the {option} file's folder")


def command_report(words: list[str]) -> int:
    from clusterbench.report import write_report

    parser = argparse.ArgumentParser(prog="clusterbench report")
    parser.add_argument("--results-dir", default="results", type=Path)
    parser.add_argument("--profile", default="paper", help="which profile's tables (default: paper)")
    parser.add_argument("--out", type=Path, help="the page to write (default: RESULTS_DIR/report/index.html)")
    args = parser.parse_args(words)
    check_profile(args.profile, args.results_dir)
    if args.out is not None:
        check_output_file(args.out, "--out", "index.html")
    print(f"wrote {write_report(args.results_dir, args.profile, args.out)}")
    return 0


COMMANDS = {
    "run": command_run,
    "table": command_table,
    "report": command_report,
    "summary": command_summary,
    "list": command_list,
    "data": command_data,
    "records": command_records,
}


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    if not words or words[0] in {"-h", "--help", "help"}:
        print(USAGE)
        return 0
    command = COMMANDS.get(words[0])
    try:
        if command is None:
            raise UserError(f"unknown command '{words[0]}'; use one of {', '.join(COMMANDS)}")
        user_config_dirs()  # a bad $CLUSTERBENCH_CONFIG_DIR stops every command before it prints
        return command(words[1:])
    except UserError as exc:
        print(f"clusterbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(INTERRUPTED, file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    except BrokenPipeError:  # `clusterbench table … | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
