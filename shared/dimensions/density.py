"""Entity density, scored by closeness to the Chain-of-Density target.

``entity_density = spaCy entities / NLTK word tokens`` (Adams et al., 2023, "From Sparse to
Dense", §3: human-preferred summaries sit near 0.15 entities per token; GPT-4's densest steps
and human-written CNN/DM summaries bracket it). The paper gives no score formula. We use a
Gaussian of the distance to the target::

    score = exp(-((density - target) / tolerance) ** 2 / 2)

Why this shape: the paper's finding is two-sided (too sparse is vague, too dense is hard to read),
so the score peaks at the target and falls symmetrically; a smooth curve never flattens to 0, so
two very sparse summaries are still ordered; and ``tolerance`` reads as "one standard deviation":
a summary one tolerance away scores 0.61, two away 0.14. Default tolerance 0.05 (CoD's densest
and sparsest steps lie about ±0.05 around 0.15).
"""

from __future__ import annotations

import math

from .evidence import DensityEvidence, EntityMention
from .nlp import TextAnalysis

DEFAULT_TARGET = 0.15
DEFAULT_TOLERANCE = 0.05


def density_score(density: float, target: float, tolerance: float) -> float:
    """Closeness of ``density`` to ``target`` in (0, 1]; 1 exactly at the target."""
    return math.exp(-0.5 * ((density - target) / tolerance) ** 2)


def score_density(analysis: TextAnalysis, target: float, tolerance: float) -> DensityEvidence:
    """Entity density of one analysed summary, with the entities as evidence."""
    base = {"target": target, "tolerance": tolerance}
    if analysis.error:
        return DensityEvidence(reason=f"not computed: {analysis.error}", **base)
    if analysis.word_token_count == 0:
        return DensityEvidence(
            reason="not computed: the summary has no words (punctuation only)",
            token_count=analysis.token_count,
            **base,
        )
    entities = [EntityMention(text=t, label=label) for t, label in analysis.entities]
    density = len(entities) / analysis.token_count
    score = density_score(density, target, tolerance)
    return DensityEvidence(
        score=score,
        reason=(
            f"{len(entities)} entities / {analysis.token_count} tokens = {density:.3f} per token "
            f"(target {target:g} ± {tolerance:g})"
        ),
        entities=entities,
        entity_count=len(entities),
        token_count=analysis.token_count,
        entity_density=density,
        **base,
    )
