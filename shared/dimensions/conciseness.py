"""Conciseness: Ragas's length penalty, kept identical for parity with Ragas users' numbers.

``1 - min(len(summary), len(source)) / (len(source) + 1e-10)`` over characters
(ragas 0.4.3, ``ragas/metrics/_summarization.py``, ``_compute_conciseness_score``). Ragas joins
``reference_contexts`` with one newline; our core joins a list of sources with a blank line, so
for multi-part sources the source length here is one character longer per join.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .evidence import ConcisenessEvidence
from .spec import About, DimensionInput, declare_dimension

if TYPE_CHECKING:
    from .compute import DimensionSettings


def conciseness_score(summary: str, source: str) -> float:
    return 1 - min(len(summary), len(source)) / (len(source) + 1e-10)


def score_conciseness(summary: str, source: str) -> ConcisenessEvidence:
    score = min(1.0, max(0.0, conciseness_score(summary, source)))
    return ConcisenessEvidence(
        score=score,
        reason=f"summary is {len(summary):,} characters for a {len(source):,}-character source",
        summary_chars=len(summary),
        source_chars=len(source),
    )


def _score(inp: DimensionInput) -> ConcisenessEvidence:
    return score_conciseness(inp.summary, inp.source)


def _unavailable(settings: DimensionSettings, source: str, reason: str) -> ConcisenessEvidence:
    return ConcisenessEvidence(reason=reason, summary_chars=0, source_chars=len(source))


SPEC = declare_dimension(
    About("conciseness", "nothing", "concis", "length penalty"),
    _score,
    unavailable=_unavailable,
    metric_doc="Ragas's length penalty, for parity with its summary score.",
)
