"""The text of a result, built from its evidence alone (no LLM call): the signature, the
reason, the dimensions' line, and the unscored result (internal to the core).

:func:`signature` is public through :mod:`shared`; the rest is the pipeline's.
"""

from __future__ import annotations

import hashlib
from typing import Any

from . import prompts as p
from ._version import __version__
from .dimensions import DIMENSIONS, DimensionEvidence
from .judge import JudgeFailed
from .options import ScoreOptions
from .result import ClaimEvidence, QuestionEvidence, SummaryEvaluation

NO_JUDGE = (
    "no judge: alignment, coverage and the score need a judge (judge=None); "
    "only the deterministic dimensions were computed"
)


def signature(judge: object, options: ScoreOptions, *, long: bool = False) -> str:
    """``judge:<model>|n:<n>|beta:<b>|combine:<c>|prompts:<hash>|version:<v>`` (after sacrebleu).

    With user questions, ``n`` reads ``user<count>:<hash>`` so two question sets never share one.
    ``long=True`` (a result whose source was chunked) adds ``|long:<hash>|budget:<tokens>`` after
    the prompts hash: the long-source templates and the budget that shaped the parts. Results on
    sources that fit carry neither, since the budget does not change them. ``samples=k > 1``
    adds ``|samples:<k>`` (a mean over k judge samples is another measurement than one sample).
    A ``language`` option adds ``|language:<code>``; a detected language is the row's own
    (``|lang:<code>``, added per row by the pipeline for a row not in English).
    """
    model = "none" if judge is None else getattr(judge, "model_id", type(judge).__name__)
    if options.questions is None:
        n = str(options.n)
    else:
        digest = hashlib.sha256(
            "\n".join(f"{q.importance}:{q.question}" for q in options.questions).encode()
        ).hexdigest()[:6]
        n = f"user{len(options.questions)}:{digest}"
    beta = f"{options.beta:g}"
    return (
        f"judge:{model}|n:{n}|beta:{beta}|combine:{options.combine}"
        f"|prompts:{p.prompts_hash()}"
        + (f"|long:{p.long_prompts_hash()}|budget:{options.context_budget}" if long else "")
        + f"{options.dimension_settings.signature_part()}"
        + (f"|samples:{options.samples}" if options.samples > 1 else "")
        + (f"|language:{options.language}" if options.language is not None else "")
        + f"|version:{__version__}"
    )


def _clip(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def compose_reason(
    score: float,
    alignment: float,
    coverage: float,
    claims: list[ClaimEvidence],
    questions: list[QuestionEvidence],
    options: ScoreOptions,
) -> str:
    """A readable account of the score, built from the evidence alone (no LLM call)."""
    rule = (
        "min" if options.combine == "min" else ("F1" if options.beta == 1 else f"F{options.beta:g}")
    )
    parts = [
        f"Score {score:.2f} ({rule} of alignment {alignment:.2f} and coverage {coverage:.2f})."
    ]
    supported = sum(c.verdict == "supported" for c in claims)
    if not claims:
        parts.append("Alignment: the summary makes no checkable claim.")
    else:
        parts.append(f"Alignment: {supported}/{len(claims)} claims supported by the source.")
        bad = [c for c in claims if c.verdict != "supported"]
        for c in bad[:3]:
            label = "contradicted" if c.verdict == "contradicted" else "not in source"
            parts.append(f'Unsupported ({label}): "{_clip(c.claim)}" — {_clip(c.reason, 120)}')
        if len(bad) > 3:
            parts.append(f"…and {len(bad) - 3} more unsupported claim(s).")
    counted = [q for q in questions if q.counted]
    full = sum(q.grade == 5 for q in counted)
    parts.append(f"Coverage: {full}/{len(counted)} questions fully answered by the summary.")
    missed = sorted(
        (q for q in counted if (q.grade or 0) <= 2), key=lambda q: (-q.importance, q.grade or 0)
    )
    for q in missed[:3]:
        parts.append(f'Missed (importance {q.importance}, grade {q.grade}): "{_clip(q.question)}"')
    if len(missed) > 3:
        parts.append(f"…and {len(missed) - 3} more weakly covered question(s).")
    skipped = len(questions) - len(counted)
    if skipped:
        parts.append(f"{skipped} user question(s) left out: the source does not answer them.")
    return " ".join(parts)


def unscored(error: str, sig: str, **evidence: Any) -> SummaryEvaluation:
    return SummaryEvaluation(
        score=None,
        alignment=None,
        coverage=None,
        error=error,
        reason=f"Unscored: {error}",
        signature=sig,
        **evidence,
    )


def dimension_fields(evidence: DimensionEvidence) -> dict[str, Any]:
    return {**evidence.scores(), "dimension_evidence": evidence}


def dimension_line(evidence: DimensionEvidence) -> str:
    """One sentence on the dimensions for the reason (scores, or why a dimension has none)."""
    parts = []
    for name in DIMENSIONS:
        item = getattr(evidence, name)
        if item is None:
            continue
        if item.score is None:
            parts.append(f"{name} none ({_clip(item.reason.removeprefix('not computed: '), 60)})")
        else:
            parts.append(f"{name} {item.score:.2f}")
    return f"Dimensions: {'; '.join(parts)}." if parts else ""


def failure_text(exc: BaseException) -> str:
    if isinstance(exc, JudgeFailed):
        return str(exc)
    return f"judge call failed: {type(exc).__name__}: {exc}"
