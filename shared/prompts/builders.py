"""The blocks users' texts are placed in, and the prompt builders (one per task; the pipeline
calls only these).
"""

from __future__ import annotations

import functools
import json
import re
import string
import unicodedata
from collections.abc import Sequence
from typing import TypedDict, Unpack

from .language import language_block
from .templates import (
    _DATA_RULE,
    _TASK_RE,
    ALL_PROMPTS,
    SOURCE_PREAMBLE,
    TASK_LINE,
)

# ---------------------------------------------------------------------------------------------
# Blocks
# ---------------------------------------------------------------------------------------------


_LESS = "<\ufe64\uff1c"
_GREATER = ">\ufe65\uff1e"
"""The characters that are ``<`` or ``>`` after NFKC normalisation (the ASCII ones, the small
and the fullwidth forms; ``tests/test_prompts.py`` checks the list against every code point)."""

_BRACKET = re.compile(f"[{_LESS}{_GREATER}]")

_INVISIBLE = frozenset(
    (0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0, *range(0x180B, 0x1810))
) | frozenset((*range(0xFE00, 0xFE10), *range(0xE0000, 0xE1000)))
"""Default-ignorable code points that are not format characters (category Cf, checked apart):
the combining grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian and other
variation selectors, tags. A reader (or a normalising step) sees none of them."""


def _invisible(c: str) -> bool:
    return unicodedata.category(c) == "Cf" or ord(c) in _INVISIBLE


def neutralise(text: str) -> str:
    """Make ``text`` unable to open or close a block: the markers use ``<<<`` and ``>>>``.

    Every run of three or more of the same bracket becomes ``‹‹‹`` or ``›››``: exact runs, and
    runs that are one only once read as a model may read them, NFKC-normalised (fullwidth
    ``＜``, small ``﹤``) and without the invisible characters between the brackets (zero-width
    spaces and joiners, word joiner, BOM, soft hyphen, bidirectional controls, variation
    selectors), which are kept. Text with neither is returned as it is."""
    text = text.replace("<<<", "‹‹‹").replace(">>>", "›››")
    runs: list[list[int]] = []
    previous = -1
    for match in _BRACKET.finditer(text):
        position, less = match.start(), match.group() in _LESS
        joined = (
            runs
            and less == (text[previous] in _LESS)
            and all(_invisible(text[i]) for i in range(previous + 1, position))
        )
        if joined:
            runs[-1].append(position)
        else:
            runs.append([position])
        previous = position
    forged = [position for run in runs if len(run) >= 3 for position in run]
    if not forged:
        return text
    out = list(text)
    for position in forged:
        out[position] = "‹" if out[position] in _LESS else "›"
    return "".join(out)


def block(name: str, text: str) -> str:
    return f"<<<{name}>>>\n{neutralise(text)}\n<<<END {name}>>>"


def numbered_block(name: str, items: Sequence[str]) -> str:
    """One item a line, ``[i] text``, newlines inside an item folded to spaces."""
    lines = [f"[{i}] {' '.join(item.split())}" for i, item in enumerate(items, start=1)]
    return block(name, "\n".join(lines))


def read_block(prompt: str, name: str) -> str | None:
    """The text of block ``name`` in ``prompt`` (used by the fake judge), or None."""
    match = re.search(rf"<<<{name}>>>\n(.*?)\n<<<END {name}>>>", prompt, re.DOTALL)
    return match.group(1) if match else None


def read_numbered_block(prompt: str, name: str) -> list[str]:
    text = read_block(prompt, name)
    if text is None:
        return []
    return [re.sub(r"^\[\d+\] ", "", line) for line in text.splitlines() if line.startswith("[")]


_ANY_BLOCK = re.compile(r"<<<([A-Z][A-Z ]*)>>>\n.*?\n<<<END \1>>>", re.DOTALL)


def task_of(prompt: str) -> str | None:
    """The task named on the prompt's task line, or None for a prompt that is not ours. Read
    outside the data blocks: a two-call prompt has the source before its task line, and a source
    that contains a task line of its own must not pose as the task."""
    match = _TASK_RE.search(_ANY_BLOCK.sub("", prompt))
    return match.group(1) if match else None


class Languages(TypedDict, total=False):
    """The languages every builder takes as keywords (``**langs: Unpack[Languages]``)."""

    language: str | None
    """The summary's: the reply's language."""
    source_language: str | None
    """The source's, where it differs: quotes stay in it."""


@functools.lru_cache(maxsize=64)
def _placeholders(template: str) -> frozenset[str]:
    return frozenset(name for _, name, _, _ in string.Formatter().parse(template) if name)


def render(
    task: str,
    *,
    language: str | None = None,
    source_language: str | None = None,
    **fields: str | int,
) -> str:
    """The prompt of ``task``; with a language that needs one (:func:`languages`), its language
    block follows the reply format, last, where a small model reads it just before answering.
    Without, the text is exactly the English template's (its pinned hash holds). A field the
    template has no place for is refused (a misspelt keyword of a builder lands here)."""
    template, _ = ALL_PROMPTS[task]
    unknown = sorted(set(fields) - _placeholders(template))
    if unknown:
        raise TypeError(f"the {task} prompt takes no {', '.join(unknown)}")
    text = template.format(task_line=TASK_LINE.format(task=task), data_rule=_DATA_RULE, **fields)
    extra = language_block(task, language, source_language)
    return f"{text}\n{extra}\n" if extra else text


# ---------------------------------------------------------------------------------------------
# Builders (one per task; the pipeline calls only these)
# ---------------------------------------------------------------------------------------------


def generate_questions_prompt(source: str, n: int, **langs: Unpack[Languages]) -> str:
    """Questions about ``source``, written in ``language`` (the summary's: the questions of one
    source are shared only among its summaries in one language)."""
    return render("generate_questions", n=n, source_block=block("SOURCE", source), **langs)


def _text_then_numbered(
    task: str, text: tuple[str, str], items: tuple[str, Sequence[str]], **langs: Unpack[Languages]
) -> str:
    """The prompt of a task that shows one text block and then one numbered block: ``text`` and
    ``items`` are (label, content); each fills the template's ``<label>_block``."""
    (text_label, content), (items_label, lines) = text, items
    return render(
        task,
        **{f"{text_label.lower()}_block": block(text_label, content)},
        **{f"{items_label.lower()}_block": numbered_block(items_label, lines)},
        **langs,
    )


def answer_user_questions_prompt(
    source: str, questions: Sequence[str], **langs: Unpack[Languages]
) -> str:
    return _text_then_numbered(
        "answer_user_questions", ("SOURCE", source), ("QUESTIONS", questions), **langs
    )


def extract_claims_prompt(summary: str, **langs: Unpack[Languages]) -> str:
    return render("extract_claims", summary_block=block("SUMMARY", summary), **langs)


def verify_claims_prompt(source: str, claims: Sequence[str], **langs: Unpack[Languages]) -> str:
    return _text_then_numbered("verify_claims", ("SOURCE", source), ("CLAIMS", claims), **langs)


def answer_from_summary_prompt(
    summary: str, questions: Sequence[str], **langs: Unpack[Languages]
) -> str:
    return _text_then_numbered(
        "answer_from_summary", ("SUMMARY", summary), ("QUESTIONS", questions), **langs
    )


def grade_item(question: str, reference: str, candidate: str) -> str:
    """One grade item as a one-line JSON object: every field is a JSON string, so no content
    (quotes, separators, "reference:" text, newlines) can end its field or forge another; only
    the JSON syntax the prompt itself writes separates fields. Whitespace runs fold to one space
    first, as in every numbered block."""
    fields = {"question": question, "reference": reference, "candidate": candidate}
    return json.dumps({k: " ".join(v.split()) for k, v in fields.items()}, ensure_ascii=False)


def read_grade_item(line: str) -> dict[str, str]:
    """The fields of one item of a grade prompt's ITEMS block (used by the fake judge)."""
    fields = json.loads(line)
    if not isinstance(fields, dict):
        raise ValueError(f"not a grade item: {line!r}")
    return {str(k): str(v) for k, v in fields.items()}


def grade_answers_prompt(items: Sequence[tuple[str, str, str]], **langs: Unpack[Languages]) -> str:
    """``items``: (question, reference answer, candidate answer) triples, one JSON object each
    (:func:`grade_item`)."""
    lines = [grade_item(q, r, c) for q, r, c in items]
    return render("grade_answers", items_block=numbered_block("ITEMS", lines), **langs)


def review_style_prompt(sentences: Sequence[str], **langs: Unpack[Languages]) -> str:
    """One call for both judged dimensions: vague sentences (specificity) and repeated points
    (non-redundancy); the sentences are spaCy's split, numbered from 1."""
    return render("review_style", sentences_block=numbered_block("SENTENCES", sentences), **langs)


def generate_questions_part_prompt(
    part: str, index: int, parts: int, n: int, **langs: Unpack[Languages]
) -> str:
    """Questions from part ``index`` (1-based) of ``parts`` of a long source."""
    return render(
        "generate_questions_part",
        n=n,
        part=index,
        parts=parts,
        part_block=block("PART", part),
        **langs,
    )


def excerpts_text(passages: Sequence[tuple[int, str]]) -> str:
    """Passages ``(position, text)`` in source order, "[…]" wherever text was left out."""
    lines: list[str] = []
    previous = None
    for position, text in sorted(passages):
        gap = position > 0 if previous is None else position > previous + 1
        if gap:
            lines.append("[…]")
        lines.append(" ".join(text.split()))
        previous = position
    return "\n".join(lines)


def _excerpts(passages: Sequence[tuple[int, str]], last: int | None) -> str:
    """:func:`excerpts_text`, with a trailing "[…]" when text follows the last passage shown
    (``last`` = the source's last passage position)."""
    text = excerpts_text(passages)
    if last is not None and passages and max(i for i, _ in passages) < last:
        text += "\n[…]"
    return text


def verify_claims_excerpts_prompt(
    passages: Sequence[tuple[int, str]],
    claims: Sequence[str],
    last: int | None = None,
    **langs: Unpack[Languages],
) -> str:
    """Claims against retrieved passages; ``last`` = the source's last passage position, so a
    trailing "[…]" shows that text follows."""
    excerpts = ("EXCERPTS", _excerpts(passages, last))
    return _text_then_numbered("verify_claims_excerpts", excerpts, ("CLAIMS", claims), **langs)


def answer_user_questions_excerpts_prompt(
    passages: Sequence[tuple[int, str]],
    questions: Sequence[str],
    last: int | None = None,
    **langs: Unpack[Languages],
) -> str:
    excerpts = ("EXCERPTS", _excerpts(passages, last))
    return _text_then_numbered(
        "answer_user_questions_excerpts", excerpts, ("QUESTIONS", questions), **langs
    )


# ---------------------------------------------------------------------------------------------
# Builders of the two-call path
# ---------------------------------------------------------------------------------------------


def source_prefix(source: str) -> str:
    """The bytes every source-carrying two-call prompt of ``source`` begins with: the preamble
    and the source block, then a blank line. Identical for all of a source's calls, whatever
    their task, summary or language (those follow it)."""
    return f"{SOURCE_PREAMBLE}\n\n{block('SOURCE', source)}\n\n"


def source_questions_prompt(source: str, n: int, **langs: Unpack[Languages]) -> str:
    """The per-source call: ``n`` weighted questions with the source's answers."""
    task = render("source_questions", n=n, **langs)
    return source_prefix(source) + task


def source_reference_answers_prompt(
    source: str, questions: Sequence[str], **langs: Unpack[Languages]
) -> str:
    """The per-source call with the user's questions: their reference answers."""
    task = render(
        "source_reference_answers", questions_block=numbered_block("QUESTIONS", questions), **langs
    )
    return source_prefix(source) + task


def check_claims_prompt(source: str, summary: str, **langs: Unpack[Languages]) -> str:
    """The summary's claims extracted and each checked against the full source, in one reply."""
    task = render("check_claims", summary_block=block("SUMMARY", summary), **langs)
    return source_prefix(source) + task


def _question_items(items: Sequence[tuple[str, str]]) -> str:
    """The ITEMS block of (question, reference answer) pairs, one JSON object a line (as
    :func:`grade_item`, without a candidate)."""
    lines = [
        json.dumps(
            {"question": " ".join(q.split()), "reference": " ".join(r.split())}, ensure_ascii=False
        )
        for q, r in items
    ]
    return numbered_block("ITEMS", lines)


def review_summary_prompt(
    summary: str,
    items: Sequence[tuple[str, str]],
    sentences: Sequence[str] = (),
    **langs: Unpack[Languages],
) -> str:
    """The summary-only call: ``items`` (question, reference answer) answered from the summary
    and graded, and, with ``sentences`` (spaCy's split), the style review. Never the source."""
    fields: dict[str, str] = {
        "summary_block": block("SUMMARY", summary),
        "items_block": _question_items(items),
    }
    if sentences:
        fields["sentences_block"] = numbered_block("SENTENCES", sentences)
    task = "review_summary" if sentences else "answer_and_grade"
    return render(task, **langs, **fields)


# ---------------------------------------------------------------------------------------------
# Builders of the sentences path
# ---------------------------------------------------------------------------------------------


def check_sentences_prompt(
    source: str, sentences: Sequence[str], **langs: Unpack[Languages]
) -> str:
    """The sentence check: the summary's ``sentences`` (split offline), numbered, each judged
    against the full source; begins with :func:`source_prefix`."""
    task = render(
        "check_sentences", sentences_block=numbered_block("SENTENCES", sentences), **langs
    )
    return source_prefix(source) + task


def pointed_review_prompt(
    sentences: Sequence[str],
    items: Sequence[tuple[str, str]],
    style: bool,
    **langs: Unpack[Languages],
) -> str:
    """The pointed review: ``items`` (question, reference answer) graded by pointing at the
    numbered ``sentences`` of the summary, and with ``style`` the style review of the same
    sentences. Never the source."""
    fields: dict[str, str] = {"sentences_block": numbered_block("SENTENCES", sentences)}
    if items:
        fields["items_block"] = _question_items(items)
    task = ("pointed_review" if style else "point_and_grade") if items else "pointed_style"
    return render(task, **langs, **fields)
