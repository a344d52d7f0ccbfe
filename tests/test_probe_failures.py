"""Failures of a 203-probe run of bad input, faults and hostile content (issue 25): each test
names the failure it keeps fixed. CLI runs go through typer's CliRunner; a judge, when one is
needed, is the stub server on 127.0.0.1."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shared.cli.app import app
from shared.runs.results import read_results
from shared.testing import stub_server


def run_cli(*args: Any) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


def run_cli_unwrapped(*args: Any) -> tuple[int, str]:
    """run_cli with the terminal's line wrapping undone (a long temporary path wraps)."""
    code, text = run_cli(*args)
    return code, text.replace("\n", "")


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


# --- 4-5: every reader bounds what it reads ---------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "1" * 5000


@pytest.mark.parametrize(
    "line",
    [
        '{"id": "x", "source": ' + DEEP + ', "summary": "A cat."}',
        '{"id": ' + HUGE + ', "source": "The cat sat.", "summary": "A cat."}',
        '{"id": "x", "source": "The cat sat.", "summary": "A cat.", "n": -' + HUGE + "}",
    ],
    ids=["deep", "huge-id", "huge-negative"],
)
def test_a_deep_or_huge_jsonl_line_is_one_bad_row(tmp_path: Path, line: str) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW, line])
    out = tmp_path / "out.jsonl"
    code, _ = run_cli("score", source, *nojudge(), "-o", out, "--no-report")
    rows = read_results(out)
    assert code == 1 and [r["status"] for r in rows] == ["ok", "bad_input"]
    assert "nested" in rows[1]["error"] or "digits" in rows[1]["error"]


def test_a_deep_csv_questions_cell_is_one_bad_row(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    with source.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "source", "summary", "questions"])
        writer.writerow(["a", ROW["source"], ROW["summary"], ""])
        writer.writerow(["b", ROW["source"], ROW["summary"], DEEP])
    out = tmp_path / "out.jsonl"
    code, _ = run_cli("score", source, *nojudge(), "-o", out, "--no-report")
    rows = read_results(out)
    assert code == 1 and [r["status"] for r in rows] == ["ok", "bad_input"]
    assert "nested" in rows[1]["error"]


def _results_with_a_hostile_line(tmp_path: Path, name: str, line: str) -> Path:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW, {**ROW, "id": "r2"}])
    out = tmp_path / name
    assert run_cli("score", source, *nojudge(), "-o", out, "--no-report")[0] == 0
    with out.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    return out


HOSTILE_RESULT_LINES = {
    "deep": '{"id": "z", "status": "ok", "evidence": ' + DEEP + "}",
    "huge": '{"id": "z", "status": "ok", "position": ' + HUGE + "}",
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_RESULT_LINES))
def test_report_compare_and_resume_survive_a_deep_or_huge_results_line(
    tmp_path: Path, kind: str
) -> None:
    a = _results_with_a_hostile_line(tmp_path, "a.results.jsonl", HOSTILE_RESULT_LINES[kind])
    b = _results_with_a_hostile_line(tmp_path, "b.results.jsonl", HOSTILE_RESULT_LINES[kind])
    code, _ = run_cli("report", a, "-o", tmp_path / "r.html")
    assert code == 0 and (tmp_path / "r.html").is_file()
    code, text = run_cli("compare", a, b)
    assert code == 0, text
    code, _ = run_cli("score", tmp_path / "in.jsonl", *nojudge(), "-o", a, "--no-report")
    assert code == 0 and [r["id"] for r in read_results(a)] == ["r1", "r2"]


@pytest.mark.parametrize("value", [DEEP, HUGE], ids=["deep", "huge"])
def test_agree_with_a_deep_or_huge_labels_line_is_a_usage_error(tmp_path: Path, value: str) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    res = tmp_path / "a.results.jsonl"
    assert run_cli("score", source, *nojudge(), "-o", res, "--no-report")[0] == 0
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "r1", "rating": ' + value + "}\n", encoding="utf-8")
    code, text = run_cli("agree", res, "--labels", labels, "--map", "density=rating")
    assert code == 2 and "line 1" in flat(text)


def test_csv_results_with_a_huge_position_are_read(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    res = tmp_path / "a.results.csv"
    assert run_cli("score", source, *nojudge(), "-o", res, "--no-report")[0] == 0
    with res.open(newline="", encoding="utf-8") as handle:
        records = list(csv.DictReader(handle))
    records[0]["position"] = HUGE
    with res.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
    code, _ = run_cli("report", res, "-o", tmp_path / "r.html")
    assert code in (0, 2)


# --- 6: a corrupt judge cache ------------------------------------------------------------------


def _score_with_cache(tmp_path: Path, cache: Path) -> tuple[int, str, list[dict[str, Any]]]:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    out = tmp_path / "out.jsonl"
    with stub_server() as url:
        code, text = run_cli(
            "score", source, "--base-url", url, "--model", "stub", "--cache", cache,
            "--no-report", "-o", out, "--dimensions", "",
        )  # fmt: skip
    return code, text, read_results(out) if out.exists() else []


def test_a_cache_of_random_bytes_is_set_aside_and_a_fresh_one_used(tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite3"
    garbage = bytes(range(256)) * 64
    cache.write_bytes(garbage)
    code, text, rows = _score_with_cache(tmp_path, cache)
    assert code == 0 and rows[0]["status"] == "ok"
    assert "cache" in flat(text) and "set aside" in flat(text)
    (kept,) = tmp_path.glob("cache.sqlite3.corrupt*")
    assert kept.read_bytes() == garbage  # nothing destroyed


def test_a_truncated_cache_is_set_aside_and_a_fresh_one_used(tmp_path: Path) -> None:
    from shared.judge import SQLiteStore

    cache = tmp_path / "cache.sqlite3"
    store = SQLiteStore(cache)
    for i in range(400):
        store.put(f"k{i}", "v" * 200)
    store.close()
    data = cache.read_bytes()
    cache.write_bytes(data[: len(data) // 2])
    code, text, rows = _score_with_cache(tmp_path, cache)
    assert code == 0 and rows[0]["status"] == "ok", text


def test_a_database_with_another_judge_cache_table_is_refused_untouched(tmp_path: Path) -> None:
    import sqlite3

    cache = tmp_path / "theirs.sqlite3"
    conn = sqlite3.connect(cache)
    conn.execute("CREATE TABLE judge_cache (key TEXT, payload BLOB)")
    conn.execute("INSERT INTO judge_cache VALUES ('a', 'b')")
    conn.commit()
    conn.close()
    before = cache.read_bytes()
    code, text, _ = _score_with_cache(tmp_path, cache)
    assert code == 2 and "not a summary-eval judge cache" in flat(text)
    assert cache.read_bytes() == before


# --- 7: hand-edited results: NaN, Infinity, evidence as a string -------------------------------


def _edit_results(path: Path, **changes: Any) -> None:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows[0].update(changes)
    text = "\n".join(json.dumps(r) for r in rows) + "\n"  # json writes NaN / Infinity bare
    path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    "changes",
    [
        {"density": float("nan")},
        {"density": float("inf")},
        {"density": float("-inf")},
        {"evidence": "hand-written"},
        {"evidence": ["a", "b"]},
    ],
    ids=["nan", "inf", "-inf", "evidence-str", "evidence-list"],
)
def test_report_and_resume_read_hand_edited_results(
    tmp_path: Path, changes: dict[str, Any]
) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW, {**ROW, "id": "r2", "summary": "Warm."}])
    out = tmp_path / "out.results.jsonl"
    assert run_cli("score", source, *nojudge(), "-o", out, "--no-report")[0] == 0
    _edit_results(out, **changes)
    code, text = run_cli("report", out, "-o", tmp_path / "r.html")
    assert code == 0, text
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "NaN" not in html.split("<body", 1)[1].split("<script", 1)[0]
    code, text = run_cli("score", source, *nojudge(), "-o", out, "--report", tmp_path / "s.html")
    assert code == 0, text


def test_read_results_gives_no_score_for_non_finite_numbers_and_a_mapping_evidence(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(
        '{"id": 7, "status": "ok", "score": NaN, "density": Infinity, "evidence": "x"}\n',
        encoding="utf-8",
    )
    (row,) = read_results(path)
    assert row["id"] == "7" and row["score"] is None and row["density"] is None
    assert row["evidence"] == {}


# --- 8: files that are not UTF-8 ---------------------------------------------------------------


def test_compare_report_and_resume_on_a_non_utf8_csv_results_file_exit_2(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    a, b = tmp_path / "a.results.csv", tmp_path / "b.results.csv"
    for path in (a, b):
        assert run_cli("score", source, *nojudge(), "-o", path, "--no-report")[0] == 0
    a.write_bytes(a.read_bytes().replace(b"A cat sat.", b"A caf\xe9 sat."))
    before = a.read_bytes()
    code, text = run_cli("compare", a, b)
    assert code == 2 and "UTF-8" in flat(text)
    code, text = run_cli("report", a)
    assert code == 2 and "UTF-8" in flat(text)
    code, text = run_cli("score", source, *nojudge(), "-o", a, "--no-report")
    assert code == 2 and "UTF-8" in flat(text)
    assert a.read_bytes() == before


def test_agree_on_non_utf8_labels_exits_2(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    res = tmp_path / "a.results.jsonl"
    assert run_cli("score", source, *nojudge(), "-o", res, "--no-report")[0] == 0
    labels = tmp_path / "labels.csv"
    labels.write_bytes(b"id,rating,note\nr1,3,caf\xe9\n")
    code, text = run_cli("agree", res, "--labels", labels, "--map", "density=rating")
    assert code == 2 and "UTF-8" in flat(text)


# --- 9: a summary of thousands of repeated sentences costs linear time --------------------------


class CountingEmbedder:
    """Embeds each text as a one-hot vector of its hash; counts the texts it was asked for."""

    model_id = "counting-embedder"

    def __init__(self) -> None:
        self.texts = 0

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        self.texts += len(texts)
        out = np.zeros((len(texts), 16))
        for i, text in enumerate(texts):
            out[i, sum(map(ord, text)) % 16] = 1.0
        return out


def test_repeated_sentences_are_embedded_once_and_listed_once(seed: tuple[str, str]) -> None:
    from shared import score_summary

    source = seed[0]
    sentences = ["The app tracks fitness goals.", "It logs meals and water."]
    summary = " ".join(sentences[i % 2] for i in range(400))
    embedder = CountingEmbedder()
    ev = score_summary(
        source, summary, judge=None, embedder=embedder, dimensions=["non_redundancy"]
    )
    redundancy = ev.dimension_evidence.non_redundancy
    assert embedder.texts == 2  # was 400: one embedding per sentence, repeats included
    # one pair per repeated sentence (398), not every pair of repeats (about 40,000)
    pairs = redundancy.near_duplicates
    assert len(pairs) == 398
    assert [(p.first, p.second) for p in pairs[:3]] == [(1, 3), (2, 4), (1, 5)]
    assert redundancy.score == pytest.approx(1 - 398 / 400)


def test_near_duplicates_name_the_earliest_similar_sentence() -> None:
    import numpy as np

    from shared.dimensions.redundancy import near_duplicates

    a, b = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    close = np.array([0.95, np.sqrt(1 - 0.95**2)])
    unit = np.stack([a, b, close, a, b])
    pairs = near_duplicates(unit, texts=["A", "B", "A'", "A", "B"])
    assert [(p.first, p.second, p.similarity) for p in pairs] == [
        (1, 3, 0.95),
        (1, 4, 1.0),
        (2, 5, 1.0),
    ]
    assert [(p.first, p.second) for p in near_duplicates(unit)] == [(1, 3), (1, 4), (2, 5)]


# --- 14: Ray's actors never hold every CPU ------------------------------------------------------


def test_default_actor_cpus_leave_a_cpu_for_the_tasks_that_feed_the_actors() -> None:
    from shared.runs.distributed import actor_cpus_for

    assert actor_cpus_for(2, 2) == 0.5  # the 2-CPU machine that hung with 1.0 each
    assert actor_cpus_for(16, 2) == 1.0
    assert actor_cpus_for(1, 2) == 0.25
    for cpus, actors in [(2, 1), (2, 2), (3, 4), (8, 8), (1, 1)]:
        assert actor_cpus_for(cpus, actors) * actors < cpus
    with pytest.raises(ValueError, match="wait forever"):
        actor_cpus_for(2, 2, 1.0)
    with pytest.raises(ValueError, match="positive"):
        actor_cpus_for(2, 2, float("nan"))
    assert actor_cpus_for(4, 2, 1.0) == 1.0


# --- 10: user and server text printed literally ------------------------------------------------

HOSTILE_IDS = ["[link=http://evil]click[/link]", "[bold red]X[/]", "t\x1b]0;pwned\x07\x1b[2Jz"]


def test_ids_print_literally_without_control_sequences(tmp_path: Path) -> None:
    rows = [{**ROW, "id": row_id} for row_id in HOSTILE_IDS]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        app,
        ["score", str(source), *map(str, nojudge()), "-o", str(out), "--no-report"],
        catch_exceptions=False,
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0
    text = result.output
    assert "\x1b" not in text and "\x07" not in text
    assert "[link=http://evil]click[/link]" in text and "[bold red]X[/]" in text
    assert "t\\x1b]0;pwned\\x07\\x1b[2Jz" in text


def test_paths_and_the_missing_extra_print_literally(tmp_path: Path) -> None:
    code, text = run_cli_unwrapped("score", tmp_path / "[red]x[/red].jsonl")
    assert code == 2 and "[red]x[/red].jsonl" in text
    code, text = run_cli_unwrapped("score", tmp_path / "a\x1b[2Jb.jsonl")
    assert code == 2 and "\x1b" not in text and "a\\x1b[2Jb.jsonl" in text


def test_the_missing_ray_extra_message_keeps_its_brackets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    code, text = run_cli("score", source, "--engine", "ray", "--no-judge")
    assert code == 2 and 'pip install "summary-eval[ray]"' in text


def test_a_model_name_with_markup_prints_literally(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    with stub_server() as url:
        code, text = run_cli(
            "score", source, "--base-url", url, "--model", "[bold]m[/bold]\x1b[2J", "--no-cache",
            "--no-report", "-o", tmp_path / "o.jsonl", "--dimensions", "",
        )  # fmt: skip
    assert code == 0 and "[bold]m[/bold]\\x1b[2J" in text and "\x1b" not in text


def test_compare_names_and_paths_print_literally(tmp_path: Path) -> None:
    rows = [{"id": str(i), "status": "ok", "[red]odd[/red]": 0.1 * i} for i in range(5)]
    a = write_jsonl(tmp_path / "a.results.jsonl", rows)
    b = write_jsonl(tmp_path / "b.results.jsonl", rows)
    code, text = run_cli_unwrapped("compare", a, b, "--json", tmp_path / "[b]j[/b].json")
    assert code == 0, text
    assert "[red]odd[/red]" in text and "[b]j[/b].json" in text


# --- 11: a model name cannot forge signature fields --------------------------------------------


def test_a_bar_in_the_model_name_cannot_forge_signature_fields() -> None:
    from shared import ScoreOptions, signature
    from shared.testing import FakeJudge

    class Embedder(CountingEmbedder):
        model_id = "e|coh:article"

    sig = signature(
        FakeJudge(model_id="m|beta:9|n:99"), ScoreOptions.from_kwargs({"embedder": Embedder()})
    )
    fields = sig.split("|")
    assert fields[0] == "judge:m%7Cbeta:9%7Cn:99" and fields[1] == "n:10"
    assert [f for f in fields if f.startswith("beta:")] == ["beta:1"]
    assert "emb:e%7Ccoh:article" in fields
    assert len([f for f in fields if f.startswith("coh:")]) == 1
    plain_sig = signature(FakeJudge(), ScoreOptions.from_kwargs({}))
    assert plain_sig.startswith(f"judge:{FakeJudge().model_id}|n:10|")  # others unchanged


# --- 12: bounds on numbers, names and headers --------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--n", str(10**9)],
        ["--flip-threshold", "nan"],
        ["--flip-threshold", "7"],
        ["--timeout", "inf"],
        ["--timeout", "nan"],
        ["--threshold", "nan"],
    ],
)
def test_out_of_range_numbers_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    out = tmp_path / "out.jsonl"
    code, _ = run_cli("score", source, *nojudge(), "-o", out, "--no-report", *args)
    assert code == 2 and not out.exists()


def test_n_has_an_upper_bound_in_the_core(seed: tuple[str, str]) -> None:
    from shared import score_summary
    from shared.testing import FakeJudge

    with pytest.raises(ValueError, match="from 1 to 100"):
        score_summary(*seed, judge=FakeJudge(), cache=False, n=10**9)


def test_compare_and_agree_bound_the_resamples(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    res = tmp_path / "a.results.jsonl"
    assert run_cli("score", source, *nojudge(), "-o", res, "--no-report")[0] == 0
    assert run_cli("compare", res, res, "--resamples", "1000000000")[0] == 2
    assert run_cli("compare", res, res, "--trials", "1000000000")[0] == 2
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"id": "r1", "rating": 3}])
    code, _ = run_cli(
        "agree", res, "--labels", labels, "--map", "density=rating", "--resamples", "1000000000"
    )
    assert code == 2
    from shared import compare

    with pytest.raises(ValueError, match="100,000"):
        compare(res, res, resamples=10**9)


def test_agree_rejects_an_unknown_metric_name(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    res = tmp_path / "a.results.jsonl"
    assert run_cli("score", source, *nojudge(), "-o", res, "--no-report")[0] == 0
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"id": "r1", "rating": 3}])
    code, text = run_cli("agree", res, "--labels", labels, "--map", "madeup=rating")
    assert code == 2 and "no sub-score 'madeup'" in flat(text) and "density" in flat(text)


def test_a_repeated_csv_header_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text("id,source,summary,summary\na,The cat sat.,A cat.,B cat.\n")
    code, text = run_cli("score", source, *nojudge(), "-o", tmp_path / "o.jsonl", "--no-report")
    assert code == 2 and "'summary'" in flat(text) and "repeats" in flat(text)
    res = tmp_path / "a.results.jsonl"
    good = write_jsonl(tmp_path / "in.jsonl", [ROW])
    assert run_cli("score", good, *nojudge(), "-o", res, "--no-report")[0] == 0
    labels = tmp_path / "labels.csv"
    labels.write_text("id,rating,rating\nr1,3,4\n")
    code, text = run_cli("agree", res, "--labels", labels, "--map", "density=rating")
    assert code == 2 and "repeats" in flat(text)


# --- 16: a column absent from every row is a usage error, in JSONL as in CSV -------------------


@pytest.mark.parametrize("missing", ["summary", "source"])
def test_a_field_absent_from_every_jsonl_row_is_a_usage_error(
    tmp_path: Path, missing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shared.cli.engines as engines

    def no_models(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("models were loaded for an input that cannot be scored")

    monkeypatch.setattr(engines, "load_models", no_models)
    rows = [{k: v for k, v in {**ROW, "id": str(i)}.items() if k != missing} for i in range(3)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "o.jsonl"
    code, text = run_cli("score", source, *nojudge(), "-o", out, "--no-report")
    assert code == 2 and f"--{missing}-column" in flat(text) and not out.exists()


# --- 20: flags and their help -------------------------------------------------------------------


def test_samples_without_a_judge_is_a_usage_error(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    out = tmp_path / "o.jsonl"
    code, text = run_cli("score", source, *nojudge(), "-o", out, "--samples", "3")
    assert code == 2 and "needs a judge" in flat(text) and not out.exists()


def test_score_help_shows_no_bool_placeholder_and_consistent_defaults() -> None:
    result = CliRunner().invoke(app, ["score", "--help"], env={"COLUMNS": "200"})
    text = result.output
    assert result.exit_code == 0 and "--force" in text
    assert "<bool>" not in text
    assert "(default: row number)" not in text
    assert "de=de_core_news_sm" in text and "{language" not in text


# --- 17: messages that say what the user can do ---------------------------------------------------


def test_a_rebuilt_report_of_a_no_judge_run_keeps_the_skipped_banner(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    out = tmp_path / "out.results.jsonl"
    first = tmp_path / "first.html"
    assert run_cli("score", source, *nojudge(), "-o", out, "--report", first)[0] == 0
    rebuilt = tmp_path / "rebuilt.html"
    assert run_cli("report", out, "-o", rebuilt)[0] == 0
    html = rebuilt.read_text(encoding="utf-8")
    assert "--base-url URL --model NAME" in html  # how to enable the skipped dimensions
    assert "alignment" in html.split("<body", 1)[1]
    assert "<td>Command</td>" in html and str(source) in html  # the run's input and command


def test_no_python_isms_in_the_no_judge_reason_and_cli_words_in_check_judge_advice() -> None:
    from shared.adapter_kit import NO_JUDGE

    assert "judge=None" not in NO_JUDGE
    import inspect

    from shared.judge import check as judge_check

    assert "--context-budget" in inspect.getsource(judge_check)


def test_ragas_does_not_call_a_row_with_a_score_unscored(seed: tuple[str, str]) -> None:
    from ragas_ext._metrics import SummarySettings
    from shared import score_summary
    from shared.testing import FakeJudge

    ev = score_summary(*seed, judge=FakeJudge(), cache=False, dimensions=[])
    ev = ev.model_copy(update={"error": "the style call failed"})  # a score, and an error
    why = SummarySettings(sub_score="coherence").missing_reason(ev)
    assert ev.score is not None and "also unscored" not in why


# --- 19: the notebook writes no .deepeval/ and needs no undeclared package ----------------------


def test_the_notebook_sets_a_read_only_deepeval_and_imports_no_scipy() -> None:
    notebook = json.loads(
        (Path(__file__).resolve().parent.parent / "notebooks" / "walkthrough.ipynb").read_text()
    )
    cells = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    code = "\n".join(cells)
    assert "import scipy" not in code and "from scipy" not in code
    first_deepeval = next(i for i, c in enumerate(cells) if "deepeval" in c and "import" in c)
    setting = 'os.environ["DEEPEVAL_FILE_SYSTEM"] = "READ_ONLY"'
    assert any(setting in c for c in cells[: first_deepeval + 1])
    assert code.index(setting) < code.index("from deepeval")


# --- 15: the README's first Python snippet runs offline ----------------------------------------


def test_the_readmes_first_python_snippet_is_a_runnable_offline_one() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    first = readme.index("```python")
    assert readme[:first].endswith("<!-- runnable -->\n")  # tests/test_readme.py runs it
    snippet = readme[first : readme.index("```\n", first + 9)]
    assert "FakeJudge()" in snippet
