"""The fake judge's answers to Ragas' SummaryScore prompts (keyphrases, closed questions, 0/1
answers), from the texts in the prompt, as :mod:`shared.testing.fake` answers this project's."""

from __future__ import annotations

import collections
import json
import re
from typing import Any

from .words import _STOP, _overlap, content_words

# ---------------------------------------------------------------------------------------------
# Ragas' SummaryScore prompts (keyphrases, closed questions, 0/1 answers), from the same texts
# ---------------------------------------------------------------------------------------------

_PROPER = re.compile(r"[A-Z][\w'\u2019-]*(?:\s+[A-Z][\w'\u2019-]*)*|\d[\d,.]*%?")
_MENTION = re.compile(r"^Does the text mention (.+)\?$")
KEYPHRASES = 10
"""Most keyphrases the fake extracts from a text (and so closed questions per summary)."""


def _ragas_input(prompt: str) -> dict[str, Any]:
    """The input object of a Ragas prompt: the JSON after its last ``input:`` line (the
    prompt's examples come before it)."""
    start = prompt.rfind("\ninput: ")
    if start < 0:
        return {}
    try:
        value, _ = json.JSONDecoder().raw_decode(prompt[start + len("\ninput: ") :])
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _keyphrases(text: str) -> list[str]:
    """Names and figures of ``text`` (runs of capitalised words, numbers), leading stop words
    dropped, each once; the most frequent content words when it has none (lower-cased text)."""
    found: dict[str, str] = {}
    for match in _PROPER.finditer(text):
        words = match.group().split()
        while words and words[0].lower() in _STOP:
            words.pop(0)
        phrase = " ".join(words).strip(".,")
        if phrase and content_words(phrase):
            found.setdefault(phrase.lower(), phrase)
    phrases = list(found.values())
    if not phrases:
        counts = collections.Counter(content_words(text))
        phrases = [word for word, _ in counts.most_common(KEYPHRASES)]
    return phrases[:KEYPHRASES]


def _ragas_keyphrases(prompt: str) -> dict:
    return {"keyphrases": _keyphrases(str(_ragas_input(prompt).get("text") or ""))}


def _ragas_questions(prompt: str) -> dict:
    """One closed question per keyphrase (the text's sentences when none was given)."""
    given = _ragas_input(prompt)
    phrases = [str(k) for k in given.get("keyphrases") or [] if str(k).strip()]
    if not phrases:
        phrases = _keyphrases(str(given.get("text") or ""))
    return {"questions": [f"Does the text mention {phrase}?" for phrase in phrases]}


def _ragas_answers(prompt: str) -> dict:
    """``"1"`` for a question whose subject's words are at least half in the summary, else
    ``"0"``: summaries that keep more of the source's names and figures score higher."""
    given = _ragas_input(prompt)
    summary = set(content_words(str(given.get("summary") or "")))
    answers = []
    for question in given.get("questions") or []:
        match = _MENTION.match(str(question).strip())
        words = content_words(match.group(1) if match else str(question))
        answers.append("1" if words and _overlap(words, summary) >= 0.5 else "0")
    return {"answers": answers}
