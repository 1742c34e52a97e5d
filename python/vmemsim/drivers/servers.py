"""Servers recorded while an unrecorded client drives them: redis, memcached (YCSB-like)."""

from __future__ import annotations

import re
import socket
import subprocess
from typing import Any, Dict

from . import Driver, Plan, register
from .ycsb import WORKLOADS, Memcache, run_ycsb

APT_REDIS = "apt-get install redis-server redis-tools (or: make deps-drivers)"
APT_MEMCACHED = "apt-get install memcached (or: make deps-drivers)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _connects(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


# ---------------------------------------------------------------- redis


def _redis(work: str, scale: float, seed: int, opts: Dict[str, str]) -> Plan:
    port = free_port()
    n = max(int(100_000 * scale), 100)
    keyspace = max(int(100_000 * scale), 100)
    clients = opts["clients"]
    server = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
              "--appendonly", "no", "--daemonize", "no", "--io-threads", "1",
              "--dir", work]
    bench = ["redis-benchmark", "-p", str(port), "-n", str(n), "-c", clients, "-t",
             opts["tests"], "-q", "-r", str(keyspace), "-d", opts["value_bytes"]]

    def ready() -> bool:
        if not _connects(port):
            return False
        r = subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True,
                           text=True)
        return "PONG" in r.stdout

    def drive() -> Dict[str, Any]:
        r = subprocess.run(bench, capture_output=True, text=True, check=True)
        rps = {m.group(1): float(m.group(2))
               for m in re.finditer(r"^(\S+): ([\d.]+) requests per second", r.stdout, re.M)}
        return {"requests_per_second": rps}

    def stop() -> None:
        subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"],
                       capture_output=True)

    return Plan(command=server, ready=ready, drive=drive, stop=stop, client_commands=[bench],
                params={"requests_per_test": n, "keyspace": keyspace,
                        "note": "redis-benchmark 7.0 picks keys from its own unseeded RNG"})


register(Driver(
    name="redis",
    help="redis-server recorded while redis-benchmark runs SET and GET (-n 100k x scale)",
    needs={"redis-server": APT_REDIS, "redis-benchmark": APT_REDIS, "redis-cli": APT_REDIS},
    modules={},
    prepare=_redis,
    versions={"redis-server": ["redis-server", "--version"],
              "redis-benchmark": ["redis-benchmark", "--version"]},
    options={"clients": (50, "redis-benchmark -c"), "tests": ("set,get", "redis-benchmark -t"),
             "value_bytes": (3, "redis-benchmark -d")},
))


# ---------------------------------------------------------------- memcached


def _valgrind_fd_limit() -> int:
    """memcached sets RLIMIT_NOFILE's soft and hard limits to its -c (max connections); under
    Valgrind, setrlimit fails unless the hard limit stays Valgrind's, which is the real hard
    limit less the 12 descriptors Valgrind keeps for itself (measured: 20000 -> 19988)."""
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY or hard > 1 << 20:
        hard = 1 << 20
    return max(hard - 12, 64)


def _memcached(work: str, scale: float, seed: int, opts: Dict[str, str]) -> Plan:
    wl = opts["workload"].lower()
    if wl not in WORKLOADS:
        raise ValueError(f"memcached: workload '{wl}' is not one of {', '.join(WORKLOADS)}")
    port = free_port()
    records = max(int(50_000 * scale), 50)
    ops = max(int(100_000 * scale), 100)
    value = int(opts["value_bytes"])
    mem_mb = max(64, (records * (value + 100)) // (1 << 20) * 2)
    server = ["memcached", "-p", str(port), "-U", "0", "-l", "127.0.0.1", "-t",
              opts["threads"], "-m", str(mem_mb), "-A", "-u", "root",
              "-c", str(_valgrind_fd_limit())]
    client = [f"vmemsim.drivers.ycsb workload={wl} records={records} operations={ops} "
              f"zipfian=0.99 value_bytes={value} seed={seed} (in the driver's process)"]

    def ready() -> bool:
        if not _connects(port):
            return False
        try:
            with Memcache(port) as mc:
                return mc.version().startswith("VERSION")
        except OSError:
            return False

    def drive() -> Dict[str, Any]:
        return run_ycsb(port, wl, records, ops, value, seed)

    def stop() -> None:
        try:
            with Memcache(port) as mc:
                mc.shutdown()
        except OSError:
            pass

    return Plan(command=server, ready=ready, drive=drive, stop=stop, client_commands=[client],
                params={"workload": wl, "records": records, "operations": ops,
                        "zipfian_theta": 0.99, "value_bytes": value, "memory_mb": mem_mb})


register(Driver(
    name="memcached",
    help="memcached recorded under a YCSB-like client (zipfian 0.99; -o workload=a|b|c; "
    "50k records, 100k operations x scale)",
    needs={"memcached": APT_MEMCACHED},
    modules={},
    prepare=_memcached,
    versions={"memcached": ["memcached", "-V"]},
    options={"workload": ("a", "YCSB core workload: a (50% update), b (5% update), c (read only)"),
             "threads": (1, "memcached -t (worker threads)"),
             "value_bytes": (1000, "bytes per value (YCSB: 10 fields x 100 bytes)")},
))

