"""Each text-quality dimension described once: its :class:`DimensionSpec`.

A dimension's module declares one spec with :func:`declare_dimension`: its :class:`About` row
(name, whether a judge fills it, its column and description: the :class:`SubScore` fields), its
score function (whose return annotation names its evidence model), what else it reads (a spaCy
parse, sentence embeddings), its options with their defaults, the evidence it reports when it
cannot be computed, and its part of the signature. :mod:`shared.dimensions.registry` registers
the specs in report order. Everything else is derived from the registered specs: the sub-score
list (:mod:`shared.core.subscores`), the ``DimensionEvidence`` and ``SummaryEvaluation``
fields, the dimension settings and the signature (:mod:`shared.dimensions.compute`), the
options' declaration and the CLI's flags (:mod:`shared.evaluation.options`,
:mod:`shared.cli.flags`), and both adapters' metrics.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from ..core.checks import Check
from ..core.subscores import (
    SUB_SCORES,
    Needs,
    SubScore,
    on_change,
    register_sub_score,
    sub_score,
    unregister_sub_score,
)
from .evidence import DIMENSIONS, DimensionEvidence, DimensionResult

if TYPE_CHECKING:
    from ..prompts import StyleReview
    from .compute import DimensionSettings, SummaryAnalysis
    from .items import SourceIndex
    from .nlp import TextAnalysis


@dataclass(frozen=True)
class DimensionOption:
    """One option of a dimension: a keyword of every entry point, a field of the options'
    declaration, a ``--flag`` of the CLI, a parameter of the adapters' metrics."""

    name: str
    default: Any
    check: Check
    """``check(name, value) -> value``, raising an error whose message starts with ``name``
    (:mod:`shared.core.checks`)."""
    help: str
    """One line of help (the CLI's flag shows it)."""
    annotation: Any = "Any"
    """The type the typed surfaces show (a string, as the options' annotations are)."""


@dataclass(frozen=True)
class DimensionInput:
    """What a score function reads for one summary."""

    settings: DimensionSettings
    source: str
    summary: str
    analysis: SummaryAnalysis
    review: StyleReview | None
    """The judge's style review (vague sentences, repeated points), if one answered."""
    judge_problem: str | None
    """"" when no judge was given, why the style call failed, or None (``review`` is there, or
    no call was needed)."""
    source_index: SourceIndex | None = None
    """Grounding's index of the source, when the caller shares one across its summaries."""

    @property
    def text(self) -> TextAnalysis | None:
        """The summary's spaCy analysis (None: no dimension asked for one)."""
        return self.analysis.text

    @property
    def problem(self) -> str | None:
        """Why the summary has no usable analysis (None: it has one)."""
        text = self.analysis.text
        if text is None:
            return "the summary was not analysed"
        return text.error or None


@dataclass(frozen=True, kw_only=True)
class DimensionSpec(SubScore):
    """A text-quality dimension, declared once in its own module (a :class:`SubScore` with
    ``dimension=True``, plus what computing and reporting it takes)."""

    dimension: bool = True
    evidence: type[DimensionResult]
    """Its evidence model (a :class:`~shared.dimensions.evidence.DimensionResult`): the
    ``dimension_evidence.<name>`` of a result."""
    score: Callable[[DimensionInput], DimensionResult]
    """Its evidence for one summary; never raises for odd text (None with the reason)."""
    options: tuple[DimensionOption, ...] = ()
    unavailable: Callable[[DimensionSettings, str, str], DimensionResult] | None = None
    """``unavailable(settings, source, reason)``: its evidence when it cannot be computed (an
    empty summary); default ``evidence(reason=reason)``."""
    signature: Callable[[DimensionSettings], str] | None = None
    """Its part of the result's signature (e.g. ``dens:0.15/0.05``), for what changes its value;
    None: it has none."""
    metric_doc: str = ""
    """The docstring of its DeepEval metric (``Summary<Name>Metric``); default the
    description."""

    def __post_init__(self) -> None:
        if not self.dimension:
            raise ValueError(f"a DimensionSpec is a dimension: {self.name!r}")

    def not_computed(
        self, settings: DimensionSettings, source: str, reason: str
    ) -> DimensionResult:
        """Its evidence with no value and ``reason``."""
        if self.unavailable is not None:
            return self.unavailable(settings, source, reason)
        return self.evidence(reason=reason)


@dataclass(frozen=True)
class About:
    """What a dimension is called and shown as: its sub-score row (the fields of
    :class:`SubScore`, in the order of the core's own rows), and its measured validity."""

    name: str
    needs: Needs
    """Whether a judge fills it: ``judge``, ``judge_partly`` or ``nothing``."""
    short: str
    """Its column in the CLI's table."""
    description: str
    validity_rho: float | None = None
    """Spearman rho with the human rating it tracks on SummEval (docs/VALIDITY.md)."""


Reads = Literal["spacy", "embeddings"]


class SpecRest(TypedDict, total=False):
    """The fields of :class:`DimensionSpec` a declaration gives as they are."""

    options: tuple[DimensionOption, ...]
    unavailable: Callable[[DimensionSettings, str, str], DimensionResult] | None
    signature: Callable[[DimensionSettings], str] | None
    metric_doc: str


def _returned_model(score: Callable[..., Any]) -> type[DimensionResult]:
    """The evidence model ``score`` is annotated to return (a string under postponed
    annotations, looked up where ``score`` was written)."""
    returns = inspect.signature(score).return_annotation
    model = score.__globals__.get(returns) if isinstance(returns, str) else returns
    if not (isinstance(model, type) and issubclass(model, DimensionResult)):
        raise TypeError(
            f"{score.__qualname__} must be annotated to return its evidence model, a "
            f"DimensionResult (got {returns!r})"
        )
    return model


def declare_dimension(
    about: About,
    score: Callable[[DimensionInput], DimensionResult],
    *,
    reads: tuple[Reads, ...] = (),
    **rest: Unpack[SpecRest],
) -> DimensionSpec:
    """A dimension's spec as its module declares it: ``about`` names it; ``score`` computes it,
    and the model its return annotation names is its evidence; ``reads`` is what it is computed
    from besides the text (``spacy``: the summary's parse; ``embeddings``: sentence embeddings).
    The rest are :class:`DimensionSpec`'s fields of the same names."""
    readable = typing.get_args(Reads)
    unknown = sorted(set(reads) - set(readable))
    if unknown:
        raise ValueError(
            f"{about.name!r} reads {', '.join(unknown)}; expected {', '.join(readable)}"
        )
    return DimensionSpec(
        **dataclasses.asdict(about),
        needs_spacy="spacy" in reads,
        needs_embeddings="embeddings" in reads,
        evidence=_returned_model(score),
        score=score,
        **rest,
    )


# ---------------------------------------------------------------------------------------------
# The registry: the dimensions are the core's sub-score list's dimension entries
# ---------------------------------------------------------------------------------------------


_RESERVED: set[str] = set()
"""Names no dimension's option may take (:func:`reserve_option_names`)."""


def reserve_option_names(names: Iterable[str]) -> None:
    """Keep ``names`` from the dimensions' options: the names the options' and the settings'
    classes use themselves (their own options, methods and properties), which a dimension's
    option of that name would silently take the place of, or break; a dimension registered
    before with such an option is an error here."""
    names = set(names)
    for spec in dimension_specs():
        _refuse_clash(spec, names)
    _RESERVED.update(names)


def _refuse_clash(spec: DimensionSpec, taken: set[str]) -> None:
    clash = sorted(taken & {o.name for o in spec.options})
    if clash:
        raise ValueError(f"{spec.name!r}: option(s) {', '.join(clash)} already declared")


def register_dimension(spec: DimensionSpec) -> DimensionSpec:
    """Register ``spec`` after the dimensions already registered (the report's order); its
    options must not share a name with another option, nor with a reserved name. Returns it."""
    _refuse_clash(spec, {o.name for o in dimension_options()} | _RESERVED)
    register_sub_score(spec)
    return spec


def unregister_dimension(name: str) -> DimensionSpec:
    """Take dimension ``name`` off the registry (what a test that registered one does)."""
    spec = dimension_spec(name)
    unregister_sub_score(name)
    return spec


def dimension_specs() -> tuple[DimensionSpec, ...]:
    """The registered specs, in report order."""
    return tuple(s for s in SUB_SCORES if isinstance(s, DimensionSpec))


def dimension_spec(name: str) -> DimensionSpec:
    """The spec of dimension ``name``; KeyError naming the dimensions otherwise."""
    try:
        entry = sub_score(name)
    except KeyError:
        entry = None
    if not isinstance(entry, DimensionSpec):
        raise KeyError(f"unknown dimension {name!r}; expected one of {', '.join(DIMENSIONS)}")
    return entry


def dimension_options() -> tuple[DimensionOption, ...]:
    """Every registered dimension's options, in report order."""
    return tuple(o for s in dimension_specs() for o in s.options)


# ---------------------------------------------------------------------------------------------
# Models with one field per dimension
# ---------------------------------------------------------------------------------------------

_OWN_FIELDS: dict[type[BaseModel], dict[str, FieldInfo]] = {}


def sync_fields(
    model: type[BaseModel], fields: Mapping[str, tuple[Any, Any]], after: str | None = None
) -> None:
    """Give ``model`` one field per entry of ``fields`` (name -> (annotation, default)) beside
    its own, placed after its own field ``after`` (None: first), and rebuild it. Called again
    with other ``fields``, it replaces those it added before."""
    own = _OWN_FIELDS.setdefault(model, dict(model.model_fields))
    names = list(own)
    at = 0 if after is None else names.index(after) + 1
    added = {name: FieldInfo.from_annotated_attribute(t, d) for name, (t, d) in fields.items()}
    for name in added:
        if name in own:
            raise ValueError(f"{model.__name__} already has a field {name!r}")
    ordered = {**dict(list(own.items())[:at]), **added, **dict(list(own.items())[at:])}
    model.model_fields.clear()
    model.model_fields.update(ordered)
    model.model_rebuild(force=True)


def score_fields() -> dict[str, tuple[Any, Any]]:
    """One ``float | None`` field per dimension (a result's scores)."""
    return {s.name: (float | None, None) for s in dimension_specs()}


def _sync_evidence() -> None:
    fields = {s.name: (s.evidence | None, None) for s in dimension_specs()}
    sync_fields(DimensionEvidence, fields)


on_change(_sync_evidence)


__all__ = [
    "DIMENSIONS",
    "About",
    "DimensionInput",
    "DimensionOption",
    "DimensionSpec",
    "declare_dimension",
    "dimension_options",
    "dimension_spec",
    "dimension_specs",
    "register_dimension",
    "reserve_option_names",
    "score_fields",
    "sync_fields",
    "unregister_dimension",
]
