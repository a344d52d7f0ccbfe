"""``deepeval test run`` and plain ``pytest`` on the shipped example test file, as subprocesses.

They run in a temp directory (DeepEval writes ``./.deepeval/`` there, not in the repository),
without API keys or telemetry, and with pytest-socket's guard passed on the command line: a
pytest started outside the repository does not read its ``addopts``. A guard test inside the run
proves the subprocess cannot reach any host but 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.test_docs_code import installed_version

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "test_deepeval_example.py"
BIN = Path(sys.executable).parent

HALLUCINATING_TEST = """
from deepeval import assert_test
from deepeval.test_case import LLMTestCase

from deepeval_ext import SummaryAlignmentMetric, SummaryQualityMetric
from deepeval_ext.testing import FakeDeepEvalModel
from test_deepeval_example import SOURCE

MODEL = FakeDeepEvalModel()


def test_hallucinating_summary() -> None:
    summary = (
        "A company is launching a fitness app that lets users log their meals. "
        "The app was developed on Mars and costs 999 dollars per month."
    )
    assert_test(
        LLMTestCase(input=SOURCE, actual_output=summary),
        [SummaryQualityMetric(model=MODEL), SummaryAlignmentMetric(model=MODEL, threshold=0.9)],
    )
"""

GUARD_TEST = """
import socket

import pytest
from pytest_socket import SocketConnectBlockedError


def test_network_guard_is_on() -> None:
    with pytest.raises(SocketConnectBlockedError):
        socket.create_connection(("198.51.100.7", 80), timeout=1)
"""

GUARD_ARGS = ["--allow-hosts=127.0.0.1", "-p", "no:cacheprovider"]  # pytest-socket is auto-loaded


def repo_deepeval_files() -> set[str] | None:
    """What ``.deepeval/`` in the repository holds (None: no such folder)."""
    folder = REPO / ".deepeval"
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder.exists() else None


def offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(
        DEEPEVAL_TELEMETRY_OPT_OUT="YES",
        DEEPEVAL_DISABLE_DOTENV="1",
        RAGAS_DO_NOT_TRACK="true",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        NO_COLOR="1",
    )
    env.pop("SUMMARY_EVAL_MODEL", None)
    # an in-process DeepEval run earlier in this session writes DEEPEVAL_FILE_SYSTEM=READ_ONLY
    # into os.environ; a child `deepeval test run` must not inherit it (it then saves no record)
    env.pop("DEEPEVAL_FILE_SYSTEM", None)
    return env


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copy(EXAMPLE, tmp_path / EXAMPLE.name)
    (tmp_path / "test_hallucinating.py").write_text(HALLUCINATING_TEST)
    (tmp_path / "test_guard.py").write_text(GUARD_TEST)
    return tmp_path


def outcomes(report: Path) -> dict[str, str]:
    """test name -> passed/failed/error/skipped, from a JUnit XML report."""
    result = {}
    for testcase in ET.parse(report).getroot().iter("testcase"):
        kinds = [child.tag for child in testcase if child.tag in ("failure", "error", "skipped")]
        result[testcase.get("name", "")] = {"failure": "failed"}.get(
            kinds[0] if kinds else "", kinds[0] if kinds else "passed"
        )
    return result


def failure_text(report: Path, name: str) -> str:
    for testcase in ET.parse(report).getroot().iter("testcase"):
        if testcase.get("name") == name:
            return " ".join((child.get("message") or "") + (child.text or "") for child in testcase)
    raise AssertionError(f"{name} not in the report")


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=offline_env(), capture_output=True, text=True, timeout=600
    )


def test_deepeval_test_run_passes_and_fails_by_threshold(workdir: Path) -> None:
    before = repo_deepeval_files()
    report = workdir / "report.xml"
    proc = run(
        [str(BIN / "deepeval"), "test", "run", str(workdir), *GUARD_ARGS, f"--junitxml={report}"],
        workdir,
    )
    assert report.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    seen = outcomes(report)
    assert seen == {
        "test_summary_quality[faithful]": "passed",
        "test_summary_quality[short but faithful]": "passed",
        "test_hallucinating_summary": "failed",
        "test_network_guard_is_on": "passed",
    }, proc.stdout[-3000:]
    assert proc.returncode == 1  # deepeval test run exits non-zero when a test case fails
    message = failure_text(report, "test_hallucinating_summary")
    assert "Summary Alignment (score: 0.5, threshold: 0.9" in message
    assert "Pass Rate" in proc.stdout  # DeepEval's own summary of the run
    if installed_version("deepeval") >= (4,):  # DeepEval 3.9 saves nothing under the guard
        assert (workdir / ".deepeval").is_dir()  # it wrote its files here ...
    assert repo_deepeval_files() == before  # ... and nothing in the repository


def test_example_runs_under_plain_pytest(workdir: Path) -> None:
    (workdir / "test_hallucinating.py").unlink()
    report = workdir / "report.xml"
    proc = run(
        [sys.executable, "-m", "pytest", "-q", str(workdir), *GUARD_ARGS, f"--junitxml={report}"],
        workdir,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert set(outcomes(report).values()) == {"passed"} and len(outcomes(report)) == 3


def documented_deepeval_commands() -> str:
    """The bash block of docs/deepeval.md's "With `deepeval test run`" section."""
    text = (REPO / "docs" / "deepeval.md").read_text(encoding="utf-8")
    section = text[text.index("### With `deepeval test run`") :]
    start = section.index("```bash\n") + 8
    return section[start : section.index("\n```", start)]


def test_the_documented_deepeval_test_run_leaves_the_working_folder_clean(tmp_path: Path) -> None:
    """The docs' commands, as written, in a fresh folder: the run passes and no ``.deepeval``
    appears there or in the repository. DeepEval reads its switches at import, before the test
    file loads, so the command line must carry them; the README gives the same line."""
    commands = documented_deepeval_commands()
    assert (
        "DEEPEVAL_FILE_SYSTEM=READ_ONLY DEEPEVAL_TELEMETRY_OPT_OUT=YES deepeval test run"
        in commands
    )
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert (
        "`DEEPEVAL_FILE_SYSTEM=READ_ONLY DEEPEVAL_TELEMETRY_OPT_OUT=YES deepeval test run" in readme
    )
    (tmp_path / "examples").symlink_to(REPO / "examples", target_is_directory=True)
    before = repo_deepeval_files()
    env = {k: v for k, v in offline_env().items() if k not in ("DEEPEVAL_FILE_SYSTEM",)}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run(
        ["bash", "-c", commands],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Pass Rate: 100.0%" in proc.stdout
    assert not (tmp_path / ".deepeval").exists(), "deepeval test run wrote .deepeval/ here"
    assert repo_deepeval_files() == before
