"""--app module for the signal form: a signal read as a dataclass, one as a handler, one untyped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harvest_engine import WorkflowContext, workflow


@dataclass
class Approval:
    """A typed signal payload: the form offers one field per attribute."""

    approved: bool = True
    by: str = "ops"


@dataclass
class Note:
    """A signal handler's payload type."""

    text: str


def on_note(note: Note) -> None:
    """A module-level signal handler (its annotation types the form)."""


@workflow
async def approval_flow(ctx: WorkflowContext, _: Any = None) -> Any:
    """Takes notes, waits for "go" (untyped), then for "approve" (an Approval)."""
    ctx.register_signal_handler("note", on_note)
    first = await ctx.wait_for_signal("go")
    decision = await ctx.receive_signal("approve", Approval)
    return {"go": first, "approved": decision.approved, "by": decision.by}


WORKFLOWS = [approval_flow]
