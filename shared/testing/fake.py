"""Test helpers shipped with the package, for this project's tests and for users' own.

- :class:`FakeJudge`: a deterministic judge. Script answers per schema (or task), or let it
  answer every prompt of this project plausibly from the texts inside the prompt: questions from
  the source's sentences, claims from the summary's sentences, verdicts and grades from word
  overlap. It records every prompt it receives. ``FakeJudge(vary_by_seed=True)`` lowers its
  default grades by an amount that depends on the request's seed, so judge samples
  (``samples=k``) disagree as a sampled LLM would. A prompt that asks for another language
  (:func:`shared.prompts.language_block`) gets every text the fake writes (questions, reference
  answers, claims, answers, reasons, points; not quotes, not "idk") prefixed with that
  language's marker, ``⟦French⟧ ``: a test sees both that the prompt asked for French and that
  the reply was used. The marker is ignored when the fake compares texts. Ragas' SummaryScore
  prompts get answers from their texts too (keyphrases, closed questions, 0/1 answers); other
  schemas get their smallest valid instance.
- :func:`stub_server`: an OpenAI-compatible ``/v1/chat/completions`` on 127.0.0.1 that answers
  through a FakeJudge, so the real ``openai`` client path (and anything built on it: ragas
  ``llm_factory``, DeepEval models, the CLI) runs offline.
"""

from __future__ import annotations

import asyncio
import collections
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .. import prompts as p
from ..judge.wrappers import JudgeOutputError
from ..prompts import pointing as pt
from ..prompts import schemas as sch

T = TypeVar("T", bound=BaseModel)

Scripted = BaseModel | dict | str | Exception | Callable[[str], Any]
"""A scripted answer: a model instance, a dict, raw text (parsed as JSON, so malformed text
simulates a bad reply), an exception to raise, or a callable of the prompt returning one."""

from .words import (  # noqa: E402 (re-exported: the fake's words)
    _STOP,
    _WORD,
    _overlap,
    content_words,
    language_marker,
    sentences,
)


def _best_sentence(query: Sequence[str], candidates: Sequence[str]) -> tuple[str, int]:
    best, best_hits = "", 0
    for sentence in candidates:
        hits = len(set(query) & set(content_words(sentence)))
        if hits > best_hits:
            best, best_hits = sentence, hits
    return best, best_hits


class FakeJudge:
    """A deterministic judge for tests.

    ``script`` maps a schema class, a schema name or a task name to one scripted answer or a list
    of them (used in order; afterwards the default answer applies). ``prompts`` records
    ``(schema name, prompt)`` for every call; ``calls`` counts calls per schema name.

    ``vary_by_seed``: a call made with a seed (a judge sample's, through :meth:`with_sample`, or
    a stub-server request's ``seed``) gets its default grades lowered by ``(seed + item) % 3``
    points (at least 0), a deterministic stand-in for sampling noise; ``seeds`` records the seed
    of every call (None without one). Without it the fake ignores seeds and every sample agrees.
    """

    def __init__(
        self,
        script: dict[type[BaseModel] | str, Scripted | list[Scripted]] | None = None,
        *,
        model_id: str = "fake-judge",
        latency: float = 0.0,
        vary_by_seed: bool = False,
    ) -> None:
        self.model_id = model_id
        self.latency = latency
        self.vary_by_seed = vary_by_seed
        self.seeds: list[int | None] = []
        self.prompts: list[tuple[str, str]] = []
        self.calls: collections.Counter[str] = collections.Counter()
        self._script: dict[str, collections.deque[Scripted]] = {}
        self._lock = threading.Lock()
        for key, value in (script or {}).items():
            name = key.__name__ if isinstance(key, type) else key
            if name in p.SCHEMA_FOR_TASK:
                name = p.SCHEMA_FOR_TASK[name].__name__
            items = value if isinstance(value, list) else [value]
            self._script[name] = collections.deque(items)

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    def prompts_for(self, schema: type[BaseModel] | str) -> list[str]:
        name = schema if isinstance(schema, str) else schema.__name__
        return [prompt for n, prompt in self.prompts if n == name]

    def with_sample(self, index: int, seed: int) -> FakeJudge | _SeededFake:
        """The core's hook for judge samples: with ``vary_by_seed``, a view of this fake that
        answers with ``seed`` (recording into this fake); otherwise this fake itself."""
        return _SeededFake(self, seed) if self.vary_by_seed else self

    async def generate(self, prompt: str, schema: type[T], *, seed: int | None = None) -> T:
        if self.latency:
            await asyncio.sleep(self.latency)
        answer = self._answer(prompt, schema, seed)
        if isinstance(answer, str):
            try:
                return schema.model_validate_json(answer)
            except ValidationError as exc:
                raise JudgeOutputError(f"invalid {schema.__name__} JSON: {exc}", answer) from exc
        return answer

    def answer_text(self, prompt: str, schema: type[BaseModel], seed: int | None = None) -> str:
        """The answer as the text a server would send (scripted raw text passes unchanged)."""
        answer = self._answer(prompt, schema, seed)
        return answer if isinstance(answer, str) else answer.model_dump_json()

    def _answer(self, prompt: str, schema: type[T], seed: int | None = None) -> T | str:
        with self._lock:
            self.prompts.append((schema.__name__, prompt))
            self.calls[schema.__name__] += 1
            self.seeds.append(seed)
            queue = self._script.get(schema.__name__)
            scripted = queue.popleft() if queue else None
        if scripted is None:
            if self.vary_by_seed and seed is not None and schema.__name__ == "PointedReview":
                return schema.model_validate(_lowered_pointed(prompt, seed))
            answer = default_answer(prompt, schema)
            if self.vary_by_seed and seed is not None:
                graded = getattr(answer, "grades", None) or getattr(answer, "answers", None)
                for item, grade in enumerate(graded or ()):
                    if isinstance(getattr(grade, "grade", None), int):
                        grade.grade = max(0, grade.grade - (seed + item) % 3)
                        if grade.grade < 5 and not getattr(grade, "reason", "x"):
                            # a 5 lowered by the seed: the review prompt wants a reason below 5
                            grade.reason = language_marker(prompt) + "sampled grade"
            return answer
        if callable(scripted) and not isinstance(scripted, type | BaseModel):
            scripted = scripted(prompt)
        if isinstance(scripted, Exception):
            raise scripted
        if isinstance(scripted, str):
            return scripted
        if isinstance(scripted, dict):
            return schema.model_validate(scripted)
        if isinstance(scripted, BaseModel):
            return (
                scripted
                if isinstance(scripted, schema)
                else schema.model_validate(scripted.model_dump())
            )
        raise TypeError(f"cannot use scripted answer {scripted!r} for {schema.__name__}")


class _SeededFake:
    """A :class:`FakeJudge` answering with one seed (what its ``with_sample`` returns)."""

    def __init__(self, fake: FakeJudge, seed: int) -> None:
        self.fake = fake
        self.seed = seed
        self.model_id = fake.model_id

    @property
    def settings(self) -> dict[str, Any]:
        return {"seed": self.seed}

    async def generate(self, prompt: str, schema: type[T]) -> T:
        return await self.fake.generate(prompt, schema, seed=self.seed)


# ---------------------------------------------------------------------------------------------
# Default answers, derived from the texts in the prompt
# ---------------------------------------------------------------------------------------------


def default_answer(prompt: str, schema: type[T]) -> T:
    """A plausible, consistent answer to one of this project's prompts."""
    builder = _DEFAULTS.get(schema.__name__)
    if builder is None:
        return schema.model_validate(minimal_instance(schema.model_json_schema()))
    return schema.model_validate(builder(prompt))


def minimal_instance(json_schema: dict[str, Any]) -> Any:
    """The smallest value valid under ``json_schema`` (a pydantic ``model_json_schema()``): every
    required field, empty lists, first enum members, numbers at their lower bound.

    It lets the fake answer schemas it has no builder for (another framework's), so a run is
    never blocked on a schema; counts and texts in such answers carry no meaning.
    """
    definitions = json_schema.get("$defs", {})

    def build(node: dict[str, Any]) -> Any:
        if "$ref" in node:
            return build(definitions[node["$ref"].rsplit("/", 1)[-1]])
        if "const" in node:
            return node["const"]
        if node.get("enum"):
            return node["enum"][0]
        for key in ("anyOf", "oneOf", "allOf"):
            if node.get(key):
                options = [o for o in node[key] if o.get("type") != "null"] or node[key]
                return build(options[0])
        if "default" in node:
            return node["default"]
        kind = node.get("type", "object")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind == "object":
            props = node.get("properties", {})
            return {name: build(props[name]) for name in node.get("required", [])}
        if kind == "array":
            if node.get("prefixItems"):  # a tuple: one value per position
                return [build(item) for item in node["prefixItems"]]
            return [build(node.get("items", {})) for _ in range(node.get("minItems", 0))]
        if kind == "string":
            return "x" * node.get("minLength", 1)
        if kind in ("integer", "number"):
            low = node.get("minimum", node.get("exclusiveMinimum", 0))
            return int(low) + (1 if "exclusiveMinimum" in node else 0) if kind == "integer" else low
        if kind == "boolean":
            return False
        return None

    return build(json_schema)


def _clip(text: str, limit: int) -> str:
    """``text`` cut to a schema's ``maxLength`` (the fake copies whole source sentences)."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _generate_questions(prompt: str) -> dict:
    source = p.read_block(prompt, "SOURCE") or p.read_block(prompt, "PART") or ""
    match = re.search(r"write (?:up to )?(\d+) open-ended questions", prompt, re.IGNORECASE)
    n = int(match.group(1)) if match else 5
    mark = language_marker(prompt)
    questions = []
    for i, sentence in enumerate(sentences(source)[:n]):
        words = [w for w in _WORD.findall(sentence.lower()) if w not in _STOP][:4]
        topic = " ".join(words) or sentence[:30]
        questions.append(
            {
                "question": _clip(
                    f"{mark}What does the source say about {topic}?", sch.QUESTION_CHARS
                ),
                "reference_answer": _clip(mark + sentence, sch.ANSWER_CHARS),
                "importance": max(1, 5 - i),
            }
        )
    return {"questions": questions}


def _source_text(prompt: str) -> str:
    """The full source, or the retrieved excerpts of a long one (gap markers dropped)."""
    text = p.read_block(prompt, "SOURCE")
    if text is None:
        text = "\n".join(
            line for line in (p.read_block(prompt, "EXCERPTS") or "").splitlines() if line != "[…]"
        )
    return text


def _answers(prompt: str, text: str, field: str, none: str) -> dict:
    """Each question's answer: the sentence of ``text`` sharing most of its words, or ``none``."""
    candidates = sentences(text)
    mark = language_marker(prompt)
    answers = []
    for i, question in enumerate(p.read_numbered_block(prompt, "QUESTIONS"), start=1):
        best, hits = _best_sentence(content_words(question), candidates)
        answer = _clip(mark + best, sch.ANSWER_CHARS) if hits else none
        answers.append({"index": i, field: answer})
    return {"answers": answers}


def _answer_user_questions(prompt: str) -> dict:
    return _answers(prompt, _source_text(prompt), "reference_answer", "not in source")


def _extract_claims(prompt: str) -> dict:
    summary = p.read_block(prompt, "SUMMARY") or ""
    mark = language_marker(prompt)
    found = [_clip(mark + c, sch.CLAIM_CHARS) for c in sentences(summary) if content_words(c)]
    return {"claims": found[: sch.max_claims(summary)]}


def _verify_claims(prompt: str) -> dict:
    claims = p.read_numbered_block(prompt, "CLAIMS")
    return {"verdicts": _verdicts(_source_text(prompt), claims, language_marker(prompt))}


def _check_claims(prompt: str) -> dict:
    """The two-call claim check: the claims of :func:`_extract_claims`, each with the verdict of
    :func:`_verify_claims`, written as that prompt asks: a reason only for an unsupported claim
    and a short quote (see :func:`_verdicts`, ``short``)."""
    claims = _extract_claims(prompt)["claims"]
    verdicts = _verdicts(_source_text(prompt), claims, language_marker(prompt), short=True)
    return {
        "claims": [
            {"claim": claim, **{k: v for k, v in verdict.items() if k != "index"}}
            for claim, verdict in zip(claims, verdicts, strict=True)
        ]
    }


def _short_quote(sentence: str, claim_words: Sequence[str]) -> str:
    """The quote the two-call check asks for: the source sentence when it has at most
    :data:`~shared.prompts.schemas.CHECK_QUOTE_WORDS` words, else the window of that many words
    holding most of the claim's words (the first such), cut to the schema's bound. Never shorter
    than the prompt allows: a whole sentence or a full window, not just the matching words."""
    words = sentence.split()
    limit = sch.CHECK_QUOTE_WORDS
    if len(words) > limit:
        wanted = set(claim_words)
        hits = [sum(w in wanted for w in content_words(word)) for word in words]
        start = max(range(len(words) - limit + 1), key=lambda i: sum(hits[i : i + limit]))
        sentence = " ".join(words[start : start + limit])
    return _clip(sentence, sch.CHECK_QUOTE_CHARS)


def _verdicts(source: str, claims: Sequence[str], mark: str, *, short: bool = False) -> list[dict]:
    """One verdict per claim from word overlap. The step path's verify call (``short`` False)
    asks for a reason and the quoted source sentence for every claim; the two-call check
    (``short``) for a reason only when the claim is not supported and a quote of at most
    :data:`~shared.prompts.schemas.CHECK_QUOTE_WORDS` words."""
    source_words = set(content_words(source))
    source_sentences = sentences(source)
    source_numbers = set(re.findall(r"\d+(?:\.\d+)?", source))
    verdicts = []
    for i, claim in enumerate(claims, start=1):
        words = content_words(claim)
        share = _overlap(words, source_words)
        quote, _ = _best_sentence(words, source_sentences)
        numbers = set(re.findall(r"\d+(?:\.\d+)?", claim))
        if share >= 0.6 and numbers - source_numbers:
            verdict, reason = "contradicted", "the source gives different figures"
        elif share >= 0.6:
            verdict, reason = "supported", f"{share:.0%} of the claim's words appear in the source"
        else:
            verdict, reason = "not_in_source", f"only {share:.0%} of its words appear in the source"
            quote = ""
        if short:
            reason = "" if verdict == "supported" else _clip(mark + reason, sch.REASON_CHARS)
            quote = _short_quote(quote, words) if quote else ""
        else:
            reason, quote = _clip(mark + reason, sch.REASON_CHARS), _clip(quote, sch.QUOTE_CHARS)
        verdicts.append({"index": i, "verdict": verdict, "reason": reason, "quote": quote})
    return verdicts


def _answer_from_summary(prompt: str) -> dict:
    return _answers(prompt, p.read_block(prompt, "SUMMARY") or "", "answer", "idk")


def _grade_answers(prompt: str) -> dict:
    mark = language_marker(prompt)
    grades = []
    for i, item in enumerate(p.read_numbered_block(prompt, "ITEMS"), start=1):
        fields = p.read_grade_item(item)
        reference = content_words(fields.get("reference", ""))
        candidate = set(content_words(fields.get("candidate", "")))
        share = _overlap(reference, candidate)
        grades.append(
            {
                "index": i,
                "grade": round(5 * share),
                "reason": _clip(f"{mark}{share:.0%} of the reference", sch.REASON_CHARS),
            }
        )
    return {"grades": grades}


def _review_summary(prompt: str) -> dict:
    """The two-call summary review: each item answered from the SUMMARY block as
    :func:`_answer_from_summary` does and graded against its reference as :func:`_grade_answers`
    does ("idk" = 0), with a reason only for a grade below 5 (as the prompt asks), plus
    :func:`_review_style` when the prompt has a SENTENCES block."""
    summary_sentences = sentences(p.read_block(prompt, "SUMMARY") or "")
    mark = language_marker(prompt)
    answers = []
    for i, line in enumerate(p.read_numbered_block(prompt, "ITEMS"), start=1):
        item = p.read_grade_item(line)
        best, hits = _best_sentence(content_words(item.get("question", "")), summary_sentences)
        answer = _clip(mark + best, sch.ANSWER_CHARS) if hits else "idk"
        share = _overlap(content_words(item.get("reference", "")), set(content_words(answer)))
        grade = round(5 * share) if hits else 0
        # the prompt asks for a reason only below 5
        reason = _clip(f"{mark}{share:.0%} of the reference", sch.REASON_CHARS) if grade < 5 else ""
        answers.append({"index": i, "answer": answer, "grade": grade, "reason": reason})
    out: dict[str, Any] = {"answers": answers}
    if p.read_block(prompt, "SENTENCES") is not None:
        out.update(_review_style(prompt))
    return out


def _span(sentence: str, source_words: set[str], numbers: set[str]) -> str:
    """The shortest wrong part the sentence check asks for: the figure the source lacks, else
    the words from the first one the source lacks, at most
    :data:`~shared.prompts.pointing.SPAN_WORDS` of them."""
    words = sentence.split()
    for word in words:
        figure = re.sub(r"[^\d.]", "", word).strip(".")
        if figure and figure in numbers:
            return _clip(word.strip(".,;:"), pt.SPAN_CHARS)
    start = next(
        (i for i, w in enumerate(words) if any(c not in source_words for c in content_words(w))),
        0,
    )
    return _clip(" ".join(words[start : start + pt.SPAN_WORDS]), pt.SPAN_CHARS)


def _check_sentences(prompt: str) -> dict:
    """The sentence check: each numbered sentence judged as :func:`_verdicts` judges a claim;
    a supported one gets nothing else, a contradicted one (a figure the source lacks) is an
    ``entity`` error and an unsupported one ``out-of-context``, with the span, the short quote
    and a reason."""
    numbered = p.read_numbered_block(prompt, "SENTENCES")
    source = _source_text(prompt)
    source_words = set(content_words(source))
    source_numbers = set(re.findall(r"\d+(?:\.\d+)?", source))
    out = []
    for entry, sentence in zip(
        _verdicts(source, numbered, language_marker(prompt), short=True), numbered, strict=True
    ):
        if entry["verdict"] == "supported":
            out.append({"index": entry["index"], "verdict": "supported"})
            continue
        wrong = set(re.findall(r"\d+(?:\.\d+)?", sentence)) - source_numbers
        kind = "entity" if entry["verdict"] == "contradicted" else "out-of-context"
        out.append(
            {
                "index": entry["index"],
                "verdict": kind,
                "span": _span(sentence, source_words, wrong),
                "quote": entry["quote"],
                "reason": entry["reason"],
            }
        )
    return {"sentences": out}


def _pointed_review(prompt: str) -> dict:
    """The pointed review: each item's best-matching numbered sentence (0 when none shares a
    word with the question), graded as :func:`_review_summary` grades an answer, a reason only
    for grades 1-4; the style review as :func:`_review_style` with reasons only for vague
    sentences."""
    numbered = p.read_numbered_block(prompt, "SENTENCES")
    mark = language_marker(prompt)
    answers = []
    for i, line in enumerate(p.read_numbered_block(prompt, "ITEMS"), start=1):
        item = p.read_grade_item(line)
        best, hits = _best_sentence(content_words(item.get("question", "")), numbered)
        pointer = numbered.index(best) + 1 if hits else 0
        share = _overlap(content_words(item.get("reference", "")), set(content_words(best)))
        grade = round(5 * share) if hits else 0
        answer: dict[str, Any] = {"index": i, "grade": grade, "sentence": pointer}
        if 1 <= grade <= 4:
            answer["reason"] = _clip(f"{mark}{share:.0%} of the reference", sch.REASON_CHARS)
        answers.append(answer)
    out: dict[str, Any] = {}
    if p.read_block(prompt, "ITEMS") is not None:
        out["answers"] = answers
    if "sentences" in _task_schema_fields(prompt):
        style = _review_style(prompt)
        for verdict in style["sentences"]:
            if not verdict["vague"]:
                del verdict["reason"]
        out.update(style)
    return out


def _lowered_pointed(prompt: str, seed: int) -> dict:
    """:func:`_pointed_review` with each grade lowered by ``(seed + item) % 3`` (at least 0),
    a reason only where the lowered grade is 1-4, as the schema demands."""
    data = _pointed_review(prompt)
    for item, answer in enumerate(data.get("answers", ())):
        answer["grade"] = max(0, answer["grade"] - (seed + item) % 3)
        if 1 <= answer["grade"] <= 4:
            answer.setdefault("reason", language_marker(prompt) + "sampled grade")
        else:
            answer.pop("reason", None)
    return data


def _task_schema_fields(prompt: str) -> set[str]:
    """The parts the pointed review's task asks for (its task line names it)."""
    task = p.task_of(prompt)
    return {"sentences"} if task in ("pointed_review", "pointed_style") else set()


_VAGUE_OPENERS = re.compile(
    r"^(the|this) (article|author|text|story|piece|report|writer|passage)\b"
    r"|\b(discuss(es|ed)?|describes?|talks about|is about|touches on|covers)\b",
    re.IGNORECASE,
)


def _review_style(prompt: str) -> dict:
    """Vague = a sentence about the text rather than its content (the prompt's examples);
    repeated = a later sentence sharing at least 60% of the shorter one's content words."""
    numbered = p.read_numbered_block(prompt, "SENTENCES")
    mark = language_marker(prompt)
    verdicts = []
    for i, sentence in enumerate(numbered, start=1):
        vague = bool(_VAGUE_OPENERS.search(sentence))
        reason = (
            f"{mark}it says what the text is about instead of stating the facts" if vague else ""
        )
        verdicts.append({"index": i, "vague": vague, "reason": reason})
    words = [set(content_words(sentence)) for sentence in numbered]
    points = []
    claimed: set[int] = set()
    for i in range(len(numbered)):
        if i in claimed or not words[i]:
            continue
        group = [
            j
            for j in range(i + 1, len(numbered))
            if words[j] and len(words[i] & words[j]) >= 0.6 * min(len(words[i]), len(words[j]))
        ]
        if group:
            claimed.update(group)
            point = " ".join(sorted(words[i] & words[group[0]])[:6])
            points.append(
                {
                    "point": _clip(mark + point, sch.POINT_CHARS),
                    "sentences": [i + 1] + [j + 1 for j in group],
                }
            )
    return {"sentences": verdicts, "repeated_points": points}


from .fake_ragas import _ragas_answers, _ragas_keyphrases, _ragas_questions  # noqa: E402

_DEFAULTS: dict[str, Callable[[str], dict]] = {
    "GeneratedQuestions": _generate_questions,
    "ReferenceAnswers": _answer_user_questions,
    "ExtractedClaims": _extract_claims,
    "CheckedClaims": _check_claims,
    "SummaryReview": _review_summary,
    "ClaimVerdicts": _verify_claims,
    "SummaryAnswers": _answer_from_summary,
    "AnswerGrades": _grade_answers,
    "StyleReview": _review_style,
    "SentenceChecks": _check_sentences,
    "PointedReview": _pointed_review,
    # Ragas' SummaryScore (ragas.metrics.collections, and the legacy SummarizationScore): an
    # empty answer list, the smallest valid instance, makes it divide by zero on every row
    "ExtractedKeyphrases": _ragas_keyphrases,
    "QuestionsGenerated": _ragas_questions,
    "AnswersGenerated": _ragas_answers,
}

ANSWERED_BY_NAME = frozenset(_DEFAULTS)
"""The schemas the fake answers from their name alone, from the prompt's texts (Ragas'
included: the stub answers them when a request's JSON schema carries the name, its class
unknown)."""
