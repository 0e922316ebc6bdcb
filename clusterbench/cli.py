"""The ``clusterbench`` command: ``run`` (Hydra), ``table``, ``list`` and ``data`` (argparse).

Hydra parses all of ``sys.argv`` and has no subcommands, so ``main`` dispatches on the first
word and hands ``run``'s remaining words to the Hydra app.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.utils import to_absolute_path
from omegaconf import DictConfig, OmegaConf, open_dict
from tqdm.auto import tqdm

from clusterbench.catalog import CONF_DIR, GROUPS, check_in_cache, check_option, load_option, options
from clusterbench.errors import INTERRUPTED, UserError, first_line

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


def open_estimator_overrides(words: list[str]) -> list[str]:
    """``method.estimator.K=V`` → ``++method.estimator.K=V``: any hyperparameter may be set.

    A method's YAML lists only the hyperparameters it changes, so Hydra would refuse the others
    (``n_clusters``, ``tol``, …) as not in the config; the runner names unknown ones instead.
    """
    return [f"++{word}" if word.startswith("method.estimator.") else word for word in words]


OVERRIDE_GRAMMAR = "see https://hydra.cc/docs/advanced/override_grammar/basic/"


def check_overrides(words: list[str]) -> Path | None:
    """Fail in one line, before Hydra starts, on an override it would refuse in a stack of lines:
    bad syntax, an unknown dataset, method, … (every value of a sweep), a key not in the config,
    and on datasets the run needs that can be neither read nor fetched (every one it sweeps).

    The keys are checked by composing the config as the app will, each sweep at its first value;
    returns that config's results folder (None where only the running app can resolve it). An
    experiment named without -m gets a note: only one job of its sweep runs.
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import IntervalSweep
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    multirun = bool({"-m", "--multirun"} & set(words))
    # Hydra's flags (-m, --cfg job, …) are not overrides; "~key" deletes a key.
    overrides = [word for word in words if word.startswith("~") or ("=" in word and word[0] != "-")]
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException as exc:
        raise UserError(f"cannot parse the overrides: {first_line(exc)}; {OVERRIDE_GRAMMAR}") from None
    # The datasets the run needs: those given (a glob matched against the dataset names), else an
    # experiment's sweep as hydra.sweeper.params.dataset resets it (a quoted sweep), else those
    # its experiments sweep.
    composable, datasets, given, experiments, swept_by_key, sweeper_keys = [], None, False, [], None, []
    for override in parsed:
        if override.is_delete():
            composable.append(override.input_line)
            given = given or override.key_or_group == "hydra.sweeper.params.dataset"  # the default runs
            continue
        sweep = override.is_sweep_override()
        if sweep and not multirun:
            raise UserError(f"{override.input_line} is a sweep; run it with -m (clusterbench run -m ...)")
        group = override.key_or_group
        values = _option_names(override, group) if group in GROUPS else _values(override)
        if group == "dataset":
            datasets, given = values, True
        elif group == "hydra.sweeper.params.dataset":
            swept_by_key = _sweeper_datasets(override)
        if group.startswith("hydra.sweeper.params."):
            sweeper_keys.append(group.removeprefix("hydra.sweeper.params."))
        if values == []:
            hint = "see `clusterbench list` for the options" if group in GROUPS else "give at least one value"
            raise UserError(f"{override.input_line} selects nothing; {hint}")
        if values is None:
            if not isinstance(override.value(), IntervalSweep):
                raise UserError(f"cannot list the values of {override.input_line}; {OVERRIDE_GRAMMAR}")
            if not any(word.lstrip("+").startswith("hydra/sweeper=") for word in words):
                raise UserError(
                    f"{override.input_line}: interval() needs a sampling sweeper (hydra/sweeper=optuna, "
                    "installed apart); the basic sweeper takes lists and range()"
                )
            continue  # a sampling sweeper reads it itself
        if group == "experiment":
            experiments = values
        if group in GROUPS:
            for name in values:
                if name == "null":  # Hydra raises a traceback for it
                    raise UserError(f"{group}=null selects nothing; leave {group} out or delete it: ~{group}")
                check_option(group, name)
        composable.append(f"{override.get_key_element()}={values[0]}" if sweep else override.input_line)
    if sweeper_keys and len(experiments) != 1:
        # Without an experiment's sweep to reset, composing the config ends in a traceback.
        key = sweeper_keys[0]
        raise UserError(
            f"hydra.sweeper.params.{key} resets the sweep of one experiment; name one "
            f"(experiment=NAME), or sweep it with -m {key}=a,b"
        )
    # Hydra reads the sweeper's params only under -m, and a dataset= override wins over them.
    if swept_by_key is not None and multirun and not given:
        datasets, given = swept_by_key, True
    refused = None
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        try:
            cfg = compose(config_name="config", overrides=composable)
        except (HydraException, OmegaConfBaseException) as exc:
            refused = exc
    if refused is not None:  # worded outside the block: the hint composes the plain config
        raise UserError(_composition_error(refused)) from None
    if not given and multirun:  # those the experiments sweep
        swept = [
            OmegaConf.select(load_option("experiment", e), "hydra.sweeper.params.dataset")
            for e in experiments
        ]
        datasets = [name for value in swept if value for name in _parse_datasets(value) or []]
    if datasets is not None or not given:
        check_in_cache(
            list(dict.fromkeys(datasets or [cfg.dataset.name])), "sweep without them (dataset=...)"
        )
    results_dir = _results_dir(cfg)
    if results_dir is not None:
        from clusterbench.results import check_writable

        check_writable(Path(results_dir), "results_dir")
    if experiments and not multirun:
        print(
            f"clusterbench: note: experiment {experiments[0]} is a sweep; without -m only the one job "
            "of dataset= and method= runs",
            file=sys.stderr,
        )
    return None if results_dir is None else Path(results_dir)


def _results_dir(cfg) -> str | None:
    """The configured results folder; None where only the running app can resolve it (``${hydra:…}``)."""
    from omegaconf.errors import OmegaConfBaseException

    try:
        results_dir = OmegaConf.select(cfg, "results_dir")
    except OmegaConfBaseException as exc:
        if "HydraConfig was not set" in str(exc):  # ${hydra:…}, directly or through another key
            return None
        raise UserError(f"results_dir cannot be resolved: {first_line(exc)}") from None
    if results_dir is None or not str(results_dir).strip():
        raise UserError("results_dir is empty; give a folder (results_dir=results is the default)")
    return results_dir


def _sweeper_datasets(override) -> list[str]:
    """The datasets of ``hydra.sweeper.params.dataset="a,b"``: a sweep written as one string."""
    from hydra.errors import HydraException

    if override.is_sweep_override():
        raise UserError(
            f"quote a sweep given to hydra.sweeper.params.dataset "
            f'(hydra.sweeper.params.dataset="{override.input_line.split("=", 1)[1]}"), '
            "or sweep with -m dataset=a,b"
        )
    try:
        return _parse_datasets(override.value()) or []
    except HydraException as exc:
        raise UserError(
            f"cannot parse {override.input_line}: {first_line(exc)}; {OVERRIDE_GRAMMAR}"
        ) from None


def _parse_datasets(sweep: str) -> list[str] | None:
    """The datasets a sweep written as text selects (``a,b``, ``glob(y*)``): see :func:`_option_names`."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return _option_names(OverridesParser.create().parse_override(f"dataset={sweep}"), "dataset")


def _option_names(override, group: str) -> list[str] | None:
    """The options of ``group`` an override selects: its values, or its glob matched against the
    group's configs (None for an interval, which only a sampling sweeper reads)."""
    from hydra.core.override_parser.types import Glob

    glob = override.value() if isinstance(override.value(), Glob) else None
    return glob.filter(options(group)) if glob else _values(override)


def _values(override) -> list[str] | None:
    """An override's value, or every value of a choice/range sweep; None for glob and interval."""
    if not override.is_sweep_override():
        return [override.get_value_element_as_str()]
    from hydra.errors import HydraException

    try:
        return list(override.sweep_string_iterator())
    except HydraException:
        return None
    except ValueError as exc:  # range(0,2,0)
        raise UserError(f"cannot read {override.input_line}: {first_line(exc)}; {OVERRIDE_GRAMMAR}") from None


def _composition_error(exc: BaseException) -> str:
    """Hydra's "Could not override 'k'. / To append … use +k=v" and its cause, or its "Could not
    find 'group/x'" and the group's options (e.g. hydra/launcher), as one line."""
    lines = [line.strip() for line in str(exc).strip().splitlines()]
    message = _lower_first(lines[0].rstrip("."))
    if exc.__cause__ is not None:
        cause = first_line(exc.__cause__).replace("is not in struct", "is not in the config")
        message += f": {_lower_first(cause)}"
    hint = next((line for line in lines[1:] if line.startswith("To append")), None)
    typo = re.match(r"Could not override '([\w.]+)'", lines[0])
    if hint and typo:  # a misspelt key is likelier than a new one: name the close match first
        close = _close_key(typo[1])
        hint = f"did you mean {close}? ({_lower_first(hint)})" if close else hint
    if "Available options in" in str(exc):
        start = next(i for i, line in enumerate(lines) if line.startswith("Available options in")) + 1
        end = next((i for i, line in enumerate(lines) if line.startswith("Config search path")), len(lines))
        hint = f"known options: {', '.join(line for line in lines[start:end] if line)}"
    return f"{message}; {_lower_first(hint)}" if hint else message


def _close_key(dotted: str) -> str | None:
    """``dotted`` with its first unknown part replaced by the closest key of the config, if any."""
    import difflib

    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        node = compose(config_name="config")
    parts = dotted.split(".")
    for depth, part in enumerate(parts):
        keys = [str(key) for key in node] if OmegaConf.is_dict(node) else []
        if part not in keys:
            match = difflib.get_close_matches(part, keys, n=1, cutoff=0.75)
            return ".".join([*parts[:depth], match[0], *parts[depth + 1 :]]) if match else None
        node = node[part]
    return None


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


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


def import_folder(folder: Path, cache: Path) -> None:
    """Copy the folder's ``<name>.npz`` files into the cache, and its ``MANIFEST.csv`` rows into the
    cache's (those of the same name replaced), so that ``data verify`` checks their SHA-256."""
    import pandas as pd

    from clusterbench.data.sources import read_npz
    from clusterbench.results import atomic_write_text

    if not folder.is_dir():
        raise UserError(f"no folder {folder}; name a folder of <name>.npz files (arrays X (n, d) and y (n,))")
    files = sorted(folder.glob("*.npz"))
    if not files:
        raise UserError(f"no .npz files in {folder}; each file holds arrays X (n, d) and y (n,)")
    for file in files:
        read_npz(file)  # refuse files without X and y before copying anything
    manifest, rows = folder / "MANIFEST.csv", None
    if manifest.exists() and manifest.resolve() != (cache / manifest.name).resolve():
        rows = pd.read_csv(manifest)
        if not {"name", "sha256_of_npz"} <= set(rows.columns):
            raise UserError(
                f"{manifest} needs columns name and sha256_of_npz (or remove it to import without)"
            )
    cache.mkdir(parents=True, exist_ok=True)
    copied = [file for file in files if file.resolve() != (cache / file.name).resolve()]
    replaced = [
        file.name
        for file in copied
        if (cache / file.name).exists() and not filecmp.cmp(file, cache / file.name, shallow=False)
    ]
    for file in copied:
        shutil.copyfile(file, cache / file.name)
    if rows is not None:
        if (cache / manifest.name).exists():
            rows = pd.concat([pd.read_csv(cache / manifest.name), rows]).drop_duplicates("name", keep="last")
        atomic_write_text(cache / manifest.name, rows.to_csv(index=False))
    print(
        f"imported {len(files)} file(s) into {cache}"
        + (f" (replaced different files of the same name: {', '.join(replaced)})" if replaced else "")
    )


def verify_cache(cache: Path) -> int:
    """Check each cached dataset's shape and class count against its config, and its SHA-256
    against ``MANIFEST.csv`` where the cache has one; exit 1 on any mismatch."""
    import hashlib

    import numpy as np
    import pandas as pd

    from clusterbench.data.sources import read_npz, reads_cache

    manifest_path = cache / "MANIFEST.csv"
    manifest = pd.read_csv(manifest_path).set_index("name") if manifest_path.exists() else None
    problems = 0
    for name in options("dataset"):
        spec = load_option("dataset", name)
        if not reads_cache(spec.source):
            continue
        path = cache / f"{spec.source.name}.npz"
        if not path.exists():
            print(f"  {name:<20} not cached")
            continue
        try:
            raw = read_npz(path)
        except UserError as exc:  # report it and go on with the other files
            problems += 1
            print(f"  {name:<20} MISMATCH: {exc}")
            continue
        found = [list(raw.X.shape), len(np.unique(raw.y))]
        # n_classes: where n_clusters is a choice rather than the number of labels (kdd_protein)
        expected = [list(spec.get("shape") or found[0]), spec.get("n_classes", spec.get("n_clusters"))]
        if expected[1] is None:
            expected[1] = found[1]  # the config says nothing to check the labels against
        issues = [] if found == expected else [f"X {found[0]}, labels {found[1]}"]
        if manifest is not None and spec.source.name in manifest.index:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if digest != manifest.loc[spec.source.name, "sha256_of_npz"]:
                issues.append("sha256 differs from MANIFEST.csv")
        problems += bool(issues)
        print(f"  {name:<20} {'MISMATCH: ' + '; '.join(issues) if issues else 'ok'}")
    return 1 if problems else 0


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
