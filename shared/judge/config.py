"""A judge as a picklable recipe: what travels to a worker process (a Ray actor) instead of a
judge, whose clients and caches cannot travel."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class OpenAIJudgeConfig:
    """A picklable recipe for an :class:`~shared.OpenAIJudge`, built once on each actor.

    ``api_key`` None reads ``OPENAI_API_KEY`` on the worker (set it in the job's runtime_env,
    so the key does not travel inside the task arguments).
    """

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    """Further keyword arguments of OpenAIJudge (temperature, seed, timeout, max_retries…)."""

    def __post_init__(self) -> None:
        # plain strings: a str subclass may carry unpicklable state along (a lock, a client)
        for name in ("model", "base_url", "api_key"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, str.__str__(value))
        object.__setattr__(self, "settings", dict(self.settings))

    def __call__(self) -> Any:
        from .openai import OpenAIJudge

        return OpenAIJudge(
            self.model, base_url=self.base_url, api_key=self.api_key, **dict(self.settings)
        )
