"""scripts/judged_validity.py: a bench file's judged metrics beside the offline sub-scores on
the same rows (wiring and arithmetic; the numbers of a real run live in docs/VALIDITY.md)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from shared.analysis.bench_data import SUMMEVAL_PATH
from tests.scripts import load_script


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return load_script("judged_validity")


def test_trigram_precision(script: ModuleType) -> None:
    source = "The council approved the new bridge on Monday."
    assert script.trigram_precision(source, "the council approved the new bridge") == 1.0
    # of "the council approved", "council approved the", "approved the road": 2 in the source
    assert script.trigram_precision(source, "The council approved the road") == pytest.approx(2 / 3)
    assert script.trigram_precision(source, "Two words") is None


def test_the_table_puts_offline_sub_scores_on_the_rows_ours_scored(
    script: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [json.loads(line) for line in SUMMEVAL_PATH.read_text().splitlines() if line.strip()]
    first = [r for r in rows if r["article_id"] in {"A24", "A48"}]
    ids = [f"{r['article_id']}/{r['summary_id']}" for r in first]
    # "ours" ranks every article's rows exactly as the people's consistency does, and leaves
    # one row unscored; a peer scores nothing
    ours = {i: float(r["consistency"]) for i, r in zip(ids, first, strict=True)}
    ours[ids[0]] = None
    bench = {
        "metrics": [
            {"name": "ours", "scores": ours},
            {"name": "peer", "scores": dict.fromkeys(ids)},
        ]
    }
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(bench))
    script.main([str(path), "--resamples", "50"])
    out = capsys.readouterr().out
    lines = {line.split(" | ")[0].strip("| "): line for line in out.splitlines() if "|" in line}
    assert "| 31/32 | +1.00 [+1.00, +1.00] (2) |" in lines["ours"]
    assert "| 0/32 | n/a | n/a | n/a | n/a |" in lines["peer"]
    for name in ("grounding (offline)", "coherence (offline)", "trigram precision"):
        assert "| 31/31 |" in lines[name]  # the 31 rows ours scored, not the one it did not
