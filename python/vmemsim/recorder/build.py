"""Build the ``vmrec`` Valgrind tool (``vmrec.c`` beside this file) out of tree.

Standard library only, so that ``make recorder`` can run it before the package is installed
(``python3 python/vmemsim/recorder/build.py``). The tool is built the way Valgrind builds its
own tools (Makefile.tool.am: ``-static -nodefaultlibs -nostartfiles -u _start``, linked at
``valt_load_address`` with libcoregrind, libvex and libgcc), into a private directory that also
holds symbolic links to Valgrind's stock files: pointing ``VALGRIND_LIB`` at it makes
``valgrind --tool=vmrec`` find the tool with nothing installed system-wide.

The directory's name carries a hash of the source, the Valgrind version and the flags, so an
edited source or an upgraded Valgrind gets a fresh build, never a stale one.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

TOOL = "vmrec"
PLATFORM = "amd64-linux"
SOURCE = Path(__file__).with_name("vmrec.c")
INSTALL_HINT = (
    "install Valgrind and gcc (Debian/Ubuntu: `apt-get install valgrind gcc`; "
    "or `make deps-debian` in a vmemsim checkout)"
)
CFLAGS = [
    "-O2", "-g", "-Wall", "-fno-strict-aliasing", "-fno-builtin", "-fno-stack-protector",
    "-fno-pie", "-m64", "-DVGA_amd64=1", "-DVGO_linux=1", "-DVGP_amd64_linux=1",
    "-DVGPV_amd64_linux_vanilla=1",
]


class Unavailable(Exception):
    """The recorder cannot be built or run here; the message says what is missing and how to
    get it."""


def _first(paths: List[Path]) -> Optional[Path]:
    return next((p for p in paths if p.exists()), None)


def find_valgrind() -> Dict[str, object]:
    """Locate Valgrind's launcher, stock tool directory, tool headers and static libraries.
    Raises :class:`Unavailable` naming the first thing missing."""
    import platform

    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise Unavailable(
            f"the recorder needs Linux on x86-64 (this is {sys.platform} {platform.machine()})"
        )
    exe = shutil.which("valgrind")
    if exe is None:
        raise Unavailable(f"valgrind is not on PATH; {INSTALL_HINT}")
    stock = _first(
        [Path(p) for p in ("/usr/libexec/valgrind", "/usr/lib/x86_64-linux-gnu/valgrind",
                           "/usr/lib/valgrind", "/usr/local/libexec/valgrind",
                           "/usr/local/lib/valgrind")
         if (Path(p) / f"memcheck-{PLATFORM}").exists()]
    )
    if stock is None:
        raise Unavailable(f"Valgrind's tool directory (memcheck-{PLATFORM}) was not found; "
                          f"{INSTALL_HINT}")
    include = _first([Path(p) for p in ("/usr/include/valgrind", "/usr/local/include/valgrind")
                      if (Path(p) / "pub_tool_basics.h").exists()])
    if include is None:
        raise Unavailable(f"Valgrind's tool headers (pub_tool_basics.h) are missing; {INSTALL_HINT}")
    libdir = _first([Path(p) for p in ("/usr/lib/x86_64-linux-gnu/valgrind", "/usr/lib/valgrind",
                                       "/usr/libexec/valgrind", "/usr/local/lib/valgrind")
                     if (Path(p) / f"libcoregrind-{PLATFORM}.a").exists()])
    if libdir is None:
        raise Unavailable(f"Valgrind's static libraries (libcoregrind-{PLATFORM}.a) are missing; "
                          f"{INSTALL_HINT}")
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise Unavailable(f"no C compiler (gcc) on PATH; {INSTALL_HINT}")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
    load = "0x58000000"
    pc = Path(include).parent.parent / "lib" / "x86_64-linux-gnu" / "pkgconfig" / "valgrind.pc"
    if pc.exists():
        for line in pc.read_text().splitlines():
            if line.startswith("valt_load_address="):
                load = line.split("=", 1)[1].strip()
    return {"exe": exe, "stock": stock, "include": include, "libdir": libdir, "cc": cc,
            "version": version, "load": load}


def _key(vg: Dict[str, object]) -> str:
    h = hashlib.sha256()
    h.update(SOURCE.read_bytes())
    h.update(repr((vg["version"], vg["load"], CFLAGS, str(vg["stock"]))).encode())
    return h.hexdigest()[:16]


def tool_dir(vg: Dict[str, object]) -> Path:
    """The private ``VALGRIND_LIB`` directory for this source and this Valgrind."""
    base = os.environ.get("VMEMSIM_RECORDER_DIR")
    if base:
        root = Path(base)
    else:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = Path(cache) / "vmemsim" / "recorder"
    return root / _key(vg)


def build(verbose: bool = False) -> Path:
    """Build the tool if this source and Valgrind have no build yet; returns the directory
    to use as ``VALGRIND_LIB``. Raises :class:`Unavailable` with the reason."""
    vg = find_valgrind()
    d = tool_dir(vg)
    tool = d / f"{TOOL}-{PLATFORM}"
    if tool.exists():
        return d
    d.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=d.parent))
    try:
        obj = tmp / f"{TOOL}.o"
        lib = Path(vg["libdir"])
        cmds = [
            [str(vg["cc"]), *CFLAGS, f"-I{vg['include']}", "-c", str(SOURCE), "-o", str(obj)],
            [str(vg["cc"]), "-m64", "-o", str(tmp / tool.name), str(obj), "-static",
             "-nodefaultlibs", "-nostartfiles", "-no-pie", "-u", "_start",
             "-Wl,--build-id=none", f"-Wl,-Ttext-segment={vg['load']}",
             str(lib / f"libcoregrind-{PLATFORM}.a"), str(lib / f"libvex-{PLATFORM}.a"), "-lgcc",
             *([str(lib / f"libgcc-sup-{PLATFORM}.a")]
               if (lib / f"libgcc-sup-{PLATFORM}.a").exists() else [])],
        ]
        for cmd in cmds:
            if verbose:
                print(" ".join(cmd))
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise Unavailable(
                    f"building the recorder failed ({' '.join(cmd[:2])} ...):\n{r.stderr.strip()}"
                )
        for f in Path(vg["stock"]).iterdir():
            if not (tmp / f.name).exists():
                (tmp / f.name).symlink_to(f)
        obj.unlink()
        try:
            tmp.rename(d)
        except OSError:
            if not tool.exists():  # not a concurrent build that won the race
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return d


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="build the vmrec Valgrind tool (vmemsim trace record)")
    ap.add_argument("--if-available", action="store_true",
                    help="exit 0 with a message when Valgrind or gcc is missing")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    try:
        d = build(verbose=args.verbose)
    except Unavailable as e:
        print(f"vmemsim recorder not built: {e}", file=sys.stderr)
        return 0 if args.if_available else 1
    print(f"vmemsim recorder: {d / f'{TOOL}-{PLATFORM}'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
