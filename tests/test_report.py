"""The HTML report: statistics, worst summaries with evidence, escaping, self-containment, and
a render in a real headless browser (Debian's ``chromium``) after plotly's JavaScript ran."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shared.cli.app import app
from shared.cli.coverage_map import sources_of
from shared.cli.report import (
    ReportInfo,
    evidence_view,
    highlight_unsupported,
    rank_value,
    render_report,
    statistics_table,
)
from shared.runs.inputs import Columns, read_rows
from shared.runs.results import read_results, score_keys
from shared.testing import stub_server

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "summaries.jsonl"
KEYS = ["score", "alignment", "coverage", "density"]


def row(row_id: str, **values: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": row_id,
        "status": "ok",
        "summary": f"summary {row_id}",
        "reason": "",
        "error": None,
        "signature": "judge:x|n:10",
        "evidence": {},
    }
    base.update({k: None for k in KEYS})
    base.update(values)
    return base


def test_statistics_golden() -> None:
    rows = [row("a", score=0.2), row("b", score=0.4), row("c", score=0.6), row("d", score=1.0)]
    (score, *rest) = statistics_table(rows, KEYS)
    assert score["n"] == 4
    assert score["mean"] == pytest.approx(0.55)
    assert score["std"] == pytest.approx(0.3415650255)  # sample standard deviation
    assert (score["min"], score["max"]) == (0.2, 1.0)
    assert score["median"] == pytest.approx(0.5)
    assert score["p25"] == pytest.approx(0.35) and score["p75"] == pytest.approx(0.7)
    assert all(entry["n"] == 0 and "mean" not in entry for entry in rest)


def test_worst_ranking_falls_back_to_mean_of_sub_scores() -> None:
    assert rank_value(row("a", score=0.3, density=0.9), KEYS) == 0.3
    assert rank_value(
        row("b", density=0.9, coherence=0.2, non_redundancy=0.6), KEYS
    ) == pytest.approx(0.4)
    assert rank_value(row("c"), KEYS) is None


def test_evidence_view_finds_claims_questions_vague_and_repeated() -> None:
    evidence = {
        "claims": [
            {"claim": "ok", "verdict": "supported", "reason": "", "quote": "q"},
            {"claim": "made up", "verdict": "not_in_source", "reason": "absent", "quote": ""},
            {"claim": "wrong", "verdict": "contradicted", "reason": "says 7", "quote": "7"},
        ],
        "questions": [
            {"question": "minor?", "importance": 1, "grade": 0, "counted": True},
            {"question": "major?", "importance": 5, "grade": 2, "counted": True},
            {"question": "fine?", "importance": 5, "grade": 5, "counted": True},
            {"question": "not in source?", "importance": 4, "grade": None, "counted": False},
        ],
        "dimension_evidence": {
            "specificity": {
                "score": 0.5,
                "reason": "1 of 2 sentences vague",
                "flagged": [{"index": 1, "sentence": "It discusses things.", "reason": "vague"}],
            },
            "non_redundancy": {
                "score": 0.7,
                "reason": "one point repeated",
                "repeated_points": [{"point": "reservoir level", "sentences": [1, 2]}],
            },
            "coherence": None,
        },
    }
    view = evidence_view(evidence)
    assert [c["claim"] for c in view["claims"]] == ["made up", "wrong"]
    assert [q["question"] for q in view["missed"]] == ["major?", "minor?"]  # importance first
    assert view["vague"] == evidence["dimension_evidence"]["specificity"]["flagged"]
    assert view["repeated"][0]["point"] == "reservoir level"
    assert ("specificity", "1 of 2 sentences vague") in view["notes"]


def test_report_escapes_text_and_is_self_contained() -> None:
    rows = [
        row("evil", score=0.1, summary="<script>alert('x')</script> & more"),
        row("fine", score=0.9),
        {**row("broken"), "status": "bad_input", "error": "line 3 is not valid JSON"},
    ]
    info = ReportInfo(judge="none", skipped=["specificity"], enable_hint="Use --base-url.")
    html = render_report(rows, KEYS, info)
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; more" in html
    assert not re.search(r"<script[^>]+src=", html)  # plotly.js is inline, no CDN
    assert not re.search(r"<link[^>]+href=", html)
    assert "Plotly" in html and len(html) > 1_000_000
    assert 'id="skipped-dimensions"' in html and "Use --base-url." in html
    assert html.index('data-id="evil"') < html.index('data-id="fine"')  # worst first
    assert "line 3 is not valid JSON" in html and 'id="failed-rows"' in html
    assert 'id="plot-score"' in html and 'id="plot-alignment"' not in html  # no values, no plot


def _grounding_evidence(*unsupported: tuple[str, str]) -> dict[str, Any]:
    items = [
        {"text": t, "label": "CARDINAL", "sentence": s, "supported": False, "how": "absent"}
        for t, s in unsupported
    ]
    return {
        "dimension_evidence": {"grounding": {"score": 0.5, "reason": "1/2", "unsupported": items}}
    }


def test_unsupported_items_are_highlighted_in_the_summary_and_escaped() -> None:
    summary = "Sales rose 19 percent to <b>$5</b>. In 2019 sales rose 19 percent again & fell."
    second = "In 2019 sales rose 19 percent again & fell."
    evidence = _grounding_evidence(("19 percent", second), ("<b>$5</b>", summary[:35]))
    view = evidence_view(evidence)
    assert [i["text"] for i in view["unsupported_items"]] == ["19 percent", "<b>$5</b>"]
    html = str(highlight_unsupported(summary, view["unsupported_items"]))
    # only the occurrence in the item's own sentence is marked; the user's markup is escaped
    assert html == (
        "Sales rose 19 percent to "
        '<mark class="unsupported">&lt;b&gt;$5&lt;/b&gt;</mark>. In 2019 sales rose '
        '<mark class="unsupported">19 percent</mark> again &amp; fell.'
    )
    # an item whose sentence is not found is marked wherever it occurs, case-blind
    loose = [{"text": "Mars", "sentence": "elsewhere"}]
    assert str(highlight_unsupported("mars and MARS", loose)) == (
        '<mark class="unsupported">mars</mark> and <mark class="unsupported">MARS</mark>'
    )
    assert str(highlight_unsupported("a < b", [])) == "a &lt; b"

    rows = [row("g", score=0.1, summary=summary, evidence=evidence), row("fine", score=0.9)]
    page = render_report(rows, KEYS, ReportInfo(judge="none"))
    assert '<mark class="unsupported">19 percent</mark>' in page
    assert 'class="evidence unsupported-items"' in page and "<b>$5</b>" not in page


def test_unscored_rows_still_show_their_dimensions() -> None:
    # the judge failed every row, but the dimensions that need no judge were computed
    rows = [
        {**row(f"u{i}", density=0.2 * i), "status": "unscored", "error": "judge call failed"}
        for i in range(1, 4)
    ]
    html = render_report(rows, KEYS, ReportInfo(judge="stub"))
    assert 'id="plot-density"' in html and 'id="plot-score"' not in html
    assert "nothing to plot" not in html
    density = next(r for r in statistics_table(rows, KEYS) if r["name"] == "density")
    assert density["n"] == 3


class _Elements(HTMLParser):
    """Every start tag with its classes and id, from the browser's serialised DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[tuple[str, set[str], str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.items.append((tag, set((a.get("class") or "").split()), a.get("id") or ""))

    def count(self, tag: str, *classes: str) -> int:
        return sum(t == tag and set(classes) <= c for t, c, _ in self.items)

    def ids(self) -> set[str]:
        return {i for _, _, i in self.items if i}


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    return None


def _chromium_run(tmp_path: Path, page: Path, *action: str) -> str:
    """Chromium's stdout for ``page`` after its scripts ran (``--dump-dom``, ``--screenshot``)."""
    return subprocess.run(
        [
            _chromium() or "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=20000",
            *action,
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout


needs_chromium = pytest.mark.skipif(
    _chromium() is None,
    reason="no chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)",
)


@needs_chromium
def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    out, report = tmp_path / "res.jsonl", tmp_path / "report.html"
    with stub_server() as url:
        result = CliRunner().invoke(
            app,
            [
                "score",
                str(EXAMPLES),
                "-o",
                str(out),
                "--report",
                str(report),
                "--base-url",
                url,
                "--model",
                "fake-judge",
                "--no-cache",
            ],
        )
    assert result.exit_code == 0, result.output
    rows = read_results(out)
    with_values = [k for k in score_keys() if any(r[k] is not None for r in rows)]
    assert {"score", "alignment", "coverage", "conciseness"} <= set(with_values)

    dom = _chromium_run(tmp_path, report, "--dump-dom")
    page = _Elements()
    page.feed(dom)
    # plotly ran: one drawn plot per dimension with values, plus the overview box plot
    assert page.count("div", "plot-container", "plotly") == len(with_values) + 1
    assert page.count("svg", "main-svg") >= len(with_values) + 1
    assert page.count("g", "trace", "bars") == len(with_values)
    assert page.count("g", "trace", "boxes") == len(with_values)
    assert {f"plot-{k}" for k in with_values} | {"plot-overview"} <= page.ids()
    # the tables are there
    assert {"run-facts", "stats-table", "worst", "failed-rows-none"} <= page.ids()
    assert page.count("div", "worst-summary") == len(rows)
    assert page.count("table", "unsupported-claims") >= 1
    assert page.count("table", "missed-questions") >= 1
    assert page.count("table", "vague-sentences") >= 1  # "The article discusses…" is flagged
    assert page.count("table", "repeated-points") >= 1  # the repetitive reservoir summary
    # the examples' three sources are mapped, each worst summary links to its source's map
    assert page.count("details", "coverage-map") == 3
    assert page.count("p", "cm-link") == len(rows)
    assert page.count("span", "cm-m") >= 1  # the vague summary misses most of its source
    stats_rows = re.search(r'<table id="stats-table">(.*?)</table>', dom, re.S)
    assert stats_rows is not None
    assert stats_rows.group(1).count("<tr>") == len(score_keys()) + 1  # header + one per key


def _weakest_second(weakest: str, failed: str, **unsupported: str) -> dict:
    """Grounding evidence of "The dog bit the postman." and ``weakest``, the second sentence
    least supported (its "3" not in the source)."""
    return {
        "score": 0.4,
        "reason": "least supported: sentence 2",
        "least_supported": 2,
        "sentences": [
            {"index": 1, "sentence": "The dog bit the postman.", "support": 0.9},
            {
                "index": 2,
                "sentence": weakest,
                "support": 0.2,
                "failed": [failed],
                "best_source": "The dog bit the postman on Monday.",
            },
        ],
        "unsupported": [
            {"text": "3", "label": "CARDINAL", "sentence": weakest, "supported": False}
            | unsupported
        ],
    }


def test_least_supported_sentence_is_highlighted_and_listed() -> None:
    summary = "The dog bit the postman. The postman won <b>3</b> medals."
    weakest = "The postman won <b>3</b> medals."
    evidence = {
        "dimension_evidence": {
            "grounding": _weakest_second(weakest, "names/numbers not in the source: '3'")
        }
    }
    view = evidence_view(evidence)
    assert view["least_supported"]["index"] == 2
    html = str(highlight_unsupported(summary, view["unsupported_items"], weakest))
    assert html == (
        "The dog bit the postman. "
        '<span class="least-supported" title="least supported sentence">The postman won '
        '&lt;b&gt;<mark class="unsupported">3</mark>&lt;/b&gt; medals.</span>'
    )
    # no version 2 evidence: nothing to name
    assert evidence_view(_grounding_evidence(("3", weakest)))["least_supported"] is None


ANIMALS = "otters herons lynxes badgers falcons martens beavers storks voles ibises".split()
PLACES = "quarry orchard harbour meadow chapel viaduct brewery mill ferry granary".split()


def forty_sentences() -> list[str]:
    """40 sentences that share few words (each names its own animal, place, person and count)."""
    names = [f"{a}{b}" for a in ("Bram", "Cole", "Dirk", "Egon", "Finn") for b in SUFFIXES]
    towns = [f"{b.title()}{a}" for b in SUFFIXES for a in ("ford", "ton", "by", "wold", "mere")]
    return [
        f"Warden {name} saw {i * 11 + 5} {ANIMALS[i % 10]} near the {PLACES[(i * 3) % 10]} of "
        f"{town} in {1900 + i * 3}."
        for i, (name, town) in enumerate(zip(names, towns, strict=True))
    ]


SUFFIXES = ("ley", "wick", "mond", "stad", "holm", "berg", "dorf", "vik")


def ledger(words: int = 100_000) -> str:
    """A chunked long source: ledger lines, a blank line every 20 sentences."""
    out: list[str] = []
    i = 0
    while sum(len(s.split()) for s in out) < words:
        out.append(
            f"In year {1900 + i} clerk {i % 97} filed {i * 7 % 991} claims for the river board. "
            f"The board paid {i % 13 + 2} gulden to {i * 3 % 97} farmers within {i % 9 + 1} days."
            + ("\n\n" if i % 10 == 9 else " ")
        )
        i += 1
    return "".join(out).strip()


def _colour_rows(png: Path, colour: tuple[int, int, int]) -> list[int]:
    """The pixel rows of the screenshot where ``colour`` fills a run of 8 pixels (a shaded
    background, not a glyph's edge)."""
    from PIL import Image  # sentence-transformers' dependency

    image = Image.open(png).convert("RGB")
    width, height = image.size
    pixels = image.load()
    rows = []
    for y in range(height):
        run = 0
        for x in range(width):
            run = run + 1 if pixels[x, y] == colour else 0
            if run == 8:
                rows.append(y)
                break
    return rows


@needs_chromium
def test_coverage_map_renders_for_a_short_and_a_chunked_long_source(tmp_path: Path) -> None:
    sentences = forty_sentences()
    long_source = ledger()
    assert len(sentences) == 40 and len(long_source.split()) >= 100_000
    inputs = tmp_path / "in.jsonl"
    lines = [
        {"id": "forty", "source": " ".join(sentences), "summary": f"{sentences[0]} {sentences[2]}"},
        {"id": "ledger", "source": long_source, "summary": long_source.split(". ")[0] + "."},
    ]
    inputs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out, report = tmp_path / "res.jsonl", tmp_path / "report.html"
    with stub_server() as url:
        judge = ["--base-url", url, "--model", "fake-judge", "--no-cache"]
        result = CliRunner().invoke(
            app, ["score", str(inputs), "-o", str(out), "--report", str(report), *judge]
        )
    assert result.exit_code == 0, result.output
    rows = {r["id"]: r for r in read_results(out)}
    assert "|long:" in rows["ledger"]["signature"]  # the long source was chunked
    assert "|long:" not in rows["forty"]["signature"]

    # size: the same run's report without the maps (what the report was before them)
    keys = score_keys()
    info = ReportInfo(judge="fake-judge")
    sources = sources_of(read_rows(inputs, Columns(), "jsonl"), list(rows.values()))
    assert set(sources) == {"forty", "ledger"}
    before = len(render_report(list(rows.values()), keys, info).encode())
    after = len(render_report(list(rows.values()), keys, info, sources=sources).encode())
    assert after / before <= 1.5
    assert after - before < len(long_source) / 20  # the long source is windowed, not copied
    assert abs(len(report.read_bytes()) - after) < 1_000  # score's report has the maps

    # the map in a browser: rebuilt without the worst summaries (the map nearer the top); the
    # input the run recorded is read again for the sources
    small = tmp_path / "map.html"
    rebuilt = CliRunner().invoke(app, ["report", str(out), "-o", str(small), "--worst", "0"])
    assert rebuilt.exit_code == 0, rebuilt.output
    dom = _chromium_run(tmp_path, small, "--dump-dom")
    page = _Elements()
    page.feed(dom)
    assert page.count("details", "coverage-map") == 2
    forty = dom[dom.index("Source of forty") :].split("</details>")[0]
    assert "40 sentences, 10 questions (10 placed)" in " ".join(forty[:300].split())
    # the questions are about the first ten sentences; the summary's two are the covered ones
    assert re.findall(r'<span class="cm-c" title="sentence (\d+)', forty) == ["1", "3"]
    # the short summary copies two sentences; the long one, the first of a ledger line
    assert page.count("span", "cm-c") >= 3
    assert page.count("span", "cm-m") >= 3
    assert page.count("span", "cm-gap") >= 2  # the long source is folded around its questions
    assert page.count("p", "cm-window") == 1  # and says so; the 40 sentences are shown whole
    png = tmp_path / "map.png"
    _chromium_run(
        tmp_path, small, "--hide-scrollbars", "--window-size=1200,5000", f"--screenshot={png}"
    )
    covered = _colour_rows(png, (0xBF, 0xE8, 0xBF))
    missed = _colour_rows(png, (0xFF, 0xB3, 0xB3))
    # both shades are drawn, below the legend: the maps' sentences, not only the legend's
    legend = min(covered)
    assert any(y > legend + 40 for y in covered) and any(y > legend + 40 for y in missed)


# --- the overview first, every mark labelled (issue 43, item 13) ------------------------------


def _overview_page() -> str:
    weakest = "The postman won 3 medals."
    marked = row(
        "marked",
        score=0.3,
        summary=f"The dog bit the postman. {weakest}",
        evidence={
            "questions": [
                {
                    "question": "Who was bitten?",
                    "importance": 3,
                    "reference_answer": "The postman was bitten.",
                    "summary_answer": "",
                    "grade": 4,
                    "counted": True,
                    "sentence": 1,
                }
            ],
            "dimension_evidence": {
                "grounding": _weakest_second(weakest, "'3'", how="not in the source")
            },
        },
    )
    plain = row("plain", score=0.9, evidence=marked["evidence"] | {"dimension_evidence": {}})
    sources = {"marked": "The dog bit the postman on Monday.", "plain": "The postman was bitten."}
    rows = [marked, plain, row("broken", status="bad_input", error="line 3 is not valid JSON")]
    return render_report(rows, KEYS, ReportInfo(judge="x", threshold=0.5), sources=sources)


def test_the_report_opens_with_an_overview_that_links_every_section_and_map() -> None:
    page = _overview_page()
    body = page[page.index("<body>") :]
    start = body.index('<section id="at-a-glance">')
    overview = body[start : body.index("</section>", start)]
    assert start < body.index('id="run-facts"')  # first, before the run's facts and every section
    assert re.findall(r"<h2[ >]", body[:start]) == []
    text = " ".join(re.sub(r"<[^>]+>", "", overview).split())
    assert "3 rows: 2 scored, 0 unscored, 1 bad input." in text
    assert "Pass mark 0.5: 1 pass, 1 FAIL, 0 inconclusive." in text
    assert "Means: score 0.600" in text  # the headline's mean over the scored rows
    targets = re.findall(r'href="#([\w-]+)"', overview)
    for section in ("run-facts", "statistics", "distributions", "worst-summaries"):
        assert section in targets
    assert {"coverage-maps", "rows-not-scored"} <= set(targets)
    maps = re.findall(r'<details class="coverage-map" id="([\w-]+)"', page)
    assert len(maps) == 2 and set(maps) <= set(targets)  # each source's map
    for target in targets:
        assert f'id="{target}"' in page, target


def test_every_mark_is_labelled_where_it_appears() -> None:
    page = _overview_page()
    parts = page.split('<div class="card worst-summary" data-id="')[1:]
    cards = {part.split('"', 1)[0]: part.split('<h2 id="coverage-maps">')[0] for part in parts}
    marked = cards["marked"]
    after_text = marked[marked.index('<div class="summary-text">') :]
    legend = re.search(r'</div>\s*<p class="mark-legend[^"]*">(.*?)</p>', after_text, re.S)
    assert legend, "no legend right under the summary text"
    words = " ".join(re.sub(r"<[^>]+>", "", legend.group(1)).split())
    assert "marked red: a name, number or date the source does not state" in words
    assert "wavy orange underline: the sentence whose items the source supports least" in words
    assert '<mark class="unsupported">' in legend.group(1)  # the mark itself, as the text shows it
    assert '<span class="least-supported">' in legend.group(1)
    assert "mark-legend" not in cards["plain"]  # no mark, no legend
    for one_map in re.findall(r'<details class="coverage-map".*?</details>', page, re.S):
        assert re.search(r'<p class="cm-legend[^"]*">Shaded: <span class="cm-c">', one_map)
