"""Every Python code block in README.md and docs/*.md runs as written.

Each block runs in a fresh interpreter, from the repository root, with ``OPENAI_BASE_URL``
pointing at the stub server (``shared.testing.stub_server``) and a dummy ``OPENAI_API_KEY``:
a block that builds ``OpenAIJudge("gpt-4o-mini")`` or an OpenAI client talks to the fake judge,
offline, exactly as a reader's copy would talk to the real service.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from shared.testing import stub_server

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
GUARD = (
    'import pytest_socket\npytest_socket.socket_allow_hosts(["127.0.0.1", "localhost", "::1"])\n'
)


def blocks() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text[: match.start()].count("\n") + 1
            found.append((f"{doc.relative_to(ROOT)}:{line}", match.group(1)))
    return found


@pytest.mark.parametrize(("where", "code"), blocks(), ids=[w for w, _ in blocks()])
def test_doc_code_block_runs_as_written(where: str, code: str, tmp_path: Path) -> None:
    if re.search(r"^import ray$", code, re.MULTILINE) and importlib.util.find_spec("ray") is None:
        pytest.skip("needs the ray extra; CI's Ray stage runs this block with Ray installed")
    script = tmp_path / "block.py"
    script.write_text(GUARD + code, encoding="utf-8")
    with stub_server() as url:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        env |= {
            "PYTHONPATH": str(ROOT),
            "OPENAI_BASE_URL": url,
            "OPENAI_API_KEY": "stub-key",
            "DEEPEVAL_FILE_SYSTEM": "READ_ONLY",
        }
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, f"{where}:\n{done.stderr[-3000:]}"
