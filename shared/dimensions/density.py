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
from typing import TYPE_CHECKING

from ..core.checks import positive_number
from .evidence import DensityEvidence, EntityMention
from .nlp import TextAnalysis
from .spec import About, DimensionInput, DimensionOption, declare_dimension

if TYPE_CHECKING:
    from .compute import DimensionSettings

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


def _score(inp: DimensionInput) -> DensityEvidence:
    settings, text = inp.settings, inp.text
    no_entities = None if text is None else text.no_entities
    if text is not None and no_entities is None:
        return score_density(text, settings.density_target, settings.density_tolerance)
    why = inp.problem or f"density needs named entities: {no_entities}"
    return _unavailable(settings, inp.source, f"not computed: {why}")


def _unavailable(settings: DimensionSettings, source: str, reason: str) -> DensityEvidence:
    return DensityEvidence(
        reason=reason, target=settings.density_target, tolerance=settings.density_tolerance
    )


def _signature(settings: DimensionSettings) -> str:
    return f"dens:{settings.density_target:g}/{settings.density_tolerance:g}"


SPEC = declare_dimension(
    About("density", "nothing", "dens", "entity density near the target"),
    _score,
    reads=("spacy",),
    unavailable=_unavailable,
    options=(
        DimensionOption(
            "density_target",
            DEFAULT_TARGET,
            positive_number,
            "Entity density the density dimension aims at.",
            "float",
        ),
        DimensionOption(
            "density_tolerance",
            DEFAULT_TOLERANCE,
            positive_number,
            "How far from the target density still scores 1.",
            "float",
        ),
    ),
    signature=_signature,
    metric_doc="Closeness of the summary's entity density to the Chain-of-Density target.",
)
