"""The sentences path (the default; docs/DESIGN.md, "How the judge is asked"): the judge points
at numbered summary sentences instead of writing claims and answers out again."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from shared import ScoreOptions, score_summaries, score_summary, signature
from shared import prompts as p
from shared.judge.openai import OpenAIJudge
from shared.pipeline.fit import longest_reply
from shared.prompts import pointing as pt
from shared.testing import FakeJudge, stub_server

SOURCE = (
    "Harwick's council approved a 42-kilometre bike lane network on Tuesday by 7 votes to 2. "
    "The network will cost 18 million euros, 11 million of it from the regional government. "
    "Work begins in March on Station Road, where three cyclists were hurt last year. "
    "Mayor Elena Ruiz wants cycling's share of trips to double by 2030."
)
SUMMARY = (
    "Harwick's council approved a 42-kilometre bike lane network. "
    "It will cost 25 million euros. "
    "Work begins in March on Station Road."
)


def test_default_path_is_sentences_with_one_verdict_per_sentence() -> None:
    judge = FakeJudge()
    result = score_summary(SOURCE, SUMMARY, judge=judge, dimensions=())
    assert result.scored, result.error
    assert "|path:sentences|" in result.signature
    assert dict(judge.calls) == {"GeneratedQuestions": 1, "SentenceChecks": 1, "PointedReview": 1}
    assert [c.claim for c in result.claims] == list(p.split_sentences(SUMMARY))
    wrong = result.claims[1]
    # the fake flags a figure the source lacks as an entity error, with its span
    assert wrong.error_type == "entity" and wrong.span == "25" and wrong.reason
    assert wrong.verdict == "contradicted"
    assert result.alignment == 2 / 3
    assert result.error_types is not None and result.error_types["entity"] == 1
    assert sum(result.error_types.values()) == 1 and set(result.error_types) == set(p.ERROR_TYPES)
    # coverage by pointing: the evidence is the pointed-at sentence, never written-out text
    for q in result.questions:
        assert q.sentence is not None
        if q.sentence:
            assert q.summary_answer == result.claims[q.sentence - 1].claim
        else:
            assert q.grade == 0 and q.summary_answer == ""


def test_replies_carry_text_only_where_something_is_wrong() -> None:
    judge = FakeJudge()
    score_summary(SOURCE, SUMMARY, judge=judge, dimensions=())
    check = p.sentence_checks_schema(3)
    (prompt,) = judge.prompts_for("SentenceChecks")
    reply = json.loads(judge.answer_text(prompt, check))
    assert reply["sentences"][0] == {"index": 1, "verdict": "supported"}
    assert set(reply["sentences"][1]) == {"index", "verdict", "span", "quote", "reason"}
    # the schema itself: a supported entry has no text field to fill
    first = check.model_json_schema()["properties"]["sentences"]["prefixItems"][0]["anyOf"]
    assert [sorted(branch["properties"]) for branch in first] == [
        ["index", "verdict"],
        ["index", "quote", "reason", "span", "verdict"],
    ]


def test_the_review_never_sees_the_source_and_the_check_begins_with_its_prefix() -> None:
    judge = FakeJudge()
    score_summary(SOURCE, SUMMARY, judge=judge, n=1)  # the fake's one reference: sentence 1
    (review,) = judge.prompts_for("PointedReview")
    assert "<<<SOURCE>>>" not in review and "Mayor Elena Ruiz" not in review
    assert p.read_block(review, "SENTENCES") is not None
    assert review.rstrip().endswith("that state it>}]}")  # the reply format, whole
    (check,) = judge.prompts_for("SentenceChecks")
    assert check.startswith(p.source_prefix(SOURCE))


def test_the_three_paths_never_share_a_signature_or_a_cached_answer() -> None:
    judge = FakeJudge()
    sigs = {}
    for path in ("sentences", "two-call", "steps"):
        before = dict(judge.calls)
        result = score_summary(SOURCE, SUMMARY, judge=judge, judge_path=path, dimensions=())
        assert result.scored, (path, result.error)
        sigs[path] = result.signature
        new = {k: v - before.get(k, 0) for k, v in judge.calls.items() if v - before.get(k, 0)}
        if path == "two-call":  # its per-source call is the sentences path's, cached
            assert new == {"CheckedClaims": 1, "SummaryReview": 1}
    assert len(set(sigs.values())) == 3
    for path, sig in sigs.items():
        assert f"|path:{path}|" in sig
    assert signature(judge, ScoreOptions()) == signature(
        judge, ScoreOptions(judge_path="sentences")
    )


class _Ordered(FakeJudge):
    """Records when each call starts and ends, per task, in event order (no clocks)."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, str]] = []

    async def generate(self, prompt: str, schema: type[Any], *, seed: int | None = None) -> Any:
        task = p.task_of(prompt) or "?"
        self.events.append(("start", task))
        await asyncio.sleep(0)  # let every other ready call start if it can
        try:
            return await super().generate(prompt, schema, seed=seed)
        finally:
            self.events.append(("end", task))


def test_twenty_summaries_are_41_calls_with_the_first_check_alone() -> None:
    judge = _Ordered()
    pairs = [(SOURCE, f"{SUMMARY} Variant {i} follows.") for i in range(20)]
    results = score_summaries(pairs, judge=judge, dimensions=())
    assert all(r.scored for r in results)
    assert judge.total_calls == 41
    starts = [t for e, t in judge.events if e == "start"]
    # round 1: the source's call and the first check, side by side; nothing else yet
    assert sorted(starts[:2]) == ["check_sentences", "source_questions"]
    first_end = judge.events.index(("end", "check_sentences"))
    assert all(t != "check_sentences" for e, t in judge.events[2:first_end] if e == "start")
    # every review starts after the source's call ended: a chain of 2
    source_end = judge.events.index(("end", "source_questions"))
    reviews = [i for i, (e, t) in enumerate(judge.events) if (e, t) == ("start", "point_and_grade")]
    assert len(reviews) == 20 and min(reviews) > source_end


class _Recording(FakeJudge):
    """A hosted-like judge (no ``caches_schema = False``) that keeps the check schemas sent."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[dict[str, Any]] = []

    async def generate(self, prompt: str, schema: type[Any], *, seed: int | None = None) -> Any:
        if schema.__name__ == "SentenceChecks":
            self.sent.append(schema.model_json_schema())
        return await super().generate(prompt, schema, seed=seed)


def test_a_local_server_gets_the_exact_list_and_a_hosted_one_the_shared_schema() -> None:
    pairs = [(SOURCE, SUMMARY), (SOURCE, SUMMARY + " Cyclists cheered.")]
    with stub_server() as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test")
        assert judge.caches_schema is False
        results = score_summaries(pairs, judge=judge, dimensions=())
        local = [
            r["response_format"]["json_schema"]["schema"]
            for r in url.requests
            if r.get("response_format", {}).get("json_schema", {}).get("name") == "SentenceChecks"
        ]
    assert all(r.scored and "|checks:exact" in r.signature for r in results)
    assert len(local) == 2 and local[0] != local[1]  # 3 and 4 fixed positions
    assert all("prefixItems" in s["properties"]["sentences"] for s in local)
    hosted = _Recording()
    results = score_summaries(pairs, judge=hosted, dimensions=())
    assert all(r.scored and "|checks:exact" not in r.signature for r in results)
    assert len(hosted.sent) == 2 and hosted.sent[0] == hosted.sent[1]  # one schema per source
    assert hosted.sent[0]["properties"]["sentences"]["maxItems"] == pt.SENTENCE_STEP


def test_bad_pointers_and_grades_are_refused_by_the_schema() -> None:
    import pydantic
    import pytest

    schema = pt.pointed_review_schema(2, 3, False)
    good = {
        "answers": [
            {"index": 1, "grade": 5, "sentence": 2},
            {"index": 2, "grade": 0, "sentence": 0},
        ]
    }
    schema.model_validate(good)
    for bad in (
        {"answers": [{"index": 1, "grade": 5, "sentence": 99}, good["answers"][1]]},
        {"answers": [{"index": 1, "grade": 7, "sentence": 1}, good["answers"][1]]},
        {"answers": [{"index": 1, "grade": 3, "sentence": 1}, good["answers"][1]]},  # no reason
        {"answers": good["answers"][:1]},  # a question missing
    ):
        with pytest.raises(pydantic.ValidationError):
            schema.model_validate(bad)
    check = pt.sentence_checks_schema(2)
    with pytest.raises(pydantic.ValidationError):
        check.model_validate(
            {
                "sentences": [
                    {"index": 1, "verdict": "made-up", "span": "x", "quote": "", "reason": "r"},
                    {"index": 2, "verdict": "supported"},
                ]
            }
        )
    with pytest.raises(pydantic.ValidationError):  # an extra sentence
        check.model_validate(
            {"sentences": [{"index": i, "verdict": "supported"} for i in (1, 2, 3)]}
        )


def test_the_offline_split_keeps_abbreviations_and_initials() -> None:
    text = 'Dr. Smith met J. R. Jones in the U.S. on Monday. He left! "Why?" asked Ann. 3 came.'
    assert p.split_sentences(text) == (
        "Dr. Smith met J. R. Jones in the U.S. on Monday.",
        "He left!",
        '"Why?" asked Ann.',
        "3 came.",
    )
    assert p.split_sentences("") == ()
    assert p.split_sentences("no end punctuation") == ("no end punctuation",)


def test_the_fit_sizes_the_sentences_path_by_its_own_replies() -> None:
    short, long = "One fact here.", " ".join(f"Fact number {i} is here." for i in range(30))
    assert longest_reply("sentences", 10, [short, long]) > longest_reply("sentences", 10, [short])
    # pointing replies are far shorter than the claims written out for the same summary
    assert longest_reply("sentences", 10, [long], step=1) < longest_reply(
        "two-call", 10, [long], step=1
    )


def test_resume_never_mixes_rows_scored_under_another_path(tmp_path: Any) -> None:
    from pathlib import Path

    from tests.test_cli import judge_args, run_cli

    rows = [
        {"id": f"r{i}", "source": SOURCE, "summary": SUMMARY + f" Variant {i}."} for i in range(2)
    ]
    data = Path(tmp_path) / "in.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = Path(tmp_path) / "out.jsonl"
    with stub_server() as url:
        code, text = run_cli(
            "score",
            data,
            "-o",
            out,
            "--no-report",
            "--judge-path",
            "two-call",
            *judge_args(url, None),
        )
        assert code == 0, text
        first = [json.loads(line) for line in out.read_text().splitlines()]
        assert all("|path:two-call|" in r["signature"] for r in first)
        before = url.count
        code, text = run_cli("score", data, "-o", out, "--no-report", *judge_args(url, None))
        # refused, naming the path: a row of one path is never resumed into another's file
        assert code != 0 and "judge_path: 'two-call' then, 'sentences' now" in text
        assert url.count == before
        code, text = run_cli(
            "score", data, "-o", out, "--no-report", "--force", *judge_args(url, None)
        )
        assert code == 0, text
        again = [json.loads(line) for line in out.read_text().splitlines()]
        assert url.count > before
    assert [r["id"] for r in again] == ["r0", "r1"]
    assert all("|path:sentences|" in r["signature"] for r in again)
    assert all(r["evidence"]["error_types"] is not None for r in again)
