"""Local coherence: counted coherence problems (default) or the article's embedding formula.

Default, ``formula="entity_grid"``: three kinds of problem that SummEval's annotators penalise
and that the literature ties to local coherence, counted from the spaCy parse already made for
the other dimensions (no extra model, no judge):

- **jumps**: adjacent sentences that share no entity or argument noun, the entity grid's NOCB
  transition (Barzilay & Lapata 2008; Karamanis et al. 2009 found the NOCB count a hard
  baseline to beat for ordering sentences);
- **repeated bigrams**: content word bigrams said more than once (each repeat after the first),
  the degenerate repetition of neural summarisers that readers see as disorganised text;
- **fragments**: sentences without any subject dependency (broken or run-together sentences).

Three more, read off the sentences' words (added after the first three; docs/VALIDITY.md):

- **an opening without a referent**: the first sentence starts with a pronoun or "the", so
  the reader meets a reference before anything was introduced ("the 37-year-old 's images
  include ...", "he said ...");
- **restarts**: a sentence starting with the same word as the one before ("sanchez has ...
  sanchez was ..."), the "heap of related information" SummEval's guidelines describe;
- **short sentences**: fewer than ``SHORT_WORDS`` words, broken or cut-off sentences that still
  have a subject.

``penalty = jumps + REPEAT_WEIGHT * repeated bigrams + FRAGMENT_WEIGHT * fragments +
OPENING_WEIGHT * opening + RESTART_WEIGHT * restarts + SHORT_WEIGHT * short sentences`` (in units of
one jump) and ``score = 0.5 ** (penalty / HALF_LIFE)``: no problem scores 1, every two jumps (or
four repeated bigrams) halve it. Counts, not rates: on SummEval a summary with more transitions
has more chances to jump and humans rate it lower; rates tracked the ratings less well
(docs/VALIDITY.md). One sentence has no transition but can still repeat itself or be a fragment,
so it gets a value; no sentence gets None.

``formula="article"``: the article's mean cosine of the embeddings of sentences i and i+2 (two
sentences: the pair; fewer: None; a negative mean clipped to 0). Its value is always in the
evidence as ``article_score``, whichever formula made the score, for parity with the article.
It does not track human coherence on SummEval (Spearman about 0.00). The value and the
similarities are rounded to ``ARTICLE_DIGITS`` decimals, as every similarity in the evidence is:
the embeddings' last bits differ between CPUs and between embedding batches.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from ..core.checks import one_of
from .evidence import CoherenceEvidence, EntityJump
from .nlp import TextAnalysis
from .spec import About, DimensionInput, DimensionOption, declare_dimension

if TYPE_CHECKING:
    from .compute import DimensionSettings, SummaryAnalysis

FORMULAS = ("entity_grid", "article")
VERSION_TAG = "/2"
"""Appended to the default formula's name in the signature (``coh:entity_grid/2``): its penalty
gained three counts (the article formula is unchanged)."""
"""Values of ``coherence_formula``; the first is the default."""

REPEAT_WEIGHT = 0.5
"""One repeated content bigram costs half a jump (chosen by 5-fold CV grouped by article on
SummEval dev from a small grid; docs/VALIDITY.md)."""
FRAGMENT_WEIGHT = 0.5
"""One sentence without a subject costs half a jump (chosen the same way; rare on SummEval)."""
OPENING_WEIGHT = 1.0
"""An opening without a referent costs a jump (chosen by the same CV, from 0, 0.5, 1, 2)."""
RESTART_WEIGHT = 1.0
"""A restart costs a jump (same CV, from 0, 0.5, 1)."""
SHORT_WEIGHT = 0.5
"""A short sentence costs half a jump (same CV, from 0, 0.5, 1)."""
SHORT_WORDS = 5
OPENING_WORDS = frozenset(
    {"the", "he", "she", "it", "they", "this", "these", "those", "his", "her", "its", "their"}
)
"""First words that refer back to something: "the" and pronouns (English; other languages'
summaries never match, so their opening costs nothing)."""
HALF_LIFE = 2.0
"""The penalty that halves the score. Only spreads the score over [0, 1]; ranks do not move."""
ARTICLE_DIGITS = 4
"""Decimals kept of the article's value (score and ``article_score``) and of each cosine in the
evidence. An embedding's last bits are not fixed: they depend on the CPU kernels torch and MKL
pick for the machine (AVX2, AVX-512, MKL's generic path on AMD) and on which sentences share
its ``embed`` batch (the padded length and the batch size change the matrix shapes), and that
company depends on timing where concurrent calls share an analyser (``SharedAnalyser``). The
thread count and the machine's load did not change them. The cosines move by about 1e-7
(measured on examples/summaries.jsonl across kernels and batch sizes); unrounded, the
article's mean differed from one machine to the next in its eighth decimal."""
BIGRAM = 2
_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")


def sentence_shape(sentences: tuple[str, ...]) -> tuple[bool, list[int], list[int]]:
    """(opening without a referent?, 1-based restarts, 1-based short sentences)."""
    firsts: list[str | None] = []
    short: list[int] = []
    for i, sentence in enumerate(sentences):
        words = _WORD.findall(sentence.lower())
        firsts.append(words[0] if words else None)
        if len(words) < SHORT_WORDS:
            short.append(i + 1)
    opening = bool(firsts) and firsts[0] in OPENING_WORDS
    restarts = [
        i + 1 for i in range(1, len(firsts)) if firsts[i] is not None and firsts[i] == firsts[i - 1]
    ]
    return opening, restarts, short


def repeated_bigrams(words: tuple[str, ...], stop: tuple[bool, ...]) -> tuple[int, list[str]]:
    """Repeats of content bigrams (occurrences after the first; not both words stop words) and
    the repeated bigrams, most frequent first."""
    grams = [
        " ".join(words[i : i + BIGRAM])
        for i in range(len(words) - BIGRAM + 1)
        if not all(stop[i : i + BIGRAM])
    ]
    counts = Counter(grams)
    return len(grams) - len(counts), [g for g, c in counts.most_common() if c > 1]


def article_coherence(
    unit: np.ndarray,
) -> tuple[float | None, int | None, list[float], str]:
    """The article's formula: (score or None, gap, similarities, reason), the score and the
    similarities rounded to :data:`ARTICLE_DIGITS` decimals."""
    mean, gap, sims, reason = _article(unit)
    return None if mean is None else round(mean, ARTICLE_DIGITS), gap, sims, reason


def _article(unit: np.ndarray) -> tuple[float | None, int | None, list[float], str]:
    """:func:`article_coherence` with the score unrounded (the reasons quote it to 3 decimals,
    as they always did)."""
    n = unit.shape[0]
    if n <= 1:
        what = "no sentence" if n == 0 else "one sentence"
        return None, None, [], f"{what}, so no sentence pair to compare"
    gap = 2 if n >= 3 else 1
    sims = np.clip(np.einsum("ij,ij->i", unit[:-gap], unit[gap:]), -1.0, 1.0)
    mean = float(sims.mean())
    rule = "sentences i and i+2" if gap == 2 else "the two sentences (fewer than 3)"
    reason = f"mean cosine similarity of {rule}: {mean:.3f} over {len(sims)} pair(s)"
    return min(1.0, max(0.0, mean)), gap, [round(float(s), ARTICLE_DIGITS) for s in sims], reason


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return round(float(np.clip(a @ b, -1.0, 1.0)), ARTICLE_DIGITS)


def score_coherence(
    text: TextAnalysis,
    unit: np.ndarray | None,
    formula: str = "entity_grid",
    embed_problem: str | None = None,
) -> CoherenceEvidence:
    """Coherence of one analysed summary.

    ``unit``: one unit-length embedding row per sentence, or None with ``embed_problem`` saying
    why (then the article's value is None; the default formula does not need embeddings).
    """
    if formula not in FORMULAS:
        raise ValueError(f"coherence_formula must be one of {FORMULAS}, got {formula!r}")
    sentences = text.sentences
    n = len(sentences)
    if n == 0:
        return CoherenceEvidence(
            formula=formula, reason="not computed: the summary has no sentence"
        )
    if unit is not None:
        mean, gap, sims, article_reason = _article(unit)
    else:
        mean, gap, sims = None, None, []
        article_reason = embed_problem or "no sentence embeddings"
    article = None if mean is None else round(mean, ARTICLE_DIGITS)
    repeats, grams = repeated_bigrams(text.words, text.stop)
    fragments = [i + 1 for i, has in enumerate(text.has_subject) if not has]
    jumps = []
    for i in range(n - 1):
        if not text.grid[i] & text.grid[i + 1]:
            sim = None if unit is None else _cosine(unit[i], unit[i + 1])
            jumps.append(EntityJump(first=i + 1, second=i + 2, similarity=sim))
    opening, restarts, short = sentence_shape(sentences)
    penalty = (
        len(jumps)
        + REPEAT_WEIGHT * repeats
        + FRAGMENT_WEIGHT * len(fragments)
        + OPENING_WEIGHT * opening
        + RESTART_WEIGHT * len(restarts)
        + SHORT_WEIGHT * len(short)
    )
    evidence = {
        "formula": formula,
        "sentence_count": n,
        "penalty": round(penalty, 4),
        "jumps": jumps,
        "repeated_bigrams": grams[:20],
        "repeated_bigram_count": repeats,
        "fragments": fragments,
        "opening": opening,
        "restarts": restarts,
        "short_sentences": short,
        "truncated": text.truncated,
        "article_score": article,
        "gap": gap,
        "similarities": sims,
    }
    if formula == "article":
        if article is None:
            return CoherenceEvidence(reason=f"not computed: {article_reason}", **evidence)
        return CoherenceEvidence(score=article, reason=article_reason, **evidence)
    score = 0.5 ** (penalty / HALF_LIFE)
    reason = (
        f"{len(jumps)} jump(s) between {n - 1} adjacent sentence pair(s) with no shared entity, "
        f"{repeats} repeated content bigram(s), {len(fragments)} sentence(s) without a subject, "
        f"{'an' if opening else 'no'} opening without a referent, {len(restarts)} restart(s), "
        f"{len(short)} short sentence(s): penalty {penalty:g}, score 0.5^(penalty/{HALF_LIFE:g})"
    )
    if mean is None:
        reason += f"; article formula not computed: {article_reason}"
    else:
        reason += f"; article formula {mean:.3f}"
    return CoherenceEvidence(score=score, reason=reason, **evidence)


def _score(inp: DimensionInput) -> CoherenceEvidence:
    analysis, text, formula = inp.analysis, inp.text, inp.settings.coherence_formula
    if text is None or inp.problem:
        return CoherenceEvidence(formula=formula, reason=f"not computed: {inp.problem}")
    unit = analysis.unit
    if text.no_parse:
        return _coherence_without_parse(text, unit, formula, analysis)
    # the default formula needs only the parse; an embedder failure leaves it defined
    return score_coherence(
        text,
        None if analysis.embed_error or unit is None else unit,
        formula,
        analysis.embed_error or analysis.embed_skipped,
    )


def _coherence_without_parse(
    text: TextAnalysis, unit: np.ndarray | None, formula: str, analysis: SummaryAnalysis
) -> CoherenceEvidence:
    """Coherence of a summary with no usable parse: the entity grid cannot be read, so the
    default formula is None with the reason; the article's formula needs only embeddings."""
    no_grid = f"the entity grid needs a dependency parse: {text.no_parse}"
    if unit is None:
        why = analysis.embed_error or analysis.embed_skipped or "no sentence embeddings"
        return CoherenceEvidence(
            formula=formula,
            sentence_count=len(text.sentences),
            reason=f"not computed: {no_grid}; article formula: {why}",
        )
    article, gap, sims, reason = article_coherence(unit)
    evidence = {
        "formula": formula,
        "sentence_count": len(text.sentences),
        "truncated": text.truncated,
        "article_score": article,
        "gap": gap,
        "similarities": sims,
    }
    if formula == "article" and article is not None:
        return CoherenceEvidence(score=article, reason=reason, **evidence)
    why = no_grid if formula != "article" else reason
    return CoherenceEvidence(reason=f"not computed: {why}", **evidence)


def _signature(settings: DimensionSettings) -> str:
    formula = settings.coherence_formula
    return f"coh:{formula}{VERSION_TAG if formula == 'entity_grid' else ''}"


SPEC = declare_dimension(
    About("coherence", "nothing", "coher", "local coherence", validity_rho=0.41),
    _score,
    reads=("spacy", "embeddings"),
    options=(
        DimensionOption(
            "coherence_formula",
            FORMULAS[0],
            one_of(*FORMULAS),
            "entity_grid (tracks human coherence on SummEval) or article (embedding cosine).",
            "str",
        ),
    ),
    signature=_signature,
    metric_doc=(
        "Local coherence, LLM-free: entity-grid jumps, repeated bigrams and subjectless "
        "fragments from the spaCy parse (docs/DIMENSIONS.md); "
        '``coherence_formula="article"`` gives the article\'s embedding formula instead.'
    ),
)
