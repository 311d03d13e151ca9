"""The `harvest` command's flow control: `harvest queues`, and the queue options of `harvest start`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from harvest_engine.calls import StartOptions
from harvest_engine.cli.app import FILE, JSON, Target, main, reading
from harvest_engine.cli.output import emit_json, emit_table

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.flow import QueueInfo


def queue_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`harvest start`'s options that start the run into a queue."""
    for option in reversed(
        (
            click.option(
                "--queue",
                help="Start into this registered queue (ENQUEUED until admitted).",
            ),
            click.option(
                "--priority",
                type=int,
                help="Lower first (a queue made with priority=True).",
            ),
            click.option(
                "--partition-key", help="The queue's partition (admitted round robin)."
            ),
            click.option(
                "--dedup-id", help="Refused while a run of the queue holds this id."
            ),
            click.option(
                "--start-delay", help="Wait at least this long first (e.g. 30s)."
            ),
        )
    ):
        fn = option(fn)
    return fn


def start_options(
    workflow_id: str | None,
    queue: str | None,
    priority: int | None,
    partition_key: str | None,
    dedup_id: str | None,
    start_delay: str | None,
) -> StartOptions | None:
    """The StartOptions of `harvest start`'s queue options (None: a plain start)."""
    if (queue, priority, partition_key, dedup_id, start_delay) == (None,) * 5:
        return None
    return StartOptions(
        workflow_id=workflow_id,
        queue=queue,
        priority=priority,
        partition_key=partition_key,
        dedup_id=dedup_id,
        start_delay=start_delay,
    )


def _limit(value: int | None) -> str:
    return "-" if value is None else str(value)


def _row(info: QueueInfo) -> list[Any]:
    rate = (
        "-"
        if info.rate is None
        else f"{info.rate.limit}/{info.rate.period.total_seconds():g}s"
    )
    oldest = (
        "-"
        if info.oldest_wait is None
        else info.oldest_wait.isoformat(timespec="seconds")
    )
    return [
        info.name,
        _limit(info.concurrency),
        _limit(info.worker_concurrency),
        rate,
        _limit(info.partition_concurrency),
        "yes" if info.priority else "no",
        info.running,
        info.waiting,
        oldest,
    ]


@main.command("queues")
@FILE
@JSON
def queues(file: Target, as_json: bool) -> None:
    """List FILE's queues: limits, runs or attempts holding slots, waiting, oldest wait."""
    with reading(file) as reader:
        infos = reader.flow_reads().queue_infos()
    if as_json:
        emit_json([info.to_json() for info in infos])
        return
    emit_table(
        [
            "QUEUE",
            "CONCURRENCY",
            "PER WORKER",
            "RATE",
            "PER PARTITION",
            "PRIORITY",
            "RUNNING",
            "WAITING",
            "OLDEST WAIT",
        ],
        [_row(info) for info in infos],
    )
