"""The start calls of a HarvestClient: each one command, applied once by the serving process.

A mixin of `HarvestClient` (client.py), which owns the command round trip
(`_call`); kept apart so that file holds the client's life cycle, its other
commands and its reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.client import requests
from harvest_engine.client.round_trip import CommandRoundTrip
from harvest_engine.store.sqlite.faults import guard_public_methods

if TYPE_CHECKING:
    from harvest_engine.calls import (
        SignalWithStart,
        SignalWithStartOutcome,
        StartOptions,
        StartOutcome,
        UpdateWithStart,
        UpdateWithStartOutcome,
        WorkflowIdReusePolicy,
    )
    from harvest_engine.durations import Duration
    from harvest_engine.states import ExecutionId

DEFAULT_TIMEOUT = "10s"


@guard_public_methods()
class StartCalls(CommandRoundTrip):
    """Start a run, with an id, a reuse policy, options, or with a signal or an update."""

    async def start_workflow(
        self,
        name: str,
        input: Any = None,
        *,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - API.md's contract
        command_id: str | None = None,
    ) -> ExecutionId:
        """Start a fresh run of workflow `name`; its id."""
        args = requests.start(name, input)
        result: ExecutionId = await self._call(args, timeout, command_id)
        return result

    async def start_workflow_with_id(
        self,
        name: str,
        workflow_id: str,
        input: Any = None,
        *,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - API.md's contract
        command_id: str | None = None,
    ) -> ExecutionId:
        """Start with a business id, attaching to a RUNNING run of the same name and id."""
        args = requests.start_with_id(name, workflow_id, input)
        result: ExecutionId = await self._call(args, timeout, command_id)
        return result

    async def start_workflow_with_reuse_policy(
        self,
        name: str,
        workflow_id: str,
        input: Any,
        policy: WorkflowIdReusePolicy | str,
        *,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - API.md's contract
        command_id: str | None = None,
    ) -> StartOutcome:
        """Start under a workflow-id reuse policy (the runtime's matrix)."""
        args = requests.start_with_policy(name, workflow_id, input, policy)
        result: StartOutcome = await self._call(args, timeout, command_id)
        return result

    async def start_workflow_with_options(
        self,
        name: str,
        input: Any,
        options: StartOptions,
        *,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - API.md's contract
        command_id: str | None = None,
    ) -> StartOutcome:
        """Start with a memo, first search attributes and a reuse policy."""
        args = requests.start_with_options(name, input, options)
        result: StartOutcome = await self._call(args, timeout, command_id)
        return result

    async def signal_with_start(
        self,
        request: SignalWithStart,
        *,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - API.md's contract
        command_id: str | None = None,
    ) -> SignalWithStartOutcome:
        """Signal the RUNNING run of the id, or start one and signal it, in one transaction."""
        args = requests.signal_with_start(request)
        result: SignalWithStartOutcome = await self._call(args, timeout, command_id)
        return result

    async def update_with_start(
        self,
        request: UpdateWithStart,
        *,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - API.md's contract
        command_id: str | None = None,
    ) -> UpdateWithStartOutcome:
        """Start (or attach to) the run of the id and run an update on it, together."""
        args = requests.update_with_start(request)
        result: UpdateWithStartOutcome = await self._call(args, timeout, command_id)
        return result
