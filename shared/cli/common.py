"""What the ``score`` command's two engines share: exit codes, the consoles, default paths,
building and fitting the judge, the table, the bill and the closing summary. Typer and rich
only; the run itself is :mod:`shared.runs`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import os
import sys
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

from ..core.redact import command_line, redact_url
from ..evaluation.options import DEFAULT_TIMEOUT
from ..pipeline.compose import claims_step
from ..prompts.schemas import CLAIMS_STEP
from ..runs.results import (
    NEEDS_JUDGE,
    STATUS_BAD_INPUT,
    STATUS_OK,
    STATUS_UNSCORED,
    Row,
)
from .judge_wait import InFlightJudge
from .report import ReportInfo, stability_section
from .table import SHORT_NAMES, results_table
from .terminal import _in_flags, literal, plain

EXIT_OK = 0
EXIT_ROWS_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

ENABLE_HINT = (
    "To score them, configure an OpenAI-compatible judge: --base-url URL --model NAME "
    "(vLLM, Ollama, llama.cpp, LM Studio…), or set OPENAI_API_KEY (and optionally "
    "OPENAI_MODEL / OPENAI_BASE_URL)."
)


err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


def default_cache_path() -> Path:
    """The persistent judge cache under the user's cache directory (platformdirs)."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("summary-eval")) / "judge-cache.sqlite3"


def default_output(input_path: Path) -> Path:
    return Path.cwd() / f"{input_path.stem}.results.jsonl"


def default_report(output: Path) -> Path:
    stem = output.name
    for suffix in (".jsonl", ".ndjson", ".csv", ".parquet", ".pq"):  # .parquet: the Ray engine
        stem = stem.removesuffix(suffix)
    return output.with_name(f"{stem.removesuffix('.results')}.report.html")


def _usage_error(message: str) -> typer.Exit:
    err.print(Text.assemble(("error:", "bold red"), " ", plain(message)))
    return typer.Exit(EXIT_USAGE)


def judge_recipe(
    *,
    model: str | None,
    base_url: str | None,
    api_key: str | None,
    timeout: float = DEFAULT_TIMEOUT,
    prices: dict[str, float | None] | None = None,
) -> Any:
    """The OpenAI-compatible judge the flags ask for, as a picklable recipe
    (:class:`~shared.judge.config.OpenAIJudgeConfig`): the driver's judge and every Ray
    actor's are built from this one object (:func:`build_judge` then pins the model and server
    the judge resolved). An API key not given stays None: each judge reads ``OPENAI_API_KEY``
    where it runs, so the key is not carried inside the recipe."""
    from ..judge.config import OpenAIJudgeConfig

    return OpenAIJudgeConfig(
        model,
        base_url=base_url,
        api_key=api_key,
        settings={"timeout": timeout, **{k: v for k, v in (prices or {}).items() if v is not None}},
    )


def build_judge(
    *,
    model: str | None,
    base_url: str | None,
    no_judge: bool,
    retries: int,
    concurrency: int,
    cache: Path | None,
    timeout: float = DEFAULT_TIMEOUT,
    api_key: str | None = None,
    prices: dict[str, float | None] | None = None,
    check: bool = True,
) -> tuple[Any, str, Any]:
    """The wrapped OpenAI-compatible judge, its description and the recipe it was built from
    (:func:`judge_recipe`: an engine that scores elsewhere builds its judges from the same
    one), or (None, why there is none, None). ``check=False`` (``--dry-run``) builds it
    without reaching the server, and without opening the cache (it would create the file)."""
    env_configured = bool(os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"))
    if no_judge:
        return None, "none (--no-judge)", None
    if not (model or base_url or api_key or env_configured):
        return None, "none configured", None
    from ..judge.wrappers import robust_judge

    recipe = judge_recipe(
        model=model, base_url=base_url, api_key=api_key, timeout=timeout, prices=prices
    )
    try:
        inner = recipe()
    except ValueError as exc:
        raise _usage_error(f"cannot configure the judge: {_in_flags(str(exc))}") from None
    # the model and server as this judge resolved them (from the environment, or the OpenAI
    # defaults), so that a judge built from the recipe elsewhere (a Ray actor) asks the same
    # model on the same server whatever its own environment says
    recipe = dataclasses.replace(recipe, model=inner.model, base_url=str(inner.client.base_url))
    where = str(inner.client.base_url).rstrip("/")
    if check:
        from .check_judge import ensure_reachable

        problem = ensure_reachable(where, inner.client.api_key, timeout)
        if problem:
            raise _usage_error(f"the judge is not reachable: {problem}")
    with _cache_problems():
        judge = robust_judge(  # calls in flight are tracked for the progress line (a hung server)
            InFlightJudge(inner),
            retries=retries,
            # --dry-run touches nothing: the cache file is not even opened (it would be made)
            cache=cache if cache is not None and check else False,
            concurrency=concurrency,
        )
    cache_text = "no cache" if cache is None else f"cache {cache}" + ("" if check else ", unopened")
    return judge, f"{inner.model_id} at {redact_url(where)} ({cache_text})", recipe


@contextlib.contextmanager
def _cache_problems() -> Iterator[None]:
    """An unreadable judge cache is set aside with a warning said here; a database that is not
    ours is a usage error (it is left untouched)."""
    from ..judge.wrappers import CacheUnusable, CacheWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CacheWarning)
        try:
            yield
        except CacheUnusable as exc:
            raise _usage_error(str(exc)) from None
    for warning in caught:
        if issubclass(warning.category, CacheWarning):
            err.print(Text(f"warning: {plain(warning.message)}", style="yellow"))
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )


def checked_prices(
    model: str | None,
    base_url: str | None,
    price_in: float | None,
    price_cached: float | None,
    price_out: float | None,
) -> dict[str, float | None]:
    """The --price-* flags as the judge takes them, checked before any judge is built (either
    engine): a usage error when they cannot price this model."""
    prices = {"price_in": price_in, "price_cached": price_cached, "price_out": price_out}
    try:
        if any(v is not None for v in prices.values()):
            from ..core.pricing import resolve_prices

            resolve_prices(model or "", base_url, **prices)
    except (TypeError, ValueError) as exc:
        raise _usage_error(str(exc)) from None
    return prices


MAX_TIMEOUT = 86_400.0
"""Longest --timeout, in seconds (a day): ``inf`` would let one hung call hold the run forever."""


def _finite(value: float | None) -> float | None:
    """Refuse NaN (and infinities): click's ranges let NaN through, every comparison being false."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number, got {value}")
    return value


def _limited(judge: Any) -> Any:
    from ..judge.wrappers import LimitedJudge, _Wrapper

    while isinstance(judge, _Wrapper):
        if isinstance(judge, LimitedJudge):
            return judge
        judge = judge.inner
    return None


def fit_to_server(
    judge: Any,
    *,
    timeout: float,
    timeout_given: bool,
    concurrency: int,
    concurrency_given: bool,
    n: int,
    judge_path: str = "two-call",
    summaries: Iterable[str] = (),
) -> tuple[float, int]:
    """Probe the judge's server once (structured mode, generation speed, parallel slots) and
    fit the run to it, saying so before the first row: on a local server that publishes its
    slots, ``--concurrency`` not given becomes the slot count; a per-call limit too short for
    the longest reply the schemas allow at the measured speed is raised when ``--timeout`` was
    not given (and advised otherwise). Returns the (timeout, concurrency) the run uses.
    ``judge_path`` and the rows' ``summaries`` size the longest reply (the two-call check's
    claim list grows with a summary's sentences)."""
    from ..core.pricing import is_local_url
    from ..judge.openai import FIT_CEILING_S
    from ..judge.wrappers import base_judge, negotiate_judge

    inner = base_judge(judge)
    probe = asyncio.run(negotiate_judge(judge))
    if probe is None:
        return timeout, concurrency
    if probe.error is not None:
        err.print(
            f"[yellow]The judge did not answer a {PROBE_WORDS}:[/] {literal(probe.error)}. "
            "Scoring anyway; each call is limited to --timeout."
        )
        return timeout, concurrency
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
    err.print(f"Judge server: {', '.join(found)}{when}.")
    if probe.slots and not concurrency_given and is_local_url(inner.base_url):
        concurrency = probe.slots
        limited = _limited(judge)
        if limited is not None:
            limited.concurrency = concurrency
        err.print(f"Concurrency {concurrency}: the server's slots (--concurrency to change).")
    if probe.tokens_per_s:
        longest = longest_reply(judge_path, n, summaries, step=claims_step(judge))
        # calls in parallel share the server: assume no gain from batching them
        parallel = min(concurrency, probe.slots) if probe.slots else concurrency
        per_call = probe.tokens_per_s / max(parallel, 1)
        needed = math.ceil(longest / per_call * SPEED_MARGIN / 10) * 10
        if needed > timeout:
            what = (
                f"the longest reply the schemas allow ({longest} tokens) takes about "
                f"{longest / per_call:.0f} s at {probe.tokens_per_s:g} tokens/s shared by "
                f"{parallel} call(s) in parallel"
            )
            if timeout_given:
                err.print(
                    f"[yellow]--timeout {timeout:g} may be too short:[/] {what}; pass "
                    f"--timeout {needed} (or a faster server) so such calls are not cut off."
                )
            else:
                err.print(
                    f"[yellow]Per-call limit raised to {needed} s[/] (from {timeout:g} s): {what}."
                )
                timeout = float(needed)
                inner.timeout = timeout
    if not timeout_given:
        inner.fit_timeout = True  # each call's limit follows the speed measured in the run
        err.print(
            f"Per-call limit {timeout:g} s, longer for a long reply once the run has measured "
            f"the server's speed (at most {FIT_CEILING_S:g} s); --timeout fixes it."
        )
    return timeout, concurrency


def longest_reply(
    judge_path: str, n: int, summaries: Iterable[str] = (), *, step: int = CLAIMS_STEP
) -> int:
    """The largest ``max_tokens`` a call of this run can be sent: the source's questions (``n``)
    and, on the two-call path, the claim check of the longest summary (its bound rounded up to
    ``step``, as the judge's :func:`~shared.pipeline.compose.claims_step` says) and the summary
    review; on the step path, a verdict list of ``n`` claims."""
    from ..prompts.schemas import (
        checked_claims_schema,
        max_claims,
        questions_schema,
        reply_token_limit,
        sentence_count,
        summary_review_schema,
        verdicts_schema,
    )

    schemas: list[Any] = [questions_schema(n)]
    if judge_path == "steps":
        schemas.append(verdicts_schema(n))
    else:
        texts = [t for t in summaries if t] or [""]
        schemas.append(checked_claims_schema(max(max_claims(t) for t in texts), step))
        schemas.append(summary_review_schema(n, max(sentence_count(t) for t in texts)))
    return max(reply_token_limit(schema) or 0 for schema in schemas)


PROBE_WORDS = "one-line probe"
SPEED_MARGIN = 1.25
"""The per-call limit fitted to the measured speed leaves this much room."""


TABLE_ROWS = 25


def run_report_info(
    input_path: Path,
    output: Path,
    judge_text: str,
    skipped: list[str],
    threshold: float | None = None,
    flip_threshold: float | None = None,
) -> ReportInfo:
    """The report's facts about a scoring run (either engine): files, judge, what was skipped;
    ``flip_threshold`` only for a run with several judge samples (its stability section)."""
    return ReportInfo(
        input_path=str(input_path),
        results_path=str(output),
        judge=judge_text,
        skipped=skipped,
        enable_hint=ENABLE_HINT if skipped else "",
        command=command_line(sys.argv[1:]),
        threshold=threshold,
        flip_threshold=flip_threshold,
    )


def _print_table(rows: list[Row], keys: list[str], threshold: float | None = None) -> None:
    """The scores at a glance on stdout: one line per row (the first few), every column that has
    a value somewhere, the status, and pass/FAIL with ``--threshold``; the results file and the
    report hold the rest (:mod:`.table` sizes it to the terminal)."""
    out.print(results_table(rows[:TABLE_ROWS], keys, width=out.width, threshold=threshold))
    if len(rows) > TABLE_ROWS:
        out.print(f"… and {len(rows) - TABLE_ROWS} more rows in the results file.")


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the user gave option ``name`` (not its default)."""
    source = ctx.get_parameter_source(name)
    return getattr(source, "name", None) not in ("DEFAULT", None)


def _print_bill(judge: Any) -> str:
    """The run's judge bill, printed and returned (empty without a judge)."""
    if judge is None:
        return ""
    from ..judge.wrappers import base_judge
    from .bill import bill_text

    inner = base_judge(judge)
    usage = getattr(inner, "usage", None)
    if not isinstance(usage, dict):
        return ""
    text = bill_text(usage, getattr(inner, "prices", None)).removeprefix("Judge bill: ")
    err.print(f"Judge bill: {text}")
    return text


def _print_stability(rows: list[Row], keys: list[str], threshold: float) -> None:
    """With --samples k > 1: how much one row moves between judge samples, per sub-score, and
    how many rows a single run could have put on the other side of ``threshold`` (the report's
    stability section, :func:`.report.stability_section`, in words)."""
    section = stability_section(rows, keys, threshold)
    if section is None:
        return
    parts = [
        f"{SHORT_NAMES.get(s.sub_score, s.sub_score)} {s.mean_sd:.3f} (max {s.max_sd:.3f})"
        for s in section["spread"]
    ]
    out.print(f"Spread over judge samples (mean sd per row): {'; '.join(parts)}.")
    out.print(f"Pass/fail flips: {section['flips']}.")


def _skipped(keys: list[str]) -> list[str]:
    """The columns a run without a judge leaves empty, whatever the rows happen to contain (a
    one-sentence summary has no coherence, but coherence was not skipped)."""
    return [k for k in keys if k in NEEDS_JUDGE]


def _finish(rows: list[Row], output: Path, report_path: Path | None, skipped: list[str]) -> int:
    ok = sum(r.get("status") == STATUS_OK for r in rows)
    unscored = sum(r.get("status") == STATUS_UNSCORED for r in rows)
    bad = sum(r.get("status") == STATUS_BAD_INPUT for r in rows)
    if skipped:  # how to enable them was said once, at the start
        err.print(f"[yellow]Skipped (no judge):[/] {', '.join(skipped)}.")
    err.print(f"Results: {literal(output)}")
    if report_path is not None:
        err.print(f"Report:  {literal(report_path)}")
    line = f"{ok} of {len(rows)} rows scored, {unscored} unscored, {bad} bad input."
    if unscored or bad:
        err.print(f"[bold red]{line}[/] The error column of the results says why.")
        if unscored:
            err.print("Rerun with --retry-unscored to try the unscored rows again.")
        return EXIT_ROWS_FAILED
    err.print(f"[bold green]{line}[/]")
    return EXIT_OK
