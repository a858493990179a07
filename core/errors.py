"""One exception family for every mistake a user can make, and how its messages quote a user's
values (:func:`quote`: short, whatever the value).

The CLI prints a :class:`BitextforgeError` as one line and exits non-zero; any other exception is a
bug and keeps its traceback (explosion/confection and sacrebleu do the same).
"""

from __future__ import annotations

import reprlib
from typing import Any


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


#: the longest quote of a user's value in an error message, in characters
QUOTE_LIMIT = 80

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = _REPR.maxother = QUOTE_LIMIT + 20
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6


def quote(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` for an error message, cut to ``limit`` characters with an ellipsis and the
    value's length when longer (a string's characters, a container's items). Never builds the
    whole ``repr`` of a large value, so quoting a huge nested value costs next to nothing."""
    if isinstance(value, str):
        text = repr(value)
        if len(text) <= limit:
            return text
        return f"{repr(value[:limit])[:limit]}… ({len(value):,} characters)"
    text = _REPR.repr(value)
    sized = isinstance(value, (list, tuple, dict, set))
    if len(text) <= limit and not (sized and "..." in text):
        return text
    size = f" ({type(value).__name__} of {len(value):,} items)" if sized else ""
    return f"{text[:limit]}…{size}"


def clip(text: str, limit: int = 300) -> str:
    """``text`` (a message that may embed a value) cut to ``limit`` characters with an ellipsis."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"
