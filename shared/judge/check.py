"""Is this judge usable? One short probe of a judge before a run pays for hundreds of calls.

:func:`check_judge` (and :func:`acheck_judge`) ask, in order: is the server reachable, which
structured-output mode works and how long a short call takes, what context window the server
publishes, and whether the judge gets a built-in pair with a known answer right (a canary). Each
line says what to change when it fails. ``summary-eval check-judge`` prints the same as a table.

:func:`check_reachable` is the first step alone; ``summary-eval score`` runs it before scoring so
an unreachable server fails in a second, naming its URL, instead of row by row.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from .. import prompts as p
from .server import MIN_CONTEXT_BUDGET
from .wrappers import JudgeFailed, JudgeOutputError, ValidatingJudge, base_judge

Status = Literal["ok", "caveat", "fail"]

REPLY_ROOM = 2048
"""Tokens kept free for the reply when a context budget is derived from a context window."""
SLOW_CALL_S = 20.0
"""A short call slower than this makes a batch slow enough to mention."""


def context_budget_for(window: int, default: int) -> int:
    """The largest ``context_budget`` (estimated prompt tokens) that fits ``window`` with room
    for the reply; ``default`` when the window is larger. The estimate overshoots real counts
    (:mod:`shared.core.tokens`), so a prompt within it fits the window in real tokens too."""
    return max(MIN_CONTEXT_BUDGET, min(default, window - REPLY_ROOM))


@dataclass
class CheckLine:
    """One line of the check: what was checked, what was found, and what to change."""

    name: str
    status: Status
    detail: str
    advice: str = ""


@dataclass
class JudgeCheck:
    """The outcome of :func:`check_judge`; ``exit_code`` is 0 usable, 1 with caveats, 2 not."""

    lines: list[CheckLine] = field(default_factory=list)
    mode: str | None = None
    context_window: int | None = None
    latency_s: float | None = None

    @property
    def usable(self) -> bool:
        return all(line.status != "fail" for line in self.lines)

    @property
    def exit_code(self) -> int:
        if not self.usable:
            return 2
        return 1 if any(line.status == "caveat" for line in self.lines) else 0

    def format(self) -> str:
        """A plain-text table (the CLI prints a rich one)."""
        width = max(len(line.name) for line in self.lines) if self.lines else 0
        out = []
        for line in self.lines:
            out.append(f"{line.name:<{width}}  {line.status:<6}  {line.detail}")
            if line.advice:
                out.append(f"{'':<{width}}  {'':<6}  -> {line.advice}")
        return "\n".join(out)


async def check_reachable(
    base_url: str, api_key: str | None = None, timeout: float = 10.0
) -> str | None:
    """None when the server at ``base_url`` answers HTTP (``GET /models``), else why not.

    Any HTTP answer counts as reachable except 401/403 (the key was rejected): servers that
    lack ``/models`` still answer 404.
    """
    import httpx

    from .reply_size import bounded_client_args

    url = f"{base_url.rstrip('/')}/models"
    bounded = bounded_client_args(headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    try:
        async with httpx.AsyncClient(timeout=timeout, **bounded) as http:
            response = await http.get(url)
    except httpx.TimeoutException:
        return f"no answer from {base_url} within {timeout:g} s"
    except httpx.HTTPError as exc:
        return f"cannot connect to {base_url} ({type(exc).__name__}: {exc or 'no details'})"
    if response.status_code in (401, 403):
        return f"{base_url} rejected the API key (HTTP {response.status_code})"
    return None


class _Probe(BaseModel):
    ok: bool


_PROBE_PROMPT = 'Reply with this JSON object and nothing else: {"ok": true}'

CANARY_SOURCE = (
    "The Harwick city council voted 7 to 2 on Tuesday to build a protected bike lane network of "
    "42 kilometres. Construction starts in March on Station Road."
)
CANARY_CLAIMS = (
    "The Harwick council voted 7 to 2 to build a bike lane network.",
    "The bike lane network will be 90 kilometres long.",
)
"""A pair with a known answer: claim 1 is supported, claim 2 contradicted (42, not 90)."""


async def acheck_judge(judge: Any, *, timeout: float = 10.0) -> JudgeCheck:
    """Probe ``judge`` (an :class:`~shared.OpenAIJudge`, or any judge: the server lines are
    then skipped). Never raises for a judge that fails: that is what the result says."""
    inner = base_judge(judge)
    result = JudgeCheck()
    if not await _check_reachable(inner, result, timeout) or not await _check_output(inner, result):
        return result
    await _check_context_window(inner, result)
    await _check_canary(inner, result)
    return result


async def _check_reachable(inner: Any, result: JudgeCheck, timeout: float) -> bool:
    """The ``reachable`` line (none for a judge without a server); False when it failed."""
    base_url = getattr(inner, "base_url", None)
    if not base_url:
        return True
    api_key = getattr(getattr(inner, "client", None), "api_key", None)
    problem = await check_reachable(base_url, api_key, timeout=timeout)
    if problem:
        result.lines.append(
            CheckLine(
                "reachable",
                "fail",
                problem,
                "start the server, or fix --base-url (it ends in /v1 for most servers)",
            )
        )
        return False
    result.lines.append(CheckLine("reachable", "ok", base_url))
    return True


async def _check_output(inner: Any, result: JudgeCheck) -> bool:
    """The ``structured output`` and ``latency`` lines of one short call; False when it failed."""
    started = time.monotonic()
    try:
        await inner.generate(_PROBE_PROMPT, _Probe)
    except JudgeOutputError as exc:
        result.latency_s = time.monotonic() - started
        result.mode = getattr(inner, "mode", None)
        result.lines.append(
            CheckLine(
                "structured output",
                "caveat",
                f"{result.mode or 'the judge'} answered, but not the JSON asked for: {exc}",
                "invalid replies are retried (--retries); a stronger model fails less",
            )
        )
    except Exception as exc:
        result.lines.append(
            CheckLine(
                "structured output",
                "fail",
                f"a short call failed: {type(exc).__name__}: {exc}",
                "check --model (the server's model name) and the server's log; "
                "OpenAIJudge(structured=...) forces a mode",
            )
        )
        return False
    else:
        result.latency_s = time.monotonic() - started
        result.mode = getattr(inner, "mode", None)
        notes = "; ".join(getattr(inner, "mode_notes", []) or [])
        result.lines.append(
            CheckLine(
                "structured output",
                "ok",
                f"{result.mode or 'works'}" + (f" ({notes})" if notes else ""),
            )
        )
    slow = result.latency_s > SLOW_CALL_S
    result.lines.append(
        CheckLine(
            "latency",
            "caveat" if slow else "ok",
            f"{result.latency_s:.1f} s for a short call",
            "a row takes about 6 calls: lower --n, raise --concurrency to the server's "
            "parallel slots, or use a faster server"
            if slow
            else "",
        )
    )
    return True


async def _check_context_window(inner: Any, result: JudgeCheck) -> None:
    """The ``context window`` line, for a judge that can ask its server."""
    window_of = getattr(inner, "context_window", None)
    if window_of is None:
        return
    from .server import DEFAULT_CONTEXT_BUDGET

    window = await window_of()
    result.context_window = window
    if window is None:
        result.lines.append(
            CheckLine(
                "context window",
                "ok",
                "not published by the server",
                f"prompts go up to {DEFAULT_CONTEXT_BUDGET} estimated tokens: make sure the "
                "server's context is larger, or pass a smaller --context-budget "
                "(context_budget in Python)",
            )
        )
    elif window - REPLY_ROOM < MIN_CONTEXT_BUDGET:
        result.lines.append(
            CheckLine(
                "context window",
                "caveat",
                f"{window} tokens, less than the smallest prompt budget "
                f"({MIN_CONTEXT_BUDGET}) plus room for the reply ({REPLY_ROOM})",
                "raise the server's context "
                "(llama.cpp: -c, shared by -np slots; Ollama: num_ctx; vLLM: --max-model-len)",
            )
        )
    elif window - REPLY_ROOM < DEFAULT_CONTEXT_BUDGET:
        budget = context_budget_for(window, DEFAULT_CONTEXT_BUDGET)
        result.lines.append(
            CheckLine(
                "context window",
                "ok",
                f"{window} tokens: scoring fits its prompt budget to it ({budget} estimated "
                f"tokens instead of {DEFAULT_CONTEXT_BUDGET}; longer sources are split) unless "
                "you pass --context-budget (context_budget in Python)",
            )
        )
    else:
        result.lines.append(CheckLine("context window", "ok", f"{window} tokens"))


async def _check_canary(inner: Any, result: JudgeCheck) -> None:
    """The ``canary`` line: a known pair (one claim supported, one not) judged."""

    def check(answer: p.ClaimVerdicts) -> None:
        if [v.index for v in answer.verdicts] != [1, 2]:
            raise ValueError("expected one verdict for each of claims 1..2")

    prompt = p.verify_claims_prompt(CANARY_SOURCE, list(CANARY_CLAIMS))
    try:
        answer = await ValidatingJudge(inner, retries=1).generate(
            prompt, p.ClaimVerdicts, check=check
        )
    except JudgeFailed as exc:
        result.lines.append(
            CheckLine(
                "canary",
                "caveat",
                f"no usable answer to a known pair: {exc}",
                "expect many unscored rows: use a stronger model",
            )
        )
    except Exception as exc:
        result.lines.append(
            CheckLine("canary", "fail", f"{type(exc).__name__}: {exc}", "see the server's log")
        )
    else:
        verdicts = [v.verdict for v in answer.verdicts]
        right = verdicts[0] == "supported" and verdicts[1] != "supported"
        result.lines.append(
            CheckLine(
                "canary",
                "ok" if right else "caveat",
                f"known pair judged {verdicts} (expected supported, then not supported)",
                "" if right else "this model misjudges an easy pair: use a stronger model",
            )
        )


def check_judge(judge: Any, *, timeout: float = 10.0) -> JudgeCheck:
    """Sync wrapper of :func:`acheck_judge`."""
    from ..core.bridge import run_sync

    return run_sync(lambda: acheck_judge(judge, timeout=timeout))
