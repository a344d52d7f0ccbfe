"""What the bench runs on and reports: the items (SummEval's or a labelled file), the judge's
settings and usage counter, the result store, and the report's data classes. The bench itself
(running the metrics, agreement, paired differences) is :mod:`shared.analysis.bench`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TypedDict

from ..core import bounded_json
from ..core.files import appending, read_regular
from ..core.redact import register_secret, safe_record, url_secrets
from ..evaluation.options import DEFAULT_TIMEOUT
from .agreement import Estimate, _label_id, label_value, parse_mapping, read_labels
from .bench_recording import REPLAYED, Recording, recording_transport
from .lookup import find

METRICS = ("ours", "ours-two-call", "deepeval", "ragas")
"""The metrics :func:`bench` knows, in the order they are run and shown: ours in both reply
shapes (:data:`JUDGE_PATH_OF`), then the peers."""
JUDGE_PATH_OF = {"ours": "sentences", "ours-two-call": "two-call"}
"""The judge path (reply shape) each of ours' metrics runs: the default sentences path and the
two-call path, side by side on the same judge."""
METRIC_TITLES = {
    "ours": "summary-eval score (sentences path, the default)",
    "ours-two-call": "summary-eval score (two-call path)",
    "deepeval": "DeepEval SummarizationMetric",
    "ragas": "Ragas SummaryScore",
}
SUMMEVAL_RATINGS = ("coherence", "consistency", "fluency", "relevance")
DEFAULT_ARTICLES = 10
DEFAULT_SEED = 0


def summeval_path() -> Path:
    """The SummEval dev half shipped inside the package (package data, so an installed wheel
    has it too; the repository's ``examples/summeval`` links to the same folder)."""
    return Path(str(resources.files(__package__).joinpath("data", "summeval", "dev.jsonl")))


SUMMEVAL_PATH = summeval_path()
"""The default data of :func:`summeval_items` and ``summary-eval bench``: :func:`summeval_path`."""
MIN_GROUP = 3
REASON_CHARS = 200
STORE_VERSION = 1
PROGRESS_CALLS = 10
"""A metric's progress line within an article comes every this many judge replies (and on each
row a peer finishes)."""


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchItem:
    """One summary to score, with the people's ratings of it."""

    id: str
    source: str
    summary: str
    labels: Mapping[str, float | None]
    group: str | None = None
    """The source (article) it summarises: summary-level correlations are per group."""
    system: str | None = None
    """The system that wrote it: system-level correlations use per-system means."""


def summeval_items(
    path: str | Path | None = None,
    *,
    articles: int = DEFAULT_ARTICLES,
    seed: int = DEFAULT_SEED,
    summaries: int | None = None,
) -> list[BenchItem]:
    """``articles`` whole articles drawn (seeded) from the SummEval dev half, each with all of
    its summaries, or with the same ``summaries`` systems drawn for every article (a cap for
    plumbing runs; fewer than 3 leaves no summary-level correlation)."""
    path = Path(path) if path is not None else SUMMEVAL_PATH
    if not path.is_file():
        raise FileNotFoundError(
            f"the SummEval sample is not at {path}; pass its path (--summeval), or your own "
            "labelled data (--data FILE --labels FILE --map LABEL)"
        )
    if articles < 1:
        raise ValueError("articles must be at least 1")
    if summaries is not None and summaries < 1:
        raise ValueError("summaries must be at least 1")
    by_article: dict[str, list[dict[str, Any]]] = {}
    for line in read_regular(path).splitlines():
        if line.strip():
            row = bounded_json.loads(line)
            by_article.setdefault(str(row["article_id"]), []).append(row)
    if articles > len(by_article):
        raise ValueError(f"articles: {articles} asked, the sample has {len(by_article)}")
    rng = random.Random(seed)
    names = list(by_article)
    chosen = sorted(rng.sample(range(len(names)), articles))
    systems = sorted({str(r["summary_id"]) for rows in by_article.values() for r in rows})
    if summaries is not None and summaries < len(systems):
        keep = set(rng.sample(systems, summaries))
    else:
        keep = set(systems)
    items = []
    for index in chosen:
        for row in by_article[names[index]]:
            if str(row["summary_id"]) not in keep:
                continue
            items.append(
                BenchItem(
                    id=f"{row['article_id']}/{row['summary_id']}",
                    source=row["article"],
                    summary=row["summary"],
                    labels={r: label_value(row.get(r)) for r in SUMMEVAL_RATINGS},
                    group=str(row["article_id"]),
                    system=str(row["summary_id"]),
                )
            )
    return items


@dataclass
class LabelledData:
    items: list[BenchItem]
    ratings: list[str]
    notes: list[str] = field(default_factory=list)
    """What was left out and why (rows without labels, bad rows), for the user to see."""


def labelled_items(
    data: str | Path,
    labels: str | Path,
    mapping: Sequence[str] | Sequence[tuple[str, str]],
    *,
    id_column: str = "id",
    group_column: str | None = None,
    system_column: str | None = None,
    source_column: str = "source",
    summary_column: str = "summary",
) -> LabelledData:
    """The user's rows (read as ``summary-eval score`` reads them) joined by id with their labels
    (read as ``summary-eval agree`` reads them). ``mapping`` names the label columns, as
    ``agree --map`` does (``score=relevance`` or just ``relevance``: the metric side is each
    benchmarked metric's score). Rows without labels, and bad rows, are left out with a note
    (they are not sent to any judge); no row joined at all is an error."""
    from ..runs.inputs import Columns, InputError, detect_format, read_rows

    pairs = [
        (m, lbl) for m, lbl in (parse_mapping(list(mapping)) if _all_str(mapping) else mapping)
    ]
    ratings = list(dict.fromkeys(label for _, label in pairs))
    path = Path(data)
    try:
        rows = read_rows(
            path,
            Columns(source=source_column, summary=summary_column, id=id_column),
            detect_format(path),
        )
    except InputError as exc:
        raise ValueError(str(exc)) from None
    label_rows: dict[str, Mapping[str, Any]] = {}
    for row in read_labels(labels):
        key = _label_id(row, id_column)
        if key in label_rows:
            raise ValueError(f"the labels hold the id {key!r} twice; ids must be unique")
        label_rows[key] = row
    for rating in ratings:
        if not any(rating in r for r in label_rows.values()):
            raise ValueError(f"the labels have no column {rating!r} (--map {rating})")
    for column in (group_column, system_column):
        if column and not any(column in r for r in label_rows.values()):
            raise ValueError(f"the labels have no column {column!r}")
    notes: list[str] = []
    items: list[BenchItem] = []
    missing: list[str] = []
    bad: list[str] = []
    for row in rows:
        if row.error or not isinstance(row.summary, str) or row.source is None:
            bad.append(f"{row.id} ({row.error or 'no text'})")
            continue
        found = label_rows.get(row.id)
        if found is None:
            missing.append(row.id)
            continue
        source = row.source if isinstance(row.source, str) else "\n\n".join(row.source)

        def column(name: str | None, found: Mapping[str, Any] = found) -> str | None:
            value = found.get(name) if name else None
            return None if value is None or value == "" else str(value)

        items.append(
            BenchItem(
                id=row.id,
                source=source,
                summary=row.summary,
                labels={r: label_value(found.get(r)) for r in ratings},
                group=column(group_column),
                system=column(system_column),
            )
        )
    if missing:
        notes.append(
            f"{len(missing)} row(s) of {path.name} have no labels in {Path(labels).name} "
            f"(joined on {id_column!r}) and are left out: {_few(missing)}"
        )
    if bad:
        notes.append(f"{len(bad)} bad row(s) of {path.name} left out: {_few(bad)}")
    if not items:
        raise ValueError(
            f"no row of {path.name} has labels in {Path(labels).name} (ids are joined on the "
            f"labels' {id_column!r} column, or its row number when the column is missing)"
        )
    for rating in unrated(items, ratings):
        seen = list(dict.fromkeys(repr(label_rows[item.id].get(rating)) for item in items))
        raise ValueError(
            f"the labels' {rating!r} column holds {_numbers(items, rating)} of the "
            f"{len(items)} row(s) to benchmark (values: {_few(seen)}): nothing to correlate the "
            f"metrics with. {RATING_HINT}"
        )
    return LabelledData(items=items, ratings=ratings, notes=notes)


RATING_HINT = (
    "A correlation needs at least 3 rows rated with numbers (or yes/no, true/false, "
    "pass/fail); map a column that holds them."
)


def unrated(items: Sequence[BenchItem], ratings: Sequence[str]) -> list[str]:
    """The ``ratings`` fewer than :data:`MIN_GROUP` of ``items`` carry as a number: no
    correlation with them exists at any level, so no judge call is worth paying for them."""
    return [r for r in ratings if sum(item.labels.get(r) is not None for item in items) < MIN_GROUP]


def checked_ratings(items: list[BenchItem], ratings: Sequence[str] | None) -> list[str]:
    """The ratings to correlate with (default: every label of the rows), each a number on
    enough rows, and the rows some, with unique ids; checked before any judge call: a bench
    with nothing to correlate with is not worth one."""
    if not items:
        raise ValueError("no rows to benchmark")
    ids = [item.id for item in items]
    if len(set(ids)) != len(ids):
        raise ValueError("row ids must be unique")
    if ratings is None:
        ratings = sorted({r for item in items for r in item.labels})
    ratings = list(ratings)
    if not ratings:
        raise ValueError(f"the rows carry no rating to correlate the metrics with. {RATING_HINT}")
    short = unrated(items, ratings)
    if short:
        raise ValueError(
            f"the rating(s) {', '.join(map(repr, short))} are numbers in fewer than {MIN_GROUP} "
            f"of the {len(items)} rows: nothing to correlate the metrics with. {RATING_HINT}"
        )
    return ratings


def _numbers(items: Sequence[BenchItem], rating: str) -> str:
    count = sum(item.labels.get(rating) is not None for item in items)
    return "no number in any" if not count else f"a number in only {count}"


def _all_str(values: Sequence[Any]) -> bool:
    return all(isinstance(v, str) for v in values)


def _few(values: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(values[:limit])
    return shown + (f" … (+{len(values) - limit})" if len(values) > limit else "")


# ---------------------------------------------------------------------------------------------
# Counting calls and tokens at the HTTP level
# ---------------------------------------------------------------------------------------------


@dataclass
class Usage:
    calls: int = 0
    """Chat-completions requests answered (retries included), failed ones too."""
    failed_calls: int = 0
    """Of those, answered with HTTP >= 400."""
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    replayed_calls: int = 0
    """Of the calls, answered from the bench's recording (:mod:`.bench_recording`): no server
    call was made now; their tokens, counted above, are what the recorded replies cost."""

    def add(self, other: Usage) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class UsageCounter:
    """Thread-safe totals of what a server reported, one ``record`` per reply. ``recording``
    (the metric's :class:`~.bench_recording.Recording`) answers requests already answered;
    ``on_progress(usage, rows_done)`` hears every :data:`PROGRESS_CALLS`-th reply and every row
    a metric says it finished (:meth:`row_done`)."""

    def __init__(
        self,
        recording: Recording | None = None,
        on_progress: Callable[[Usage, int], None] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self.usage = Usage()
        self.recording = recording
        self.on_progress = on_progress
        self.rows_done = 0

    def row_done(self) -> None:
        """A metric finished one row (scored or not)."""
        with self._lock:
            self.rows_done += 1
        self._tell()

    def _tell(self) -> None:
        if self.on_progress is not None:
            self.on_progress(Usage(**asdict(self.usage)), self.rows_done)

    def record(self, status: int, content: bytes, *, replayed: bool = False) -> None:
        with self._lock:
            self._record(status, content, replayed)
            calls = self.usage.calls
        if calls % PROGRESS_CALLS == 0:
            self._tell()

    def _record(self, status: int, content: bytes, replayed: bool) -> None:
        self.usage.calls += 1
        self.usage.replayed_calls += int(replayed)
        if status >= 400:
            self.usage.failed_calls += 1
            return
        try:
            reply = bounded_json.loads(content.decode())
        except (ValueError, UnicodeDecodeError):
            return
        usage = reply.get("usage") if isinstance(reply, dict) else None
        if not isinstance(usage, dict):
            return
        details = usage.get("prompt_tokens_details") or {}
        self.usage.prompt_tokens += _int(usage.get("prompt_tokens"))
        self.usage.cached_tokens += _int(
            details.get("cached_tokens") if isinstance(details, dict) else 0
        )
        self.usage.completion_tokens += _int(usage.get("completion_tokens"))


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _per_loop_transport() -> Any:
    """An httpx transport with one connection pool per event loop: the frameworks run their
    calls on loops of their own (``asyncio.run`` per batch, worker threads), and a pooled
    connection belongs to the loop that opened it."""
    import httpx

    class PerLoopTransport(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self._lock = threading.Lock()
            self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]
            self._pools = weakref.WeakKeyDictionary()

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            loop = asyncio.get_running_loop()
            with self._lock:
                pool = self._pools.get(loop)
                if pool is None:
                    pool = self._pools[loop] = httpx.AsyncHTTPTransport()
            return await pool.handle_async_request(request)

        async def aclose(self) -> None:
            loop = asyncio.get_running_loop()
            with self._lock:
                pool = self._pools.pop(loop, None)
            if pool is not None:
                await pool.aclose()

    return PerLoopTransport()


def counted_http_client(counter: UsageCounter, timeout: float) -> Any:
    """An ``httpx.AsyncClient`` that records every chat-completions reply in ``counter``, in
    front of the counter's recording when it has one (a recorded reply counts as replayed)."""
    import httpx

    async def on_response(response: httpx.Response) -> None:
        if response.request.url.path.rstrip("/").endswith("/chat/completions"):
            await response.aread()
            replayed = bool(response.extensions.get(REPLAYED))
            counter.record(response.status_code, response.content, replayed=replayed)

    transport = _per_loop_transport()
    if counter.recording is not None:
        transport = recording_transport(transport, counter.recording)
    return httpx.AsyncClient(
        transport=transport,
        timeout=timeout,
        event_hooks={"response": [on_response]},
    )


class JudgeOptions(TypedDict, total=False):
    """The keywords of :class:`JudgeConfig` beside its model and base URL (what
    :func:`~shared.analysis.bench.bench` passes on)."""

    api_key: str | None
    timeout: float
    max_retries: int
    max_tokens: int | None


@dataclass
class JudgeConfig:
    """The one judge every metric is pointed at."""

    model: str
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = 2
    max_tokens: int | None = None
    """A bound on each reply for the peers' calls (their schemas have no bounds; a local server's
    default reply length is "until the context is full"). Ours derives its own bounds."""

    def __post_init__(self) -> None:
        for secret in [self.api_key, *url_secrets(self.base_url)]:
            register_secret(secret)  # masked in every file bench writes (shared.core.redact)

    def client(self, counter: UsageCounter) -> Any:
        """An ``AsyncOpenAI`` client on this judge, counting into ``counter``."""
        from openai import AsyncOpenAI

        return AsyncOpenAI(
            base_url=self.base_url or os.environ.get("OPENAI_BASE_URL"),
            api_key=self.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
            timeout=self.timeout,
            max_retries=self.max_retries,
            http_client=counted_http_client(counter, self.timeout),
        )


# ---------------------------------------------------------------------------------------------
# Results kept per metric and article (resumable)
# ---------------------------------------------------------------------------------------------


class ResultStore:
    """Append-only JSONL of finished batches for one metric and configuration."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.batches: dict[str, dict[str, Any]] = {}
        if path.is_file():
            for line in read_regular(path, errors="replace").splitlines():
                try:
                    record = bounded_json.loads(line)
                except ValueError:
                    continue  # a line cut short by an interruption
                if isinstance(record, dict) and "key" in record:
                    self.batches[str(record["key"])] = record

    def add(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with appending(self.path) as handle:
            handle.write(json.dumps(safe_record(record)) + "\n")  # no secret in the file
        self.batches[str(record["key"])] = record


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def _batches(items: Sequence[BenchItem], size: int = 16) -> list[list[BenchItem]]:
    """One batch per group (article), in order; rows without a group in batches of ``size``."""
    grouped: dict[str, list[BenchItem]] = {}
    loose: list[BenchItem] = []
    for item in items:
        if item.group is None:
            loose.append(item)
        else:
            grouped.setdefault(item.group, []).append(item)
    out = list(grouped.values())
    out += [loose[i : i + size] for i in range(0, len(loose), size)]
    return out


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclass
class RatingAgreement:
    rating: str
    summary: Estimate
    """Summary level (per group, then the mean; pooled over rows without groups)."""
    system: Estimate | None = None
    level: str = "summary"
    """``summary`` or ``pooled``: what :attr:`summary` is."""


@dataclass
class MetricReport:
    name: str
    title: str
    version: str | None
    rows: int = 0
    scored: int = 0
    failed: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    """Why rows were not scored (the first line of each reason), with counts."""
    usage: Usage = field(default_factory=Usage)
    dollars: float | None = None
    wall_s: float = 0.0
    resumed_batches: int = 0
    """Batches read from an earlier run (their calls, tokens and time are the earlier run's)."""
    error: str | None = None
    """Why the metric did not run at all (not installed), else None."""
    agreement: list[RatingAgreement] = field(default_factory=list)
    scores: dict[str, float | None] = field(default_factory=dict)


@dataclass
class _Pairing:
    """Which two metrics a :class:`PairedDifference` compares, on which rating."""

    first: str
    second: str
    rating: str


@dataclass
class PairedDifference(Estimate, _Pairing):
    """``first`` minus ``second`` summary-level Spearman for one rating, on the groups (rows,
    when pooled) both scored, with a bootstrap interval over groups (rows): an
    :class:`Estimate` whose value is the difference (``difference`` in the JSON)."""

    @property
    def difference(self) -> float | None:
        return self.value

    def to_dict(self) -> dict[str, Any]:
        """The fields in their order, the value named ``difference``."""
        return {("difference" if k == "value" else k): v for k, v in asdict(self).items()}


@dataclass
class BenchResult:
    model: str
    base_url: str | None
    data: str
    rows: int
    groups: int
    ratings: list[str]
    seed: int
    resamples: int
    level: float
    prices: str
    metrics: list[MetricReport]
    comparisons: list[PairedDifference]
    notes: list[str] = field(default_factory=list)
    labels: dict[str, dict[str, float | None]] = field(default_factory=dict)
    """The people's ratings per row id (for the scatter plots)."""

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "comparisons": [c.to_dict() for c in self.comparisons]}

    def metric(self, name: str) -> MetricReport:
        return find(self.metrics, lambda report: report.name == name, name)
