"""Scoring a Ray Dataset on a cluster, with the same results as on one machine.

Install the ``ray`` extra (``pip install "summary-eval[ray]"``). Nothing here imports Ray until
:func:`score_dataset` is called, so the core never needs it.

How a job runs::

    rows --(bucket = hash of the source text % groups)--> groupby(bucket).map_groups(GroupScorer)

* Every summary of one source lands in the same bucket, and a bucket is scored whole by one call
  of one actor, so question generation for a source is one judge call in the whole job (the
  actor's cached judge shares it between the summaries of the group), as on one machine.
* ``GroupScorer`` is a callable class run by an actor pool: the judge (built from a picklable
  factory, e.g. :class:`OpenAIJudgeConfig`), its cache and the spaCy/MiniLM models are built
  once per actor, not per batch.
* ``concurrency`` is the budget of judge calls in flight in the whole job: each of the
  ``actors`` actors gets ``concurrency // actors``.
* ``cache``: True keeps answers in each actor's memory; a path keeps them in SQLite at that path
  (``{node}`` in the path becomes the Ray node id, ``{actor}`` the actor's process id, for
  per-node or per-worker files); a rerun then pays nothing twice.
* Ray Data restarts an actor that dies and retries its group on the new one
  (``max_restarts``/``max_task_retries``, -1 by default for actor pools); a group's rows are
  emitted only once the whole group is scored, so every row comes out exactly once.

Result columns (added to the input columns, same values as the CLI's results file and as
:func:`shared.score_summaries`): ``status``, every sub-score, ``reason``, ``error``,
``signature``, ``language``, ``input_hash``, ``evidence`` (JSON text), and ``id`` when
``id_column`` is given.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core import bounded_json
from ..evaluation.options import DEFAULTS, ScoreOptions
from ..judge.config import OpenAIJudgeConfig
from ..pipeline import ascore_summaries, ascore_summary, signature
from .inputs import Columns, InputRow, _check_text, _read_id, row_from_record
from .results import (
    STATUS_BAD_INPUT,
    STATUS_UNSCORED,
    evaluation_row,
    score_keys,
    spread_keys,
)
from .runner import bad_row, row_options

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    import ray.data

DEFAULT_ACTORS = 2
DEFAULT_ROWS_PER_GROUP = 512
"""Rows scored together by one actor call: enough for the judge budget of an actor to stay full
(a summary makes about three sequential rounds of one to three calls), small enough that a group
that is retried after an actor dies costs little."""

RESULT_PREFIX = ("status",)
RESULT_SUFFIX = ("reason", "error", "signature", "language", "input_hash", "evidence")
_BUCKET = "__summary_eval_bucket"
_TYPE_ERROR = "__summary_eval_type_error"  # why a value could not stay in its column
_CONTROL = ("cache", "concurrency", "retries")
"""Options the actor applies when it builds its judge stack, not per call."""


@dataclass(frozen=True)
class JobSettings:
    """Everything an actor needs, picklable (sent once per actor)."""

    judge_factory: Callable[[], Any] | None
    options: ScoreOptions
    """The core's options, with what was not given left so (the core fits ``context_budget``
    to the judge server's window when it was not given)."""
    columns: Columns
    id_given: bool
    per_actor_concurrency: int
    retries: int
    cache: bool | str
    checked: bool = False
    """Rows already checked by the CLI's reader: they carry ``id``, ``position``, ``source``,
    ``summary``, ``questions`` and ``error`` as in :class:`~shared.runs.inputs.InputRow`."""


def result_columns(id_given: bool, spread: bool = False) -> list[str]:
    """The columns :func:`score_dataset` adds; ``spread``: samples > 1 adds ``<sub-score>_sd``."""
    spread_cols = spread_keys() if spread else []
    return [
        *(["id"] if id_given else []),
        *RESULT_PREFIX,
        *score_keys(),
        *spread_cols,
        *RESULT_SUFFIX,
    ]


def _judge_factory(judge: Any) -> Callable[[], Any] | None:
    if judge is None:
        return None
    if callable(getattr(judge, "generate", None)):
        raise TypeError(
            "judge must be a picklable factory that builds the judge on each worker (e.g. "
            "shared.judge.config.OpenAIJudgeConfig(model, base_url=...)), not a judge "
            "instance: "
            "clients and caches do not travel between processes"
        )
    if not callable(judge):
        raise TypeError(f"judge must be None or a callable returning a judge, got {judge!r}")
    return judge


def source_bucket(source: Any, groups: int) -> int:
    """Stable bucket of a source: the same text always lands in the same group."""
    if isinstance(source, list | tuple):
        text = "\n\n".join(str(part).strip() for part in source if str(part).strip())
    else:
        text = str(source).strip()
    return int(hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:12], 16) % groups


class GroupScorer:
    """Scores one group (a pyarrow table) per call; built once per actor."""

    def __init__(self, settings: JobSettings) -> None:
        from ..judge.wrappers import robust_judge

        self.settings = settings
        self.loop = asyncio.new_event_loop()  # one loop for the actor: caches and clients persist
        self.judge: Any = None
        if settings.judge_factory is not None:
            cache: bool | str = settings.cache
            if isinstance(cache, str):
                cache = cache.format(node=_node_id(), actor=os.getpid())
            self.judge = robust_judge(
                settings.judge_factory(),
                retries=settings.retries,
                cache=cache,
                concurrency=settings.per_actor_concurrency,
            )
        self.signature = signature(self.judge, settings.options)
        self.keys = score_keys()

    def __call__(self, table: pa.Table) -> pa.Table:
        table = table.drop_columns([_BUCKET])
        notes = [None] * table.num_rows
        if _TYPE_ERROR in table.column_names:
            notes = table.column(_TYPE_ERROR).to_pylist()
            table = table.drop_columns([_TYPE_ERROR])
        rows = []
        for i, (record, note) in enumerate(zip(table.to_pylist(), notes, strict=True), start=1):
            row = self._input_row(i, record)
            if note:  # the value itself was set aside before the shuffle: its reason stays
                row.error = note
            rows.append(row)
        results = self.loop.run_until_complete(self._score(rows))
        return _result_table(table, results, self.settings, self.keys)

    def _input_row(self, index: int, record: dict[str, Any]) -> InputRow:
        if self.settings.checked:
            return InputRow(
                position=int(record["position"]),
                id=str(record["id"]),
                source=record["source"],
                summary=record["summary"],
                questions=bounded_json.loads(record["questions"])
                if record.get("questions")
                else None,
                error=record.get("error"),
            )
        columns = self.settings.columns
        if not self.settings.id_given:
            record = {k: v for k, v in record.items() if k != columns.id}
        return row_from_record(index, record, columns)

    async def _score(self, rows: list[InputRow]) -> list[dict[str, Any]]:
        """Rows without their own questions go through ``ascore_summaries`` together (the very
        code of ``score_summaries``: shared question generation, batched spaCy/MiniLM work);
        rows with questions one by one, as the CLI does. Bad rows cost no judge call."""
        results: dict[int, dict[str, Any]] = {}
        plain = [i for i, row in enumerate(rows) if row.error is None and not row.questions]
        own = [i for i, row in enumerate(rows) if row.error is None and row.questions]
        for i, row in enumerate(rows):
            if row.error is not None:
                results[i] = self._bad(row, row.error)

        async def batch() -> None:
            if not plain:
                return
            pairs = [(rows[i].source, rows[i].summary) for i in plain]
            try:
                evs = await ascore_summaries(pairs, judge=self.judge, options=self.settings.options)
            except Exception:  # one row broke the batch: score them one by one
                await asyncio.gather(*(single(i) for i in plain))
                return
            for i, ev in zip(plain, evs, strict=True):
                results[i] = self._row(rows[i], ev)

        async def single(i: int) -> None:
            row = rows[i]
            try:
                # inside the try: a bad question list is this row's error
                options = row_options(self.settings.options, row)
                ev = await ascore_summary(
                    row.source, row.summary, judge=self.judge, options=options
                )
            except (TypeError, ValueError) as exc:
                results[i] = self._bad(row, str(exc))
            except Exception as exc:
                error = f"internal error: {type(exc).__name__}: {exc}"
                results[i] = self._bad(row, error, status=STATUS_UNSCORED)
            else:
                results[i] = self._row(row, ev)

        await asyncio.gather(batch(), *(single(i) for i in own))
        return [results[i] for i in range(len(rows))]

    def _row(self, row: InputRow, ev: Any) -> dict[str, Any]:
        return evaluation_row(
            row_id=row.id,
            position=row.position,
            input_hash=row.input_hash,
            summary=str(row.summary),
            ev=ev,
            without_judge=self.judge is None,
        )

    def _bad(self, row: InputRow, error: str, status: str = STATUS_BAD_INPUT) -> dict[str, Any]:
        return bad_row(row, error, self.signature, self.keys, status=status)


def _node_id() -> str:
    try:
        import ray

        return ray.get_runtime_context().get_node_id()[:12]
    except Exception:
        return "local"


def _result_table(
    inputs: pa.Table, rows: list[dict[str, Any]], settings: JobSettings, keys: list[str]
) -> pa.Table:
    """The input columns plus the result columns, with fixed types (a group whose scores are all
    empty must not make a column of nulls that other groups' floats cannot join)."""
    import pyarrow as pa

    table = inputs
    if settings.checked:  # the CLI's own working columns: give back its results row as is
        table = pa.table({"__row": [json.dumps(row, ensure_ascii=False) for row in rows]})
        return table
    cols: dict[str, pa.Array] = {}
    if settings.id_given:
        cols["id"] = pa.array([row["id"] for row in rows], pa.string())
    cols["status"] = pa.array([row["status"] for row in rows], pa.string())
    spread = settings.options.samples > 1
    for key in [*keys, *(spread_keys() if spread else [])]:
        cols[key] = pa.array([row.get(key) for row in rows], pa.float64())
    for key in ("reason", "error", "signature", "input_hash"):
        cols[key] = pa.array([row.get(key) for row in rows], pa.string())
    cols["evidence"] = pa.array(
        [json.dumps(row.get("evidence") or {}, ensure_ascii=False) for row in rows], pa.string()
    )
    for name, array in cols.items():
        if name in table.column_names:
            table = table.drop_columns([name])
        table = table.append_column(name, array)
    return table


def _texty(kind: pa.DataType, allow_list: bool) -> bool:
    import pyarrow as pa

    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind):
        return True
    return allow_list and (pa.types.is_list(kind) or pa.types.is_large_list(kind))


def _uniform_text_columns(batch: pa.Table, columns: Columns) -> pa.Table:
    """Give the id, source and summary columns one type in every block, before the shuffle joins
    blocks: a block whose summaries are numbers (``42``, a pandas NaN) makes an int or float
    column that Arrow cannot merge with other blocks' strings, and the whole job would fail.
    Integer ids become their text; a source or summary that is not text becomes null, and its
    row carries the reason (the same words as every other reader) in :data:`_TYPE_ERROR`, so it
    comes out as a ``bad_input`` row."""
    import pyarrow as pa

    notes: list[list[str]] = [[] for _ in range(batch.num_rows)]
    if columns.id in batch.column_names and not _texty(batch.schema.field(columns.id).type, False):
        text: list[str | None] = []
        for i, value in enumerate(batch.column(columns.id).to_pylist()):
            _, problem = _read_id(value, i)  # the readers' own rule and words for ids
            if problem:
                notes[i].append(problem)
            text.append(None if problem or value is None else str(value))
        batch = batch.set_column(
            batch.column_names.index(columns.id), columns.id, pa.array(text, pa.string())
        )
    for column, what, allow_list in (
        (columns.source, "source", True),
        (columns.summary, "summary", False),
    ):
        if column not in batch.column_names:
            continue
        if _texty(batch.schema.field(column).type, allow_list):
            continue
        values = batch.column(column).to_pylist()
        for i, value in enumerate(values):
            if value is not None:
                notes[i] += _check_text({column: value}, column, what, allow_list=allow_list)
        batch = batch.set_column(
            batch.column_names.index(column), column, pa.nulls(batch.num_rows, pa.string())
        )
    reasons = ["; ".join(n) if n else None for n in notes]
    return batch.append_column(_TYPE_ERROR, pa.array(reasons, pa.string()))


UPSTREAM_CPUS = 1.0
"""CPUs an actor pool leaves free for Ray Data's other tasks (the map that buckets the rows and
the shuffle of the groupby): with every CPU held by actors, those wait forever
("backpressured: ResourceBudget") and the job hangs with 0 rows done."""


def cluster_cpus() -> float:
    """The CPUs of the Ray cluster this process is connected to, or of this machine when Ray is
    not started yet (what ``ray.init()`` would find)."""
    import ray

    if ray.is_initialized():
        return float(ray.cluster_resources().get("CPU", 0.0))
    return float(os.cpu_count() or 1)


def actor_cpus_for(cpus: float, actors: int, actor_cpus: float | None = None) -> float:
    """CPUs to reserve per scoring actor on a cluster of ``cpus`` CPUs.

    ``actor_cpus=None`` (the default): at most 1 each, sized so that the actors together leave
    :data:`UPSTREAM_CPUS` free (half the cluster when it has fewer than 2 CPUs). A given value
    that leaves no CPU to the other tasks is refused (ValueError): the job would hang."""
    if actor_cpus is None:
        free = max(cpus - UPSTREAM_CPUS, cpus / 2)
        return min(1.0, free / actors)
    if not isinstance(actor_cpus, int | float) or not 0 < actor_cpus < math.inf:
        raise ValueError(f"actor_cpus must be a positive number, got {actor_cpus!r}")
    if cpus and actor_cpus * actors >= cpus:
        raise ValueError(
            f"{actors} actors of {actor_cpus:g} CPUs would hold all {cpus:g} CPUs of the Ray "
            "cluster and leave none for the tasks that feed them: the job would wait forever. "
            "Use fewer actors, a smaller actor_cpus, or leave actor_cpus=None to size it."
        )
    return float(actor_cpus)


def prepare(
    ds: ray.data.Dataset,
    *,
    judge: Any,
    columns: Columns,
    id_given: bool,
    actors: int,
    concurrency: int,
    cache: bool | str | os.PathLike[str],
    retries: int,
    groups: int | None,
    rows_per_group: int,
    actor_cpus: float | None,
    checked: bool,
    options: ScoreOptions,
) -> ray.data.Dataset:
    """The lazy scoring plan shared by :func:`score_dataset` and the CLI's Ray engine."""
    import pyarrow as pa
    from ray.data import ActorPoolStrategy

    factory = _judge_factory(judge)
    if not isinstance(actors, int) or actors < 1:
        raise ValueError(f"actors must be a positive integer, got {actors!r}")
    if not isinstance(concurrency, int) or concurrency < actors:
        raise ValueError(
            f"concurrency is the judge calls in flight in the whole job and must give each of "
            f"the {actors} actors at least one: got {concurrency!r}"
        )
    options.merged(concurrency=concurrency, retries=retries)  # checked alike
    actor_cpus = actor_cpus_for(cluster_cpus(), actors, actor_cpus)
    if isinstance(cache, os.PathLike):
        cache = os.fspath(cache)
    settings = JobSettings(
        judge_factory=factory,
        options=options,
        columns=columns,
        id_given=id_given,
        per_actor_concurrency=concurrency // actors,
        retries=retries,
        cache=cache,
        checked=checked,
    )
    if groups is None:
        groups = max(actors, math.ceil(ds.count() / max(1, rows_per_group)))
    source = "source" if checked else columns.source

    def add_bucket(batch: pa.Table) -> pa.Table:
        if not checked:
            batch = _uniform_text_columns(batch, columns)
        values = batch.column(source).to_pylist() if source in batch.column_names else []
        buckets = [source_bucket(v, groups) for v in values] or [0] * batch.num_rows
        return batch.append_column(_BUCKET, pa.array(buckets, pa.int64()))

    bucketed = ds.map_batches(add_bucket, batch_format="pyarrow")
    return bucketed.groupby(_BUCKET, num_partitions=groups).map_groups(
        GroupScorer,
        batch_format="pyarrow",
        fn_constructor_args=(settings,),
        compute=ActorPoolStrategy(size=actors),
        num_cpus=actor_cpus,
    )


def score_dataset(
    ds: ray.data.Dataset,
    *,
    judge: Any,
    source_column: str = "source",
    summary_column: str = "summary",
    id_column: str | None = None,
    actors: int = DEFAULT_ACTORS,
    concurrency: int = DEFAULTS.concurrency,
    cache: bool | str | os.PathLike[str] = True,
    retries: int = DEFAULTS.retries,
    groups: int | None = None,
    rows_per_group: int = DEFAULT_ROWS_PER_GROUP,
    actor_cpus: float | None = None,
    questions_column: str | None = None,
    **options: Any,
) -> ray.data.Dataset:
    """Score every row of ``ds`` on Ray; returns a lazy Dataset with the result columns added.

    ``judge``: None (only the deterministic dimensions), or a picklable zero-argument callable
    that builds the judge on each actor (:class:`OpenAIJudgeConfig`, or your own factory).
    ``actors``: scoring actors; ``concurrency``: judge calls in flight in the whole job, split
    evenly across actors. ``groups``: buckets of sources (default: one per ``rows_per_group``
    rows, at least one per actor; computing it counts the rows). ``actor_cpus``: CPUs reserved
    per actor (the work is mostly waiting on the judge, plus spaCy/MiniLM); by default at most 1,
    sized from the cluster's CPUs so the actors leave one free for the tasks that feed them (on
    a 2-CPU machine, 0.5 each), and a value that would hold every CPU is refused (ValueError):
    such a job waits forever. Other keyword
    arguments are :func:`shared.score_summaries` options (n, beta, combine, dimensions,
    samples…; names and defaults from :mod:`shared.evaluation.options`); with ``samples`` > 1 the
    result
    also has a ``<sub-score>_sd`` column per sub-score, as the CLI's results file.

    A bad row (missing, empty or non-string text) becomes a ``bad_input`` row with the reason in
    ``error``; the job goes on. A result column replaces an input column of the same name,
    except the source, summary and id columns, which are refused (ValueError). Output order is
    not input order: key rows by ``id_column`` or your own columns.
    """
    columns = Columns(
        source=source_column,
        summary=summary_column,
        id=id_column or "__summary_eval_no_id",
        questions=questions_column or "__summary_eval_no_questions",
    )
    opts = ScoreOptions.from_kwargs(dict(options))  # checks the options first
    spread = opts.samples > 1
    taken = set(result_columns(id_column is not None, spread)) - {"id"}
    clash = taken & {source_column, summary_column, id_column}
    if clash:
        raise ValueError(f"input column(s) {sorted(clash)} would be overwritten by results")
    return prepare(
        ds,
        judge=judge,
        columns=columns,
        id_given=id_column is not None,
        actors=actors,
        concurrency=concurrency,
        cache=cache,
        retries=retries,
        groups=groups,
        rows_per_group=rows_per_group,
        actor_cpus=actor_cpus,
        checked=False,
        options=opts,
    )


__all__ = ["OpenAIJudgeConfig", "score_dataset"]
