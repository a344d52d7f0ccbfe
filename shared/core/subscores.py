"""The one list of sub-scores: every number a :class:`~shared.SummaryEvaluation` reports.

Each entry says what the number needs (a judge always, a judge for part of it, or never), which
way is better, and its short column name. The result's ``sub_scores()``, the text-quality
dimension names, both adapters' metric sets, the CLI's columns and table, and the report all read
this list.

The core owns the list; the headline and its two parts are declared here, and each text-quality
dimension registers its entry from its own module (its
:class:`~shared.dimensions.spec.DimensionSpec` is a :class:`SubScore`;
:mod:`shared.dimensions.registry` registers them in report order). Every name below
(:data:`SUB_SCORES`, :data:`DIMENSION_NAMES`, ...) is a live view of the list: it reads the
entries at each use, so a dimension registered later is in it. How to add a dimension:
docs/ARCHITECTURE.md, "Add a dimension".

Dependency-free on purpose: everything else in the package may import it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence, Set
from dataclasses import dataclass
from typing import Any, Literal, overload

Needs = Literal["judge", "judge_partly", "nothing"]


@dataclass(frozen=True)
class SubScore:
    """One reported number: a float in [0, 1] or None (unscored, or not computed)."""

    name: str
    needs: Needs
    """``judge``: only a judge fills it; ``judge_partly``: a judge refines a deterministic part
    that is reported without one; ``nothing``: computed from the text alone."""
    short: str
    """Column name in the CLI's table."""
    dimension: bool
    """True for a text-quality dimension (reported beside the score, never part of it)."""
    higher_is_better: bool = True
    description: str = ""
    needs_spacy: bool = False
    """Computed from a spaCy parse of the summary (a dimension; grounding's source side needs
    none)."""
    needs_embeddings: bool = False
    """Computed with sentence embeddings (grounding version 2 compares each summary sentence's
    embedding with its source's)."""
    validity_rho: float | None = None
    """Spearman rho with the human rating it tracks on SummEval (docs/VALIDITY.md); None for a
    sub-score that does not track quality there (density and conciseness, or a judged one)."""

    @property
    def needs_judge(self) -> bool:
        """A judge fills it, fully or in part."""
        return self.needs != "nothing"

    @property
    def tracks_quality(self) -> bool:
        """Validated against human ratings: the offline ranking reads it."""
        return self.validity_rho is not None


HEADLINE = "score"
"""The headline sub-score: the F-beta (or min) of alignment and coverage."""

_ENTRIES: list[SubScore] = [
    SubScore("score", "judge", "score", False, description="F-beta of alignment and coverage"),
    SubScore("alignment", "judge", "align", False, description="share of claims supported"),
    SubScore("coverage", "judge", "cover", False, description="weighted share of points covered"),
]
"""The registered entries, headline first, then the dimensions in the order they registered."""

_LISTENERS: list[Callable[[], None]] = []


def register_sub_score(entry: SubScore) -> None:
    """Add ``entry`` at the end of the list (ValueError if its name is taken), then tell every
    listener (:func:`on_change`): the models with a field per sub-score add one."""
    if any(item.name == entry.name for item in _ENTRIES):
        raise ValueError(f"sub-score {entry.name!r} is already registered")
    if not entry.name.isidentifier():
        raise ValueError(f"a sub-score name must be an identifier, got {entry.name!r}")
    _ENTRIES.append(entry)
    _changed()


def unregister_sub_score(name: str) -> SubScore:
    """Take ``name``'s entry off the list (KeyError if it has none) and return it."""
    entry = sub_score(name)
    if not entry.dimension:
        raise ValueError(f"{name!r} is the headline or one of its parts; it cannot be removed")
    _ENTRIES.remove(entry)
    _changed()
    return entry


def on_change(listener: Callable[[], None]) -> None:
    """Call ``listener()`` after every registration or removal (after those listening first)."""
    _LISTENERS.append(listener)


def _changed() -> None:
    for listener in _LISTENERS:
        listener()


def sub_score(name: str) -> SubScore:
    """The entry for ``name``; KeyError naming the known ones otherwise."""
    for item in _ENTRIES:
        if item.name == name:
            return item
    known = ", ".join(item.name for item in _ENTRIES)
    raise KeyError(f"unknown sub-score {name!r}; expected one of {known}")


# ---------------------------------------------------------------------------------------------
# Live views: tuples and frozensets read from the list at each use
# ---------------------------------------------------------------------------------------------


class ListView(Sequence[Any]):
    """A tuple of the list, computed at each use: compares, hashes and prints as that tuple."""

    def __init__(self, select: Callable[[], tuple[Any, ...]]) -> None:
        self._select = select  # a module-level function, so the view pickles

    def _tuple(self) -> tuple[Any, ...]:
        return self._select()

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Any, ...]: ...
    def __getitem__(self, index: int | slice) -> Any:
        return self._tuple()[index]

    def __len__(self) -> int:
        return len(self._tuple())

    def __iter__(self) -> Iterator[Any]:
        return iter(self._tuple())

    def __contains__(self, value: object) -> bool:
        return value in self._tuple()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ListView):
            other = other._tuple()
        return isinstance(other, tuple) and self._tuple() == other

    def __hash__(self) -> int:
        return hash(self._tuple())

    def __add__(self, other: Iterable[Any]) -> tuple[Any, ...]:
        return self._tuple() + tuple(other)

    def __radd__(self, other: Iterable[Any]) -> tuple[Any, ...]:
        return tuple(other) + self._tuple()

    def __repr__(self) -> str:
        return repr(self._tuple())


class SetView(Set[str]):
    """A frozenset of names from the list, computed at each use."""

    def __init__(self, select: Callable[[], frozenset[str]]) -> None:
        self._select = select

    @classmethod
    def _from_iterable(cls, values: Iterable[str]) -> frozenset[str]:
        return frozenset(values)

    def __contains__(self, value: object) -> bool:
        return value in self._select()

    def __iter__(self) -> Iterator[str]:
        return iter(self._select())

    def __len__(self) -> int:
        return len(self._select())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Set) and self._select() == frozenset(other)

    def __hash__(self) -> int:
        return hash(self._select())

    def __repr__(self) -> str:
        return repr(self._select())


def _sub_scores() -> tuple[SubScore, ...]:
    return tuple(_ENTRIES)


def _names() -> tuple[str, ...]:
    return tuple(s.name for s in _ENTRIES)


def _dimension_names() -> tuple[str, ...]:
    return tuple(s.name for s in _ENTRIES if s.dimension)


def _judge_only() -> tuple[str, ...]:
    return tuple(s.name for s in _ENTRIES if s.needs == "judge")


def _no_llm() -> tuple[str, ...]:
    return tuple(s.name for s in _ENTRIES if s.needs == "nothing")


def _quality() -> tuple[str, ...]:
    ranked = sorted(_ENTRIES, key=lambda s: -(s.validity_rho or 0.0))
    return tuple(s.name for s in ranked if s.tracks_quality)


def _uses_judge() -> frozenset[str]:
    return frozenset(s.name for s in _ENTRIES if s.needs_judge)


def _judged_dimensions() -> frozenset[str]:
    return frozenset(s.name for s in _ENTRIES if s.dimension and s.needs_judge)


def _spacy_dimensions() -> frozenset[str]:
    return frozenset(s.name for s in _ENTRIES if s.needs_spacy)


def _embedding_dimensions() -> frozenset[str]:
    return frozenset(s.name for s in _ENTRIES if s.needs_embeddings)


SUB_SCORES: Sequence[SubScore] = ListView(_sub_scores)
"""Every entry, headline first, in report order."""

SUB_SCORE_NAMES: Sequence[str] = ListView(_names)
"""Every sub-score name, headline first, in report order."""

DIMENSION_NAMES: Sequence[str] = ListView(_dimension_names)
"""The text-quality dimensions, in report order (the default of the ``dimensions`` option)."""

JUDGE_ONLY: Sequence[str] = ListView(_judge_only)
"""What a run without a judge leaves empty."""

USES_JUDGE: Set[str] = SetView(_uses_judge)
"""What a judge call contributes to (fully or in part)."""

JUDGED_DIMENSIONS: Set[str] = SetView(_judged_dimensions)
"""The dimensions a judge contributes to (non_redundancy has a judged and a deterministic part;
without a judge only the latter runs)."""

SPACY_DIMENSIONS: Set[str] = SetView(_spacy_dimensions)
"""The dimensions that parse the summary with spaCy."""

EMBEDDING_DIMENSIONS: Set[str] = SetView(_embedding_dimensions)
"""The dimensions that embed sentences."""

QUALITY_DIMENSIONS: Sequence[str] = ListView(_quality)
"""The dimensions that track human ratings on SummEval, strongest first: what offline rows are
ranked by (the mean of those present)."""

NO_LLM_SUB_SCORES: Sequence[str] = ListView(_no_llm)
"""Sub-scores computed without any judge; their adapter metrics run without an LLM."""


__all__ = [
    "DIMENSION_NAMES",
    "EMBEDDING_DIMENSIONS",
    "HEADLINE",
    "JUDGED_DIMENSIONS",
    "JUDGE_ONLY",
    "NO_LLM_SUB_SCORES",
    "QUALITY_DIMENSIONS",
    "SPACY_DIMENSIONS",
    "SUB_SCORES",
    "SUB_SCORE_NAMES",
    "USES_JUDGE",
    "ListView",
    "SetView",
    "SubScore",
    "on_change",
    "register_sub_score",
    "sub_score",
    "unregister_sub_score",
]
