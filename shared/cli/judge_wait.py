"""A hung judge made visible: the judge calls in flight, and how long the oldest has waited.

A judge server that accepts a request and never answers leaves the progress bar at 0/N with
nothing to say why. :class:`InFlightJudge` sits right above the user's judge (below the
concurrency limit, so a call queued for a free slot does not count) and records when each call
started; :class:`JudgeWaitColumn` adds "waiting on the judge: 3 calls in flight, oldest 45 s" to
the progress line once a call has been pending :data:`NOTICE_AFTER_S` seconds. The column reads
the clock it is given, so a test drives it with a fake one instead of waiting.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel
from rich.progress import ProgressColumn, Task
from rich.text import Text

from ..judge.wrappers import Check, Judge, _Wrapper, base_judge, find_wrapper

T = TypeVar("T", bound=BaseModel)

NOTICE_AFTER_S = 15.0
"""A call pending this long is shown: a healthy judge answers most calls well within it, and
the per-call ``--timeout`` (120 s by default) ends it eventually."""

Clock = Callable[[], float]


class InFlightJudge(_Wrapper):
    """Counts the calls of ``inner`` now in flight and remembers when each started.

    The wrappers of judge samples (``samples=k``) are shallow copies of this one and share its
    record, so every sample's calls are counted. The record is read from the progress display's
    refresh thread, hence the lock.
    """

    def __init__(self, inner: Judge, clock: Clock = time.monotonic) -> None:
        super().__init__(inner)
        self.clock = clock
        self._started: dict[int, float] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self.first_started: float | None = None
        """When the first call started (the judge's clock): the progress line's time zero."""

    async def generate(self, prompt: str, schema: type[T], *, check: Check | None = None) -> T:
        call = next(self._ids)
        with self._lock:
            self._started[call] = self.clock()
            if self.first_started is None:
                self.first_started = self._started[call]
        try:
            return await self._call_inner(prompt, schema, check)
        finally:
            with self._lock:
                del self._started[call]

    def pending(self) -> tuple[int, float | None]:
        """How many calls are in flight, and when the oldest started (None when none is)."""
        with self._lock:
            starts = list(self._started.values())
        return len(starts), (min(starts) if starts else None)


def in_flight_of(judge: object) -> InFlightJudge | None:
    """The :class:`InFlightJudge` among ``judge``'s wrappers, if it has one."""
    return find_wrapper(judge, InFlightJudge)


def waiting_text(judge: InFlightJudge, now: float, after: float = NOTICE_AFTER_S) -> str:
    """``waiting on the judge: N calls in flight, oldest S s`` once the oldest call has waited
    ``after`` seconds at ``now`` (the judge's clock); empty otherwise."""
    count, oldest = judge.pending()
    if oldest is None or now - oldest < after:
        return ""
    calls = "call" if count == 1 else "calls"
    return f"waiting on the judge: {count} {calls} in flight, oldest {now - oldest:.0f} s"


class JudgeWaitColumn(ProgressColumn):
    """The progress line's judge-wait notice (empty while the judge answers in time)."""

    def __init__(self, judge: InFlightJudge | None, after: float = NOTICE_AFTER_S) -> None:
        super().__init__()
        self.judge = judge
        self.after = after

    def render(self, task: Task | Any) -> Text:
        if self.judge is None:
            return Text("")
        return Text(waiting_text(self.judge, self.judge.clock(), self.after), style="yellow")


def _duration(span: float) -> str:
    seconds = max(0, round(span))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def activity_text(
    judge: InFlightJudge,
    now: float,
    expected_completion_tokens: int | None = None,
    expected_calls: int | None = None,
) -> str:
    """``judge: 3 in flight, 12.5 tok/s, 1m05s, ETA ~4m10s`` from the first call on: the calls
    now in flight, completion tokens per second since the first call started (the server's
    measured speed, summed over parallel calls), the time since then, and the time the
    estimated completion tokens still to write take at that speed (``expected_calls`` times the
    mean answer so far, when that is more). Empty before any call."""
    if judge.first_started is None:
        return ""
    count, _oldest = judge.pending()
    elapsed = max(now - judge.first_started, 0.0)
    usage = getattr(base_judge(judge), "usage", None)
    written = usage.get("completion_tokens", 0) if isinstance(usage, dict) else 0
    answered = (usage.get("calls", 0) if isinstance(usage, dict) else 0) - count
    if expected_calls and answered > 0 and written:
        # the estimate's stand-in writes shorter answers than a real model: once calls have
        # been answered, their mean length times the estimated calls is the better guess
        expected_completion_tokens = max(
            expected_completion_tokens or 0, round(expected_calls * written / answered)
        )
    parts = [f"judge: {count} in flight"]
    speed = written / elapsed if elapsed > 0 and written else None
    parts.append(f"{speed:.1f} tok/s" if speed else "-- tok/s")
    parts.append(f"{_duration(elapsed)} since the first call")
    if speed and expected_completion_tokens:
        left = max(expected_completion_tokens - written, 0)
        parts.append(f"ETA ~{_duration(left / speed)}")
    return ", ".join(parts)


class JudgeActivityColumn(ProgressColumn):
    """The progress line's judge activity (:func:`activity_text`), shown from the first call,
    before any row has finished. ``expected_completion_tokens``: the run's estimate (for the
    ETA)."""

    def __init__(
        self,
        judge: InFlightJudge | None,
        expected_completion_tokens: int | None = None,
        expected_calls: int | None = None,
    ) -> None:
        super().__init__()
        self.judge = judge
        self.expected = expected_completion_tokens
        self.expected_calls = expected_calls

    def render(self, task: Task | Any) -> Text:
        if self.judge is None:
            return Text("")
        text = activity_text(self.judge, self.judge.clock(), self.expected, self.expected_calls)
        return Text(text, style="cyan")
