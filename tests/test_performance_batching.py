"""Concurrent single-summary calls share one CPU batch (what framework runners do per row),
with the same results as calls made one by one."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import shared.dimensions.batching as batching
from shared import ascore_summary
from shared import prompts as p
from shared.dimensions import MiniLMEmbedder, load_pipeline
from shared.testing import FakeJudge

SOURCE = (
    "The city council approved a new budget on Monday. It raises spending on schools by ten "
    "percent. The mayor said the plan keeps taxes flat. Critics argued that road repairs were "
    "cut. The vote was seven to two."
)
SUMMARIES = [
    "The council approved a budget. It raises school spending.",
    "The mayor said taxes stay flat. Critics said road repairs were cut.",
    "The vote was seven to two. The vote was seven to two.",
    "Budget approved Monday, schools get ten percent more.",
    "Road repairs were cut, critics argued. The council voted seven to two.",
]


class CountingEmbedder:
    """Wraps the default MiniLM embedder and records each batch it is given."""

    def __init__(self, inner: MiniLMEmbedder, model_id: str) -> None:
        self.inner = inner
        self.model_id = model_id
        self.batches: list[int] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(len(texts))
        return self.inner.embed(texts)


@pytest.fixture
def parsed_batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Sizes of the spaCy batches the shared analyser runs."""
    sizes: list[int] = []
    real = batching.analyse_spacy

    def counting(texts: Sequence[str], settings: Any, *languages: Any) -> Any:
        sizes.append(len(texts))
        return real(texts, settings, *languages)

    monkeypatch.setattr(batching, "analyse_spacy", counting)
    load_pipeline()  # loaded, so no call takes the check_available thread hop
    return sizes


def _rounded(value: Any) -> Any:
    """Floats to 6 places: MiniLM gives a sentence embedded in a padded batch and alone vectors
    that differ by ~1e-7 (the same holds for score_summaries against score_summary)."""
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def _comparable(result: Any) -> dict[str, Any]:
    return {
        "sub_scores": result.sub_scores(),
        "evidence": _rounded(result.dimension_evidence.model_dump()),
        "reason": result.reason,
        "signature": result.signature,
    }


@pytest.mark.parametrize("with_judge", [False, True])
def test_concurrent_calls_share_one_batch_and_match_calls_made_alone(
    parsed_batches: list[int], with_judge: bool
) -> None:
    judge = FakeJudge() if with_judge else None

    async def together() -> list[Any]:
        return await asyncio.gather(*(ascore_summary(SOURCE, s, judge=judge) for s in SUMMARIES))

    async def alone() -> list[Any]:
        return [await ascore_summary(SOURCE, s, judge=judge) for s in SUMMARIES]

    joint = asyncio.run(together())
    assert parsed_batches == [len(SUMMARIES)]  # one nlp.pipe for all five calls
    parsed_batches.clear()
    single = asyncio.run(alone())
    assert parsed_batches == [1] * len(SUMMARIES)
    for a, b in zip(joint, single, strict=True):
        assert _comparable(a) == _comparable(b)
        assert a.non_redundancy is not None and a.coherence is not None
    assert single[2].non_redundancy < single[0].non_redundancy  # the repeated sentence counts


def test_the_registry_is_emptied_and_embedders_never_share_a_batch(
    parsed_batches: list[int],
) -> None:
    inner = MiniLMEmbedder()
    first, second = CountingEmbedder(inner, "mini-a"), CountingEmbedder(inner, "mini-b")
    seen: dict[str, int] = {}

    async def run() -> list[Any]:
        jobs = [ascore_summary(SOURCE, s, judge=None, embedder=first) for s in SUMMARIES[:3]]
        jobs += [ascore_summary(SOURCE, s, judge=None, embedder=second) for s in SUMMARIES[3:]]
        out = await asyncio.gather(*jobs)
        seen["open"] = len(batching.SharedAnalyser._open.get(asyncio.get_running_loop(), {}))
        return out

    results = asyncio.run(run())
    assert seen["open"] == 0  # idle analysers leave the registry (and free the embedder)
    assert sorted(parsed_batches) == [2, 3]
    sentences = [
        sum(r.dimension_evidence.non_redundancy.sentence_count for r in group)
        for group in (results[:3], results[3:])
    ]
    # one shared batch per embedder for the dimensions' sentences; then one call per summary
    # for grounding's shortlisted source sentences (never mixed across embedders either)
    assert first.batches[0] == sentences[0] and len(first.batches) == 1 + 3
    assert second.batches[0] == sentences[1] and len(second.batches) == 1 + len(SUMMARIES) - 3
    assert "emb:mini-a" in results[0].signature and "emb:mini-b" in results[4].signature


class InFlightJudge(FakeJudge):
    """A FakeJudge that records the most calls it had in flight at once."""

    def __init__(self, latency: float) -> None:
        super().__init__(latency=latency)
        self.in_flight = 0
        self.peak = 0

    async def generate(self, prompt: str, schema: Any) -> Any:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            return await super().generate(prompt, schema)
        finally:
            self.in_flight -= 1


def _twenty_summaries_at_once(**options: Any) -> InFlightJudge:
    judge = InFlightJudge(latency=0.3)
    summaries = [f"{s} (variant {i})" for i, s in enumerate(SUMMARIES * 4)]

    async def run() -> list[Any]:
        return await asyncio.gather(
            *(ascore_summary(SOURCE, s, judge=judge, dimensions=(), **options) for s in summaries)
        )

    results = asyncio.run(run())
    assert all(r.score is not None for r in results)
    assert judge.calls[p.SCHEMA_FOR_TASK["generate_questions"].__name__] == 1  # shared source
    return judge


def _second_round(judge: FakeJudge) -> int:
    """Calls after the first round (the sentences path): the sentence checks but the first of
    the source, which goes out with the source's own call, and the pointed reviews (coverage
    only here: dimensions=())."""
    return (
        sum(
            judge.calls[p.SCHEMA_FOR_TASK[t].__name__]
            for t in ("check_sentences", "point_and_grade")
        )
        - 1
    )


def test_default_concurrency_sends_a_round_of_twenty_summaries_at_once() -> None:
    """The second round of 20 summaries is 39 calls (19 checks and 20 reviews); with the
    default limit none of them waits for a slot, so none lands a round late
    (docs/PERFORMANCE.md)."""
    judge = _twenty_summaries_at_once()
    assert _second_round(judge) > 32  # more than the old default let through
    assert judge.peak == _second_round(judge)
    assert _twenty_summaries_at_once(concurrency=8).peak == 8  # the limit still holds
