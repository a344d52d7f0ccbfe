"""summary-eval's framework-free scoring core.

Public face: score one or many summaries (``score_summary``/``ascore_summary`` and the batch
forms), the :class:`Judge` protocol with :class:`OpenAIJudge` and the robust wrappers, and the
result type :class:`SummaryEvaluation`. Test helpers live in :mod:`shared.testing`.
"""

from ._version import __version__
from .dimensions import (
    DIMENSIONS,
    NO_LLM_SUB_SCORES,
    DimensionEvidence,
    Embedder,
    MiniLMEmbedder,
    MissingSpacyModelError,
)
from .judge import (
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
from .openai_judge import OpenAIJudge
from .pipeline import (
    DEFAULT_CONCURRENCY,
    DEFAULT_N,
    ScoreOptions,
    UserQuestion,
    ascore_summaries,
    ascore_summary,
    score_summaries,
    score_summary,
    signature,
)
from .result import ClaimEvidence, QuestionEvidence, SummaryEvaluation
from .scoring import alignment_ratio, combine_scores, f_beta, weighted_coverage

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_N",
    "DIMENSIONS",
    "NO_LLM_SUB_SCORES",
    "CachedJudge",
    "ClaimEvidence",
    "DimensionEvidence",
    "Embedder",
    "Judge",
    "JudgeFailed",
    "JudgeOutputError",
    "LimitedJudge",
    "MemoryStore",
    "MiniLMEmbedder",
    "MissingSpacyModelError",
    "OpenAIJudge",
    "QuestionEvidence",
    "SQLiteStore",
    "ScoreOptions",
    "SummaryEvaluation",
    "UserQuestion",
    "ValidatingJudge",
    "__version__",
    "alignment_ratio",
    "ascore_summaries",
    "ascore_summary",
    "combine_scores",
    "f_beta",
    "robust_judge",
    "score_summaries",
    "score_summary",
    "signature",
    "weighted_coverage",
]
