"""``vmemsim workloads list`` and ``vmemsim workloads record NAME``."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Dict

from ..cli import PROG, CliError, _seed, register, register_group
from . import DRIVERS, Missing, driver_names, missing_programs, record_workload


def _configure_list(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="one JSON object per line")


def _run_list(args: argparse.Namespace) -> int:
    for name in driver_names():
        d = DRIVERS[name]
        miss = missing_programs(name)
        if args.json:
            print(json.dumps({"name": name, "help": d.help, "missing": miss,
                              "options": {k: {"default": v[0], "help": v[1]}
                                          for k, v in d.options.items()}}))
            continue
        state = "ready" if not miss else "missing: " + "; ".join(miss)
        print(f"{name:<12} {d.help}\n{'':<12} [{state}]")
        for k, (default, h) in d.options.items():
            print(f"{'':<12} -o {k}=... {h} (default {default})")
    return 0


def _scale(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {v}")
    return v


def _configure_record(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="a workload of `vmemsim workloads list`")
    p.add_argument("--scale", type=_scale, default=1.0, metavar="S",
                   help="multiplies the work (requests, rows, graph size, bytes); default 1")
    p.add_argument("--out", default=".", metavar="DIR",
                   help="directory for NAME.vmt and NAME.json (default: here)")
    p.add_argument("--seed", type=_seed, default=1, help="seed of the generated inputs")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a driver option (see `vmemsim workloads list`)")
    p.add_argument("--native", action="store_true",
                   help="also run the workload without the recorder first and report the "
                   "slowdown (recorded / native wall time)")
    p.add_argument("--json", action="store_true", help="print the sidecar on stdout")


def _run_record(args: argparse.Namespace) -> int:
    from ..recorder import Unavailable

    names = driver_names()
    if args.name not in names:
        raise CliError(f"unknown workload '{args.name}' (known: {', '.join(names)})")
    opts: Dict[str, str] = {}
    for o in args.option:
        if "=" not in o:
            raise CliError(f"-o {o}: expected KEY=VALUE")
        k, v = o.split("=", 1)
        opts[k.strip()] = v.strip()

    def log(msg: str) -> None:
        sys.stderr.write(f"{PROG}: {msg}\n")
        sys.stderr.flush()

    try:
        side = record_workload(args.name, scale=args.scale, out_dir=args.out, seed=args.seed,
                               native=args.native, options=opts, log=log)
    except (Missing, Unavailable, ValueError, RuntimeError, subprocess.CalledProcessError) as e:
        raise CliError(f"cannot record: {e}") from None
    if args.json:
        print(json.dumps(side, indent=1, sort_keys=True))
    else:
        extra = ""
        if "slowdown" in side:
            extra = f", {side['slowdown']:.1f}x native ({side['slowdown_of']})"
        log(f"{args.name}: {side['accesses']:,} accesses "
            f"({side['memory_references']:,} memory references), "
            f"footprint {side['footprint_pages']:,} pages, {side['duration_seconds']:.1f} s"
            f"{extra} -> {os.path.join(args.out, side['trace'])} + {args.name}.json")
    if side["returncode"] != 0 or not side["complete"]:
        log(f"{args.name}: warning: the recorded program exited with status "
            f"{side['returncode']}{'' if side['complete'] else ' (recording incomplete)'}; "
            "the trace holds what it did until then")
        return 1
    return 0


register_group("workloads", "record real programs (redis, memcached, SQLite, ...) as traces")
register("workloads list", "list the real-program workload drivers and what they need",
         _configure_list, _run_list)
register(
    "workloads record",
    "record a real program's trace with one command: vmemsim workloads record NAME",
    _configure_record,
    _run_record,
    description="Prepare the workload's inputs, run its program under the recorder (servers "
    "driven by an unrecorded client) and write DIR/NAME.vmt plus DIR/NAME.json (program "
    "versions, command lines, duration, accesses, footprint pages, seed). Needs the "
    "recorder (valgrind, gcc) and the workload's programs; `vmemsim workloads list` says "
    "what is missing and how to install it.",
)
