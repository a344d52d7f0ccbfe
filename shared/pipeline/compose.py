"""The text of a result, built from its evidence alone (no LLM call): the signature, the
reason, the dimensions' line, and the unscored result (internal to the core).

:func:`signature` is public through :mod:`shared`; the rest is the pipeline's.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .. import prompts as p
from .._version import __version__
from ..core.redact import redact
from ..dimensions import DimensionEvidence
from ..dimensions.embedding import signature_field
from ..evaluation.frozen import signature_n
from ..evaluation.options import ScoreOptions
from ..evaluation.reasons import (  # noqa: F401 (REASON_LINE, compose_reasons, sub_score_reason: re-exported)
    REASON_LINE,
    compose_reasons,
    dimension_lines,
    sub_score_reason,
)
from ..evaluation.result import NO_JUDGE, SummaryEvaluation  # noqa: F401 (NO_JUDGE: re-exported)
from ..judge.server import failure_reason
from ..judge.wrappers import JudgeFailed, base_judge
from ..prompts.schemas import CLAIMS_STEP


def claims_step(judge: object) -> int:
    """The step the two-call claim bound is rounded up to for ``judge``
    (:data:`shared.prompts.schemas.CLAIMS_STEP`): 1, the exact bound, for a judge that says its
    server keeps the response schema out of its prompt cache (``caches_schema = False``: an
    :class:`~shared.OpenAIJudge` on a local server); the rounded bound for any other judge."""
    return CLAIMS_STEP if getattr(base_judge(judge), "caches_schema", True) else 1


def _exact(judge: object) -> bool:
    """The sentence checks' list is exact (positional, step 1) for this judge."""
    return not getattr(base_judge(judge), "caches_schema", True)


def signature(
    judge: object,
    options: ScoreOptions,
    *,
    long: bool = False,
    language: str | None = None,
    source_language: str | None = None,
) -> str:
    """``judge:<model>|n:<n>|beta:<b>|combine:<c>|prompts:<hash>|path:<p>|version:<v>`` (after
    sacrebleu).

    ``claims:exact`` follows the path on the two-call path when the claim bound is exact
    (:func:`claims_step`: a judge on a local server), since the bound shapes the reply.

    ``path`` is how the judge was asked (``two-call``, the default, or ``steps``); ``prompts``
    is that path's hash (:func:`shared.prompts.compact_prompts_hash` or
    :func:`shared.prompts.prompts_hash`), so results of the two paths never share a signature.

    With user questions, ``n`` reads ``user<count>:<hash>`` so two question sets never share one;
    with frozen questions (``questions_file`` narrowed to the row's source by
    :func:`~shared.evaluation.options.for_source`) it reads ``frozen<count>:<hash>``
    (:func:`~shared.evaluation.frozen.signature_n`).
    ``long=True`` (a result whose source was chunked) adds ``|long:<hash>|budget:<tokens>`` after
    the prompts hash: the long-source templates and the budget that shaped the parts. Results on
    sources that fit carry neither, since the budget does not change them. ``samples=k > 1``
    adds ``|samples:<k>`` (a mean over k judge samples is another measurement than one sample).
    ``language`` / ``source_language`` (the codes the judge steps were given) add
    ``|lang-prompts:<hash>`` after the prompts hash when the prompts carried a language block
    (:func:`shared.prompts.language_signature_part`); English adds nothing.
    A ``language`` option adds ``|language:<code>``; a detected language is the row's own
    (``|lang:<code>``, added per row by the pipeline for a row not in English).
    """
    model = "none" if judge is None else getattr(judge, "model_id", type(judge).__name__)
    model = signature_field(str(model))
    if options.questions_file is not None:
        n = signature_n(options.questions_file)
    elif options.questions is None:
        n = str(options.n)
    else:
        digest = hashlib.sha256(
            "\n".join(f"{q.importance}:{q.question}" for q in options.questions).encode()
        ).hexdigest()[:6]
        n = f"user{len(options.questions)}:{digest}"
    beta = f"{options.beta:g}"
    prompts = {
        "sentences": p.sentence_prompts_hash,
        "two-call": p.compact_prompts_hash,
    }.get(options.judge_path, p.prompts_hash)()
    return (
        f"judge:{model}|n:{n}|beta:{beta}|combine:{options.combine}"
        f"|prompts:{prompts}|path:{options.judge_path}"
        + ("|claims:exact" if options.judge_path == "two-call" and claims_step(judge) == 1 else "")
        + ("|checks:exact" if options.judge_path == "sentences" and _exact(judge) else "")
        + p.language_signature_part(language, source_language)
        + (f"|long:{p.long_prompts_hash()}|budget:{options.context_budget}" if long else "")
        + f"{options.dimension_settings.signature_part()}"
        + (f"|samples:{options.samples}" if options.samples > 1 else "")
        + (f"|language:{options.language}" if options.language is not None else "")
        + f"|version:{__version__}"
    )


def unscored(error: str, sig: str, **evidence: Any) -> SummaryEvaluation:
    """An unscored result; the dimensions it still carries get their lines under the error."""
    dims = evidence.get("dimension_evidence")
    error = redact(error)  # a judge's error may echo a request's headers
    head = f"Unscored: {error}"
    detail = dimension_lines(dims, limit=None)
    return SummaryEvaluation(
        score=None,
        alignment=None,
        coverage=None,
        error=error,
        reason="\n".join([head, *dimension_lines(dims)]),
        reason_detail="\n".join([head, *(["Dimensions:"] if detail else [])])
        + "".join(f"\n  {line}" for line in detail),
        signature=sig,
        **evidence,
    )


def dimension_fields(evidence: DimensionEvidence) -> dict[str, Any]:
    return {**evidence.scores(), "dimension_evidence": evidence}


def failure_text(exc: BaseException) -> str:
    """A failed call as a row's error: the judge's own (redacted) wording of the failure."""
    if isinstance(exc, JudgeFailed):
        return failure_reason(exc)
    return f"judge call failed: {failure_reason(exc)}"
