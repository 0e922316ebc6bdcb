"""What the config tree offers: the option names of each group, read straight from ``conf/``.

The config groups are the registry (``_target_`` + ``hydra.utils.instantiate``); nothing here
duplicates them.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from clusterbench.errors import UserError

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
GROUPS = ("dataset", "method", "metrics", "profile", "experiment", "table")


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def check_option(group: str, name: str) -> None:
    """Raise a one-line error listing the known names when ``name`` is not an option of ``group``."""
    known = options(group)
    if name not in known:
        raise UserError(f"unknown {group} '{name}'; known {group} options: {', '.join(known)}")


def load_option(group: str, name: str) -> DictConfig:
    """The raw YAML of one option (interpolations left unresolved)."""
    check_option(group, name)
    return OmegaConf.load(CONF_DIR / group / f"{name}.yaml")


def locate(target: str):
    """The object a config's ``_target_`` names: a dotted path whose longest importable prefix is
    a module and the rest attributes (``package.module.Class``, ``module.Class.method``).

    Unlike Hydra's ``get_class``/``get_method``, a failure logs nothing: it raises ImportError or
    AttributeError, for the caller to turn into one line.
    """
    parts = str(target).split(".")
    if len(parts) < 2 or not all(parts):
        raise ImportError(f"{target!r} is not a dotted path such as package.module.name")
    for split in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:split])
        try:
            found = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module.startswith(exc.name):
                raise  # the module exists but imports something missing
            continue
        for attribute in parts[split:]:
            found = getattr(found, attribute)
        return found
    raise ImportError(f"no module named {parts[0]!r}")
