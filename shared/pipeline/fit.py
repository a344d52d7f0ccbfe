"""Fit a run to its judge's server, in one place: the library, the local engine and the Ray
engine's actors all call :func:`afit_run` (the CLI prints what it decided).

The server is probed once (structured mode, generation speed, parallel slots; a persistent
cache remembers it). Then:

- concurrency: on a local server that publishes its slots, a concurrency not given becomes the
  slot count;
- the per-call limit: when the longest reply the run's schemas allow would not arrive within it
  at the measured speed (with :data:`SPEED_MARGIN` of room), a limit not given is raised to fit,
  and a given one is kept with a warning; a limit not given also follows the speed the run
  measures (``OpenAIJudge.fit_timeout``).

The context budget is fitted beside it (:func:`shared.pipeline.run._fit_context`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..core.pricing import is_local_url
from ..judge.server import FIT_CEILING_S, ServerProbe
from ..judge.wrappers import LimitedJudge, base_judge, find_wrapper, negotiate_judge
from ..prompts.pointing import pointed_review_schema, sentence_checks_schema, split_sentences
from ..prompts.schemas import (
    CLAIMS_STEP,
    checked_claims_schema,
    max_claims,
    questions_schema,
    reply_token_limit,
    sentence_count,
    summary_review_schema,
    verdicts_schema,
)
from .compose import claims_step
from .sentences import sentence_step

SPEED_MARGIN = 1.25
"""The per-call limit fitted to the measured speed leaves this much room."""

NoteKind = Literal["info", "warning"]


@dataclass
class RunFit:
    """What :func:`afit_run` found and decided; ``notes`` say it in words, in order."""

    timeout: float | None
    """The per-call limit the run uses (None: the judge has no such limit)."""
    concurrency: int | None
    probe: ServerProbe | None = None
    longest_reply: int | None = None
    """Completion tokens of the longest reply the run's schemas allow."""
    raised: bool = False
    """The limit was raised to fit that reply at the measured speed."""
    notes: list[tuple[NoteKind, str]] = field(default_factory=list)


def longest_reply(
    judge_path: str, n: int, summaries: Iterable[str] = (), *, step: int = CLAIMS_STEP
) -> int:
    """The largest ``max_tokens`` a call of this run can be sent: the source's questions (``n``)
    and, on the two-call path, the claim check of the longest summary (its bound rounded up to
    ``step``, as the judge's :func:`~shared.pipeline.compose.claims_step` says) and the summary
    review; on the sentences path, the sentence check and the pointed review of the longest
    summary (``step``: :func:`~shared.pipeline.sentences.sentence_step`); on the step path, a
    verdict list of ``n`` claims."""
    schemas: list[Any] = [questions_schema(n)]
    if judge_path == "steps":
        schemas.append(verdicts_schema(n))
    elif judge_path == "sentences":
        texts = [t for t in summaries if t] or [""]
        # spaCy's split is not known before the run: the offline counts, with room for 2 more
        count = max(max(sentence_count(t), len(split_sentences(t))) for t in texts) + 2
        schemas.append(sentence_checks_schema(count, step))
        schemas.append(pointed_review_schema(n, count, True))
    else:
        texts = [t for t in summaries if t] or [""]
        schemas.append(checked_claims_schema(max(max_claims(t) for t in texts), step))
        schemas.append(summary_review_schema(n, max(sentence_count(t) for t in texts)))
    return max(reply_token_limit(schema) or 0 for schema in schemas)


async def afit_run(judge: Any, **fit: Any) -> RunFit:
    """Probe ``judge``'s server and fit the run to it (see the module docstring); ``fit`` are
    :func:`apply_fit`'s keywords. A judge that cannot be probed (no server: a scripted judge)
    is left as it is."""
    return apply_fit(judge, await negotiate_judge(judge), **fit)


def apply_fit(
    judge: Any,
    probe: ServerProbe | None,
    *,
    n: int,
    judge_path: str,
    summaries: Iterable[str] = (),
    concurrency: int | None = None,
    timeout_given: bool | None = None,
    concurrency_given: bool = True,
) -> RunFit:
    """:func:`afit_run` once the probe is in hand: no await, so the rows of a batch keep the
    order they start in.

    ``timeout_given`` None reads the judge's own ``timeout_given`` (an :class:`OpenAIJudge`
    built without ``timeout=``: not given). ``summaries`` size the longest reply (the two-call
    check's claim list grows with a summary's sentences)."""
    inner = base_judge(judge)
    timeout = getattr(inner, "timeout", None)
    if timeout_given is None:
        timeout_given = bool(getattr(inner, "timeout_given", True))
    fit = RunFit(timeout=timeout, concurrency=concurrency, probe=probe)
    if probe is None:
        return fit
    if probe.error is not None:
        fit.notes.append(
            (
                "warning",
                f"The judge did not answer a one-line probe: {probe.error}. Scoring anyway; "
                "each call is limited to --timeout.",
            )
        )
        return fit
    found = [f"structured mode {probe.mode}"]
    if probe.tokens_per_s:
        found.append(f"{probe.tokens_per_s:g} tokens/s")
    if probe.slots:
        found.append(f"{probe.slots} parallel slot(s)")
    when = (
        " (remembered from an earlier run)"
        if probe.from_cache
        else (f" (probe {probe.seconds:.1f} s)" if probe.seconds is not None else "")
    )
    fit.notes.append(("info", f"Judge server: {', '.join(found)}{when}."))
    base_url = getattr(inner, "base_url", None)
    if probe.slots and not concurrency_given and is_local_url(base_url):
        fit.concurrency = probe.slots
        limited = find_wrapper(judge, LimitedJudge)
        if limited is not None:
            limited.concurrency = probe.slots
        fit.notes.append(
            ("info", f"Concurrency {probe.slots}: the server's slots (--concurrency to change).")
        )
    if probe.tokens_per_s and timeout is not None:
        _fit_timeout(fit, inner, judge, n, judge_path, summaries, bool(timeout_given))
    if not timeout_given and timeout is not None and hasattr(inner, "fit_timeout"):
        inner.fit_timeout = True  # each call's limit follows the speed measured in the run
        fit.notes.append(
            (
                "info",
                f"Per-call limit {fit.timeout:g} s, longer for a long reply once the run has "
                f"measured the server's speed (at most {FIT_CEILING_S:g} s); --timeout fixes it.",
            )
        )
    return fit


def _fit_timeout(
    fit: RunFit,
    inner: Any,
    judge: Any,
    n: int,
    judge_path: str,
    summaries: Iterable[str],
    timeout_given: bool,
) -> None:
    """Raise (or, when given, advise) the per-call limit for the longest reply at the speed."""
    assert fit.probe is not None and fit.probe.tokens_per_s and fit.timeout is not None
    speed = fit.probe.tokens_per_s
    step = sentence_step(judge) if judge_path == "sentences" else claims_step(judge)
    longest = longest_reply(judge_path, n, summaries, step=step)
    fit.longest_reply = longest
    # calls in parallel share the server: assume no gain from batching them
    concurrency = fit.concurrency or 1
    parallel = min(concurrency, fit.probe.slots) if fit.probe.slots else concurrency
    per_call = speed / max(parallel, 1)
    needed = math.ceil(longest / per_call * SPEED_MARGIN / 10) * 10
    if needed <= fit.timeout:
        return
    what = (
        f"the longest reply the schemas allow ({longest} tokens) takes about "
        f"{longest / per_call:.0f} s at {speed:g} tokens/s shared by {parallel} call(s) in "
        "parallel"
    )
    if timeout_given:
        fit.notes.append(
            (
                "warning",
                f"--timeout {fit.timeout:g} may be too short: {what}; pass --timeout {needed} "
                "(or a faster server) so such calls are not cut off.",
            )
        )
        return
    fit.notes.append(
        ("warning", f"Per-call limit raised to {needed} s (from {fit.timeout:g} s): {what}.")
    )
    fit.timeout = float(needed)
    fit.raised = True
    inner.timeout = fit.timeout
