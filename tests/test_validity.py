"""scripts/validity.py: the summary-level correlation, the grouped cross-validation, and the
judged path against the OpenAI-compatible stub server (a few rows; wiring, not numbers)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from types import ModuleType

import pytest

from shared.testing import stub_server
from tests.scripts import load_script


@pytest.fixture(scope="module")
def validity() -> ModuleType:
    return load_script("validity")


def rows_for(humans: dict[str, list[float]]) -> list[dict]:
    return [
        {"article_id": art, "coherence": h, "consistency": h, "fluency": h, "relevance": h}
        for art, hs in humans.items()
        for h in hs
    ]


def test_summary_level_is_the_mean_of_per_article_correlations(validity: ModuleType) -> None:
    rows = rows_for({"A": [1, 2, 3, 4], "B": [4, 3, 2, 1], "C": [2, 2, 2, 2]})
    # A: metric agrees perfectly; B: perfectly reversed; C: constant human rating (left out)
    values = [0.1, 0.2, 0.3, 0.4, 0.1, 0.2, 0.3, 0.4, 0.1, 0.2, 0.3, 0.4]
    rho, tau, n = validity.summary_level(rows, values, "coherence")
    assert n == 2 and rho == pytest.approx(0.0) and tau == pytest.approx(0.0)
    rho, tau, n = validity.summary_level(rows, values, "coherence", keep={"A"})
    assert (rho, tau, n) == (pytest.approx(1.0), pytest.approx(1.0), 1)
    # None and NaN values are dropped; under 3 values left, the article is left out
    holes = [0.1, None, math.nan, 0.4, *values[4:]]
    assert validity.summary_level(rows, holes, "coherence", keep={"A"})[2] == 0
    assert math.isnan(validity.summary_level(rows, [None] * 12, "coherence")[0])


def test_cross_validation_recovers_weights_that_explain_the_ratings(
    validity: ModuleType,
) -> None:
    """Ratings made from jumps + 2 * repeats: every fold picks repeat weight 2 and ranks the
    held-out articles perfectly."""
    rows, counts = [], []
    for a in range(10):
        for s in range(8):
            jumps, repeats = (s * 3 + a) % 5, (s * 7 + a) % 4
            rows.append({"article_id": f"A{a}", "coherence": -(jumps + 2 * repeats)})
            counts.append((jumps, repeats, 0))
    text = validity.cross_validate(rows, counts, seeds=(0, 1))
    chosen = re.findall(r"\| \(([\d.]+), ([\d.]+)\) \|", text)
    assert len(chosen) == 5 and all(float(r) == 2.0 for r, _ in chosen)
    assert "seed 0: test rho +1.000 ± 0.000" in text


def test_judged_path_against_the_stub_server(
    validity: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = (
        "Barack Obama visited Paris in 2015 to attend the climate conference. He met French "
        "President Francois Hollande at the Elysee Palace. The two leaders agreed on a plan."
    )
    summaries = [
        "Barack Obama visited Paris in 2015. He met Francois Hollande at the Elysee Palace.",
        "The article discusses a conference. Obama visited Paris. Obama visited Paris.",
        "Obama met Hollande. The two leaders agreed on a plan.",
        "A storm hit the coast. Shares fell.",
    ]
    data = tmp_path / "rows.jsonl"
    data.write_text(
        "\n".join(
            json.dumps(
                {
                    "article_id": art,
                    "summary_id": f"S{i}",
                    "article": source,
                    "summary": s,
                    **dict.fromkeys(validity.HUMAN, float(4 - i)),
                }
            )
            for art in ("A0", "A1")
            for i, s in enumerate(summaries)
        )
    )
    with stub_server() as url:
        validity.main(["--data", str(data), "--base-url", url, "--model", "stub-model", "--n", "2"])
        assert url.count > 0
        schemas = set(url.judge.calls)
    # both reply shapes ran on the one endpoint by default: the sentences path (the sentence
    # check and the pointed review) and the two-call path (claim check and summary review)
    assert {"SentenceChecks", "PointedReview", "CheckedClaims", "SummaryReview"} <= schemas
    assert not {"ClaimVerdicts", "SummaryAnswers"} & schemas  # no step path unless asked
    out = capsys.readouterr().out
    assert out.startswith("8 summaries, 2 articles")
    assert "rows unscored" not in out
    cell = r"([+-]\d\.\d{3}) / ([+-]\d\.\d{3}) \((\d+)\)"
    judged = [f"{name} [{path}]" for name in validity.JUDGED for path in ("sentences", "two-call")]
    for name in (
        *judged,
        "coherence (entity_grid, default)",
        "coherence (article formula)",
    ):
        line = next(ln for ln in out.splitlines() if ln.startswith(f"| {name} |"))
        assert line.endswith("| 0 |"), line  # every row has a value
        assert re.search(cell, line) or "n/a (0)" in line, line
    # the side-by-side table: one line per judged sub-score and rating, a rho per path
    side = [ln for ln in out.splitlines() if ln.startswith("| coverage | relevance |")]
    assert len(side) == 1
    assert re.fullmatch(r"\| coverage \| relevance \| (\S+) \| (\S+) \| \d \|", side[0]), side
    # the cost of each shape side by side: every row scored, calls and tokens counted
    cost = {}
    for path in ("sentences", "two-call"):
        line = next(ln for ln in out.splitlines() if ln.startswith(f"| {path} | "))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[1] == "8/8", line
        calls, prompt, completion = (int(cells[i].replace(",", "")) for i in (2, 3, 5))
        assert calls > 0 and prompt > 0 and completion > 0, line
        cost[path] = completion
        assert cells[6] == "0.0000", line  # a local server: $0
    assert out.index("| sentences | 8/8") < out.index("| two-call | 8/8")  # the default first
    assert "| sentences | 8/8" in out.split("cost (this run")[1]
    # the deterministic coherence is defined for all 8 rows and varies within each article
    coh = next(ln for ln in out.splitlines() if ln.startswith("| coherence (entity_grid"))
    assert re.search(cell, coh) and "(2)" in coh


def test_one_path_alone_priced(
    validity: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = "Barack Obama visited Paris in 2015. He met Francois Hollande at the Elysee Palace."
    summaries = ["Obama visited Paris in 2015.", "Obama met Hollande.", "A storm hit the coast."]
    data = tmp_path / "rows.jsonl"
    data.write_text(
        "\n".join(
            json.dumps(
                {"article_id": "A0", "article": source, "summary": s}
                | dict.fromkeys(validity.HUMAN, float(3 - i))
            )
            for i, s in enumerate(summaries)
        )
    )
    args = ["--data", str(data), "--model", "stub-model", "--n", "2", "--paths", "two-call"]
    with stub_server() as url:
        validity.main([*args, "--base-url", url, "--price-in", "1", "--price-out", "2"])
        schemas = set(url.judge.calls)
    assert "CheckedClaims" in schemas and "SentenceChecks" not in schemas
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("| two-call | "))
    assert float(line.split("|")[7]) > 0  # priced at the given prices
    assert "| sentences |" not in out and "[two-call]" not in out  # one path: plain names
    with pytest.raises(SystemExit):
        validity.main([*args, "--base-url", "http://127.0.0.1:9/v1", "--paths", "sentence"])


def test_base_url_needs_a_model(validity: ModuleType) -> None:
    with pytest.raises(SystemExit):
        validity.main(["--base-url", "http://127.0.0.1:9/v1"])


def test_grounding_cross_validation_recovers_the_rule_behind_the_ratings(
    validity: ModuleType,
) -> None:
    """Ratings made from the grounding formula with prior 1 and number weight 2: the chosen
    candidate ranks every held-out article perfectly; a summary without items stays None."""
    rows, counts = [], []
    for a in range(10):
        for s in range(8):
            c = ((s + a) % 4, (s * 3 + a) % 3, (s * 5) % 3, (s + 2 * a) % 2)
            rows.append({"article_id": f"A{a}"})
            counts.append(c)
        rows.append({"article_id": f"A{a}"})
        counts.append(None)
    values = validity.grounding_formula(counts, 1.0, 2.0)
    assert values[8] is None and values[0] is not None
    for row, value in zip(rows, values, strict=True):
        row["consistency"] = 3.0 if value is None else value
    text = validity.cross_validate_grounding(rows, counts)
    assert "seed 0: test rho +1.000 ± 0.000" in text, text
