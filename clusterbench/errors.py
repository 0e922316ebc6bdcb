"""Errors a user can fix. The CLI prints them as one line and exits 2, without a traceback."""

# What the command line says when Ctrl-C stops it, at any moment (exit status 130).
INTERRUPTED = "\nclusterbench: interrupted; finished points are kept (rerun without force=true to resume)"


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a scheduler's stop), raised in the main thread so that it ends a run as a
    Ctrl-C does: finished points kept, the run's notes read and removed, one line, exit 143."""


class UserError(Exception):
    """A problem with the user's request (names, hyperparameters, data), stated with its fix."""


class HyperparameterError(UserError, ValueError):
    """An invalid hyperparameter value; the message names the parameter and the allowed range.
    ``parameter``, where given, lets the runner add where a run sets it (its override)."""

    def __init__(self, message: str, parameter: str | None = None):
        super().__init__(message)
        self.parameter = parameter


def is_invalid_parameter(exc: BaseException) -> bool:
    """True for our own HyperparameterError and for scikit-learn's parameter validation errors.

    scikit-learn raises ``InvalidParameterError`` from a private module, so it is matched by name
    rather than imported.
    """
    return isinstance(exc, HyperparameterError) or any(
        cls.__name__ == "InvalidParameterError" for cls in type(exc).__mro__
    )


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, without its final period (its type if empty):
    how a library's error becomes part of one error line."""
    text = str(exc).strip()
    return text.splitlines()[0].rstrip(".") if text else type(exc).__name__
