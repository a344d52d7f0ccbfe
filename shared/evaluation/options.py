"""Every scoring option, declared once: its name, type, default, help and validation.

:class:`OptionFields` is the declaration. :class:`ScoreOptions` (what the pipeline reads) is
that declaration validated and frozen; :class:`ScoreOptionsKwargs` is its typed keyword form for
``**options: Unpack[ScoreOptionsKwargs]``, so IDEs and type checkers show the names. The entry
points, both adapters and the CLI take their option names and defaults from here, and
``tests/test_option_surfaces.py`` fails when a surface lacks an option or defaults it
differently.

Validation runs at the call, before any judge call: a bad value raises TypeError or ValueError
whose message starts with the option's name. "Not given" keeps the default: omit the keyword
(``ScoreOptions.from_kwargs``), or ``options.merged(**given)`` on top of existing options.

How to add an option ``foo``:

1. Add ``foo: T = option(DEFAULT, _check_foo, "one line of help")`` to :class:`OptionFields`
   (write ``_check_foo(name, value) -> value`` here if no existing check fits) and
   ``foo: T`` to :class:`ScoreOptionsKwargs`. A test fails if the two disagree.
2. Read ``options.foo`` where it acts (``shared/pipeline/run.py``, or the judge steps in
   ``shared/pipeline/``). If it changes the result, add it to
   :func:`shared.pipeline.compose.signature`. An option of one text-quality dimension is
   declared in that dimension's spec instead (a ``DimensionOption``; docs/ARCHITECTURE.md, "Add
   a dimension"): it joins :class:`OptionFields` and :class:`ScoreOptionsKwargs` between
   ``spacy_model`` and ``context_budget``, and the dimension reads it from its settings.
3. Surfaces follow from the declaration: Ragas inherits the field (``OptionFields`` is a base
   of its metric dataclass) and the collections metric takes ``**options``; DeepEval's
   constructor lists every option in its signature with the core's default
   (``deepeval_ext/_metrics.py`` builds it from :class:`OptionFields`); the CLI's ``--foo``
   flag is built from the field (``shared/cli/flags.py``: add a :class:`FlagForm` there only
   for an alias, a range or a text form of a list). ``tests/test_option_surfaces.py`` checks
   every surface; add a non-default example value for ``foo`` to its ``EXAMPLES`` table.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict, Unpack

from ..core.checks import Check, is_number, one_of
from ..core.language import check_language_code
from ..core.subscores import ListView
from ..dimensions import (
    DEFAULT_SPACY_MODEL,
    DIMENSIONS,
    DimensionOption,
    DimensionSettings,
    dimension_options,
    normalise_dimensions,
)
from ..dimensions.pipelines import check_spacy_model
from ..dimensions.spec import reserve_option_names
from ..judge.server import (  # the judge owns its defaults; re-exported
    DEFAULT_CONTEXT_BUDGET,
    DEFAULT_TIMEOUT,
    MIN_CONTEXT_BUDGET,
)
from .frozen import FrozenQuestions, check_questions_file

DEFAULT_N = 10
"""Ten questions: enough that one missed minor point moves coverage by a few points rather than
a fifth (DeepEval's default of 5), few enough that answers and grades for all of them still fit
in one short call each. The number of judge calls does not depend on ``n``."""

MAX_SAMPLES = 100
MAX_N = 100
"""Most questions generated per source: ``n=10**9`` asked the judge for a billion questions."""
"""Largest accepted ``samples``: each sample repeats every summary-dependent judge call."""

DEFAULT_CONCURRENCY = 64
"""Judge calls at once: enough for the rounds of 20 summaries scored together to go out at once
(first round: questions + 20 claims + 20 style calls = 41; second: 20 answers + 20 checks), as
DeepEval's 20 concurrent test cases do. At 32 the calls over the limit waited a whole round and
their replies landed on the last round's: measured 0.77x DeepEval's wall time, 0.75x at 64
(docs/PERFORMANCE.md). Lower it for rate-limited APIs."""


@dataclass(frozen=True)
class RunSettings:
    """How a run over many rows goes, beside the options that change a score: they are in no
    signature and no cache key. Declared once here; the CLI's flags, the judge client, the bench
    and the report take their defaults from this class."""

    timeout: float = DEFAULT_TIMEOUT
    """Seconds one judge call may take (raised to fit a slow server's speed when not given)."""
    threshold: float | None = None
    """Pass mark of the table and report (None: no pass/fail column)."""
    fail_under: float | None = None
    """Pass mark whose verdicts set the exit status (it is then the table's and report's too)."""
    inconclusive: str | None = None
    """With ``fail_under``: what an inconclusive verdict counts as, ``pass`` or ``fail`` (None:
    its own exit status)."""
    flip_threshold: float = 0.5
    """With samples k > 1: pass mark for the share of rows that flip."""
    actors: int = 2
    """Scoring actors of the Ray engine."""
    concurrency: int = DEFAULT_CONCURRENCY
    """Rows scored at once, and judge calls in flight at most."""


RUN_DEFAULTS = RunSettings()


JUDGE_PATHS = ("sentences", "two-call", "steps")
DEFAULT_JUDGE_PATH = "sentences"
"""How the judge is asked (docs/DESIGN.md, "How the judge is asked"). ``sentences`` (the
default): one call per source (weighted questions with the source's answers) and two per
summary, replies that point instead of paraphrasing: each summary sentence, split offline and
numbered, judged against the full source (``supported`` or a FineSurE error category, with a
span, quote and reason only when unsupported), and the questions graded by pointing at the
summary sentence that answers them, with the style review of the same sentences. The claims
paths: ``two-call`` (the summary's atomic claims extracted and checked in one reply; the
questions answered from the summary in writing and graded) and ``steps`` (extraction,
verification, answers and grades as separate calls, three dependent rounds). Every
source-carrying prompt begins with the same bytes so a provider's prefix cache serves them. The
metric definitions are the same (alignment: the share of supported sentences, or of supported
claims); the signature names the path."""

MAX_BETA = 1e100
"""Largest accepted ``beta``: beyond about 1e154 its square overflows and F-beta would be NaN;
long before that F-beta equals coverage to every printed digit."""


@dataclass(frozen=True)
class UserQuestion:
    """A question supplied by the user; only its reference answer is generated."""

    question: str
    importance: int = 3


# ---------------------------------------------------------------------------------------------
# Checks: each takes (option name, value) and returns the normalised value or raises an error
# whose message starts with the option's name.
# ---------------------------------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_at_least(low: int, unit: str = "", type_error: type[Exception] = TypeError) -> Check:
    def check(name: str, value: Any) -> int:
        if not _is_int(value):
            raise type_error(f"{name} must be an integer >= {low}{unit}, got {value!r}")
        if value < low:
            raise ValueError(f"{name} must be an integer >= {low}{unit}, got {value!r}")
        return value

    return check


def _check_n(name: str, value: Any) -> int:
    if not _is_int(value) or not 1 <= value <= MAX_N:
        raise ValueError(f"{name} must be an integer from 1 to {MAX_N}, got {value!r}")
    return value


def _check_samples(name: str, value: Any) -> int:
    if not _is_int(value) or not 1 <= value <= MAX_SAMPLES:
        raise ValueError(f"{name} must be an integer from 1 to {MAX_SAMPLES}, got {value!r}")
    return value


def _check_beta(name: str, value: Any) -> float:
    if not (is_number(value) and math.isfinite(value) and 0 < value <= MAX_BETA):
        raise ValueError(
            f"{name} must be a positive finite number (at most {MAX_BETA:g}), got {value!r}"
        )
    return value


def _check_cache(name: str, value: Any) -> Any:
    if isinstance(value, bool | str | os.PathLike):
        return value
    if callable(getattr(value, "get", None)) and callable(getattr(value, "put", None)):
        return value  # a CacheStore
    raise TypeError(
        f"{name} must be True, False, a path to a SQLite file, or a store with get/put; "
        f"got {value!r}"
    )


def _importance(name: str, value: object, i: int) -> int:
    """A question's importance as an int 1-5 (3.0 from JSON is fine; inf, 2.5, "high" are not:
    1e400 used to end in an OverflowError that crashed the CLI with no results)."""
    integral = isinstance(value, int) or (
        isinstance(value, float) and math.isfinite(value) and value.is_integer()
    )
    if isinstance(value, bool) or not integral:
        raise ValueError(f"{name}[{i}] importance must be an integer 1-5, got {value!r}")
    if not 1 <= value <= 5:  # type: ignore[operator]
        raise ValueError(f"{name}[{i}] importance must be 1-5, got {value!r}")
    return int(value)  # type: ignore[arg-type]


def _check_questions(name: str, value: Any) -> tuple[UserQuestion, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise TypeError(f"{name} must be a list of questions, not one string")
    if not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of questions, not {type(value).__name__}")
    out: list[UserQuestion] = []
    for i, q in enumerate(value):
        if isinstance(q, UserQuestion):
            item = q
        elif isinstance(q, str):
            item = UserQuestion(q)
        elif isinstance(q, dict) and isinstance(q.get("question"), str):
            item = UserQuestion(q["question"], _importance(name, q.get("importance", 3), i))
        else:
            raise TypeError(f"{name}[{i}] must be a string or {{'question', 'importance'}}")
        if not item.question.strip():
            raise ValueError(f"{name}[{i}] is empty")
        if not 1 <= item.importance <= 5:
            raise ValueError(f"{name}[{i}] importance must be 1-5, got {item.importance}")
        out.append(item)
    if not out:
        raise ValueError(f"{name} is empty; pass None to generate questions from the source")
    return tuple(out)


def _check_dimensions(name: str, value: Any) -> tuple[str, ...]:
    return normalise_dimensions(value)  # None = all, [] = none; errors name the dimensions


def _check_embedder(name: str, value: Any) -> Any:
    if value is not None and not callable(getattr(value, "embed", None)):
        raise TypeError(f"{name} must have embed(texts) -> vectors; got {value!r}")
    return value


def option(default: Any, check: Check, help: str, *, compare: bool = True) -> Any:
    """A field of :class:`OptionFields`: its default, its check and one line of help."""
    return field(default=default, compare=compare, metadata={"check": check, "help": help})


# ---------------------------------------------------------------------------------------------
# The declaration
# ---------------------------------------------------------------------------------------------


@dataclass
class _RunOptionFields:
    """The options before the dimensions' own (a base of :class:`OptionFields`)."""

    n: int = option(DEFAULT_N, _check_n, "Questions generated per source.")
    questions: tuple[UserQuestion, ...] | None = option(
        None, _check_questions, "Your own questions (strings or {question, importance})."
    )
    questions_file: FrozenQuestions | None = option(
        None,
        check_questions_file,
        "Frozen questions (a file of `summary-eval questions`, or freeze_questions()): each "
        "source whose text they were frozen for uses them; the others' are generated.",
    )
    beta: float = option(1.0, _check_beta, "F-beta weight of coverage over alignment.")
    combine: Literal["fbeta", "min"] = option(
        "fbeta", one_of("fbeta", "min"), "fbeta or min (DeepEval's rule)."
    )
    retries: int = option(2, _int_at_least(0), "Retries of an invalid judge reply.")
    cache: Any = option(
        True,
        _check_cache,
        "Judge cache: True (memory), False, a SQLite path, or a store.",
        compare=False,
    )
    concurrency: int = option(
        DEFAULT_CONCURRENCY, _int_at_least(1), "Judge calls in flight at once per judge."
    )
    dimensions: tuple[str, ...] = option(
        DIMENSIONS, _check_dimensions, "Text-quality dimensions to compute (empty = none)."
    )
    embedder: Any = option(
        None,
        _check_embedder,
        "An object with embed(texts) -> vectors; None = all-MiniLM-L6-v2.",
        compare=False,
    )
    spacy_model: str | Mapping[str, str] = option(
        DEFAULT_SPACY_MODEL,
        check_spacy_model,
        "spaCy pipeline for English, or {language: pipeline} (e.g. {'de': 'de_core_news_sm'}).",
    )


def _field_of(o: DimensionOption) -> Any:
    """A dimension's option as a field of the declaration."""
    return option(o.default, o.check, o.help)


_DimensionOptionFields = dataclasses.make_dataclass(
    "_DimensionOptionFields",
    [(o.name, o.annotation, _field_of(o)) for o in dimension_options()],
    bases=(_RunOptionFields,),
)
"""Each registered dimension's options (its spec's ``options``), in report order."""


@dataclass
class OptionFields(_DimensionOptionFields):  # type: ignore[misc,valid-type]
    """The options of :func:`shared.ascore_summary`, as dataclass fields with their defaults:
    the run's (``n`` ... ``spacy_model``), each dimension's own (declared in its spec:
    ``density_target``, ``density_tolerance``, ``coherence_formula``), then the judge's path
    and budget (``context_budget`` ... ``judge_path``).

    A base class for any surface that needs them as fields (the Ragas metric inherits it);
    validation happens in :class:`ScoreOptions`.
    """

    context_budget: int = option(
        DEFAULT_CONTEXT_BUDGET,
        _int_at_least(MIN_CONTEXT_BUDGET, " (estimated tokens)", ValueError),
        "Largest prompt in estimated tokens; longer sources are chunked.",
    )
    samples: int = option(
        1,
        _check_samples,
        "Independent judge samples per row (k > 1: mean and spread over k scorings).",
    )
    language: str | None = option(
        None,
        check_language_code,
        "Language code of every row (e.g. 'fr'); None detects each row's language.",
    )
    judge_path: Literal["sentences", "two-call", "steps"] = option(
        DEFAULT_JUDGE_PATH,
        one_of(*JUDGE_PATHS),
        "sentences: the judge points at numbered summary sentences (verdicts with error types, "
        "coverage by pointing); two-call: atomic claims written out, one call per source and two "
        "per summary; steps: the step-by-step calls.",
    )


class _RunKwargs(TypedDict, total=False):
    n: int
    questions: Iterable[str | dict[str, Any] | UserQuestion] | None
    questions_file: str | Path | FrozenQuestions | None
    beta: float
    combine: Literal["fbeta", "min"]
    retries: int
    cache: bool | str | Path | Any
    concurrency: int
    dimensions: Iterable[str]
    embedder: Any
    spacy_model: str | Mapping[str, str]


_DimensionKwargs = TypedDict(  # type: ignore[misc]
    "_DimensionKwargs", {o.name: o.annotation for o in dimension_options()}, total=False
)


class ScoreOptionsKwargs(_RunKwargs, _DimensionKwargs, total=False):  # type: ignore[misc]
    """The keyword form of :class:`OptionFields` (``**options: Unpack[ScoreOptionsKwargs]``)."""

    context_budget: int
    samples: int
    language: str | None
    judge_path: Literal["sentences", "two-call", "steps"]


def option_fields() -> tuple[dataclasses.Field[Any], ...]:
    """Every option's field: :class:`OptionFields`'s, then the options of any dimension
    registered after it was made (a dimension a test declares)."""
    own = dataclasses.fields(OptionFields)
    names = {f.name for f in own}
    return own + tuple(_late_field(o) for o in dimension_options() if o.name not in names)


def _late_field(o: DimensionOption) -> dataclasses.Field[Any]:
    made = _field_of(o)
    made.name, made.type = o.name, o.annotation
    return made  # type: ignore[no-any-return]


def _option_names() -> tuple[str, ...]:
    return tuple(f.name for f in option_fields())


OPTION_NAMES: tuple[str, ...] = ListView(_option_names)  # type: ignore[assignment]
"""Every option, in declaration order (a live view: a dimension registered later adds its
options)."""


@dataclass(eq=False)
class ScoreOptions(OptionFields):
    """Validated, immutable options of one scoring call (hashable: usable as a cache key).

    Build it with keywords (each checked, with an error naming the option) or from a dict with
    :meth:`from_kwargs`; an unknown name is refused. :attr:`given` remembers which options the
    caller set: "not given" is a choice the core acts on (``context_budget`` not given is fitted
    to the judge server's context window), so it travels with the object from a command-line
    flag to the core.
    """

    def __init__(self, **options: Unpack[ScoreOptionsKwargs]) -> None:
        check_names(options)
        for f in option_fields():
            object.__setattr__(self, f.name, options.get(f.name, f.default))
        object.__setattr__(self, "_given", frozenset(options))
        self.__post_init__()

    def __post_init__(self) -> None:
        for f in option_fields():
            value = f.metadata["check"](f.name, getattr(self, f.name))
            object.__setattr__(self, f.name, value)
        if self.questions is not None and self.questions_file is not None:
            raise ValueError(
                "questions and questions_file: give one (your own questions, or frozen ones)"
            )
        object.__setattr__(
            self,
            "_dimension_settings",
            DimensionSettings(
                dimensions=self.dimensions,
                spacy_model=self.spacy_model,
                embedder=self.embedder,
                language=self.language,
                **{o.name: getattr(self, o.name) for o in dimension_options()},
            ),
        )
        object.__setattr__(self, "_frozen", True)

    def __getattr__(self, name: str) -> Any:
        """The default of a dimension option registered after these options were made."""
        if not name.startswith("_"):
            for o in dimension_options():
                if o.name == name:
                    return o.default
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _compared(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in option_fields() if f.compare)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._compared() == other._compared()  # type: ignore[attr-defined,no-any-return]

    def __hash__(self) -> int:
        return hash(self._compared())

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_frozen", False):
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    @property
    def given(self) -> frozenset[str]:
        """The options set by the caller; the others hold their defaults."""
        return self._given  # type: ignore[attr-defined,no-any-return]

    def given_kwargs(self) -> dict[str, Any]:
        """The options set by the caller, by name (what :meth:`from_kwargs` takes back, with
        the same :attr:`given`)."""
        return {name: getattr(self, name) for name in OPTION_NAMES if name in self.given}

    @property
    def dimension_settings(self) -> DimensionSettings:
        return self._dimension_settings  # type: ignore[attr-defined]

    @classmethod
    def from_kwargs(cls, options: dict[str, Any] | ScoreOptionsKwargs) -> ScoreOptions:
        """Options from keywords; an option not given keeps its default."""
        check_names(options)
        return cls(**options)

    def merged(self, **given: Any) -> ScoreOptions:
        """These options with ``given`` on top (what is not given keeps its value here)."""
        check_names(given)
        return type(self)(**{**self.given_kwargs(), **given})

    def as_kwargs(self) -> dict[str, Any]:
        """Every option by name (what :meth:`from_kwargs` takes back; every option then counts
        as given)."""
        return {name: getattr(self, name) for name in OPTION_NAMES}


def for_source(options: ScoreOptions, source: str) -> ScoreOptions:
    """The options of one row of ``source`` (normalised): ``questions_file`` narrowed to that
    source's frozen questions, or None when the file has none for its text (its questions are
    then generated, exactly as without the file)."""
    frozen = options.questions_file
    if frozen is None:
        return options
    narrowed = frozen.narrowed(source)
    return options if narrowed is frozen else options.merged(questions_file=narrowed)


def check_names(options: Iterable[str]) -> None:
    """TypeError naming any unknown option and listing the known ones."""
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise TypeError(
            f"unknown option(s) {', '.join(unknown)}; "
            f"expected some of {', '.join(sorted(OPTION_NAMES))}"
        )


# a dimension's option becomes a field of ScoreOptions: none may be named like its own names
reserve_option_names(
    {name for name in dir(ScoreOptions) if not name.startswith("_")}
    - {o.name for o in dimension_options()}
)

DEFAULTS = ScoreOptions()
"""Every option at its default (``DEFAULTS.n``, ...): what adapters and the CLI default to."""


def option_help(name: str) -> str:
    """The one line of help declared with option ``name``."""
    return {f.name: f.metadata["help"] for f in option_fields()}[name]


# ---------------------------------------------------------------------------------------------
# Input checks (the other half of "what a call accepts")
# ---------------------------------------------------------------------------------------------


def normalise_source(source: object) -> str:
    """A string, or a list of strings (Ragas's ``reference_contexts``) joined by blank lines."""
    if isinstance(source, str):
        text = source
    elif isinstance(source, list | tuple):
        for i, part in enumerate(source):
            if not isinstance(part, str):
                raise TypeError(f"source[{i}] must be a str, got {type(part).__name__}")
        text = "\n\n".join(part.strip() for part in source if part.strip())
    else:
        raise TypeError(f"source must be a str or a list of str, got {type(source).__name__}")
    if not text.strip():
        raise ValueError("source is empty or whitespace only: there is nothing to summarise")
    return text.strip()


def check_summary(summary: object) -> str:
    if not isinstance(summary, str):
        raise TypeError(f"summary must be a str, got {type(summary).__name__}")
    return summary.strip()


__all__ = [
    "DEFAULTS",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_CONTEXT_BUDGET",
    "DEFAULT_N",
    "DEFAULT_TIMEOUT",
    "MAX_SAMPLES",
    "MIN_CONTEXT_BUDGET",
    "OPTION_NAMES",
    "RUN_DEFAULTS",
    "OptionFields",
    "RunSettings",
    "ScoreOptions",
    "ScoreOptionsKwargs",
    "UserQuestion",
    "check_names",
    "check_summary",
    "for_source",
    "normalise_source",
    "option",
    "option_fields",
    "option_help",
]
