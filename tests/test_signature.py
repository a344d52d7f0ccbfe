"""The signature object: its text form round-trips, and resume compares run parts."""

from __future__ import annotations

from shared import ScoreOptions, signature
from shared.core.signature import Signature
from shared.prompts import language_prompts_hash
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


def test_a_chunked_row_resumes_under_a_fitted_budget_only_when_none_was_given() -> None:
    # not given, the budget is fitted to the judge server's window (known only once the run
    # asks the server), so a chunked row scored under a fitted budget is resumed; a budget the
    # user gave must match
    from shared.runs.runner import accepted_signatures, resumable

    judge = FakeJudge()
    fitted = signature(judge, ScoreOptions(context_budget=2048), long=True)
    assert "|budget:2048|" in fitted
    not_given = accepted_signatures(judge, ScoreOptions.from_kwargs({"n": 10}))
    assert resumable(fitted, not_given)
    assert resumable(signature(judge, ScoreOptions()), not_given)  # a row that fit
    given = accepted_signatures(judge, ScoreOptions.from_kwargs({"context_budget": 3000}))
    assert not resumable(fitted, given)
    assert resumable(fitted.replace("budget:2048", "budget:3000"), given)
    # anything else that differs still makes the row stale
    other = fitted.replace("|n:10|", "|n:5|")
    assert not resumable(other, not_given)
