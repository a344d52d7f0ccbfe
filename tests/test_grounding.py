"""grounding: golden cases for each normalisation, odd input, the examples' ordering, and the
source indexed once per batch (real spaCy model for the summaries; the source side is a regex
index)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from shared import ascore_summary, score_summaries, score_summary
from shared.dimensions import grounding as g
from shared.dimensions import support as sup
from shared.dimensions.grounding import (
    CheckItem,
    grounding_scores,
    index_source,
    score_grounding,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "summaries.jsonl"


def verdicts(source: str | list[str], *items: tuple[str, str]) -> dict[str, bool]:
    """Each item's text -> supported?, scored against ``source`` (items given as (text, label))."""
    ev = score_grounding([CheckItem(t, label, "s.") for t, label in items], index_source(source))
    out = {i.text: True for i in ev.supported}
    out.update({i.text: False for i in ev.unsupported})
    return out


def test_case_punctuation_possessives_plurals_and_partial_names() -> None:
    source = "Paul Merson criticised Andros Townsend, who plays for Tottenham Hotspur."
    got = verdicts(
        source,
        ("TOWNSEND'S", "PERSON"),
        ("townsend 's", "PERSON"),
        ("Andros", "PERSON"),
        ("Andros Townsend", "PERSON"),
        ("Tottenham Hotspurs", "ORG"),
        ("Paul Townsend", "PERSON"),  # two real words, from two different people
        ("Harry Kane", "PERSON"),
    )
    assert got == {
        "TOWNSEND'S": True,
        "townsend 's": True,
        "Andros": True,
        "Andros Townsend": True,
        "Tottenham Hotspurs": True,
        "Paul Townsend": False,
        "Harry Kane": False,
    }


def test_a_name_with_a_middle_word_in_the_source_is_supported() -> None:
    got = verdicts("President Barack Hussein Obama spoke.", ("Barack Obama", "PERSON"))
    assert got == {"Barack Obama": True}


def test_number_words_digits_and_scales() -> None:
    source = "The plan costs 1,500,000 euros. Two buses and 3.2bn passengers; twenty-five stops."
    got = verdicts(
        source,
        ("1.5 million euros", "MONEY"),
        ("\u20ac1.5m", "MONEY"),
        ("1.5 million dollars", "MONEY"),
        ("2", "CARDINAL"),
        ("two", "CARDINAL"),
        ("3", "CARDINAL"),
        ("3,200,000,000", "CARDINAL"),
        ("25", "CARDINAL"),
    )
    assert got == {
        "1.5 million euros": True,
        "\u20ac1.5m": True,
        "1.5 million dollars": False,  # the currency is part of the fact
        "2": True,
        "two": True,
        "3": False,
        "3,200,000,000": True,
        "25": True,
    }


def test_units_percentages_and_ordinals() -> None:
    source = "A 42-kilometre network; cycling's share is 6 per cent. He came on in the 83rd minute."
    got = verdicts(
        source,
        ("42 km", "QUANTITY"),
        ("42 kilometers", "QUANTITY"),
        ("42 miles", "QUANTITY"),
        ("6%", "PERCENT"),
        ("6 percent", "PERCENT"),
        ("7 percent", "PERCENT"),
        ("83rd", "ORDINAL"),
        ("eighty-third", "ORDINAL"),
        ("third", "ORDINAL"),
    )
    assert got == {
        "42 km": True,
        "42 kilometers": True,
        "42 miles": False,
        "6%": True,
        "6 percent": True,
        "7 percent": False,
        "83rd": True,
        "eighty-third": False,  # compound ordinal words are not parsed: unsupported, not wrong
        "third": False,
    }


def test_dates_in_different_formats_and_relative_dates_skipped() -> None:
    source = "On Tuesday, 15 March 2015, the council met."
    got = verdicts(
        source,
        ("March 15th, 2015", "DATE"),
        ("15/03/2015", "DATE"),
        ("Tue", "DATE"),
        ("Mar. 15", "DATE"),
        ("April 2015", "DATE"),
        ("Friday", "DATE"),
    )
    assert got == {
        "March 15th, 2015": True,
        "15/03/2015": True,
        "Tue": True,
        "Mar. 15": True,
        "April 2015": False,
        "Friday": False,
    }
    ev = score_grounding([CheckItem("last year", "DATE", "s.")], index_source(source))
    assert ev.score is None and "last year" in ev.reason and ev.skipped == ["last year"]


def test_acronyms_against_expansions_both_ways() -> None:
    assert verdicts("The European Union agreed.", ("EU", "ORG"), ("UN", "ORG")) == {
        "EU": True,
        "UN": False,
    }
    assert verdicts("The EU agreed.", ("European Union", "ORG")) == {"European Union": True}
    assert verdicts("The U.S. agreed.", ("US", "GPE"), ("U.S.", "GPE")) == {
        "US": True,
        "U.S.": True,
    }


def test_arithmetic_is_not_support_and_labels_do_not_matter() -> None:
    source = "Chelsea scored two goals in the first half and one more after the break."
    got = verdicts(source, ("three", "CARDINAL"), ("Chelsea", "GPE"))
    assert got == {"three": False, "Chelsea": True}  # Chelsea is an ORG in the source: counts


def test_score_evidence_and_where_in_a_list_of_strings_source() -> None:
    source = ["The council met in Harwick.", "It approved a 42-kilometre network."]
    items = [CheckItem("42 km", "QUANTITY", "It is 42 km."), CheckItem("60", "CARDINAL", "60.")]
    ev = score_grounding(items, index_source(source), prior=0.0, number_weight=1.0)
    assert (ev.score, ev.share, ev.item_count, ev.supported_count) == (0.5, 0.5, 2, 1)
    (good,) = ev.supported
    assert good.source_part == 1 and source[1][good.source_offset :].startswith("42")
    (bad,) = ev.unsupported
    assert bad.text == "60" and bad.sentence == "60." and bad.label == "CARDINAL"
    assert "'60' (CARDINAL)" in ev.reason
    # the shipped prior and weight: one unsupported number among four items
    four = [CheckItem("Harwick", "GPE", "s.")] * 3 + [CheckItem("60", "CARDINAL", "s.")]
    ev = score_grounding(four, index_source(source))
    assert ev.score == pytest.approx((3 + g.PRIOR) / (3 + g.NUMBER_WEIGHT + g.PRIOR))


def test_examples_hallucinated_scores_below_its_good_sibling() -> None:
    rows = [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()]
    by_id = {r["id"]: r for r in rows}
    ids = list(by_id)
    results = grounding_scores([(by_id[i]["source"], by_id[i]["summary"]) for i in ids])
    scores = dict(zip(ids, results, strict=True))
    pairs = [(i, i.replace("-hallucinated", "-good")) for i in ids if i.endswith("-hallucinated")]
    assert pairs
    for bad, good in pairs:
        assert scores[good].score is not None and scores[bad].score is not None
        assert scores[bad].score < scores[good].score, (bad, scores[bad].reason)
        assert scores[bad].unsupported, bad


def test_odd_input_gives_a_value_or_none_with_a_reason() -> None:
    source = "Andros Townsend scored 2 goals for England in Turin on Tuesday. \U0001f389"
    summaries = [
        "\U0001f389\U0001f389 great news \U0001f389",
        "\u6771\u4eac\u30672020\u5e74\u306b\u958b\u50ac\u3055\u308c\u305f\u3002",
        "ANDROS TOWNSEND SCORED 2 GOALS FOR ENGLAND ON TUESDAY.",
        "Townsend scored; see https://example.com/match/998877 and ticket A-77Z.",
        "",
        "   ",
        "Nothing specific happened.",
    ]
    results = grounding_scores([(source, s) for s in summaries])
    assert len(results) == len(summaries)
    for summary, ev in zip(summaries, results, strict=True):
        assert ev.score is not None or ev.reason.startswith("not computed"), summary
    assert results[2].score is not None and results[2].score > 0.5
    url = results[3]
    assert all("998877" not in i.text for i in url.unsupported + url.supported)
    assert results[4].score is None and "empty" in results[4].reason
    # sources that are odd too: emoji only, non-Latin, empty list
    for odd in ("\U0001f389", "\u6771\u4eac\u30672020\u5e74", [], ["", "\u00a0"]):
        (ev,) = grounding_scores([(odd, "Townsend scored 2 goals on Tuesday.")])
        assert ev.score is not None and ev.unsupported


def test_each_source_is_indexed_once_and_never_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    source = "Andros Townsend scored 2 goals for England in Turin on Tuesday."
    other = ["Paul Merson wrote a column.", "It ran on Sky Sports."]
    indexed: list[Any] = []
    real_index = g.index_source

    def counting_index(src: Any) -> g.SourceIndex:
        indexed.append(src)
        return real_index(src)

    piped: list[list[str]] = []
    real_load = g.load_pipeline

    class CountingNlp:
        def __init__(self, nlp: Any) -> None:
            self.nlp, self.max_length = nlp, nlp.max_length
            self.pipe_names = nlp.pipe_names

        def select_pipes(self, **kw: Any) -> Any:
            return self.nlp.select_pipes(**kw)

        def pipe(self, texts: Any, **kw: Any) -> Any:
            texts = list(texts)
            piped.append(texts)
            return self.nlp.pipe(texts, **kw)

    monkeypatch.setattr(g, "index_source", counting_index)
    monkeypatch.setattr(g, "load_pipeline", lambda name: CountingNlp(real_load(name)))
    pairs = [(source, f"Townsend scored {k} goals.") for k in range(20)]
    pairs += [(list(other), "Merson wrote for Sky Sports.")] * 3
    results = grounding_scores(pairs)
    assert len(results) == 23 and all(r.score is not None for r in results)
    assert indexed == [source, other]  # once per distinct source, a list source included
    assert len(piped[0]) == 23  # one pass over the summaries
    # after it, only the source sentences that summaries' sentences shortlisted, each once
    later = [t for batch in piped[1:] for t in batch]
    assert sorted(later) == sorted(set(later))
    assert set(later) <= {source, *other}


def test_long_source_is_indexed_without_spacy_and_found_at_the_end() -> None:
    filler = "The committee met again and discussed the same report at length. " * 20_000
    source = filler + "Finally Zorana Petrovic paid 7,250 dollars on 3 May 2021."
    (ev,) = grounding_scores([(source, "Zorana Petrovic paid $7,250 in May 2021.")])
    assert ev.items_score == 1.0 and ev.item_count >= 2 and not ev.unsupported
    assert all(i.source_offset and i.source_offset > len(filler) - 10 for i in ev.supported)
    # the sentence found its support at the end of the source, among 20,000 filler sentences
    (sentence,) = ev.sentences
    assert sentence.best_source is not None and "Petrovic" in sentence.best_source
    assert ev.score is not None and ev.score > 0.7  # a fully supported sentence (max about 0.85)


# -- through the public pipeline ------------------------------------------------------------


def test_pipeline_without_a_judge_ranks_hallucinated_examples_below_their_good_siblings() -> None:
    rows = [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()]
    results = score_summaries([(r["source"], r["summary"]) for r in rows], judge=None)
    by_id = {r["id"]: res for r, res in zip(rows, results, strict=True)}
    pairs = [(i, i.replace("-hallucinated", "-good")) for i in by_id if i.endswith("-hallucinated")]
    assert len(pairs) == 2
    for bad, good in pairs:
        assert by_id[good].grounding is not None and by_id[bad].grounding is not None
        assert by_id[bad].grounding < by_id[good].grounding, by_id[bad].reason
        evidence = by_id[bad].dimension_evidence.grounding
        assert evidence is not None and evidence.unsupported
        assert evidence.score == by_id[bad].grounding
        assert f"grounding {by_id[bad].grounding:.2f}" in by_id[bad].reason
        assert "|gnd:" in by_id[bad].signature
    # the parse's items are the ones grounding_scores reads (one spaCy parse serves both)
    direct = grounding_scores([(r["source"], r["summary"]) for r in rows])
    assert [r.grounding for r in results] == pytest.approx([d.score for d in direct], abs=1e-3)


def test_pipeline_indexes_each_source_once_per_batch_and_shares_the_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import shared.dimensions.batching as batching
    import shared.dimensions.compute as compute
    from shared.dimensions import nlp

    indexed: list[Any] = []
    real_index = g.index_source

    def counting_index(src: Any) -> g.SourceIndex:
        indexed.append(src)
        return real_index(src)

    monkeypatch.setattr(batching, "index_source", counting_index)
    monkeypatch.setattr(g, "index_source", counting_index)  # a single row's own index
    analysed: list[int] = []
    real_analyse = nlp.analyse_texts

    def counting_analyse(texts: Any, *args: Any, **kw: Any) -> Any:
        analysed.append(len(texts))
        return real_analyse(texts, *args, **kw)

    monkeypatch.setattr(compute, "analyse_texts", counting_analyse)
    source = "Andros Townsend scored 2 goals for England in Turin on Tuesday."
    other = ["Paul Merson wrote a column.", "It ran on Sky Sports."]
    pairs: list[tuple[Any, str]] = [(source, f"Townsend scored {k} goals.") for k in range(20)]
    pairs += [(other, "Merson wrote for Sky Sports.")] * 3
    results = score_summaries(pairs, judge=None, dimensions=["grounding"])
    assert indexed == [source, "\n\n".join(other)]  # a list source is joined, then indexed once
    assert analysed == [23]  # one parse of the summaries (sources: shortlisted sentences only)
    wrong = pytest.approx(g.PRIOR / (g.PRIOR + g.NUMBER_WEIGHT))  # one number, not the source's
    items = [r.dimension_evidence.grounding.items_score for r in results[:20]]
    assert items == [1.0 if k == 2 else wrong for k in range(20)]
    right = results[2].grounding
    assert all(r.grounding < right for k, r in enumerate(results[:20]) if k != 2)
    assert all(r.dimension_evidence.grounding.items_score == 1.0 for r in results[20:])

    # concurrent single calls (what Ragas and DeepEval make) share one index too
    indexed.clear()

    async def singles() -> list[Any]:
        return await asyncio.gather(
            *(ascore_summary(s, m, judge=None, dimensions=["grounding"]) for s, m in pairs[:20])
        )

    assert [r.grounding for r in asyncio.run(singles())] == [r.grounding for r in results[:20]]
    assert indexed == [source]


def test_grounding_alone_or_switched_off() -> None:
    source = "Andros Townsend scored 2 goals for England."
    alone = score_summary(source, "Townsend scored 3 goals.", judge=None, dimensions=["grounding"])
    assert alone.grounding is not None and alone.grounding < 1.0 and alone.density is None
    assert "|gnd:" in alone.signature and "|spacy:" in alone.signature
    off = score_summary(source, "Townsend scored 3 goals.", judge=None, dimensions=["density"])
    assert off.grounding is None and off.dimension_evidence.grounding is None
    assert "|gnd:" not in off.signature
    # no name or number: version 2 still judges the sentence (version 1 gave None)
    vague = score_summary(source, "It went well.", judge=None, dimensions=["grounding"])
    assert vague.grounding is not None and vague.dimension_evidence.grounding.item_count == 0
    assert (
        "least supported: sentence 1 'It went well.'" in vague.dimension_evidence.grounding.reason
    )
    empty = score_summary(source, "  ", judge=None, dimensions=["grounding"])
    assert empty.grounding is None and "empty" in empty.dimension_evidence.grounding.reason


def test_pipeline_indexes_a_long_source_off_the_event_loop() -> None:
    import shared.dimensions.batching as batching

    filler = "The committee met again and discussed the same report at length. " * 500
    source = filler + "Finally Zorana Petrovic paid 7,250 dollars on 3 May 2021."
    assert len(source) > batching.INLINE_INDEX_CHARS  # the worker-thread path
    summaries = ["Zorana Petrovic paid $7,250 in May 2021.", "Petrovic paid $9,000 in 2021."]
    good, bad = score_summaries([(source, s) for s in summaries], judge=None)
    assert good.dimension_evidence.grounding.items_score == 1.0
    assert bad.grounding is not None and good.grounding is not None
    assert bad.grounding < good.grounding
    assert [i.text for i in bad.dimension_evidence.grounding.unsupported] == ["9,000"]


# -- version 2: per-sentence support ---------------------------------------------------------

V2_SOURCE = (
    "The dog bit the postman on Monday morning. The minister did not resign after the vote. "
    "The committee approved the new budget after a long debate."
)


def _one(summary: str, source: str = V2_SOURCE) -> Any:
    (ev,) = grounding_scores([(source, summary)])
    return ev


def test_v2_scores_a_summary_with_no_name_or_number_and_names_its_weakest_sentence() -> None:
    ev = _one("The committee approved the budget. The committee praised the new stadium.")
    assert ev.version == 2 and ev.item_count == 0 and ev.score is not None
    first, second = ev.sentences
    assert first.support > second.support and ev.least_supported == 2
    assert first.best_source == "The committee approved the new budget after a long debate."
    assert "least supported: sentence 2 'The committee praised the new stadium.'" in ev.reason
    assert any("stadium" in f for f in second.failed)
    assert set(first.signals) == set(sup.SIGNALS)
    assert ev.score == pytest.approx(sup.combine([first.support, second.support]), abs=1e-3)


def test_v2_who_did_what_to_whom_and_negation() -> None:
    right, swapped = _one("The dog bit the postman."), _one("The postman bit the dog.")
    assert right.score > swapped.score
    assert right.sentences[0].signals["relations"] == 1.0
    assert swapped.sentences[0].signals["relations"] == 0.0
    assert any(f.startswith("roles differ") for f in swapped.sentences[0].failed)
    kept, flipped = _one("The minister did not resign."), _one("The minister resigned.")
    assert kept.score > flipped.score
    assert flipped.sentences[0].signals["negation"] == 1.0
    assert any("negation differs" in f and "resign" in f for f in flipped.sentences[0].failed)
    assert kept.sentences[0].signals["negation"] == 0.0


def test_v2_signature_names_the_version_and_its_constants() -> None:
    result = score_summary(V2_SOURCE, "The dog bit the postman.", judge=None)
    assert f"|gnd:v2/{sup.constants_id()}" in result.signature
    evidence = result.dimension_evidence.grounding
    assert evidence.version == 2 and evidence.sentences[0].index == 1


def test_source_sentences_are_cut_and_only_shortlisted_ones_are_embedded() -> None:
    words = " ".join(f"w{i}" for i in range(100))
    spans = sup.split_sentences(f"Short one. {words} Last.")
    pieces = [f"Short one. {words} Last."[a:b] for a, b in spans]
    assert pieces[0] == "Short one." and all(len(p.split()) <= sup.MAX_WORDS for p in pieces)

    class Counting:
        def __init__(self) -> None:
            self.texts: list[str] = []

        def embed(self, texts: Any) -> Any:
            import numpy as np

            self.texts += list(texts)
            return np.ones((len(texts), 4))

    filler = " ".join(f"Filler sentence number {i} says nothing." for i in range(2000))
    emb = Counting()
    (ev,) = grounding_scores(
        [(filler + " The dog bit the postman.", "The dog bit a postman.")], embedder=emb
    )
    assert ev.score is not None
    # the summary's sentence and at most SHORTLIST source sentences, not 2,001
    assert 1 < len(emb.texts) <= 1 + sup.SHORTLIST


TIED_STEMS = (
    "amber basalt cobalt dune ember fjord garnet harbor indigo jasper kelp lagoon marble nectar "
    "onyx pewter"
).split()
TIED_SOURCE = " ".join(f"The {w} report arrived on time." for w in TIED_STEMS)


def test_the_shortlist_breaks_ties_by_position() -> None:
    # sixteen sentences, each sharing one equally rare word with the summary sentence: the
    # shortlist keeps the first ones, not whichever a set of strings happened to visit first
    idx = sup.index_sentences(TIED_SOURCE)
    stems = {sup.stem(w) for w in TIED_STEMS}
    assert idx.shortlist(stems) == list(range(sup.SHORTLIST))


def test_the_shortlist_is_the_same_in_every_process() -> None:
    # string hashing is randomised per process; the similarity and relation signals read the
    # shortlisted sentences, so a tie decided by set order moved grounding between runs
    import os
    import subprocess
    import sys

    code = (
        "from shared.dimensions import support as sup\n"
        f"idx = sup.index_sentences({TIED_SOURCE!r})\n"
        f"print(idx.shortlist({{sup.stem(w) for w in {TIED_STEMS!r}}}))\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in (1, 2, 3, 4)
    }
    assert len(outputs) == 1, outputs
