"""summary-eval's framework-free scoring core.

Public face: score one or many summaries (``score_summary``/``ascore_summary`` and the batch
forms), the :class:`Judge` protocol with :class:`OpenAIJudge` and the robust wrappers, and the
result type :class:`SummaryEvaluation`, judge stability over samples
(:mod:`shared.analysis.stability`), the options (:mod:`shared.evaluation.options`) and the list
of sub-scores (:mod:`shared.core.subscores`). Test helpers live in :mod:`shared.testing`; what
framework adapters need beyond this lives in :mod:`shared.adapter_kit`.

The face is lazy: a name is imported from its home on first use (:data:`_EXPORTS`), so
``import shared.judge`` loads the judge and what it needs, not spaCy, torch or the analyses.
Where the package lives: docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

_EXPORTS: dict[str, str] = {
    "Agreement": "shared.analysis.agreement",
    "BenchResult": "shared.analysis.bench",
    "CachedJudge": "shared.judge.wrappers",
    "ClaimEvidence": "shared.evaluation.result",
    "Comparison": "shared.analysis.comparison",
    "DEFAULT_CONCURRENCY": "shared.evaluation.options",
    "DEFAULT_CONTEXT_BUDGET": "shared.evaluation.options",
    "DEFAULT_N": "shared.evaluation.options",
    "DIMENSIONS": "shared.dimensions",
    "DIMENSION_NAMES": "shared.dimensions",
    "DimensionEvidence": "shared.dimensions",
    "Embedder": "shared.dimensions",
    "FactDiff": "shared.analysis.factdiff",
    "FlipRate": "shared.analysis.stability",
    "FrozenQuestion": "shared.evaluation.frozen",
    "FrozenQuestions": "shared.evaluation.frozen",
    "Judge": "shared.judge.wrappers",
    "JudgeCheck": "shared.judge.check",
    "JudgeFailed": "shared.judge.wrappers",
    "JudgeOutputError": "shared.judge.wrappers",
    "LanguageEvidence": "shared.core.language",
    "LimitedJudge": "shared.judge.wrappers",
    "MemoryStore": "shared.judge.wrappers",
    "MiniLMEmbedder": "shared.dimensions",
    "MissingSpacyModelError": "shared.dimensions",
    "NO_LLM_SUB_SCORES": "shared.dimensions",
    "OPTION_NAMES": "shared.evaluation.options",
    "OpenAIJudge": "shared.judge.openai",
    "QuestionEvidence": "shared.evaluation.result",
    "SPACY_MODELS": "shared.dimensions.pipelines",
    "SQLiteStore": "shared.judge.wrappers",
    "SUB_SCORES": "shared.dimensions",
    "SUB_SCORE_NAMES": "shared.dimensions",
    "ScoreOptions": "shared.evaluation.options",
    "ScoreOptionsKwargs": "shared.evaluation.options",
    "SubScore": "shared.core.subscores",
    "SubScoreComparison": "shared.analysis.comparison",
    "SubScoreStability": "shared.analysis.stability",
    "SummaryEvaluation": "shared.evaluation.result",
    "UnpairedError": "shared.analysis.comparison",
    "UserQuestion": "shared.evaluation.options",
    "ValidatingJudge": "shared.judge.wrappers",
    "acheck_judge": "shared.judge.check",
    "afreeze_questions": "shared.pipeline.freeze",
    "agreement": "shared.analysis.agreement",
    "alignment_ratio": "shared.core.scoring",
    "ascore_summaries": "shared.pipeline",
    "ascore_summary": "shared.pipeline",
    "bench": "shared.analysis.bench",
    "check_judge": "shared.judge.check",
    "combine_scores": "shared.core.scoring",
    "compare": "shared.analysis.comparison",
    "detect_language": "shared.core.language",
    "f_beta": "shared.core.scoring",
    "flip_rate": "shared.analysis.stability",
    "freeze_questions": "shared.pipeline.freeze",
    "question_drift": "shared.analysis.question_drift",
    "read_questions": "shared.evaluation.frozen",
    "language_name": "shared.core.language",
    "robust_judge": "shared.judge.wrappers",
    "score_summaries": "shared.pipeline",
    "score_summary": "shared.pipeline",
    "signature": "shared.pipeline",
    "stability": "shared.analysis.stability",
    "weighted_coverage": "shared.core.scoring",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its home on first use (PEP 562)."""
    home = _EXPORTS.get(name)
    if home is None:
        raise AttributeError(f"module 'shared' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # the same names, for type checkers and editors
    from .analysis.agreement import Agreement, agreement
    from .analysis.bench import BenchResult, bench
    from .analysis.comparison import Comparison, SubScoreComparison, UnpairedError, compare
    from .analysis.factdiff import FactDiff
    from .analysis.question_drift import question_drift
    from .analysis.stability import FlipRate, SubScoreStability, flip_rate, stability
    from .core.language import LanguageEvidence, detect_language, language_name
    from .core.scoring import alignment_ratio, combine_scores, f_beta, weighted_coverage
    from .core.subscores import (
        DIMENSION_NAMES,
        NO_LLM_SUB_SCORES,
        SUB_SCORE_NAMES,
        SUB_SCORES,
        SubScore,
    )
    from .dimensions import (
        DIMENSIONS,
        DimensionEvidence,
        Embedder,
        MiniLMEmbedder,
        MissingSpacyModelError,
    )
    from .dimensions.pipelines import SPACY_MODELS
    from .evaluation.frozen import FrozenQuestion, FrozenQuestions, read_questions
    from .evaluation.options import (
        DEFAULT_CONCURRENCY,
        DEFAULT_CONTEXT_BUDGET,
        DEFAULT_N,
        OPTION_NAMES,
        ScoreOptions,
        ScoreOptionsKwargs,
        UserQuestion,
    )
    from .evaluation.result import ClaimEvidence, QuestionEvidence, SummaryEvaluation
    from .judge.check import JudgeCheck, acheck_judge, check_judge
    from .judge.openai import OpenAIJudge
    from .judge.wrappers import (
        CachedJudge,
        Judge,
        JudgeFailed,
        JudgeOutputError,
        LimitedJudge,
        MemoryStore,
        SQLiteStore,
        ValidatingJudge,
        robust_judge,
    )
    from .pipeline import (
        ascore_summaries,
        ascore_summary,
        score_summaries,
        score_summary,
        signature,
    )
    from .pipeline.freeze import afreeze_questions, freeze_questions

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_CONTEXT_BUDGET",
    "DEFAULT_N",
    "DIMENSIONS",
    "DIMENSION_NAMES",
    "NO_LLM_SUB_SCORES",
    "OPTION_NAMES",
    "SPACY_MODELS",
    "SUB_SCORES",
    "SUB_SCORE_NAMES",
    "Agreement",
    "BenchResult",
    "CachedJudge",
    "ClaimEvidence",
    "Comparison",
    "DimensionEvidence",
    "Embedder",
    "FactDiff",
    "FlipRate",
    "FrozenQuestion",
    "FrozenQuestions",
    "Judge",
    "JudgeCheck",
    "JudgeFailed",
    "JudgeOutputError",
    "LanguageEvidence",
    "LimitedJudge",
    "MemoryStore",
    "MiniLMEmbedder",
    "MissingSpacyModelError",
    "OpenAIJudge",
    "QuestionEvidence",
    "SQLiteStore",
    "ScoreOptions",
    "ScoreOptionsKwargs",
    "SubScore",
    "SubScoreComparison",
    "SubScoreStability",
    "SummaryEvaluation",
    "UnpairedError",
    "UserQuestion",
    "ValidatingJudge",
    "__version__",
    "acheck_judge",
    "afreeze_questions",
    "agreement",
    "alignment_ratio",
    "ascore_summaries",
    "ascore_summary",
    "bench",
    "check_judge",
    "combine_scores",
    "compare",
    "detect_language",
    "f_beta",
    "flip_rate",
    "freeze_questions",
    "language_name",
    "question_drift",
    "read_questions",
    "robust_judge",
    "score_summaries",
    "score_summary",
    "signature",
    "stability",
    "weighted_coverage",
]
