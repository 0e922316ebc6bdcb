"""The README's first screen ends in one block of commands that work on a fresh offline clone
(fresh-clone CI runs them whole; here each is checked without fitting)."""

from __future__ import annotations

import re
import shlex

import pytest

from clusterbench.catalog import load_option, options
from clusterbench.cli import COMMANDS
from clusterbench.data.sources import find_npz
from clusterbench.overrides import check_overrides, rewrite_overrides
from tests.helpers import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
FIRST_SCREEN = 30  # lines


def first_block() -> tuple[int, list[str]]:
    """(the line the first code block closes on, its commands without their comments)."""
    lines = README.splitlines()
    start = lines.index("```bash")
    end = lines.index("```", start + 1)
    commands = [re.sub(r"\s+#.*$", "", line).strip() for line in lines[start + 1 : end]]
    return end + 1, [command for command in commands if command]


def test_the_first_screen_ends_in_the_commands():
    closes, commands = first_block()
    assert closes <= FIRST_SCREEN, f"the first code block closes on line {closes}"
    assert commands[0].startswith("python3 -m venv .venv") and "make install" in commands
    assert commands[-1] == "make test"
    for command in commands:
        words = shlex.split(command)
        if words[0] == "clusterbench":
            assert words[1] in COMMANDS, command
        if words[:2] == ["clusterbench", "table"]:
            assert set(words[2:]) <= set(options("table")), command


def test_the_readme_runs_need_no_data_folder_and_no_environment(tmp_path, monkeypatch):
    """With no CLUSTERBENCH_DATA and an empty home (no user cache), every run of the block passes
    the checks made before any fit: its datasets ship with the package, its overrides are read."""
    monkeypatch.delenv("CLUSTERBENCH_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    commands = first_block()[1]
    runs = [shlex.split(command)[2:] for command in commands if command.startswith("clusterbench run")]
    assert len(runs) >= 2
    for words in runs:
        check_overrides(rewrite_overrides([*words, f"results_dir={tmp_path / 'results'}"]))
        # Held, not fetched: a dataset with an OpenML id passes the check above, and then needs
        # the network.
        for word in words:
            if word.startswith("dataset="):
                for name in word.removeprefix("dataset=").split(","):
                    source = load_option("dataset", name).source
                    assert find_npz(source.name) is not None, f"{name} is not bundled"


@pytest.mark.parametrize("page", sorted(re.findall(r"\]\((docs/[^)#]+)", README)))
def test_every_docs_link_of_the_readme_resolves(page):
    assert (REPO / page).is_file(), page
