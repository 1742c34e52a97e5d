"""A real Linux kernel under QEMU running one validation workload.

- The kernel is Debian's ``linux-image-*-amd64`` package, fetched with ``apt-get download``
  and unpacked with ``dpkg-deb -x`` into the cache (no root needed). Debian's package ships no
  ``modules.dep`` (``depmod`` makes it at install time), so module dependencies are read from
  each module's own ``.modinfo`` section (``depends=``), which is what ``depmod`` reads.
- The initramfs is written here as a ``newc`` cpio archive: busybox-static, the workload
  program (``vmwl``), the modules the swap device needs in dependency order, and an ``/init``
  script that sets the kernel up, runs the program and powers off. The kernel is booted with
  ``rootfstype=ramfs`` so that the initramfs lives in ramfs, whose pages are unevictable and
  never reach swap, ``transparent_hugepage=never`` (Debian's kernels default to ``always``,
  and a 2 MiB folio would be reclaimed as one), and ``zswap.enabled=0``.
- Everything comes back on the serial console between ``@@`` markers and is parsed here.

One vCPU; KVM acceleration when ``/dev/kvm`` works for a guest (a probe boot, remembered in the
cache), TCG otherwise (30-150 s per 1 M-access run).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import struct
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from ..api import VmemsimError
from .workload import Workload, build_program, cache_dir

BUSYBOX_PATHS = ("/bin/busybox", "/usr/bin/busybox")
INSTALL_HINT = "Debian/Ubuntu: apt-get install qemu-system-x86 busybox-static (or `make deps-kernel`)"
SWAPS = ("disk", "ssd", "zram", "none")
LRUS = ("classic", "mglru")
#: Modules per swap device (their dependencies are added from .modinfo).
SWAP_MODULES = {
    "disk": ["virtio_pci", "virtio_blk"],
    "ssd": ["virtio_pci", "virtio_blk"],
    "zram": ["zram"],
    "none": [],
}


class KernelUnavailable(VmemsimError):
    """The kernel, QEMU or busybox cannot be had here; the message says what is missing."""


# ------------------------------------------------------------------------------ the kernel


@dataclass
class Kernel:
    """An unpacked kernel package."""

    #: Debian package name and version, e.g. ``linux-image-6.1.0-56-amd64`` ``6.1.192-2``.
    package: str
    version: str
    #: ``uname -r``: the modules directory's name.
    release: str
    root: Path

    @property
    def vmlinuz(self) -> Path:
        return self.root / "boot" / f"vmlinuz-{self.release}"

    @property
    def modules(self) -> Path:
        return self.root / "lib" / "modules" / self.release

    def describe(self) -> str:
        return f"{self.package} {self.version} ({self.release})"


def _run(cmd: List[str], cwd: Optional[Path] = None) -> str:
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    except FileNotFoundError:
        raise KernelUnavailable(f"validate: {cmd[0]} is not installed (needed to fetch a kernel)")
    if r.returncode != 0:
        raise KernelUnavailable(
            f"validate: `{' '.join(cmd)}` failed: {(r.stderr or r.stdout).strip()[-400:]}"
        )
    return r.stdout


def _deb_field(deb: Path, name: str) -> str:
    return _run(["dpkg-deb", "-f", str(deb), name]).strip()


def fetch_kernel(cache: Optional[Path] = None, package: str = "linux-image-amd64") -> Kernel:
    """Download (once) and unpack Debian's kernel package. ``package`` is the meta-package or a
    versioned image package; a meta-package is followed to the image it depends on."""
    cache = Path(cache) if cache else cache_dir()
    kdir = cache / "kernels"
    kdir.mkdir(parents=True, exist_ok=True)
    # One fetch at a time per cache (parallel validations share the unpacked kernel).
    with open(kdir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _fetch_locked(kdir, package)


def _apt_candidate(package: str) -> Optional[Tuple[str, str]]:
    """(image package, version) that ``apt-get download package`` would give, from the package
    lists alone (a meta-package followed to the image it depends on); None when apt-cache
    cannot say (then the download decides)."""
    for _ in range(2):
        try:
            text = _run(["apt-cache", "show", "--no-all-versions", package])
        except KernelUnavailable:
            return None
        fields = dict(
            (k.strip(), v.strip())
            for k, _, v in (ln.partition(":") for ln in text.splitlines() if ":" in ln and not ln.startswith(" "))
        )
        name, version = fields.get("Package", ""), fields.get("Version", "")
        if re.match(r"linux-image-\d", name) and "-dbg" not in name and version:
            return name, version
        m = re.match(r"(linux-image-[^\s,(|]+)", fields.get("Depends", ""))
        if not m:
            return None
        package = m.group(1)
    return None


def _fetch_locked(kdir: Path, package: str) -> Kernel:
    # A kernel unpacked before is used without downloading its package again.
    cand = _apt_candidate(package)
    if cand is not None:
        done = kdir / f"{cand[0]}_{cand[1]}"
        if (done / ".complete").exists():
            return _kernel_at(done, *cand)
    for _ in range(2):
        with tempfile.TemporaryDirectory(dir=kdir) as tmp:
            _run(["apt-get", "download", package], cwd=Path(tmp))
            debs = list(Path(tmp).glob("*.deb"))
            if not debs:
                raise KernelUnavailable(f"validate: apt-get download {package} gave no package")
            deb = debs[0]
            name, version = _deb_field(deb, "Package"), _deb_field(deb, "Version")
            if not name.startswith("linux-image-") or "-dbg" in name:
                raise KernelUnavailable(f"validate: {name} is not a kernel image package")
            dest = kdir / f"{name}_{version}"
            if (dest / ".complete").exists():
                return _kernel_at(dest, name, version)
            depends = _deb_field(deb, "Depends")
            m = re.match(r"(linux-image-[^\s,(|]+)", depends)
            boot_files = subprocess.run(
                ["dpkg-deb", "-c", str(deb)], capture_output=True, text=True
            ).stdout
            if "vmlinuz" not in boot_files:
                if not m:
                    raise KernelUnavailable(f"validate: {name} neither holds nor names a kernel")
                package = m.group(1)
                continue
            part = dest.with_name(dest.name + ".part")
            shutil.rmtree(part, ignore_errors=True)
            _run(["dpkg-deb", "-x", str(deb), str(part)])
            shutil.rmtree(dest, ignore_errors=True)
            os.replace(part, dest)
            (dest / ".complete").write_text(json.dumps({"package": name, "version": version}))
            return _kernel_at(dest, name, version)
    raise KernelUnavailable(f"validate: could not resolve {package} to a kernel image")


def _kernel_at(root: Path, package: str, version: str) -> Kernel:
    boots = sorted((root / "boot").glob("vmlinuz-*"))
    if not boots:
        raise KernelUnavailable(f"validate: {root} holds no boot/vmlinuz-*")
    release = boots[-1].name[len("vmlinuz-"):]
    return Kernel(package=package, version=version, release=release, root=root)


def kernel_from_dir(root: Path) -> Kernel:
    """A kernel already unpacked (``boot/vmlinuz-R`` and ``lib/modules/R``) at ``root``."""
    root = Path(root)
    meta = root / ".complete"
    if meta.exists():
        d = json.loads(meta.read_text())
        return _kernel_at(root, d["package"], d["version"])
    return _kernel_at(root, root.name, "unknown")


# ------------------------------------------------------------------------------ modules


def _elf_section(data: bytes, want: str) -> Optional[bytes]:
    """The contents of section ``want`` of a 64-bit little-endian ELF file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def sh(i: int) -> Tuple[int, int, int]:
        base = shoff + i * shentsize
        name, = struct.unpack_from("<I", data, base)
        off, size = struct.unpack_from("<QQ", data, base + 0x18)
        return name, off, size

    _, stroff, _ = sh(shstrndx)
    for i in range(shnum):
        name, off, size = sh(i)
        end = data.index(b"\0", stroff + name)
        if data[stroff + name:end].decode() == want:
            return data[off:off + size]
    return None


MODULE_SUFFIXES = (".ko", ".ko.xz", ".ko.gz", ".ko.zst")


def module_bytes(path: Path) -> bytes:
    """A module file's ELF image, decompressed (Debian 12's 6.1 ships plain ``.ko``, its
    6.12 backport ``.ko.xz``; busybox's insmod loads only plain ones)."""
    name = Path(path).name
    data = Path(path).read_bytes()
    if name.endswith(".xz"):
        import lzma

        return lzma.decompress(data)
    if name.endswith(".gz"):
        import gzip

        return gzip.decompress(data)
    if name.endswith(".zst"):
        zstd = shutil.which("zstd")
        if zstd is None:
            raise KernelUnavailable(f"validate: {name} is zstd-compressed; install zstd")
        return subprocess.run([zstd, "-dc", str(path)], capture_output=True, check=True).stdout
    return data


def modinfo(path: Path) -> Dict[str, str]:
    """A module's ``.modinfo`` key=value pairs (first value of each key)."""
    raw = _elf_section(module_bytes(path), ".modinfo") or b""
    out: Dict[str, str] = {}
    for item in raw.split(b"\0"):
        if b"=" in item:
            k, v = item.decode(errors="replace").split("=", 1)
            out.setdefault(k, v)
    return out


def _module_index(kernel: Kernel) -> Dict[str, Path]:
    idx: Dict[str, Path] = {}
    for p in kernel.modules.rglob("*.ko*"):
        suffix = next((x for x in MODULE_SUFFIXES if p.name.endswith(x)), None)
        if suffix is None:
            continue
        idx[p.name[: -len(suffix)].replace("-", "_")] = p
    return idx


def _builtin(kernel: Kernel) -> set:
    names = set()
    f = kernel.modules / "modules.builtin"
    if f.exists():
        for line in f.read_text().splitlines():
            names.add(Path(line).name.split(".ko")[0].replace("-", "_"))
    return names


def resolve_modules(kernel: Kernel, wanted: Iterable[str]) -> List[Path]:
    """``wanted`` and their dependencies, each after what it depends on; built-ins skipped."""
    idx, builtin = _module_index(kernel), _builtin(kernel)
    order: List[Path] = []
    seen: set = set()

    def visit(name: str, chain: Tuple[str, ...]) -> None:
        name = name.replace("-", "_")
        if name in seen or name in builtin:
            return
        if name in chain:
            raise VmemsimError(f"validate: module dependency cycle {' -> '.join(chain + (name,))}")
        path = idx.get(name)
        if path is None:
            raise KernelUnavailable(
                f"validate: module {name} is neither built into {kernel.release} nor shipped with it"
            )
        for dep in filter(None, modinfo(path).get("depends", "").split(",")):
            visit(dep, chain + (name,))
        seen.add(name)
        order.append(path)

    for w in wanted:
        visit(w, ())
    return order


# ------------------------------------------------------------------------------ initramfs


def _cpio_entry(name: str, mode: int, data: bytes, ino: int) -> bytes:
    fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0]
    hdr = b"070701" + b"".join(b"%08X" % v for v in fields) + name.encode() + b"\0"
    hdr += b"\0" * (-len(hdr) % 4)
    return hdr + data + b"\0" * (-len(data) % 4)


def write_cpio(files: Dict[str, Tuple[int, bytes]], out: Path) -> None:
    """A ``newc`` cpio archive of ``{path: (mode, data)}`` (directories: data is empty and
    mode has S_IFDIR), parents listed before children."""
    entries = []
    dirs = set()
    for path in sorted(files):
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d and d not in dirs and d not in files:
                dirs.add(d)
                entries.append((d, stat.S_IFDIR | 0o755, b""))
        entries.append((path, files[path][0], files[path][1]))
    with open(out, "wb") as f:
        for ino, (name, mode, data) in enumerate(entries, 1):
            f.write(_cpio_entry(name, mode, data, ino))
        f.write(_cpio_entry("TRAILER!!!", 0, b"", 0))


def find_busybox() -> Path:
    for p in BUSYBOX_PATHS:
        if os.path.exists(p):
            with open(p, "rb") as f:
                head = f.read(4096)
            if b"\x7fELF" == head[:4] and b"ld-linux" not in head and b"/lib64/ld" not in head:
                return Path(p)
    raise KernelUnavailable(f"validate: a static busybox is needed ({INSTALL_HINT})")


@dataclass
class Settings:
    """What the kernel is set to for one run."""

    mem_mib: int = 160
    swap: str = "disk"
    lru: str = "classic"
    page_cluster: int = 3
    swappiness: int = 60
    #: Swap size in MiB (disk image or zram disksize); 0 = twice the workload's footprint.
    swap_mib: int = 0
    #: Further ``/proc/sys/vm`` settings for the kernel (name -> integer value), e.g.
    #: ``{"watermark_boost_factor": "0"}``; vmemsim does not read them (its models follow
    #: the kernel's defaults), so they show what a setting changes in the kernel.
    sysctl: Dict[str, str] = field(default_factory=dict)

    def check(self) -> None:
        if self.swap not in SWAPS:
            raise VmemsimError(f"validate: --swap must be one of {', '.join(SWAPS)}, got {self.swap!r}")
        if self.lru not in LRUS:
            raise VmemsimError(f"validate: --lru must be one of {', '.join(LRUS)}, got {self.lru!r}")
        if not 0 <= self.page_cluster <= 31:
            raise VmemsimError(f"validate: --page-cluster must be 0..31, got {self.page_cluster}")
        if not 0 <= self.swappiness <= 200:
            raise VmemsimError(f"validate: --swappiness must be 0..200, got {self.swappiness}")
        if not 48 <= self.mem_mib <= 64 * 1024:
            raise VmemsimError(f"validate: --mem must be 48 MiB .. 64 GiB, got {self.mem_mib} MiB")
        for k, v in self.sysctl.items():
            if k in ("page-cluster", "page_cluster", "swappiness"):
                raise VmemsimError(f"validate: --sysctl {k}: set it with --{k.replace('_', '-')}"
                                   ", which vmemsim follows too")
            if not re.fullmatch(r"[a-z][a-z0-9_-]*", k):
                raise VmemsimError(f"validate: --sysctl {k!r}: not a /proc/sys/vm setting name")
            if not re.fullmatch(r"-?[0-9]+", str(v)):
                raise VmemsimError(f"validate: --sysctl {k}={v!r}: expected a whole number")


INIT = r"""#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /bin
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo "@@uname $(uname -r)"
for m in $(cat /modules.list); do insmod /$m || echo "@@error insmod $m"; done
echo {lru_gen} > /sys/kernel/mm/lru_gen/enabled || echo "@@error lru_gen"
echo "@@lru_gen $(cat /sys/kernel/mm/lru_gen/enabled)"
echo {page_cluster} > /proc/sys/vm/page-cluster
echo {swappiness} > /proc/sys/vm/swappiness
echo "@@sysctl page-cluster=$(cat /proc/sys/vm/page-cluster) swappiness=$(cat /proc/sys/vm/swappiness)"
{sysctls}{swap_setup}
echo "@@swaps"
cat /proc/swaps
echo "@@pagetypeinfo-before"
cat /proc/pagetypeinfo
/vmwl --snap --mode {mode} {args}
echo "@@rc $?"
{after}
echo "@@done"
poweroff -f
"""

SWAP_SETUP = {
    "disk": "mkswap /dev/vda >/dev/null && swapon /dev/vda || echo '@@error swapon'",
    # The same virtio disk declared non-rotational before swapon (the kernel reads the flag
    # once, at swapon): SSD slot clusters and VMA-based swap readahead.
    "ssd": (
        "echo 0 > /sys/block/vda/queue/rotational\n"
        "echo \"@@rotational $(cat /sys/block/vda/queue/rotational)\"\n"
        "mkswap /dev/vda >/dev/null && swapon /dev/vda || echo '@@error swapon'"
    ),
    "none": "",
    "zram": (
        "i=0; while [ ! -e /sys/block/zram0/disksize ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done\n"
        "echo lzo-rle > /sys/block/zram0/comp_algorithm\n"
        "echo {swap_bytes} > /sys/block/zram0/disksize\n"
        "mkswap /dev/zram0 >/dev/null && swapon /dev/zram0 || echo '@@error swapon'"
    ),
}
AFTER = {
    "none": "",
    "disk": "",
    "ssd": "",
    "zram": 'echo "@@mm_stat $(cat /sys/block/zram0/mm_stat)"\n'
    'echo "@@io_stat $(cat /sys/block/zram0/io_stat)"',
}


def sysctl_lines(settings: Settings) -> str:
    """The init script's lines that set ``settings.sysctl`` (a failed write is an error the
    log parser reports) and echo what the kernel then has."""
    return "".join(
        f"echo {v} > /proc/sys/vm/{k} || echo '@@error sysctl {k}'\n"
        f'echo "@@sysctl {k}=$(cat /proc/sys/vm/{k})"\n'
        for k, v in sorted(settings.sysctl.items())
    )


def swap_mib(settings: Settings, w: Workload) -> int:
    if settings.swap_mib:
        return settings.swap_mib
    return max(64, (w.footprint_pages() * 4096 * 2) >> 20)


def build_initramfs(kernel: Kernel, w: Workload, settings: Settings, out: Path) -> None:
    exe = build_program()
    wanted = list(SWAP_MODULES[settings.swap])
    if w.kind in ("trace", "file"):
        wanted += [m for m in SWAP_MODULES["disk"] if m not in wanted]
    mods = resolve_modules(kernel, wanted)
    files: Dict[str, Tuple[int, bytes]] = {}
    files["bin/busybox"] = (stat.S_IFREG | 0o755, find_busybox().read_bytes())
    files["vmwl"] = (stat.S_IFREG | 0o755, exe.read_bytes())
    rel = []
    for p in mods:
        r = "lib/modules/" + p.name.split(".ko")[0] + ".ko"
        files[r] = (stat.S_IFREG | 0o644, module_bytes(p))
        rel.append(r)
    files["modules.list"] = (stat.S_IFREG | 0o644, ("\n".join(rel) + "\n").encode())
    # A trace streams from the last virtio disk: vdb after a swap disk, else vda.
    trace_dev = "/dev/vdb" if settings.swap in ("disk", "ssd") else "/dev/vda"
    args = " ".join(w.program_args(trace_dev))
    wait = ""
    if w.kind in ("trace", "file"):
        wait = (f"i=0; while [ ! -e {trace_dev} ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done\n")
    if w.kind == "file":
        # The file workload's device: its readahead window and largest request (the
        # simulator's read_ahead_kb), and whether the guest sees it as rotational.
        q = f"/sys/block/{trace_dev.rsplit('/', 1)[1]}/queue"
        wait += (f'echo "@@blockdev read_ahead_kb=$(cat {q}/read_ahead_kb) '
                 f'max_sectors_kb=$(cat {q}/max_sectors_kb) rotational=$(cat {q}/rotational) '
                 f'size=$(cat {q}/../size)"\n')
    init = INIT.format(
        lru_gen="y" if settings.lru == "mglru" else "n",
        page_cluster=settings.page_cluster,
        swappiness=settings.swappiness,
        sysctls=sysctl_lines(settings),
        swap_setup=wait + SWAP_SETUP[settings.swap].format(swap_bytes=swap_mib(settings, w) << 20),
        mode=w.mode,
        args=args,
        after=AFTER[settings.swap],
    )
    files["init"] = (stat.S_IFREG | 0o755, init.encode())
    for d in ("proc", "sys", "dev", "bin", "tmp"):
        files.setdefault(d, (stat.S_IFDIR | 0o755, b""))
    write_cpio(files, out)


# ------------------------------------------------------------------------------ QEMU


def cannot_boot() -> Optional[str]:
    """Why a real kernel cannot be booted here (no QEMU, no busybox, no apt-get/dpkg-deb to
    fetch Debian's kernel, no gcc for the guest program), or None when it can: the reason
    the end-to-end tests give when they skip."""
    try:
        find_qemu()
        find_busybox()
    except KernelUnavailable as e:
        return str(e)
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        return "no apt-get/dpkg-deb to fetch Debian's kernel"
    if shutil.which("gcc") is None:
        return "no gcc to build the guest program"
    return None


def find_qemu() -> str:
    q = shutil.which("qemu-system-x86_64")
    if q is None:
        raise KernelUnavailable(f"validate: qemu-system-x86_64 is not installed ({INSTALL_HINT})")
    return q


CMDLINE = (
    "console=ttyS0 loglevel=4 panic=-1 rootfstype=ramfs transparent_hugepage=never "
    "zswap.enabled=0 mitigations=off nokaslr"
)


def qemu_command(
    kernel: Kernel, initrd: Path, settings: Settings, accel: str, disk: Optional[Path], log: Path,
    trace: Optional[Path] = None, writable: bool = False,
) -> List[str]:
    """``trace`` is the second disk: a trace's sequence file (read-only) or a file workload's
    device (``writable``: a sparse image, written back to the host's page cache)."""
    cmd = [
        find_qemu(), "-machine", "q35" if accel == "kvm" else "pc", "-m", f"{settings.mem_mib}M",
        "-smp", "1", "-display", "none", "-no-reboot", "-monitor", "none",
        "-serial", f"file:{log}", "-kernel", str(kernel.vmlinuz), "-initrd", str(initrd),
        "-append", CMDLINE, "-nodefaults",
    ]
    cmd += ["-accel", "kvm", "-cpu", "host"] if accel == "kvm" else ["-accel", "tcg", "-cpu", "max"]
    if disk is not None:
        cmd += ["-drive", f"file={disk},if=virtio,format=raw,cache=unsafe"]
    if trace is not None and writable:
        cmd += ["-drive", f"file={trace},if=virtio,format=raw,cache=unsafe"]
    elif trace is not None:
        cmd += ["-drive", f"file={trace},if=virtio,format=raw,readonly=on"]
    return cmd


def kvm_works(kernel: Kernel, cache: Optional[Path] = None, timeout: float = 60.0) -> bool:
    """Whether a guest boots under KVM here: ``/dev/kvm`` present and writable and a probe boot
    that reaches its init in ``timeout`` seconds (remembered in the cache per host kernel)."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    cache = Path(cache) if cache else cache_dir()
    key = cache / f"kvm-probe-{os.uname().release}.json"
    if key.exists():
        return bool(json.loads(key.read_text()).get("works"))
    works = False
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        init = "#!/bin/busybox sh\necho @@kvm-ok\n/bin/busybox poweroff -f\n"
        write_cpio(
            {"bin/busybox": (stat.S_IFREG | 0o755, find_busybox().read_bytes()),
             "init": (stat.S_IFREG | 0o755, init.encode())},
            t / "probe.cpio",
        )
        log = t / "serial.log"
        cmd = qemu_command(kernel, t / "probe.cpio", Settings(mem_mib=128), "kvm", None, log)
        try:
            subprocess.run(cmd, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        works = log.exists() and "@@kvm-ok" in log.read_text(errors="replace")
    key.parent.mkdir(parents=True, exist_ok=True)
    key.write_text(json.dumps({"works": works}))
    return works


# ------------------------------------------------------------------------------ results


@dataclass
class KernelRun:
    """What one boot measured."""

    kernel: str
    release: str
    accel: str
    settings: Dict[str, object]
    workload: str
    #: ``/proc/vmstat`` after minus before the workload phase.
    vmstat: Dict[str, int]
    #: ``/proc/vmstat`` just before the phase (``nr_free_pages`` is the free memory it had).
    vmstat_before: Dict[str, int]
    meminfo_before: Dict[str, int]
    #: Per zone: ``{name: {min, low, high, managed, present, free, lowmem_reserve...}}``.
    zones: Dict[str, Dict[str, object]]
    #: zram's ``mm_stat`` fields after the run (zram swap only).
    mm_stat: Dict[str, int] = field(default_factory=dict)
    accesses: int = 0
    checksum: str = ""
    phase_seconds: float = 0.0
    boot_seconds: float = 0.0
    lru_gen: str = ""
    log_sha256: str = ""
    #: A file workload's block device as the guest saw it (``@@blockdev``): read_ahead_kb,
    #: max_sectors_kb, rotational, size (sectors).
    blockdev: Dict[str, int] = field(default_factory=dict)
    #: A file workload's device pages the page cache held after the phase (``mincore``), as
    #: ``[start, end)`` runs of page indices.
    resident: List[List[int]] = field(default_factory=list)
    #: Per zone after the phase (file workloads): free pages and the file LRU sizes
    #: (:func:`zone_file_pages`).
    zones_after: Dict[str, Dict[str, int]] = field(default_factory=dict)
    #: Per zone with managed pages, the page allocator's state just before the workload
    #: program started (``/proc/pagetypeinfo``, :func:`parse_pagetypeinfo`): ``{name:
    #: {"blocks": [unmovable, movable, reclaimable], "free": [[chunks of order 0..10] per
    #: migratetype]}}``; None for runs recorded before the harness printed it.
    pagetypes: Optional[Dict[str, Dict[str, List]]] = None
    #: The swap disk's ``/sys/block/vda/stat`` after minus before the phase
    #: (:data:`DISKSTAT`: requests, sectors and milliseconds per direction, ``io_ticks``);
    #: empty for zram and for runs recorded before the harness printed it.
    diskstat: Dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Dict[str, object]) -> "KernelRun":
        return cls(**d)  # type: ignore[arg-type]


#: The fields of ``/sys/block/<dev>/stat`` (Documentation/block/stat.rst; 6.1 prints 17:
#: the discard and flush fields after ``time_in_queue``). Ticks are milliseconds of the
#: guest's clock: ``read_ticks``/``write_ticks`` sum each request's time from its start to its
#: completion, ``io_ticks`` is the time at least one request was in flight.
DISKSTAT = (
    "read_ios", "read_merges", "read_sectors", "read_ticks",
    "write_ios", "write_merges", "write_sectors", "write_ticks",
    "in_flight", "io_ticks", "time_in_queue",
    "discard_ios", "discard_merges", "discard_sectors", "discard_ticks",
    "flush_ios", "flush_ticks",
)


def parse_diskstat(before: str, after: str) -> Dict[str, int]:
    """After minus before of two ``/sys/block/<dev>/stat`` lines (``in_flight`` as it was
    after); a line with too few or non-numeric fields is an error naming it."""
    def fields(line: str, which: str) -> List[int]:
        toks = line.split()
        if len(toks) < 11 or not all(t.isdigit() for t in toks):
            raise VmemsimError(f"validate: @@diskstat-{which}: expected at least 11 whole "
                               f"numbers (/sys/block/vda/stat), got {line.strip()!r}")
        return [int(t) for t in toks]
    b, a = fields(before, "before"), fields(after, "after")
    out = {}
    for i, name in enumerate(DISKSTAT[:min(len(a), len(b))]):
        out[name] = a[i] if name == "in_flight" else a[i] - b[i]
    return out


MM_STAT = (
    "orig_data_size", "compr_data_size", "mem_used_total", "mem_limit", "mem_used_max",
    "same_pages", "pages_compacted", "huge_pages", "huge_pages_since",
)


def _kv(text: str) -> Dict[str, int]:
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def _meminfo(text: str) -> Dict[str, int]:
    out = {}
    for line in text.splitlines():
        m = re.match(r"(\S+):\s+(\d+)", line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def parse_zoneinfo(text: str) -> Dict[str, Dict[str, object]]:
    """Zones with pages: watermarks (``min``/``low``/``high`` as the kernel prints them,
    ``boost`` included: ``min_wmark_pages`` adds ``zone->watermark_boost``), the boost,
    managed/present/free pages, lowmem_reserve, and ``pcp``: the free pages held on the
    per-CPU lists (``pagesets`` ``count``), which ``nr_free_pages`` does not count."""
    zones: Dict[str, Dict[str, object]] = {}
    cur: Optional[Dict[str, object]] = None
    for line in text.splitlines():
        m = re.match(r"Node (\d+), zone\s+(\S+)", line)
        if m:
            cur = {}
            zones[m.group(2)] = cur
            continue
        if cur is None:
            continue
        s = line.strip()
        m = re.match(r"(pages free|boost|min|low|high|spanned|present|managed)\s+(\d+)$", s)
        if m:
            cur[m.group(1).replace("pages ", "")] = int(m.group(2))
            continue
        m = re.match(r"count:\s+(\d+)$", s)
        if m:
            cur["pcp"] = int(cur.get("pcp", 0)) + int(m.group(1))
            continue
        m = re.match(r"protection: \((.*)\)", s)
        if m:
            cur["lowmem_reserve"] = [int(x) for x in m.group(1).split(",")]
    return {k: v for k, v in zones.items() if v.get("managed", 0) > 0}


def zone_file_pages(text: str) -> Dict[str, Dict[str, int]]:
    """Per zone with managed pages, from ``/proc/zoneinfo``: ``free`` (``pages free``),
    ``inactive_file``, ``active_file`` (``nr_zone_*``) and ``managed``."""
    zones: Dict[str, Dict[str, int]] = {}
    cur: Optional[Dict[str, int]] = None
    for line in text.splitlines():
        m = re.match(r"Node (\d+), zone\s+(\S+)", line)
        if m:
            cur = zones[m.group(2)] = {}
            continue
        if cur is None:
            continue
        m = re.match(r"\s*(pages free|nr_zone_inactive_file|nr_zone_active_file|managed)\s+(\d+)$",
                     line)
        if m:
            k = {"pages free": "free"}.get(m.group(1), m.group(1).replace("nr_zone_", ""))
            cur[k] = int(m.group(2))
    return {k: v for k, v in zones.items() if v.get("managed", 0) > 0}


#: The migratetypes vmemsim models, in the kernel's ``enum migratetype`` order (the index of
#: ``blocks`` and ``free`` in :attr:`KernelRun.pagetypes`).
MIGRATETYPES = ("Unmovable", "Movable", "Reclaimable")
#: The buddy allocator's orders (6.1's ``MAX_ORDER`` is 11: orders 0..10).
PAGETYPE_ORDERS = 11


def parse_pagetypeinfo(text: str, zones: Iterable[str]) -> Dict[str, Dict[str, List]]:
    """``/proc/pagetypeinfo`` as the simulator takes it, for the zones named in ``zones``
    (those with managed pages): ``{zone: {"blocks": [unmovable, movable, reclaimable],
    "free": [[chunks at order 0..10] per type in that order]}}``. The free table counts
    chunks (free blocks of ``2^order`` pages), not pages. The other types' rows
    (``HighAtomic``, ``Isolate``, ``CMA``) must be empty: vmemsim does not model them, so a
    free chunk or a pageblock of one is an error naming the zone and type, as is a count the
    kernel capped (``>100000``) or a zone in ``zones`` the file does not list."""
    wanted = list(zones)
    free: Dict[str, Dict[str, List[int]]] = {}
    blocks: Dict[str, Dict[str, int]] = {}
    block_types: List[str] = []
    orders: Optional[List[int]] = None

    def count(tok: str, zone: str, mtype: str) -> int:
        if not tok.isdigit():
            raise VmemsimError(
                f"validate: /proc/pagetypeinfo: zone {zone} type {mtype}: count {tok!r} is not "
                "a number (the kernel caps a free list's count at 100000)")
        return int(tok)

    for line in text.splitlines():
        s = line.strip()
        m = re.match(r"Free pages count per migrate type at order\s+(.*)$", s)
        if m:
            orders = [int(x) for x in m.group(1).split()]
            if orders != list(range(PAGETYPE_ORDERS)):
                raise VmemsimError(
                    f"validate: /proc/pagetypeinfo lists orders {orders}; vmemsim models "
                    f"0..{PAGETYPE_ORDERS - 1}")
            continue
        m = re.match(r"Node\s+(\d+),\s*zone\s+(\S+),\s*type\s+(\S+)\s+(.*)$", s)
        if m:
            zone, mtype = m.group(2), m.group(3)
            toks = m.group(4).split()
            if orders is None or len(toks) != len(orders):
                raise VmemsimError(
                    f"validate: /proc/pagetypeinfo: zone {zone} type {mtype} has {len(toks)} "
                    f"counts, expected {PAGETYPE_ORDERS}: {s!r}")
            if mtype in free.setdefault(zone, {}):
                raise VmemsimError(
                    f"validate: /proc/pagetypeinfo lists zone {zone} twice (more than one "
                    "node); vmemsim models one")
            free[zone][mtype] = [count(t, zone, mtype) for t in toks]
            continue
        m = re.match(r"Number of blocks type\s+(.*)$", s)
        if m:
            block_types = m.group(1).split()
            continue
        m = re.match(r"Node\s+(\d+),\s*zone\s+(\S+)\s+([\d\s]+)$", s)
        if m and block_types:
            zone, toks = m.group(2), m.group(3).split()
            if len(toks) != len(block_types):
                raise VmemsimError(
                    f"validate: /proc/pagetypeinfo: zone {zone}'s pageblock counts {toks} do "
                    f"not match the types {block_types}")
            if zone in blocks:
                raise VmemsimError(
                    f"validate: /proc/pagetypeinfo lists zone {zone} twice (more than one "
                    "node); vmemsim models one")
            blocks[zone] = dict(zip(block_types, (int(t) for t in toks)))
    out: Dict[str, Dict[str, List]] = {}
    for zone in wanted:
        if zone not in free or zone not in blocks:
            raise VmemsimError(
                f"validate: /proc/pagetypeinfo has no free lists or no pageblock counts for "
                f"zone {zone}")
        for mtype, counts in free[zone].items():
            if mtype not in MIGRATETYPES and any(counts):
                raise VmemsimError(
                    f"validate: /proc/pagetypeinfo: zone {zone} has free {mtype} pages "
                    f"({counts} chunks by order); vmemsim models only the "
                    f"{', '.join(MIGRATETYPES)} migratetypes")
        for mtype, n in blocks[zone].items():
            if mtype not in MIGRATETYPES and n:
                raise VmemsimError(
                    f"validate: /proc/pagetypeinfo: zone {zone} has {n} {mtype} pageblock(s); "
                    f"vmemsim models only the {', '.join(MIGRATETYPES)} migratetypes")
        missing = [t for t in MIGRATETYPES if t not in free[zone] or t not in blocks[zone]]
        if missing:
            raise VmemsimError(
                f"validate: /proc/pagetypeinfo: zone {zone} lists no {', '.join(missing)} row")
        out[zone] = {
            "blocks": [blocks[zone][t] for t in MIGRATETYPES],
            "free": [list(free[zone][t]) for t in MIGRATETYPES],
        }
    return out


def pagetype_pages(pt: Dict[str, List]) -> List[int]:
    """Free pages per migratetype (``Unmovable``, ``Movable``, ``Reclaimable``) of one zone's
    :attr:`KernelRun.pagetypes` entry: each order's chunks times ``2^order``."""
    return [sum(n << o for o, n in enumerate(row)) for row in pt["free"]]


def parse_log(text: str) -> Dict[str, object]:
    """Everything between the ``@@`` markers of a serial log."""
    def block(name: str) -> str:
        m = re.search(rf"@@{name}\r?\n(.*?)(?=\r?\n@@)", text, re.S)
        if not m:
            raise VmemsimError(f"validate: the kernel's log has no @@{name} block")
        return m.group(1)

    errors = re.findall(r"@@error (.*)", text)
    if errors:
        raise VmemsimError(f"validate: the guest's setup failed: {'; '.join(e.strip() for e in errors)}")
    m = re.search(r"@@vmwl accesses=(\d+) checksum=([0-9a-f]+) span=(\d+) seconds=([\d.]+)", text)
    if not m:
        tail = "\n".join(text.strip().splitlines()[-15:])
        raise VmemsimError(f"validate: the workload did not finish in the guest; its log ends:\n{tail}")
    rc = re.search(r"@@rc (\d+)", text)
    if rc and rc.group(1) != "0":
        raise VmemsimError(f"validate: the workload exited with status {rc.group(1)} in the guest")
    before, after = _kv(block("vmstat-before")), _kv(block("vmstat-after"))
    delta = {k: after[k] - before.get(k, 0) for k in after}
    mm = {}
    mms = re.search(r"@@mm_stat (.*)", text)
    if mms:
        vals = mms.group(1).split()
        mm = {k: int(v) for k, v in zip(MM_STAT, vals) if v.lstrip("-").isdigit()}
    bd = re.search(r"@@blockdev (.*)", text)
    blockdev = {}
    if bd:
        blockdev = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", bd.group(1))}
    resident = []
    rs = re.search(r"@@resident( .*)?$", text, re.M)
    if rs and rs.group(1):
        resident = [[int(a), int(b)] for a, b in re.findall(r"(\d+)-(\d+)", rs.group(1))]
    za = re.search(r"@@zoneinfo-after\r?\n(.*?)(?=\r?\n@@)", text, re.S)
    zones_after = zone_file_pages(za.group(1)) if za else {}
    u = re.search(r"@@uname (\S+)", text)
    lg = re.search(r"@@lru_gen (\S+)", text)
    zones = parse_zoneinfo(block("zoneinfo-before"))
    # Logs of runs made before the harness printed /proc/pagetypeinfo have no such block.
    pt = re.search(r"@@pagetypeinfo-before\r?\n(.*?)(?=\r?\n@@|\Z)", text, re.S)
    pagetypes = parse_pagetypeinfo(pt.group(1), zones) if pt else None
    db = re.search(r"@@diskstat-before (.*)", text)
    da = re.search(r"@@diskstat-after (.*)", text)
    diskstat = parse_diskstat(db.group(1), da.group(1)) if db and da else {}
    return dict(
        diskstat=diskstat,
        vmstat=delta, vmstat_before=before, meminfo_before=_meminfo(block("meminfo-before")),
        zones=zones, mm_stat=mm, blockdev=blockdev,
        resident=resident, zones_after=zones_after, pagetypes=pagetypes,
        accesses=int(m.group(1)), checksum=m.group(2), phase_seconds=float(m.group(4)),
        release=u.group(1) if u else "", lru_gen=lg.group(1) if lg else "",
    )


Progress = Callable[[str], None]


def run_kernel(
    kernel: Kernel,
    w: Workload,
    settings: Settings,
    accel: str = "tcg",
    timeout: float = 1800.0,
    progress: Optional[Progress] = None,
    keep_log: Optional[Path] = None,
) -> KernelRun:
    """Boot ``kernel`` once with ``settings``, run ``w`` and return the parsed counters."""
    settings.check()
    with tempfile.TemporaryDirectory(prefix="vmemsim-validate-") as tmp:
        t = Path(tmp)
        initrd = t / "initrd.cpio"
        build_initramfs(kernel, w, settings, initrd)
        disk = None
        if settings.swap in ("disk", "ssd"):
            disk = t / "swap.img"
            with open(disk, "wb") as f:
                f.truncate(swap_mib(settings, w) << 20)
        trace = None
        if w.kind == "trace":
            trace = t / "trace.img"
            w.write_sequence_file(trace)
        elif w.kind == "file":
            trace = t / "data.img"
            with open(trace, "wb") as f:
                f.truncate(w.disk_bytes())
        log = t / "serial.log"
        cmd = qemu_command(kernel, initrd, settings, accel, disk, log, trace,
                           writable=w.kind == "file")
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        last = ""
        try:
            while proc.poll() is None:
                time.sleep(0.5)
                el = time.monotonic() - t0
                if el > timeout:
                    proc.kill()
                    proc.wait()
                    raise VmemsimError(f"validate: the kernel run took more than {timeout:.0f} s; killed")
                if progress and log.exists():
                    text = log.read_text(errors="replace")
                    pm = re.findall(r"@@progress (\d+) (\d+)", text)
                    stage = "booting" if "@@swaps" not in text else "running"
                    if pm:
                        stage = f"{int(pm[-1][0]) * 100 // max(1, int(pm[-1][1]))}% of the accesses"
                    if "@@vmwl" in text:
                        stage = "done"
                    line = f"{stage}, {el:.0f} s"
                    if line != last:
                        progress(line)
                        last = line
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        boot_s = time.monotonic() - t0
        text = log.read_text(errors="replace") if log.exists() else ""
        if keep_log is not None:
            Path(keep_log).write_text(text)
        if proc.returncode not in (0, None) and "@@done" not in text:
            err = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            raise VmemsimError(f"validate: qemu exited with status {proc.returncode}: {err.strip()[-400:]}")
    d = parse_log(text)
    return KernelRun(
        kernel=kernel.describe(), release=str(d.pop("release") or kernel.release), accel=accel,
        settings=asdict(settings), workload=w.key, boot_seconds=round(boot_s, 2),
        log_sha256=hashlib.sha256(text.encode()).hexdigest(), **d,  # type: ignore[arg-type]
    )
