"""Non-redundancy: the judge's repeated points, anchored by a deterministic check.

Deterministic part (same input, same number, every run):

- near-duplicate sentences: a later sentence whose embedding has cosine >= 0.85 with an earlier
  one (MiniLM puts close paraphrases above ~0.85 and distinct sentences on one topic below);
  ``duplicate_share`` = such sentences / sentences;
- repeated n-grams: of the summary's word trigrams that are not all stop words, the share that
  repeat an earlier occurrence (``1 - distinct / total``), the classic repetition measure for
  abstractive summarisers.

``deterministic_redundancy = max(duplicate_share, ngram_repeat_share)`` (either signal alone is
repetition). Judged part: ``judge_redundancy`` = sentences that restate a point the judge names,
not counting the first sentence stating it / sentences.

``non_redundancy = 1 - (deterministic_redundancy + judge_redundancy) / 2``. The mean halves any
run-to-run swing of the judge (the article's GEval version was unstable) while still letting it
see paraphrases the embeddings miss. Without a judge the score is ``1 -
deterministic_redundancy`` (said in the reason and the signature's ``judge:none``); when the
judge call fails the score is None with the reason, and the deterministic part stays in the
evidence.

Without sentence embeddings for the summary's language (the default embedder is English-only),
the deterministic part is the repeated n-grams alone (``lexical_only`` says why, in the reason).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..prompts import StyleReview
from .evidence import NonRedundancyEvidence, SentencePair
from .spec import About, DimensionInput, declare_dimension

DUPLICATE_THRESHOLD = 0.85
NGRAM = 3
_CHUNK = 512


def near_duplicates(
    unit: np.ndarray,
    threshold: float = DUPLICATE_THRESHOLD,
    texts: Sequence[str] | None = None,
) -> list[SentencePair]:
    """One pair (earliest earlier sentence, later sentence) per sentence that has an earlier one
    with cosine >= threshold, sorted by the later sentence.

    At most one pair per sentence, never every pair: a summary of 5,000 repeated sentences has
    some 12 million duplicate pairs, and listing them was quadratic. ``texts`` (the sentences):
    sentences of the same text are compared once, so the similarity matrix is over the distinct
    sentences only (chunked, so a long text stays in memory)."""
    n = unit.shape[0]
    if n == 0:
        return []
    keys: Sequence[Any] = texts if texts is not None and len(texts) == n else range(n)
    first_of: dict[Any, int] = {}
    group = np.empty(n, dtype=np.int64)  # each sentence's distinct text
    for position, key in enumerate(keys):
        group[position] = first_of.setdefault(key, len(first_of))
    reps = np.fromiter(first_of.values(), dtype=np.int64, count=len(first_of))
    # first_of maps each text to its index among the distinct ones; its first position is:
    first_pos = np.empty(len(reps), dtype=np.int64)
    first_pos[group[::-1]] = np.arange(n - 1, -1, -1)
    distinct = unit[first_pos]
    earliest = np.empty(len(first_pos), dtype=np.int64)  # earliest position of a near-duplicate
    best_sim = np.empty(len(first_pos))
    for start in range(0, len(first_pos), _CHUNK):
        block = distinct[start : start + _CHUNK] @ distinct.T
        close = block >= threshold
        close[np.arange(block.shape[0]), np.arange(start, start + block.shape[0])] = True
        positions = np.where(close, first_pos[None, :], n)
        pick = positions.argmin(axis=1)
        earliest[start : start + block.shape[0]] = positions[np.arange(block.shape[0]), pick]
        sims = block[np.arange(block.shape[0]), pick]
        best_sim[start : start + block.shape[0]] = sims
    pairs = []
    for j in range(n):
        g = group[j]
        i = int(earliest[g])
        if i < j:
            sim = 1.0 if i == first_pos[g] else float(min(1.0, best_sim[g]))
            pairs.append(SentencePair(first=i + 1, second=j + 1, similarity=round(sim, 4)))
    return pairs


def repeated_ngrams(
    words: tuple[str, ...], stop: tuple[bool, ...], n: int = NGRAM
) -> tuple[float, list[str]]:
    """Share of repeated content n-grams and the repeated ones (most frequent first)."""
    grams = [
        " ".join(words[i : i + n]) for i in range(len(words) - n + 1) if not all(stop[i : i + n])
    ]
    if not grams:
        return 0.0, []
    counts = Counter(grams)
    share = 1 - len(counts) / len(grams)
    repeated = [g for g, c in counts.most_common() if c > 1]
    return share, repeated


def judge_redundancy(review: StyleReview, sentence_count: int) -> float:
    restating: set[int] = set()
    for point in review.repeated_points:
        numbers = sorted(set(point.sentences))
        restating.update(numbers[1:])
    return len(restating) / sentence_count


def score_non_redundancy(
    sentences: tuple[str, ...],
    unit: np.ndarray | None,
    words: tuple[str, ...],
    stop: tuple[bool, ...],
    review: StyleReview | None,
    judge_problem: str | None,
    *,
    lexical_only: str | None = None,
) -> NonRedundancyEvidence:
    """``review`` is the judge's answer; ``judge_problem`` says why there is none ("" = no judge
    was given, so the deterministic part is the score). ``unit`` is None only with
    ``lexical_only`` (why there are no embeddings): near-duplicates are then not checked."""
    n = len(sentences)
    if n == 0:
        return NonRedundancyEvidence(reason="not computed: the summary has no sentence")
    if unit is None and not lexical_only:
        raise ValueError("score_non_redundancy needs sentence embeddings or lexical_only")
    pairs = near_duplicates(unit, texts=sentences) if unit is not None else []
    duplicate_share = len({p.second for p in pairs}) / n
    ngram_share, grams = repeated_ngrams(words, stop)
    det = max(duplicate_share, ngram_share)
    evidence = {
        "sentence_count": n,
        "near_duplicates": pairs,
        "repeated_ngrams": grams[:20],
        "ngram_repeat_share": round(ngram_share, 4),
        "deterministic_redundancy": det,
        "deterministic_score": 1 - det,
    }
    det_text = (
        f"{len({p.second for p in pairs})}/{n} near-duplicate sentence(s), "
        f"{ngram_share:.0%} repeated trigrams"
        if lexical_only is None
        else f"{ngram_share:.0%} repeated trigrams; near-duplicates not checked: {lexical_only}"
    )
    if review is None:
        if judge_problem:
            return NonRedundancyEvidence(
                reason=f"not computed: {judge_problem} (deterministic part: {det_text})",
                **evidence,
            )
        return NonRedundancyEvidence(
            score=1 - det, reason=f"deterministic check only (no judge): {det_text}", **evidence
        )
    judged = judge_redundancy(review, n)
    return NonRedundancyEvidence(
        score=1 - (det + judged) / 2,
        reason=(
            f"1 - mean of deterministic redundancy {det:.2f} ({det_text}) and judged redundancy "
            f"{judged:.2f} ({len(review.repeated_points)} repeated point(s))"
        ),
        repeated_points=review.repeated_points,
        judge_redundancy=judged,
        **evidence,
    )


def _score(inp: DimensionInput) -> NonRedundancyEvidence:
    analysis, text, sentences = inp.analysis, inp.text, inp.analysis.sentences
    embed_problem = inp.problem or analysis.embed_error
    if text is not None and not embed_problem and analysis.embed_skipped:
        return score_non_redundancy(
            sentences,
            None,
            text.words,
            text.stop,
            inp.review,
            inp.judge_problem,
            lexical_only=analysis.embed_skipped,
        )
    if embed_problem or analysis.unit is None or text is None:
        return NonRedundancyEvidence(
            sentence_count=len(sentences), reason=f"not computed: {embed_problem}"
        )
    return score_non_redundancy(
        sentences, analysis.unit, text.words, text.stop, inp.review, inp.judge_problem
    )


SPEC = declare_dimension(
    About("non_redundancy", "judge_partly", "nonred", "1 - repetition", validity_rho=0.25),
    _score,
    reads=("spacy", "embeddings"),
    metric_doc="1 - unnecessary repetition in the summary.",
)
