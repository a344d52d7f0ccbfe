"""Load the text models before the progress bar starts, saying so.

The spaCy pipeline and the MiniLM embedding model take seconds to load on the first row, which
would leave the bar at 0/N with no word of why. :func:`load_models` names what it is about to
load and loads it; a model that fails to load is left for the rows to report (each row then
carries the dimension's reason), so this step never stops a run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from ..dimensions.compute import DimensionSettings
from ..dimensions.embedding import MiniLMEmbedder
from ..dimensions.nlp import is_loaded


def models_to_load(settings: DimensionSettings) -> list[str]:
    """The models ``settings`` need that are not in memory yet, by name."""
    names = []
    if settings.needs_spacy and not is_loaded(settings.spacy_model):
        names.append(f"spaCy {settings.spacy_model}")
    if settings.needs_embeddings:
        embedder = settings.resolved_embedder()
        if isinstance(embedder, MiniLMEmbedder) and not embedder.loaded:
            names.append(embedder.model_id)
    return names


def load_models(settings: DimensionSettings, say: Callable[[str], object]) -> list[str]:
    """Load what :func:`models_to_load` lists, after telling ``say``; returns those names."""
    names = models_to_load(settings)
    if not names:
        return names
    say(f"Loading the text models ({', '.join(names)})…")
    with contextlib.suppress(Exception):  # the rows say what is missing, with the reason
        settings.check_available()
    if settings.needs_embeddings:
        embedder = settings.resolved_embedder()
        if isinstance(embedder, MiniLMEmbedder):
            with contextlib.suppress(Exception):
                embedder.load()
    return names
