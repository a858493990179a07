"""One exception family for every mistake a user can make.

The CLI prints a :class:`BitextforgeError` as one line and exits non-zero; any other exception is a
bug and keeps its traceback (explosion/confection and sacrebleu do the same).
"""

from __future__ import annotations


class BitextforgeError(Exception):
    """A user-facing error: bad recipe, bad input, missing model. Printed without a traceback."""

    exit_code = 2


class RecipeError(BitextforgeError):
    """The recipe is invalid; the message names the file and key path."""


class InputError(BitextforgeError):
    """An input corpus is unreadable or inconsistent; the message names the file and line."""


class RegistryError(BitextforgeError):
    """A plugin or component name is wrong, duplicated or unknown."""


class ComponentError(BitextforgeError):
    """A component cannot run (missing model file, missing external tool, ...)."""


class StepError(ComponentError):
    """A component raised an exception while processing rows; the message names the step and the
    rows, and the original exception (with its traceback) is the ``__cause__``."""


def check_message(err: dict) -> str:
    """The message of one pydantic error as a user reads it: pydantic wraps the ValueError of our
    own validators as "Value error, ...", which says nothing to someone fixing a recipe."""
    return err["msg"].removeprefix("Value error, ")
