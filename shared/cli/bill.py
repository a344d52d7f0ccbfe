"""The bill of a run: an estimate before it (``--dry-run`` prints only that) and the count after.

The estimate runs the rows through the real pipeline with a judge that answers instantly
(:class:`~shared.testing.FakeJudge`, word overlap) and counts what it was asked: so the number
of calls follows the pipeline as it is (questions shared by the summaries of one source, one
call per step, the judge samples), prompt tokens are the prompts' own (estimated with
:func:`shared.core.tokens.estimate_tokens`, plus the judge's system message), and completion tokens
are the fake's answers, a stand-in for a real model's (which writes more when it explains
more). The summaries' sentences are split offline (:func:`shared.dimensions.compute.split_only`),
so an estimate loads no text model (``--dry-run`` loads none at all); spaCy's split, which the
run uses, may differ by a sentence here and there. The estimate ignores the cache: a rerun pays
only for what is not cached.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel

from ..core.pricing import Prices
from ..core.tokens import estimate_tokens
from ..core.usage import format_usage
from ..dimensions.compute import split_only
from ..evaluation.options import ScoreOptions

T = TypeVar("T", bound=BaseModel)

ESTIMATE_ROWS = 3
"""Rows run through the counting judge before a real run (the rest are extrapolated by size);
``--dry-run`` counts every row."""


@dataclass
class Estimate:
    calls: int
    prompt_tokens: int
    completion_tokens: int
    rows: int
    """Rows the estimate covers (every row still to score)."""
    counted: int
    """Rows actually run through the counting judge (the others are scaled from them)."""

    @property
    def usage(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "retries": 0,
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": 0,
            "completion_tokens": self.completion_tokens,
        }


class CountingJudge:
    """Answers as :class:`~shared.testing.FakeJudge` does, instantly, and counts each call's
    prompt and answer tokens."""

    def __init__(self, overhead_tokens: int) -> None:
        from ..testing import FakeJudge

        self.fake = FakeJudge(model_id="estimate")
        self.model_id = "estimate"
        self.overhead = overhead_tokens
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    async def generate(self, prompt: str, schema: type[T]) -> T:
        answer = await self.fake.generate(prompt, schema)
        self.calls += 1
        self.prompt_tokens += estimate_tokens(prompt) + self.overhead
        self.completion_tokens += estimate_tokens(answer.model_dump_json())
        return answer

    def with_sample(self, index: int, seed: int) -> CountingJudge:
        return self


def estimate_run(
    pairs: Sequence[tuple[str, str]], options: ScoreOptions, *, every_row: bool = False
) -> Estimate:
    """The judge calls and tokens scoring ``pairs`` (source, summary) under ``options`` will
    take: every pair counted (``every_row``), or the first :data:`ESTIMATE_ROWS` and the rest
    scaled by their characters."""
    from .. import ascore_summaries
    from ..judge.openai import SYSTEM_PROMPT

    if not pairs:
        return Estimate(0, 0, 0, 0, 0)
    counted = list(pairs) if every_row else list(pairs[:ESTIMATE_ROWS])
    judge = CountingJudge(estimate_tokens(SYSTEM_PROMPT))
    from ..core.subscores import JUDGED_DIMENSIONS

    # only the dimensions that call the judge: the others cost no call and much CPU
    judged = [d for d in options.dimensions if d in JUDGED_DIMENSIONS]
    run_options = options.merged(dimensions=judged, cache=False)
    with split_only():  # the judge's sentences, split offline: no text model is loaded for them
        asyncio.run(ascore_summaries(counted, judge=judge, options=run_options))
    scale = 1.0
    if len(counted) < len(pairs):
        size = sum(len(s) + len(m) for s, m in counted) or 1
        scale = sum(len(s) + len(m) for s, m in pairs) / size
    return Estimate(
        calls=math.ceil(judge.calls * scale),
        prompt_tokens=math.ceil(judge.prompt_tokens * scale),
        completion_tokens=math.ceil(judge.completion_tokens * scale),
        rows=len(pairs),
        counted=len(counted),
    )


def estimate_text(estimate: Estimate, prices: Prices | None) -> str:
    """``Estimate for 8 rows: about 45 judge calls, 30,000 prompt and 9,000 completion tokens,
    $0.00 (local server)``."""
    money = "cost unknown (no price for this model: give --price-in and --price-out)"
    if prices is not None:
        dollars = prices.cost(estimate.usage)
        money = f"${dollars:,.4f}" if 0 < dollars < 0.01 else f"${dollars:,.2f}"
        money += f" ({prices.source})"
    how = "" if estimate.counted == estimate.rows else f", {estimate.counted} counted and scaled"
    return (
        f"Estimate for {estimate.rows} row(s){how}: about {estimate.calls:,} judge calls, "
        f"{estimate.prompt_tokens:,} prompt and {estimate.completion_tokens:,} completion "
        f"tokens, {money}; before cache hits"
    )


def bill_text(
    usage: Mapping[str, int],
    prices: Prices | None,
    retry_reasons: Mapping[str, int] | None = None,
) -> str:
    """The run's bill in one line (``Judge: 43 calls (2 retries: 2 HTTP 429 (server busy)),
    ...``): a retry says why it happened (``retry_reasons``, the judge's own count)."""
    dollars = prices.cost(usage) if prices is not None else None
    source = prices.source if prices else ""
    return "Judge bill: " + format_usage(usage, dollars, source, retry_reasons)
