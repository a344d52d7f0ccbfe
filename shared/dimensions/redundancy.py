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

import numpy as np

from ..prompts import StyleReview
from .evidence import NonRedundancyEvidence, SentencePair

DUPLICATE_THRESHOLD = 0.85
NGRAM = 3
_CHUNK = 512


def near_duplicates(unit: np.ndarray, threshold: float = DUPLICATE_THRESHOLD) -> list[SentencePair]:
    """Pairs (earlier, later) with cosine >= threshold; chunked so long texts stay in memory."""
    pairs: list[SentencePair] = []
    n = unit.shape[0]
    for start in range(0, n, _CHUNK):
        block = unit[start : start + _CHUNK] @ unit.T
        for row, j in enumerate(range(start, min(start + _CHUNK, n))):
            for i in np.nonzero(block[row, :j] >= threshold)[0]:
                sim = float(min(1.0, block[row, i]))
                pairs.append(SentencePair(first=int(i) + 1, second=j + 1, similarity=round(sim, 4)))
    return sorted(pairs, key=lambda p: (p.first, p.second))


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
    pairs = near_duplicates(unit) if unit is not None else []
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
