"""Reasons are short and readable: one line per part (alignment, coverage, each dimension), the
part that pulled the score down first, with the full account one field away
(``reason_detail``); each per-sub-score metric, in DeepEval and in Ragas, reports its own
sub-score's reason, never the headline's pasted whole."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from deepeval.test_case import LLMTestCase
from openai import AsyncOpenAI
from ragas.llms import llm_factory

from deepeval_ext import SUB_SCORE_METRICS
from deepeval_ext.testing import FakeDeepEvalModel
from ragas_ext.collections import SummaryQuality as CollectionsSummaryQuality
from shared import SUB_SCORE_NAMES, score_summary
from shared import prompts as p
from shared.evaluation.options import ScoreOptions
from shared.evaluation.result import ClaimEvidence, QuestionEvidence
from shared.pipeline.compose import REASON_LINE, compose_reasons
from shared.testing import FakeJudge, stub_server

PART_MARKERS = ("Score ", "Coverage:", "Alignment:", "Dimensions:", "Unsupported (", "Missed (")


def _claims(supported: int, bad: int) -> list[ClaimEvidence]:
    return [ClaimEvidence(claim=f"claim {i}", verdict="supported") for i in range(supported)] + [
        ClaimEvidence(claim=f"odd claim {i}", verdict="not_in_source", reason="nowhere")
        for i in range(bad)
    ]


def _questions(full: int, missed: int) -> list[QuestionEvidence]:
    return [
        QuestionEvidence(question=f"Full {i}?", importance=3, reference_answer="a", grade=5)
        for i in range(full)
    ] + [
        QuestionEvidence(question=f"Missed {i}?", importance=4, reference_answer="a", grade=1)
        for i in range(missed)
    ]


def _no_part_starts_mid_line(text: str) -> None:
    for line in text.splitlines():
        body = line.strip()
        for marker in PART_MARKERS:
            assert marker not in body[1:], (marker, line)


def test_short_reason_is_one_line_per_part_with_the_failing_part_first() -> None:
    opts = ScoreOptions(judge_path="two-call")  # atomic claims (the sentences path: below)
    # coverage fails, alignment is perfect: coverage comes right after the headline
    short, detail = compose_reasons(0.0, 1.0, 0.0, _claims(2, 0), _questions(0, 5), opts)
    lines = short.splitlines()
    assert lines[0] == "Score 0.00 (F1 of alignment 1.00 and coverage 0.00)."
    assert lines[1].startswith("coverage 0.00: 0/5 questions fully answered; missed ")
    assert lines[2] == "alignment 1.00: 2/2 claims supported"
    assert len(lines) == 3
    # alignment fails: alignment first, naming its worst claim
    short, detail = compose_reasons(0.4, 0.25, 1.0, _claims(1, 3), _questions(2, 0), opts)
    lines = short.splitlines()
    assert lines[1] == 'alignment 0.25: 1/4 claims supported; not in source: "odd claim 0"'
    assert lines[2].startswith("coverage 1.00: 2/2 questions fully answered")
    # the detail keeps every unsupported claim (the short reason names one), in the same order
    assert detail.splitlines()[1] == "Alignment: 1/4 claims supported by the source."
    assert [ln for ln in detail.splitlines() if "Unsupported (not in source)" in ln] == [
        f'  Unsupported (not in source): "odd claim {i}" — nowhere' for i in range(3)
    ]
    _no_part_starts_mid_line(short)
    _no_part_starts_mid_line(detail)


def test_short_reason_lines_are_clipped_and_the_detail_is_not() -> None:
    long_claim = "The council " + "very " * 60 + "approved it."
    claims = [ClaimEvidence(claim=long_claim, verdict="contradicted", reason="the vote was 7-2")]
    short, detail = compose_reasons(0.0, 0.0, 1.0, claims, _questions(1, 0), ScoreOptions())
    assert all(len(line) <= REASON_LINE for line in short.splitlines())
    assert long_claim in detail and "the vote was 7-2" in detail


def test_pipeline_reason_has_a_line_per_dimension_weakest_first(seed: tuple[str, str]) -> None:
    source, summary = seed
    longer = f"{summary} The app sends reminders. Users can log water. It gives workouts."
    result = score_summary(source, longer, judge=FakeJudge())
    lines = result.reason.splitlines()
    assert lines[0].startswith("Score ")
    assert {ln.split(" ", 1)[0] for ln in lines[1:3]} == {"alignment", "coverage"}
    dims = lines[3:]
    names = [ln.split(" ", 1)[0] for ln in dims]
    computed = [n for n in names if getattr(result, n) is not None]
    assert set(names) == {
        n for n in SUB_SCORE_NAMES[3:] if getattr(result.dimension_evidence, n) is not None
    }
    values = [getattr(result, n) for n in computed]
    assert values == sorted(values)  # weakest first; a dimension with no value comes last
    assert names[: len(computed)] == computed
    assert all(len(line) <= REASON_LINE for line in lines)
    _no_part_starts_mid_line(result.reason)
    # the full account is one field away: each dimension's whole reason
    for name in computed:
        assert getattr(result.dimension_evidence, name).reason in result.reason_detail
    _no_part_starts_mid_line(result.reason_detail)


def test_unscored_and_offline_results_list_the_dimensions_on_their_own_lines(
    seed: tuple[str, str],
) -> None:
    source, summary = seed
    offline = score_summary(source, summary, judge=None)
    lines = offline.reason.splitlines()
    assert lines[0].startswith("Unscored: no judge")
    assert any(line.startswith("density ") for line in lines[1:])
    broken = FakeJudge({p.SentenceChecks: ["not json"] * 10})
    failed = score_summary(source, summary, judge=broken)
    lines = failed.reason.splitlines()
    assert lines[0].startswith("Unscored: ") and "SentenceChecks" in lines[0]
    assert any(line.startswith("density ") for line in lines[1:])
    _no_part_starts_mid_line(failed.reason)


@pytest.mark.parametrize("name", [n for n in SUB_SCORE_NAMES if n != "score"])
def test_deepeval_sub_score_metric_reason_is_its_own(seed: tuple[str, str], name: str) -> None:
    source, summary = seed
    summary = f"{summary} It launches in March."  # something for grounding to check
    source = f"{source} It launches in March."
    metric = SUB_SCORE_METRICS[name](model=FakeDeepEvalModel(), threshold=0.0)
    metric.measure(LLMTestCase(input=source, actual_output=summary), _show_indicator=False)
    reason = metric.reason
    assert reason is not None and reason.startswith(f"{name} {metric.score:.2f}: ")
    assert not any(marker in reason for marker in ("Score ", "Dimensions:"))
    others = [n for n in SUB_SCORE_NAMES if n not in ("score", name)]
    for other in others:  # no other part's line
        assert not any(line.startswith(f"{other} ") for line in reason.splitlines()), other
    # the headline metric keeps the full short reason; its detail is in the verbose logs
    assert "Reason in full:" in (metric.verbose_logs or "")


def test_ragas_collections_sub_score_reason_is_its_own(seed: tuple[str, str]) -> None:
    source, summary = seed

    def llm(url: str) -> Any:
        client = AsyncOpenAI(base_url=url, api_key="x", max_retries=0)
        return llm_factory("stub-model", client=client)

    with stub_server() as url:
        results = {
            name: asyncio.run(
                CollectionsSummaryQuality(llm=llm(url), sub_score=name).ascore(
                    reference_contexts=[source], response=summary
                )
            )
            for name in ("score", "coverage", "coherence")
        }
    headline = results["score"].reason
    assert headline.startswith("Score ") and "\ncoverage " in headline
    coverage = results["coverage"].reason
    assert coverage.startswith(f"coverage {results['coverage'].value:.2f}: ")
    assert "Score " not in coverage and "\ncoherence " not in coverage
    coherence = results["coherence"].reason
    assert coherence.startswith(f"coherence {results['coherence'].value:.2f}: ")
    assert "\n" not in coherence and "Score " not in coherence
    # the full account travels with the result
    assert results["score"].traces["output"]["reason_detail"].startswith("Score ")


def test_the_sentences_path_counts_sentences_and_names_the_error_type() -> None:
    from shared.evaluation.result import ClaimEvidence

    sentences = [
        ClaimEvidence(claim="The app is free.", verdict="supported"),
        ClaimEvidence(
            claim="It costs 9 dollars a month.",
            verdict="contradicted",
            reason="The source says it is free.",
            quote="The app is free.",
            error_type="entity",
            span="9 dollars a month",
        ),
    ]
    short, detail = compose_reasons(0.5, 0.5, 1.0, sentences, _questions(2, 0), ScoreOptions())
    assert (
        short.splitlines()[1]
        == 'alignment 0.50: 1/2 sentences supported; entity: "9 dollars a month"'
    )
    assert "Alignment: 1/2 sentences supported by the source." in detail
    assert "  Error types: entity 1" in detail
    assert (
        '  Unsupported (entity): "It costs 9 dollars a month." (wrong: "9 dollars a month")'
        " — The source says it is free." in detail
    )
