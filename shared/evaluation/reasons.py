"""The text of a result's reasons, built from its evidence alone (no LLM call): the short
reason, the detailed one, and one sub-score's reason (:meth:`SummaryEvaluation.reason_for`).

It reads results and never builds them, so :mod:`shared.evaluation.result` and the pipeline's
composition
both import it.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any

from ..dimensions.evidence import DIMENSIONS, DimensionEvidence

if TYPE_CHECKING:  # pragma: no cover
    from .options import ScoreOptions
    from .result import ClaimEvidence, QuestionEvidence, SummaryEvaluation


REASON_LINE = 100
"""Longest line of a short reason, in characters: one line per part reads in a terminal and in
DeepEval's results table without wrapping into a wall of text (the detail has the rest)."""


def _clip(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _verdict_label(claim: ClaimEvidence) -> str:
    if claim.error_type is not None:  # the sentences path: FineSurE's error category
        return claim.error_type
    return "contradicted" if claim.verdict == "contradicted" else "not in source"


def _unsupported(claims: list[ClaimEvidence]) -> list[ClaimEvidence]:
    # contradictions first: they are the worse failure
    return sorted(
        (c for c in claims if c.verdict != "supported"), key=lambda c: c.verdict != "contradicted"
    )


def _unit(sentences: bool) -> str:
    return "sentences" if sentences else "claims"


def _missed(questions: list[QuestionEvidence]) -> list[QuestionEvidence]:
    counted = [q for q in questions if q.counted]
    return sorted(
        (q for q in counted if (q.grade or 0) <= 2), key=lambda q: (-q.importance, q.grade or 0)
    )


def _alignment_text(claims: list[ClaimEvidence], sentences: bool = False) -> str:
    """The alignment part in one phrase: the count, and the worst claim (or sentence) if one
    failed. ``sentences``: the sentences path, whose verdicts are per summary sentence."""
    if not claims:
        return "the summary makes no checkable claim"
    supported = sum(c.verdict == "supported" for c in claims)
    text = f"{supported}/{len(claims)} {_unit(sentences)} supported"
    bad = _unsupported(claims)
    if bad:
        text += f'; {_verdict_label(bad[0])}: "{_clip(bad[0].span or bad[0].claim, 55)}"'
    return text


def _coverage_text(questions: list[QuestionEvidence]) -> str:
    """The coverage part in one phrase: the count, and the most important missed question."""
    counted = [q for q in questions if q.counted]
    full = sum(q.grade == 5 for q in counted)
    text = f"{full}/{len(counted)} questions fully answered"
    missed = _missed(questions)
    if missed:
        q = missed[0]
        text += f'; missed "{_clip(q.question, 50)}" (importance {q.importance})'
    return text


def _alignment_detail(claims: list[ClaimEvidence], sentences: bool = False) -> list[str]:
    if not claims:
        return ["Alignment: the summary makes no checkable claim."]
    supported = sum(c.verdict == "supported" for c in claims)
    lines = [f"Alignment: {supported}/{len(claims)} {_unit(sentences)} supported by the source."]
    kinds = collections.Counter(c.error_type for c in claims if c.error_type is not None)
    if kinds:
        lines.append("  Error types: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
    for c in _unsupported(claims):
        span = f' (wrong: "{c.span}")' if c.span else ""
        why = f" — {c.reason}" if c.reason else ""
        lines.append(f'  Unsupported ({_verdict_label(c)}): "{c.claim}"{span}{why}')
    return lines


def _coverage_detail(questions: list[QuestionEvidence]) -> list[str]:
    counted = [q for q in questions if q.counted]
    full = sum(q.grade == 5 for q in counted)
    lines = [f"Coverage: {full}/{len(counted)} questions fully answered by the summary."]
    for q in _missed(questions):
        lines.append(f'  Missed (importance {q.importance}, grade {q.grade}): "{q.question}"')
    skipped = len(questions) - len(counted)
    if skipped:
        lines.append(f"  {skipped} user question(s) left out: the source does not answer them.")
    return lines


def _dimension_items(evidence: DimensionEvidence | None) -> list[tuple[str, Any]]:
    """The computed-or-failed dimensions, weakest first (a dimension with no value last)."""
    if evidence is None:
        return []
    items = [(n, item) for n in DIMENSIONS if (item := getattr(evidence, n)) is not None]
    return sorted(items, key=lambda pair: (pair[1].score is None, pair[1].score or 0.0))


def _part_line(name: str, value: float | None, text: str, *, limit: int | None) -> str:
    """``<name> <value>: <text>``, clipped to ``limit`` characters when one is given."""
    line = f"{name} {'none' if value is None else f'{value:.2f}'}: {text}"
    return line if limit is None else _clip(line, limit)


def dimension_lines(
    evidence: DimensionEvidence | None, *, limit: int | None = REASON_LINE
) -> list[str]:
    """One line per dimension, weakest first: its score (or none) and its own reason."""
    return [
        _part_line(name, item.score, item.reason.removeprefix("not computed: "), limit=limit)
        for name, item in _dimension_items(evidence)
    ]


def compose_reasons(
    score: float,
    alignment: float,
    coverage: float,
    claims: list[ClaimEvidence],
    questions: list[QuestionEvidence],
    options: ScoreOptions,
    dimensions: DimensionEvidence | None = None,
) -> tuple[str, str]:
    """The short reason and the detailed one, built from the evidence alone (no LLM call).

    Short: the headline, then one line per part (alignment, coverage, each dimension), each
    clipped to :data:`REASON_LINE`; the weaker of alignment and coverage comes first, since it
    is what pulled the score down, then the dimensions, weakest first (they are reported beside
    the score, not in it). Detail: the same order, with every unsupported claim, every missed
    question and each dimension's full reason (``SummaryEvaluation.reason_detail``).
    """
    rule = (
        "min" if options.combine == "min" else ("F1" if options.beta == 1 else f"F{options.beta:g}")
    )
    head = f"Score {score:.2f} ({rule} of alignment {alignment:.2f} and coverage {coverage:.2f})."
    by_sentence = options.judge_path == "sentences"
    short = [
        _part_line("alignment", alignment, _alignment_text(claims, by_sentence), limit=REASON_LINE),
        _part_line("coverage", coverage, _coverage_text(questions), limit=REASON_LINE),
    ]
    detail = [_alignment_detail(claims, by_sentence), _coverage_detail(questions)]
    if coverage < alignment:  # the failing part first
        short.reverse()
        detail.reverse()
    dims_detail = dimension_lines(dimensions, limit=None)
    return (
        "\n".join([head, *short, *dimension_lines(dimensions)]),
        "\n".join(
            [head, *detail[0], *detail[1], *(["Dimensions:"] if dims_detail else [])]
            + [f"  {line}" for line in dims_detail]
        ),
    )


def sub_score_reason(evaluation: SummaryEvaluation, name: str) -> str:
    """The reason for one sub-score alone: what a per-sub-score metric reports, not the
    headline's whole account. ``score`` gets the headline reason."""
    if name == "score":
        return evaluation.reason
    value = evaluation.sub_scores().get(name)
    judged = evaluation.error is None and name in ("alignment", "coverage")
    if name == "alignment" and judged:
        by_sentence = evaluation.error_types is not None
        text = _alignment_text(evaluation.claims, by_sentence)
        lines = [_part_line(name, value, text, limit=None)]
        lines += [line.strip() for line in _alignment_detail(evaluation.claims, by_sentence)[1:]]
    elif name == "coverage" and judged:
        lines = [_part_line(name, value, _coverage_text(evaluation.questions), limit=None)]
        lines += [line.strip() for line in _coverage_detail(evaluation.questions)[1:]]
    elif name in ("alignment", "coverage"):
        lines = [_part_line(name, value, f"unscored: {evaluation.error}", limit=None)]
    else:
        item = getattr(evaluation.dimension_evidence, name, None)
        why = getattr(item, "reason", "") or "not computed"
        lines = [_part_line(name, value, why.removeprefix("not computed: "), limit=None)]
    return "\n".join(lines)
