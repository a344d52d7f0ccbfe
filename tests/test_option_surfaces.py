"""Every surface exposes every core option with the core's default, and every sub-score.

The options are declared once (:mod:`shared.evaluation.options`) and the sub-scores once
(:mod:`shared.core.subscores`). These tests fail when the Ragas metrics (legacy and collections),
the DeepEval metrics (sub-score metrics included) or the CLI lack an option the core has, default
it differently, or drop it on the way to the core; and when a surface misses a sub-score.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from deepeval.metrics.utils import copy_metrics
from openai import AsyncOpenAI
from ragas.llms import llm_factory
from typer.testing import CliRunner

import shared.cli.app as cli_app
from deepeval_ext import SUB_SCORE_METRICS, SummaryQualityMetric
from deepeval_ext._metrics import OPTION_PARAMETERS, _SummaryMetricBase
from deepeval_ext.testing import FakeDeepEvalModel
from ragas_ext import SUB_SCORES as RAGAS_SUB_SCORES
from ragas_ext import SummaryQuality, SummarySubScore
from ragas_ext.collections import SummaryQuality as CollectionsSummaryQuality
from shared import (
    DIMENSION_NAMES,
    OPTION_NAMES,
    SUB_SCORE_NAMES,
    ScoreOptions,
    ScoreOptionsKwargs,
    SummaryEvaluation,
)
from shared.adapter_kit import DEFAULTS
from shared.cli.flags import UNIT_SHARE, JudgeFlags, flag
from shared.cli.table import SHORT_NAMES
from shared.dimensions.evidence import DimensionEvidence
from shared.runs.results import score_keys


class _Embedder:
    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]


EXAMPLES: dict[str, Any] = {
    "n": 3,
    "questions": ["What happened?"],
    "questions_file": str(Path(__file__).parent / "data" / "questions.jsonl"),
    "beta": 2.0,
    "combine": "min",
    "retries": 5,
    "cache": False,
    "concurrency": 3,
    "dimensions": ("density", "coherence"),
    "embedder": _Embedder(),
    "spacy_model": "xx_other_model",
    "density_target": 0.2,
    "density_tolerance": 0.07,
    "coherence_formula": "article",
    "context_budget": 4_000,
    "samples": 3,
    "language": "fr",
    "judge_path": "steps",
}
"""A valid non-default value of every option (add one here when you add an option)."""

CLI_EXEMPT = {
    "questions": "per row, from --questions-column",
    "embedder": "an object; not expressible on a command line",
    "cache": "--cache PATH / --no-cache: the CLI keeps a SQLite cache in the user's cache dir",
}
"""Options the CLI takes another way, with the reason."""


def _same(options: ScoreOptions, expected: ScoreOptions) -> None:
    """Field by field, including the fields left out of equality (cache, embedder)."""
    for name in OPTION_NAMES:
        got, want = getattr(options, name), getattr(expected, name)
        assert got == want or got is want, f"{name}: {got!r} != {want!r}"


def _expected(name: str) -> ScoreOptions:
    return ScoreOptions(**{name: EXAMPLES[name]})


def test_the_declaration_and_its_typed_keywords_agree() -> None:
    fields = [f.name for f in dataclasses.fields(ScoreOptions)]
    assert tuple(fields) == OPTION_NAMES
    assert list(typing.get_type_hints(ScoreOptionsKwargs)) == fields
    assert set(EXAMPLES) == set(OPTION_NAMES), "give every option an example value above"
    for name in EXAMPLES:
        assert getattr(_expected(name), name) != getattr(DEFAULTS, name), name


def test_defaults_are_the_declared_ones() -> None:
    assert ScoreOptions.from_kwargs({}) == DEFAULTS
    assert DEFAULTS.merged(n=4).n == 4 and DEFAULTS.merged(n=4).beta == DEFAULTS.beta
    with pytest.raises(TypeError, match="unknown option"):
        DEFAULTS.merged(m=4)


# -- Ragas -----------------------------------------------------------------------------------


def test_ragas_metric_inherits_every_option_with_the_core_default() -> None:
    for cls in (SummaryQuality, SummarySubScore):
        fields = {f.name: f for f in dataclasses.fields(cls)}
        for name in OPTION_NAMES:
            assert name in fields, f"{cls.__name__} lacks option {name}"
        _same(cls()._settings.options(), DEFAULTS)
    for name in OPTION_NAMES:
        _same(SummaryQuality(**{name: EXAMPLES[name]})._settings.options(), _expected(name))


def test_ragas_collections_metric_takes_every_option() -> None:
    llm = llm_factory("m", client=AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="x"))
    _same(CollectionsSummaryQuality(llm).settings.options(), DEFAULTS)
    for name in OPTION_NAMES:
        metric = CollectionsSummaryQuality(llm, **{name: EXAMPLES[name]})
        _same(metric.settings.options(), _expected(name))
    with pytest.raises(TypeError, match="unknown option"):
        CollectionsSummaryQuality(llm, nn=3)


# -- DeepEval --------------------------------------------------------------------------------


def test_deepeval_constructor_names_every_option_with_the_core_default() -> None:
    """Explicit parameters, since deepeval.evaluate() rebuilds metrics from them."""
    assert set(OPTION_PARAMETERS) == set(OPTION_NAMES)
    params = inspect.signature(_SummaryMetricBase.__init__).parameters
    for name, param in OPTION_PARAMETERS.items():
        assert param in params, f"DeepEval metrics lack option {name} ({param}=)"
        default = params[param].default
        if name in ("dimensions", "questions"):
            assert default is None  # not given: the core's default
        else:
            assert default == getattr(DEFAULTS, name), name


def test_deepeval_metrics_pass_every_option_and_keep_it_when_copied() -> None:
    model = FakeDeepEvalModel()
    _same(ScoreOptions.from_kwargs(SummaryQualityMetric(model=model)._score_options()), DEFAULTS)
    for name, param in OPTION_PARAMETERS.items():
        metric = SummaryQualityMetric(model=model, **{param: EXAMPLES[name]})
        for each in (metric, copy_metrics([metric])[0]):
            _same(ScoreOptions.from_kwargs(each._score_options()), _expected(name))


@pytest.mark.parametrize("sub_score", sorted(SUB_SCORE_METRICS))
def test_deepeval_sub_score_metrics_take_threshold_first_and_every_option(sub_score: str) -> None:
    cls = SUB_SCORE_METRICS[sub_score]
    model = FakeDeepEvalModel()
    metric = cls(0.9, model=model)
    assert metric.threshold == 0.9 and metric.sub_score == sub_score
    own = ScoreOptions.from_kwargs(metric._score_options())
    # a sub-score metric computes only what it reports unless dimensions are given
    assert own.dimensions == (() if sub_score not in DIMENSION_NAMES else (sub_score,))
    _same(own.merged(dimensions=DEFAULTS.dimensions), DEFAULTS)
    for name, param in OPTION_PARAMETERS.items():
        value = EXAMPLES[name]
        if name == "dimensions":
            value = (*value, sub_score) if sub_score in DIMENSION_NAMES else value
        copied = copy_metrics([cls(0.7, model=model, **{param: value})])[0]
        assert copied.threshold == 0.7
        _same(ScoreOptions.from_kwargs(copied._score_options()), own.merged(**{name: value}))


# -- CLI -------------------------------------------------------------------------------------


def _cli_params() -> dict[str, Any]:
    command = typer.main.get_command(cli_app.app).commands["score"]  # type: ignore[attr-defined]
    return {p.name: p for p in command.params}


def test_cli_has_a_flag_for_every_option_with_the_core_default() -> None:
    params = _cli_params()
    for name in OPTION_NAMES:
        if name in CLI_EXEMPT:
            continue
        assert name in params, f"the CLI lacks --{name.replace('_', '-')}"
        default = params[name].default
        if name == "dimensions":
            assert default is None  # not given: the core's default
        else:
            assert default == getattr(DEFAULTS, name), name


def test_cli_flags_reach_the_core(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_judge(**kwargs: Any) -> tuple[object, str]:
        seen["judge"] = kwargs
        return object(), "fake", None  # a judge: --samples k > 1 needs one

    def stop(rows: Any, previous: Any, *, options: ScoreOptions, **kwargs: Any) -> Any:
        seen["options"] = options
        raise typer.Exit(0)

    monkeypatch.setattr(cli_app, "build_judge", fake_judge)
    monkeypatch.setattr(cli_app, "plan_run", stop)
    flags: list[str] = []
    for name in OPTION_NAMES:
        if name in CLI_EXEMPT:
            continue
        value = EXAMPLES[name]
        text = ",".join(value) if isinstance(value, tuple) else str(value)
        flags += [f"--{name.replace('_', '-')}", text]
    source = tmp_path / "in.jsonl"
    source.write_text('{"source": "A cat sat.", "summary": "A cat."}\n')
    result = CliRunner().invoke(
        cli_app.app, ["score", str(source), "-o", str(tmp_path / "out.jsonl"), *flags]
    )
    assert result.exit_code == 0, result.output
    given = {**seen["options"].given_kwargs(), **seen["judge"]}
    for name in OPTION_NAMES:
        if name not in CLI_EXEMPT:
            _same(ScoreOptions(**{name: given[name]}), _expected(name))


# -- Sub-scores ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Group:
    """A flag group as a command declares one: a field is a flag."""

    first: Annotated[int, typer.Option(min=1, help="The first.")] = 3
    second_flag: Annotated[str | None, typer.Option("--second", "-s", help="The second.")] = None


def test_a_flag_group_gives_each_field_a_flag_and_the_command_the_group() -> None:
    from shared.cli.flags import with_flag_groups

    seen: list[tuple[str, _Group]] = []

    @with_flag_groups
    def command(name: Annotated[str, typer.Argument()], group: _Group) -> None:
        seen.append((name, group))

    app = typer.Typer()
    app.command()(command)
    runner = CliRunner()
    assert runner.invoke(app, ["x", "-s", "two", "--first", "5"]).exit_code == 0
    assert runner.invoke(app, ["y"]).exit_code == 0
    assert seen == [("x", _Group(5, "two")), ("y", _Group())]
    # the field's Annotated option, range included, is the flag
    refused = runner.invoke(app, ["z", "--first", "0"])
    assert refused.exit_code == 2 and len(seen) == 2
    params = {p.name: p for p in typer.main.get_command(app).params}
    assert params["first"].default == 3 and params["first"].help == "The first."
    assert params["second_flag"].opts == ["--second", "-s"]


@dataclasses.dataclass(frozen=True)
class _Declared:
    """A flag group whose fields declare their flags with flag(): default, help, the rest."""

    share: float | None = flag(None, "A share.", "--share", "-s", **UNIT_SHARE)
    folder: Path = flag(Path("here"), "A folder.")


def test_a_flag_field_is_its_flag_and_a_command_takes_the_judge_group_beside() -> None:
    from shared.cli.flags import with_flag_groups

    seen: list[tuple[_Declared, JudgeFlags]] = []

    @with_flag_groups
    def command(declared: _Declared, judging: JudgeFlags) -> None:
        seen.append((declared, judging))

    app = typer.Typer()
    app.command()(command)
    runner = CliRunner()
    assert runner.invoke(app, ["-s", "0.5", "--model", "m", "--price-in", "1"]).exit_code == 0
    assert runner.invoke(app, ["--folder", "there"]).exit_code == 0
    assert seen == [
        (_Declared(share=0.5), JudgeFlags(model="m", price_in=1.0)),
        (_Declared(folder=Path("there")), JudgeFlags()),
    ]
    # flag()'s range and callback are the flag's: refused before the command runs
    for value in ("1.5", "nan"):
        assert runner.invoke(app, ["--share", value]).exit_code == 2
    assert len(seen) == 2
    params = {p.name: p for p in typer.main.get_command(app).params}
    assert params["share"].opts == ["--share", "-s"] and params["share"].help == "A share."
    assert params["price_out"].help == "US$ per million completion tokens."
    assert [name for name in params if name.startswith("price")] == [
        "price_in",
        "price_cached",
        "price_out",
    ]


def test_every_surface_reports_every_sub_score() -> None:
    assert tuple(RAGAS_SUB_SCORES) == SUB_SCORE_NAMES
    assert set(SUB_SCORE_METRICS) == set(SUB_SCORE_NAMES) - {"score"}
    assert score_keys() == list(SUB_SCORE_NAMES)
    evaluation = SummaryEvaluation(score=None, alignment=None, coverage=None)
    assert tuple(evaluation.sub_scores()) == SUB_SCORE_NAMES
    assert set(SUB_SCORE_NAMES) <= set(SummaryEvaluation.model_fields)
    assert tuple(DimensionEvidence.model_fields) == DIMENSION_NAMES
    assert set(SHORT_NAMES) | {"score"} == set(SUB_SCORE_NAMES)


@pytest.mark.parametrize("engine", ["local", "ray"])
def test_one_options_object_reaches_either_engine_with_not_given_kept(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flags become one ScoreOptions that reaches the engine; a --context-budget not given
    stays "not given" in it, so the core on either engine fits the budget to the judge server's
    window (tests/test_distributed.py runs that on Ray)."""
    if engine == "ray":
        pytest.importorskip("ray")
        from shared.cli.ray_engine import RayEngine as engine_class
    else:
        from shared.cli.engines import LocalEngine as engine_class
    jobs: list[Any] = []

    def run(self: Any, job: Any) -> Any:
        jobs.append(job)
        raise typer.Exit(0)

    monkeypatch.setattr(engine_class, "run", run)
    source = tmp_path / "in.jsonl"
    source.write_text('{"source": "A cat sat.", "summary": "A cat."}\n')
    base = ["score", str(source), "-o", str(tmp_path / "out.jsonl"), "--no-judge"]
    for extra in ([], ["--context-budget", "3000"]):
        result = CliRunner().invoke(
            cli_app.app, [*base, "--engine", engine, "--n", "3", "--dimensions", "density", *extra]
        )
        assert result.exit_code == 0, result.output
    not_given, given = (job.options for job in jobs)
    assert isinstance(not_given, ScoreOptions) and not_given.n == 3
    assert not_given.dimensions == ("density",)
    assert "context_budget" not in not_given.given
    assert "context_budget" in given.given and given.context_budget == 3000


def test_a_parquet_results_file_is_guarded_like_any_other(tmp_path: Path) -> None:
    """The Ray engine's Parquet results file is one file (written whole at the end): a report
    or cache path equal to it is refused before any work, as for JSONL."""
    pytest.importorskip("ray")
    source = tmp_path / "in.jsonl"
    source.write_text('{"source": "A cat sat.", "summary": "A cat."}\n')
    out = tmp_path / "out.parquet"
    base = ["score", str(source), "-o", str(out), "--engine", "ray", "--no-judge"]
    result = CliRunner().invoke(cli_app.app, [*base, "--report", str(out)])
    assert result.exit_code == 2, result.output
    assert "same file" in " ".join(result.output.split())
    assert not out.exists()
