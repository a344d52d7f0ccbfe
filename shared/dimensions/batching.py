"""CPU batching of the dimensions' spaCy parse and embedding across concurrent summaries.

:class:`BatchAnalysis` serves one ``ascore_summaries`` batch; :class:`SharedAnalyser` batches
the single-summary calls that framework runners make concurrently in one event loop. Both run
the CPU work in worker threads while the judge calls proceed, and neither touches a judge. Both
also index each distinct source for grounding once (:class:`SourceIndexes`), however many of
its summaries they serve.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .compute import DimensionSettings, SummaryAnalysis, add_embeddings, analyse_spacy
from .grounding import SourceIndex, index_source
from .nlp import TextAnalysis

INLINE_INDEX_CHARS = 20_000
"""Sources up to this length are indexed on the event loop (about 15 ms at most: a thread hop
would cost more); longer ones in a worker thread, so a huge source never blocks the judge calls."""


class SourceIndexes:
    """Source text -> grounding's :class:`~shared.dimensions.grounding.SourceIndex`, built once
    per distinct source and shared by every summary of it (and by concurrent waiters)."""

    def __init__(self) -> None:
        self._built: dict[str, asyncio.Future[SourceIndex]] = {}

    async def get(self, source: str) -> SourceIndex:
        future = self._built.get(source)
        if future is None:
            if len(source) <= INLINE_INDEX_CHARS:
                future = asyncio.get_running_loop().create_future()
                try:
                    future.set_result(index_source(source))
                except Exception as exc:
                    future.set_exception(exc)
            else:
                future = asyncio.ensure_future(asyncio.to_thread(index_source, source))
            self._built[source] = future
        return await asyncio.shield(future)

    def __len__(self) -> int:
        return len(self._built)


async def _parse_off_loop(
    texts: Sequence[str], settings: DimensionSettings, languages: Sequence[str] | None = None
) -> list[TextAnalysis | None]:
    """:func:`analyse_spacy` in a worker thread, or at once when no dimension needs spaCy (then
    it only returns placeholders, and a thread hop would only delay the judge calls)."""
    if settings.needs_spacy:
        return await asyncio.to_thread(analyse_spacy, texts, settings, languages)
    return analyse_spacy(texts, settings, languages)


async def _embed_off_loop(
    texts: Sequence[TextAnalysis | None], settings: DimensionSettings
) -> list[SummaryAnalysis]:
    """:func:`add_embeddings` in a worker thread, or at once when no dimension embeds."""
    if settings.needs_embeddings:
        return await asyncio.to_thread(add_embeddings, texts, settings)
    return add_embeddings(texts, settings)


class BatchAnalysis:
    """The CPU side of a batch, started at once in worker threads: one ``nlp.pipe`` over every
    summary, then one ``embed`` call over all their sentences. The style call of a summary waits
    only for the spaCy part (it needs the sentences), the dimensions for both. ``languages``:
    each summary's language for the dimensions (None: all English)."""

    def __init__(
        self,
        texts: Sequence[str],
        settings: DimensionSettings,
        languages: Sequence[str] | None = None,
    ) -> None:
        self._spacy = asyncio.ensure_future(_parse_off_loop(texts, settings, languages))
        self._full = asyncio.ensure_future(self._embed(settings))
        self.sources = SourceIndexes()

    async def _embed(self, settings: DimensionSettings) -> list[SummaryAnalysis]:
        return await _embed_off_loop(await self._spacy, settings)

    async def text(self, index: int) -> TextAnalysis | None:
        return (await self._spacy)[index]

    async def analysis(self, index: int) -> SummaryAnalysis:
        return (await self._full)[index]

    async def source_index(self, source: str) -> SourceIndex:
        return await self.sources.get(source)


BATCH_WINDOW_S = 0.0
"""How long the first of several concurrent single-summary calls waits for others to join its
CPU batch: 0 = one pass of the event loop, which lets every call already scheduled join. Calls
that arrive later queue for the next batch, which starts when the running one is parsed, so no
timer is needed (a 5 ms timer measured no faster and shifted the timing of the judge calls)."""


@dataclass
class _Queued:
    text: str
    parsed: asyncio.Future[TextAnalysis | None]
    analysed: asyncio.Future[SummaryAnalysis]
    language: str = "en"


def _settle(
    future: asyncio.Future[Any], value: Any = None, error: BaseException | None = None
) -> None:
    if future.done():  # its caller was cancelled
        return
    if error is not None:
        future.set_exception(error)
        future.exception()  # retrieved: a caller that stopped at the parse never awaits it
    else:
        future.set_result(value)


class SharedAnalyser:
    """The CPU side of concurrent :func:`ascore_summary` calls in one event loop, batched.

    Framework runners (``deepeval.evaluate``, ``ragas.evaluate``) score one row per call, many
    rows at once in one loop, and their calls arrive staggered. Run apart, each row's spaCy
    parse and embedding would compete for the cores in its own thread. Here two serial stages
    take whatever has queued: a spaCy stage (one ``nlp.pipe`` over the queue) and an embedding
    stage (one ``embed`` over every sentence parsed since its last call), each in one worker
    thread, so a burst of rows costs one or two batches and the embedding of one batch overlaps
    the parse of the next. The first summary waits :data:`BATCH_WINDOW_S` for company.
    Same interface as :class:`BatchAnalysis`: ``text(index)``, ``analysis(index)``,
    ``source_index(source)`` (each source indexed once while the analyser is open).
    """

    _open: ClassVar[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Any, Any]]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self, settings: DimensionSettings, key: Any) -> None:
        self._settings = settings
        self._key = key
        self._to_parse: list[_Queued] = []
        self._to_embed: list[tuple[_Queued, TextAnalysis | None]] = []
        self._parsing: asyncio.Task[None] | None = None
        self._embedding: asyncio.Task[None] | None = None
        self._items: dict[int, _Queued] = {}
        self.sources = SourceIndexes()

    @classmethod
    def join(
        cls, summary: str, settings: DimensionSettings, language: str = "en"
    ) -> tuple[SharedAnalyser, int]:
        """Queue ``summary`` (in ``language``) with the analyser for these settings in this
        loop."""
        loop = asyncio.get_running_loop()
        # DimensionSettings compares without the embedder: key on the embedder's identity too
        key = (settings, id(settings.embedder))
        analysers = cls._open.setdefault(loop, {})
        analyser = analysers.get(key)
        if analyser is None:
            analyser = analysers[key] = cls(settings, key)
        item = _Queued(summary, loop.create_future(), loop.create_future(), language)
        index = id(item)
        analyser._items[index] = item
        analyser._to_parse.append(item)
        if analyser._parsing is None:
            analyser._parsing = loop.create_task(analyser._parse(BATCH_WINDOW_S))
        return analyser, index

    async def _parse(self, wait: float) -> None:
        await asyncio.sleep(wait)
        while self._to_parse:
            batch, self._to_parse = self._to_parse, []
            try:
                texts = await _parse_off_loop(
                    [i.text for i in batch], self._settings, [i.language for i in batch]
                )
            except Exception as exc:  # e.g. the pipeline failed to load in this thread
                for item in batch:
                    _settle(item.parsed, error=exc)
                    _settle(item.analysed, error=exc)
                continue
            for item, text in zip(batch, texts, strict=True):
                _settle(item.parsed, text)
                self._to_embed.append((item, text))
            if self._embedding is None:
                self._embedding = asyncio.get_running_loop().create_task(self._embed())
        self._parsing = None
        self._close()

    async def _embed(self) -> None:
        while self._to_embed:
            batch, self._to_embed = self._to_embed, []
            try:
                out = await _embed_off_loop([text for _, text in batch], self._settings)
            except Exception as exc:
                for item, _ in batch:
                    _settle(item.analysed, error=exc)
                continue
            for (item, _), analysis in zip(batch, out, strict=True):
                _settle(item.analysed, analysis)
        self._embedding = None
        self._close()

    def _close(self) -> None:
        """Leave the registry when idle, so the settings (and a user's embedder) are freed."""
        if self._parsing is None and self._embedding is None and not self._to_parse:
            analysers = self._open.get(asyncio.get_running_loop(), {})
            if analysers.get(self._key) is self:
                del analysers[self._key]

    async def text(self, index: int) -> TextAnalysis | None:
        return await asyncio.shield(self._items[index].parsed)

    async def analysis(self, index: int) -> SummaryAnalysis:
        try:
            return await asyncio.shield(self._items[index].analysed)
        finally:
            self._items.pop(index, None)

    async def source_index(self, source: str) -> SourceIndex:
        return await self.sources.get(source)


__all__ = [
    "BATCH_WINDOW_S",
    "INLINE_INDEX_CHARS",
    "BatchAnalysis",
    "SharedAnalyser",
    "SourceIndexes",
]
