"""Every option is validated at the call, with an error naming it; no NaN leaves the core.

Before the options were declared with their checks, ``retries=1.5`` or ``cache=123`` left every
row unscored with a TypeError/AttributeError reason, ``retries=None`` raised an error that did
not name the option, and ``beta=1e300`` gave ``score=nan`` (the CLI wrote "ok" with an empty
score).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from deepeval_ext import SummaryQualityMetric
from deepeval_ext.testing import FakeDeepEvalModel
from ragas_ext import SummaryQuality
from shared import SummaryEvaluation, ascore_summaries, score_summaries, score_summary
from shared.cli.app import app
from shared.testing import FakeJudge

SOURCE = "The council approved a new budget on Monday. It raises school funding by ten percent."
SUMMARY = "The council approved a budget that raises school funding."

BAD = [
    ("retries", 1.5),
    ("retries", None),
    ("retries", -1),
    ("retries", True),
    ("cache", 123),
    ("cache", None),
    ("concurrency", None),
    ("concurrency", 0),
    ("concurrency", 2.0),
    ("n", None),
    ("beta", 1e300),
    ("beta", None),
    ("combine", None),
    ("context_budget", None),
    ("spacy_model", None),
    ("density_target", math.nan),
    ("density_tolerance", None),
    ("coherence_formula", None),
    ("embedder", 123),
]


@pytest.mark.parametrize(("name", "value"), BAD)
def test_a_bad_option_raises_an_error_naming_it_before_any_judge_call(
    name: str, value: Any
) -> None:
    judge = FakeJudge()
    with pytest.raises((TypeError, ValueError), match=name):
        score_summary(SOURCE, SUMMARY, judge=judge, dimensions=[], **{name: value})
    with pytest.raises((TypeError, ValueError), match=name):
        score_summaries([(SOURCE, SUMMARY)], judge=judge, dimensions=[], **{name: value})
    assert judge.total_calls == 0


def test_batch_entry_point_rejects_bad_options_alike() -> None:
    import asyncio

    with pytest.raises(TypeError, match="retries"):
        asyncio.run(ascore_summaries([(SOURCE, SUMMARY)], judge=FakeJudge(), retries=1.5))


def test_a_huge_beta_never_gives_nan() -> None:
    judge = FakeJudge()
    result = score_summary(SOURCE, SUMMARY, judge=judge, dimensions=[], beta=1e100)
    assert result.scored and result.score is not None and math.isfinite(result.score)
    assert result.score == pytest.approx(result.coverage)


@pytest.mark.parametrize("field", ["score", "alignment", "coverage"])
def test_a_nan_score_cannot_be_built(field: str) -> None:
    values: dict[str, Any] = {"score": 0.5, "alignment": 0.5, "coverage": 0.5}
    with pytest.raises(ValidationError):
        SummaryEvaluation(**{**values, field: math.nan})


def test_adapters_reject_bad_options_at_construction_naming_them() -> None:
    with pytest.raises(TypeError, match="retries"):
        SummaryQuality(retries=1.5)
    with pytest.raises(TypeError, match="cache"):
        SummaryQuality(cache=123)
    with pytest.raises(TypeError, match="concurrency"):
        SummaryQualityMetric(model=FakeDeepEvalModel(), concurrency=None)
    with pytest.raises(ValueError, match="beta"):
        SummaryQualityMetric(model=FakeDeepEvalModel(), beta=1e300)


def test_cli_rejects_a_beta_that_would_give_nan(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"source": SOURCE, "summary": SUMMARY}) + "\n")
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        app, ["score", str(source), "-o", str(out), "--no-judge", "--beta", "1e300"]
    )
    assert result.exit_code == 2, result.output
    assert "beta" in result.output and not out.exists()
