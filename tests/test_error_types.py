"""FineSurE's error categories on the sentences path, end to end: a scripted judge flags one
summary sentence per category, and every category, its wrong span, quote and reason reach the
results file, the HTML report, the terminal's detail and DeepEval's metric; bad replies to the
sentence check or the pointed review are rejected and retried with the error fed back, and a row
whose judge never replies usably is unscored with the reason."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shared import score_summary
from shared.cli.app import app
from shared.cli.report import evidence_view
from shared.cli.table import error_type_lines, row_error_types
from shared.judge.openai import OpenAIJudge
from shared.prompts import ERROR_TYPES
from shared.prompts import pointing as pt
from shared.runs.results import read_results
from shared.testing import FakeJudge, default_answer, stub_server

SOURCE = (
    "Harwick's council approved a 42-kilometre bike lane network on Tuesday by 7 votes to 2. "
    "The network will cost 18 million euros. Work begins in March on Station Road. "
    "Mayor Elena Ruiz proposed the plan after three cyclists were hurt there last year. "
    "Because of the crashes, the council moved the vote forward. "
    "Her deputy, Tom Baker, opposed it."
)
# one sentence per category, in ERROR_TYPES order: (sentence, wrong span, source quote, reason)
FLAGGED: dict[str, tuple[str, str, str, str]] = {
    "out-of-context": (
        "The council approved the network after a public referendum.",
        "after a public referendum",
        "",
        "The source mentions no referendum.",
    ),
    "predicate": (
        "The council rejected the bike lane network.",
        "rejected",
        "Harwick's council approved a 42-kilometre bike lane network",
        "The council approved the network, it did not reject it.",
    ),
    "entity": (
        "The network will cost 25 million euros.",
        "25 million euros",
        "The network will cost 18 million euros.",
        "The cost is 18 million euros, not 25.",
    ),
    "circumstantial": (
        "Work begins in July on Station Road.",
        "in July",
        "Work begins in March on Station Road.",
        "Work begins in March.",
    ),
    "coreference": (
        "He proposed the plan after the crashes.",
        "He",
        "Mayor Elena Ruiz proposed the plan",
        "The plan was proposed by <b>Ruiz</b> & not by a man.",  # markup: escaped in the report
    ),
    "discourse-link": (
        "The crashes happened because the vote was moved forward.",
        "because the vote was moved forward",
        "Because of the crashes, the council moved the vote forward.",
        "The cause is reversed: the crashes moved the vote.",
    ),
    "other": (
        "The network is the largest in Europe.",
        "the largest in Europe",
        "a 42-kilometre bike lane network",
        "The source makes no comparison with Europe.",
    ),
}
SUMMARY = " ".join(sentence for sentence, *_ in FLAGGED.values())
ALL_ONE = dict.fromkeys(ERROR_TYPES, 1)


def checks_reply() -> dict[str, Any]:
    """The scripted sentence check: every sentence flagged with its own category."""
    return {
        "sentences": [
            {"index": i, "verdict": kind, "span": span, "quote": quote, "reason": reason}
            for i, (kind, (_, span, quote, reason)) in enumerate(FLAGGED.items(), start=1)
        ]
    }


def scripted_judge() -> FakeJudge:
    return FakeJudge({"SentenceChecks": json.dumps(checks_reply())})


def run_cli(*args: Any) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, " ".join(result.output.split())


def score_one(tmp_path: Path, judge: FakeJudge, *extra: str) -> tuple[int, str, Path, Path]:
    """``summary-eval score`` of the one row through the stub server: (exit code, output,
    results file, report)."""
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps({"id": "r1", "source": SOURCE, "summary": SUMMARY}) + "\n")
    out, report = tmp_path / "out.jsonl", tmp_path / "report.html"
    with stub_server(judge) as url:
        code, text = run_cli(
            "score", inp, "-o", out, "--report", report, "--base-url", url, "--model", "stub",
            "--no-cache", *extra,
        )  # fmt: skip
    return code, text, out, report


def assert_every_category(claims: list[dict[str, Any]]) -> None:
    assert len(claims) == 7  # the summary is split into exactly its seven sentences
    for claim, (kind, (sentence, span, quote, reason)) in zip(claims, FLAGGED.items(), strict=True):
        assert claim["claim"] == sentence
        assert (claim["error_type"], claim["span"], claim["quote"], claim["reason"]) == (
            kind,
            span,
            quote,
            reason,
        )
        expected = "not_in_source" if kind == "out-of-context" else "contradicted"
        assert claim["verdict"] == expected


# ---------------------------------------------------------------------------------------------
# Every category reaches every surface
# ---------------------------------------------------------------------------------------------


def test_the_evaluation_counts_each_category() -> None:
    result = score_summary(SOURCE, SUMMARY, judge=scripted_judge(), dimensions=(), cache=False)
    assert result.scored, result.error
    assert result.error_types == ALL_ONE and result.alignment == 0.0
    assert_every_category([c.model_dump() for c in result.claims])
    assert "Error types: " in result.reason_detail
    for q in result.questions:  # the pointed sentence is kept with each question
        assert q.sentence is not None and 0 <= q.sentence <= 7


def test_each_category_reaches_the_results_file_the_report_and_the_terminal(
    tmp_path: Path,
) -> None:
    code, text, out, report = score_one(tmp_path, scripted_judge())
    assert code == 0, text
    (row,) = read_results(out)
    evidence = row["evidence"]
    assert row["status"] == "ok" and evidence["error_types"] == ALL_ONE
    assert_every_category(evidence["claims"])
    assert all(isinstance(q.get("sentence"), int) for q in evidence["questions"])

    # the terminal: the row's counts under the table
    assert "Unsupported sentences by error type" in text
    assert "r1: " + ", ".join(f"{k} 1" for k in ERROR_TYPES) in text

    # the report: the counts, and each sentence's category, span, quote and reason, escaped
    for page in (report.read_text(), _rebuilt(out, tmp_path)):
        counts = ", ".join(f"{k} 1" for k in ERROR_TYPES)
        assert f"<strong>Error types:</strong> {counts}</p>" in page
        assert f"{counts} (unsupported sentences, in 1 of 1 scored rows)" in page  # run facts
        assert 'class="evidence unsupported-claims unsupported-sentences"' in page
        for kind, (_, span, quote, reason) in FLAGGED.items():
            assert '<td class="bad error-type" title="' in page
            assert f">{kind}</td>" in page
            assert f'<td class="span">{_html(span)}</td>' in page
            assert _html(reason) in page and _html(quote) in page
        assert "&lt;b&gt;Ruiz&lt;/b&gt; &amp; not" in page and "<b>Ruiz</b>" not in page
        assert '<td class="num pointer">' in page  # missed questions: the pointed sentence


def _html(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))


def _rebuilt(results: Path, tmp_path: Path) -> str:
    """``summary-eval report`` from the results file alone: the same evidence."""
    page = tmp_path / "rebuilt.html"
    code, text = run_cli("report", results, "-o", page)
    assert code == 0, text
    return page.read_text()


def test_each_category_reaches_deepevals_breakdown_and_logs() -> None:
    from deepeval.test_case import LLMTestCase

    from deepeval_ext import SummaryAlignmentMetric, SummaryQualityMetric
    from deepeval_ext.testing import FakeDeepEvalModel

    case = LLMTestCase(input=SOURCE, actual_output=SUMMARY)
    metric = SummaryQualityMetric(model=FakeDeepEvalModel(scripted_judge()), cache=False)
    metric.measure(case, _show_indicator=False)
    assert metric.error is None
    breakdown = metric.score_breakdown
    assert {k: breakdown[f"error_types.{k}"] for k in ERROR_TYPES} == ALL_ONE
    assert all(isinstance(v, int | float) for v in breakdown.values())  # still all numbers
    assert breakdown["alignment"] == 0.0
    logs = metric.verbose_logs
    for kind, (sentence, span, quote, reason) in FLAGGED.items():
        assert f"{sentence}\n   verdict: " in logs and f', {kind}, wrong span "{span}"' in logs
        assert reason in logs and (not quote or f'quote: "{quote}"' in logs)
    assert "Error types: " + ", ".join(f"{k} 1" for k in ERROR_TYPES) in logs
    assert "8. " not in logs.split("Claims and verdicts:")[1].split("Sub-scores")[0]

    # a sub-score metric reports them too; the claims paths have no categories to report
    alignment = SummaryAlignmentMetric(model=FakeDeepEvalModel(scripted_judge()), cache=False)
    alignment.measure(case, _show_indicator=False)
    assert alignment.score_breakdown["error_types.entity"] == 1
    claims = SummaryQualityMetric(model=FakeDeepEvalModel(), judge_path="two-call", cache=False)
    claims.measure(case, _show_indicator=False)
    assert not any(k.startswith("error_types.") for k in claims.score_breakdown)


def test_the_claims_paths_keep_their_shape(tmp_path: Path) -> None:
    code, text, out, report = score_one(tmp_path, FakeJudge(), "--judge-path", "two-call")
    assert code == 0, text
    (row,) = read_results(out)
    assert "error_types" not in row["evidence"] and row_error_types(row) == {}
    assert all("error_type" not in c for c in row["evidence"]["claims"])
    assert "Unsupported sentences by error type" not in text
    page = report.read_text()
    assert "<h4>Unsupported claims</h4>" in page and "unsupported-sentences" not in page
    assert 'id="error-types"' not in page and '<td class="num pointer">' not in page


def test_error_type_counts_are_read_defensively() -> None:
    counts = {"entity": 2, "predicate": 0, "out-of-context": 1}
    assert row_error_types({"evidence": {"error_types": counts}}) == {
        "out-of-context": 1,
        "entity": 2,
    }  # nonzero only, in FineSurE's order
    assert row_error_types({"evidence": json.dumps({"error_types": counts})}) == {
        "out-of-context": 1,
        "entity": 2,
    }  # a Parquet row's evidence is JSON text
    for junk in (None, "not json", {"error_types": "3"}, {"error_types": {"entity": True}}):
        assert row_error_types({"evidence": junk}) == {}
    rows = [
        {"id": "a\x1b[2J", "evidence": {"error_types": {"entity": 1}}},
        {"id": "b", "evidence": {"error_types": {"entity": 2, "other": 1}}},
        {"id": "c", "evidence": {"claims": []}},
    ]
    assert error_type_lines(rows) == [
        "Unsupported sentences by error type (the results file has each one):",
        "  a\\x1b[2J: entity 1",  # an id's control characters are shown, never sent
        "  b: entity 2, other 1",
        "  all 2 rows with one: entity 3, other 1",
    ]
    assert error_type_lines(rows[2:]) == []
    # the report numbers the unsupported sentences as the questions point at them
    evidence = {"error_types": {}, "claims": [{"claim": "A.", "verdict": "supported"}] * 2}
    evidence["claims"] = [*evidence["claims"], {"claim": "C.", "verdict": "contradicted"}]
    view = evidence_view(evidence)
    assert view["sentences"] and [c["number"] for c in view["claims"]] == [3]


# ---------------------------------------------------------------------------------------------
# Bad replies: rejected, retried with the error fed back; unscored when no retry helps
# ---------------------------------------------------------------------------------------------


def _bad_check(change: Callable[[dict[str, Any]], None]) -> str:
    reply = copy.deepcopy(checks_reply())
    change(reply)
    return json.dumps(reply)


def _bad_review(change: Callable[[dict[str, Any]], None]) -> Callable[[str], str]:
    """The fake's own pointed review of the prompt, with its first answer changed."""

    def answer(prompt: str) -> str:
        reply = default_answer(prompt, pt.PointedReview).model_dump(exclude_unset=True)
        change(reply["answers"][0])
        return json.dumps(reply)

    return answer


SPAN_NEEDED = (
    "sentence 3 is unsupported: it needs a span (the wrong words, copied from the sentence) and a "
    "reason in words"
)

# name: (schema, bad reply, what the fed-back error says in-process, and through the server)
BAD: dict[str, tuple[str, Any, str, str]] = {
    "missing sentence": (
        "SentenceChecks",
        _bad_check(lambda r: r["sentences"].pop()),
        "expected one entry for each of sentences 1..7 in order, got indices [1, 2, 3, 4, 5, 6]",
        "sentences.6: Field required",
    ),
    "extra sentence": (
        "SentenceChecks",
        _bad_check(lambda r: r["sentences"].append({"index": 8, "verdict": "supported"})),
        "got indices [1, 2, 3, 4, 5, 6, 7, 8]",
        "Tuple should have at most 7 items",
    ),
    "unknown category": (
        "SentenceChecks",
        _bad_check(lambda r: r["sentences"][2].update(verdict="made-up")),
        "input_value='made-up'",
        "sentences.2.FlaggedSentence.verdict: Input should be 'out-of-context', 'predicate'",
    ),
    "no span": (
        "SentenceChecks",
        _bad_check(lambda r: r["sentences"][2].update(span=" ")),
        SPAN_NEEDED,
        SPAN_NEEDED,
    ),
    "a placeholder for the span and the reason": (  # what a 1.5B judge copied from an example
        "SentenceChecks",
        _bad_check(lambda r: r["sentences"][2].update(span="...", quote="...", reason="...")),
        SPAN_NEEDED,
        SPAN_NEEDED,
    ),
    "pointer 99": (
        "PointedReview",
        _bad_review(lambda a: a.update(sentence=99)),
        "Input should be less than or equal to 7 [type=less_than_equal, input_value=99",
        "answers.0.PointedGrade.sentence: Input should be less than or equal to 7",
    ),
    "grade 7": (
        "PointedReview",
        _bad_review(lambda a: a.update(grade=7)),
        "Input should be 1, 2, 3 or 4 [type=literal_error, input_value=7",
        "answers.0.ReasonedGrade.grade: Input should be 1, 2, 3 or 4",
    ),
    "a placeholder reason": (
        "PointedReview",
        _bad_review(lambda a: a.update(grade=3, sentence=1, reason="...")),
        "item 1: grade 3 needs a reason in words",
        "item 1: grade 3 needs a reason in words",
    ),
    "a grade without a pointer": (
        "PointedReview",
        _bad_review(lambda a: a.update(grade=3, sentence=0, reason="partly")),
        "item 1: grade 3 needs the number of the sentence that answers it",
        "item 1: grade 3 needs the number of the sentence that answers it",
    ),
}
RETRY = "Your previous reply could not be used: "


def _score(judge: FakeJudge, route: str) -> Any:
    """The summary scored in-process (the fake: the shared check schema, step 8) or through
    the stub server (an OpenAIJudge on a local server: the exact positional list, the real
    reply parser)."""
    if route == "in-process":
        return score_summary(SOURCE, SUMMARY, judge=judge, dimensions=(), cache=False)
    with stub_server(judge) as url:
        client = OpenAIJudge("stub", base_url=url, api_key="test")
        return score_summary(SOURCE, SUMMARY, judge=client, dimensions=(), cache=False)


@pytest.mark.parametrize("route", ["in-process", "server"])
@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_reply_is_retried_with_the_error_fed_back(case: str, route: str) -> None:
    schema, bad, in_process, served = BAD[case]
    said = in_process if route == "in-process" else served
    judge = FakeJudge({schema: [bad]})  # then the fake's default answer
    result = _score(judge, route)
    assert result.scored, result.error
    first, retry = judge.prompts_for(schema)
    assert RETRY not in first
    assert retry.startswith(first) and RETRY in retry
    assert said in retry.split(RETRY, 1)[1], retry.split(RETRY, 1)[1]
    if route == "server":  # a judge that keeps a bill counts the retry in the row's usage
        assert result.usage["retries"] == 1


@pytest.mark.parametrize("route", ["in-process", "server"])
@pytest.mark.parametrize("case", list(BAD))
def test_a_reply_bad_on_every_attempt_leaves_the_row_unscored(case: str, route: str) -> None:
    schema, bad, in_process, served = BAD[case]
    said = in_process if route == "in-process" else served
    judge = FakeJudge({schema: [bad] * 10})
    result = _score(judge, route)
    assert not result.scored and result.score is None
    assert result.error.startswith(f"judge output for {schema} still invalid after 3 attempt(s)")
    assert said in result.error
    assert judge.calls[schema] == 3  # the first try and the two retries (retries=2)


def test_the_cli_leaves_such_a_row_unscored_with_its_reason(tmp_path: Path) -> None:
    _, bad, _, served = BAD["unknown category"]
    code, text, out, report = score_one(tmp_path, FakeJudge({"SentenceChecks": [bad] * 10}))
    assert code == 1, text
    (row,) = read_results(out)
    assert row["status"] == "unscored" and row["score"] is None
    assert "SentenceChecks still invalid after 3 attempt(s)" in row["error"]
    assert served in row["error"]
    page = report.read_text()
    assert 'id="failed-rows"' in page and "SentenceChecks still invalid" in page
