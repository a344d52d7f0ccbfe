"""``score_dataset`` with its defaults on a 2-CPU Ray finishes (issue 25): two actors of one CPU
each held both CPUs, and the map and shuffle that feed them waited forever. Marked ``ray``;
skipped without the ``ray`` extra. The job runs in a thread; the test waits on its done event
(a hang fails the test instead of stopping the suite)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

from shared.runs.distributed import score_dataset  # noqa: E402

pytestmark = pytest.mark.ray

ROWS = [
    {"id": str(i), "source": "The cat sat on the mat. It was warm.", "summary": f"A cat {i}."}
    for i in range(6)
]


def test_score_dataset_defaults_finish_on_a_two_cpu_ray() -> None:
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        configure_logging=False,
    )
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        done = threading.Event()
        got: dict[str, Any] = {}

        def job() -> None:
            try:
                out = score_dataset(
                    ray.data.from_items(ROWS), judge=None, id_column="id", dimensions=["density"]
                )
                got["rows"] = out.take_all()
            except BaseException as exc:  # reported by the test below
                got["error"] = exc
            finally:
                done.set()

        threading.Thread(target=job, daemon=True).start()
        finished = done.wait(600)  # a deadlock never sets it
        assert finished, "score_dataset with its defaults hung on a 2-CPU Ray"
        assert "error" not in got, got.get("error")
        assert sorted(r["id"] for r in got["rows"]) == [r["id"] for r in ROWS]
        assert {r["status"] for r in got["rows"]} == {"ok"}
        with pytest.raises(ValueError, match="wait forever"):
            score_dataset(ray.data.from_items(ROWS), judge=None, actors=2, actor_cpus=1.0)
    finally:
        ray.shutdown()
