#!/usr/bin/env python3
"""Regenerate the small recorded traces shipped here (real programs, recorded with
``vmemsim trace record``), so that tests and demos can use real-program traces without
recording. Inputs are generated deterministically; page numbers depend on where Valgrind
places the program, so a regenerated trace has the same shape, not the same bytes.

    python traces/regen.py            # needs valgrind, gcc, gzip, sort
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from vmemsim.recorder import record

HERE = Path(__file__).resolve().parent


def _text(path: Path, size: int) -> None:
    with open(path, "w") as f:
        i = 0
        while f.tell() < size:
            f.write(f"line {i} value {(i * 2654435761) % 1000003} name item{i % 977}\n")
            i += 1


TRACES = {
    # name: (command, input bytes)
    "gzip-100k": (["gzip", "-c", "input.txt"], 100_000),
    "sort-300k": (["sort", "-k4", "input.txt"], 300_000),
}


def main() -> int:
    for name, (cmd, size) in TRACES.items():
        with tempfile.TemporaryDirectory() as tmp:
            _text(Path(tmp) / "input.txt", size)
            out = HERE / f"{name}.vmt"
            cwd = os.getcwd()
            os.chdir(tmp)
            try:
                with open(os.devnull, "w") as null:
                    r = record(cmd, str(out), stdout=null)
            finally:
                os.chdir(cwd)
            st = r.stats
            print(f"{out.name}: {st['accesses']:,} accesses in {st['records']:,} records, "
                  f"{out.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
