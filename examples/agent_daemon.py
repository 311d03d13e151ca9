"""An agent daemon: one durable chat session per user, a model activity, served and talked to.

The daemon owns the file and runs everything (`await rt.serve()`); any other
process talks to it through a HarvestClient, with no lock and no workflow
code. The model here is a fake that needs no network, so the example runs
anywhere; put a real LLM call in `ask_model`.

    python examples/agent_daemon.py serve agent.db        # the daemon; Ctrl+C stops it
    python examples/agent_daemon.py send agent.db ann "hello there"
    python examples/agent_daemon.py transcript agent.db ann

Kill the daemon at any point and start it again: every session picks up
where it was, and a message sent while it was down is answered once it is up.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import uuid
from typing import Any

from harvest_engine import (
    ActivityContext,
    CommandTimedOut,
    ExecutionFilter,
    HarvestClient,
    RetryPolicy,
    SignalWithStart,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)


@activity(retry=RetryPolicy(max_attempts=3, initial_interval="200ms"))
def ask_model(ctx: ActivityContext, prompt: dict) -> str:
    """The model call (fake and offline: it answers from the prompt alone)."""
    words = prompt["message"].split()
    return f"turn {prompt['turn']}: you said {len(words)} word(s), last {words[-1]!r}"


@workflow
async def session(ctx: WorkflowContext, user: str) -> list:
    """Answer each "message" signal with the model until "/bye"; query "transcript"."""
    transcript: list[dict[str, str]] = []
    ctx.register_query("transcript", lambda: transcript)
    while True:
        message = await ctx.wait_for_signal("message")
        if message["text"] == "/bye":
            return transcript
        prompt = {"user": user, "message": message["text"], "turn": len(transcript) + 1}
        reply = await ctx.execute_activity(ask_model, prompt)
        transcript.append(
            {"id": message["id"], "user": message["text"], "agent": reply}
        )


async def serve(path: str) -> None:
    """Own the file and run every session until SIGINT or SIGTERM."""
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(session)
        rt.register_activity(ask_model)
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        print(f"serving {path} (Ctrl+C stops)", flush=True)
        await rt.serve(stop)
    print("stopped", flush=True)


async def send(path: str, user: str, text: str) -> None:
    """Send a message to the user's session (starting it), then print the reply."""
    message = {"id": uuid.uuid4().hex, "text": text}
    with HarvestClient.open(path) as client:
        try:
            sent = await client.signal_with_start(
                SignalWithStart(
                    workflow_name="session",
                    workflow_id=f"session-{user}",
                    input=user,
                    signal_name="message",
                    signal_payload=message,
                ),
                timeout="2s",
            )
        except CommandTimedOut:
            print("queued: the daemon answers once it is up")
            return
        if text == "/bye":
            outcome = await client.result(sent.exec_id, timeout="10s")
            print(f"closed after {len(getattr(outcome, 'output', []))} turn(s)")
            return
        for _ in range(200):  # the reply lands once the daemon has run the model
            transcript = await client.query(sent.exec_id, "transcript")
            replies = [
                turn["agent"] for turn in transcript if turn["id"] == message["id"]
            ]
            if replies:
                print(f"agent: {replies[0]}")
                return
            await asyncio.sleep(0.05)
        print("no reply within 10s", file=sys.stderr)


async def show_transcript(path: str, user: str) -> None:
    """Print the user's running session, turn by turn."""
    with HarvestClient.open(path) as client:
        runs = client.list_executions(
            ExecutionFilter().workflow_id(f"session-{user}").state("RUNNING")
        ).executions
        if not runs:
            print(f"no running session for {user}")
            return
        transcript: Any = await client.query(runs[0].exec_id, "transcript")
        for turn in transcript:
            print(f"{user}: {turn['user']}\nagent: {turn['agent']}")


def main(argv: list[str]) -> int:
    """Dispatch `serve FILE`, `send FILE USER MESSAGE`, `transcript FILE USER`."""
    match argv:
        case ["serve", path]:
            asyncio.run(serve(path))
        case ["send", path, user, message]:
            asyncio.run(send(path, user, message))
        case ["transcript", path, user]:
            asyncio.run(show_transcript(path, user))
        case _:
            print(__doc__, file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
