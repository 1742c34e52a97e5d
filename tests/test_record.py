"""``vmemsim trace record`` on small C programs with known access patterns.

Each program prints the address range of its own buffer; the trace, filtered to that range,
must hold exactly the expected page sequence per thread, with the expected counts (each
program touches a known number of bytes per page with nothing in between), and the expected
file I/O records. The programs are compiled here with gcc; the tests skip, saying why, only
when Valgrind, its tool headers or gcc are missing (``make deps-debian`` installs them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import vmemsim
from vmemsim.recorder import available, read_recorded, record

_REASON = available() if shutil.which("gcc") else "gcc is not on PATH (apt-get install gcc)"
pytestmark = pytest.mark.skipif(_REASON is not None, reason=f"recorder unavailable: {_REASON}")

PAGE = 4096


def _compile(tmp: Path, name: str, source: str) -> Path:
    src = tmp / f"{name}.c"
    src.write_text(textwrap.dedent(source))
    exe = tmp / name
    subprocess.run(["gcc", "-O2", "-pthread", "-o", str(exe), str(src)], check=True)
    return exe


SEQ_TWICE = r"""
    #include <stdio.h>
    #include <sys/mman.h>
    #define N 40
    int main(void) {
        volatile char *b = mmap(0, N * 4096, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        printf("%lx %d\n", (unsigned long)b, N);
        fflush(stdout);
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < N; i++) {
                b[i * 4096] = 1; b[i * 4096 + 100] = 2; b[i * 4096 + 2000] = 3;
            }
        return 7;
    }
"""


def _range(out: str):
    addr, n = out.split()[:2]
    return int(addr, 16) // PAGE, int(n)


def _in(d, first: int, n: int):
    m = (d["page"] >= first) & (d["page"] < first + n)
    return {k: d[k][m] for k in ("page", "write", "ifetch", "tid", "count", "stamp")}


def _record_with_output(exe: Path, out: Path, *args: str) -> str:
    """Record ``exe`` and return what it printed (its buffer's address range)."""
    so = out.with_suffix(".stdout")
    with open(so, "w") as f:
        rec = record([str(exe), *args], str(out), stdout=f)
    assert rec.stats["complete"], rec
    _record_with_output.last = rec  # type: ignore[attr-defined]
    return so.read_text()


def test_sequential_twice(tmp_path: Path) -> None:
    exe = _compile(tmp_path, "seq", SEQ_TWICE)
    out = tmp_path / "seq.vmt"
    first, n = _range(_record_with_output(exe, out))
    assert _record_with_output.last.returncode == 7  # type: ignore[attr-defined]
    d = read_recorded(str(out))
    assert d["version"] == 2 and d["page_size"] == PAGE
    b = _in(d, first, n)
    want = np.concatenate([np.arange(n), np.arange(n)]) + first
    assert list(b["page"]) == list(want)
    # Three one-byte stores per page, nothing in between: one write record of count 3.
    assert b["write"].all() and not b["ifetch"].any()
    assert set(b["count"].tolist()) == {3}
    assert set(b["tid"].tolist()) == {1}
    # Every page costs the same number of instructions: equal stamp steps within a pass.
    steps = np.diff(b["stamp"][:n].astype(np.int64))
    assert len(set(steps.tolist())) == 1 and steps[0] > 0
    # Data stamps never decrease.
    assert (np.diff(d["stamp"].astype(np.int64)) >= 0).all()


TWO_THREADS = r"""
    #include <pthread.h>
    #include <stdio.h>
    #include <sys/mman.h>
    #define NA 30
    #define NB 20
    static volatile char *a, *b;
    static volatile long sink;
    static void *wa(void *x) {
        for (int i = 0; i < NA; i++) { a[i * 4096] = 1; a[i * 4096 + 8] = 1; }
        return 0;
    }
    static void *rb(void *x) {
        long s = 0;
        for (int i = NB - 1; i >= 0; i--) s += b[i * 4096];
        sink = s;
        return 0;
    }
    int main(void) {
        a = mmap(0, NA * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        b = mmap(0, NB * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        printf("%lx %d\n%lx %d\n", (unsigned long)a, NA, (unsigned long)b, NB);
        fflush(stdout);
        pthread_t t1, t2;
        pthread_create(&t1, 0, wa, 0);
        pthread_create(&t2, 0, rb, 0);
        pthread_join(t1, 0);
        pthread_join(t2, 0);
        return 0;
    }
"""


def _merge_runs(b):
    """Records of one thread, adjacent records of one page merged (a thread switch ends a
    run, so Valgrind's scheduler may split one); returns [(page, write, count)]."""
    out = []
    for p, w, c in zip(b["page"].tolist(), b["write"].tolist(), b["count"].tolist()):
        if out and out[-1][0] == p:
            out[-1] = (p, out[-1][1] or w, out[-1][2] + c)
        else:
            out.append((p, w, c))
    return out


def test_two_threads_disjoint_ranges(tmp_path: Path) -> None:
    exe = _compile(tmp_path, "threads", TWO_THREADS)
    out = tmp_path / "threads.vmt"
    lines = _record_with_output(exe, out).splitlines()
    (fa, na), (fb, nb) = _range(lines[0]), _range(lines[1])
    d = read_recorded(str(out))
    a, b = _in(d, fa, na), _in(d, fb, nb)
    ta, tb = set(a["tid"].tolist()), set(b["tid"].tolist())
    # Each range is touched by exactly one thread, neither of them the main thread (1).
    assert len(ta) == 1 and len(tb) == 1 and ta != tb and 1 not in ta | tb
    assert _merge_runs(a) == [(fa + i, True, 2) for i in range(na)]
    assert _merge_runs(b) == [(fb + i, False, 1) for i in reversed(range(nb))]
    assert vmemsim.trace_info(str(out)).accesses == len(d["page"])


FILE_READ = r"""
    #include <fcntl.h>
    #include <stdio.h>
    #include <sys/mman.h>
    #include <unistd.h>
    int main(int argc, char **argv) {
        int k = 6;
        static char buf[4096];
        int fd = open(argv[1], O_RDONLY);
        for (int i = 0; i < k; i++)
            if (read(fd, buf, 4096) != 4096) return 1;
        if (pread(fd, buf, 100, 2 * 4096 + 5) != 100) return 1;
        volatile char *m = mmap(0, k * 4096, PROT_READ, MAP_PRIVATE, fd, 0);
        long s = 0;
        for (int i = 0; i < k; i++) s += m[i * 4096];
        printf("%lx %d\n", (unsigned long)m, k);
        fflush(stdout);
        int w = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (write(w, buf, 3000) != 3000 || pwrite(w, buf, 10, 8192) != 10) return 1;
        close(w);
        return s == 6 * 'x' ? 0 : 2;
    }
"""


def test_file_io_records(tmp_path: Path) -> None:
    exe = _compile(tmp_path, "fileread", FILE_READ)
    data = tmp_path / "data.bin"
    data.write_bytes(b"x" * (6 * PAGE))
    written = tmp_path / "written.bin"
    out = tmp_path / "file.vmt"
    first, k = _range(_record_with_output(exe, out, str(data), str(written)))
    d = read_recorded(str(out))
    ev = [e for e in d["events"] if e["path"] in (str(data), str(written))]
    got = [(e["op"], e["path"], e["offset"], e["len"], e["addr"]) for e in ev]
    want = [("read", str(data), i * PAGE, PAGE, 0) for i in range(k)]
    want += [("pread64", str(data), 2 * PAGE + 5, 100, 0)]
    # (the mmap's address carries its flags in its low bits: 1 recorded, MAP_PRIVATE, no
    # PROT_WRITE)
    want += [("mmap", str(data), 0, k * PAGE, first * PAGE | 1)]
    want += [("write", str(written), 0, 3000, 0), ("pwrite64", str(written), 8192, 10, 0)]
    assert got == want
    assert len({e["file"] for e in ev}) == 2
    assert all(e["tid"] == 1 for e in ev)
    # After the mmap record, the mapped pages are read in order, once each (before it, the
    # same addresses may have held other mappings, e.g. the dynamic loader's).
    at_mmap = next(e["index"] for e in ev if e["op"] == "mmap")
    after = {k: v[at_mmap:] for k, v in d.items() if k in ("page", "write", "ifetch", "tid",
                                                             "count", "stamp")}
    m = _in(after, first, k)
    assert list(m["page"]) == [first + i for i in range(k)]
    assert not m["write"].any() and set(m["count"].tolist()) == {1}
    # The dynamic loader's own opens of libc are recorded too (mmap of a regular file).
    assert any(e["op"] == "mmap" and "libc" in (e["path"] or "") for e in d["events"])


def test_cli_record_then_every_command(tmp_path: Path) -> None:
    exe = _compile(tmp_path, "seq", SEQ_TWICE)
    out = tmp_path / "cli.vmt"
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "vmemsim", *a], capture_output=True, text=True
    )
    r = run("trace", "record", "--out", str(out), "--json", "--ifetch", "--", str(exe))
    assert r.returncode == 7, r.stderr  # the program's status
    summary = json.loads(r.stdout.splitlines()[-1])
    assert summary["complete"] and summary["ifetch_references"] > 0 and summary["trace"] == str(out)
    d = read_recorded(str(out))
    assert d["ifetch"].any() and not (d["ifetch"] & d["write"]).any()
    assert d["meta"]["ifetch"] == "yes" and str(exe) in d["origin"]
    info = json.loads(run("trace", "info", str(out), "--json").stdout)
    assert info["accesses"] == len(d["page"])
    rp = run("replay", "--trace", str(out), "--policy", "lru", "--frames", "50%", "--json")
    assert rp.returncode == 0, rp.stderr
    conv = tmp_path / "v1.txt"
    assert run("trace", "convert", str(out), str(conv)).returncode == 0
    assert len(conv.read_text().split("\n")) >= len(d["page"])


def test_cli_errors(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "vmemsim", "trace", "record", "--out",
                        str(tmp_path / "x.vmt")], capture_output=True, text=True)
    assert r.returncode == 2 and "no command to record" in r.stderr
    r = subprocess.run([sys.executable, "-m", "vmemsim", "trace", "record", "--out",
                        str(tmp_path / "x.vmt"), "--", str(tmp_path / "no-such-program")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "the recorder wrote nothing" in r.stderr, r.stderr
    r = subprocess.run([sys.executable, "-m", "vmemsim", "trace", "record", "--out",
                        str(tmp_path / "no-dir" / "x.vmt"), "--", "true"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "cannot create the trace" in r.stderr, r.stderr
    env = dict(os.environ, PATH=str(tmp_path))
    r = subprocess.run([sys.executable, "-m", "vmemsim", "trace", "record", "--", "true"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2
    assert "valgrind is not on PATH" in r.stderr and "apt-get install valgrind" in r.stderr


def test_program_killed_by_signal(tmp_path: Path) -> None:
    exe = _compile(tmp_path, "killed", r"""
        #include <signal.h>
        #include <unistd.h>
        int main(void) { kill(getpid(), SIGTERM); pause(); return 0; }
    """)
    out = tmp_path / "killed.vmt"
    r = subprocess.run([sys.executable, "-m", "vmemsim", "trace", "record", "--out", str(out),
                        "--json", "--", str(exe)], capture_output=True, text=True)
    assert r.returncode == 128 + 15, r.stderr  # as a shell reports a death by SIGTERM
    summary = json.loads(r.stdout.splitlines()[-1])
    # Valgrind runs the tool's exit code on a fatal signal: the stream is complete.
    assert summary["complete"] and summary["accesses"] == len(read_recorded(str(out))["page"])


# The parent touches pages [0, N) of its buffer, forks; the child touches [M, M + K) and
# leaves by _exit; the parent waits, then touches [R, R + L). With "exec", a second child
# execs this program again ("execd"), which touches [X, X + Y) of its own buffer.
FORK = r"""
    #include <stdio.h>
    #include <string.h>
    #include <sys/mman.h>
    #include <sys/wait.h>
    #include <unistd.h>
    enum { N = 12, M = 20, K = 7, R = 40, L = 5, X = 50, Y = 4 };
    static void touch(volatile char *b, int from, int n) {
        for (int i = from; i < from + n; i++) {
            b[i * 4096] = 1; b[i * 4096 + 64] = 2; b[i * 4096 + 128] = 3;
        }
    }
    int main(int argc, char **argv) {
        volatile char *b = mmap(0, 64 * 4096, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (argc > 1 && strcmp(argv[1], "execd") == 0) {
            printf("execd %lx %d\n", (unsigned long)b, getpid());
            fflush(stdout);
            touch(b, X, Y);
            return 0;
        }
        printf("parent %lx %d\n", (unsigned long)b, getpid());
        fflush(stdout);
        touch(b, 0, N);
        pid_t c = fork();
        if (c == 0) { touch(b, M, K); _exit(0); }
        waitpid(c, 0, 0);
        printf("child %d\n", c);
        fflush(stdout);
        touch(b, R, L);
        if (argc > 1 && strcmp(argv[1], "exec") == 0) {
            pid_t e = fork();
            if (e == 0) { execl(argv[0], argv[0], "execd", (char *)0); _exit(127); }
            waitpid(e, 0, 0);
            printf("exec %d\n", e);
            fflush(stdout);
        }
        return 0;
    }
"""


def _by_tid(d, first: int, n: int):
    """{tid: [(page - first, write, count)]} of the records in [first, first + n)."""
    b = _in(d, first, n)
    out: dict = {}
    for t in sorted(set(b["tid"].tolist())):
        m = b["tid"] == t
        out[t] = [(p - first, w, c) for p, w, c in
                  _merge_runs({k: v[m] for k, v in b.items()})]
    return out


def _touched(lo: int, n: int):
    return [(i, True, 3) for i in range(lo, lo + n)]


def test_forked_child_is_recorded_under_its_own_tid(tmp_path: Path) -> None:
    exe = _compile(tmp_path, "fork", FORK)
    out = tmp_path / "fork.vmt"
    lines = [ln.split() for ln in _record_with_output(exe, out).splitlines()]
    first, parent = int(lines[0][1], 16) // PAGE, int(lines[0][2])
    child = int(lines[1][1])
    st = _record_with_output.last.stats  # type: ignore[attr-defined]
    assert st["processes"] == 2 and st["complete"]
    d = read_recorded(str(out))
    # Parent: [0, N) then [R, R + L) as thread 1; the child (tid pid * 1000 + 1): [M, M + K),
    # each page once (nothing of the parent's sent twice, nothing of the child's lost).
    assert _by_tid(d, first, 64) == {
        1: _touched(0, 12) + _touched(40, 5),
        child * 1000 + 1: _touched(20, 7),
    }
    assert set(d["tid"].tolist()) == {1, child * 1000 + 1}
    assert "pid * 1000" in d["meta"]["tid"]
    # The parent's records of its buffer come before the fork and after the wait: the
    # child's lie between them in the file.
    b = _in(d, first, 64)
    assert (np.diff(np.flatnonzero(b["tid"] != 1)) == 1).all()
    assert parent > 0


def test_exec_under_trace_children(tmp_path: Path) -> None:
    exe = _compile(tmp_path, "fork", FORK)
    out = tmp_path / "exec.vmt"
    so = tmp_path / "exec.stdout"
    with open(so, "w") as f:
        rec = record([str(exe), "exec"], str(out), stdout=f,
                     valgrind_args=["--trace-children=yes"])
    assert rec.returncode == 0 and rec.stats["complete"], rec
    lines = {ln.split()[0]: ln.split()[1:] for ln in so.read_text().splitlines()}
    first = int(lines["parent"][0], 16) // PAGE
    child, execd = int(lines["child"][0]), int(lines["exec"][0])
    assert int(lines["execd"][1]) == execd
    xfirst = int(lines["execd"][0], 16) // PAGE
    # Three processes: the parent and two forked children, one of which exec'd this program
    # again (a fresh tool instance that shares the pre-exec tids: same pid, same thread).
    assert rec.stats["processes"] == 3
    d = read_recorded(str(out))
    assert set(d["tid"].tolist()) == {1, child * 1000 + 1, execd * 1000 + 1}
    got = _by_tid(d, first, 64)
    assert got[1] == _touched(0, 12) + _touched(40, 5)
    assert got[child * 1000 + 1] == _touched(20, 7)
    xd = _by_tid(d, xfirst, 64)
    assert xd[execd * 1000 + 1] == _touched(50, 4)
    # The exec'd program's own file I/O (the loader mapping libc) is under its tid.
    assert any(e["tid"] == execd * 1000 + 1 and e["op"] == "mmap" and "libc" in e["path"]
               for e in d["events"])


# An 8-byte store inside page 0, an 8-byte store across pages 0 and 1, an 8-byte load across
# pages 1 and 2, a 2-byte load across pages 2 and 3 (unaligned accesses, one instruction each).
STRADDLE = r"""
    #include <stdint.h>
    #include <stdio.h>
    #include <sys/mman.h>
    int main(void) {
        char *b = mmap(0, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        printf("%lx %d\n", (unsigned long)b, 4);
        fflush(stdout);
        uint64_t v;
        uint16_t h;
        __asm__ volatile("movq %1, (%0)" :: "r"(b + 4088), "r"(7ul) : "memory");
        __asm__ volatile("movq %1, (%0)" :: "r"(b + 4092), "r"(9ul) : "memory");
        __asm__ volatile("movq (%1), %0" : "=r"(v) : "r"(b + 2 * 4096 - 2) : "memory");
        __asm__ volatile("movw (%1), %0" : "=r"(h) : "r"(b + 3 * 4096 - 1) : "memory");
        return (int)(v + h) & 1;
    }
"""


def test_access_straddling_a_page_boundary_counts_on_both_pages(tmp_path: Path) -> None:
    exe = _compile(tmp_path, "straddle", STRADDLE)
    out = tmp_path / "straddle.vmt"
    first, n = _range(_record_with_output(exe, out))
    d = read_recorded(str(out))
    # The program's accesses come after its printf (a write record on the .stdout file);
    # before it the dynamic loader may have used the same addresses.
    at = [e["index"] for e in d["events"] if e["op"] == "write"
          and e["path"].endswith(".stdout")][-1]
    b = _in({k: v[at:] for k, v in d.items() if k in ("page", "write", "ifetch", "tid",
                                                       "count", "stamp")}, first, n)
    # Page 0: two stores; page 1: the straddling store's second half, then the load's first
    # half (one run: a write among its accesses); page 2: two load halves; page 3: one.
    assert _merge_runs(b) == [(first, True, 2), (first + 1, True, 2), (first + 2, False, 2),
                              (first + 3, False, 1)]


VECTORED = r"""
    #define _GNU_SOURCE
    #include <fcntl.h>
    #include <sys/uio.h>
    #include <unistd.h>
    static char a[4096], b[300], c[50];
    int main(int argc, char **argv) {
        int fd = open(argv[1], O_RDONLY);
        struct iovec v[2] = {{a, 4096}, {b, 300}};
        if (readv(fd, v, 2) != 4396) return 1;              /* bytes 0..4395 */
        struct iovec w[2] = {{b, 100}, {c, 50}};
        if (preadv(fd, w, 2, 10000) != 150) return 1;       /* 10000..10149 */
        if (preadv2(fd, w, 2, -1, 0) != 150) return 1;      /* at the position: 4396.. */
        int o = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (writev(o, v, 2) != 4396) return 1;
        if (pwritev(o, w, 2, 8192) != 150) return 1;
        if (pwritev2(o, w, 2, 20000, 0) != 150) return 1;
        close(o);
        return 0;
    }
"""


def test_vectored_io_is_recorded_as_the_plain_calls(tmp_path: Path) -> None:
    exe = _compile(tmp_path, "vectored", VECTORED)
    data = tmp_path / "data.bin"
    data.write_bytes(b"y" * (5 * PAGE))
    written = tmp_path / "written.bin"
    out = tmp_path / "vec.vmt"
    rec = record([str(exe), str(data), str(written)], str(out))
    assert rec.returncode == 0 and rec.stats["complete"]
    d = read_recorded(str(out))
    got = [(e["op"], e["path"], e["offset"], e["len"]) for e in d["events"]
           if e["path"] in (str(data), str(written))]
    assert got == [("read", str(data), 0, 4396), ("pread64", str(data), 10000, 150),
                   ("read", str(data), 4396, 150), ("write", str(written), 0, 4396),
                   ("pwrite64", str(written), 8192, 150), ("pwrite64", str(written), 20000, 150)]


SYNC_DIRECT = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
    char *buf = aligned_alloc(4096, 1 << 16);
    memset(buf, 7, 1 << 16);
    printf("%lu\n", (unsigned long)buf);
    fflush(stdout);
    write(fd, buf, 65536);
    fdatasync(fd);
    posix_fadvise(fd, 4096, 8192, POSIX_FADV_WILLNEED);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ftruncate(fd, 32768);
    close(fd);
    int dfd = open(argv[1], O_RDWR | O_DIRECT);
    if (dfd < 0)
        return 3; /* the file system has no O_DIRECT (tmpfs) */
    pread(dfd, buf, 8192, 0);
    pwrite(dfd, buf + 4096, 4096, 16384);
    close(dfd);
    return 0;
}
"""


def test_sync_fadvise_truncate_and_direct_io_records(tmp_path: Path) -> None:
    # Each call of the program above, with the arguments it passes (the buffer's address it
    # prints): fdatasync is op fsync; fadvise64 carries its advice (3 WILLNEED, 4 DONTNEED)
    # where the address goes; ftruncate the new size as its length; reads and writes of the
    # O_DIRECT descriptor are the direct ops with the user buffer's address.
    exe = _compile(tmp_path, "syncdirect", SYNC_DIRECT)
    data = tmp_path / "data.bin"
    out = tmp_path / "sd.vmt"
    proc = subprocess.run(
        [sys.executable, "-m", "vmemsim", "trace", "record", "--out", str(out), "--", str(exe),
         str(data)], capture_output=True, text=True)
    assert proc.returncode in (0, 3), proc.stderr
    buf = int(proc.stdout.split()[0])
    d = read_recorded(str(out))
    ev = [e for e in d["events"] if e["path"] == str(data)]
    got = [(e["op"], e["offset"], e["len"], e["addr"]) for e in ev]
    want = [("write", 0, 65536, 0), ("fsync", 0, 0, 0), ("fadvise64", 4096, 8192, 3),
            ("fadvise64", 0, 0, 4), ("ftruncate", 0, 32768, 0)]
    if proc.returncode == 0:
        want += [("read_direct", 0, 8192, buf), ("write_direct", 16384, 4096, buf + 4096)]
    assert got == want
    if proc.returncode != 0:
        return
    # Replayed: 16 pages written, fdatasync writes them (64 KiB out) and they stay cached;
    # WILLNEED finds pages 1..=2 cached; DONTNEED drops all 16, clean; ftruncate drops
    # nothing more; the direct read brings 8 KiB in and pins 2 buffer pages, the write
    # sends 4 KiB out and pins 1: no page of data.bin cached at the end.
    r = vmemsim.replay(str(out), policy="clock-lru", frames=4096)
    s = r.stats
    assert s["gup_pages"] == 3
    files = {e["file"] for e in ev}
    assert len(files) == 1
    other_in = s["pgpgin"] - 8
    assert other_in == 4 * s["file_reads"]  # every other KiB in: page-cache reads of libc etc.
    assert s["pgpgout"] == 64 + 4 and s["file_writebacks"] == 16 and s["nr_dirty"] == 0


UNLINK = r"""
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char buf[8192];
    memset(buf, 5, sizeof buf);
    /* a: written, closed, then unlinked: gone at the unlink. */
    int a = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(a, buf, 8192);
    close(a);
    unlink(argv[1]);
    /* b: unlinked while open (a temporary file): gone at its close, after the write that
       follows the unlink. */
    int b = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(b, buf, 4096);
    unlink(argv[2]);
    write(b, buf, 4096);
    close(b);
    /* c: a second name (hard link) removed: c lives on, no record. */
    int c = open(argv[3], O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(c, buf, 4096);
    close(c);
    link(argv[3], argv[4]);
    unlink(argv[4]);
    /* a's name again: a new file (its inode number may come back), a new id. */
    a = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(a, buf, 4096);
    close(a);
    return 0;
}
"""


def test_unlink_ends_a_file_at_its_last_name_and_descriptor(tmp_path: Path) -> None:
    exe = _compile(tmp_path, "unlink", UNLINK)
    a, b, c, c2 = (tmp_path / n for n in ("a.bin", "b.bin", "c.bin", "c2.bin"))
    out = tmp_path / "un.vmt"
    rec = record([str(exe), str(a), str(b), str(c), str(c2)], str(out))
    assert rec.returncode == 0 and rec.stats["complete"]
    d = read_recorded(str(out))
    mine = (str(a), str(b), str(c))
    got = [(e["op"], e["path"], e["offset"], e["len"]) for e in d["events"] if e["path"] in mine]
    assert got == [
        ("write", str(a), 0, 8192), ("unlink", str(a), 0, 0),
        ("write", str(b), 0, 4096), ("write", str(b), 4096, 4096), ("unlink", str(b), 0, 0),
        ("write", str(c), 0, 4096),
        ("write", str(a), 0, 4096),
    ]
    ids = [e["file"] for e in d["events"] if e["path"] == str(a)]
    assert ids[0] == ids[1] != ids[2]
    # Replayed: a's 2 pages and b's 2 are freed unwritten at their unlink records; c's page
    # and the second a's stay cached, dirty (no fsync, far below the dirty limits).
    r = vmemsim.replay(str(out), policy="clock-lru", frames=4096)
    assert r.stats["pgpgout"] == 0
    assert r.stats["nr_dirty"] == 2
