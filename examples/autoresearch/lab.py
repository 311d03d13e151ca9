"""The lab folder: the training config, the results log, and the simulated training run.

`train.json` is what the agent edits (the seed edits a training script; a
config keeps the example offline and fast). Training is simulated by a
smooth loss surface with a little seeded noise, so a run's outcome depends
only on its config and its name: the example is deterministic and testable.
"""

from __future__ import annotations

import json
import math
import random
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

BASELINE: dict[str, float] = {
    "learning_rate": 0.01,
    "depth": 4,
    "width": 256,
    "warmup_steps": 100,
    "weight_decay": 0.0,
}
# Where the simulated loss is lowest; the agent does not know it.
OPTIMUM: dict[str, float] = {
    "learning_rate": 0.003,
    "depth": 8,
    "width": 768,
    "warmup_steps": 400,
    "weight_decay": 0.1,
}
MEMORY_LIMIT_GB = 80.0
RESULTS_HEADER = "key\texperiment\tval_bpb\tmemory_gb\tstatus\tdescription\n"


def database(lab: Path) -> Path:
    """The harvest file of the lab."""
    return lab / "lab.db"


def config_path(lab: Path) -> Path:
    """The config the kept experiments have built up."""
    return lab / "train.json"


def results_path(lab: Path) -> Path:
    """One line per finished experiment (kept, discarded or crashed)."""
    return lab / "results.tsv"


def create(lab: Path) -> None:
    """A fresh lab: the baseline config and an empty results log."""
    lab.mkdir(parents=True, exist_ok=True)
    config_path(lab).write_text(json.dumps(BASELINE, indent=2) + "\n")
    results_path(lab).write_text(RESULTS_HEADER)
    (lab / "candidates").mkdir(exist_ok=True)


def read_config(lab: Path) -> dict[str, float]:
    """The current config."""
    config: dict[str, float] = json.loads(config_path(lab).read_text())
    return config


def memory_gb(config: dict[str, float]) -> float:
    """The simulated memory a config needs: activations grow with depth x width."""
    return round(config["depth"] * config["width"] / 64.0, 1)


def train(config: dict[str, float], name: str) -> dict[str, float]:
    """Simulated training: validation bits-per-byte (lower is better) and memory.

    Raises:
        MemoryError: the config needs more than the simulated GPU holds.
    """
    memory = memory_gb(config)
    if memory > MEMORY_LIMIT_GB:
        raise MemoryError(f"needs {memory} GB, the GPU has {MEMORY_LIMIT_GB}")
    distance = sum(_log_ratio(config[key], OPTIMUM[key]) ** 2 for key in OPTIMUM)
    noise = random.Random(name).uniform(-0.002, 0.002)
    return {
        "val_bpb": round(0.95 + 0.05 * math.sqrt(distance) + noise, 4),
        "memory_gb": memory,
    }


def _log_ratio(value: float, target: float) -> float:
    """How far a value is from its target, on a log scale (weight decay may be 0)."""
    return math.log((value + 0.01) / (target + 0.01))


def results(lab: Path) -> list[dict[str, Any]]:
    """The results log as rows."""
    lines = results_path(lab).read_text().splitlines()[1:]
    keys = RESULTS_HEADER.strip().split("\t")
    return [dict(zip(keys, line.split("\t"), strict=True)) for line in lines if line]


def record(lab: Path, key: str, row: dict[str, Any]) -> bool:
    """Append a result once per key: a retried activity must not log an experiment twice."""
    if any(existing["key"] == key for existing in results(lab)):
        return False
    fields = [
        key,
        row["experiment"],
        row["val_bpb"],
        row["memory_gb"],
        row["status"],
        row["description"],
    ]
    with results_path(lab).open("a") as out:
        out.write("\t".join(str(field) for field in fields) + "\n")
    return True
