"""The ``clusterbench`` command: ``run`` (Hydra), ``table``, ``list`` and ``data`` (argparse).

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
from hydra.utils import to_absolute_path
from omegaconf import DictConfig, OmegaConf, open_dict
from tqdm.auto import tqdm

from clusterbench.catalog import CONF_DIR, load_option, options
from clusterbench.errors import INTERRUPTED, UserError
from clusterbench.overrides import check_overrides, open_estimator_overrides

USAGE = """usage: clusterbench COMMAND [ARGS]

commands:
  run [-m] [KEY=VALUE ...]   fit, score and record; -m sweeps comma-separated values (Hydra multirun)
                             e.g. clusterbench run method=kmeans dataset=zoo
                                  clusterbench run -m experiment=clam_baselines profile=smoke
  table NAME ... | --all     aggregate records into a paper's table, ours beside the paper's
  list                       datasets, methods, metric suites, profiles, experiments, tables
  data import DIR            copy <name>.npz files (arrays X, y) into the data cache
  data pull NAME             download a dataset from OpenML into the data cache
  data path                  print the data cache folder ($CLUSTERBENCH_DATA)
  data verify                check cached files against the configs and MANIFEST.csv
"""


# An absolute path: the editable install imports this module through a finder, where Hydra would
# resolve a relative config_path as a package.
@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def hydra_job(cfg: DictConfig) -> None:
    from clusterbench.runner import method_label, run_job, summary_line

    choices = HydraConfig.get().runtime.choices
    experiment = choices.get("experiment")
    experiment = experiment if experiment not in (None, "null") else "adhoc"
    with open_dict(cfg):
        cfg.results_dir = to_absolute_path(cfg.results_dir)
        # A dataset or method file may leave out its name (its file's) and a method its variant.
        for group in ("dataset", "method"):
            cfg[group].setdefault("name", choices[group])
        cfg.method.setdefault("variant", "default")

    # Hyperparameters set on the command line (a sweep of method.estimator.tol=1e-3,1e-4, say):
    # each job's line names them beside its grid point, or a sweep's lines read alike.
    given = []
    for word in HydraConfig.get().overrides.task:
        key = word.lstrip("+").partition("=")[0]
        if key.startswith("method.estimator."):
            given.append(key.removeprefix("method.estimator."))

    def report(outcome) -> None:
        tqdm.write(summary_line(cfg.dataset.name, method_label(cfg.method), cfg.seed, outcome, given))

    try:
        run_job(cfg, experiment, report=report)
    except UserError as exc:
        print(f"clusterbench: error: {exc}", file=sys.stderr)
        sys.exit(2)


def command_run(words: list[str]) -> int:
    """Run Hydra's app; exit 1 if any grid point of this run was recorded as failed."""
    from clusterbench.results import FAILURES_ENV, collect_failures, failure_folder

    results_dir = check_overrides(open_estimator_overrides(words))
    # Jobs inherit the variable in any launcher's processes (joblib, submitit). A results_dir only
    # the running app resolves (${hydra:…}) gets a fresh temp folder instead.
    markers = failure_folder(results_dir) if results_dir else Path(tempfile.mkdtemp(prefix="clusterbench-"))
    os.environ[FAILURES_ENV] = str(markers)
    sys.argv = ["clusterbench run", *open_estimator_overrides(words)]
    try:
        hydra_job()
    finally:
        del os.environ[FAILURES_ENV]
        failed = collect_failures(markers)
    if failed:
        print(f"clusterbench: {len(failed)} grid point(s) failed; see {failed[0]}", file=sys.stderr)
    return 1 if failed else 0


def command_table(words: list[str]) -> int:
    from clusterbench.tables import build_table

    parser = argparse.ArgumentParser(prog="clusterbench table")
    parser.add_argument("names", nargs="*", help="table specs in conf/table (see `clusterbench list`)")
    parser.add_argument("--all", action="store_true", help="every table whose records exist")
    parser.add_argument("--profile", default="paper", help="which profile's records (default: paper)")
    parser.add_argument("--results-dir", default="results", type=Path)
    # Accept Hydra-style profile=… and results_dir=… too, as `run` does.
    words = [re.sub(r"^(profile|results_dir)=", lambda m: f"--{m[1].replace('_', '-')}=", w) for w in words]
    args = parser.parse_args(words)
    names = options("table") if args.all else args.names
    if not names:
        raise UserError("name a table (see `clusterbench list`) or pass --all")
    from clusterbench.results import check_writable

    check_writable(args.results_dir / "tables" / args.profile, "the tables folder")
    built = 0
    for name in names:
        outputs = build_table(name, args.results_dir, args.profile, skip_empty=args.all)
        if outputs is None:
            continue
        built += 1
        print(outputs.markdown)
        print(f"\nwrote {', '.join(str(p) for p in outputs.paths)}\n")
    if args.all and not built:
        raise UserError(
            f"no records under {args.results_dir}/runs/{args.profile}; run an experiment first, or name "
            "the folder and profile that hold them (--results-dir, --profile)"
        )
    return 0


def command_list(words: list[str]) -> int:
    from clusterbench.data import cache_dir
    from clusterbench.data.sources import import_only, reads_cache

    if words:
        raise UserError("`clusterbench list` takes no arguments")
    cache = cache_dir()
    print(f"datasets (cache: {cache})")
    print(f"  {'name':<20} {'n':>7} {'d':>6} {'k':>4}  {'cached':<6}  source")
    for name in options("dataset"):
        spec = load_option("dataset", name)
        n, d = spec.get("shape", ["?", "?"])
        source = spec.source
        target = source._target_.rsplit(".", 1)[-1]
        if reads_cache(source):
            origin = "import only" if import_only(source) else f"OpenML {source.openml_id}"
            cached = "yes" if (cache / f"{source.name}.npz").exists() else "no"
        else:
            cached = "-"
            if target == "sklearn_bundled":
                origin = f"sklearn {source.loader}"
            elif source._target_.startswith("clusterbench.data.generators."):
                origin = f"generator {target}"
            else:
                origin = f"function {source._target_}"
        print(f"  {name:<20} {n:>7} {d:>6} {spec.get('n_clusters', '?'):>4}  {cached:<6}  {origin}")
    for group in ("method", "metrics", "profile", "experiment", "table"):
        print(f"{group}: {', '.join(options(group))}")
    return 0


def command_data(words: list[str]) -> int:
    from clusterbench.data import cache_dir
    from clusterbench.data.cache import import_folder, verify_cache
    from clusterbench.data.sources import cached, import_only, reads_cache

    parser = argparse.ArgumentParser(prog="clusterbench data")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("import", help="copy <name>.npz files into the cache").add_argument("folder", type=Path)
    sub.add_parser("pull", help="download from OpenML into the cache").add_argument("name")
    sub.add_parser("path", help="print the cache folder")
    sub.add_parser("verify", help="check cached files against their configs (and MANIFEST.csv)")
    args = parser.parse_args(words)
    cache = cache_dir()
    if args.action == "path":
        print(cache)
    elif args.action == "verify":
        return verify_cache(cache)
    elif args.action == "import":
        import_folder(args.folder, cache)
    else:
        source = load_option("dataset", args.name).source
        if not reads_cache(source) or import_only(source):
            raise UserError(f"dataset '{args.name}' has no OpenML id; use `clusterbench data import`")
        arguments = {k: v for k, v in OmegaConf.to_container(source).items() if k != "_target_"}
        data = cached(**arguments, refresh=True)
        print(f"wrote {cache / (source.name + '.npz')}: X {data.X.shape}, {len(set(data.y))} classes")
    return 0


COMMANDS = {"run": command_run, "table": command_table, "list": command_list, "data": command_data}


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    if not words or words[0] in {"-h", "--help", "help"}:
        print(USAGE)
        return 0
    command = COMMANDS.get(words[0])
    try:
        if command is None:
            raise UserError(f"unknown command '{words[0]}'; use one of {', '.join(COMMANDS)}")
        return command(words[1:])
    except UserError as exc:
        print(f"clusterbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130
    except BrokenPipeError:  # `clusterbench table … | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
