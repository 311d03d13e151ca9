"""LlmCall: one model call an activity reports, stored as a cost ledger row with its completion."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class LlmCall:
    """A model call: which model, how many tokens in and out, and optionally how long."""

    model: str
    input_tokens: int
    output_tokens: int
    latency: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError("LlmCall.model must be non-empty text")
        for name in ("input_tokens", "output_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"LlmCall.{name} must be an int >= 0, got {value!r}")
        if self.latency is not None and self.latency < 0:
            raise ValueError("LlmCall.latency must be >= 0 seconds")

    def with_latency(self, seconds: float) -> LlmCall:
        """The same call with its latency in seconds."""
        return replace(self, latency=float(seconds))
