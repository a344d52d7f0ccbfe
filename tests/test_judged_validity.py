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


def test_the_mix_is_fitted_on_the_other_articles_and_scored_on_the_held_out_one(
    script: ModuleType,
) -> None:
    humans = {"A": [1, 2, 3, 4, 5], "B": [5, 1, 4, 2, 3], "C": [2, 4, 1, 5, 3]}
    rows = {
        f"{a}/S{k}": {"article_id": a, **dict.fromkeys(script.RATINGS, float(h))}
        for a, hs in humans.items()
        for k, h in enumerate(hs)
    }
    agree = {i: r["consistency"] for i, r in rows.items()}
    oppose = {i: -10 * v for i, v in agree.items()}  # a mix agrees only where w > 10/11
    # the offline part agrees with the people, ours opposes them: every fold takes w = 1
    held, weights = script.cross_validated_mix(oppose, agree, rows)
    assert weights == [1.0, 1.0, 1.0]
    assert held == {r: pytest.approx(1.0) for r in script.RATINGS}
    # the other way round (agrees only where w < 1/11): w = 0, and an unscored row is left out
    oppose["A/S0"] = None
    held, weights = script.cross_validated_mix(agree, oppose, rows)
    assert weights == [0.0, 0.0, 0.0]
    assert held == {r: pytest.approx(1.0) for r in script.RATINGS}


def test_the_per_sentence_product_weighs_each_verdict_by_grounding_support(
    script: ModuleType,
) -> None:
    from shared.dimensions.evidence import DimensionEvidence, GroundingEvidence, SentenceSupport
    from shared.evaluation.result import ClaimEvidence, SummaryEvaluation

    def result(verdicts: list[str], support: list[float], coverage: float | None):
        grounding = GroundingEvidence(
            version=2,
            prior=0.0,
            sentences=[
                SentenceSupport(index=k + 1, sentence=f"s{k}", support=s)
                for k, s in enumerate(support)
            ],
        )
        return SummaryEvaluation(
            score=None,
            alignment=None,
            coverage=coverage,
            claims=[ClaimEvidence(claim=f"s{k}", verdict=v) for k, v in enumerate(verdicts)],
            dimension_evidence=DimensionEvidence(grounding=grounding),
        )

    # supported at 0.8 and 0.6, a flagged sentence counts 0 whatever its support
    found = script.sentence_product(
        result(["supported", "supported", "contradicted"], [0.8, 0.6, 1.0], 0.5)
    )
    alignment = (0.8 + 0.6 + 0.0) / 3
    assert found == pytest.approx((alignment, 2 * alignment * 0.5 / (alignment + 0.5)))
    assert script.sentence_product(result(["supported"], [0.9], None)) == (0.9, None)
    # sentences that do not pair up are not guessed at
    assert script.sentence_product(result(["supported"], [0.9, 0.1], 1.0)) == (None, None)
