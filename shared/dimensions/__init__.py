"""Text-quality dimensions reported beside the main score.

``density``, ``specificity``, ``non_redundancy``, ``coherence``, ``conciseness`` and
``grounding``: each a float in [0, 1] (higher is better) or None with a reason, with its
evidence. Definitions, formulas and their measured validity on SummEval: ``docs/DIMENSIONS.md``.
spaCy, NLTK and the embedding model are imported lazily, on first use.

Each dimension is described once, by the :class:`DimensionSpec` in its own module;
:mod:`.registry` registers them (docs/ARCHITECTURE.md, "Add a dimension").
"""

from ..core.subscores import (
    DIMENSION_NAMES,
    NO_LLM_SUB_SCORES,
    QUALITY_DIMENSIONS,
    SUB_SCORE_NAMES,
    SUB_SCORES,
)
from . import registry
from .compute import (
    DimensionSettings,
    SummaryAnalysis,
    add_embeddings,
    analyse_spacy,
    analyse_summaries,
    build_evidence,
    normalise_dimensions,
    unavailable_evidence,
)
from .density import DEFAULT_TARGET, DEFAULT_TOLERANCE, density_score
from .embedding import DEFAULT_EMBEDDING_MODEL, Embedder, MiniLMEmbedder, default_embedder
from .evidence import (
    DIMENSIONS,
    CoherenceEvidence,
    ConcisenessEvidence,
    DensityEvidence,
    DimensionEvidence,
    DimensionResult,
    EntityJump,
    EntityMention,
    FlaggedSentence,
    GroundingEvidence,
    GroundingItem,
    NonRedundancyEvidence,
    SentencePair,
    SpecificityEvidence,
)
from .nlp import DEFAULT_SPACY_MODEL, MissingSpacyModelError, load_pipeline
from .spec import (
    About,
    DimensionInput,
    DimensionOption,
    DimensionSpec,
    declare_dimension,
    dimension_options,
    dimension_spec,
    dimension_specs,
    register_dimension,
    unregister_dimension,
)

# the sub-score list's views are read from here, where importing registers the dimensions
__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_SPACY_MODEL",
    "DEFAULT_TARGET",
    "DEFAULT_TOLERANCE",
    "DIMENSIONS",
    "DIMENSION_NAMES",
    "NO_LLM_SUB_SCORES",
    "QUALITY_DIMENSIONS",
    "SUB_SCORES",
    "SUB_SCORE_NAMES",
    "About",
    "CoherenceEvidence",
    "ConcisenessEvidence",
    "DensityEvidence",
    "DimensionEvidence",
    "DimensionInput",
    "DimensionOption",
    "DimensionResult",
    "DimensionSettings",
    "DimensionSpec",
    "Embedder",
    "EntityJump",
    "EntityMention",
    "FlaggedSentence",
    "GroundingEvidence",
    "GroundingItem",
    "MiniLMEmbedder",
    "MissingSpacyModelError",
    "NonRedundancyEvidence",
    "SentencePair",
    "SpecificityEvidence",
    "SummaryAnalysis",
    "add_embeddings",
    "analyse_spacy",
    "analyse_summaries",
    "build_evidence",
    "declare_dimension",
    "default_embedder",
    "density_score",
    "dimension_options",
    "dimension_spec",
    "dimension_specs",
    "load_pipeline",
    "normalise_dimensions",
    "register_dimension",
    "registry",
    "unavailable_evidence",
    "unregister_dimension",
]
