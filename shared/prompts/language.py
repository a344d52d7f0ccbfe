"""The language block (docs/LANGUAGES.md, "Judge"): one instruction block, built from shared
pieces, appended to any prompt of a non-English or cross-lingual pair, and the one table of
language names.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# ---------------------------------------------------------------------------------------------
# Language (issue 18): one instruction block, built from shared pieces, appended to any prompt
# ---------------------------------------------------------------------------------------------

_CODE = re.compile(r"[a-z]{2,3}")

_NAMES = {
    "en": "English",
    "fr": "French",
    "de": "German",
    "es": "Spanish",
    "it": "Italian",
    "pt": "Portuguese",
    "nl": "Dutch",
    "zh": "Chinese",
    "ja": "Japanese",
    "ko": "Korean",
    "ru": "Russian",
    "ar": "Arabic",
    "pl": "Polish",
    "sv": "Swedish",
    "da": "Danish",
    "nb": "Norwegian Bokmål",
    "no": "Norwegian",
    "fi": "Finnish",
    "tr": "Turkish",
    "el": "Greek",
    "he": "Hebrew",
    "hi": "Hindi",
    "cs": "Czech",
    "uk": "Ukrainian",
    "ro": "Romanian",
    "hu": "Hungarian",
    "ca": "Catalan",
    "vi": "Vietnamese",
    "th": "Thai",
    "id": "Indonesian",
}

_CHINESE_VARIETIES = frozenset({"wuu", "yue", "gan", "hak", "nan", "cmn", "lzh"})
"""fastText labels for varieties of Chinese: written Chinese is "zh" here (one pipeline, one
prompt language), as the macrolanguage code says."""


def language_name(code: str | None) -> str:
    """The English name of a language code: "fr" -> "French" (the code itself if unknown,
    "an unknown language" for None)."""
    if code is None:
        return "an unknown language"
    return _NAMES.get(code, code)


def _language_code(code: str) -> str:
    """``code`` as a bare lower-case ISO 639 code ("pt-BR" -> "pt"); anything else is refused,
    since the code's name is written into prompts."""
    key = code.strip().lower().replace("_", "-").split("-")[0]
    if not _CODE.fullmatch(key):
        raise ValueError(f"not an ISO 639-1 language code: {code!r}")
    return key


def _language_name(code: str) -> str:
    """The English name of a language code, as the prompts write it; a code without a known
    name is written as the code itself ("the language with code 'xx'")."""
    key = _language_code(code)
    name = language_name(key)
    return name if name != key else f"the language with code '{key}'"


# The pieces. Placeholders: {summary} / {source} = language names, {what} = the texts the task
# writes, {fixed} = the fixed words of its reply format. Cross-lingual pieces are used only when
# the source's language differs from the summary's.
_LANGUAGE_SAME = "Language. The source and the summary are in {summary}."
_LANGUAGE_PAIR = "Language. The source is in {source}; the summary is in {summary}."
_LANGUAGE_WRITE = "- Write {what} in {summary}, the summary's language."
_LANGUAGE_WRITE_ACROSS = (
    "- Write {what} in {summary}, the summary's language, not in {source}, even where their "
    "content comes from the source."
)
_LANGUAGE_COMPARE = (
    "- Texts in {summary} and texts in {source} are compared by meaning: a statement in "
    "{summary} is supported by {source} text that states the same fact; a difference in "
    "language or wording alone is never a reason against it."
)
_LANGUAGE_QUOTE = (
    "- Quote the source in {source}, exactly as written there; never translate a quote."
)
_LANGUAGE_KEEP = "- Keep the JSON keys{fixed} exactly as given above, in English."


class _LanguageTask(NamedTuple):
    """What the language block of one task says."""

    writes: str
    """The texts the judge writes in this task."""
    fixed: str = ""
    """Fixed words of its reply format, which stay as given (the code reads them)."""
    compares: bool = False
    """It compares texts that may be in two languages (verdicts, grades)."""
    quotes: bool = False
    """It quotes the source."""


_VERDICT_WORDS = '"supported", "contradicted", "not_in_source"'
_LANGUAGE_TASKS: dict[str, _LanguageTask] = {
    "generate_questions": _LanguageTask("the questions and the reference answers"),
    "generate_questions_part": _LanguageTask("the questions and the reference answers"),
    "answer_user_questions": _LanguageTask("the reference answers", '"not in source"'),
    "answer_user_questions_excerpts": _LanguageTask("the reference answers", '"not in source"'),
    "extract_claims": _LanguageTask("the claims"),
    "verify_claims": _LanguageTask("the reasons", _VERDICT_WORDS, True, True),
    "verify_claims_excerpts": _LanguageTask("the reasons", _VERDICT_WORDS, True, True),
    "answer_from_summary": _LanguageTask("the answers", '"idk"'),
    "grade_answers": _LanguageTask("the reasons", "", True),
    "review_style": _LanguageTask("the reasons and the repeated points"),
}
_COMPACT_LANGUAGE_TASKS: dict[str, _LanguageTask] = {
    "source_questions": _LanguageTask("the questions and the reference answers"),
    "source_reference_answers": _LanguageTask("the reference answers", '"not in source"'),
    "check_claims": _LanguageTask("the claims and the reasons", _VERDICT_WORDS, True, True),
    "review_summary": _LanguageTask(
        "the answers, the reasons and the repeated points", '"idk"', True
    ),
    "answer_and_grade": _LanguageTask("the answers and the reasons", '"idk"', True),
}
"""The two-call tasks' language blocks, apart from _LANGUAGE_TASKS so that the step-by-step
path's language hash (and signatures) stay as they were; hashed in compact_prompts_hash."""
_SENTENCE_LANGUAGE_TASKS: dict[str, _LanguageTask] = {
    "check_sentences": _LanguageTask(
        "the reasons", '"supported" and the category names', True, True
    ),
    "pointed_review": _LanguageTask("the reasons and the repeated points", "", True),
    "point_and_grade": _LanguageTask("the reasons", "", True),
    "pointed_style": _LanguageTask("the reasons and the repeated points"),
}
"""The sentences path's language blocks (hashed in sentence_prompts_hash); its spans and quotes
are copied from the texts, so only reasons and points are written."""
_ASKED_LANGUAGE = re.compile(r"^- Write .+? in (.+?), the summary's language", re.MULTILINE)


def languages(language: str | None, source_language: str | None) -> tuple[str, str] | None:
    """(summary, source) language codes when prompts need a language block, else None.

    ``language`` is the summary's language; None means unknown and gives today's prompts, as
    does English with an English (or unknown: None) source."""
    if language is None:
        return None
    summary = _language_code(language)
    source = _language_code(source_language) if source_language is not None else summary
    return None if summary == source == "en" else (summary, source)


def language_block(task: str, language: str | None, source_language: str | None = None) -> str:
    """The language instructions for ``task`` ("" when none are needed: see :func:`languages`).

    Everything the judge writes comes back in the summary's language (docs/LANGUAGES.md,
    "Judge"); a cross-lingual pair is named as such, told to compare by meaning across the two
    languages where the task compares texts, and to quote the source untranslated."""
    pair = languages(language, source_language)
    if pair is None:
        return ""
    summary, source = (_language_name(code) for code in pair)
    spec = (_LANGUAGE_TASKS | _COMPACT_LANGUAGE_TASKS | _SENTENCE_LANGUAGE_TASKS)[task]
    across = pair[0] != pair[1]
    lines = [
        _LANGUAGE_PAIR if across else _LANGUAGE_SAME,
        _LANGUAGE_WRITE_ACROSS if across else _LANGUAGE_WRITE,
    ]
    if across and spec.compares:
        lines.append(_LANGUAGE_COMPARE)
    if across and spec.quotes:
        lines.append(_LANGUAGE_QUOTE)
    lines.append(_LANGUAGE_KEEP)
    fixed = f" and the fixed values {spec.fixed}" if spec.fixed else ""
    return "\n".join(lines).format(summary=summary, source=source, what=spec.writes, fixed=fixed)


def asked_language(prompt: str) -> str | None:
    """The language name a prompt asks the judge to write in, or None (an English prompt of
    today's form); used by the fake judge. Read from the last block only: the block ends the
    prompt, so text in a user's data block cannot pose as it."""
    _, marker, tail = prompt.rpartition("\nLanguage. ")
    if not marker or "<<<END " in tail:  # no block, or the text found is inside a data block
        return None
    match = _ASKED_LANGUAGE.search(tail)
    return match.group(1) if match else None
