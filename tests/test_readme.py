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


# --- the commands a reader types (issue 43, items 8 and 9) ------------------------------------

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_FENCE = re.compile(r"^```(?:bash|console|sh)\n(.*?)^```", re.DOTALL | re.MULTILINE)
INLINE = re.compile(r"`([^`\n]+)`")
# What a reader types: the tool as `summary-eval`, Python as `python`, in the activated
# environment; never a path into it, `python3` (but to make it) or the package's module.
OTHER_FORMS = re.compile(
    r"\.venv/bin/(?!activate\b)\w|\bpython3\b(?! -m venv)|-m shared\.cli\b|\bpython -m shared\b"
)


def shell_text(doc: Path) -> list[str]:
    """A doc's shell commands: its shell code blocks and its inline code spans."""
    text = doc.read_text(encoding="utf-8")
    return SHELL_FENCE.findall(text) + INLINE.findall(SHELL_FENCE.sub("", text))


def test_every_doc_command_is_written_in_one_form_for_the_activated_environment() -> None:
    wrong = [
        f"{doc.relative_to(ROOT)}: {match.string.strip()[:80]!r}"
        for doc in DOCS
        for text in shell_text(doc)
        if (match := OTHER_FORMS.search(text))
    ]
    assert not wrong, "commands not in the one form (summary-eval, python):\n" + "\n".join(wrong)
    # said once, near the top: how the commands get onto the PATH
    setup = README.index("<!-- ci:setup -->")
    said = README.index("run `. .venv/bin/activate`")
    assert setup < said < README.index("## Quick start")
    assert ". .venv/bin/activate &&" in README[setup:said]  # the set-up line itself activates it


def readme_score_lines() -> list[str]:
    """Every `summary-eval score` command line of the README, in the order it gives them."""
    return re.findall(r"summary-eval score[^`\n]*", README)


def test_the_readmes_score_lines_run_in_the_order_given(tmp_path: Path) -> None:
    """Run one after the other in one folder, none is refused (a results file resumes only a run
    with its own settings: a line that changes them writes its own file). A line that needs a
    judge (`--samples`) gets the stub judge, as the README suggests."""
    from shared.testing import stub_server

    lines = readme_score_lines()
    assert len(lines) >= 3 and lines[0] == "summary-eval score examples/summaries.jsonl"
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["PYTHONPATH"] = str(ROOT)
    with stub_server() as url:
        for line in lines:
            command = line.split()[1:]
            if "--samples" in command:
                command += ["--base-url", url, "--model", "stub", "--no-cache"]
            done = subprocess.run(
                [sys.executable, "-m", "shared.cli", *command],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
            )
            said = " ".join(done.stderr.split())
            assert "other settings" not in said, f"{line}: {said[-600:]}"
            assert done.returncode in (0, 3, 4), f"{line}: exit {done.returncode}: {said[-600:]}"
