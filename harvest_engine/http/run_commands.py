"""The routes that act on runs: start, signal, query, update, cancel, terminate.

A start's body members are `StartOptions`' fields, read from the dataclass
(its docstring describes them), so an option the runtime gains is a member
here at once and in the OpenAPI document.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re
import types
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from harvest_engine.calls import StartOptions
from harvest_engine.http.table import Endpoint, Field
from harvest_engine.http.views import json_response

if TYPE_CHECKING:
    from harvest_engine.http.table import Call

ANY: dict[str, Any] = {}
TEXT: dict[str, Any] = {"type": "string"}


def _option_schema(hint: Any) -> dict[str, Any]:
    """A JSON schema for an option's type: text, number, object, an enum's names, or any."""
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    kinds = (
        [a for a in typing.get_args(hint) if a is not type(None)] if union else [hint]
    )
    if len(kinds) != 1:  # a Duration is text or a number: any JSON, checked by the call
        return dict(ANY)
    (kind,) = kinds
    origin = typing.get_origin(kind) or kind
    if isinstance(origin, type) and issubclass(origin, enum.Enum):
        return {"type": "string", "enum": [m.name for m in origin]}
    if isinstance(origin, type) and issubclass(origin, Mapping):
        return {"type": "object"}
    simple = {str: "string", int: "integer", bool: "boolean", float: "number"}
    return {"type": simple[kind]} if kind in simple else dict(ANY)


def _attribute_docs(cls: type) -> dict[str, str]:
    """The ``Attributes:`` lines of a class docstring, by name (continuations joined)."""
    doc = inspect.getdoc(cls) or ""
    section = doc.partition("Attributes:")[2]
    found: dict[str, str] = {}
    name = ""
    for line in section.splitlines():
        head = re.match(r"^    (\w+): (.*)$", line)
        if head:
            name = head.group(1)
            found[name] = head.group(2).strip()
        elif line.startswith("        ") and name:
            found[name] += " " + line.strip()
        elif line.strip():
            break
    return found


def _start_fields() -> tuple[Field, ...]:
    hints = typing.get_type_hints(StartOptions)
    docs = _attribute_docs(StartOptions)
    options = tuple(
        Field(f.name, _option_schema(hints[f.name]), docs.get(f.name, f.name))
        for f in dataclasses.fields(StartOptions)
    )
    return (
        Field("workflow", TEXT, "the registered workflow's name", required=True),
        Field("input", ANY, "the start input (any JSON, within the payload caps)"),
        *options,
    )


START_FIELDS = _start_fields()


async def start(call: Call) -> Any:
    """Start a run with the options of `StartOptions`; the run and whether it is new.

    201 for a new run; 200 when the start attached to the RUNNING run of its
    workflow id (the reuse policy's matrix).
    """
    body = dict(call.body)
    name = body.pop("workflow")
    input_ = body.pop("input", None)
    outcome = await call.target.start(name, input_, StartOptions(**body))
    found = {"exec_id": str(outcome.exec_id), "started_fresh": outcome.started_fresh}
    # 201 for a new run; 200 when the call attached to the RUNNING run of the id.
    return json_response(found, 201 if outcome.started_fresh else 200)


async def signal(call: Call) -> Any:
    """Stage a signal; with a `key`, once per key (`delivered` false when it was held)."""
    name, payload = call.path["name"], call.body.get("payload")
    key = call.body.get("key")
    if key:
        delivered = await call.target.signal_keyed(call.exec_id, name, payload, key)
        return {"delivered": delivered}
    await call.target.signal(call.exec_id, name, payload)
    return {"delivered": True}


async def query(call: Call) -> Any:
    """Answer a query at the run's frontier (writes nothing to the run)."""
    found = await call.target.query(
        call.exec_id, call.path["name"], call.body.get("arg")
    )
    return {"result": found}


async def update(call: Call) -> Any:
    """Run an update: validated, recorded with its result."""
    found = await call.target.update(
        call.exec_id, call.path["name"], call.body.get("arg")
    )
    return {"result": found}


async def cancel(call: Call) -> Any:
    """Request a cooperative cancel (the run ends CANCELLED once its body has cleaned up)."""
    await call.target.cancel(call.exec_id, call.body.get("reason", ""))
    return {"exec_id": call.exec_id, "cancel_requested": True}


async def terminate(call: Call) -> Any:
    """End the run TERMINATED at once."""
    await call.target.terminate(call.exec_id, call.body.get("reason", ""))
    return {"exec_id": call.exec_id, "terminated": True}


_RUN = "/runs/{exec_id}"
_REASON = (Field("reason", TEXT, "why, kept with the run"),)

ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        "POST",
        "/runs",
        "Start a run",
        start,
        "runs",
        write=True,
        body=START_FIELDS,
        status=201,
    ),
    Endpoint(
        "POST",
        f"{_RUN}/signals/{{name}}",
        "Signal a run",
        signal,
        "runs",
        write=True,
        body=(
            Field("payload", ANY, "the signal's payload"),
            Field("key", TEXT, "an idempotency key: a repeat with it stages nothing"),
        ),
    ),
    # A query writes nothing to the run, so a read-only app answers it.
    Endpoint(
        "POST",
        f"{_RUN}/queries/{{name}}",
        "Query a run",
        query,
        "runs",
        body=(Field("arg", ANY, "the query's argument"),),
    ),
    Endpoint(
        "POST",
        f"{_RUN}/updates/{{name}}",
        "Update a run",
        update,
        "runs",
        write=True,
        body=(Field("arg", ANY, "the update's argument"),),
    ),
    Endpoint(
        "POST",
        f"{_RUN}/cancel",
        "Cancel a run",
        cancel,
        "runs",
        write=True,
        body=_REASON,
        status=202,
    ),
    Endpoint(
        "POST",
        f"{_RUN}/terminate",
        "Terminate a run",
        terminate,
        "runs",
        write=True,
        body=_REASON,
    ),
)
