"""The HTML report: statistics, worst summaries with evidence, escaping, self-containment, and
a render in a real headless browser (Debian's ``chromium``) after plotly's JavaScript ran."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shared.cli.app import app
from shared.cli.report import (
    ReportInfo,
    evidence_view,
    highlight_unsupported,
    rank_value,
    render_report,
    statistics_table,
)
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


@pytest.mark.skipif(
    _chromium() is None,
    reason="no chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)",
)
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

    profile = tmp_path / "profile"
    dom = subprocess.run(
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
            f"--user-data-dir={profile}",
            "--virtual-time-budget=20000",
            "--dump-dom",
            report.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
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
    stats_rows = re.search(r'<table id="stats-table">(.*?)</table>', dom, re.S)
    assert stats_rows is not None
    assert stats_rows.group(1).count("<tr>") == len(score_keys()) + 1  # header + one per key


def test_least_supported_sentence_is_highlighted_and_listed() -> None:
    summary = "The dog bit the postman. The postman won <b>3</b> medals."
    weakest = "The postman won <b>3</b> medals."
    evidence = {
        "dimension_evidence": {
            "grounding": {
                "score": 0.4,
                "reason": "least supported: sentence 2",
                "least_supported": 2,
                "sentences": [
                    {"index": 1, "sentence": "The dog bit the postman.", "support": 0.9},
                    {
                        "index": 2,
                        "sentence": weakest,
                        "support": 0.2,
                        "failed": ["names/numbers not in the source: '3'"],
                        "best_source": "The dog bit the postman on Monday.",
                    },
                ],
                "unsupported": [
                    {"text": "3", "label": "CARDINAL", "sentence": weakest, "supported": False}
                ],
            }
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
