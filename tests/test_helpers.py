"""``tests.helpers.in_process`` against the fresh process it stands in for: most command-line tests
run in the pytest process and trust it to give what ``python`` would (exit status, both streams,
warnings, log records)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import in_process

PROGRAMS = {
    "streams": "import sys; print('out'); print('err', file=sys.stderr)",
    "file descriptors": "import os; os.write(1, b'one\\n'); os.write(2, b'two\\n')",
    "exit 256": "import sys; sys.exit(256)",
    "exit with a message": "import sys; sys.exit('bye')",
    "an error": "raise ValueError('boom')",
    "ctrl-c": "raise KeyboardInterrupt",
    "a warning": "import warnings; warnings.warn('careful')",
    "a deprecation in __main__": "import warnings; warnings.warn('old', DeprecationWarning)",
    "a log record": "import logging; log = logging.getLogger('x'); log.warning('logged'); log.info('quiet')",
}


def fresh_and_in_process(code: str, monkeypatch, python_warnings: str | None):
    if python_warnings is None:
        monkeypatch.delenv("PYTHONWARNINGS", raising=False)
    else:
        monkeypatch.setenv("PYTHONWARNINGS", python_warnings)
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    here = in_process(lambda: exec(compile(code, "<string>", "exec"), {"__name__": "__main__"}), ["-c", code])
    return fresh, here


def assert_same(fresh, here):
    assert here.returncode == fresh.returncode
    assert here.stdout == fresh.stdout
    if "Traceback" in fresh.stderr:  # the frames differ (the helper's own), the error line does not
        assert "Traceback" in here.stderr
        assert here.stderr.splitlines()[-1] == fresh.stderr.splitlines()[-1]
    else:
        assert here.stderr == fresh.stderr


@pytest.mark.parametrize("code", PROGRAMS.values(), ids=PROGRAMS.keys())
def test_in_process_gives_what_a_fresh_python_gives(code, monkeypatch):
    assert_same(*fresh_and_in_process(code, monkeypatch, None))


@pytest.mark.parametrize(
    "python_warnings, returncode",
    [("error::UserWarning", 1), ("ignore", 0), ("default,error", 1), ("error,ignore::UserWarning", 0)],
)
def test_in_process_honours_python_warnings_as_a_fresh_python(python_warnings, returncode, monkeypatch):
    """$PYTHONWARNINGS reaches a subprocess; in the pytest process it must act the same (the later
    option wins)."""
    fresh, here = fresh_and_in_process(PROGRAMS["a warning"], monkeypatch, python_warnings)
    assert fresh.returncode == returncode
    assert_same(fresh, here)
