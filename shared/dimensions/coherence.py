"""Local coherence: mean cosine similarity of the embeddings of sentences i and i+2.

This is the article's formula (skipping one sentence, so a summary is not rewarded merely for
adjacent sentences that restate each other). Defined cases:

- 3 or more sentences: mean over i of cos(e_i, e_{i+2}) (``gap`` 2);
- 2 sentences: cos(e_1, e_2), the only pair there is (``gap`` 1, said in the reason);
- 0 or 1 sentence: None with a reason (there is no pair to compare).

A negative mean (rare with MiniLM) is clipped to 0 so the score stays in [0, 1]. On SummEval this
formula does not track human coherence ratings (see docs/DIMENSIONS.md).
"""

from __future__ import annotations

import numpy as np

from .evidence import CoherenceEvidence


def score_coherence(sentences: tuple[str, ...], unit: np.ndarray) -> CoherenceEvidence:
    """``unit``: one unit-length embedding row per sentence."""
    n = len(sentences)
    if n <= 1:
        what = "no sentence" if n == 0 else "one sentence"
        return CoherenceEvidence(
            sentence_count=n, reason=f"not computed: {what}, so no sentence pair to compare"
        )
    gap = 2 if n >= 3 else 1
    sims = np.einsum("ij,ij->i", unit[:-gap], unit[gap:])
    sims = np.clip(sims, -1.0, 1.0)
    mean = float(sims.mean())
    rule = "sentences i and i+2" if gap == 2 else "the two sentences (fewer than 3)"
    return CoherenceEvidence(
        score=min(1.0, max(0.0, mean)),
        reason=f"mean cosine similarity of {rule}: {mean:.3f} over {len(sims)} pair(s)",
        sentence_count=n,
        gap=gap,
        similarities=[round(float(s), 4) for s in sims],
    )
