"""Bad inputs and faults that used to crash a run or lose data (issue 14): each test names the
failure it guards against. CLI runs go through typer's CliRunner against the stub server."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shared import score_summaries, score_summary
from shared.cli.app import app
from shared.runs.inputs import Columns, read_rows
from shared.runs.results import read_results
from shared.testing import FakeJudge, stub_server
from tests.conftest import sigint_default


def run_cli(*args: Any) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, " ".join(result.output.split())


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n",
        encoding="utf-8",
    )
    return path


def nojudge(*extra: Any) -> list[Any]:
    return ["--no-judge", "--no-cache", "--dimensions", "density", *extra]


ROW = {"source": "The cat sat on the mat. It was warm.", "summary": "A cat sat on a mat."}


# --- core: judges that misbehave ---------------------------------------------------------------


class CancellingJudge(FakeJudge):
    """Raises CancelledError for one summary's claim call (a client bug, not a cancel)."""

    async def generate(self, prompt: str, schema: type) -> Any:
        if schema.__name__ in ("ExtractedClaims", "SentenceChecks") and "CANCELME" in prompt:
            raise asyncio.CancelledError()
        return await super().generate(prompt, schema)


def test_judge_raising_cancelled_error_unscores_only_that_pair(seed: tuple[str, str]) -> None:
    source, summary = seed
    results = score_summaries(
        [(source, summary), (source, "CANCELME. " + summary)],
        judge=CancellingJudge(),
        cache=False,
        dimensions=[],
    )
    assert results[0].score is not None
    assert results[1].score is None and "CancelledError" in (results[1].error or "")


def test_a_real_cancellation_of_the_caller_still_cancels(seed: tuple[str, str]) -> None:
    source, summary = seed
    from shared import ascore_summary

    async def main() -> None:
        task = asyncio.create_task(
            ascore_summary(source, summary, judge=FakeJudge(latency=30), cache=False, dimensions=[])
        )
        await asyncio.sleep(0)  # let it reach the judge
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


class SyncJudge:
    model_id = "sync"

    def generate(self, prompt: str, schema: type) -> Any:
        return FakeJudge()._answer(prompt, schema)


def test_a_judge_with_a_synchronous_generate_is_rejected_up_front(seed: tuple[str, str]) -> None:
    with pytest.raises(TypeError, match="async"):
        score_summary(*seed, judge=SyncJudge(), cache=False, dimensions=[])


@pytest.mark.parametrize("importance", [float("inf"), 1e400, float("nan"), 2.5, "high", None])
def test_unusable_importance_is_a_value_error(seed: tuple[str, str], importance: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="importance"):
        score_summary(
            *seed,
            judge=FakeJudge(),
            cache=False,
            questions=[{"question": "Who?", "importance": importance}],
        )


# --- CLI: never lose the user's data, never crash on one row -----------------------------------


@pytest.mark.parametrize("flag", ["-o", "--report", "--cache"])
def test_output_report_or_cache_equal_to_the_input_is_refused(tmp_path: Path, flag: str) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    before = source.read_bytes()
    args = ["score", source, *nojudge()]
    if flag == "--cache":
        args = ["score", source, "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    code, text = run_cli(*args, flag, tmp_path / "." / "in.jsonl")
    assert code == 2 and "input" in text
    assert source.read_bytes() == before


def test_output_hard_linked_to_the_input_is_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    link = tmp_path / "link.jsonl"
    link.hardlink_to(source)
    before = source.read_bytes()
    code, text = run_cli("score", source, *nojudge(), "-o", link)
    assert code == 2 and "input" in text
    assert source.read_bytes() == before


@pytest.mark.parametrize("flag", ["-o", "--report", "--cache"])
def test_unwritable_paths_exit_2_before_any_judge_call(tmp_path: Path, flag: str) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    bad = blocker / ("x.jsonl" if flag == "-o" else "x.html" if flag == "--report" else "c.db")
    judge = FakeJudge()
    with stub_server(judge) as url:
        args = ["--base-url", url, "--model", "fake-judge"]
        if flag != "--cache":
            args.append("--no-cache")
        code, text = run_cli("score", source, *args, "-o", tmp_path / "out.jsonl", flag, bad)
    assert code == 2 and "a-file" in text
    assert judge.total_calls == 0


def test_output_naming_a_directory_exits_2(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    folder = tmp_path / "out.jsonl"
    folder.mkdir()
    code, text = run_cli("score", source, *nojudge(), "-o", folder)
    assert code == 2 and "folder" in text


def test_lone_surrogate_is_one_bad_row_and_the_run_goes_on(tmp_path: Path) -> None:
    lines = [json.dumps({**ROW, "id": f"r{i}"}) for i in range(4)]
    lines.insert(2, '{"id": "bad", "source": "S.", "summary": "a \\ud800 b"}')
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.jsonl"
    code, _ = run_cli("score", source, *nojudge(), "-o", out, "--no-report")
    assert code == 1
    rows = {r["id"]: r for r in read_results(out)}
    assert len(rows) == 5
    assert rows["bad"]["status"] == "bad_input" and "surrogate" in rows["bad"]["error"]
    assert all(rows[f"r{i}"]["status"] == "ok" for i in range(4))


def test_infinite_importance_is_one_bad_row(tmp_path: Path) -> None:
    questions = [{"question": "Who sat?", "importance": 1e400}]
    source = tmp_path / "in.jsonl"
    source.write_text(
        json.dumps({**ROW, "id": "ok"})
        + "\n"
        + json.dumps({**ROW, "id": "inf", "questions": "Q"})[:-1].replace('"Q"', "")
        + json.dumps(questions).replace("Infinity", "1e400")
        + "}\n"
    )
    out = tmp_path / "out.jsonl"
    code, _ = run_cli("score", source, *nojudge(), "-o", out, "--no-report")
    rows = {r["id"]: r for r in read_results(out)}
    assert code == 1 and rows["ok"]["status"] == "ok"
    assert rows["inf"]["status"] == "bad_input" and "importance" in rows["inf"]["error"]


def test_only_true_repeats_are_duplicates(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [{**ROW, "id": "a"}, {**ROW, "id": "a"}, {**ROW, "id": "a#row2"}],
    )
    rows = read_rows(path, Columns(), "jsonl")
    assert rows[0].id == "a" and rows[0].error is None
    assert rows[2].id == "a#row2" and rows[2].error is None
    assert rows[1].error and "duplicate id 'a'" in rows[1].error
    assert len({row.id for row in rows}) == 3


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(tmp_path: Path) -> None:
    risky = ['=HYPERLINK("http://x","y")', "+1+2", "-2+3", "@SUM(A1)", "'quoted"]
    source = write_jsonl(
        tmp_path / "in.jsonl",
        [{"id": f"=id{i}", "source": ROW["source"], "summary": s} for i, s in enumerate(risky)],
    )
    out = tmp_path / "out.csv"
    run_cli("score", source, *nojudge(), "-o", out, "--no-report")
    with out.open(newline="", encoding="utf-8") as handle:
        cells = [cell for record in csv.reader(handle) for cell in record]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@")]
    # read back (resume) exactly as written: no row is redone
    back = {r["id"]: r["summary"] for r in read_results(out)}
    assert back == {f"=id{i}": s for i, s in enumerate(risky)}
    code, text = run_cli("score", source, *nojudge(), "-o", out, "--no-report")
    assert code == 0 and "5 of 5 rows already done" in text


@pytest.mark.parametrize("summary", ["", "   \n"])
def test_empty_summary_follows_one_rule_in_core_and_cli(tmp_path: Path, summary: str) -> None:
    """The rule (README, "Empty summaries"): an empty or whitespace-only summary is a valid,
    useless summary: score 0.0 (it covers nothing and claims nothing), no judge call."""
    judge = FakeJudge()
    ev = score_summary(ROW["source"], summary, judge=judge, cache=False, dimensions=[])
    assert ev.score == 0.0 and judge.total_calls == 0
    source = write_jsonl(tmp_path / "in.jsonl", [{"id": "e", **ROW, "summary": summary}])
    out = tmp_path / "out.jsonl"
    with stub_server(judge) as url:
        code, _ = run_cli(
            "score",
            source,
            "--base-url",
            url,
            "--model",
            "fake-judge",
            "--no-cache",
            "-o",
            out,
            "--no-report",
        )
    (row,) = read_results(out)
    assert code == 0 and row["status"] == "ok" and row["score"] == 0.0


@pytest.mark.parametrize("summary", ["", "   \n"])
def test_empty_summary_follows_the_same_rule_in_deepeval_and_ragas(summary: str) -> None:
    from deepeval.test_case import LLMTestCase
    from openai import AsyncOpenAI
    from ragas.dataset_schema import SingleTurnSample
    from ragas.llms import llm_factory

    from deepeval_ext import SummaryQualityMetric
    from deepeval_ext.testing import FakeDeepEvalModel
    from ragas_ext import SummaryQuality

    metric = SummaryQualityMetric(model=FakeDeepEvalModel(), dimensions=[], async_mode=False)
    case = LLMTestCase(input=ROW["source"], actual_output=summary)
    assert metric.measure(case) == 0.0

    judge = FakeJudge()
    with stub_server(judge) as url:
        llm = llm_factory("stub", client=AsyncOpenAI(base_url=url, api_key="x", max_retries=0))
        ragas_metric = SummaryQuality(llm=llm, dimensions=[])
        sample = SingleTurnSample(reference_contexts=[ROW["source"]], response=summary)
        assert asyncio.run(ragas_metric.single_turn_ascore(sample)) == 0.0
    assert judge.total_calls == 0


# --- offline mode says what it did -------------------------------------------------------------


def test_offline_worst_ranking_uses_the_dimensions_that_track_quality() -> None:
    from shared.cli.report import rank_value

    long_bad = {"density": 1.0, "conciseness": 1.0, "coherence": 0.2, "non_redundancy": 0.5}
    short_good = {"density": 0.0, "conciseness": 0.0, "coherence": 0.9, "non_redundancy": 1.0}
    keys = list(long_bad)
    assert rank_value(long_bad, keys) < rank_value(short_good, keys)
    assert rank_value({"score": 0.7, "coherence": 0.1}, keys) == 0.7
    assert rank_value({"density": 0.3}, keys) is None
    # grounding (names and numbers the source lacks) ranks a hallucinated summary lower
    invented = {**short_good, "grounding": 0.2}
    assert rank_value(invented, keys) < rank_value({**short_good, "grounding": 1.0}, keys)


def test_offline_rows_say_what_was_scored_and_what_was_skipped(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW, {**ROW, "summary": "A cat. A mat. Warm."}])
    out, report = tmp_path / "out.jsonl", tmp_path / "r.html"
    code, _ = run_cli("score", source, "--no-judge", "--no-cache", "-o", out, "--report", report)
    assert code == 0
    for row in read_results(out):
        assert row["status"] == "ok" and "Unscored" not in row["reason"]
        assert row["reason"].startswith("Scored without a judge")
        assert "skipped" in row["reason"] and "score, alignment, coverage" in row["reason"]
    html = report.read_text()
    assert "Every row was scored." not in html
    assert "grounding, coherence and non_redundancy" in html


def test_resume_with_other_settings_is_refused_without_force(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    out = tmp_path / "out.jsonl"
    assert run_cli("score", source, *nojudge(), "-o", out, "--no-report")[0] == 0
    before = out.read_bytes()
    code, text = run_cli("score", source, *nojudge(), "--n", "3", "-o", out, "--no-report")
    assert code == 2 and "other settings" in text and "--force" in text
    assert out.read_bytes() == before  # nothing mixed in, nothing replaced
    code, text = run_cli(
        "score", source, *nojudge(), "--n", "3", "-o", out, "--no-report", "--force"
    )
    (row,) = read_results(out)
    assert code == 0 and "|n:3|" in row["signature"]


# --- metrics that need no LLM run without one ---------------------------------------------------

LONG = (
    "The council approved the plan. The plan adds bike lanes. Residents welcomed the lanes. "
    "Work starts in May."
)


def test_deepeval_no_llm_dimension_metric_needs_no_model_or_key(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from deepeval.test_case import LLMTestCase

    from deepeval_ext import SummaryCoherenceMetric, SummaryConcisenessMetric

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    case = LLMTestCase(input=LONG, actual_output="The council approved bike lanes. Work starts.")
    metric = SummaryCoherenceMetric(threshold=0.5)
    assert 0.0 <= metric.measure(case) <= 1.0 and metric.error is None
    assert SummaryConcisenessMetric().measure(case) is not None


def test_ragas_no_llm_dimension_metric_needs_no_llm() -> None:
    from ragas.dataset_schema import SingleTurnSample

    from ragas_ext import SummarySubScore

    metric = SummarySubScore(sub_score="coherence")
    sample = SingleTurnSample(
        reference_contexts=[LONG], response="The council approved bike lanes. Work starts."
    )
    value = asyncio.run(metric.single_turn_ascore(sample))
    assert 0.0 <= value <= 1.0


# --- the stub judge as a command ---------------------------------------------------------------


def test_stub_judge_command_serves_ours_and_the_peers_schemas_until_interrupted(
    tmp_path: Path,
) -> None:
    import os
    import signal
    import subprocess
    import sys
    import urllib.request

    from deepeval.metrics.summarization.schema import Verdicts
    from ragas.metrics._summarization import ExtractedKeyphrases

    from shared.judge.openai import OpenAIJudge
    from shared.prompts import ExtractedClaims, extract_claims_prompt

    proc = subprocess.Popen(
        [sys.executable, "-m", "shared.cli", "stub-judge"],
        cwd=tmp_path,
        # DeepEval's read-only switch (the docs set it) makes DeepEval print a notice on import:
        # it must not come before the URL on stdout
        env={
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": str(Path.cwd()),
            "DEEPEVAL_FILE_SYSTEM": "READ_ONLY",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,  # stopped with Ctrl-C
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()  # blocks until the server is up
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")

        def ask(body: dict) -> str:
            request = urllib.request.Request(
                f"{url}/chat/completions",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=600) as reply:
                return json.load(reply)["choices"][0]["message"]["content"]

        deepeval_style = {
            "model": "m",
            "messages": [{"role": "user", "content": "Give verdicts."}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "Verdicts"}},
        }
        Verdicts.model_validate_json(ask(deepeval_style))
        ragas_style = {
            "model": "m",
            "messages": [{"role": "user", "content": "Reply as ExtractedKeyphrases JSON."}],
        }
        ExtractedKeyphrases.model_validate_json(ask(ragas_style))
        ours = OpenAIJudge("stub", base_url=url, api_key="x")
        claims = asyncio.run(
            ours.generate(
                extract_claims_prompt("A cat sat on the mat."),
                ExtractedClaims,
            )
        )
        assert claims.claims
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=600)  # a safety net: a loaded machine is slow to exit
    assert proc.returncode == 0, stderr
    assert "Stub judge stopped" in stderr


def test_version_flag() -> None:
    from shared import __version__

    code, text = run_cli("--version")
    assert code == 0 and text == f"summary-eval {__version__}"


def test_readme_explains_the_shared_name_clash() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Troubleshooting", 1)[1].split("\n## ", 1)[0]
    assert "shared.__file__" in section and "run from another folder" in section
