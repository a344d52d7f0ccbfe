"""The fact-level diff of ``compare``: the examples scored twice through the stub server, the
second judge changing exactly one grade and one sentence's verdict on one row; the diff names
exactly that question and that sentence (nothing else) in ``shared.compare``'s result, the
terminal, ``--json`` and the HTML report. Rows without evidence (no judge, unscored) are listed
as not compared and show no difference; a question asked in one file only is not a worse
answer."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shared import FactDiff, compare, score_summaries
from shared.cli.app import app
from shared.prompts import pointing as pt
from shared.prompts import read_numbered_block
from shared.prompts import schemas as sch
from shared.runs.results import ResultsWriter, read_results, score_keys
from shared.testing import FakeJudge, default_answer, stub_server

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "summaries.jsonl"
ROW = "harwick-good"
SUMMARY = next(
    r["summary"] for r in map(json.loads, EXAMPLES.read_text().splitlines()) if r["id"] == ROW
)
QUESTION = "What does the source say about plan cost 18 million?"  # importance 4, graded 4
SENTENCE = "Work begins in March on Station Road, where three cyclists were hurt last year."
REFERENCE = (
    "The plan will cost 18 million euros, of which the regional government will pay 11 million."
)
FLAG = {
    "verdict": "circumstantial",
    "span": "in March",
    "quote": "Construction starts in March on Station Road",
    "reason": "Scripted: the second judge doubts the month.",
}
FAST = ("--resamples", "50", "--trials", "50")


def _for_row(change: Callable[[str, dict[str, Any]], None], schema: type) -> Callable[[str], Any]:
    """The fake's default answer, changed by ``change`` on ``ROW``'s prompts only."""

    def answer(prompt: str) -> dict[str, Any]:
        data = default_answer(prompt, schema).model_dump(exclude_none=True)
        if SUMMARY.split(". ")[0] in prompt:  # only ROW's summary holds its first sentence
            change(prompt, data)
        return data

    return answer


def _lower_grade(prompt: str, data: dict[str, Any]) -> None:
    for entry, line in zip(data["answers"], read_numbered_block(prompt, "ITEMS"), strict=True):
        if QUESTION in line:
            assert entry["grade"] == 4, "the fake's grade this test lowers"
            entry.update(grade=1, reason="Scripted: the second judge finds it thin.")


def _flag_sentence(prompt: str, data: dict[str, Any]) -> None:
    index = read_numbered_block(prompt, "SENTENCES").index(SENTENCE) + 1
    for entry in data["sentences"]:
        if entry["index"] == index:
            assert entry["verdict"] == "supported"
            entry.update(FLAG)


def second_judge() -> FakeJudge:
    """The fake judge with one grade lowered (4 -> 1) and one sentence flagged, on ``ROW``."""
    return FakeJudge(
        {
            "PointedReview": [_for_row(_lower_grade, pt.PointedReview)] * 100,
            "SentenceChecks": [_for_row(_flag_sentence, pt.SentenceChecks)] * 100,
        }
    )


def run_cli(*args: Any) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


def score(out: Path, judge: FakeJudge) -> Path:
    with stub_server(judge) as url:
        code, text = run_cli(
            "score", EXAMPLES, "-o", out, "--no-report", "--base-url", url, "--model", "stub",
            "--no-cache",
        )  # fmt: skip
    assert code == 0, text
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    here = tmp_path_factory.mktemp("runs")
    return score(here / "a.results.jsonl", FakeJudge()), score(
        here / "b.results.jsonl", second_judge()
    )


def assert_exactly_the_change(facts: dict[str, Any]) -> None:
    """``--json``'s ``facts`` (or ``FactDiff.to_dict()``) names the one question and the one
    sentence, nothing else."""
    assert facts["compared"] == 8 and facts["not_compared"] == []
    assert facts["questions_in_one_file"] == []
    assert [r["id"] for r in facts["changed"]] == [ROW]
    row = facts["changed"][0]
    assert [
        (w["question"], w["grade_a"], w["grade_b"], w["importance"]) for w in row["worse_answers"]
    ] == [(QUESTION, 4, 1, 4)]
    assert row["worse_answers"][0]["weighted_drop"] == 12 == row["weighted_drop"]
    assert row["worse_answers"][0]["grade_reason_b"] == "Scripted: the second judge finds it thin."
    assert row["new_unsupported"] == [
        {
            "text": SENTENCE,
            "verdict": "contradicted",
            "quote": FLAG["quote"],
            "reason": FLAG["reason"],
            "error_type": "circumstantial",
            "span": "in March",
        }
    ]


def test_compare_names_exactly_the_changed_grade_and_verdict(runs: tuple[Path, Path]) -> None:
    a, b = runs
    result = compare(a, b, resamples=50, trials=50)
    assert isinstance(result.facts, FactDiff)
    assert_exactly_the_change(result.facts.to_dict())
    assert_exactly_the_change(result.to_dict()["facts"])
    # the same files the other way round: B (= the first run) loses nothing
    back = compare(b, a, resamples=50, trials=50).facts
    assert back.compared == 8 and back.changed() == []


def test_the_terminal_json_and_html_name_exactly_them(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = runs
    out_json, out_html = tmp_path / "c.json", tmp_path / "c.html"
    code, text = run_cli("compare", a, b, "--json", out_json, "-o", out_html, *FAST)
    assert code == 0, text
    flat = " ".join(text.split())
    assert "Fact-level diff: 1 of 8 compared ids lose facts in B" in flat
    assert (
        f"{ROW}: 1 question answered worse (weighted drop 12), 1 unsupported sentence or claim "
        "only in B" in flat
    )
    assert f"question, importance 4, grade 4 -> 1: {QUESTION}" in flat
    assert f"unsupported (circumstantial) only in B: {SENTENCE}" in flat
    assert "wrong span: in March" in flat and f"source quote: {FLAG['quote']}" in flat
    assert flat.count("grade ") == 1 and flat.count("unsupported (") == 1  # nothing else
    assert_exactly_the_change(json.loads(out_json.read_text())["facts"])

    page = out_html.read_text(encoding="utf-8")
    section = page[page.index('id="fact-diff"') : page.index("Worst regressions")]
    assert re.findall(r'<details class="card facts" data-id="([^"]+)"', section) == [ROW]
    rows = re.findall(r'<tr class="worse-answer">(.*?)</tr>', section, re.DOTALL)
    cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", rows[0], re.DOTALL)]
    assert len(rows) == 1 and cells[:6] == [QUESTION, REFERENCE, "4", "4", "1", "12"]
    bad = re.findall(r'<tr class="unsupported">(.*?)</tr>', section, re.DOTALL)
    cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", bad[0], re.DOTALL)]
    assert len(bad) == 1
    assert cells == [
        SENTENCE,
        "contradicted",
        "circumstantial",
        "in March",
        FLAG["quote"],
        FLAG["reason"],
    ]


def test_facts_flag_limits_the_terminal_listing(runs: tuple[Path, Path]) -> None:
    a, b = runs
    code, text = run_cli("compare", a, b, "--facts", "0", *FAST)
    flat = " ".join(text.split())
    assert code == 0 and "1 of 8 compared ids lose facts in B" in flat
    assert QUESTION not in flat and SENTENCE not in flat


# ---------------------------------------------------------------------------------------------
# Rows without evidence, questions in one file only
# ---------------------------------------------------------------------------------------------


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    ResultsWriter(path, score_keys()).rewrite(rows)
    return path


def test_rows_without_evidence_are_listed_not_compared(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    """B's ``ROW`` unscored (its evidence empty) and another row scored without a judge: neither
    is compared, so ``ROW``'s changes do not show and nothing is reported worse."""
    a, b = runs
    rows = read_results(b)
    for row in rows:
        if row["id"] == ROW:
            row.update(status="unscored", error="judge failed", score=None, evidence={})
        if row["id"] == "almendra-good":
            row["evidence"] = {"questions": [], "claims": []}
    edited = _write(tmp_path / "b2.results.jsonl", rows)
    facts = compare(a, edited, resamples=50, trials=50).facts
    assert facts.compared == 6 and facts.changed() == []
    assert [(r.id, r.unavailable_a, r.unavailable_b) for r in facts.not_compared()] == [
        (ROW, None, "unscored"),
        ("almendra-good", None, "no judge evidence"),
    ]
    code, text = run_cli("compare", a, edited, *FAST)
    flat = " ".join(text.split())
    assert code == 0
    assert "Fact-level diff: 0 of 6 compared ids lose facts in B" in flat
    assert "Not compared fact by fact (B: 1 unscored, 1 no judge evidence)" in flat


def test_runs_without_a_judge_give_no_diff_and_say_so(tmp_path: Path) -> None:
    pairs = [("The council approved the bridge. It costs 10 million.", "A bridge was approved.")]
    plain = score_summaries(pairs, judge=None, dimensions=())
    facts = compare(plain, plain, keys=["density"], resamples=50, trials=50).facts
    assert facts.compared == 0 and facts.changed() == []
    assert facts.to_dict()["not_compared"] == [
        {"id": "1", "a": "no judge evidence", "b": "no judge evidence"}
    ]
    rows = [{"id": "r1", "status": "ok", "density": 0.5, "evidence": {}}]
    a = _write(tmp_path / "a.results.jsonl", rows)
    code, text = run_cli("compare", a, a, "-o", tmp_path / "r.html", *FAST)
    assert code == 0
    assert (
        "Fact-level diff: not made, no paired id has judge evidence on both sides (A: 1 no "
        in " ".join(text.split())
    )
    assert 'id="facts-none"' in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_a_question_in_one_file_only_is_listed_apart_not_as_worse(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    """B's lowered question reworded: it is no longer matched, so it is no worse answer; it is
    listed as one question only in A and one only in B."""
    a, b = runs
    rows = read_results(b)
    row = next(r for r in rows if r["id"] == ROW)
    for q in row["evidence"]["questions"]:
        if q["question"] == QUESTION:
            q["question"] = "How much will the plan cost?"
    # whitespace and case do not make a question new
    row["evidence"]["questions"][0]["question"] = (
        "  " + row["evidence"]["questions"][0]["question"].upper()
    )
    facts = compare(a, _write(tmp_path / "b3.results.jsonl", rows), resamples=50, trials=50).facts
    changed = facts.get(ROW)
    assert changed.worse_answers == []
    assert (changed.questions_only_a, changed.questions_only_b) == (
        [QUESTION],
        ["How much will the plan cost?"],
    )
    assert [n.text for n in changed.new_unsupported] == [SENTENCE]


# ---------------------------------------------------------------------------------------------
# The claims paths (two-call): claims instead of sentences, answers written out
# ---------------------------------------------------------------------------------------------

CLAIM_FLAG = {"verdict": "not_in_source", "reason": "Scripted: not in the source.", "quote": ""}


def _lower_review_grade(prompt: str, data: dict[str, Any]) -> None:
    for entry, line in zip(data["answers"], read_numbered_block(prompt, "ITEMS"), strict=True):
        if QUESTION in line:
            assert entry["grade"] == 4
            entry.update(grade=2, reason="Scripted: half of it.")


def _flag_first_claim(prompt: str, data: dict[str, Any]) -> None:
    assert data["claims"][0]["verdict"] == "supported"
    data["claims"][0].update(CLAIM_FLAG)


def test_the_two_call_path_is_diffed_by_claims_and_written_answers() -> None:
    """``compare`` on SummaryEvaluations (ids: positions): one grade lowered, one claim flagged."""
    rows = [json.loads(line) for line in EXAMPLES.read_text().splitlines()]
    pairs = [(r["source"], r["summary"]) for r in rows]
    second = FakeJudge(
        {
            "SummaryReview": [_for_row(_lower_review_grade, sch.SummaryReview)] * 100,
            "CheckedClaims": [_for_row(_flag_first_claim, sch.CheckedClaims)] * 100,
        }
    )
    kwargs: dict[str, Any] = {"judge_path": "two-call", "dimensions": (), "cache": False}
    a = score_summaries(pairs, judge=FakeJudge(), **kwargs)
    b = score_summaries(pairs, judge=second, **kwargs)
    facts = compare(a, b, resamples=50, trials=50).facts
    position = str([r["id"] for r in rows].index(ROW) + 1)
    assert facts.compared == 8 and [r.id for r in facts.changed()] == [position]
    changed = facts.get(position)
    [worse] = changed.worse_answers
    assert (worse.question, worse.grade_a, worse.grade_b, worse.weighted_drop) == (
        QUESTION,
        4,
        2,
        8,
    )
    assert (
        worse.answer_b
        and worse.answer_b != "idk"
        and worse.grade_reason_b == "Scripted: half of it."
    )
    [claim] = changed.new_unsupported
    first_claim = b[int(position) - 1].claims[0].claim
    assert (claim.text, claim.verdict, claim.reason) == (
        first_claim,
        "not_in_source",
        CLAIM_FLAG["reason"],
    )
    assert claim.error_type is None and claim.span is None  # the claims paths have neither


# ---------------------------------------------------------------------------------------------
# The rules, on constructed rows
# ---------------------------------------------------------------------------------------------


def _q(text: str, grade: int, importance: int, counted: bool = True) -> dict[str, Any]:
    return {
        "question": text,
        "importance": importance,
        "reference_answer": "ref",
        "summary_answer": "ans",
        "grade": grade,
        "counted": counted,
    }


def _c(text: str, verdict: str = "supported") -> dict[str, Any]:
    return {"claim": text, "verdict": verdict, "reason": "", "quote": ""}


def _row(row_id: str, questions: list[dict[str, Any]], claims: list[dict[str, Any]]) -> dict:
    return {
        "id": row_id,
        "status": "ok",
        "score": 0.5,
        "evidence": {"questions": questions, "claims": claims},
    }


def test_ranking_weighting_and_matching_rules(tmp_path: Path) -> None:
    """Drop x the higher importance, worst first; an uncounted question and a better grade are
    no worse answer; an unsupported sentence A already had is not new (counted as a multiset);
    ids ranked by facts lost; markup from the judge is escaped in the report; CSV files too."""
    a = [
        _row(
            "x",
            [_q("Q1", 5, 1), _q("Q2", 4, 2), _q("Q3", 5, 5, counted=False), _q("Q4", 2, 3)],
            [_c("S1", "contradicted"), _c("S2"), _c("S3", "not_in_source")],
        ),
        _row("y", [_q("<b>Who?</b>", 3, 2)], [_c("T1")]),
    ]
    b = [
        _row(
            "x",
            [_q("Q1", 2, 1), _q("Q2", 3, 5), _q("Q3", 0, 5, counted=False), _q("Q4", 4, 3)],
            [_c("S1", "contradicted"), _c("S1", "contradicted"), _c("S3", "not_in_source")],
        ),
        _row("y", [_q("<b>Who?</b>", 2, 2)], [_c("T1", "not_in_source")]),
    ]
    fa = _write(tmp_path / "a.results.csv", a)
    fb = _write(tmp_path / "b.results.csv", b)
    facts = compare(fa, fb, resamples=20, trials=20).facts
    x = facts.get("x")
    # Q2: drop 1 x max(2, 5) = 5 ranks above Q1: drop 3 x 1 = 3; Q3 uncounted, Q4 better
    assert [(w.question, w.drop, w.importance, w.weighted_drop) for w in x.worse_answers] == [
        ("Q2", 1, 5, 5),
        ("Q1", 3, 1, 3),
    ]
    # S1 twice in B, once in A: one is new; S3 was unsupported in A already
    assert [(n.text, n.verdict) for n in x.new_unsupported] == [("S1", "contradicted")]
    assert [r.id for r in facts.changed()] == ["x", "y"]  # 3 facts lost before 2
    code, _ = run_cli("compare", fa, fb, "-o", tmp_path / "r.html", *FAST)
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert code == 0 and "&lt;b&gt;Who?&lt;/b&gt;" in page and "<b>Who?</b>" not in page
