"""What the config tree offers: the option names of each group, read straight from ``conf/`` and
from the user's own config folders (``$CLUSTERBENCH_CONFIG_DIR``, laid out like ``conf/``).
Importing it registers the resolvers the files use (:mod:`clusterbench.resolvers`).

The config groups are the registry (``_target_`` + ``hydra.utils.instantiate``); nothing here
duplicates them.
"""

from __future__ import annotations

import difflib
import inspect
import os
import re
from functools import cache
from pathlib import Path
from typing import NamedTuple

import yaml
from omegaconf import DictConfig, OmegaConf

import clusterbench.resolvers  # noqa: F401  (registers the resolvers the config files use)
from clusterbench.errors import UserError, first_line

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
# Folders of the user's own configs (method/, dataset/, experiment/, table/, …), separated by
# os.pathsep: searched after conf/, so a method or dataset of one's own needs no file in the checkout.
CONFIG_DIR_ENV = "CLUSTERBENCH_CONFIG_DIR"
GROUPS = ("dataset", "method", "metrics", "profile", "experiment", "table")

# The keys a dataset or method file may hold: those the runner reads (and a dataset's n_classes and
# shape, which `data verify` and `clusterbench list` read, and its description, for the file's
# reader; all three enter the records' hash with the rest of the file), Hydra's defaults list, and a
# key the file's own values interpolate (``path`` in ``source: {path: ${..path}}``). Any other is
# a typo that would be ignored without a word (``preproces: standardize``), so it is refused.
FILE_KEYS = {
    "dataset": (
        "name",
        "description",
        "n_clusters",
        "n_classes",
        "shape",
        "source",
        "split",
        "subsample",
        "subsample_seed",
        "impute",
        "preprocess",
        "column_major_images",
        "defaults",
    ),
    "method": ("name", "variant", "max_samples", "estimator", "trace", "defaults"),
}
# A reference's first name, not a resolver's (``${seeds:3}``): followed by ".", "}" or "[".
_ROOT_REFERENCE = re.compile(r"\$\{(\w+)(?=[.}\[])")


def referenced_roots(source: DictConfig | str) -> set[str]:
    """The top-level keys that a config's values (or a text: the command line's words) interpolate
    by an absolute reference (``${base}``, ``${profile.epochs}``): a variable of the user's own
    (``+base=…``) is read, though by no code."""
    text = source if isinstance(source, str) else OmegaConf.to_yaml(source, resolve=False)
    return set(_ROOT_REFERENCE.findall(text))


@cache
def settings() -> tuple[str, ...]:
    """The top-level settings of ``conf/config.yaml`` (seed, device, …) and the config groups."""
    config = OmegaConf.load(CONF_DIR / "config.yaml")
    return tuple(sorted({str(key) for key in config} - {"defaults", "hydra"} | set(GROUPS) - {"table"}))


def interpolated_keys(group: str, node: DictConfig) -> set[str]:
    """The top-level keys of a ``group`` config that its own values interpolate (``${..path}``
    from ``source.path``, or ``${dataset.path}``): read, though by no code."""
    text = OmegaConf.to_yaml(node, resolve=False)
    found = re.findall(rf"\$\{{(?:\.+|{group}\.)(\w+)", text)
    return {key for key in found if key in node}


def check_file_keys(group: str, node: DictConfig, where: str) -> None:
    """Refuse, in one line naming ``where`` the key sits and its likely spelling, a key of a
    dataset or method config (raw or composed) that nothing reads: see :data:`FILE_KEYS`."""
    known = set(FILE_KEYS[group]) | interpolated_keys(group, node)
    unread = sorted(str(key) for key in node if str(key) not in known)
    if not unread:
        return
    key = unread[0]
    close = difflib.get_close_matches(key, FILE_KEYS[group], n=1, cutoff=0.6)
    if close:
        fix = f"did you mean '{close[0]}'?"
    elif group == "method":
        fix = f"a hyperparameter goes under estimator: (method.{key}=V on the command line)"
    else:
        fix = f"a {group}'s keys are: {', '.join(FILE_KEYS[group])}"
    raise UserError(f"{where}: '{key}' is not a {group} key, so nothing would read it; {fix}")


def user_config_dirs() -> list[Path]:
    """The folders ``$CLUSTERBENCH_CONFIG_DIR`` names, each of which must exist."""
    text = os.environ.get(CONFIG_DIR_ENV, "")
    folders = list(
        dict.fromkeys(Path(part).expanduser().resolve() for part in text.split(os.pathsep) if part.strip())
    )
    for folder in folders:
        if folder == CONF_DIR.resolve():
            raise UserError(
                f"{CONFIG_DIR_ENV} names conf/ itself ({folder}), which is always read; leave it out"
            )
        if not folder.is_dir():
            raise UserError(
                f"{CONFIG_DIR_ENV}: {folder} is not a folder; set it to folders of your own configs "
                f"(method/, dataset/, …), separated by '{os.pathsep}'"
            )
    return folders


def _option_files(group: str) -> dict[str, Path]:
    """Option name → its file, over conf/ and the user's folders. A name found twice is refused:
    Hydra would read conf/'s file and ignore the user's without a word."""
    files: dict[str, Path] = {}
    for folder in [CONF_DIR, *user_config_dirs()]:
        for path in sorted((folder / group).glob("*.yaml")):
            if path.stem in files:
                raise UserError(
                    f"{group} '{path.stem}' is defined twice, in {files[path.stem]} and {path}; "
                    f"rename the one in {path.parent}"
                )
            files[path.stem] = path
    return files


def options(group: str) -> list[str]:
    return sorted(_option_files(group))


def option_file(group: str, name: str) -> Path:
    """The file of option ``name`` of ``group`` (one clear line if there is none)."""
    files = _option_files(group)  # once: every load_option comes through here
    if name not in files:
        check_option(group, name)  # raises, naming the known options
    return files[name]


def option_label(group: str, name: str) -> str:
    """Where option ``name`` of ``group`` lives, as a message names it: ``conf/method/x.yaml``
    (relative to the checkout), a user's file by its whole path."""
    path = _option_files(group).get(name)
    if path is None:  # not a file (yet): where conf/ would hold it
        return f"conf/{group}/{name}.yaml"
    return str(path.relative_to(CONF_DIR.parent)) if path.is_relative_to(CONF_DIR.parent) else str(path)


def search_path_overrides() -> list[str]:
    """The override that adds the user's config folders to Hydra's search path (after conf/)."""
    folders = user_config_dirs()
    if not folders:
        return []
    # Quoted for Hydra's grammar (a path may hold spaces or commas), which unescapes only a
    # backslash before a quote; appended after conf/.
    quoted = [str(folder).replace("'", "\\'") for folder in folders]
    return ["hydra.searchpath=[" + ",".join(f"'file://{path}'" for path in quoted) + "]"]


def compose_config(overrides: list[str], return_hydra_config: bool = False) -> DictConfig:
    """The config ``clusterbench run`` composes from ``overrides``, outside the app."""
    from hydra import compose, initialize_config_dir

    overrides = [*overrides, *search_path_overrides()]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("config", overrides=overrides, return_hydra_config=return_hydra_config)


def check_option(group: str, name: str) -> None:
    """Raise a one-line error listing the known names when ``name`` is not an option of ``group``."""
    known = options(group)
    if name not in known:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        guess = f"did you mean '{close[0]}'? " if close else ""
        own = f" (or your own {group}/{name}.yaml in a folder ${CONFIG_DIR_ENV} names)" if not close else ""
        raise UserError(f"unknown {group} '{name}'; {guess}known {group} options: {', '.join(known)}{own}")


def load_option(group: str, name: str) -> DictConfig:
    """The raw YAML of one option (interpolations left unresolved)."""
    return OmegaConf.load(option_file(group, name))


def dataset_spec(name: str, experiment: str | None = None) -> DictConfig:
    """Dataset ``name``'s config as ``experiment`` prepares it: with the experiment's
    ``dataset_overrides`` for it (e.g. CLAM's 60k FMNIST training split) merged in, as a run of
    that experiment merges them."""
    spec = load_option("dataset", name)
    if experiment is None:
        return spec
    overrides = (load_option("experiment", experiment).get("dataset_overrides") or {}).get(name)
    return OmegaConf.merge(spec, overrides) if overrides else spec


def check_in_cache(datasets: list[str], sweep: bool = False) -> None:
    """Fail before any work, naming every dataset a command would need that no data folder holds
    (``clusterbench data where``: ``$CLUSTERBENCH_DATA``, the user cache, the bundled copies) and
    that cannot be downloaded (no OpenML id), with the file each reads, instead of stopping at the
    first; the last fix offered is to sweep without them (``sweep``, when others remain) or to
    choose another."""
    from clusterbench.data.sources import find_npz, import_only, searched_folders

    missing = []
    for name in datasets:
        source = OmegaConf.select(load_option("dataset", name), "source")  # None: the runner says so
        if import_only(source) and find_npz(source.name) is None:
            missing.append(f"{name} ({source.name}.npz)")
    if missing:
        them = "it" if len(missing) == 1 else "them"
        others_remain = sweep and len(missing) < len(datasets)
        instead = (
            f"sweep without {them} (dataset=...)"
            if others_remain
            else "choose another dataset (dataset=NAME)"
        )
        raise UserError(
            f"not in the data cache or the bundled copies ({searched_folders()}) and with no OpenML "
            f"source: {', '.join(missing)}; put {them} in a folder and run `clusterbench data import "
            f"FOLDER`, set CLUSTERBENCH_DATA, or {instead}"
        )


@cache
def method_names() -> list[str]:
    """The names records and tables give the methods: each file's ``name``, else that of the
    method it extends (its ``defaults``), else the file's own. Read once per process."""
    return sorted({file.name for file in method_files().values()})


@cache
def dataset_names() -> list[str]:
    """The names records give the datasets (:func:`dataset_record_names`). Read once per process:
    a sweep checks every job's keyed maps against them (a finished 600-job kcprime_tableS1 took
    107 s to resume when every job read the 35 files again, 27.5 s since)."""
    return sorted(set(dataset_record_names().values()))


def dataset_record_names() -> dict[str, str]:
    """The name each dataset option's records carry: its file's ``name``, else that of the dataset
    it extends (its ``defaults``), else the file's own."""
    files, known = _option_files("dataset"), {}
    return {option: _dataset_name(option, files, known) for option in files}


def _dataset_name(
    option: str, files: dict[str, Path], known: dict[str, str], visiting: tuple[str, ...] = ()
) -> str:
    if option not in known:
        spec = _file_spec("dataset", option, files, visiting)
        parent = _extended(spec, files)
        inherited = _dataset_name(parent, files, known, (*visiting, option)) if parent else option
        known[option] = spec.get("name") or inherited
    return known[option]


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_UNSET = object()  # a key the file does not give


class MethodFile(NamedTuple):
    """What a method file's records carry (``name``, ``variant``) and the estimator it builds
    (``target``, its ``estimator._target_``): each the file's own, else inherited from the method
    it extends (its ``defaults``), else the file's name, ``default`` and None."""

    name: str
    variant: object
    target: str | None


def method_files() -> dict[str, MethodFile]:
    """Every method option's :class:`MethodFile`, the files listed once."""
    files, known = _option_files("method"), {}
    return {option: _method_file(option, files, known) for option in files}


def _method_file(
    option: str, files: dict[str, Path], known: dict[str, MethodFile], visiting: tuple[str, ...] = ()
) -> MethodFile:
    """:class:`MethodFile` of ``option``; ``files``: the method options' files, ``known`` memoises
    them. A file that is not a mapping, or extends itself, is named."""
    if option in known:
        return known[option]
    spec = _file_spec("method", option, files, visiting)
    estimator = spec.get("estimator")
    own = MethodFile(
        spec.get("name") or _UNSET,
        spec.get("variant", _UNSET),
        estimator.get("_target_", _UNSET) if isinstance(estimator, dict) else _UNSET,
    )
    if _UNSET in own:
        parent = _extended(spec, files)
        inherited = (
            _method_file(parent, files, known, (*visiting, option))
            if parent
            else MethodFile(option, "default", None)
        )
        own = MethodFile(
            *(mine if mine is not _UNSET else theirs for mine, theirs in zip(own, inherited, strict=True))
        )
    known[option] = own
    return own


def _file_spec(group: str, option: str, files: dict[str, Path], visiting: tuple[str, ...]) -> dict:
    """The mapping option ``option``'s file of ``group`` holds, read to follow its ``defaults``
    (``visiting``: the options that extend it, so far); a file that is not a mapping, or extends
    itself, is named."""
    if option in visiting:
        raise UserError(
            f"{option_label(group, option)}: its defaults extend it again "
            f"({' -> '.join([*visiting, option])}); remove the loop"
        )
    try:
        # The few keys needed, by libyaml: OmegaConf's reader takes 15x as long, and a check of
        # the method and dataset files runs before each command (7 ms a file against 0.5 ms).
        spec = yaml.load(files[option].read_text(), Loader=_YAML_LOADER)
    except yaml.YAMLError as exc:
        raise UserError(
            f"{option_label(group, option)} is not valid YAML ({first_line(exc)}); fix it or move it away"
        ) from None
    spec = {} if spec is None else spec
    if not isinstance(spec, dict):
        raise UserError(
            f"{option_label(group, option)} holds a {type(spec).__name__}, not a mapping of keys; "
            "fix it or move it away"
        )
    return spec


def _extended(spec: dict, files: dict[str, Path]) -> str | None:
    """The option of the group that a file's ``defaults`` extend first (one of ``files``), or None."""
    return next(
        (entry for entry in spec.get("defaults") or [] if isinstance(entry, str) and entry in files), None
    )


def estimator_parameters(target: str | None) -> set[str] | None:
    """The ``__init__`` arguments of the estimator class ``target`` names (a method file's); None
    where there is none or it cannot be imported (the run itself names why)."""
    try:
        estimator = None if target is None else locate(target)
    except ImportError:
        return None
    if not isinstance(estimator, type):
        return None
    return set(inspect.signature(estimator.__init__).parameters) - {"self"}


def check_distinct(group: str, chosen: list[str]) -> None:
    """Refuse a chosen method or dataset file whose records would carry another file's name (a
    method's, its name and variant): a copy of ``kmeans.yaml`` or ``iris.yaml`` whose ``name`` was
    left. Its records would lie in the other's folders, where summaries and tables would mix the
    two (a point and seed count once there, :mod:`clusterbench.runs`, so one file's runs could
    hide the other's). The file copied from, chosen alone, runs: the copy is the one to rename."""
    if group == "method":
        identities = {
            option: {"name": file.name, "variant": file.variant} for option, file in method_files().items()
        }
    else:
        identities = {option: {"name": name} for option, name in dataset_record_names().items()}
    for option in chosen:
        identity = identities[option]
        twins = [other for other, theirs in identities.items() if other != option and theirs == identity]
        if twins and option != identity["name"]:
            source = next((twin for twin in twins if twin == identity["name"]), twins[0])
            recorded = ", ".join(f"{key}={value}" for key, value in identity.items())
            raise UserError(
                f"{group} '{option}' records as {recorded}, as {option_label(group, source)} does, so their "
                f"results would mix; give {option_label(group, option)} a name of its own (name: {option})"
            )


def check_source(dataset: DictConfig, option: str | None = None) -> None:
    """A dataset's ``source`` names a function that takes exactly the arguments it gives: an
    argument left over from another source (``loader`` after ``source._target_`` was replaced,
    say) is a one-line error before any data loads, not a TypeError from inside the call.
    ``option``: the dataset's file, which names it where the file gives no ``name``."""
    import inspect

    source = dataset.get("source")
    target = source.get("_target_") if isinstance(source, DictConfig) else None
    if not target:
        return  # the runner's required-keys check names it
    name = dataset.get("name") or option
    try:
        function = locate(target)
        signature = inspect.signature(function)
    except (ImportError, TypeError, ValueError) as exc:
        raise UserError(
            f"dataset '{name}': its source {target} is not an importable function ({first_line(exc)}); "
            "fix dataset.source._target_ (e.g. clusterbench.data.sources.cached)"
        ) from None
    given = [str(key) for key in source if key != "_target_"]
    try:
        signature.bind(**dict.fromkeys(given))
    except TypeError as exc:
        accepted = ", ".join(signature.parameters) or "none"
        stray = [key for key in given if key not in signature.parameters]
        fix = f"remove it (~dataset.source.{stray[0]})" if stray else "give it (+dataset.source.NAME=…)"
        raise UserError(
            f"dataset '{name}': source {target} {first_line(exc).removeprefix(function.__name__ + '() ')}; "
            f"its arguments are: {accepted}; {fix}, or describe the dataset in a file of its own "
            "(docs/extending.md)"
        ) from None


def locate(target: str):
    """The object a config's ``_target_`` names, found exactly as Hydra's ``instantiate`` finds it.

    Unlike Hydra's ``get_class``/``get_method``, a failure logs nothing: it raises one ImportError
    whose message is the underlying cause (``ModuleNotFoundError: No module named 'x'``).
    """
    from hydra._internal.utils import _locate  # what get_class, get_method and instantiate call

    try:
        return _locate(str(target))
    except (ImportError, ValueError) as exc:
        cause = exc.__cause__ or exc
        if isinstance(cause, ModuleNotFoundError) and cause.name == str(target) and "." in str(target):
            module, _, name = str(target).rpartition(".")
            raise ImportError(f"module '{module}' has no attribute '{name}'") from None
        # ``name``: the module not found, as Python's ModuleNotFoundError gives it (else None)
        missing = cause.name if isinstance(cause, ModuleNotFoundError) else None
        raise ImportError(f"{type(cause).__name__}: {first_line(cause)}", name=missing) from None
