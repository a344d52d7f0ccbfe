"""What the ``score`` command's two engines share: exit codes, the consoles, default paths,
building and fitting the judge, the table, the bill and the closing summary. Typer and rich
only; the run itself is :mod:`shared.runs`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import sys
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from ..core.redact import command_line, redact_url
from ..evaluation.options import DEFAULT_JUDGE_PATH
from ..runs.results import (
    NEEDS_JUDGE,
    STATUS_BAD_INPUT,
    STATUS_OK,
    STATUS_UNSCORED,
    Row,
)
from .judge_wait import InFlightJudge
from .report import ReportInfo, stability_section
from .table import (
    FAIL,
    INCONCLUSIVE,
    PASS,
    SHORT_NAMES,
    error_type_lines,
    pass_text,
    results_table,
)
from .terminal import _in_flags, console, literal, plain

EXIT_OK = 0
EXIT_ROWS_FAILED = 1
EXIT_USAGE = 2
EXIT_BELOW_PASS_MARK = 3
"""``--fail-under``: a row's verdict is FAIL (or inconclusive, with ``--inconclusive fail``)."""
EXIT_INCONCLUSIVE = 4
"""``--fail-under``: no row fails, but a row's verdict over its judge samples is inconclusive."""
EXIT_INTERRUPTED = 130

JUDGE_HINT = (
    "configure an OpenAI-compatible judge: --base-url URL --model NAME "
    "(vLLM, Ollama, llama.cpp, LM Studio…), or set OPENAI_API_KEY (and optionally "
    "OPENAI_MODEL / OPENAI_BASE_URL)."
)
"""How to give a command a judge."""
ENABLE_HINT = f"To score them, {JUDGE_HINT}"


err = console(stderr=True)
out = console()


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


def read_results_file(path: Path) -> list[dict[str, Any]]:
    """The rows of a readable results file with at least one row (else a clear usage error)."""
    from ..runs.results import detect_result_format, read_results

    if not path.is_file():
        raise _usage_error(f"results file not found: {path}")
    try:
        detect_result_format(path)
    except ValueError as exc:
        raise _usage_error(str(exc)) from None
    try:
        rows = read_results(path)
    except ValueError as exc:  # not UTF-8
        raise _usage_error(str(exc)) from None
    if not rows:
        raise _usage_error(
            f"no result rows in {path}: expected a results file written by `summary-eval score`"
        )
    return rows


def judge_recipe(
    *,
    model: str | None,
    base_url: str | None,
    api_key: str | None,
    timeout: float | None = None,
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
        # a timeout not given stays so: each judge (a Ray actor's too) then fits its limit to
        # the server's speed (shared.pipeline.fit)
        settings={
            **({} if timeout is None else {"timeout": timeout}),
            **{k: v for k, v in (prices or {}).items() if v is not None},
        },
    )


def build_judge(
    *,
    model: str | None,
    base_url: str | None,
    no_judge: bool,
    retries: int,
    concurrency: int,
    cache: Path | None,
    timeout: float | None = None,
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

        problem = ensure_reachable(where, inner.client.api_key, inner.timeout)
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


def fit_to_server(
    judge: Any,
    *,
    timeout: float,
    timeout_given: bool,
    concurrency: int,
    concurrency_given: bool,
    n: int,
    judge_path: str = DEFAULT_JUDGE_PATH,
    summaries: Iterable[str] = (),
) -> tuple[float, int]:
    """Fit the run to the judge's server (:func:`shared.pipeline.fit.afit_run`, the one place
    the library and both engines fit a run) and say what was decided, before the first row.
    Returns the (timeout, concurrency) the run uses."""
    from ..pipeline.fit import afit_run

    fit = asyncio.run(
        afit_run(
            judge,
            n=n,
            judge_path=judge_path,
            summaries=summaries,
            concurrency=concurrency,
            timeout_given=timeout_given,
            concurrency_given=concurrency_given,
        )
    )
    for kind, note in fit.notes:
        err.print(Text(plain(note), style="yellow" if kind == "warning" else ""))
    return (fit.timeout if fit.timeout is not None else timeout), (fit.concurrency or concurrency)


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
    a value somewhere, the status, and pass/FAIL with ``--threshold``; on the sentences path,
    under it, each shown row's unsupported sentences per error category. The results file and
    the report hold the rest (:mod:`.table` sizes it to the terminal)."""
    out.print(results_table(rows[:TABLE_ROWS], keys, width=out.width, threshold=threshold))
    if len(rows) > TABLE_ROWS:
        out.print(f"… and {len(rows) - TABLE_ROWS} more rows in the results file.")
    for line in error_type_lines(rows[:TABLE_ROWS], rows):  # the sentences path's detail
        out.print(Text(plain(line)))


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
    reasons = getattr(inner, "retry_reasons", None)
    text = bill_text(usage, getattr(inner, "prices", None), reasons).removeprefix("Judge bill: ")
    err.print(f"Judge bill: {literal(text)}")
    return text


def _print_stability(
    rows: list[Row], keys: list[str], threshold: float, pass_mark: float | None = None
) -> None:
    """With --samples k > 1: how much one row moves between judge samples, per sub-score, and
    how many rows a single run could have put on the other side of ``threshold`` (the report's
    stability section, :func:`.report.stability_section`, in words); a ``threshold`` that is not
    the run's ``pass_mark`` is said to be --flip-threshold's."""
    section = stability_section(rows, keys, threshold)
    if section is None:
        return
    parts = [
        f"{SHORT_NAMES.get(s.sub_score, s.sub_score)} {s.mean_sd:.3f} (max {s.max_sd:.3f})"
        for s in section["spread"]
    ]
    out.print(f"Spread over judge samples (mean sd per row): {literal('; '.join(parts))}.")
    why = ""
    if pass_mark is not None and pass_mark != threshold:
        why = f" (--flip-threshold {threshold:g}, not the run's pass mark {pass_mark:g})"
    out.print(f"Pass/fail flips: {literal(section['flips'])}{literal(why)}.")


def flip_mark(flip_threshold: float, given: bool, threshold: float | None) -> float:
    """The pass mark the flips between judge samples are counted at: ``--flip-threshold`` when
    given, else the run's own pass mark (``--threshold`` or ``--fail-under``), else
    ``--flip-threshold``'s default."""
    return flip_threshold if given or threshold is None else threshold


def pass_mark(
    threshold: float | None, fail_under: float | None, inconclusive: str | None
) -> float | None:
    """The run's one pass mark: ``--fail-under`` is ``--threshold`` that also sets the exit
    status, so both at different values, or ``--inconclusive`` without ``--fail-under``, is a
    usage error."""
    if threshold is not None and fail_under is not None and threshold != fail_under:
        raise _usage_error(
            f"--threshold {threshold:g} and --fail-under {fail_under:g} disagree: --fail-under "
            "is the pass mark of the table and report too; give one of them"
        )
    if inconclusive is not None and fail_under is None:
        raise _usage_error("--inconclusive says how --fail-under counts a row; add --fail-under")
    if inconclusive is not None:
        from ..evaluation.verdict import check_inconclusive

        try:
            check_inconclusive(inconclusive)
        except ValueError:
            raise _usage_error(
                f"--inconclusive must be pass or fail, got {inconclusive!r}"
            ) from None
    return fail_under if fail_under is not None else threshold


def verdict_status(rows: list[Row], fail_under: float | None, inconclusive: str | None) -> int:
    """``--fail-under``: the rows' verdicts in one line on stderr, and the exit status they give
    (:data:`EXIT_OK` without ``--fail-under``)."""
    if fail_under is None:
        return EXIT_OK
    verdicts = [pass_text(row, fail_under) for row in rows]
    passed, failed, unsure = (verdicts.count(v) for v in (PASS, FAIL, INCONCLUSIVE))
    line = f"--fail-under {fail_under:g}: {passed} pass, {failed} FAIL, {unsure} inconclusive"
    if unsure and inconclusive is not None:
        line += f" (counted as {inconclusive}: --inconclusive {inconclusive})"
    status = EXIT_OK
    if failed or (unsure and inconclusive == "fail"):
        status = EXIT_BELOW_PASS_MARK
    elif unsure and inconclusive is None:
        status = EXIT_INCONCLUSIVE
        line += " (exit status 4; --inconclusive pass or fail counts them as such)"
    err.print(f"[bold red]{literal(line)}.[/]" if status else f"[bold green]{literal(line)}.[/]")
    return status


def _skipped(keys: list[str]) -> list[str]:
    """The columns a run without a judge leaves empty, whatever the rows happen to contain (a
    one-sentence summary has no coherence, but coherence was not skipped)."""
    return [k for k in keys if k in NEEDS_JUDGE]


def _finish(rows: list[Row], output: Path, report_path: Path | None, skipped: list[str]) -> int:
    ok = sum(r.get("status") == STATUS_OK for r in rows)
    unscored = sum(r.get("status") == STATUS_UNSCORED for r in rows)
    bad = sum(r.get("status") == STATUS_BAD_INPUT for r in rows)
    if skipped:  # how to enable them was said once, at the start
        err.print(f"[yellow]Skipped (no judge):[/] {literal(', '.join(skipped))}.")
    err.print(f"Results: {literal(output)}")
    if report_path is not None:
        err.print(f"Report:  {literal(report_path)}")
    line = f"{ok} of {len(rows)} rows scored, {unscored} unscored, {bad} bad input."
    if unscored or bad:
        err.print(f"[bold red]{literal(line)}[/] The error column of the results says why.")
        if unscored:
            err.print("Rerun with --retry-unscored to try the unscored rows again.")
        return EXIT_ROWS_FAILED
    err.print(f"[bold green]{literal(line)}[/]")
    return EXIT_OK
