"""ParentClosePolicy: what happens to a RUNNING child when its parent ends."""

from __future__ import annotations

import enum


class ParentClosePolicy(enum.Enum):
    """What happens to a RUNNING child when its parent ends.

    A detached child gets REQUEST_CANCEL unless told otherwise; an attached
    child is left running unless `spawn_child_workflow` was given a policy.

    REQUEST_CANCEL seals it CANCELLED with the reason ``parent closed``;
    TERMINATE fails it (FAILED, error type ``ParentClosed``); ABANDON
    leaves it running. The policy cascades through every level.
    """

    REQUEST_CANCEL = "request_cancel"
    TERMINATE = "terminate"
    ABANDON = "abandon"

    @classmethod
    def coerce(cls, value: ParentClosePolicy | str) -> ParentClosePolicy:
        """The policy itself, or the one named by its text (``"abandon"``)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            for member in cls:
                if value.strip().lower() in (member.value, member.name.lower()):
                    return member
        raise ValueError(f"unknown parent close policy {value!r}")
