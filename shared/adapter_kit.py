"""What a framework adapter needs from the core beyond the public face (public, for adapters).

- :func:`attached`: one adapter per user object (an LLM, a model, a judge), kept on that object
  so it is freed with it, with a guard for objects that refuse attributes.
- :func:`run_sync`: run a coroutine from sync code, inside a running event loop too.
- :func:`parse_json_reply`, :func:`strip_code_fence`, :func:`validation_summary`: the one way a
  text reply becomes a validated schema instance, and the one wording of what was wrong.
- :data:`NO_JUDGE`: the ``error`` of an evaluation made without a judge.
- :func:`row_verdict`, :class:`Verdict`, :func:`check_inconclusive`: a result's verdict over its
  judge samples (pass, fail or inconclusive) and what an inconclusive one may count as.
- The option declaration (:class:`OptionFields`, :data:`DEFAULTS`, :data:`OPTION_NAMES`) and
  the sub-score list (:data:`SUB_SCORES`), re-exported so an adapter imports only this module
  and ``shared``.

``ragas_ext`` and ``deepeval_ext`` import only ``shared`` and this module.
"""

from __future__ import annotations

from .analysis.stability import row_verdict
from .core.bridge import attached, run_sync
from .core.subscores import (
    DIMENSION_NAMES,
    HEADLINE,
    JUDGE_ONLY,
    SUB_SCORE_NAMES,
    SUB_SCORES,
    SubScore,
    on_change,
    sub_score,
)
from .evaluation.options import (
    DEFAULTS,
    OPTION_NAMES,
    OptionFields,
    ScoreOptions,
    ScoreOptionsKwargs,
    check_names,
    option_fields,
    option_help,
)
from .evaluation.result import NO_JUDGE
from .evaluation.verdict import INCONCLUSIVE_AS, InconclusiveAs, Verdict, check_inconclusive
from .judge.replies import parse_json_reply, strip_code_fence
from .judge.wrappers import validation_summary

__all__ = [
    "DEFAULTS",
    "DIMENSION_NAMES",
    "HEADLINE",
    "INCONCLUSIVE_AS",
    "JUDGE_ONLY",
    "NO_JUDGE",
    "OPTION_NAMES",
    "SUB_SCORES",
    "SUB_SCORE_NAMES",
    "InconclusiveAs",
    "OptionFields",
    "ScoreOptions",
    "ScoreOptionsKwargs",
    "SubScore",
    "Verdict",
    "attached",
    "check_inconclusive",
    "check_names",
    "on_change",
    "option_fields",
    "option_help",
    "parse_json_reply",
    "row_verdict",
    "run_sync",
    "strip_code_fence",
    "sub_score",
    "validation_summary",
]
