"""The core and the CLI never import Ray unless the Ray engine runs (Ray is an optional extra)."""

from __future__ import annotations

import subprocess
import sys


def test_core_cli_and_distributed_module_import_no_ray() -> None:
    code = (
        "import sys, shared, shared.cli.app, shared.runs.distributed, shared.cli.ray_engine; "
        "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
