"""summary-eval's framework-free scoring core.

Public face: score one or many summaries (``score_summary``/``ascore_summary`` and the batch
forms), the :class:`Judge` protocol with :class:`OpenAIJudge` and the robust wrappers, and the
result type :class:`SummaryEvaluation`, judge stability over samples (:mod:`shared.stability`),
the options (:mod:`shared.options`) and the list of sub-scores (:mod:`shared.subscores`). Test
helpers live in :mod:`shared.testing`; what framework adapters need beyond this lives in
:mod:`shared.adapter_kit`. Modules with a leading underscore (and :mod:`shared.pipeline`'s
helpers) are internal.
"""

from ._version import __version__
from .analysis.agreement import Agreement, agreement
from .analysis.bench import BenchResult, bench
from .analysis.comparison import Comparison, SubScoreComparison, UnpairedError, compare
from .analysis.stability import FlipRate, SubScoreStability, flip_rate, stability
from .dimensions import (
    DIMENSIONS,
    DimensionEvidence,
    Embedder,
    MiniLMEmbedder,
    MissingSpacyModelError,
)
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
from .language import SPACY_MODELS, LanguageEvidence, detect_language, language_name
from .options import (
    DEFAULT_CONCURRENCY,
    DEFAULT_CONTEXT_BUDGET,
    DEFAULT_N,
    OPTION_NAMES,
    ScoreOptions,
    ScoreOptionsKwargs,
    UserQuestion,
)
from .pipeline import (
    ascore_summaries,
    ascore_summary,
    score_summaries,
    score_summary,
    signature,
)
from .result import ClaimEvidence, QuestionEvidence, SummaryEvaluation
from .scoring import alignment_ratio, combine_scores, f_beta, weighted_coverage
from .subscores import DIMENSION_NAMES, NO_LLM_SUB_SCORES, SUB_SCORE_NAMES, SUB_SCORES, SubScore

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
    "FlipRate",
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
    "language_name",
    "robust_judge",
    "score_summaries",
    "score_summary",
    "signature",
    "stability",
    "weighted_coverage",
]
