"""Drivers that record real programs with one command: ``vmemsim workloads record NAME``.

Each driver prepares its inputs (generated from ``--seed``, sized by ``--scale``), runs one
program under the recorder (:func:`vmemsim.recorder.record`) and, for servers, drives it with
a client that is not recorded; it writes ``DIR/NAME.vmt`` and a JSON sidecar ``DIR/NAME.json``
(program versions, command lines, duration, accesses, footprint pages, seed). With
``native=True`` the same work also runs without the recorder first, and the sidecar gives the
recorded-over-native slowdown.

The recorder records the command's process and its forked children (programs they ``exec``
only with ``--trace-children``), so a driver records the process that does the work: the
server of a client/server pair, ``cc1`` rather than the ``gcc`` driver, ``python3 script.py``
for Python-hosted engines (SQLite, igraph), whose C code runs in that process; stress-ng with
its forked workers.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

__all__ = [
    "Driver",
    "Plan",
    "Missing",
    "DRIVERS",
    "driver_names",
    "record_workload",
    "missing_programs",
]


class Missing(Exception):
    """A program a driver needs is not installed; the message says how to install it."""


@dataclass
class Plan:
    """One prepared run of a driver.

    ``command`` is the recorded process. For a server, ``ready`` returns True once it answers,
    ``drive`` runs the (unrecorded) client and returns facts for the sidecar, and ``stop`` asks
    the server to exit."""

    #: The recorded process, with absolute paths (it runs in the current directory).
    command: List[str]
    ready: Optional[Callable[[], bool]] = None
    drive: Optional[Callable[[], Dict[str, Any]]] = None
    stop: Optional[Callable[[], None]] = None
    #: Command lines of the client(s), for the sidecar.
    client_commands: List[List[str]] = field(default_factory=list)
    #: Anything else worth keeping (sizes of the generated inputs, ...).
    params: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Driver:
    name: str
    help: str
    #: Programs that must be on PATH: name -> install hint.
    needs: Dict[str, str]
    #: Python modules that must import: module -> install hint.
    modules: Dict[str, str]
    #: (workdir, scale, seed, options) -> Plan
    prepare: Callable[[str, float, int, Dict[str, str]], Plan]
    #: Commands whose first output line is a program's version: label -> argv.
    versions: Dict[str, List[str]] = field(default_factory=dict)
    #: Driver options (``-o KEY=VALUE``): key -> (default, help).
    options: Dict[str, Any] = field(default_factory=dict)


DRIVERS: Dict[str, Driver] = {}


def register(driver: Driver) -> Driver:
    DRIVERS[driver.name] = driver
    return driver


def driver_names() -> List[str]:
    _load()
    return sorted(DRIVERS)


def _load() -> None:
    # The driver modules register themselves on import.
    from . import batch, pyengines, servers  # noqa: F401


def missing_programs(name: str) -> List[str]:
    """What ``name`` needs and does not find here, each with how to install it."""
    _load()
    d = DRIVERS[name]
    out = [f"{p} ({hint})" for p, hint in d.needs.items() if shutil.which(p) is None]
    for mod, hint in d.modules.items():
        r = subprocess.run([sys.executable, "-c", f"import {mod}"], capture_output=True)
        if r.returncode != 0:
            out.append(f"python module {mod} ({hint})")
    return out


def _version(argv: List[str]) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({e})"
    text = (r.stdout or r.stderr).strip()
    return text.splitlines()[0].strip() if text else "unknown"


def wait_until(ready: Callable[[], bool], what: str, timeout: float = 300.0,
               alive: Optional[Callable[[], bool]] = None) -> None:
    t0 = time.time()
    while time.time() - t0 < timeout:
        if alive is not None and not alive():
            raise RuntimeError(f"{what} exited before it answered")
        if ready():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not answer within {timeout:.0f} s")


def _run_native(plan: Plan) -> Dict[str, Any]:
    """The plan without the recorder: wall time of the whole run, and of the client phase."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(plan.command, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    info: Dict[str, Any] = {}
    try:
        if plan.drive is not None:
            assert plan.ready is not None and plan.stop is not None
            wait_until(plan.ready, plan.command[0], alive=lambda: proc.poll() is None)
            t1 = time.perf_counter()
            info = plan.drive()
            info["drive_seconds"] = time.perf_counter() - t1
            plan.stop()
        rc = proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    info["seconds"] = time.perf_counter() - t0
    info["returncode"] = rc
    return info


def _run_recorded(plan: Plan, out: str) -> Dict[str, Any]:
    from ..recorder import record

    box: Dict[str, Any] = {}

    def rec() -> None:
        try:
            box["rec"] = record(plan.command, out, stdout=subprocess.DEVNULL)
        except BaseException as e:  # reported below
            box["error"] = e

    info: Dict[str, Any] = {}
    t = threading.Thread(target=rec, name="vmemsim-workload-record", daemon=True)
    t.start()
    if plan.drive is not None:
        assert plan.ready is not None and plan.stop is not None
        try:
            wait_until(plan.ready, f"{plan.command[0]} (recorded)", timeout=600,
                       alive=t.is_alive)
            t1 = time.perf_counter()
            info = plan.drive()
            info["drive_seconds"] = time.perf_counter() - t1
        finally:
            plan.stop()
    t.join()
    if "error" in box:
        raise box["error"]
    r = box["rec"]
    info.update(seconds=r.seconds, returncode=r.returncode, stats=dict(r.stats))
    return info


def record_workload(name: str, scale: float = 1.0, out_dir: str = ".", seed: int = 1,
                    native: bool = False, options: Optional[Dict[str, str]] = None,
                    log: Callable[[str], None] = lambda s: None) -> Dict[str, Any]:
    """Record driver ``name`` into ``out_dir/name.vmt`` and write ``out_dir/name.json``;
    returns the sidecar. Raises :class:`Missing` when a program is not installed and
    ``vmemsim.recorder.Unavailable`` when the recorder cannot run here."""
    from ..api import trace_info
    from ..recorder import available

    _load()
    if name not in DRIVERS:
        raise ValueError(f"unknown workload '{name}' (known: {', '.join(sorted(DRIVERS))})")
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")
    d = DRIVERS[name]
    opts = {k: str(v[0]) for k, v in d.options.items()}
    for k, v in (options or {}).items():
        if k not in d.options:
            known = ", ".join(sorted(d.options)) or "none"
            raise ValueError(f"workload '{name}' has no option '{k}' (its options: {known})")
        opts[k] = str(v)
    miss = missing_programs(name)
    if miss:
        raise Missing(f"workload '{name}' needs: " + "; ".join(miss))
    why = available()
    if why is not None:
        from ..recorder import Unavailable

        raise Unavailable(why)
    os.makedirs(out_dir, exist_ok=True)
    work = os.path.abspath(os.path.join(out_dir, f".{name}-work"))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    trace = os.path.join(out_dir, f"{name}.vmt")
    try:
        log(f"{name}: preparing inputs (scale {scale}, seed {seed})")
        t0 = time.perf_counter()
        plan = d.prepare(work, scale, seed, opts)
        prep = time.perf_counter() - t0
        native_info = None
        if native:
            log(f"{name}: native run: {' '.join(plan.command)}")
            native_info = _run_native(plan)
            # Fresh inputs: the native run may have changed them.
            shutil.rmtree(work, ignore_errors=True)
            os.makedirs(work)
            plan = d.prepare(work, scale, seed, opts)
        log(f"{name}: recording: {' '.join(plan.command)}")
        rec = _run_recorded(plan, trace)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    st = rec.pop("stats")
    info = trace_info(trace, reuse=False)
    side: Dict[str, Any] = {
        "workload": name,
        "trace": os.path.basename(trace),
        "scale": scale,
        "seed": seed,
        "options": opts,
        "command": plan.command,
        "client_commands": plan.client_commands,
        "programs": {k: _version(v) for k, v in d.versions.items()},
        "host": {"python": platform.python_version(), "machine": platform.machine(),
                 "kernel": platform.release(), "cpus": os.cpu_count()},
        "params": plan.params,
        "prepare_seconds": prep,
        "duration_seconds": rec["seconds"],
        "returncode": rec["returncode"],
        "accesses": st["accesses"],
        "memory_references": st["memory_references"],
        "read_references": st["read_references"],
        "write_references": st["write_references"],
        "threads": st["threads"],
        "processes": st["processes"],
        "instructions": st["instructions"],
        "io_records": st["io_records"],
        "files": st["files"],
        "complete": st["complete"],
        "footprint_pages": info.distinct_pages,
        "page_size": info.page_size,
        "trace_bytes": os.path.getsize(trace),
    }
    for k in ("drive_seconds",):
        if k in rec:
            side[k] = rec[k]
    side["client"] = {k: v for k, v in rec.items()
                      if k not in ("seconds", "returncode", "drive_seconds")}
    if native_info is not None:
        side["native"] = native_info
        # Servers: the client phase (same requests both ways); batch programs: the whole run.
        key = "drive_seconds" if "drive_seconds" in native_info else "seconds"
        base = native_info[key]
        side["slowdown"] = (rec[key] / base) if base > 0 else None
        side["slowdown_of"] = key
    with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
        json.dump(side, f, indent=1, sort_keys=True)
        f.write("\n")
    return side
