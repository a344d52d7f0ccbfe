"""The command line's flags, each written once.

- The scoring options' flags are built from their declaration
  (:class:`~shared.evaluation.options.OptionFields`): the name, the type, the default and the
  help come from the field, so a new option is a new ``--flag`` with no edit here. Only what a
  flag needs beyond the declaration is written below: the options that are no flag
  (:data:`NOT_FLAGS`), a short alias, a range click checks before the core does, or the text
  form of an option whose Python form is a list or a mapping (:data:`FLAG_FORM`).
- The judge's and the prices' flags (``--model``, ``--base-url``, ``--api-key``, ``--timeout``,
  ``--price-*``) are Annotated types that every command taking a judge uses alike
  (``score``, ``bench``, ``check-judge``, ``questions``); :class:`JudgeFlags` is all of them as
  one flag group, for ``score`` and ``bench``.
- A command's other flags are the fields of frozen dataclasses, flag groups (``score``'s
  ``ScoreFlags``, ``bench``'s ``BenchFlags``, each beside :class:`JudgeFlags`): each field
  declares its flag once, its name, its type, and with :func:`flag` its default, its help and
  what else the flag needs (other names, a range). A new flag is a new field.

:func:`with_option_flags` puts the option flags into a command's signature, where typer reads
them; the command receives them as keywords and turns them into options with
:func:`options_from_flags`. :func:`with_flag_groups` puts a flag group's fields into the
signature where the parameter typed by the group stood; the command receives each group whole.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import typing
from collections.abc import Callable
from typing import Annotated, Any

import typer

from ..core.subscores import on_change
from ..evaluation.options import DEFAULTS, MAX_N, RUN_DEFAULTS, option_fields

PANEL_OPTIONS = "Scoring options"
PANEL_JUDGE = "Judge"

MAX_TIMEOUT = 86_400.0
"""Longest --timeout, in seconds (a day): ``inf`` would let one hung call hold the run forever."""


def finite(value: float | None) -> float | None:
    """Refuse NaN (and infinities): click's ranges let NaN through, every comparison being false."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number, got {value}")
    return value


UNIT_SHARE: dict[str, Any] = {"min": 0.0, "max": 1.0, "callback": finite}
"""What a flag that takes a finite number from 0 to 1 (a pass mark, a share) gives typer.Option."""


# ---------------------------------------------------------------------------------------------
# The judge's and the prices' flags
# ---------------------------------------------------------------------------------------------


def _judge(help: str, **option: Any) -> Any:
    """A flag of the judge's panel."""
    return typer.Option(help=help, rich_help_panel=PANEL_JUDGE, **option)


def _price(tokens: str) -> Any:
    """A price flag: US$ per million ``tokens``, none below 0."""
    return _judge(f"US$ per million {tokens}", min=0)


Model = Annotated[str | None, _judge("Judge model (env OPENAI_MODEL, else gpt-4o-mini).")]
BaseUrl = Annotated[
    str | None,
    _judge("OpenAI-compatible server, e.g. http://localhost:11434/v1 (env OPENAI_BASE_URL)."),
]
ApiKey = Annotated[
    str | None,
    _judge("The judge server's API key (env OPENAI_API_KEY; a local server needs none)."),
]
Timeout = Annotated[
    float,
    _judge(
        "Seconds one judge call may take, its retries included, before it counts as failed "
        "(`score` raises it to fit a slow server's measured speed when not given).",
        min=1,
        max=MAX_TIMEOUT,
        callback=finite,
    ),
]
PriceIn = Annotated[float | None, _price("prompt tokens (default: the price table).")]
PriceCached = Annotated[float | None, _price("cached prompt tokens (default: --price-in).")]
PriceOut = Annotated[float | None, _price("completion tokens.")]


@dataclasses.dataclass(frozen=True)
class JudgeFlags:
    """The flag group of a command that runs on the user's judge (``score``, ``bench``): the
    judge's server and model, its calls' timeout, and the prices its bill is counted at."""

    model: Model = None
    base_url: BaseUrl = None
    api_key: ApiKey = None
    timeout: Timeout = RUN_DEFAULTS.timeout
    price_in: PriceIn = None
    price_cached: PriceCached = None
    price_out: PriceOut = None


# ---------------------------------------------------------------------------------------------
# The scoring options' flags, from their declaration
# ---------------------------------------------------------------------------------------------

NOT_FLAGS = {
    "questions": "each row's own questions come from a column (--questions-column)",
    "cache": "--cache PATH and --no-cache choose the judge cache",
    "embedder": "an object with embed(): Python only",
}
"""Options with no flag of their own, and why."""


@dataclasses.dataclass(frozen=True)
class FlagForm:
    """What a flag needs beyond its option's declaration."""

    aliases: tuple[str, ...] = ()
    """Flag names other than ``--<name>``."""
    help: str | None = None
    """The help, where the flag's text form differs from the Python value (a list, a mapping)."""
    range: dict[str, Any] = dataclasses.field(default_factory=dict)
    """click's ``min``/``max``: a range error before the core's own check."""
    text: bool = False
    """Comma-separated text, None by default (the core's default): a list option."""


FLAG_FORM: dict[str, FlagForm] = {
    "n": FlagForm(aliases=("--n",), range={"min": 1, "max": MAX_N}),
    "questions_file": FlagForm(
        aliases=("--questions", "--questions-file"),
        help="Frozen questions (a file of `summary-eval questions`): used for every source "
        "whose text they were frozen for; the other sources' questions are generated.",
    ),
    "retries": FlagForm(range={"min": 0}),
    "samples": FlagForm(range={"min": 1}),
    "concurrency": FlagForm(
        help="Rows scored at once, and judge calls in flight at most.", range={"min": 1}
    ),
    "dimensions": FlagForm(
        help="Comma-separated text dimensions to compute (default: all).", text=True
    ),
    "spacy_model": FlagForm(
        help="spaCy pipeline for English, or one per language: de=de_core_news_sm,"
        "fr=fr_core_news_md."
    ),
}


def option_flag_names() -> tuple[str, ...]:
    """The options that are flags, in declaration order."""
    return tuple(f.name for f in option_fields() if f.name not in NOT_FLAGS)


def _flag_parameter(name: str) -> inspect.Parameter:
    field = next(f for f in option_fields() if f.name == name)
    form = FLAG_FORM.get(name, FlagForm())
    default = getattr(DEFAULTS, name)
    if form.text or default is None:
        kind: Any = str | None
        default = None if form.text else default
    elif isinstance(default, bool | int | float):
        kind = type(default)
    else:
        kind = str
    flags = form.aliases or (f"--{name.replace('_', '-')}",)
    option = typer.Option(
        *flags,
        help=form.help or field.metadata["help"],
        rich_help_panel=PANEL_OPTIONS,
        **form.range,
    )
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[kind, option]
    )


def with_option_flags(
    command: Callable[..., Any] | None = None, *, only: tuple[str, ...] | None = None
) -> Any:
    """``command`` with a flag for every scoring option (or those named in ``only``) in its
    signature, where its ``**kwargs`` stood; typer passes them to it by name. A parameter the
    command declares itself wins. ``with_option_flags(only=...)`` is the decorator. A dimension
    registered later adds its options' flags (typer reads the signature at each run)."""
    if command is None:
        return functools.partial(with_option_flags, only=only)
    signature = inspect.signature(command, eval_str=True)
    _FLAGGED.append((command, signature, only))
    _put_flags(command, signature, only)
    return command


_FLAGGED: list[tuple[Callable[..., Any], inspect.Signature, tuple[str, ...] | None]] = []


def _put_flags(
    command: Callable[..., Any], signature: inspect.Signature, only: tuple[str, ...] | None
) -> None:
    own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    names = {p.name for p in own}
    added = [
        _flag_parameter(name)
        for name in option_flag_names()
        if name not in names and (only is None or name in only)
    ]
    command.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*own, *added]
    )


def _refresh_flags() -> None:
    for command, signature, only in _FLAGGED:
        _put_flags(command, signature, only)


on_change(_refresh_flags)


def options_from_flags(values: dict[str, Any], given: frozenset[str]) -> dict[str, Any]:
    """The option keywords of a command's flag values: a list option's text split at commas,
    and an option the user did not give left out where "not given" is a choice the core makes
    (``context_budget``: fitted to the judge server's context window)."""
    core: dict[str, Any] = {}
    for name in option_flag_names():
        if name not in values:
            continue
        value = values[name]
        if FLAG_FORM.get(name, FlagForm()).text:
            if value is None:
                continue
            value = [part.strip() for part in value.split(",") if part.strip()]
        elif name == "context_budget" and name not in given:
            continue
        core[name] = value
    return core


# ---------------------------------------------------------------------------------------------
# A command's other flags, declared as the fields of a flag group
# ---------------------------------------------------------------------------------------------


def flag(default: Any, help: str, *names: str, **option: Any) -> Any:
    """A field of a flag group, its flag declared in one place: its default, its help, the
    flag's names where they are not ``--<field>`` alone, and what else typer.Option takes
    (``min``, ``max``, ``metavar``, ``callback``: :data:`UNIT_SHARE`)."""
    return dataclasses.field(
        default=default, metadata={"flag": typer.Option(*names, help=help, **option)}
    )


def _group_parameters(group: type) -> list[inspect.Parameter]:
    """One keyword parameter per field of the dataclass ``group``: its name, its type with the
    typer.Option (from :func:`flag`, or the field's own Annotated type) and its default."""
    hints = typing.get_type_hints(group, include_extras=True)
    return [
        inspect.Parameter(
            field.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=field.default,
            annotation=(
                Annotated[hints[field.name], field.metadata["flag"]]
                if "flag" in field.metadata
                else hints[field.name]
            ),
        )
        for field in dataclasses.fields(group)
    ]


def with_flag_groups(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` with each parameter typed by a dataclass (a flag group) replaced, in its
    signature, by one flag per field, in the fields' order; typer passes them by name, and the
    command receives the group built from them."""
    signature = inspect.signature(command, eval_str=True)
    groups: dict[str, tuple[type, list[str]]] = {}
    parameters: list[inspect.Parameter] = []
    for parameter in signature.parameters.values():
        group = parameter.annotation
        if not (isinstance(group, type) and dataclasses.is_dataclass(group)):
            parameters.append(parameter)
            continue
        fields = _group_parameters(group)
        groups[parameter.name] = (group, [field.name for field in fields])
        parameters += fields

    @functools.wraps(command)
    def grouped(*args: Any, **kwargs: Any) -> Any:
        for name, (group, fields) in groups.items():
            kwargs[name] = group(**{field: kwargs.pop(field) for field in fields})
        return command(*args, **kwargs)

    grouped.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return grouped
