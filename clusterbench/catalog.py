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
    """The object a config's ``_target_`` names (``package.module.name``).

    Unlike Hydra's ``get_class``/``get_method``, a failure logs nothing: it raises ImportError,
    AttributeError or ValueError, for the caller to turn into one line.
    """
    module, _, name = str(target).rpartition(".")
    return getattr(importlib.import_module(module), name)
