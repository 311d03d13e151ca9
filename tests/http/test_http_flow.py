"""Flow control over HTTP against a real uvicorn: queued starts, their refusals, and the flow reads."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from harvest_engine import Queue

if TYPE_CHECKING:
    from tests.http.served_api import ApiSetup


@pytest.mark.parametrize(
    ("store", "via"), [("sqlite", "runtime"), ("postgres", "client")]
)
async def test_starts_go_through_queues_and_their_refusals_have_statuses(
    api_setup: ApiSetup,
) -> None:
    api_setup.served.rt.register_queue(Queue("jobs", concurrency=1))
    async with api_setup.running() as api:
        queued = {"workflow": "box", "queue": "jobs", "dedup_id": "d1"}
        first = await api.call("POST", "/runs", json=queued, status=201)
        twice = await api.call(
            "POST", "/runs", json={**queued, "workflow_id": "other"}, status=409
        )
        assert twice["error"]["type"] == "DuplicateEnqueue"
        assert twice["error"]["fields"]["exec_id"] == first["exec_id"]
        unknown = await api.call(
            "POST", "/runs", json={"workflow": "box", "queue": "nope"}, status=422
        )
        assert unknown["error"]["type"] == "UnknownQueue"
        await api.call("POST", "/runs", json={"workflow": "metered"}, status=201)
        over = await api.call("POST", "/runs", json={"workflow": "metered"}, status=429)
        assert over["error"]["type"] == "QuotaExceeded"
        (jobs,) = [
            q
            for q in await api.call("GET", "/queues", status=200)
            if q["name"] == "jobs"
        ]
        assert jobs["concurrency"] == 1
        assert jobs["running"] + jobs["waiting"] == 1
        held = {"workflow": "settle", "workflow_id": "doc", "input": 1}
        waiting = await api.call("POST", "/runs", json=held, status=201)
        if api_setup.via == "runtime":
            (found,) = await api.call("GET", "/held-starts", status=200)
            assert (found["exec_id"], found["kind"], found["workflow_id"]) == (
                waiting["exec_id"],
                "debounce",
                "doc",
            )
            assert await api.call("GET", "/circuit-breakers", status=200) == []
        else:
            for part in ("/held-starts", "/circuit-breakers"):
                got = await api.call("GET", part, status=501)
                assert got["error"]["type"] == "NotOffered"
