"""Turn whatever LLM (and embeddings) Ragas hands a metric into the core's Judge (and Embedder).

Two kinds of Ragas LLM exist in 0.4.3:

- ``InstructorBaseRagasLLM`` (``llm_factory``): ``await llm.agenerate(prompt, Schema)`` returns a
  validated pydantic instance; instructor re-asks on invalid JSON by itself.
- legacy ``BaseRagasLLM`` / ``LangchainLLMWrapper``: text only. Ragas's own metrics parse that
  text leniently, which can accept truncated JSON; here the reply is parsed strictly and a bad one
  raises :class:`shared.JudgeOutputError`, so the core's validating wrapper retries it with the
  error fed back.

One adapter exists per Ragas LLM object (:func:`judge_for`), so every metric of one
``evaluate()`` call reaches the core with the same judge, and the core's cached wrapper makes each
identical request once. The adapter is stored on the LLM object
(:func:`shared.adapter_kit.attached`), so it is freed with it.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import OrderedDict
from typing import Any, TypeVar

from pydantic import BaseModel

from shared import JudgeFailed, JudgeOutputError
from shared.adapter_kit import attached, parse_json_reply

T = TypeVar("T", bound=BaseModel)


def _model_name(llm: object) -> str:
    """The model's name as the user configured it, for the score signature and cache keys."""
    for owner in (llm, getattr(llm, "langchain_llm", None), getattr(llm, "llm", None)):
        if owner is None:
            continue
        for attr in ("model", "model_name", "model_id"):
            value = getattr(owner, attr, None)
            if isinstance(value, str) and value:
                return value
    return type(llm).__name__


def is_structured_llm(llm: object) -> bool:
    """True for an instructor-style LLM (``agenerate(prompt, schema)`` returns a model)."""
    from ragas.llms.base import InstructorBaseRagasLLM

    return isinstance(llm, InstructorBaseRagasLLM)


class RagasJudge:
    """The core's :class:`shared.Judge` over a Ragas LLM.

    Use :func:`judge_for` rather than the constructor: it returns the one adapter of an LLM
    object, which is what lets several metrics share judge calls and per-row results.
    """

    def __init__(self, llm: Any) -> None:
        from ragas.llms.base import BaseRagasLLM

        self.llm = llm
        self.structured = is_structured_llm(llm)
        if not self.structured and not isinstance(llm, BaseRagasLLM):
            raise TypeError(
                "expected a Ragas LLM: llm_factory(...) (InstructorBaseRagasLLM) or a BaseRagasLLM "
                f"such as LangchainLLMWrapper; got {type(llm).__name__}"
            )
        self.rows = RowMemo()
        """Per-row results shared by the metrics that use this LLM (see :class:`RowMemo`)."""

    @property
    def model_id(self) -> str:
        return _model_name(self.llm)

    async def generate(self, prompt: str, schema: type[T]) -> T:
        if self.structured:
            return await self._generate_structured(prompt, schema)
        return await self._generate_text(prompt, schema)

    async def _generate_structured(self, prompt: str, schema: type[T]) -> T:
        try:
            if getattr(self.llm, "is_async", True) is False:
                # a sync client: agenerate() refuses it, so run the blocking call off the loop
                result = await asyncio.to_thread(self.llm.generate, prompt, schema)
            else:
                result = await self.llm.agenerate(prompt, schema)
        except Exception as exc:
            if type(exc).__name__ == "InstructorRetryException":
                # instructor already re-asked with the validation error; asking again through
                # the core's retries would multiply calls for a reply that will not come right
                raise JudgeFailed(
                    f"instructor could not get valid {schema.__name__} JSON after its retries: "
                    f"{_short(exc)}"
                ) from exc
            raise
        if isinstance(result, schema):
            return result
        if isinstance(result, BaseModel):
            return schema.model_validate(result.model_dump())
        if isinstance(result, str):
            return parse_json_reply(result, schema)
        return schema.model_validate(result)

    async def _generate_text(self, prompt: str, schema: type[T]) -> T:
        from langchain_core.prompt_values import StringPromptValue
        from ragas.exceptions import LLMDidNotFinishException

        try:
            # generate() = agenerate_text() plus Ragas's transport retries (run_config) and its
            # check that the model finished rather than hit the token limit
            result = await self.llm.generate(StringPromptValue(text=prompt), n=1)
        except LLMDidNotFinishException as exc:
            raise JudgeOutputError(
                "the reply was cut off before it finished (token limit?)", None
            ) from exc
        try:
            text = result.generations[0][0].text
        except (IndexError, AttributeError) as exc:
            raise JudgeOutputError(f"the LLM returned no text: {result!r}") from exc
        if not text or not text.strip():
            raise JudgeOutputError("the LLM returned an empty reply", text)
        return parse_json_reply(text, schema)

    def __repr__(self) -> str:
        kind = "structured" if self.structured else "text"
        return f"RagasJudge({type(self.llm).__name__}, model={self.model_id!r}, {kind})"


def _short(exc: BaseException, limit: int = 300) -> str:
    text = str(exc)
    return text if len(text) <= limit else text[:limit] + "…"


def judge_for(llm: Any) -> RagasJudge:
    """The single :class:`RagasJudge` of ``llm`` (created on first use, freed with the LLM)."""
    if isinstance(llm, RagasJudge):
        return llm
    return attached(llm, RagasJudge, lambda: RagasJudge(llm))


class RowMemo:
    """One core evaluation per (row, options), shared by every metric that asks for it.

    Holds the in-flight task per event loop (so concurrent metrics of one row await the same
    work) and the last ``size`` finished results (so a metric that starts after its siblings
    finished does not redo it). Finished results are kept only when caching is on, matching the
    core's ``cache=False`` meaning: share in-flight work, keep nothing. An unscored result is
    never kept: the judge may have failed for a passing reason (a rate limit, a timeout, one bad
    reply too many), and the core itself caches only validated answers, so a later metric or
    ``evaluate()`` call asks again instead of replaying the failure.
    """

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._done: OrderedDict[Any, Any] = OrderedDict()
        self._inflight: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Any, Any]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        self.computed = 0
        """How many evaluations actually ran (the rest were shared), for tests and reports."""

    async def get(self, key: Any, compute: Any, *, keep: bool) -> Any:
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                return self._done[key]
        inflight = self._inflight.setdefault(asyncio.get_running_loop(), {})
        task = inflight.get(key)
        if task is None:
            self.computed += 1
            task = asyncio.ensure_future(compute())
            inflight[key] = task
            task.add_done_callback(lambda _t: inflight.pop(key, None))
        result = await asyncio.shield(task)
        if keep and worth_keeping(result):
            with self._lock:
                self._done[key] = result
                self._done.move_to_end(key)
                while len(self._done) > self.size:
                    self._done.popitem(last=False)
        return result


def worth_keeping(result: Any) -> bool:
    """Whether a finished row result may be replayed: only a scored one (see :class:`RowMemo`)."""
    return bool(getattr(result, "scored", False))


class RagasEmbedder:
    """The core's Embedder (``embed(texts) -> vectors``) over Ragas embeddings.

    Accepts the legacy ``BaseRagasEmbeddings`` / LangChain embeddings (``embed_documents``) and
    the modern ``BaseRagasEmbedding`` (``embed_texts``).
    """

    def __init__(self, embeddings: Any) -> None:
        if not (
            callable(getattr(embeddings, "embed_documents", None))
            or callable(getattr(embeddings, "embed_texts", None))
        ):
            raise TypeError(
                "embeddings must be Ragas or LangChain embeddings (embed_documents or "
                f"embed_texts); got {type(embeddings).__name__}"
            )
        self.embeddings = embeddings

    @property
    def model_id(self) -> str:
        return _model_name(self.embeddings)

    def embed(self, texts: list[str]) -> list[list[float]]:
        texts = list(texts)
        if not texts:
            return []
        if callable(getattr(self.embeddings, "embed_documents", None)):
            vectors = self.embeddings.embed_documents(texts)
        else:
            vectors = self.embeddings.embed_texts(texts)
        return [list(map(float, v)) for v in vectors]

    def __repr__(self) -> str:
        return f"RagasEmbedder({type(self.embeddings).__name__}, model={self.model_id!r})"
