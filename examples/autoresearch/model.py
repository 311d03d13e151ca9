"""The scripted offline model: it proposes one change to the config per call.

A real lab would ask an LLM "here is train.json and the results so far,
propose one change"; this one answers from a seeded random walk, so the
example needs no network and gives the same proposals every time. A user's
idea (sent to the session by signal) is tried as given.
"""

from __future__ import annotations

import random
from typing import Any

STEPS: dict[str, tuple[float, ...]] = {
    "learning_rate": (0.5, 0.7, 1.4, 2.0),
    "depth": (-2, -1, 1, 2),
    "width": (0.5, 0.75, 1.5, 2.0),
    "warmup_steps": (0.5, 2.0, 3.0),
    "weight_decay": (0.05, 0.1, 0.2),
}


def propose(prompt: dict[str, Any]) -> dict[str, Any]:
    """One proposal: the key to change, its new value, and why (in words)."""
    config: dict[str, float] = prompt["config"]
    rng = random.Random(f"{prompt['tag']}:{prompt['experiment']}:{prompt['turn']}")
    explore = prompt["explore"] / 100.0
    key = (
        rng.choice(sorted(STEPS))
        if rng.random() < explore
        else prompt["last_kept"] or "learning_rate"
    )
    value = _step(key, config[key], rng)
    return {
        "key": key,
        "value": value,
        "description": f"{key}: {config[key]:g} -> {value:g}",
    }


def _step(key: str, value: float, rng: random.Random) -> float:
    """A new value for one key: depth moves by whole layers, weight decay is set, others scale."""
    step = rng.choice(STEPS[key])
    if key == "depth":
        return float(max(1, int(value + step)))
    if key == "weight_decay":
        return step
    if key in ("width", "warmup_steps"):
        return float(max(16, round(value * step / 16) * 16))
    return round(value * step, 6)
