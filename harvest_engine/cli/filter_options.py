"""The filter options `harvest runs` lists by, shared with the bulk commands (cancel-many, ...)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from harvest_engine import payloads
from harvest_engine.timestamps import from_text

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.filters import ExecutionFilter

F = TypeVar("F", bound=Callable[..., Any])

_OPTIONS = (
    click.option("--workflow", "workflow_name", help="Only runs of this workflow."),
    click.option(
        "--state", "states", multiple=True, help="Only runs in this state (repeatable)."
    ),
    click.option("--workflow-id", help="Only runs with exactly this workflow id."),
    click.option("--id-prefix", help="Only runs whose workflow id starts with this."),
    click.option("--after", help="Started at or after this ISO-8601 time."),
    click.option("--before", help="Started before this ISO-8601 time."),
    click.option(
        "--attr",
        "attrs",
        multiple=True,
        help="Search attribute KEY=VALUE (repeatable).",
    ),
    click.option(
        "--paused/--not-paused",
        "paused",
        default=None,
        help="Only paused runs (or only runs that are not).",
    ),
)
NAMES = (
    "workflow_name",
    "states",
    "workflow_id",
    "id_prefix",
    "after",
    "before",
    "attrs",
    "paused",
)
"""The keyword arguments the options give the command (`build` takes them)."""


def filter_options(fn: F) -> F:
    """Add the filter options to a command (in the order `harvest runs --help` shows)."""
    for option in reversed(_OPTIONS):
        fn = option(fn)
    return fn


def build(flt: ExecutionFilter, **given: Any) -> ExecutionFilter:
    """`flt` narrowed by the filter options' values (`NAMES`)."""
    if given.get("workflow_name") is not None:
        flt = flt.workflow_name(given["workflow_name"])
    if given.get("states"):
        flt = flt.state(*(s.upper() for s in given["states"]))
    if given.get("workflow_id") is not None:
        flt = flt.workflow_id(given["workflow_id"])
    if given.get("id_prefix") is not None:
        flt = flt.workflow_id_prefix(given["id_prefix"])
    started_from = _time_option(given.get("after"), "--after")
    if started_from is not None:
        flt = flt.started_after(started_from)
    started_until = _time_option(given.get("before"), "--before")
    if started_until is not None:
        flt = flt.started_before(started_until)
    for text in given.get("attrs") or ():
        flt = flt.search_attribute(*_attr(text))
    if given.get("paused") is not None:
        flt = flt.paused(bool(given["paused"]))
    return flt


def _attr(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise click.BadParameter(f"{text!r}: use KEY=VALUE", param_hint="--attr")
    try:
        value = payloads.loads(raw)
    except ValueError:
        value = raw
    return key, value


def _time_option(text: str | None, what: str) -> datetime | None:
    if text is None:
        return None
    try:
        return from_text(text)
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not an ISO-8601 time", param_hint=what
        ) from None
