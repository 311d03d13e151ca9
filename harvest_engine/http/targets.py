"""What the HTTP API acts on: a runtime in this process, or a served store through a client.

The base of both is target_base.py; each target is its own module
(target_runtime.py, target_client.py); this one picks the target for what
`create_app` was given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.client import HarvestClient
from harvest_engine.http.target_base import Reads, Target
from harvest_engine.http.target_client import ClientTarget
from harvest_engine.http.target_runtime import RuntimeTarget
from harvest_engine.runtime.runtime import Runtime

if TYPE_CHECKING:
    from pathlib import Path

    from harvest_engine.codecs import PayloadCodec


def target_of(
    target: Runtime | str | Path, codec: PayloadCodec | None = None
) -> Target:
    """The target `create_app` was given: a runtime, or a file path / Postgres URL (read with `codec`)."""
    if isinstance(target, Runtime):
        if codec is not None:
            raise ValueError(
                "a Runtime reads with the codec it was opened with: codec= is for "
                "the path or URL of a served store"
            )
        return RuntimeTarget(target)
    if isinstance(target, HarvestClient):
        raise TypeError(
            "create_app takes a Runtime or the path / URL of a served store, "
            "not a HarvestClient (it opens its own client and reader)"
        )
    return ClientTarget.open(target, codec=codec)


__all__ = ["ClientTarget", "Reads", "RuntimeTarget", "Target", "target_of"]
