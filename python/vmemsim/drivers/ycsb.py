"""A small YCSB-like client for memcached's text protocol (no dependencies beyond numpy).

Keys follow YCSB's core workloads: a load phase inserts ``records`` keys ``user<hash>``; the
run phase draws record numbers from a Zipfian distribution (theta 0.99) and scrambles them with
FNV-1a 64 (YCSB's ``ScrambledZipfianGenerator`` idea: popular items spread over the key space,
not clustered at low numbers). The Zipfian draw is Gray et al.'s method ("Quickly generating
billion-record synthetic databases", SIGMOD 1994), which YCSB's ``ZipfianGenerator`` uses.
Workloads: A = 50% reads / 50% updates, B = 95/5, C = read only; an update is a ``set`` (as
YCSB's memcached binding does). Left out: YCSB's field structure (one value of
``value_bytes`` stands for its 10 fields), inserts during the run (workloads D/E), latency
histograms, several client threads.
"""

from __future__ import annotations

import socket
import time
from typing import Any, Dict

import numpy as np

#: workload -> read proportion
WORKLOADS = {"a": 0.5, "b": 0.95, "c": 1.0}

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3


def fnv1a64(v: int) -> int:
    """FNV-1a over the 8 little-endian bytes of ``v`` (as YCSB's ``Utils.fnvhash64``)."""
    h = _FNV_OFFSET
    for _ in range(8):
        h ^= v & 0xFF
        h = (h * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
        v >>= 8
    return h


def zeta(n: int, theta: float) -> float:
    return float(np.sum(1.0 / np.arange(1, n + 1, dtype=np.float64) ** theta))


def zipf_ranks(n: int, count: int, theta: float, rng: np.random.Generator) -> np.ndarray:
    """``count`` draws of ranks 0..n-1, rank 0 the most popular (Gray et al.)."""
    zetan = zeta(n, theta)
    zeta2 = 1.0 + 0.5**theta
    alpha = 1.0 / (1.0 - theta)
    eta = (1.0 - (2.0 / n) ** (1.0 - theta)) / (1.0 - zeta2 / zetan)
    u = rng.random(count)
    uz = u * zetan
    r = (n * (eta * u - eta + 1.0) ** alpha).astype(np.int64)
    r = np.where(uz < zeta2, 1, r)
    r = np.where(uz < 1.0, 0, r)
    return np.minimum(r, n - 1)


def key_of(record: int) -> bytes:
    """YCSB's hashed key order: ``"user" + fnvhash64(record)``."""
    return b"user%d" % (fnv1a64(record) % (1 << 63))


class Memcache:
    """One connection, text protocol."""

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self.sock = socket.create_connection((host, port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.sock.makefile("rb")

    def __enter__(self) -> "Memcache":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.f.close()
        self.sock.close()

    def version(self) -> str:
        self.sock.sendall(b"version\r\n")
        return self.f.readline().decode().strip()

    def set(self, key: bytes, value: bytes) -> None:
        self.sock.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value))
        line = self.f.readline()
        if line != b"STORED\r\n":
            raise RuntimeError(f"memcached: set {key!r}: {line!r}")

    def get(self, key: bytes) -> bool:
        self.sock.sendall(b"get %s\r\n" % key)
        line = self.f.readline()
        hit = False
        while line != b"END\r\n":
            if not line.startswith(b"VALUE "):
                raise RuntimeError(f"memcached: get {key!r}: {line!r}")
            size = int(line.split()[3])
            self.f.read(size + 2)
            hit = True
            line = self.f.readline()
        return hit

    def shutdown(self) -> None:
        self.sock.sendall(b"shutdown\r\n")


def run_ycsb(port: int, workload: str, records: int, operations: int, value_bytes: int,
             seed: int) -> Dict[str, Any]:
    """Load ``records`` keys, then run ``operations`` operations of ``workload``."""
    rng = np.random.default_rng(seed)
    read_p = WORKLOADS[workload]
    keys = [key_of(i) for i in range(records)]
    # Scrambling: rank -> record, so that popular records are spread over the load order.
    scramble = np.array([fnv1a64(i) % records for i in range(records)], dtype=np.int64)
    with Memcache(port) as mc:
        t0 = time.perf_counter()
        for k in keys:
            mc.set(k, rng.bytes((value_bytes + 1) // 2).hex().encode()[:value_bytes])
        load = time.perf_counter() - t0
        ranks = scramble[zipf_ranks(records, operations, 0.99, rng)]
        reads = rng.random(operations) < read_p
        value = b"v" * value_bytes
        hits = 0
        t1 = time.perf_counter()
        for r, rd in zip(ranks.tolist(), reads.tolist()):
            if rd:
                hits += mc.get(keys[r])
            else:
                mc.set(keys[r], value)
        run = time.perf_counter() - t1
    nread = int(reads.sum())
    return {"load_seconds": load, "run_seconds": run, "reads": nread,
            "updates": operations - nread, "read_hits": hits,
            "distinct_records_touched": int(np.unique(ranks).size)}
