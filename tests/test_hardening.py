"""Bad inputs and faults that used to crash a run or lose data (issue 14): each test names the
failure it guards against. CLI runs go through typer's CliRunner against the stub server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shared import score_summaries, score_summary
from shared.cli.app import app
from shared.testing import FakeJudge


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
    """Raises CancelledError for one summary's claim extraction (a client bug, not a cancel)."""

    async def generate(self, prompt: str, schema: type) -> Any:
        if schema.__name__ == "ExtractedClaims" and "CANCELME" in prompt:
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
