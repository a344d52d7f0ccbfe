"""A dimension is described once: a dimension declared here, in the test, reaches every surface.

The toy dimension ``calm`` (fewer exclamation marks score higher, with one option) is registered
by a fixture and taken off again after each test. Nothing else is written for it: the sub-score
list, the result, the signature, the CLI's flag and results file, the Ragas metrics and the
DeepEval metric all come from its spec.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from deepeval.test_case import LLMTestCase
from ragas.dataset_schema import SingleTurnSample
from typer.testing import CliRunner

import deepeval_ext
import ragas_ext
import shared
from shared import SummaryEvaluation, score_summary
from shared.cli.app import app
from shared.cli.flags import option_flag_names
from shared.core.checks import positive_number
from shared.core.subscores import DIMENSION_NAMES, NO_LLM_SUB_SCORES, SUB_SCORE_NAMES
from shared.dimensions import (
    About,
    DimensionInput,
    DimensionOption,
    DimensionSettings,
    DimensionSpec,
    declare_dimension,
    normalise_dimensions,
    register_dimension,
    unregister_dimension,
)
from shared.dimensions.evidence import DimensionEvidence, DimensionResult
from shared.dimensions.spec import reserve_option_names
from shared.evaluation.options import OPTION_NAMES, ScoreOptions
from shared.runs.results import evaluation_row, score_keys

SOURCE = "The council met on Monday and approved the new budget for the city's parks."
SUMMARY = "Wow! The council approved the parks budget! It met on Monday."


class CalmEvidence(DimensionResult):
    exclamations: int = 0


def _calm(inp: DimensionInput) -> CalmEvidence:
    count = inp.summary.count("!")
    return CalmEvidence(
        score=1 / (1 + inp.settings.calm_weight * count),
        reason=f"{count} exclamation mark(s)",
        exclamations=count,
    )


def _calm_signature(settings: DimensionSettings) -> str:
    return f"calm:{settings.calm_weight:g}"


CALM = declare_dimension(
    About("calm", "nothing", "calm", "few exclamation marks"),
    _calm,
    options=(
        DimensionOption(
            "calm_weight", 1.0, positive_number, "Weight of one exclamation mark.", "float"
        ),
    ),
    signature=_calm_signature,
)


def test_the_declaration_reads_the_evidence_model_from_the_score_function() -> None:
    assert CALM.evidence is CalmEvidence
    assert (CALM.needs_spacy, CALM.needs_embeddings, CALM.validity_rho) == (False, False, None)
    reading = declare_dimension(About("x", "judge", "x", "x", 0.3), _calm, reads=("spacy",))
    assert (reading.needs_spacy, reading.needs_embeddings, reading.validity_rho) == (
        True,
        False,
        0.3,
    )
    assert reading.needs_judge


def _unannotated(inp):  # type: ignore[no-untyped-def]
    return CalmEvidence()


def _wrong_model(inp: DimensionInput) -> str:
    return ""


@pytest.mark.parametrize("score", [_unannotated, _wrong_model])
def test_a_score_function_must_name_its_evidence_model(score: object) -> None:
    with pytest.raises(TypeError, match="annotated to return its evidence model"):
        declare_dimension(About("x", "nothing", "x", "x"), score)  # type: ignore[arg-type]


def test_it_reads_only_what_can_be_computed() -> None:
    with pytest.raises(ValueError, match="'x' reads parse; expected spacy, embeddings"):
        declare_dimension(About("x", "nothing", "x", "x"), _calm, reads=("parse",))  # type: ignore[arg-type]


@pytest.fixture
def calm() -> Iterator[DimensionSpec]:
    register_dimension(CALM)
    try:
        yield CALM
    finally:
        unregister_dimension("calm")


def test_the_sub_score_list_has_it(calm: DimensionSpec) -> None:
    for names in (SUB_SCORE_NAMES, DIMENSION_NAMES, NO_LLM_SUB_SCORES, shared.SUB_SCORE_NAMES):
        assert names[-1] == "calm"
    assert tuple(DimensionEvidence.model_fields)[-1] == "calm"
    assert "calm_weight" in OPTION_NAMES
    assert ScoreOptions().calm_weight == 1.0
    with pytest.raises(ValueError, match="calm_weight"):
        ScoreOptions(calm_weight=-1)


def test_it_is_gone_once_unregistered() -> None:
    register_dimension(CALM)
    unregister_dimension("calm")
    assert "calm" not in SUB_SCORE_NAMES
    assert "calm" not in SummaryEvaluation.model_fields
    assert "calm" not in DimensionEvidence.model_fields
    assert "calm_weight" not in OPTION_NAMES
    assert "calm" not in deepeval_ext.SUB_SCORE_METRICS


def test_the_result_and_its_row_carry_it(calm: DimensionSpec) -> None:
    ev = score_summary(
        SOURCE, SUMMARY, judge=None, dimensions=["calm", "conciseness"], calm_weight=0.5
    )
    assert ev.calm == 0.5  # 1 / (1 + 0.5 * 2)
    assert ev.sub_scores()["calm"] == 0.5
    assert ev.dimension_evidence.calm.exclamations == 2
    assert ev.reason_for("calm") == "calm 0.50: 2 exclamation mark(s)"
    assert "calm 0.50: 2 exclamation mark(s)" in ev.reason
    assert "|path:sentences|calm:0.5|version:" in ev.signature  # its part, from its spec
    assert "calm" in score_keys()
    row = evaluation_row(row_id="r", position=1, input_hash="h", summary=SUMMARY, ev=ev)
    assert row["calm"] == 0.5
    assert row["evidence"]["dimension_evidence"]["calm"]["exclamations"] == 2
    again = SummaryEvaluation.model_validate_json(ev.model_dump_json())
    assert again.calm == 0.5 and again.dimension_evidence.calm.exclamations == 2
    off = score_summary(SOURCE, SUMMARY, judge=None, dimensions=["conciseness"])
    assert off.calm is None and "|calm:" not in off.signature


def test_the_cli_has_its_flag_and_writes_its_column(calm: DimensionSpec, tmp_path: Path) -> None:
    assert "calm_weight" in option_flag_names()
    runner = CliRunner()
    help_text = runner.invoke(app, ["score", "--help"], env={"COLUMNS": "160"}).output
    assert "--calm-weight" in help_text and "Weight of one exclamation mark." in help_text
    rows = tmp_path / "in.jsonl"
    rows.write_text(json.dumps({"id": "a", "source": SOURCE, "summary": SUMMARY}) + "\n")
    out = tmp_path / "out.jsonl"
    args = ["score", str(rows), "--no-judge", "--no-report", "-o", str(out)]
    args += ["--dimensions", "calm,conciseness", "--calm-weight", "0.5"]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (written,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert list(written).index("calm") == list(written).index("grounding") + 1
    assert written["calm"] == 0.5
    assert "|calm:0.5|" in written["signature"]
    assert written["evidence"]["dimension_evidence"]["calm"]["exclamations"] == 2


def test_ragas_reports_it(calm: DimensionSpec) -> None:
    assert "calm" in ragas_ext.SUB_SCORES
    names = [m.name for m in ragas_ext.summary_metrics(dimensions=["calm"])]
    assert names == ["summary_quality", "summary_alignment", "summary_coverage", "summary_calm"]
    metric = ragas_ext.SummarySubScore(sub_score="calm", dimensions=["calm"])
    sample = SingleTurnSample(reference_contexts=[SOURCE], response=SUMMARY)
    # needs no judge: no LLM is asked for
    assert asyncio.run(metric._single_turn_ascore(sample, None)) == pytest.approx(1 / 3)


def test_deepeval_has_its_metric(calm: DimensionSpec) -> None:
    cls = deepeval_ext.SUB_SCORE_METRICS["calm"]
    assert cls.__name__ == "SummaryCalmMetric" and deepeval_ext.SummaryCalmMetric is cls
    assert cls.__doc__ == "few exclamation marks"
    assert "calm_weight" in inspect.signature(deepeval_ext.SummaryQualityMetric).parameters
    metric = cls(0.4, calm_weight=0.5)  # no model: it needs none
    assert metric.measure(LLMTestCase(input=SOURCE, actual_output=SUMMARY)) == 0.5
    assert metric.success and metric.score_breakdown["calm"] == 0.5
    assert metric.reason == "calm 0.50: 2 exclamation mark(s)"


def test_all_dimensions_is_a_snapshot_of_the_registry() -> None:
    """``dimensions=None`` is the registered names as a tuple, not the registry's live view: an
    options object does not change when a dimension registers later, and it serialises."""
    everything = normalise_dimensions(None)
    assert type(everything) is tuple and json.loads(json.dumps(everything)) == list(everything)
    register_dimension(CALM)
    try:
        assert "calm" not in everything and normalise_dimensions(None)[-1] == "calm"
    finally:
        unregister_dimension("calm")


@pytest.mark.parametrize("name", ["beta", "language", "merged", "available", "calm_weight"])
def test_an_option_may_not_take_a_name_the_options_or_settings_use(
    calm: DimensionSpec, name: str
) -> None:
    """``beta`` (a run option), ``language`` (both), ``merged`` (a method of the options),
    ``available`` (a property of the settings), ``calm_weight`` (another dimension's)."""
    loud = declare_dimension(
        About("loud", "nothing", "loud", "many exclamation marks"),
        _calm,
        options=(DimensionOption(name, 2.0, positive_number, "A weight.", "float"),),
    )
    with pytest.raises(ValueError, match=f"'loud': option\\(s\\) {name} already declared"):
        register_dimension(loud)
    assert "loud" not in SUB_SCORE_NAMES
    assert ScoreOptions(beta=3.0).beta == 3.0 and ScoreOptions().calm_weight == 1.0


def test_a_name_reserved_after_a_dimension_took_it_is_refused(calm: DimensionSpec) -> None:
    with pytest.raises(ValueError, match="'calm': option\\(s\\) calm_weight already declared"):
        reserve_option_names({"calm_weight"})
