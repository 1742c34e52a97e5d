#!/usr/bin/env python3
"""Recording speed of ``vmemsim trace record`` beside Valgrind's lackey through a pipe.

Workloads (each skipped, saying so, when its programs are missing):

- ``redis``: redis-server driven by redis-benchmark (SET and GET, 50 clients). The figure is
  the benchmark's throughput, native over recorded (= recorded wall / native wall for the
  same requests); lackey and Valgrind's ``none`` tool (the cost of Valgrind alone) beside.
- ``gzip``: ``gzip -c`` of a generated file (CPU-bound), wall time per input byte.

For each: slowdown vs native, and for the recorder the trace's bytes per million accesses
(accesses = the loads, stores and fetches the recorded records fold).

    python benchmarks/bench_record.py [--requests 200000] [--gzip-mb 16] [--only redis]

lackey runs on a tenth of the work (it is ~100x slower still); the ratios are per request /
per byte, so they compare. ``apt-get install redis-server redis-tools`` gives redis.
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


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=200_000, help="redis-benchmark -n")
    ap.add_argument("--gzip-mb", type=int, default=16)
    ap.add_argument("--only", choices=["redis", "gzip"], default=None)
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
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    for w in ("redis", "gzip"):
        if w not in results:
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
