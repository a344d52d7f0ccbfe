"""Judge samples for ``samples=k``: one judge stack per sample, and the mean of k scorings
(internal to the core).

With ``samples=k > 1`` every summary-dependent judge call (claims, verdicts, answers, grades,
style review) is made k times, once through each sample's judge; the source-level calls
(questions and reference answers) are made once by the judge as given and shared by all samples,
so the k scorings measure the judge's noise on the summary against one fixed set of questions.
The deterministic dimensions are computed once.

Sample ``i`` (0-based) is the user's judge wrapped in :class:`SampleJudge`, which

- adds ``{"sample": i, "seed": base + i}`` to the judge's ``settings``: cache keys are built
  from the settings, so sample 1's answers are never replayed as sample 2's, and a rerun replays
  each sample's own answers;
- asks the judge for an independent draw when it offers one: a judge with
  ``with_sample(index, seed) -> judge`` (``OpenAIJudge`` has it: the seed, and temperature 0.7
  when the judge is at 0) is called through what that returns; any other judge is called as is
  and, if deterministic, gives k identical scorings (spread 0).

The wrappers around the judge (cache, validation, concurrency limit) are copied per sample and
keep sharing their store, in-flight calls and concurrency limit with the original (the cache's
``hits``/``misses`` counters are per copy).
"""

from __future__ import annotations

import asyncio
import copy
import statistics
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from ..core.subscores import JUDGE_ONLY, SUB_SCORE_NAMES
from ..evaluation.result import SummaryEvaluation
from ..judge.wrappers import CachedJudge, Check, Judge, _Wrapper, base_judge, judge_settings

T = TypeVar("T", bound=BaseModel)


class SampleJudge(_Wrapper):
    """Sample ``index`` of ``inner`` (the user's judge), drawn with ``seed``."""

    def __init__(self, inner: Judge, index: int, seed: int) -> None:
        super().__init__(inner)
        self.index = index
        self.seed = seed
        hook = getattr(inner, "with_sample", None)
        self.draw: Any = hook(index, seed) if callable(hook) else inner

    @property
    def settings(self) -> dict[str, Any]:
        return {**judge_settings(self.draw), "sample": self.index, "seed": self.seed}

    async def generate(self, prompt: str, schema: type[T], *, check: Check | None = None) -> T:
        if isinstance(self.draw, _Wrapper):
            return await self.draw.generate(prompt, schema, check=check)
        return await self.draw.generate(prompt, schema)


def _rebuilt(judge: object, leaf: Callable[[Any], Any]) -> Any:
    """``judge``'s wrappers copied (sharing their state) around ``leaf(user's judge)``."""
    if isinstance(judge, _Wrapper):
        twin = copy.copy(judge)
        twin.inner = _rebuilt(judge.inner, leaf)
        return twin
    return leaf(judge)


def base_seed(judge: object) -> int:
    """The user's judge's own seed setting (an int), else 0: sample ``i`` uses it plus ``i``."""
    seed = judge_settings(base_judge(judge)).get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else 0


def sample_judges(judge: CachedJudge, k: int) -> list[CachedJudge]:
    """One judge stack per sample, 0 … k-1."""
    base = base_seed(judge)
    return [_rebuilt(judge, lambda user, i=i: SampleJudge(user, i, base + i)) for i in range(k)]


class SharedRowAnalysis:
    """One summary's CPU analysis, handed to every sample: the batch analysers give each row's
    analysis out once, and the deterministic dimensions must be computed once anyway."""

    def __init__(self, batch: Any, index: int) -> None:
        self._batch = batch
        self._index = index
        self._text: asyncio.Future[Any] | None = None
        self._analysis: asyncio.Future[Any] | None = None

    async def text(self, _index: int) -> Any:
        if self._text is None:
            self._text = asyncio.ensure_future(self._batch.text(self._index))
        return await asyncio.shield(self._text)

    async def analysis(self, _index: int) -> Any:
        if self._analysis is None:
            self._analysis = asyncio.ensure_future(self._batch.analysis(self._index))
        return await asyncio.shield(self._analysis)

    async def source_index(self, source: str) -> Any:
        return await self._batch.source_index(source)


# ---------------------------------------------------------------------------------------------
# k scorings -> one result
# ---------------------------------------------------------------------------------------------


def _mean(values: Sequence[float]) -> float:
    return min(1.0, max(0.0, statistics.fmean(values)))


def combine_samples(runs: Sequence[SummaryEvaluation]) -> SummaryEvaluation:
    """The result of k scorings of one summary: every sub-score the mean over samples, its
    standard deviation (``ddof=1``) in ``spread``, each sample's sub-scores in ``sample_scores``,
    and the evidence (questions, claims, dimension evidence) of sample 1.

    A headline sub-score (score, alignment, coverage) is strict: if any sample is unscored the
    row is unscored, naming the failed samples, since a mean over the samples that happened to
    succeed would be biased toward them. A dimension is averaged over the samples that have it
    (None when none has); its spread needs two values.
    """
    k = len(runs)
    per_sample = [run.sub_scores() for run in runs]
    failed = [(i, run.error) for i, run in enumerate(runs, start=1) if run.error is not None]
    means: dict[str, float | None] = {}
    spread: dict[str, float | None] = {}
    for name in SUB_SCORE_NAMES:
        values = [s[name] for s in per_sample if s[name] is not None]
        if (failed and name in JUDGE_ONLY) or not values:
            means[name] = spread[name] = None
            continue
        means[name] = _mean(values)
        spread[name] = statistics.stdev(values) if len(values) > 1 else None
    signature = next((r.signature for r in runs if "|long:" in r.signature), runs[0].signature)
    first = runs[0]
    if failed:
        i, error = failed[0]
        error = f"{len(failed)} of {k} judge samples unscored; sample {i}: {error}"
        reason = detail = f"Unscored: {error}"
    else:
        parts = ", ".join(
            f"{name} {means[name]:.2f} (sd {spread[name]:.2f})"
            for name in ("score", "alignment", "coverage")
            if means[name] is not None and spread[name] is not None
        )
        head = f"Mean over {k} judge samples: {parts}."
        reason = f"{head}\nSample 1: {first.reason}"
        detail = f"{head}\nSample 1: {first.reason_detail}"
        error = None
    return first.model_copy(
        update={
            **means,
            "error": error,
            "reason": reason,
            "reason_detail": detail,
            "signature": signature,
            "sample_scores": per_sample,
            "spread": spread,
        }
    )


__all__ = ["SampleJudge", "SharedRowAnalysis", "base_seed", "combine_samples", "sample_judges"]
