"""The repository is self-contained: nothing in it reads the team's reference folder next to it
(``../shared``), and the SummEval sample the notebook and the validity script use is shipped."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "summeval" / "dev.jsonl"
OUTSIDE = re.compile(r"\.\./(?:\.\./)*shared/|ROOT\.parent\b|shared/data/summeval")


def project_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def test_no_project_file_reaches_outside_the_repository() -> None:
    offenders = []
    for path in project_files():
        if path == Path(__file__).resolve() or path.suffix in (".jsonl", ".sqlite3"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        offenders += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in OUTSIDE.finditer(text)]
    assert offenders == []


def test_the_summeval_sample_is_shipped_with_its_source_and_licence() -> None:
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 800 and len({r["article_id"] for r in rows}) == 50
    assert {"article", "summary", "coherence", "relevance"} <= set(rows[0])
    readme = (SAMPLE.parent / "README.md").read_text(encoding="utf-8")
    assert "Fabbri" in readme and "MIT" in readme


def test_validity_script_runs_on_the_shipped_sample_by_default(capsys) -> None:  # type: ignore[no-untyped-def]
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("validity_default", ROOT / "scripts/validity.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.main(["--limit", "32"])
    assert capsys.readouterr().out.startswith("32 summaries, 2 articles")
