"""Defaults from API.md that the workflow core applies, also read by the runtime.

They sit apart from the context and the instance so the runtime's settings
and local-activity runner take them without importing either.
"""

from __future__ import annotations

# `should_continue_as_new()` turns true at this many events (API.md defaults).
CONTINUE_AS_NEW_ADVICE_EVENTS = 10_000

# A local activity attempt never runs longer than this (API.md defaults).
LOCAL_ACTIVITY_BUDGET_SECONDS = 60.0
