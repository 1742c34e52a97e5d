"""Shared helpers: run the CLI as a user would (a subprocess of this interpreter) and write
small trace files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import List, Sequence

import pytest

#: The classic Belady-anomaly reference string (Belady, Nelson, Shedler, CACM 1969).
BELADY = [1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5]


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "vmemsim", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def run_json(*args: str) -> dict:
    p = run_cli(*args, "--json")
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    return json.loads(p.stdout)


def write_trace(path: Path, pages: Sequence[int], writes: Sequence[bool] = ()) -> Path:
    lines: List[str] = []
    for i, page in enumerate(pages):
        w = writes[i] if i < len(writes) else False
        lines.append(f"{page} W" if w else str(page))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def belady_trace(tmp_path: Path) -> Path:
    return write_trace(tmp_path / "belady.txt", BELADY)
