"""Failures of a 203-probe run of bad input, faults and hostile content (issue 25): each test
names the failure it keeps fixed. CLI runs go through typer's CliRunner; a judge, when one is
needed, is the stub server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shared.cli.app import app
from shared.cli.results import read_results
from shared.testing import stub_server


def run_cli(*args: Any) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


def flat(text: str) -> str:
    return " ".join(text.split())


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n",
        encoding="utf-8",
    )
    return path


def nojudge(*extra: Any) -> list[Any]:
    return ["--no-judge", "--no-cache", "--dimensions", "density", *extra]


ROW = {"id": "r1", "source": "The cat sat on the mat. It was warm.", "summary": "A cat sat."}


# --- 1-2: no two paths of one run may be one file ----------------------------------------------


def test_report_onto_the_results_file_is_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    out = tmp_path / "out.results.jsonl"
    code, text = run_cli("score", source, *nojudge(), "-o", out, "--report", out)
    assert code == 2 and "results file" in flat(text) and "report" in flat(text)
    assert not out.exists()


def test_report_hard_linked_to_existing_results_is_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    out = tmp_path / "out.results.jsonl"
    assert run_cli("score", source, *nojudge(), "-o", out, "--no-report")[0] == 0
    before = out.read_bytes()
    link = tmp_path / "r.html"
    link.hardlink_to(out)
    code, _ = run_cli("score", source, *nojudge(), "-o", out, "--report", link)
    assert code == 2 and out.read_bytes() == before


def test_cache_onto_the_results_file_is_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    out = tmp_path / "out.results.jsonl"
    out.write_text("precious\n")
    args = ["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--no-report"]
    code, text = run_cli("score", source, *args, "-o", out, "--cache", out)
    assert code == 2 and "judge cache" in flat(text)
    assert out.read_text() == "precious\n"


def test_compare_output_hard_linked_to_an_input_is_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    a, b = tmp_path / "a.results.jsonl", tmp_path / "b.results.jsonl"
    for path in (a, b):
        assert run_cli("score", source, *nojudge(), "-o", path, "--no-report")[0] == 0
    before = a.read_bytes()
    link = tmp_path / "hl.html"
    link.hardlink_to(a)
    for flag in ("-o", "--json"):
        code, text = run_cli("compare", a, b, flag, link)
        assert code == 2 and "input" in flat(text)
        assert a.read_bytes() == before


def test_agree_json_hard_linked_to_the_labels_is_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    res = tmp_path / "a.results.jsonl"
    assert run_cli("score", source, *nojudge(), "-o", res, "--no-report")[0] == 0
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"id": "r1", "rating": 3}])
    before = labels.read_bytes()
    link = tmp_path / "agree.json"
    link.hardlink_to(labels)
    code, _ = run_cli("agree", res, "--labels", labels, "--map", "density=rating", "--json", link)
    assert code == 2 and labels.read_bytes() == before


# --- 3: resume refuses rows scored under other settings ----------------------------------------


def test_resume_with_more_dimensions_is_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    out = tmp_path / "out.jsonl"
    base = ["--no-judge", "--no-cache", "--no-report", "-o", out]
    assert run_cli("score", source, *base, "--dimensions", "density")[0] == 0
    code, text = run_cli("score", source, *base, "--dimensions", "density,specificity")
    assert code == 2 and "other settings" in flat(text)
    code, _ = run_cli("score", source, *base, "--dimensions", "density,specificity", "--force")
    (row,) = read_results(out)
    assert code == 0 and row["evidence"]["settings"]["dimensions"] == ["density", "specificity"]


def test_resume_with_a_beta_that_formats_alike_is_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    out = tmp_path / "out.jsonl"
    base = [*nojudge(), "--no-report", "-o", out]
    assert run_cli("score", source, *base, "--beta", "2.5")[0] == 0
    code, text = run_cli("score", source, *base, "--beta", "2.5000004")
    assert code == 2 and "other settings" in flat(text)
    assert run_cli("score", source, *base, "--beta", "2.5")[0] == 0  # the same run resumes


def test_resume_against_another_server_under_the_same_model_name_is_refused(
    tmp_path: Path,
) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    out = tmp_path / "out.jsonl"
    common = ["--model", "stub", "--no-cache", "--no-report", "-o", out, "--dimensions", ""]
    with stub_server() as first:
        code, _ = run_cli("score", source, "--base-url", first, *common)
        assert code == 0
        code, text = run_cli("score", source, "--base-url", first, *common)
        assert code == 0 and "Resuming" in flat(text)
    with stub_server() as second:
        assert second != first
        code, text = run_cli("score", source, "--base-url", second, *common)
    assert code == 2 and "other settings" in flat(text)
