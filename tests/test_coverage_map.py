"""The report's coverage map: questions placed on source sentences by their reference answers,
sentences shaded by how many summaries cover them, long sources windowed, and the sources found
only where the input is known (never in the results file)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shared.cli.app import app
from shared.cli.coverage_map import (
    CLASSES,
    MAX_SOURCES,
    WHOLE_SENTENCES,
    place,
    source_map,
    sources_of,
)
from shared.cli.report import ReportInfo, render_report
from shared.pipeline.chunking import sentence_spans
from shared.runs.inputs import InputRow

SOURCE = (
    "The Harwick council voted 7 to 2 for a bike lane network. "
    "The plan will cost 18 million euros. "
    "Construction starts in March on Station Road. "
    "Shop owners on Market Street opposed the plan.\n\n"
    "Mayor Elena Ruiz praised the vote."
)


def question(text: str, answer: str, grade: int, sentence: int = 1) -> dict[str, Any]:
    return {
        "question": text,
        "importance": 3,
        "reference_answer": answer,
        "summary_answer": "",
        "grade": grade,
        "counted": True,
        "sentence": sentence,
    }


def result_row(row_id: str, *questions: dict[str, Any], score: float = 0.5) -> dict[str, Any]:
    return {
        "id": row_id,
        "status": "ok",
        "score": score,
        "summary": f"summary {row_id}",
        "reason": "",
        "error": None,
        "signature": "judge:x|n:10",
        "evidence": {"questions": list(questions)},
    }


def test_answers_are_placed_on_the_sentences_they_come_from() -> None:
    sentences = [SOURCE[a:b] for a, b in sentence_spans(SOURCE)]
    assert place(sentences, "It costs 18 million euros.") == [1]
    assert place(sentences, "on Station Road, from March") == [2]
    # an answer drawn from two sentences: the best one first, then the one holding the rest
    assert place(sentences, "Elena Ruiz praised it; Market Street shop owners opposed it") == [
        3,
        4,
    ]
    assert place(sentences, "A new stadium for the football club.") == []
    assert place(sentences, "") == []


def test_sentences_are_shaded_by_how_many_summaries_cover_them() -> None:
    vote = ("How did the council vote?", "7 to 2 for the bike lane network")
    cost = ("What will it cost?", "18 million euros")
    start = ("When does construction start?", "in March on Station Road")
    rows = [
        result_row("a", question(*vote, 5), question(*cost, 1), question(*start, 4)),
        result_row("b", question(*vote, 4), question(*cost, 2), question(*start, 3, sentence=0)),
    ]
    m = source_map(SOURCE, rows, "source-1")
    shaded = {text: cls for cls, _, text in m.pieces if cls}
    assert shaded == {
        "The Harwick council voted 7 to 2 for a bike lane network.": CLASSES["covered"],
        "The plan will cost 18 million euros.": CLASSES["missed"],
        # b graded it 3 but pointed at no summary sentence: not covered
        "Construction starts in March on Station Road.": CLASSES["partly"],
    }
    assert m.counts == {"covered": 1, "partly": 1, "missed": 1}
    assert (m.sentences, m.shown, m.questions, m.placed) == (5, 5, 3, 3)
    # every sentence is there, in order, with the paragraph break kept
    text = "".join(piece for _, _, piece in m.pieces)
    assert text == SOURCE
    title = next(t for cls, t, _ in m.pieces if cls == CLASSES["partly"])
    assert title.startswith("sentence 3\n") and "covered by 1 of 2 (a)" in title


def test_a_long_source_is_shown_as_a_window_around_its_questions() -> None:
    source = " ".join(f"Item {i} of the ledger lists crate number {i * 7 + 3}." for i in range(900))
    rows = [
        result_row(
            "long",
            question("Crate of item 10?", "Item 10 of the ledger lists crate number 73.", 5),
            question("Crate of item 500?", "Item 500 lists crate number 3503.", 0),
        )
    ]
    m = source_map(source, rows, "source-1")
    assert m.sentences == 900 > WHOLE_SENTENCES
    assert m.shown == 6 and m.questioned == 2
    gaps = [text for cls, _, text in m.pieces if cls == "cm-gap"]
    folded = [int(n) for n in re.findall(r"\[… (\d+) sentences? …\]", "".join(gaps))]
    assert folded == [9, 487, 398] and sum(folded) + m.shown == m.sentences
    assert [cls for cls, _, _ in m.pieces if cls in CLASSES.values()] == ["cm-c", "cm-m"]
    html = render_report(rows, ["score"], ReportInfo(judge="x"), sources={"long": source})
    section = html[html.index('id="coverage-maps"') : html.index('<h2 id="rows-not-scored">')]
    assert len(section) < len(source) / 10  # the window, not the whole source
    assert "shown are the\n  2 sentences with a question" in section


def test_sources_come_only_from_inputs_that_reproduce_the_rows() -> None:
    same = InputRow(position=1, id="a", source=SOURCE, summary="summary a")
    changed = InputRow(position=2, id="b", source=SOURCE + " More.", summary="summary b")
    parts = InputRow(position=3, id="c", source=["First doc.", "Second doc."], summary="s")
    rows = [
        {"id": "a", "input_hash": same.input_hash},
        {"id": "b", "input_hash": "0" * 16},
        {"id": "c", "input_hash": parts.input_hash},
    ]
    assert sources_of([same, changed, parts], rows) == {
        "a": SOURCE,
        "c": "First doc.\n\nSecond doc.",
    }


def test_report_without_sources_says_how_to_get_the_map() -> None:
    rows = [result_row("a", question("Cost?", "18 million euros", 0))]
    plain = render_report(rows, ["score"], ReportInfo(judge="x"))
    assert 'id="coverage-maps-none"' in plain and "--input" in plain
    assert 'class="coverage-map"' not in plain and "cm-link" not in plain
    mapped = render_report(rows, ["score"], ReportInfo(judge="x"), sources={"a": SOURCE})
    assert '<details class="coverage-map" id="source-1" open>' in mapped
    assert '<a href="#source-1">Coverage map of its source</a>' in mapped
    assert re.search(r'<span class="cm-m" title="sentence 2\n[^"]*">The plan will cost', mapped)


def test_report_command_reads_the_sources_again(tmp_path: Path) -> None:
    inputs = tmp_path / "in.jsonl"
    inputs.write_text(json.dumps({"id": "a", "source": SOURCE, "summary": "summary a"}) + "\n")
    hashed = InputRow(position=1, id="a", source=SOURCE, summary="summary a").input_hash
    row = {**result_row("a", question("Cost?", "18 million euros", 5)), "input_hash": hashed}
    row["evidence"]["run"] = {"input": str(inputs), "command": "summary-eval score in.jsonl"}
    results = tmp_path / "res.jsonl"
    results.write_text(json.dumps(row) + "\n")
    runner = CliRunner()
    # the input the run recorded is read again
    assert (
        runner.invoke(app, ["report", str(results), "-o", str(tmp_path / "a.html")]).exit_code == 0
    )
    assert '<span class="cm-c" title="sentence 2' in (tmp_path / "a.html").read_text()
    # a given input that is not there is a usage error; one with other texts maps nothing
    gone = runner.invoke(app, ["report", str(results), "--input", str(tmp_path / "no.jsonl")])
    assert gone.exit_code == 2 and "--input" in gone.output
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "a", "source": "Another text.", "summary": "x"}) + "\n")
    page = tmp_path / "b.html"
    done = runner.invoke(app, ["report", str(results), "-o", str(page), "--input", str(other)])
    assert done.exit_code == 0 and "1 scored rows have no source" in " ".join(done.output.split())
    assert 'id="coverage-maps-none"' in page.read_text()


def test_a_recorded_input_that_cannot_be_read_only_drops_the_maps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shared.cli.ray_engine

    def no_pyarrow(*args: object) -> None:
        raise ModuleNotFoundError("No module named 'pyarrow'")

    monkeypatch.setattr(shared.cli.ray_engine, "read_any", no_pyarrow)
    scored = tmp_path / "in.parquet"
    scored.write_bytes(b"PAR1")
    row = result_row("a", question("Cost?", "18 million euros", 5))
    row["evidence"]["run"] = {"input": str(scored), "command": "summary-eval score in.parquet"}
    results = tmp_path / "res.jsonl"
    results.write_text(json.dumps(row) + "\n")
    runner = CliRunner()
    page = tmp_path / "a.html"
    done = runner.invoke(app, ["report", str(results), "-o", str(page)])
    assert done.exit_code == 0, done.output
    assert 'id="coverage-maps-none"' in page.read_text()
    given = runner.invoke(app, ["report", str(results), "--input", str(scored)])
    assert given.exit_code == 2 and "--input: No module named 'pyarrow'" in given.output


def test_report_command_never_writes_over_what_it_reads(tmp_path: Path) -> None:
    recorded, given = tmp_path / "in.jsonl", tmp_path / "given.jsonl"
    for path in (recorded, given):
        path.write_text(json.dumps({"id": "a", "source": SOURCE, "summary": "summary a"}) + "\n")
    row = result_row("a", question("Cost?", "18 million euros", 5))
    row["evidence"]["run"] = {"input": str(recorded), "command": "summary-eval score in.jsonl"}
    results = tmp_path / "res.jsonl"
    results.write_text(json.dumps(row) + "\n")
    kept = {p: p.read_bytes() for p in (recorded, given, results)}
    runner = CliRunner()
    for target, extra, named in (
        (results, [], "RESULTS"),
        (recorded, [], "scored input"),
        (given, ["--input", str(given)], "scored input"),
    ):
        refused = runner.invoke(app, ["report", str(results), "-o", str(target), *extra])
        assert refused.exit_code == 2, refused.output
        assert f"is an input file ({named})" in " ".join(refused.output.split())
    assert {p: p.read_bytes() for p in kept} == kept


def test_a_report_maps_the_sources_of_its_worst_summaries_only() -> None:
    rows = [
        result_row(f"r{i:02}", question("Cost?", f"{i} million euros", 0), score=i / 100)
        for i in range(MAX_SOURCES + 5)
    ]
    sources = {
        f"r{i:02}": f"The plan will cost {i} million euros. Work starts soon." for i in range(25)
    }
    html = render_report(rows, ["score"], ReportInfo(judge="x"), worst=3, sources=sources)
    assert html.count('<details class="coverage-map"') == MAX_SOURCES
    assert "5 more sources not mapped" in html
    assert 'id="source-1" open>' in html and "Source of r00 (1 summary)" in html  # worst first
    assert "Source of r24" not in html
