"""Judgement, not plumbing: the reference local judge (Qwen2.5-Coder-1.5B-Instruct on llama.cpp,
temperature 0) on the judgement set (tests/judgement_set.py): twins that change one fact score
lower alignment than their faithful summaries, the changed sentence is flagged with an error
type, and a summary that omits the main fact covers less. The thresholds were measured with this
judge (docs/JUDGES.md); tests/test_judgement_set.py shows the same checks fail for a judge that
calls everything "supported".

Run with ``pytest -m real_model`` after ``eval "$(scripts/real_model_setup.sh --qwen)"``, which
prints SUMMARY_EVAL_QWEN_GGUF (checked by sha256) beside the server; skipped without it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from judgement_set import judgement_failures, score_set, table
from llama_server import llama_server

from shared import OpenAIJudge

pytestmark = pytest.mark.real_model

SERVER_ENV, QWEN_ENV = "SUMMARY_EVAL_LLAMA_SERVER", "SUMMARY_EVAL_QWEN_GGUF"
MODEL = "qwen2.5-coder-1.5b-instruct"
SERVER_ARGS = ["-c", "8192", "-np", "2"]
"""Two slots of 4,096 tokens: the set's longest prompt is about 1,000 tokens."""


@pytest.fixture(scope="module")
def qwen_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary, gguf = os.environ.get(SERVER_ENV), os.environ.get(QWEN_ENV)
    if not (binary and gguf and Path(binary).exists() and Path(gguf).exists()):
        pytest.skip(f"set {SERVER_ENV} and {QWEN_ENV} (scripts/real_model_setup.sh --qwen)")
    with llama_server(binary, gguf, MODEL, SERVER_ARGS, tmp_path_factory.mktemp("qwen")) as url:
        yield url


@pytest.fixture(scope="module")
def judged(qwen_server: str) -> list[Any]:
    judge = OpenAIJudge(MODEL, base_url=qwen_server, timeout=1800, max_retries=2)
    started = time.monotonic()
    scored = score_set(judge)
    print(
        f"\njudgement set on {MODEL}: {time.monotonic() - started:.0f} s, usage {judge.usage}\n"
        f"{table(scored)}"
    )
    return scored


def test_the_reference_judge_passes_the_judgement_checks(judged: list[Any]) -> None:
    assert judgement_failures(judged) == [], table(judged)
