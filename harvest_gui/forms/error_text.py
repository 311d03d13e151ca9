"""Engine errors in words for a form: a title and the message, never a traceback."""

from __future__ import annotations

import re

from harvest_engine import HarvestError, HarvestInternalError


def error_title(exc: BaseException) -> str:
    """``WorkflowAlreadyStarted`` → ``Workflow already started``."""
    name = type(exc).__name__
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).split(" ")
    return " ".join([words[0], *(w.lower() for w in words[1:])])


def describe_error(exc: BaseException) -> str:
    """One or two lines for the form's error label.

    Engine errors carry a message built from their fields; a broken
    invariant asks for a report; other errors (ValueError, TypeError from
    argument checks) are shown by their message.
    """
    message = str(exc) or error_title(exc)
    if isinstance(exc, HarvestInternalError):
        return f"Internal error — please report it: {message}"
    if isinstance(exc, HarvestError):
        return f"{error_title(exc)}: {message}"
    if isinstance(exc, (ValueError, TypeError, KeyError, LookupError)):
        return message.strip("'\"")
    return f"{error_title(exc)}: {message}"
