"""What a user sees of ``summary-eval score`` beyond the numbers (issue 14, "CLI polish" and the
hung judge of item 5): a table that fits 80 columns without cutting a header, ids whole when
there is room, pass/FAIL against ``--threshold`` in the table and the report, one no-judge
banner, a word while the models load and no transformers progress bar, labelled signature rows,
and the judge calls that hang shown on the progress line.

The hung-judge test never waits on a clock: the judge blocks on an event, the test learns that
the calls started from another event, and the display is driven with an injected clock.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from rich.console import Console
from typer.testing import CliRunner

from shared import SUB_SCORE_NAMES
from shared.cli import app as cli_app
from shared.cli import common as cli_common
from shared.cli.judge_wait import InFlightJudge, JudgeWaitColumn, in_flight_of, waiting_text
from shared.cli.models import load_models, models_to_load
from shared.cli.report import ReportInfo, render_report, signature_label
from shared.cli.table import SHORT_NAMES, results_table
from shared.dimensions.compute import DimensionSettings
from shared.dimensions.embedding import MiniLMEmbedder
from shared.judge import robust_judge
from shared.runs.results import read_results, score_keys
from shared.testing import stub_server

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "summaries.jsonl"


def _row(row_id: str, status: str = "ok", value: float | None = 0.5, **extra: Any) -> dict:
    return {
        "id": row_id,
        "status": status,
        **{k: (value if status == "ok" else None) for k in SUB_SCORE_NAMES},
        "signature": "judge:x|n:10|beta:1",
        "reason": "",
        **extra,
    }


def _render(table: Any, width: int) -> list[str]:
    console = Console(width=width, record=True, highlight=False)
    console.print(table)
    return console.export_text().splitlines()


# -- the table ---------------------------------------------------------------------------------


def test_every_header_is_whole_at_80_columns_with_every_column_shown() -> None:
    rows = [
        _row("a-rather-long-summary-identifier-0001", value=0.25),
        _row("another-long-identifier", status="bad_input"),
        _row("short", value=0.75),
    ]
    lines = _render(results_table(rows, score_keys(), width=80, threshold=0.5), 80)
    header = lines[0]
    assert "…" not in header
    expected = ["id", "status", "pass", *(SHORT_NAMES.get(k, k) for k in SUB_SCORE_NAMES)]
    assert header.split() == expected
    assert all(len(line) <= 80 for line in lines)
    body = lines[2:5]
    assert body[0].split()[2] == "FAIL" and body[2].split()[2] == "pass"
    assert body[1].split()[1:3] == ["bad_input", "-"]  # not scored: neither pass nor fail
    assert "pass: score ≥ 0.5" in " ".join(" ".join(lines).split())


def test_ids_are_whole_when_the_terminal_is_wide_enough() -> None:
    long_id = "nordlicht-hallucinated-summary-of-the-annual-report"
    rows = [_row(long_id), _row("b")]
    wide = _render(results_table(rows, score_keys(), width=160), 160)
    assert wide[2].split()[0] == long_id
    narrow = _render(results_table(rows, score_keys(), width=80), 80)
    assert narrow[2].split()[0].endswith("…") and all(len(line) <= 80 for line in narrow)


def test_offline_threshold_is_on_the_quality_dimensions() -> None:
    rows = [_row("a", score=None, alignment=None, coverage=None)]
    rows[0].update(grounding=0.9, coherence=0.9, non_redundancy=0.9, density=0.0)
    lines = _render(results_table(rows, score_keys(), width=120, threshold=0.8), 120)
    assert lines[2].split()[2] == "pass"
    assert "pass: the mean of grounding, coherence and non_redundancy ≥ 0.8" in " ".join(
        " ".join(lines).split()
    )


# -- the report ----------------------------------------------------------------------------------


def test_report_labels_the_second_signature_and_marks_pass_fail() -> None:
    plain = "judge:x|n:10|beta:1|combine:fbeta|prompts:abc|version:1"
    own = "judge:x|n:user3:1a2b3c|beta:1|combine:fbeta|prompts:abc|version:1"
    assert signature_label(plain) == "Signature"
    assert signature_label(own) == "Signature (rows with their own questions)"
    assert "chunked" in signature_label(plain.replace("|version", "|long:ff|budget:9|version"))
    rows = [
        _row("low", value=0.2, signature=plain),
        _row("high", value=0.9, signature=plain),
        _row("mine", value=0.6, signature=own),
    ]
    html = render_report(rows, score_keys(), ReportInfo(threshold=0.5))
    assert "<td>Signature</td>" in html
    assert "<td>Signature (rows with their own questions)</td>" in html
    assert "(2 rows)" in html and "(1 row)" in html
    assert 'id="threshold"' in html and "2 pass, 1 FAIL" in " ".join(html.split())
    assert html.count('class="verdict bad">FAIL<') == 1
    assert 'id="threshold"' not in render_report(rows, score_keys(), ReportInfo())


# -- a run -----------------------------------------------------------------------------------


def test_offline_run_says_how_to_add_a_judge_once_and_marks_the_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the table prints on the console of shared.cli.common
    monkeypatch.setattr(cli_common, "out", Console(width=120, highlight=False))
    out = tmp_path / "res.jsonl"
    result = CliRunner().invoke(
        cli_app.app,
        ["score", str(EXAMPLES), "-o", str(out), "--threshold", "0.6", "--no-cache"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert text.count("OPENAI_API_KEY") == 1  # the hint, once
    assert "Skipped (no judge): score, alignment, coverage, specificity." in text
    rows = read_results(out)
    table_ids = [line.split()[0] for line in result.output.splitlines() if " ok " in line]
    assert table_ids == [r["id"] for r in rows]  # whole ids at 120 columns
    assert {line.split()[2] for line in result.output.splitlines() if " ok " in line} <= {
        "pass",
        "FAIL",
    }
    html = (tmp_path / "res.report.html").read_text()
    assert 'id="threshold"' in html


def test_models_are_announced_and_loaded_before_the_bar(capfd: pytest.CaptureFixture) -> None:
    fresh = MiniLMEmbedder()
    settings = DimensionSettings(dimensions=("coherence",), embedder=fresh)
    assert models_to_load(settings)[-1] == "all-MiniLM-L6-v2"
    said: list[str] = []
    assert load_models(settings, said.append)
    assert (
        len(said) == 1
        and said[0].startswith("Loading the text models (")
        and "all-MiniLM-L6-v2" in said[0]
    )
    assert fresh.loaded and models_to_load(settings) == []
    assert load_models(settings, said.append) == [] and len(said) == 1  # nothing twice
    # transformers' "Loading weights" bar would break into the progress display
    assert "Loading weights" not in capfd.readouterr().err
    from transformers.utils import logging as hf_logging

    assert hf_logging.is_progress_bar_enabled()  # the user's setting is restored


def test_the_cli_announces_the_model_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from shared.dimensions import embedding

    monkeypatch.setattr(embedding, "_default", None)  # as in a fresh process
    source = tmp_path / "in.jsonl"
    source.write_text(
        json.dumps({"source": "Ann met Bob in Oslo. They talked.", "summary": "Ann met Bob."})
        + "\n"
    )
    result = CliRunner().invoke(
        cli_app.app,
        ["score", str(source), "-o", str(tmp_path / "o.jsonl"), "--no-report", "--no-cache"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert "Loading the text models (all-MiniLM-L6-v2)…" in result.output
    assert result.output.index("Loading the text models") < result.output.index("Results:")


# -- a hung judge ---------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Answer(BaseModel):
    text: str


class BlockingJudge:
    """Answers only once ``release`` is set; :meth:`reached` returns once ``n`` calls wait."""

    model_id = "blocking"

    def __init__(self) -> None:
        self.waiting = 0
        self.changed = asyncio.Event()
        self.release = asyncio.Event()

    async def generate(self, prompt: str, schema: type[Answer]) -> Answer:
        self.waiting += 1
        self.changed.set()
        await self.release.wait()
        return schema(text=prompt)

    async def reached(self, n: int) -> None:
        while self.waiting < n:
            self.changed.clear()
            await self.changed.wait()


def test_a_hung_judge_shows_on_the_progress_line() -> None:
    clock = FakeClock()

    async def scenario() -> list[str]:
        inner = BlockingJudge()
        tracked = InFlightJudge(inner, clock=clock)
        judge = robust_judge(tracked, retries=0, cache=False, concurrency=8)
        assert in_flight_of(judge) is tracked
        column = JudgeWaitColumn(tracked)
        seen = [column.render(None).plain]  # nothing in flight
        first = asyncio.ensure_future(judge.generate("one", Answer))
        await inner.reached(1)  # the first call started at t=1000
        clock.now = 1010.0
        rest = [asyncio.ensure_future(judge.generate(p, Answer)) for p in ("two", "three")]
        await inner.reached(3)  # all three calls are with the judge
        clock.now = 1014.0
        seen.append(column.render(None).plain)  # pending 14 s: not yet worth a word
        clock.now = 1045.0
        seen.append(column.render(None).plain)
        inner.release.set()
        answers = await asyncio.gather(first, *rest)
        assert [a.text for a in answers] == ["one", "two", "three"]
        seen.append(column.render(None).plain)  # answered: the notice goes away
        return seen

    seen = asyncio.run(scenario())
    assert seen == ["", "", "waiting on the judge: 3 calls in flight, oldest 45 s", ""]


def test_one_call_reads_in_the_singular_and_the_cli_judge_is_tracked() -> None:
    clock = FakeClock()

    async def one_pending() -> str:
        inner = BlockingJudge()
        tracked = InFlightJudge(inner, clock=clock)
        call = asyncio.ensure_future(tracked.generate("x", Answer))
        await inner.reached(1)
        clock.now += 100
        text = waiting_text(tracked, clock())
        inner.release.set()
        await call
        return text

    assert asyncio.run(one_pending()) == "waiting on the judge: 1 call in flight, oldest 100 s"
    assert JudgeWaitColumn(None).render(None).plain == ""
    with stub_server() as url:
        judge, _, _ = cli_app.build_judge(
            model="stub", base_url=url, no_judge=False, retries=0, concurrency=1, cache=None
        )
    assert isinstance(in_flight_of(judge), InFlightJudge)
