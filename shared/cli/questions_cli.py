"""``summary-eval questions``: freeze each source's weighted questions into a file people read
and edit, and report how they drifted from an older file (docs/QUESTIONS.md); and what
``score --questions`` says about the file it was given.

Exit status: 0 every source has its questions, 1 some sources failed (the others are written),
2 usage error, 130 interrupted (sources done are written; rerun the same command to resume).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from ..analysis.question_drift import SourceDrift, question_drift
from ..core import bounded_json
from ..core.bridge import run_sync
from ..core.files import appending, read_regular, replacing, write_json
from ..evaluation.frozen import (
    FrozenQuestion,
    FrozenQuestions,
    QuestionsFileError,
    frozen_use,
    read_questions,
)
from ..evaluation.options import RUN_DEFAULTS, ScoreOptions, normalise_source
from ..pipeline.compose import failure_text
from ..pipeline.freeze import (
    afreeze_source,
    distinct_sources,
    judge_name,
    prepared_judge,
    today,
)
from ..runs.inputs import Columns, InputError, InputRow, detect_format, read_rows
from . import flags
from .common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_ROWS_FAILED,
    JUDGE_HINT,
    _given,
    _print_bill,
    _usage_error,
    build_judge,
    default_cache_path,
    err,
    out,
)
from .flags import options_from_flags, with_option_flags
from .paths import PathProblem, check_run_paths
from .terminal import literal, plain

QUESTION_OPTIONS = ("n", "judge_path", "language", "context_budget", "retries", "concurrency")
"""The scoring options that shape a source's questions (or how they are asked for)."""


# ---------------------------------------------------------------------------------------------
# score --questions: what the file does for this run
# ---------------------------------------------------------------------------------------------


def row_sources(rows: list[InputRow]) -> list[tuple[str, str]]:
    """(id, normalised source) of every row with a usable source."""
    found = []
    for row in rows:
        if row.source is None:
            continue
        try:
            found.append((row.id, normalise_source(row.source)))
        except (TypeError, ValueError):
            continue
    return found


def announce_frozen(options: ScoreOptions, rows: list[InputRow], run: dict[str, Any]) -> None:
    """With frozen questions: how many sources use them, how many get theirs generated, and the
    stale ones by id (stderr, and ``run["questions"]`` for the results' run facts)."""
    frozen = options.questions_file
    if frozen is None:
        return
    where = frozen.path or "the given questions"
    use = frozen_use(frozen, row_sources(rows))
    err.print(Text(plain(use.line(where))))
    if use.stale:
        err.print(
            Text(
                plain(
                    f"Stale: the text of {', '.join(use.stale)} changed since its questions were "
                    f"frozen; its questions are generated again (rerun `summary-eval questions` "
                    "to freeze them)."
                ),
                style="yellow",
            )
        )
    run["questions"] = use.facts(where)


# ---------------------------------------------------------------------------------------------
# The questions command
# ---------------------------------------------------------------------------------------------


@with_option_flags(only=QUESTION_OPTIONS)
def questions_command(
    ctx: typer.Context,
    input_path: Annotated[
        Path,
        typer.Argument(
            metavar="SOURCES", help="JSONL or CSV with a source column (a score INPUT file)."
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Questions file (.jsonl; default ./<SOURCES stem>.questions.jsonl, none with "
            "--against). An existing one is resumed: its questions, hand edits included, kept.",
        ),
    ] = None,
    against: Annotated[
        Path | None,
        typer.Option(help="An older questions file: print what changed, per source."),
    ] = None,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="With --against: write the drift as JSON.")
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace the questions in OUTPUT of sources whose text (or judge) changed.",
        ),
    ] = False,
    input_format: Annotated[
        str | None, typer.Option(help="jsonl or csv (default: from the extension).")
    ] = None,
    source_column: Annotated[str, typer.Option(help="Column holding the source.")] = "source",
    id_column: Annotated[str, typer.Option(help="Column holding the row id.")] = "id",
    model: flags.Model = None,
    base_url: flags.BaseUrl = None,
    api_key: flags.ApiKey = None,
    timeout: flags.Timeout = RUN_DEFAULTS.timeout,
    cache: Annotated[
        Path | None,
        typer.Option(help="SQLite judge cache (default: the user's cache directory)."),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Keep no judge cache.")] = False,
    **option_flags: Any,
) -> None:
    """Generate each source's weighted questions (reference answer, importance) into a file to
    review, edit and reuse with `score --questions`; with --against, report how they drifted.

    One judge call per distinct source. Rerunning resumes: sources already in OUTPUT keep their
    questions as they are, hand edits included.
    """
    given = frozenset(name for name in ctx.params if _given(ctx, name))
    sources = _read_sources(input_path, input_format, source_column, id_column)
    core = options_from_flags(option_flags, given)
    retries, concurrency = core.pop("retries"), core.pop("concurrency")
    try:
        options = ScoreOptions.from_kwargs(core)
    except (TypeError, ValueError) as exc:
        raise _usage_error(f"bad option: {exc}") from None
    target = output if output is not None or against is not None else _default(input_path)
    cache_path = None if no_cache else (cache or default_cache_path())
    old = _read_against(input_path, against, target, cache_path, json_path)
    judge, judge_text, _ = build_judge(
        model=model,
        base_url=base_url,
        no_judge=False,
        retries=retries,
        concurrency=concurrency,
        cache=cache_path,
        timeout=timeout if "timeout" in given else None,
        api_key=api_key,
    )
    if judge is None:
        raise _usage_error(f"questions are generated by a judge ({judge_text}): {JUDGE_HINT}")
    err.print(f"Judge: {literal(judge_text)}")
    kept = _resume(target, sources, judge_name(judge), force)
    todo = {key: value for key, value in sources.items() if key not in kept}
    try:
        made, failed = run_sync(lambda: _generate(todo, judge, options, target))
    except KeyboardInterrupt:
        err.print(
            "\n[bold yellow]Interrupted.[/] The sources done are written; run the same command "
            "again to resume."
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    every = {**kept, **made}
    current = FrozenQuestions(
        tuple(q for key in sources if key in every for q in every[key]),
        None if target is None else str(target),
    )
    _print_bill(judge)
    _report_written(target, len(sources), len(kept), len(made), failed)
    if old is not None:
        drifts = question_drift(old, current)
        print_drift(drifts, str(against))
        if json_path is not None:
            write_json(json_path, [d.as_dict() for d in drifts])
            err.print(f"Drift JSON: {literal(json_path)}")
    raise typer.Exit(EXIT_ROWS_FAILED if failed else EXIT_OK)


def _default(input_path: Path) -> Path:
    return Path.cwd() / f"{input_path.stem}.questions.jsonl"


def _read_sources(
    path: Path, fmt: str | None, source_column: str, id_column: str
) -> dict[str, tuple[str, str]]:
    """The distinct sources of SOURCES by hash: (the first id, the normalised text)."""
    try:
        rows = read_rows(
            path,
            Columns(source=source_column, id=id_column),
            detect_format(path, fmt),
            summaries=False,
        )
    except InputError as exc:
        raise _usage_error(str(exc)) from None
    found = row_sources(rows)
    skipped = len(rows) - len(found)
    if skipped:
        err.print(f"[yellow]Skipped {literal(skipped)} row(s) without a usable source.[/]")
    if not found:
        raise _usage_error(f"no row of {path} has a source to ask questions about")
    return distinct_sources(dict(found))


def _read_against(
    input_path: Path,
    against: Path | None,
    target: Path | None,
    cache: Path | None,
    json_path: Path | None,
) -> FrozenQuestions | None:
    """Check the paths (no output is an input or another output) and read the old file."""
    inputs = {"SOURCES": input_path, **({"--against file": against} if against else {})}
    outputs = {"questions file": target, "judge cache": cache, "drift JSON": json_path}
    try:
        check_run_paths(inputs, outputs)
    except PathProblem as exc:
        raise _usage_error(str(exc)) from None
    if json_path is not None and against is None:
        raise _usage_error("--json writes the drift report: give --against OLD.jsonl too")
    if against is None:
        return None
    try:
        return read_questions(against)
    except QuestionsFileError as exc:
        raise _usage_error(str(exc)) from None


def _resume(
    target: Path | None, sources: dict[str, tuple[str, str]], judge: str, force: bool
) -> dict[str, tuple[FrozenQuestion, ...]]:
    """The sources whose questions ``target`` already holds for this text and judge (kept as
    they are); the file's stale sources (same id, another text or judge) are refused, or with
    ``force`` removed from it to be generated again."""
    if target is None or not target.exists():
        return {}
    try:
        existing = read_questions(target)
    except QuestionsFileError as exc:
        raise _usage_error(f"{exc}; it is not resumed or rewritten: fix it, or choose -o") from None
    kept, stale = {}, {}
    ids = existing.ids()
    replaced: set[str] = set()  # the source hashes whose lines --force removes
    for key, (source_id, _) in sources.items():
        held = existing.of_hash(key)
        if held and all(q.judge == judge for q in held):
            kept[key] = held
        elif held:
            stale[source_id] = f"frozen by {held[0].judge}"
            replaced.add(key)
        elif source_id in ids:
            stale[source_id] = "its text changed"
            replaced |= ids[source_id] - set(sources)  # an old text no source has any more
    if stale and not force:
        listed = "; ".join(f"{i} ({why})" for i, why in stale.items())
        raise _usage_error(
            f"{len(stale)} source(s) of {target} were frozen for another text or judge: "
            f"{listed}. Pass --force to generate them again (their questions in the file, hand "
            "edits included, are replaced), or write to a new file with -o."
        )
    if stale:
        err.print(f"--force: generating the questions of {len(stale)} source(s) again.")
        _drop(target, replaced)
    if kept:
        err.print(f"Resuming: {len(kept)} of {len(sources)} sources already in {literal(target)}.")
    return kept


def _drop(target: Path, hashes: set[str]) -> None:
    """Rewrite ``target`` without the lines of the source hashes ``hashes`` (every other line
    byte for byte). By hash, not id: an id's old text may still be another row's source, whose
    questions (hand edits included) are kept."""
    lines = read_regular(target, encoding="utf-8-sig").splitlines(keepends=True)
    keep = [
        line
        for line in lines
        if not line.strip() or bounded_json.loads(line)["source_hash"] not in hashes
    ]
    with replacing(target) as file:
        file.writelines(keep)


async def _generate(
    todo: dict[str, tuple[str, str]], judge: Any, options: ScoreOptions, target: Path | None
) -> tuple[dict[str, tuple[FrozenQuestion, ...]], dict[str, str]]:
    """Each source's questions, appended to ``target`` the moment they come (a rerun resumes);
    a failed source is reported and the others go on."""
    made: dict[str, tuple[FrozenQuestion, ...]] = {}
    failed: dict[str, str] = {}
    if not todo:
        return made, failed
    stack, options = await prepared_judge(judge, options)
    date = today()
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        held = read_regular(target, errors="replace") if target.exists() else ""
        if held and not held.endswith("\n"):
            with appending(target) as file:
                file.write("\n")  # a hand-edited last line without its newline

    order = list(todo)
    written = 0  # the sources before this one in ``order`` are settled and written

    async def one(key: str, source_id: str, text: str) -> None:
        nonlocal written
        try:
            made[key] = await afreeze_source(source_id, text, stack, options, date=date)
        except Exception as exc:  # one source's failure never sinks the others
            failed[source_id] = failure_text(exc)
        while written < len(order) and (
            order[written] in made or todo[order[written]][0] in failed
        ):  # in input order, as soon as every source before it is settled
            if target is not None and order[written] in made:
                with appending(target) as file:
                    file.writelines(q.as_json() + "\n" for q in made[order[written]])
            written += 1

    await asyncio.gather(*(one(key, i, text) for key, (i, text) in todo.items()))
    return made, failed


def _report_written(
    target: Path | None, total: int, kept: int, made: int, failed: dict[str, str]
) -> None:
    for source_id, why in failed.items():
        err.print(Text(plain(f"failed: {source_id}: {why}"), style="red"))
    where = "" if target is None else f" in {target}"
    line = plain(
        f"Questions of {kept + made} of {total} sources{where}: {made} generated, {kept} kept."
    )
    if failed:
        err.print(
            Text(f"{plain(line)} {len(failed)} failed; rerun to retry them.", style="bold red")
        )
    else:
        err.print(Text(plain(line), style="bold green"))


# ---------------------------------------------------------------------------------------------
# The drift report
# ---------------------------------------------------------------------------------------------


def drift_lines(drift: SourceDrift) -> list[str]:
    """One source's drift as terminal lines (the first names the source)."""
    head = drift.source_id + (" (source text changed)" if drift.text_changed else "")
    if drift.old_hash is None:
        return [f"{head}: no old questions; {len(drift.new)} new"]
    if not drift.changed:
        return [f"{head}: no change ({drift.unchanged} questions)"]
    counts = [
        f"{len(items)} {what}"
        for what, items in (
            ("reworded", drift.reworded),
            ("new", drift.new),
            ("gone", drift.gone),
            ("importance changed", drift.importance),
            ("reference answer changed", drift.answers),
        )
        if items
    ]
    lines = [f"{head}: {', '.join(counts)}; {drift.unchanged} unchanged"]
    lines += [f'  reworded ({r.similarity:.2f}): "{r.old}" -> "{r.new}"' for r in drift.reworded]
    lines += [f'  new (importance {q["importance"]}): "{q["question"]}"' for q in drift.new]
    lines += [f'  gone (importance {q["importance"]}): "{q["question"]}"' for q in drift.gone]
    lines += [f'  importance {c.old} -> {c.new}: "{c.question}"' for c in drift.importance]
    lines += [f'  reference answer changed: "{q}"' for q in drift.answers]
    return lines


def print_drift(drifts: list[SourceDrift], against: str) -> None:
    out.print(Text(plain(f"Question drift against {against}:")))
    for drift in drifts:
        for line in drift_lines(drift):
            out.print(Text(plain(line)), soft_wrap=True)
    changed = sum(d.changed for d in drifts)
    out.print(Text(f"{literal(changed)} of {len(drifts)} sources changed."))


def register(app: typer.Typer) -> None:
    app.command("questions")(questions_command)
