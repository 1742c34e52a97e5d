"""Batch programs recorded from start to exit: gzip, pbzip2, dd, kernbench (gcc's cc1),
stress-ng --vm (its forked workers are recorded, each process under its own thread ids).
"""

from __future__ import annotations

import os
import random
import subprocess
from typing import Dict

from . import Driver, Plan, register


def write_text_file(path: str, nbytes: int, seed: int) -> int:
    """Compressible but not trivial: log-like lines with varying numbers and words."""
    rng = random.Random(seed)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
             "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"]
    with open(path, "w") as f:
        i = 0
        while f.tell() < nbytes:
            f.write(f"{i:08d} {rng.choice(words)} value={rng.randrange(1_000_003)} "
                    f"name=item{rng.randrange(977)} {rng.choice(words)}\n")
            i += 1
    return os.path.getsize(path)


APT = "apt-get install {} (or: make deps-drivers)"


def _gzip(work: str, scale: float, seed: int, opts: Dict[str, str]) -> Plan:
    src = os.path.join(work, "input.txt")
    size = write_text_file(src, max(int(8 * scale * (1 << 20)), 4096), seed)
    return Plan(command=["gzip", "-c", f"-{opts['level']}", src],
                params={"input_bytes": size, "output": "discarded (stdout to /dev/null)"})


def _pbzip2(work: str, scale: float, seed: int, opts: Dict[str, str]) -> Plan:
    src = os.path.join(work, "input.txt")
    size = write_text_file(src, max(int(8 * scale * (1 << 20)), 4096), seed)
    return Plan(command=["pbzip2", "-c", "-k", f"-p{opts['threads']}", src],
                params={"input_bytes": size, "output": "discarded (stdout to /dev/null)"})


def _dd(work: str, scale: float, seed: int, opts: Dict[str, str]) -> Plan:
    src = os.path.join(work, "input.bin")
    dst = os.path.join(work, "output.bin")
    size = max(int(64 * scale * (1 << 20)), 1 << 16)
    rng = random.Random(seed)
    with open(src, "wb") as f:
        left = size
        while left:
            n = min(left, 1 << 20)
            f.write(rng.randbytes(n))
            left -= n
    return Plan(command=["dd", f"if={src}", f"of={dst}", f"bs={opts['bs']}", "status=none"],
                params={"input_bytes": size})


# ---------------------------------------------------------------- kernbench


def c_project(nfuncs: int, seed: int) -> str:
    """One translation unit of ``nfuncs`` functions of the kinds a kernel or a library is
    made of (struct walks, table lookups, string handling, bit twiddling, sorting)."""
    rng = random.Random(seed)
    out = ["#include <stddef.h>", "#include <string.h>", "#include <stdint.h>", "",
           "struct node { struct node *next; uint64_t key; uint32_t flags; char name[32]; };",
           "struct table { struct node *slot[256]; size_t n; };", ""]
    for i in range(nfuncs):
        k = rng.randrange(5)
        c1, c2 = rng.randrange(1, 1 << 16), rng.randrange(1, 31)
        if k == 0:
            out.append(f"""struct node *lookup_{i}(struct table *t, uint64_t key) {{
    struct node *n = t->slot[(key * {c1}u) & 255];
    while (n && n->key != key) n = n->next;
    if (n && (n->flags & {1 << (c2 % 8)})) n->flags ^= {c2};
    return n;
}}""")
        elif k == 1:
            out.append(f"""size_t scan_{i}(const char *s, size_t len) {{
    size_t words = 0; int in = 0;
    for (size_t j = 0; j < len; j++) {{
        int sp = s[j] == ' ' || s[j] == '\\n' || s[j] == {c2};
        if (!sp && !in) words++;
        in = !sp;
    }}
    return words * {c1}u;
}}""")
        elif k == 2:
            out.append(f"""uint64_t mix_{i}(uint64_t x) {{
    x ^= x >> {c2}; x *= 0x9E3779B97F4A7C15ull; x ^= x >> {(c2 + 7) % 63 + 1};
    switch (x & 7) {{
    case 0: return x + {c1}u; case 1: return x ^ {c1}u; case 2: return x << 3;
    case 3: return x * {c2}u; case 4: return ~x; default: return x >> 5;
    }}
}}""")
        elif k == 3:
            out.append(f"""void sort_{i}(int *a, int n) {{
    for (int g = n / 2; g > 0; g /= 2)
        for (int j = g; j < n; j++)
            for (int m = j - g; m >= 0 && a[m] > a[m + g] + {c2}; m -= g) {{
                int t = a[m]; a[m] = a[m + g]; a[m + g] = t;
            }}
}}""")
        else:
            out.append(f"""int insert_{i}(struct table *t, struct node *n, const char *name) {{
    size_t h = (n->key ^ {c1}u) & 255;
    strncpy(n->name, name, sizeof n->name - 1);
    n->name[sizeof n->name - 1] = 0;
    n->next = t->slot[h]; t->slot[h] = n; t->n++;
    return (int)(t->n % {c2 + 1});
}}""")
    return "\n".join(out) + "\n"


def _cc1() -> str:
    r = subprocess.run(["gcc", "-print-prog-name=cc1"], capture_output=True, text=True)
    return r.stdout.strip()


def _kernbench(work: str, scale: float, seed: int, opts: Dict[str, str]) -> Plan:
    src = os.path.join(work, "unit.c")
    with open(src, "w") as f:
        f.write(c_project(max(int(400 * scale), 5), seed))
    pre = os.path.join(work, "unit.i")
    # The preprocessor runs here, unrecorded; cc1 (the compiler proper, where the time goes)
    # is recorded. `gcc -c` would run cc1 and as in children, which the recorder skips.
    subprocess.run(["gcc", "-E", "-o", pre, src], check=True)
    asm = os.path.join(work, "unit.s")
    cc1 = _cc1()
    return Plan(command=[cc1, "-fpreprocessed", pre, "-quiet", f"-O{opts['opt']}",
                         "-o", asm],
                params={"functions": max(int(400 * scale), 5),
                        "source_bytes": os.path.getsize(src),
                        "preprocessed_bytes": os.path.getsize(pre),
                        "preprocess": ["gcc", "-E", "-o", pre, src]})


# ---------------------------------------------------------------- stress-ng --vm


def _stress_ng(work: str, scale: float, seed: int, opts: Dict[str, str]) -> Plan:
    workers = int(opts["workers"])
    if workers < 1:
        raise ValueError(f"stress-ng: workers must be at least 1, got {workers}")
    # --vm-bytes 128 MiB x scale (at least 1 MiB, whole pages), which stress-ng (0.15)
    # divides among the workers; bogo operations in all: 8000 x scale (at least 8). Each vm
    # worker forks a child that does the work (so that the OOM killer takes the child, not
    # the worker): the trace holds the parent's set-up, each worker's bookkeeping and each
    # child's sweeps, under distinct tids.
    nbytes = max(int(128 * scale * (1 << 20)) // 4096 * 4096, 1 << 20)
    ops = max(int(8000 * scale), 8)
    cmd = ["stress-ng", "--vm", str(workers), "--vm-bytes", str(nbytes), "--vm-ops", str(ops),
           "--vm-method", opts["method"], "--seed", str(seed), "--temp-path", work, "-q"]
    return Plan(command=cmd, params={"workers": workers, "vm_bytes": nbytes,
                                     "vm_ops": ops, "method": opts["method"]})


register(Driver(
    name="gzip", help="gzip -c of a generated 8 MiB x scale text file",
    needs={"gzip": APT.format("gzip")}, modules={}, prepare=_gzip,
    versions={"gzip": ["gzip", "--version"]}, options={"level": (6, "compression level 1-9")},
))
register(Driver(
    name="pbzip2", help="pbzip2 -c of a generated 8 MiB x scale text file (threads in one "
    "process, all recorded)",
    needs={"pbzip2": APT.format("pbzip2")}, modules={}, prepare=_pbzip2,
    versions={"pbzip2": ["pbzip2", "--version"]}, options={"threads": (2, "pbzip2 -p")},
))
register(Driver(
    name="dd", help="dd copying a generated 64 MiB x scale file (sequential file I/O)",
    needs={"dd": APT.format("coreutils")}, modules={}, prepare=_dd,
    versions={"dd": ["dd", "--version"]}, options={"bs": ("64K", "dd bs=")},
))
register(Driver(
    name="kernbench", help="gcc's cc1 compiling a generated C unit (400 functions x scale) "
    "at -O2; cc1 itself is recorded, not the gcc driver",
    needs={"gcc": APT.format("gcc")}, modules={}, prepare=_kernbench,
    versions={"gcc": ["gcc", "--version"]}, options={"opt": (2, "optimisation level")},
))
register(Driver(
    name="stress-ng", help="stress-ng --vm: 2 workers sweeping 128 MiB x scale in all with "
    "the vm methods in turn, 8000 x scale bogo ops (forked workers recorded)",
    needs={"stress-ng": APT.format("stress-ng")}, modules={}, prepare=_stress_ng,
    versions={"stress-ng": ["stress-ng", "--version"]},
    options={"workers": (2, "stress-ng --vm N"),
             "method": ("all", "stress-ng --vm-method (all: every method in turn)")},
))
