"""The batch runner: score input rows with bounded concurrency, writing each as it finishes.

Resuming is by row: a row whose id, input texts and signature match a finished row of the
results file is not scored again. Judge calls answered before an interruption are in the
persistent judge cache, so even a row that was half done pays only for the calls it had not got.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.signature import Signature
from ..evaluation.options import ScoreOptions, for_source, normalise_source
from ..pipeline import ascore_summary, signature
from .inputs import InputRow
from .results import (
    STATUS_BAD_INPUT,
    STATUS_OK,
    STATUS_UNSCORED,
    ResultsWriter,
    Row,
    error_row,
    evaluation_row,
)


@dataclass
class Plan:
    """What a run will do: rows kept from an earlier run and rows still to score."""

    rows: list[InputRow]
    kept: dict[str, Row] = field(default_factory=dict)
    todo: list[InputRow] = field(default_factory=list)
    signatures: dict[str, str] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)
    """Ids of finished rows, with unchanged texts, scored under other settings (signature or
    recorded settings)."""
    settings: dict[str, Any] = field(default_factory=dict)
    """This run's settings that change a score (:func:`run_settings`), recorded in every row's
    ``evidence.settings`` so that a resumed run compares them exactly."""

    run: dict[str, Any] = field(default_factory=dict)
    """What the run was (``input``, ``command``), recorded in ``evidence.run`` so that a report
    rebuilt from the results shows them; never compared."""


SETTINGS_KEY = "settings"
"""The key of the run settings in a result row's ``evidence``."""
RUN_KEY = "run"


def run_settings(judge: object, options: ScoreOptions) -> dict[str, Any]:
    """Everything of a run that changes a score, as JSON values compared exactly on resume: the
    options given (numbers as numbers: ``2.5`` and ``2.5000004`` differ, though the
    signature's ``:g`` formats them alike), the dimension set, and the judge's model and the
    settings that change its answers (its server's base URL among them: two servers may serve
    different weights under one model name)."""
    from ..judge.wrappers import judge_settings

    given = options.given_kwargs()
    settings: dict[str, Any] = {
        key: dict(value) if isinstance(value, Mapping) else value
        for key, value in sorted(given.items())
        if key not in ("dimensions", "questions_file")  # frozen questions: in row signatures
    }
    settings["dimensions"] = sorted(options.dimension_settings.dimensions)
    settings["judge"] = None if judge is None else getattr(judge, "model_id", None)
    settings["judge_settings"] = {} if judge is None else judge_settings(judge)
    return json.loads(json.dumps(settings, sort_keys=True, default=str))


def recorded_settings(row: Row) -> dict[str, Any] | None:
    """The run settings a result row recorded, or None (a row written before they were)."""
    evidence = row.get("evidence")
    found = evidence.get(SETTINGS_KEY) if isinstance(evidence, dict) else None
    return found if isinstance(found, dict) else None


def stale_reason(previous: list[Row], plan: Plan) -> str:
    """What differs for the first stale row of ``plan``: the recorded settings that changed
    (old and new value), else the two signatures."""
    row_id = plan.stale[0]
    old = next((r for r in previous if str(r.get("id")) == row_id), {})
    recorded = recorded_settings(old)
    if recorded is not None and recorded != plan.settings:
        keys = sorted(set(recorded) | set(plan.settings), key=str)
        changed = [
            f"{key}: {recorded.get(key)!r} then, {plan.settings.get(key)!r} now"
            for key in keys
            if recorded.get(key) != plan.settings.get(key)
        ]
        return "; ".join(changed)
    return f"signature {str(old.get('signature'))!r}, this run {plan.signatures[row_id]!r}"


def stamp_settings(row: Row, settings: Mapping[str, Any]) -> Row:
    """``row`` with the run's settings recorded in its evidence (what a resume compares)."""
    evidence = row.get("evidence")
    row["evidence"] = {**(evidence if isinstance(evidence, dict) else {}), SETTINGS_KEY: settings}
    return row


def stamp_run(row: Row, plan: Plan) -> Row:
    """``row`` as either engine writes it: the plan's settings and, when known, what the run was
    (``evidence.run``) recorded in its evidence."""
    stamp_settings(row, plan.settings)
    if plan.run:
        row["evidence"][RUN_KEY] = plan.run
    return row


def row_options(options: ScoreOptions, row: InputRow) -> ScoreOptions:
    """The core options for one row: the run's options plus the row's own questions (which
    replace frozen ones), or the frozen questions of the row's source (none when the questions
    file has none for its text)."""
    if row.questions:
        drop = {"questions_file": None} if options.questions_file is not None else {}
        return options.merged(questions=row.questions, **drop)
    if options.questions_file is not None and row.source is not None:
        try:
            return for_source(options, normalise_source(row.source))
        except (TypeError, ValueError):  # a bad source: the row is refused by the core
            return options
    return options


def expected_signature(judge: object, options: ScoreOptions) -> str:
    """The signature the core will give a result under ``options`` (what resume compares)."""
    return signature(judge, options)


BUDGET_FIELD = "budget"
"""The signature field of the context budget that chunked a long source."""


def accepted_signatures(judge: object, options: ScoreOptions) -> tuple[Signature, Signature]:
    """The run parts a finished row's signature may have to be resumed: the plain one, and the
    one of a row whose long source was chunked. With ``context_budget`` not given the core fits
    the budget to the judge server's window, which is known only once the run asks the server:
    the chunked row's budget is then whatever was fitted, and is left out of the comparison
    (:func:`resumable`)."""
    long = Signature.parse(signature(judge, options, long=True))
    if "context_budget" not in options.given:
        long = long.without(BUDGET_FIELD)
    return Signature.parse(signature(judge, options)), long


def resumable(old_signature: str, accepted: tuple[Signature, ...]) -> bool:
    """Whether a finished row's signature has the run part of one of ``accepted``."""
    run = Signature.parse(old_signature).run
    return run in accepted or run.without(BUDGET_FIELD) in accepted


def plan_run(
    rows: list[InputRow],
    previous: list[Row],
    *,
    judge: object,
    options: ScoreOptions,
    retry_unscored: bool = False,
) -> Plan:
    """Split rows into those finished by an earlier run and those to score now.

    A finished row is kept only if its input texts and signature are unchanged (same judge,
    options, prompts and package version), so a changed setting never mixes old scores in.
    Bad-input rows are always redone: they cost no judge call.
    """
    plan = Plan(rows=rows, settings=run_settings(judge, options))
    by_id = {str(row.get("id")): row for row in previous}
    run_sig = expected_signature(judge, options)
    run_accepted = accepted_signatures(judge, options)
    for row in rows:
        sig, accepted = run_sig, run_accepted
        if row.error is None and (row.questions or options.questions_file is not None):
            try:
                own = row_options(options, row)
                sig, accepted = expected_signature(judge, own), accepted_signatures(judge, own)
            except (TypeError, ValueError) as exc:
                row.error = f"questions: {exc}"
        plan.signatures[row.id] = sig
        old = by_id.get(row.id)
        finished = old is not None and (
            old.get("status") == STATUS_OK
            or (old.get("status") == STATUS_UNSCORED and not retry_unscored)
        )
        if (
            finished
            and row.error is None
            and old is not None
            and old.get("input_hash") == row.input_hash
        ):
            recorded = recorded_settings(old)
            same = recorded is None or recorded == plan.settings  # None: an older file
            if same and resumable(str(old.get("signature")), accepted):
                plan.kept[row.id] = old
                continue
            plan.stale.append(row.id)
        plan.todo.append(row)
    return plan


async def score_rows(
    plan: Plan,
    writer: ResultsWriter,
    *,
    judge: Any,
    options: ScoreOptions,
    keys: list[str],
    concurrency: int,
    on_row: Callable[[Row], None] = lambda row: None,
) -> list[Row]:
    """Score ``plan.todo``; append each row to ``writer`` the moment it is done.

    Returns every row (kept and new) in input order. One failing row never stops the others.
    """
    limit = asyncio.Semaphore(concurrency)
    done: dict[str, Row] = dict(plan.kept)

    async def one(row: InputRow) -> None:
        sig = plan.signatures.get(row.id, "")
        if row.error is not None:
            result = bad_row(row, row.error, sig, keys)
        else:
            async with limit:
                result = await _score_one(row, judge, options, sig, keys)
        stamp_run(result, plan)
        writer.append(result)
        done[row.id] = result
        on_row(result)

    await asyncio.gather(*(one(row) for row in plan.todo))
    return [done[row.id] for row in plan.rows]


async def _score_one(
    row: InputRow, judge: Any, options: ScoreOptions, sig: str, keys: list[str]
) -> Row:
    assert row.source is not None and isinstance(row.summary, str)
    try:
        ev = await ascore_summary(
            row.source, row.summary, judge=judge, options=row_options(options, row)
        )
    except (TypeError, ValueError) as exc:  # the core rejected the input before any judge call
        return bad_row(row, str(exc), sig, keys)
    except Exception as exc:  # a bug or an unexpected failure: this row only
        error = f"internal error: {type(exc).__name__}: {exc}"
        return bad_row(row, error, sig, keys, status=STATUS_UNSCORED)
    return evaluation_row(**_row_facts(row), ev=ev, without_judge=judge is None)


def _row_facts(row: InputRow) -> dict[str, Any]:
    """What every results row says of its input row."""
    return {
        "row_id": row.id,
        "position": row.position,
        "input_hash": row.input_hash,
        "summary": row.summary,
    }


def bad_row(
    row: InputRow, error: str, sig: str, keys: list[str], status: str = STATUS_BAD_INPUT
) -> Row:
    """An error row for ``row``: bad input by default, unscored for an unexpected failure."""
    return error_row(**_row_facts(row), error=error, signature=sig, keys=keys, status=status)
