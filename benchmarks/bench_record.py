#!/usr/bin/env python3
"""Recording speed of ``vmemsim trace record`` beside Valgrind's lackey through a pipe.

Workloads (each skipped, saying so, when its programs are missing):

- ``redis``: redis-server driven by redis-benchmark (SET and GET, 50 clients). The figure is
  the benchmark's throughput, native over recorded (= recorded wall / native wall for the
  same requests); lackey and Valgrind's ``none`` tool (the cost of Valgrind alone) beside.
- ``gzip``: ``gzip -c`` of a generated file (CPU-bound), wall time per input byte.
- ``drivers``: the issue's set through the ``vmemsim workloads`` drivers (the same inputs,
  servers and clients as ``vmemsim workloads record``): ``redis`` (redis-benchmark SET+GET),
  ``memcached`` (the YCSB-like client, workload a: load then operations) and ``sqlite-tpch``
  (Q1, Q3, Q6 on SQLite, a batch run). Each configuration (native, recorded, lackey) runs
  ``--reps`` times (default 3); the medians are quoted. Servers: wall time of the client
  phase per request; sqlite-tpch: wall time of the whole run (Python start-up included).

For each: slowdown vs native, and for the recorder the trace's bytes per million accesses
(accesses = the trace's access records, as replay counts them; memory references = the loads,
stores and fetches they fold).

    python benchmarks/bench_record.py [--requests 200000] [--gzip-mb 16] [--only redis]
    python benchmarks/bench_record.py --only drivers [--reps 3] [--redis-scale 0.2] ...

lackey runs on a tenth of the work (it is ~100x slower still; ``--lackey-fraction``); the
ratios are per request / per byte, so they compare. For sqlite-tpch lackey runs the same
work (a batch run's start-up does not scale with the input). ``apt-get install redis-server
redis-tools`` gives redis (``make deps-drivers`` every driver's programs).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional

from vmemsim.recorder import build, record
from vmemsim.recorder.build import find_valgrind


def _wait_port(port: int, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
            r = subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True,
                               text=True)
            if "PONG" in r.stdout:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("server did not answer")


def _redis_bench(port: int, n: int) -> Dict[str, float]:
    t0 = time.perf_counter()
    r = subprocess.run(
        ["redis-benchmark", "-p", str(port), "-n", str(n), "-c", "50", "-t", "set,get", "-q",
         "-r", "100000"],
        capture_output=True, text=True, check=True,
    )
    wall = time.perf_counter() - t0
    rps = [float(x) for x in re.findall(r"([\d.]+) requests per second", r.stdout)]
    return {"wall": wall, "requests": 2 * n, "rps": 2 * n / wall, "reported_rps": rps}


def _lackey_pipe_reader(fd: int, box: Dict[str, int]) -> None:
    n = 0
    with os.fdopen(fd, "rb", buffering=0) as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            n += len(b)
    box["bytes"] = n


def _server_cmd(port: int) -> List[str]:
    return ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no",
            "--daemonize", "no", "--io-threads", "1"]


def run_redis(n: int, port: int = 6391) -> Dict[str, object]:
    out: Dict[str, object] = {}
    vg = find_valgrind()
    libdir = build()
    tmp = tempfile.mkdtemp(prefix="bench-record-")

    # native
    p = subprocess.Popen(_server_cmd(port), stdout=subprocess.DEVNULL)
    _wait_port(port, p)
    out["native"] = _redis_bench(port, n)
    subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True)
    p.wait()

    # valgrind --tool=none
    p = subprocess.Popen([vg["exe"], "--tool=none", "-q", *_server_cmd(port)],
                         stdout=subprocess.DEVNULL)
    _wait_port(port, p)
    out["none"] = _redis_bench(port, n)
    subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True)
    p.wait()

    # vmemsim trace record
    trace = os.path.join(tmp, "redis.vmt")
    box: Dict[str, object] = {}

    def rec() -> None:
        box["rec"] = record(_server_cmd(port), trace, stdout=subprocess.DEVNULL)

    t = threading.Thread(target=rec)
    t.start()
    time.sleep(0.5)
    deadline = time.time() + 120
    while time.time() < deadline:
        r = subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True)
        if "PONG" in r.stdout:
            break
        time.sleep(0.3)
    out["record"] = _redis_bench(port, n)
    subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True)
    t.join()
    rr = box["rec"]
    st = rr.stats  # type: ignore[attr-defined]
    size = os.path.getsize(trace)
    out["record"]["stats"] = st  # type: ignore[index]
    out["record"]["trace_bytes"] = size  # type: ignore[index]
    out["record"]["bytes_per_million_accesses"] = size / (st["accesses"] / 1e6)  # type: ignore[index]
    out["record"]["raw_bytes_per_million_accesses"] = st["raw_bytes"] / (st["accesses"] / 1e6)  # type: ignore[index]

    # lackey --trace-mem through a pipe, on a tenth of the requests
    rfd, wfd = os.pipe()
    lbox: Dict[str, int] = {}
    reader = threading.Thread(target=_lackey_pipe_reader, args=(rfd, lbox))
    reader.start()
    p = subprocess.Popen([vg["exe"], "--tool=lackey", "--trace-mem=yes", f"--log-fd={wfd}",
                          *_server_cmd(port)], stdout=subprocess.DEVNULL, pass_fds=(wfd,))
    os.close(wfd)
    _wait_port(port, p, timeout=600)
    out["lackey"] = _redis_bench(port, max(n // 10, 1000))
    subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True)
    p.wait()
    reader.join()
    out["lackey"]["pipe_bytes"] = lbox.get("bytes", 0)  # type: ignore[index]
    shutil.rmtree(tmp, ignore_errors=True)
    native = out["native"]["rps"]  # type: ignore[index]
    for k in ("none", "record", "lackey"):
        out[k]["slowdown"] = native / out[k]["rps"]  # type: ignore[index]
    del libdir
    return out


def run_gzip(mb: int) -> Dict[str, object]:
    vg = find_valgrind()
    tmp = tempfile.mkdtemp(prefix="bench-record-")
    data = os.path.join(tmp, "in.dat")
    small = os.path.join(tmp, "small.dat")
    # Compressible but not trivial: text-like lines with varying numbers.
    with open(data, "w") as f:
        i = 0
        while f.tell() < mb << 20:
            f.write(f"line {i} value {(i * 2654435761) % 1000003} name item{i % 977}\n")
            i += 1
    with open(data, "rb") as f, open(small, "wb") as g:
        g.write(f.read((mb << 20) // 10))
    size, small_size = os.path.getsize(data), os.path.getsize(small)

    def timed(cmd: List[str], **kw) -> float:
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, **kw)
        return time.perf_counter() - t0

    out: Dict[str, object] = {}
    native = min(timed(["gzip", "-c", data]) for _ in range(3))
    out["native"] = {"wall": native, "bytes": size}
    out["none"] = {"wall": timed([vg["exe"], "--tool=none", "-q", "gzip", "-c", data]),
                   "bytes": size}
    trace = os.path.join(tmp, "gzip.vmt")
    so = open(os.devnull, "w")
    r = record(["gzip", "-c", data], trace, stdout=so)
    st = r.stats
    out["record"] = {"wall": r.seconds, "bytes": size, "stats": st,
                     "trace_bytes": os.path.getsize(trace),
                     "bytes_per_million_accesses": os.path.getsize(trace) / (st["accesses"] / 1e6),
                     "raw_bytes_per_million_accesses": st["raw_bytes"] / (st["accesses"] / 1e6)}
    rfd, wfd = os.pipe()
    lbox: Dict[str, int] = {}
    reader = threading.Thread(target=_lackey_pipe_reader, args=(rfd, lbox))
    reader.start()
    t0 = time.perf_counter()
    subprocess.run([vg["exe"], "--tool=lackey", "--trace-mem=yes", f"--log-fd={wfd}", "gzip",
                    "-c", small], stdout=subprocess.DEVNULL, pass_fds=(wfd,), check=True)
    os.close(wfd)
    lw = time.perf_counter() - t0
    reader.join()
    out["lackey"] = {"wall": lw, "bytes": small_size, "pipe_bytes": lbox.get("bytes", 0)}
    per_byte = native / size
    for k in ("none", "record", "lackey"):
        o = out[k]
        o["slowdown"] = (o["wall"] / o["bytes"]) / per_byte  # type: ignore[index,operator]
    shutil.rmtree(tmp, ignore_errors=True)
    return out


# ---------------------------------------------------------------- the drivers' workloads


def _units(name: str, params: Dict[str, object]) -> float:
    """Requests a server's client phase makes (1 for a batch run)."""
    if name == "redis":
        return float(params["requests_per_test"]) * 2  # type: ignore[arg-type]
    if name == "memcached":
        return float(params["records"]) + float(params["operations"])  # type: ignore[arg-type]
    return 1.0


def _run_under(plan, prefix: List[str], pass_fds=()) -> Dict[str, float]:
    """The plan with its command run under ``prefix`` (none: native): wall of the whole run
    and of the client phase."""
    from vmemsim.drivers import wait_until

    t0 = time.perf_counter()
    proc = subprocess.Popen([*prefix, *plan.command], stdout=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, pass_fds=pass_fds)
    info: Dict[str, float] = {}
    try:
        if plan.drive is not None:
            wait_until(plan.ready, plan.command[0], timeout=600,
                       alive=lambda: proc.poll() is None)
            t1 = time.perf_counter()
            plan.drive()
            info["drive_seconds"] = time.perf_counter() - t1
            plan.stop()
        rc = proc.wait(timeout=3600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    info["seconds"] = time.perf_counter() - t0
    if rc != 0:
        raise RuntimeError(f"{plan.command[0]} exited with status {rc}")
    return info


def _median(xs: List[float]) -> float:
    ys = sorted(xs)
    n = len(ys)
    return ys[n // 2] if n % 2 else (ys[n // 2 - 1] + ys[n // 2]) / 2


def run_driver(name: str, scale: float, lackey_scale: float, reps: int,
               opts: Optional[Dict[str, str]] = None,
               modes: tuple = ("native", "record", "lackey")) -> Dict[str, object]:
    """Native, recorded and lackey-through-a-pipe runs of driver ``name``, ``reps`` times
    each (interleaved: native, record, lackey, native, ...), with medians. ``modes`` must
    include native."""
    from vmemsim.drivers import DRIVERS, _load, _run_recorded

    _load()
    d = DRIVERS[name]
    o = {k: str(v[0]) for k, v in d.options.items()}
    o.update(opts or {})
    vg = find_valgrind()
    key = "drive_seconds" if name in ("redis", "memcached") else "seconds"
    runs: Dict[str, List[Dict[str, object]]] = {m: [] for m in modes}
    for _ in range(reps):
        for mode in modes:
            work = tempfile.mkdtemp(prefix=f"bench-record-{name}-")
            try:
                sc = lackey_scale if mode == "lackey" else scale
                plan = d.prepare(work, sc, 1, o)
                units = _units(name, plan.params)
                if mode == "native":
                    r: Dict[str, object] = dict(_run_under(plan, []))
                elif mode == "record":
                    trace = os.path.join(work, "t.vmt")
                    info = _run_recorded(plan, trace)
                    st = info["stats"]
                    size = os.path.getsize(trace)
                    r = {key: info[key], "seconds": info["seconds"],
                         "accesses": st["accesses"],
                         "memory_references": st["memory_references"],
                         "trace_bytes": size,
                         "bytes_per_million_accesses": size / (st["accesses"] / 1e6)}
                else:
                    rfd, wfd = os.pipe()
                    lbox: Dict[str, int] = {}
                    reader = threading.Thread(target=_lackey_pipe_reader, args=(rfd, lbox))
                    reader.start()
                    try:
                        r = dict(_run_under(plan, [str(vg["exe"]), "--tool=lackey",
                                                   "--trace-mem=yes", f"--log-fd={wfd}"],
                                            pass_fds=(wfd,)))
                    finally:
                        os.close(wfd)
                        reader.join()
                    r["pipe_bytes"] = lbox.get("bytes", 0)
                r["units"] = units
                r["per_unit"] = float(r[key]) / units  # type: ignore[arg-type]
                runs[mode].append(r)
                print(f"  {name} {mode} (scale {sc}): {r[key]:.2f} s", file=sys.stderr)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    med = {m: _median([float(r["per_unit"]) for r in rs]) for m, rs in runs.items()}  # type: ignore[arg-type]
    out: Dict[str, object] = {
        "scale": scale, "lackey_scale": lackey_scale, "reps": reps, "of": key, "runs": runs,
        "median_per_unit": med,
    }
    if "record" in runs:
        out.update(
            record_slowdown=med["record"] / med["native"],
            record_bytes_per_million_accesses=_median(
                [float(r["bytes_per_million_accesses"]) for r in runs["record"]]),  # type: ignore[arg-type]
            record_accesses=_median([float(r["accesses"]) for r in runs["record"]]),  # type: ignore[arg-type]
        )
    if "lackey" in runs:
        out["lackey_slowdown"] = med["lackey"] / med["native"]
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=200_000, help="redis-benchmark -n")
    ap.add_argument("--gzip-mb", type=int, default=16)
    ap.add_argument("--only", choices=["redis", "gzip", "drivers"], default=None)
    ap.add_argument("--reps", type=int, default=3, help="runs per configuration (drivers)")
    ap.add_argument("--redis-scale", type=float, default=0.2)
    ap.add_argument("--memcached-scale", type=float, default=0.2)
    ap.add_argument("--sqlite-scale", type=float, default=0.1)
    ap.add_argument("--lackey-fraction", type=float, default=0.1,
                    help="lackey's share of the servers' work")
    ap.add_argument("--no-lackey", action="store_true",
                    help="drivers: native and recorded runs only")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    results: Dict[str, object] = {"cpus": os.cpu_count()}
    if args.only in (None, "redis"):
        if shutil.which("redis-server") and shutil.which("redis-benchmark"):
            results["redis"] = run_redis(args.requests)
        else:
            print("redis: skipped (apt-get install redis-server redis-tools)", file=sys.stderr)
    if args.only in (None, "gzip"):
        results["gzip"] = run_gzip(args.gzip_mb)
    if args.only in (None, "drivers"):
        from vmemsim.drivers import missing_programs

        for name, sc, lsc in (
            ("redis", args.redis_scale, args.redis_scale * args.lackey_fraction),
            ("memcached", args.memcached_scale, args.memcached_scale * args.lackey_fraction),
            ("sqlite-tpch", args.sqlite_scale, args.sqlite_scale),
        ):
            miss = missing_programs(name)
            if miss:
                print(f"{name}: skipped ({'; '.join(miss)})", file=sys.stderr)
                continue
            modes = ("native", "record") if args.no_lackey else ("native", "record", "lackey")
            results[name] = run_driver(name, sc, lsc, args.reps, modes=modes)
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    for w in ("redis", "memcached", "sqlite-tpch"):
        r = results.get(w)
        if not isinstance(r, dict) or "median_per_unit" not in r:
            continue
        lk = (f", lackey {r['lackey_slowdown']:.0f}x (scale {r['lackey_scale']})"
              if "lackey_slowdown" in r else "")
        print(f"{w} (scale {r['scale']}, medians of {r['reps']}, {r['of']}): record "
              f"{r['record_slowdown']:.1f}x native{lk}; "
              f"{r['record_bytes_per_million_accesses']:,.0f} trace bytes per M accesses "
              f"({r['record_accesses'] / 1e6:,.0f} M accesses)")
    for w in ("redis", "gzip"):
        if w not in results or "median_per_unit" in results[w]:  # type: ignore[operator]
            continue
        r = results[w]
        print(f"{w}:")
        for k in ("none", "record", "lackey"):
            o = r[k]  # type: ignore[index]
            extra = ""
            if k == "record":
                extra = (f"  {o['stats']['accesses'] / 1e6:,.1f} M accesses in "
                         f"{o['stats']['records'] / 1e6:,.2f} M records, "
                         f"{o['bytes_per_million_accesses']:,.0f} trace bytes per M accesses")
            print(f"  {k:<7} {o['slowdown']:7.1f}x native{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
