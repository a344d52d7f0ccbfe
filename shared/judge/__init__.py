"""The judge: wrappers (validation, retries, limits, caching), the OpenAI-compatible client,
the check of a judge, and reply parsing.

``shared.judge`` keeps the names it had as a module (they live in :mod:`shared.judge.wrappers`).
"""

from .wrappers import (
    RETRY_NOTE,
    CachedJudge,
    CacheStore,
    CacheUnusable,
    CacheWarning,
    Check,
    Judge,
    JudgeFailed,
    JudgeOutputError,
    LimitedJudge,
    MemoryStore,
    NullStore,
    SQLiteStore,
    ValidatingJudge,
    base_judge,
    cache_key,
    check_async_judge,
    judge_settings,
    robust_judge,
    schema_fingerprint,
    validation_summary,
)

__all__ = [
    "RETRY_NOTE",
    "CacheStore",
    "CacheUnusable",
    "CacheWarning",
    "CachedJudge",
    "Check",
    "Judge",
    "JudgeFailed",
    "JudgeOutputError",
    "LimitedJudge",
    "MemoryStore",
    "NullStore",
    "SQLiteStore",
    "ValidatingJudge",
    "base_judge",
    "cache_key",
    "check_async_judge",
    "judge_settings",
    "robust_judge",
    "schema_fingerprint",
    "validation_summary",
]
