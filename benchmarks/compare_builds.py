"""Wall time of one benchmark script under two builds of vmemsim, side by side.

    python benchmarks/compare_builds.py BEFORE AFTER [--rounds 3] -- benchmarks/bench_timed.py --repeat 3

BEFORE and AFTER are directories that hold a `vmemsim` package with its built `_native`
module (a checkout's `python/` after `maturin develop`, or a copy of it). The script runs
the benchmark with each build in turn, `--rounds` times, alternating (before, after,
before, ...), so that the machine's load drifts over both alike; each row's wall time is
the median over the rounds (each itself the benchmark's own median of `--repeat`). Rows are
matched by their leading text columns; a row whose results (the other columns) differ
between builds is marked, since then the two builds did not run the same simulation.

It reads the benchmark's table: a header line with a `wall s` column and rows with as many
columns (`bench_timed.py`, `bench_vm.py`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

ALIASES = {"wall s": "wall_s", "M acc/s": "M_acc/s", "sim s": "sim_s"}


def table(text: str) -> dict[tuple[str, ...], tuple[float, tuple[str, ...]]]:
    """Rows of the benchmark's output: key -> (wall seconds, the other result columns)."""
    cols: list[str] | None = None
    rows = {}
    for line in text.splitlines():
        if cols is None:
            if "wall s" in line:
                for a, b in ALIASES.items():
                    line = line.replace(a, b)
                cols = line.split()
            continue
        parts = line.split()
        if len(parts) != len(cols):
            continue
        wall = cols.index("wall_s")
        key = tuple(p for p in parts[:wall] if not p.replace(",", "").replace(".", "").isdigit())
        rest = tuple(p for i, p in enumerate(parts) if i != wall and p not in key
                     and cols[i] not in ("M_acc/s",))
        try:
            rows[key] = (float(parts[wall]), rest)
        except ValueError:
            continue
    if cols is None:
        raise SystemExit("the benchmark printed no header with a 'wall s' column")
    return rows


def run(build: str, cmd: list[str]) -> str:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(build))
    out = subprocess.run([sys.executable, *cmd], capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed with {build}:\n{out.stderr[-2000:]}")
    return out.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=3)
    args = sys.argv[1:]
    if "--" not in args or args.index("--") == len(args) - 1:
        raise SystemExit("give the benchmark to run after --")
    cmd = args[args.index("--") + 1:]
    a = ap.parse_args(args[:args.index("--")])
    for d in (a.before, a.after):
        if not os.path.isdir(os.path.join(d, "vmemsim")):
            raise SystemExit(f"{d}: no vmemsim package there")
    walls: dict[str, dict[tuple[str, ...], list[float]]] = {"before": {}, "after": {}}
    results: dict[str, dict[tuple[str, ...], tuple[str, ...]]] = {"before": {}, "after": {}}
    for r in range(a.rounds):
        for name, build in (("before", a.before), ("after", a.after)):
            for key, (w, rest) in table(run(build, cmd)).items():
                walls[name].setdefault(key, []).append(w)
                results[name][key] = rest
            print(f"round {r + 1}/{a.rounds}: {name} done", file=sys.stderr, flush=True)
    print(f"{' '.join(cmd)}: wall seconds, median of {a.rounds} alternating rounds")
    print(f"{'row':<34}{'before':>9}{'after':>9}{'after/before':>14}")
    ratios = []
    for key, b in walls["before"].items():
        if key not in walls["after"]:
            continue
        mb, ma = statistics.median(b), statistics.median(walls["after"][key])
        ratio = ma / mb if mb > 0 else float("nan")
        ratios.append(ratio)
        same = "" if results["before"][key] == results["after"][key] else "  (results differ)"
        print(f"{' '.join(key):<34}{mb:>9.3f}{ma:>9.3f}{ratio:>14.2f}{same}")
    if ratios:
        print(f"{'median of the ratios':<52}{statistics.median(ratios):>14.2f}")


if __name__ == "__main__":
    main()
