"""The signature object: its text form round-trips, and resume compares run parts."""

from __future__ import annotations

from shared import ScoreOptions, signature
from shared.prompts import language_prompts_hash
from shared.signature import Signature
from shared.testing import FakeJudge


def test_the_text_form_round_trips_byte_for_byte() -> None:
    for text in (
        signature(FakeJudge(), ScoreOptions()),
        signature(None, ScoreOptions(samples=3, language="fr"), long=True),
        signature(FakeJudge(), ScoreOptions(), language="fr", source_language="de"),
    ):
        assert str(Signature.parse(text)) == text


def test_the_rows_language_is_the_rows_own_part() -> None:
    run = signature(FakeJudge(), ScoreOptions(n=3))
    head, tail = run.split("|dens:", 1)
    row = f"{head}|lang-prompts:{language_prompts_hash()}|lang:fr|dens:{tail}"
    parsed = Signature.parse(row)
    assert parsed.run == Signature.parse(run)
    assert str(parsed.row) == f"lang-prompts:{language_prompts_hash()}|lang:fr"
    stale = Signature.parse(row.replace(language_prompts_hash(), "00000000"))
    assert stale.run != Signature.parse(run)  # other language prompts: not the run's
