"""The command line's overrides, checked before Hydra starts: an override Hydra would refuse in a
page of traceback is refused in one line that names the fix.

``method.K=V`` sets hyperparameter K of the method's estimator (:func:`rewrite_overrides`); an
override that adds a key nothing reads is refused (:func:`unread_key_hint`): no override is ever
accepted and ignored.
"""

from __future__ import annotations

import difflib
import re
import sys
from functools import cache
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from clusterbench.catalog import (
    CONFIG_DIR_ENV,
    FILE_KEYS,
    GROUPS,
    check_distinct,
    check_file_keys,
    check_in_cache,
    check_option,
    check_source,
    compose_config,
    estimator_parameters,
    interpolated_keys,
    load_option,
    method_files,
    option_file,
    option_label,
    options,
    referenced_roots,
    settings,
    user_config_dirs,
)
from clusterbench.errors import UserError, first_line

# Where an override may add a key the config lacks, because what reads it checks the key itself:
# grids, per-method maps and metric options name methods and options the runner checks, an
# estimator's hyperparameters and a source's arguments are checked against their signatures,
# and Hydra checks its own settings.
OPEN_KEYS = (
    "grids",
    "dataset_overrides",
    "method_overrides",
    "method_seeds",
    "timeout_s",
    "metrics",
    "method.estimator",
    "dataset.source",
    "hydra",
)
_METHOD_KEY = re.compile(r"^(?P<op>~|\+{0,2})method\.(?:estimator\.)?(?P<key>[^=.]+)(?P<rest>=.*)?$")
_DATASET_KEY = re.compile(r"^\+{0,2}dataset\.(?P<key>[^=.]+)(?P<rest>=.*)$")
# The settings keyed by method or dataset name, empty by default: an entry is always an addition.
# (Not timeout_s: a number there is every method's limit, which one method's entry would replace.)
_MAP_ENTRY = re.compile(
    r"^\+{0,2}(?P<key>(?:grids|method_seeds|dataset_overrides|method_overrides)\.[^=]+)(?P<rest>=.*)$"
)


def rewrite_overrides(words: list[str]) -> list[str]:
    """``method.K=V``, ``+method.K=V`` and ``method.estimator.K=V`` → ``++method.estimator.K=V``
    (``~method.K`` → ``~method.estimator.K``) for every ``K`` a method file does not read itself:
    the spelling a Hydra user types sets the estimator's hyperparameter. A method's YAML lists only
    the hyperparameters it changes, so Hydra alone would refuse the others (``n_clusters``,
    ``tol``, …) as not in the config, or append them beside the estimator, where nothing reads
    them; the runner names a hyperparameter the estimator does not have.

    Likewise ``dataset.K=V`` → ``++dataset.K=V`` for a key some dataset file holds (``subsample``,
    ``impute``, …): a file that leaves an optional key out gets it, as one that holds it does; and
    an entry of a map keyed by method or dataset (``grids.kmeans.n_init=[1,10]``,
    ``method_seeds.dbscan=[0]``, …) is set with ``++``, added or replaced, whatever the experiment
    holds. A key the named experiments sweep (``hydra.sweeper.params``) is left as typed: Hydra
    replaces a swept key by the command line's only under the same spelling."""
    swept = _swept_keys(words)
    rewritten = []
    for word in words:
        entry = _MAP_ENTRY.match(word)
        if entry is not None and entry["key"] not in swept:
            rewritten.append(f"++{entry['key']}{entry['rest']}")
            continue
        dataset = _DATASET_KEY.match(word)
        if (
            dataset is not None
            and dataset["key"] != "source"
            and dataset["key"] in file_keys("dataset")
            and f"dataset.{dataset['key']}" not in swept
        ):
            rewritten.append(f"++dataset.{dataset['key']}{dataset['rest']}")
            continue
        match = _METHOD_KEY.match(word)
        if match is None or match["key"] in FILE_KEYS["method"]:
            rewritten.append(word)
            continue
        op = "~" if match["op"] == "~" else "++"
        rewritten.append(f"{op}method.estimator.{match['key']}{match['rest'] or ''}")
    return rewritten


def _named_experiments(words: list[str]) -> list:
    """The raw files of the known experiments named in ``words`` (``experiment=a,b``); an unknown
    name is left to the overrides' check, which names it."""
    known = options("experiment")
    return [
        load_option("experiment", experiment)
        for word in words
        if word.partition("=")[0].lstrip("+") == "experiment"
        for experiment in word.partition("=")[2].split(",")
        if experiment in known
    ]


def _swept_keys(words: list[str]) -> set[str]:
    """The keys the experiments named in ``words`` sweep themselves."""
    return {
        str(key)
        for experiment in _named_experiments(words)
        for key in OmegaConf.select(experiment, "hydra.sweeper.params") or {}
    }


@cache
def file_keys(group: str) -> tuple[str, ...]:
    """The top-level keys a file of config group ``group`` may hold: a dataset's or method's
    (:data:`~clusterbench.catalog.FILE_KEYS`, and those some dataset file interpolates, as
    ``path``), or those any file of the group holds (a profile's ``epochs``)."""
    if group in FILE_KEYS:  # the job's own check then refuses a key its dataset does not interpolate
        interpolated = {
            key for name in options(group) for key in interpolated_keys(group, load_option(group, name))
        }
        return tuple(sorted(set(FILE_KEYS[group]) - {"defaults"} | interpolated))
    return tuple(sorted({str(key) for name in options(group) for key in load_option(group, name)}))


def unread_key_hint(key: str, value: str, words: list[str]) -> str | None:
    """Why adding ``key`` (absent from the config) would change nothing, with the spelling that
    does what the user meant; None where something reads an added ``key`` (a setting, which
    ``++`` overrides, :data:`OPEN_KEYS`, a dataset or profile key that some file of its group
    holds, a variable another override reads)."""
    head, _, rest = key.partition(".")
    if key in settings() or key in OPEN_KEYS or key.startswith(tuple(f"{k}." for k in OPEN_KEYS)):
        return None
    if head in ("dataset", "profile") and rest and rest in file_keys(head):
        return None
    if not rest and any(f"${{{key}" in word for word in words):  # +base=… read as ${base}
        return None
    if head == "dataset" and rest:
        return (
            f"'{rest}' is not a dataset key, so nothing would read it; a dataset's keys are: "
            f"{', '.join(file_keys('dataset'))} (a source's argument: ++dataset.source.{rest}={value})"
        )
    if head == "profile" and rest:
        return f"no profile has a key '{rest}', so nothing would read it; a profile's keys are: " + ", ".join(
            file_keys("profile")
        )
    return (
        f"'{key}' is not a setting, so nothing would read it; a method's hyperparameter is "
        f"method.{key.rpartition('.')[2]}={value}; the settings are: {', '.join(settings())}"
    )


OVERRIDE_GRAMMAR = "see https://hydra.cc/docs/advanced/override_grammar/basic/"


# Hydra's flags that take the next word as their value (``--cfg job``, ``-p dataset``).
_FLAGS_WITH_VALUE = {"-c", "--cfg", "-p", "--package", "-i", "--info", "-cp", "--config-path"}
_FLAGS_WITH_VALUE |= {"-cn", "--config-name", "-cd", "--config-dir", "--experimental-rerun"}


def check_config_folders(words: list[str]) -> None:
    """Hydra's own ways to add a config folder would reach its composition but not the names the
    checks, tables and lists know: one way serves every command, the environment variable."""
    for word in words:
        # argparse takes -cd=DIR and any unambiguous prefix of --config-dir
        if word == "-cd" or re.match(r"^(-cd=|--config-d|\+{0,2}hydra\.searchpath\b)", word):
            flag = re.split(r"\+?=", word)[0]
            raise UserError(
                f"{flag}: give folders of your own configs as {CONFIG_DIR_ENV}=FOLDER "
                "(each laid out like conf/), which run, table, list and report all read"
            )


def check_bare_words(words: list[str]) -> None:
    """A word that is no flag, no flag's value and no ``key=value`` (``run kmeans``, or the ``1``
    of ``seed=0 1``) is refused in one line; Hydra's parser answers it in a page."""
    for at, word in enumerate(words):
        before, after = words[at - 1] if at else "", words[at + 1] if at + 1 < len(words) else ""
        if word.startswith(("-", "~")) or "=" in word or before in _FLAGS_WITH_VALUE:
            continue
        groups = [group for group in GROUPS if group != "table" and word in options(group)]
        if groups:
            hint = f"did you mean {' or '.join(f'{group}={word}' for group in groups)}?"
        elif (word in GROUPS or word in settings()) and after and after[0] != "-" and "=" not in after:
            hint = f"did you mean {word}={after}?"  # ``method kmeans``, ``seed 3``
        else:
            hint = "write key=value; a sweep's values are separated by commas without spaces (-m seed=0,1,2)"
        raise UserError(f"'{word}' is not an override (key=value); {hint}")


# Hydra's flags that print instead of running (the config, its sources, its help).
_INSPECTING = {"-c", "--cfg", "-i", "--info", "--help", "-h", "--hydra-help", "-sc", "--shell-completion"}


def check_launcher(words: list[str], multirun: bool) -> None:
    """A launcher's settings are read only with a launcher chosen (on the command line or in a
    named experiment's defaults), and a launcher only under -m: either alone would be accepted
    by Hydra and change nothing. Commands that only print the config are left alone."""
    if _INSPECTING & set(words):
        return
    chosen = any(re.match(r"^\+{0,2}hydra/launcher=", word) for word in words) or _experiment_launches(words)
    settings = [word for word in words if re.match(r"^\+{0,2}hydra\.launcher\.", word)]
    if settings and not chosen:
        raise UserError(
            f"{settings[0]}: Hydra's basic launcher reads no settings; choose the launcher that reads it "
            "(hydra/launcher=joblib, submitit_local, submitit_slurm or slurm_gpu)"
        )
    if chosen and not multirun:
        raise UserError(
            "hydra/launcher=… launches a sweep's jobs; add -m (one job without -m runs in this process)"
        )


def _experiment_launches(words: list[str]) -> bool:
    """Whether an experiment named in ``words`` chooses a launcher in its own defaults list."""
    return any(
        "hydra/launcher" in str(entry)
        for experiment in _named_experiments(words)
        for entry in experiment.get("defaults") or []
    )


def check_global_package(experiment: str) -> None:
    """An experiment file sets top-level keys (its sweep under ``hydra:``, ``grids``, …) only
    under Hydra's ``# @package _global_`` header; without it Hydra nests the whole file under
    ``experiment:``, where nothing reads it, and the run quietly does the defaults."""
    from hydra.plugins.config_source import ConfigSource

    path = option_file("experiment", experiment)
    # Hydra's own reading: only the file's first lines of the form "# @key value", blank lines
    # between them skipped, make its header.
    try:
        package = ConfigSource._get_header_dict(path.read_text()).get("package")
    except ValueError:  # a malformed header line: Hydra's own error says it
        return
    if package != "_global_":
        raise UserError(
            f"{option_label('experiment', experiment)} lacks the header '# @package _global_' as its first "
            "line: without it Hydra nests the file under experiment: and runs the defaults; add that line"
        )


def check_overrides(words: list[str]) -> Path | None:
    """Fail in one line, before Hydra starts, on an override it would refuse in a stack of lines:
    bad syntax, an unknown dataset, method, … (every value of a sweep), a key not in the config,
    and on datasets the run needs that can be neither read nor fetched (every one it sweeps).

    The keys are checked by composing the config as the app will, each sweep at its first value;
    returns that config's results folder (None where only the running app can resolve it). An
    experiment named without -m gets a note: only one job of its sweep runs.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import IntervalSweep
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    multirun = bool({"-m", "--multirun"} & set(words)) or "hydra.mode=MULTIRUN" in words
    check_config_folders(words)
    check_bare_words(words)
    check_launcher(words, multirun)
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
    methods, method_settings = None, {}
    for override in parsed:
        if override.is_delete():
            composable.append(override.input_line)
            given = given or override.key_or_group == "hydra.sweeper.params.dataset"  # the default runs
            continue
        if override.is_add() or override.is_force_add():
            unread = unread_key_hint(override.key_or_group, _shown_value(override), words)
            if unread:
                raise UserError(f"{override.input_line}: {unread}")
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
                if group == "experiment":
                    check_global_package(name)
                    check_experiment_keys(name, words)
                elif group in FILE_KEYS:
                    check_file_keys(group, load_option(group, name), option_label(group, name))

        if group == "method":
            methods = values
        if group.startswith("method."):
            method_settings[group] = values
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
    try:
        cfg = compose_config(composable, return_hydra_config=True)
    except (HydraException, OmegaConfBaseException) as exc:
        raise UserError(_composition_error(exc, words)) from None
    choices = dict(cfg.hydra.runtime.choices)  # the option of each group this job composes
    if methods is None and multirun:  # those the experiments sweep
        methods = [
            name
            for e in experiments
            for name in _swept_options(load_option("experiment", e), "method", words) or []
        ]
    # A method renamed on the command line records under its new name: nothing to mix.
    if not any(word.lstrip("+").startswith(("method.name=", "method.variant=")) for word in words):
        check_distinct("method", list(dict.fromkeys([*(methods or []), choices["method"]])))
    if multirun and methods:
        check_method_override_reach(list(dict.fromkeys(methods)), method_settings, cfg.get("method_seeds"))
    check_source(cfg.dataset, datasets[0] if given and datasets else None)
    if OmegaConf.select(cfg, "device", throw_on_resolution_failure=False) == "cuda":
        from clusterbench.validation import resolve_device

        resolve_device("cuda")  # every method alike, a scikit-learn one too: no GPU is a user error
    if not given and multirun:  # those the experiments sweep
        swept = [
            OmegaConf.select(load_option("experiment", e), "hydra.sweeper.params.dataset")
            for e in experiments
        ]
        datasets = [name for value in swept if value for name in _parse_options("dataset", value) or []]
    # A dataset renamed on the command line records under its new name: nothing to mix.
    if not any(word.lstrip("+").startswith("dataset.name=") for word in words):
        check_distinct("dataset", list(dict.fromkeys(datasets or [choices["dataset"]])))
    if datasets is not None or not given:
        check_in_cache(list(dict.fromkeys(datasets or [cfg.dataset.name])), sweep=multirun)
    results_dir = _results_dir(cfg)
    if results_dir is not None:
        from clusterbench.results import check_writable

        check_writable(Path(results_dir), "results_dir")
    if experiments and not multirun:
        check_one_job(experiments[0], choices, words)
        print(
            f"clusterbench: note: experiment {experiments[0]} is a sweep; without -m only the one job "
            "of dataset=, method= and metrics= runs",
            file=sys.stderr,
        )
    return None if results_dir is None else Path(results_dir)


def check_method_override_reach(methods: list[str], given: dict[str, list[str]], method_seeds) -> None:
    """``method.K=V`` reaches every method of a sweep. Where some of them take K and others do
    not, the others' jobs refuse it, and the fix is not ``method.K=V``: name the spelling that
    gives K to those that take it alone, ``grids.<method>.K=[V, …]`` (a grid inside their jobs).
    ``given``: each ``method.…`` key of the command line with its values (a sweep's, listed); a
    method that ``method_seeds`` limits to some seeds may run at none of the sweep's, so it is
    left to its jobs to refuse."""
    keys = {}  # hyperparameter → its values
    for key, values in given.items():
        name = key.removeprefix("method.").removeprefix("estimator.")
        if "." not in name and not name.startswith("_") and name not in FILE_KEYS["method"]:
            keys[name] = values
    if not keys:
        return
    every = method_files()
    files = {method: every[method] for method in methods}
    taking = {method: estimator_parameters(file.target) for method, file in files.items()}
    if None in taking.values():  # an estimator that cannot be imported: its job says why
        return
    for name, values in keys.items():
        lacking = [
            method
            for method, accepted in taking.items()
            if name not in accepted and (method_seeds or {}).get(files[method].name) is None
        ]
        having = [files[method].name for method, accepted in taking.items() if name in accepted]
        if lacking and having:
            listed = ",".join(map(_grid_value, values)) if values else "VALUE,..."
            grids = " ".join(f"'grids.{method}.{name}=[{listed}]'" for method in dict.fromkeys(having))
            raise UserError(
                f"method.{name} reaches every method of the sweep, and method '{lacking[0]}' has no "
                f"hyperparameter '{name}'; give it to {', '.join(having)} alone: {grids}"
            )


def _grid_value(value: str) -> str:
    """A value as an element of a list override: quoted unless a plain word or number."""
    return value if re.fullmatch(r"[\w.+-]+", value) else '"' + value.replace('"', '\\"') + '"'


def check_experiment_keys(experiment: str, words: list[str]) -> None:
    """An experiment file's top-level keys are settings (``grids``, ``method_seeds``, …), config
    groups it adds to (``method``, ``profile``) or ``hydra`` and ``defaults``: any other (``grid:``)
    would be ignored, and the sweep would run without it; a variable of its own is read where its
    values or the command line's (``words``) interpolate it. The dataset and method blocks it
    merges and the files it sweeps hold only keys something reads
    (:func:`~clusterbench.catalog.check_file_keys`)."""
    raw, where = load_option("experiment", experiment), option_label("experiment", experiment)
    read = {*settings(), "defaults", "hydra", *referenced_roots(raw), *referenced_roots(" ".join(words))}
    unread = sorted(str(key) for key in raw if str(key) not in read)
    if unread:
        close = difflib.get_close_matches(unread[0], settings(), n=1, cutoff=0.6)
        fix = f"did you mean '{close[0]}'?" if close else f"the settings are: {', '.join(settings())}"
        raise UserError(f"{where}: '{unread[0]}' is not a setting, so nothing would read it; " + fix)
    for group in FILE_KEYS:
        if OmegaConf.is_dict(raw.get(group)):
            check_file_keys(group, raw[group], f"{where}, its {group}: block")
        for name in _swept_options(raw, group, words) or []:
            if name in options(group):
                check_file_keys(group, load_option(group, name), option_label(group, name))


def _swept_options(experiment: DictConfig, group: str, words: list[str]) -> list[str] | None:
    """The options of ``group`` an experiment's sweep selects, as the command line's
    ``hydra.sweeper.params.<group>=…`` resets it; None where it sweeps none (or Hydra cannot
    parse the sweep, which the sweep itself then says)."""
    from hydra.errors import HydraException

    sweep = OmegaConf.select(experiment, f"hydra.sweeper.params.{group}")
    for word in words:
        key, _, value = word.lstrip("+").partition("=")
        if key == f"hydra.sweeper.params.{group}":
            sweep = value.strip("'\"")
    if sweep is None:
        return None
    try:
        return _parse_options(group, sweep)
    except HydraException:
        return None


def check_one_job(experiment: str, choices: dict, words: list[str]) -> None:
    """Without -m an experiment runs one job, with the options it composes (``choices``, group →
    option): each must be among those the experiment sweeps. Otherwise the config's defaults
    (zoo, kmeans, the default metrics) would run under the experiment's name, where its table
    could read them. (Commands that only print the config are left alone.)"""
    if _INSPECTING & set(words):
        return
    raw = load_option("experiment", experiment)
    for group in GROUPS:
        names = _swept_options(raw, group, words) if group in choices else None
        if names and choices[group] not in names:
            raise UserError(
                f"experiment {experiment} sweeps {group} {','.join(names)}, not {choices[group]}: run its "
                f"sweep with -m, or one of its jobs with {group}={names[0]}"
            )


def _shown_value(override) -> str:
    """The value of an override as its line gives it (``3`` of ``+beta=3``)."""
    return override.input_line.partition("=")[2]


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
        return _parse_options("dataset", override.value()) or []
    except HydraException as exc:
        raise UserError(
            f"cannot parse {override.input_line}: {first_line(exc)}; {OVERRIDE_GRAMMAR}"
        ) from None


def _parse_options(group: str, sweep: str) -> list[str] | None:
    """The options of ``group`` a sweep written as text selects (``a,b``, ``glob(y*)``): see
    :func:`_option_names`."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return _option_names(OverridesParser.create().parse_override(f"{group}={sweep}"), group)


def expand_globs(words: list[str]) -> list[str]:
    """``method=glob(my*)`` written out as the options it selects (``method=my_a,my_b``): Hydra's
    sweeper expands a glob over conf/ alone, before the user's config folders join its search
    path. Without such folders the words are left as they are."""
    if not user_config_dirs():
        return words
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import Glob

    expanded = []
    for word in words:
        group = word.lstrip("+").partition("=")[0]
        if group in GROUPS and "glob(" in word:
            override = OverridesParser.create().parse_override(word)
            if isinstance(override.value(), Glob):
                word = f"{word.partition('=')[0]}={','.join(_option_names(override, group))}"
        expanded.append(word)
    return expanded


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


def _composition_error(exc: BaseException, words: list[str]) -> str:
    """Hydra's "Could not override 'k'. / To append … use +k=v" and its cause, or its "Could not
    find 'group/x'" and the group's options (e.g. hydra/launcher), as one line."""
    lines = [line.strip() for line in str(exc).strip().splitlines()]
    message = _lower_first(lines[0].rstrip("."))
    if exc.__cause__ is not None:
        cause = first_line(exc.__cause__).replace("is not in struct", "is not in the config")
        message += f": {_lower_first(cause)}"
    hint = next((line for line in lines[1:] if line.startswith("To append")), None)
    typo = re.match(r"Could not override '([\w.]+)'", lines[0])
    if hint and typo:
        # Hydra's advice to append (+k=v) is kept only where something reads the added key.
        unread = unread_key_hint(typo[1], hint.partition("=")[2], words)
        hint = unread or hint
        # A misspelt key is likelier than a new one: name the close match first.
        close = _close_key(typo[1])
        hint = f"did you mean {close}? ({_lower_first(hint)})" if close else hint
        # An option of a metric that another suite holds: that suite scores it (added, it lacks _target_).
        parts = typo[1].split(".")
        if len(parts) > 2 and parts[0] == "metrics" and not close:
            suites = [suite for suite in options("metrics") if parts[1] in load_option("metrics", suite)]
            if suites:
                hint = f"metric '{parts[1]}' is in suite {', '.join(suites)}, not this run's: "
                hint += f"add metrics={suites[0]}"
    if "Available options in" in str(exc):
        start = next(i for i, line in enumerate(lines) if line.startswith("Available options in")) + 1
        end = next((i for i, line in enumerate(lines) if line.startswith("Config search path")), len(lines))
        hint = f"known options: {', '.join(line for line in lines[start:end] if line)}"
    return f"{message}; {_lower_first(hint)}" if hint else message


def _close_key(dotted: str) -> str | None:
    """``dotted`` with its first unknown part replaced by the closest key of the config, if any."""
    node = compose_config([])
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
