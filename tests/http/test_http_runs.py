"""The run routes against a real uvicorn, on both stores, through a runtime and through a client."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.http.served_api import Api, ApiSetup

# Both stores and both targets meet in the lifecycle tests; the others run on
# the two diagonal pairs, which still cover each store and each target.
PAIRS = pytest.mark.parametrize(
    ("store", "via"), [("sqlite", "runtime"), ("postgres", "client")]
)


async def _ended(api: Api, exec_id: str) -> dict[str, Any]:
    for _ in range(1000):
        run = await api.call("GET", f"/runs/{exec_id}", status=200)
        if run["state"] != "RUNNING":
            return dict(run)
        await asyncio.sleep(0.01)
    raise AssertionError(f"run {exec_id} did not end")


async def test_a_run_started_over_http_completes_and_reads_back(
    api_setup: ApiSetup,
) -> None:
    async with api_setup.running() as api:
        started = await api.call(
            "POST", "/runs", json={"workflow": "greet", "input": "ann"}, status=201
        )
        assert started["started_fresh"] is True
        run = await _ended(api, started["exec_id"])
        assert (run["state"], run["output"], run["input"]) == (
            "COMPLETED",
            "hello ann",
            "ann",
        )
        events = await api.call(
            "GET", f"/runs/{started['exec_id']}/history", status=200
        )
        assert events["events"][0]["type"] == "WorkflowStarted"
        assert events["events"][-1]["type"] == "WorkflowCompleted"
        for part in ("attempts", "logs"):
            assert (
                await api.call("GET", f"/runs/{started['exec_id']}/{part}", status=200)
                == []
            )
        ledger = await api.call("GET", f"/runs/{started['exec_id']}/ledger", status=200)
        assert ledger == {
            "calls": [],
            "totals": {
                "calls": 0,
                "input_tokens": 0,
                "output_tokens": 0,
                "latency": 0.0,
            },
        }
        counts = await api.call("GET", "/counts", status=200)
        assert counts["COMPLETED"] == 1
        health = await api.call("GET", "/health", status=200)
        assert health["served"] is True
        assert health["target"] == api_setup.via


@PAIRS
async def test_start_takes_the_start_options_and_refuses_a_second_under_reject(
    api_setup: ApiSetup,
) -> None:
    async with api_setup.running() as api:
        body = {
            "workflow": "box",
            "workflow_id": "order-7",
            "memo": {"owner": "ann"},
            "search_attributes": {"region": "eu"},
            "reuse_policy": "REJECT_DUPLICATE",
        }
        first = await api.call("POST", "/runs", json=body, status=201)
        run = await api.call("GET", f"/runs/{first['exec_id']}", status=200)
        assert (run["workflow_id"], run["memo"], run["search_attributes"]) == (
            "order-7",
            {"owner": "ann"},
            {"region": "eu"},
        )
        refused = await api.call("POST", "/runs", json=body, status=409)
        assert refused["error"]["type"] == "WorkflowAlreadyStarted"
        assert refused["error"]["fields"]["exec_id"] == first["exec_id"]
        attach = {"workflow": "box", "workflow_id": "order-8"}
        fresh = await api.call("POST", "/runs", json=attach, status=201)
        again = await api.call("POST", "/runs", json=attach, status=200)
        assert again == {"exec_id": fresh["exec_id"], "started_fresh": False}
        unknown = await api.call("POST", "/runs", json={"workflow": "nope"}, status=422)
        assert unknown["error"]["type"] == "UnknownWorkflow"


async def test_signal_query_update_then_cancel_and_terminate(
    api_setup: ApiSetup,
) -> None:
    async with api_setup.running() as api:
        one = (await api.call("POST", "/runs", json={"workflow": "box"}, status=201))[
            "exec_id"
        ]
        run = f"/runs/{one}"
        assert await api.call(
            "POST", f"{run}/signals/add", json={"payload": "a"}, status=200
        ) == {"delivered": True}
        keyed = {"payload": "b", "key": "k1"}
        assert (await api.call("POST", f"{run}/signals/add", json=keyed, status=200))[
            "delivered"
        ] is True
        assert (await api.call("POST", f"{run}/signals/add", json=keyed, status=200))[
            "delivered"
        ] is False
        for _ in range(500):
            peek = await api.call("POST", f"{run}/queries/peek", json={}, status=200)
            if peek["result"]["items"] == ["a", "b"]:
                break
            await asyncio.sleep(0.01)
        assert peek == {"result": {"items": ["a", "b"]}}
        put = await api.call(
            "POST", f"{run}/updates/put", json={"arg": "c"}, status=200
        )
        assert put == {"result": 3}
        rejected = await api.call(
            "POST", f"{run}/updates/put", json={"arg": ""}, status=422
        )
        assert rejected["error"]["type"] == "UpdateRejected"
        missing = await api.call("POST", f"{run}/queries/nope", status=404)
        assert missing["error"]["type"] == "QueryNotFound"
        cancelled = await api.call(
            "POST", f"{run}/cancel", json={"reason": "enough"}, status=202
        )
        assert cancelled["cancel_requested"] is True
        assert (await _ended(api, one))["state"] == "CANCELLED"
        late = await api.call("POST", f"{run}/signals/add", json={}, status=409)
        assert late["error"]["type"] == "WorkflowNotRunning"
        two = (await api.call("POST", "/runs", json={"workflow": "box"}, status=201))[
            "exec_id"
        ]
        await api.call(
            "POST", f"/runs/{two}/terminate", json={"reason": "stop"}, status=200
        )
        assert (await api.call("GET", f"/runs/{two}", status=200))[
            "state"
        ] == "TERMINATED"
        again = await api.call("POST", f"/runs/{two}/terminate", status=409)
        assert again["error"]["type"] == "WorkflowNotRunning"
        await _waits_need_the_code(api, api_setup.via)


async def _waits_need_the_code(api: Api, via: str) -> None:
    """where-waiting and stack replay the run with its code: only a runtime target has it."""
    exec_id = (await api.call("POST", "/runs", json={"workflow": "box"}, status=201))[
        "exec_id"
    ]
    if via == "client":
        for part in ("where-waiting", "stack"):
            got = await api.call("GET", f"/runs/{exec_id}/{part}", status=501)
            assert got["error"]["type"] == "NeedsWorkflowCode"
        return
    (wait,) = await api.call("GET", f"/runs/{exec_id}/where-waiting", status=200)
    assert (wait["kind"], wait["name"], wait["describe"]) == (
        "signal",
        "add",
        "signal 'add'",
    )
    (body,) = await api.call("GET", f"/runs/{exec_id}/stack", status=200)
    assert body["task"] == "workflow box"
    assert body["frames"][-1]["function"] == "box"


async def _unknown_run_is_404_on_every_per_run_route(api: Api) -> None:
    gone = "/runs/00000000-0000-0000-0000-000000000000"
    for part in (
        "",
        "/history",
        "/attempts",
        "/ledger",
        "/logs",
        "/where-waiting",
        "/stack",
    ):
        got = await api.call("GET", gone + part, status=404)
        assert got["error"]["type"] == "ExecutionNotFound", part
        assert got["error"]["status"] == 404
    for action, body in (
        ("signals/x", {}),
        ("queries/x", {}),
        ("updates/x", {}),
        ("cancel", {}),
        ("terminate", {}),
    ):
        got = await api.call("POST", f"{gone}/{action}", json=body, status=404)
        assert got["error"]["type"] == "ExecutionNotFound", action


@PAIRS
async def test_listing_takes_the_filter_as_query_parameters_and_pages_by_cursor(
    api_setup: ApiSetup,
) -> None:
    async with api_setup.running() as api:
        for i in range(5):
            await api.call(
                "POST",
                "/runs",
                json={
                    "workflow": "box",
                    "workflow_id": f"job-{i}",
                    "search_attributes": {"n": i},
                },
                status=201,
            )
        await api.call(
            "POST", "/runs", json={"workflow": "greet", "input": "x"}, status=201
        )
        first = await api.call(
            "GET", "/runs", params={"workflow_name": "box", "limit": 2}, status=200
        )
        assert [r["workflow_id"] for r in first["executions"]] == ["job-4", "job-3"]
        rest = await api.call(
            "GET",
            "/runs",
            params={"workflow_name": "box", "limit": 10, "cursor": first["next"]},
            status=200,
        )
        assert [r["workflow_id"] for r in rest["executions"]] == [
            "job-2",
            "job-1",
            "job-0",
        ]
        assert rest["next"] is None
        by_attr = await api.call("GET", "/runs", params={"attr": "n=3"}, status=200)
        assert [r["workflow_id"] for r in by_attr["executions"]] == ["job-3"]
        prefix = await api.call(
            "GET",
            "/runs",
            params=[
                ("workflow_id_prefix", "job-"),
                ("state", "running"),
                ("state", "COMPLETED"),
            ],
            status=200,
        )
        assert len(prefix["executions"]) == 5
        for bad in ({"state": "DONE"}, {"limit": "x"}, {"started_after": "yesterday"}):
            got = await api.call("GET", "/runs", params=bad, status=422)
            assert got["error"]["type"] == "InvalidFilter", bad
        typo = await api.call("GET", "/runs", params={"workflow": "box"}, status=422)
        assert typo["error"]["type"] == "InvalidQuery"
        await _unknown_run_is_404_on_every_per_run_route(api)
