"""The workflows and activities of the lab: session, agent, experiment, and the hourly summary."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from examples.autoresearch import lab, model
from harvest_engine import (
    ActivityContext,
    ActivityError,
    ApplicationError,
    ChildWorkflowError,
    RetryPolicy,
    WorkflowContext,
    activity,
    workflow,
)

CONTINUE_EVERY = 4  # experiments per run of the session before it continues as new
MAX_TURNS = 3  # model calls an agent makes before it settles for its last proposal


# -- activities: the only code that touches the lab folder or "the model" -------------


@activity(retry=RetryPolicy(max_attempts=3, initial_interval="100ms"))
def ask_model(ctx: ActivityContext, prompt: dict[str, Any]) -> dict[str, Any]:
    """One model call: a proposal for the next experiment."""
    return model.propose(prompt)


@activity
def read_config(ctx: ActivityContext, lab_dir: str) -> dict[str, float]:
    """The lab's current config (what kept experiments built up)."""
    return lab.read_config(Path(lab_dir))


@activity
def apply_patch(ctx: ActivityContext, request: dict[str, Any]) -> dict[str, float]:
    """Write the candidate config: the current one with the proposal applied."""
    config = lab.read_config(Path(request["lab"]))
    proposal = request["proposal"]
    if proposal is not None:
        config[proposal["key"]] = proposal["value"]
    candidate = Path(request["lab"]) / "candidates" / f"{request['name']}.json"
    candidate.write_text(json.dumps(config, indent=2) + "\n")
    return config


@activity(retry=RetryPolicy(max_attempts=2, non_retryable_error_types=["OutOfMemory"]))
def train_candidate(ctx: ActivityContext, request: dict[str, Any]) -> dict[str, float]:
    """Train the candidate (simulated); a config too big for the GPU fails for good."""
    time.sleep(request["seconds"])  # a real run trains for minutes; the lab's pace
    while (Path(request["lab"]) / "hold").exists():  # `touch LAB/hold`: the GPU is busy
        time.sleep(0.05)
    try:
        return lab.train(request["config"], request["name"])
    except MemoryError as error:
        raise ApplicationError(
            str(error), type="OutOfMemory", non_retryable=True
        ) from error


@activity
def keep_patch(ctx: ActivityContext, request: dict[str, Any]) -> bool:
    """The candidate improved: it becomes the config, and the result is logged once."""
    lab_dir = Path(request["lab"])
    candidate = lab_dir / "candidates" / f"{request['name']}.json"
    if candidate.exists():
        candidate.replace(lab.config_path(lab_dir))
    return lab.record(lab_dir, ctx.idempotency_key(), request["row"])


@activity
def revert_patch(ctx: ActivityContext, request: dict[str, Any]) -> bool:
    """The saga's compensation: drop the candidate and log why, once."""
    lab_dir = Path(request["lab"])
    (lab_dir / "candidates" / f"{request['name']}.json").unlink(missing_ok=True)
    return lab.record(lab_dir, ctx.idempotency_key(), request["row"])


@activity
def summarize_lab(ctx: ActivityContext, lab_dir: str) -> dict[str, Any]:
    """Counts by status and the best score so far."""
    rows = lab.results(Path(lab_dir))
    kept = [float(row["val_bpb"]) for row in rows if row["status"] == "keep"]
    statuses = [row["status"] for row in rows]
    return {
        "experiments": len(rows),
        "kept": statuses.count("keep"),
        "discarded": statuses.count("discard"),
        "crashed": statuses.count("crash"),
        "best_val_bpb": min(kept, default=None),
    }


# -- workflows ----------------------------------------------------------------------


@workflow
async def propose_change(
    ctx: WorkflowContext, request: dict[str, Any]
) -> dict[str, Any]:
    """The agent: turn a user's idea, or the model's answer, into one valid change."""
    config = await ctx.execute_activity(read_config, request["lab"])
    idea = _parse_idea(request.get("idea"), config)
    if idea is not None:
        return idea
    proposal: dict[str, Any] = {}
    for turn in range(1, MAX_TURNS + 1):
        prompt = {**request, "config": config, "turn": turn}
        proposal = await ctx.execute_activity(ask_model, prompt)
        if proposal["value"] != config[proposal["key"]]:
            break  # a real change; a no-op asks again
    return proposal


def _parse_idea(idea: str | None, config: dict[str, float]) -> dict[str, Any] | None:
    """A user's "key=value" idea as a proposal, or None when there is none or it is not valid."""
    if not idea or "=" not in idea:
        return None
    key, _, text = idea.partition("=")
    key = key.strip()
    try:
        value = float(text)
    except ValueError:
        return None
    if key not in config:
        return None
    return {"key": key, "value": value, "description": f"idea: {key} -> {value:g}"}


@workflow
async def experiment(ctx: WorkflowContext, request: dict[str, Any]) -> dict[str, Any]:
    """Try one proposal under the "gpu" mutex: keep it if it beats the best, else revert (a saga)."""
    proposal = request["proposal"]
    description = proposal["description"] if proposal else "baseline"
    row = {"experiment": request["name"], "description": description}
    async with ctx.mutex("gpu"):
        config = await ctx.execute_activity(apply_patch, request)
        try:
            metrics = await ctx.execute_activity(
                train_candidate,
                {
                    "lab": request["lab"],
                    "config": config,
                    "name": request["name"],
                    "seconds": request["seconds"],
                },
            )
        except ActivityError as error:
            crashed = {
                **row,
                "val_bpb": 0.0,
                "memory_gb": lab.memory_gb(config),
                "status": "crash",
            }
            await ctx.execute_activity(revert_patch, {**request, "row": crashed})
            return {**crashed, "error": str(error)}
        best = request["best"]
        status = "keep" if best is None or metrics["val_bpb"] < best else "discard"
        done = {**row, **metrics, "status": status}
        step = keep_patch if status == "keep" else revert_patch
        await ctx.execute_activity(step, {**request, "row": done})
    return done


@workflow
async def research_session(
    ctx: WorkflowContext, state: dict[str, Any]
) -> dict[str, Any]:
    """Run the budget of experiments: an agent child proposes, an experiment child tries.

    Signals "idea" ("key=value") jump the queue; query "status" reads the
    state. Update "budget" checks a new budget (never below the experiments
    done) and answers how many would be left; an update's handler runs on a
    separate replay (the guide, section 8), so the change itself arrives as
    the signal "budget" that the CLI sends once the update accepted it. Every
    CONTINUE_EVERY experiments the session continues as new, carrying its
    state and any ideas not yet tried.
    """
    ctx.register_query("status", lambda _arg=None: dict(state))
    ctx.register_update_handler(
        "budget", lambda n: _check_budget(n, state), lambda n: _left(n, state)
    )
    if state["best"] is None:
        await _run_one(ctx, state, proposal=None, name=f"{state['tag']}-baseline")
    ran_here = 0
    while _take_signals(ctx, state) and state["done"] < state["budget"]:
        if ran_here == CONTINUE_EVERY:
            ctx.continue_as_new(state)
        idea = state["ideas"].pop(0) if state["ideas"] else None
        number = state["done"] + 1
        proposal = await ctx.spawn_child_workflow(
            propose_change,
            {**_brief(state), "experiment": number, "idea": idea},
            workflow_id=f"{state['tag']}-agent-{number}",
        )
        state["done"] = number
        name = f"{state['tag']}-exp-{number}"
        await _run_one(ctx, state, proposal=proposal, name=name)
        ran_here += 1
    return {
        "tag": state["tag"],
        "experiments": state["done"],
        "best_val_bpb": state["best"],
    }


async def _run_one(
    ctx: WorkflowContext, state: dict[str, Any], *, proposal: Any, name: str
) -> None:
    """One experiment child; the state learns its result and the search attributes show it."""
    request = {
        "lab": state["lab"],
        "name": name,
        "proposal": proposal,
        "best": state["best"],
        "seconds": state["train_seconds"],
    }
    try:
        result = await ctx.spawn_child_workflow(experiment, request, workflow_id=name)
    except ChildWorkflowError as error:
        ctx.log(f"{name} failed: {error}")
        return
    state["last"] = result
    if result["status"] == "keep":
        state["best"] = result["val_bpb"]
        state["last_kept"] = proposal["key"] if proposal else None
    ctx.upsert_search_attrs(
        {"tag": state["tag"], "best_val_bpb": state["best"], "done": state["done"]}
    )


def _brief(state: dict[str, Any]) -> dict[str, Any]:
    """What the agent is told: the lab, how much to explore, what worked last."""
    return {
        "lab": state["lab"],
        "tag": state["tag"],
        "explore": state["explore"],
        "last_kept": state["last_kept"],
    }


def _check_budget(budget: Any, state: dict[str, Any]) -> None:
    """The update's validator: a whole number, not below the experiments already done."""
    if (
        not isinstance(budget, int)
        or isinstance(budget, bool)
        or not state["done"] <= budget <= 1000
    ):
        raise ValueError(f"budget must be a whole number from {state['done']} to 1000")


async def _left(budget: int, state: dict[str, Any]) -> int:
    """The update's handler: how many experiments a budget leaves."""
    return budget - state["done"]


def _take_signals(ctx: WorkflowContext, state: dict[str, Any]) -> bool:
    """Fold the ideas and budget changes that arrived into the state (always True)."""
    state["ideas"] += ctx.drain_signals("idea")
    for budget in ctx.drain_signals("budget"):
        state["budget"] = max(budget, state["done"])
    return True


def first_state(
    lab_dir: Path, tag: str, experiments: int, explore: int, train_seconds: float = 0.0
) -> dict[str, Any]:
    """A new session's input."""
    return {
        "train_seconds": train_seconds,
        "lab": str(lab_dir),
        "tag": tag,
        "budget": experiments,
        "explore": explore,
        "done": 0,
        "best": None,
        "last": None,
        "last_kept": None,
        "ideas": [],
    }


@workflow
async def lab_summary(ctx: WorkflowContext, lab_dir: str) -> dict[str, Any]:
    """The scheduled hourly summary of the lab."""
    return await ctx.execute_activity(summarize_lab, lab_dir)


WORKFLOWS = (research_session, propose_change, experiment, lab_summary)
ACTIVITIES = (
    ask_model,
    read_config,
    apply_patch,
    train_candidate,
    keep_patch,
    revert_patch,
    summarize_lab,
)
