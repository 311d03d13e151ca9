"""A client process: run one scripted conversation, or flood the queue, then print JSON.

client_worker.py DB session NAME   start a session, talk to it, print what came back
client_worker.py DB call KIND ARGS_JSON [TIMEOUT]   one command; its result or error
client_worker.py DB flood N   queue N greet starts without waiting for replies
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

from harvest_engine import CommandTimedOut, HarvestClient, HarvestError


def error_json(exc: HarvestError) -> dict[str, Any]:
    """A typed error as the test reads it: its class and structured fields."""
    return {
        "error": type(exc).__name__,
        "fields": json.loads(json.dumps(exc._fields, default=str)),
    }


async def session(client: HarvestClient, name: str) -> dict[str, Any]:
    """Start a session, signal it, query and update it, end it and await its result."""
    exec_id = await client.start_workflow("session", name)
    await client.send_signal(exec_id, "say", "hi")
    await client.send_signal(exec_id, "say", "there")
    label = await client.update(exec_id, "label", "first")
    try:
        await client.update(exec_id, "label", "")
        rejected = None
    except HarvestError as exc:
        rejected = type(exc).__name__
    lines = await client.query(exec_id, "lines")
    await client.send_signal(exec_id, "say", "bye")
    outcome = await client.result(exec_id, timeout="20s")
    return {
        "exec_id": str(exec_id),
        "label": label,
        "rejected": rejected,
        "lines": lines,
        "output": getattr(outcome, "output", None),
    }


async def call(client: HarvestClient, kind: str, args: Any, wait: str) -> Any:
    """One client command by name, with positional arguments."""
    try:
        result = await getattr(client, kind)(*args, timeout=wait)
    except CommandTimedOut as exc:
        return {"timed_out": exc.command_id}
    except HarvestError as exc:
        return error_json(exc)
    return {"result": str(result) if kind.startswith("start") else result}


async def flood(client: HarvestClient, count: int) -> dict[str, Any]:
    """Queue `count` starts, each given up on at once (they stay queued)."""
    for i in range(count):
        with contextlib.suppress(CommandTimedOut):
            await client.start_workflow("greet", i, timeout=0)
        print(i, flush=True)
    return {"queued": count}


async def main() -> None:
    """Dispatch on the mode."""
    path, mode, *rest = sys.argv[1:]
    with HarvestClient.open(path) as client:
        if mode == "session":
            out: Any = await session(client, rest[0])
        elif mode == "call":
            timeout = rest[2] if len(rest) > 2 else "10s"
            out = await call(client, rest[0], json.loads(rest[1]), timeout)
        else:
            out = await flood(client, int(rest[0]))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
