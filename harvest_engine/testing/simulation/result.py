"""What one seed's simulation found: its trace, faults, checks and failures."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SimulationResult:
    """The outcome of one seed; `ok` when every invariant held and every run converged."""

    seed: int
    trace: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    faults: dict[str, int] = field(default_factory=dict)
    checks: int = 0
    bodies: int = 0
    restarts: int = 0

    @property
    def ok(self) -> bool:
        """Whether every invariant held."""
        return not self.failures

    @property
    def steps(self) -> int:
        """How many trace lines are steps (a step line starts with its number)."""
        return sum(1 for line in self.trace if line[:1].isdigit())

    def fail(self, problem: str) -> None:
        """Record a violated invariant (once)."""
        if problem not in self.failures:
            self.failures.append(problem)

    def trace_text(self) -> str:
        """The trace as text, one line per event: the same seed gives the same text."""
        return "\n".join(self.trace) + "\n"
