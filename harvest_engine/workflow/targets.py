"""What a durable call names: an activity or workflow (function, info or name) with its result type.

Workflow code passes an @activity / @workflow function, its info or a
plain name; the context records the name and converts the JSON result to
the declared return type. An activity's answer is cached per function, as
every `execute_activity` asks.
"""

from __future__ import annotations

import functools
import typing
from typing import Any

from harvest_engine import payloads
from harvest_engine.authoring import ActivityInfo, WorkflowInfo
from harvest_engine.names import check_name


def checked_value(value: Any, what: str) -> Any:
    """`value` as JSON, checked against the payload caps (`what` names it in the error)."""
    return payloads.checked(value, what)[0]


def activity_target(activity: Any) -> tuple[str, Any]:
    """The activity's name and result type; worked out once per activity (every call asks)."""
    try:
        return _known_activity_target(activity)
    except TypeError:  # unhashable, or not an activity: the plain path says which
        return _find_activity_target(activity)


@functools.lru_cache(maxsize=1024)
def _known_activity_target(activity: Any) -> tuple[str, Any]:
    return _find_activity_target(activity)


def _find_activity_target(activity: Any) -> tuple[str, Any]:
    if isinstance(activity, str):
        return check_name(activity, "activity name"), None
    info = (
        activity
        if isinstance(activity, ActivityInfo)
        else getattr(activity, "info", None)
    )
    if not isinstance(info, ActivityInfo):
        raise TypeError(
            f"execute_activity needs an @activity function or a name, got {activity!r}"
        )
    return info.name, _return_type(info.fn)


@functools.lru_cache(maxsize=1024)
def _return_type(fn: Any) -> Any:
    """An activity's declared result type (None when absent or unresolvable), once per function."""
    if fn is None:
        return None
    try:
        return typing.get_type_hints(fn).get("return")
    except (NameError, TypeError):
        return None


def workflow_target(workflow: Any) -> tuple[str, Any]:
    """A child's workflow name and result type."""
    if isinstance(workflow, str):
        return check_name(workflow, "workflow name"), None
    info = (
        workflow
        if isinstance(workflow, WorkflowInfo)
        else getattr(workflow, "info", None)
    )
    if not isinstance(info, WorkflowInfo):
        raise TypeError(
            f"a child needs a @workflow function or a name, got {workflow!r}"
        )
    try:
        result_type = typing.get_type_hints(info.fn).get("return")
    except (NameError, TypeError):
        result_type = None
    return info.name, result_type
