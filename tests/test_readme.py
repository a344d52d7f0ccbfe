"""The README must stay true: its CI commands exist, and its runnable examples run offline."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
RUNNABLE = re.findall(r"<!-- runnable -->\n```python\n(.*?)```", README, re.DOTALL)
# Run in the child before the example: the same network guard as the suite (pytest-socket).
GUARD = (
    'import pytest_socket\npytest_socket.socket_allow_hosts(["127.0.0.1", "localhost", "::1"])\n'
)


def test_readme_names_the_ci_commands() -> None:
    assert "<!-- ci:setup -->" in README and "<!-- ci:test -->" in README
    assert "summary-eval score examples/summaries.jsonl" in README
    assert (ROOT / "examples" / "summaries.jsonl").is_file()


def test_readme_has_runnable_examples() -> None:
    assert len(RUNNABLE) >= 2


@pytest.mark.parametrize("code", RUNNABLE, ids=lambda c: c.split("\n", 3)[2][:40])
def test_readme_example_runs_offline(code: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["PYTHONPATH"] = str(ROOT)
    script = tmp_path / "example.py"
    script.write_text(GUARD + code)
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "the example printed nothing"
    assert not (tmp_path / ".deepeval").exists()  # the example keeps DeepEval read-only itself
