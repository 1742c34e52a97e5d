"""`vmemsim replay --swap zram`: zram's compressed pool charged to the machine's memory.

The expected numbers are worked by hand from zram's and zsmalloc's rules (Linux 6.8): a
`sparse` page (zeros but for one 8-byte word) compresses to 41 bytes in LZO-RLE; `zs_malloc`
adds its 8-byte handle (49 bytes) and rounds up to the 64-byte size class; the handle itself
is an 8-byte `zs_handle` slab object: 72 bytes of pool per stored page."""

from __future__ import annotations

from pathlib import Path

import pytest

import vmemsim
from conftest import run_cli, run_json, write_trace
from test_cli import assert_one_line_error


@pytest.fixture(scope="module")
def thousand_writes(tmp_path_factory) -> Path:
    # Pages 0..999 written once each, in order.
    return write_trace(tmp_path_factory.mktemp("z") / "w.txt", range(1000), [True] * 1000)


def test_sparse_pages_take_72_bytes_each_from_the_frames(thousand_writes: Path) -> None:
    # FIFO on 200 frames ends with resident R and pool P filling the frames, where
    # P = ceil((1000 - R) * 72 / 4096): R = 186 gives 15 pages (201 > 200), R = 185 gives
    # 815 stored pages, 58,680 bytes, 15 pages (200). Without the pool: 800 swap-outs.
    j = run_json("replay", "--trace", str(thousand_writes), "--policy", "fifo", "--frames", "200",
                 "--swap", "zram", "--class", "sparse")
    assert (j["stats"]["pswpout"], j["stats"]["zram_mem_used_max"]) == (815, 15 * 4096)
    assert j["swap"] == "zram" and j["zram_pool"]["class"] == "sparse"
    assert j["zram_pool"]["params"]["numeric_ratio"] == 2.0
    for extra in (["--cgroup"], ["--class", "zero"]):
        j = run_json("replay", "--trace", str(thousand_writes), "--policy", "fifo",
                     "--frames", "200", "--swap", "zram", "--class", "sparse", *extra)
        assert (j["stats"]["pswpout"], j["stats"]["zram_mem_used_max"]) == (800, 0), extra
    assert j["zram_pool"]["class"] == "zero"


def test_the_python_api_charges_the_pool_too(thousand_writes: Path) -> None:
    r = vmemsim.replay(str(thousand_writes), policy="fifo", frames=200, swap="zram",
                       content_class="sparse")
    assert r.stats["pswpout"] == 815 and r.zram_pool["class"] == "sparse"
    r = vmemsim.replay(str(thousand_writes), policy="fifo", frames=200, swap="zram",
                       content_class="sparse", charge_device_ram=False)
    assert r.stats["pswpout"] == 800 and r.zram_pool is None


def test_incompressible_pages_cannot_be_swapped_to_a_charged_zram(thousand_writes: Path) -> None:
    # A random page is stored whole (ZRAM_HUGE): 4,096 bytes in the last class plus the
    # 8-byte handle, more than the frame its swap-out frees; memory runs out.
    p = run_cli("replay", "--trace", str(thousand_writes), "--policy", "fifo", "--frames", "200",
                "--swap", "zram", "--class", "random", "--json")
    assert_one_line_error(p, "out of memory")


@pytest.mark.parametrize("swap, needle", [
    ("zram:text_ratio=0", "zram.text_ratio"),
    ("zram:colour=1", "colour"),
    ("ssd", "swap"),
    ("disk:x=1", "swap"),
    ("disk:max_pages=many", "max_pages"),
    ("disk:max_pages=0", "swap_max_pages"),
    ("hdd:max_pages=70000", "hdd.max_pages"),
])
def test_bad_zram_parameters_are_named(thousand_writes: Path, swap: str, needle: str) -> None:
    p = run_cli("replay", "--trace", str(thousand_writes), "--policy", "fifo", "--frames", "200",
                "--swap", swap, "--json")
    assert_one_line_error(p, needle)


def test_hdd_takes_slots_from_the_rotational_allocator(tmp_path: Path) -> None:
    # Pages 0..299 written once on 200 frames with FIFO: 100 swap-outs. On a rotational disk
    # the first slots are 1, 2, 3 (the kernel's first batch, cut by latency_ration) then 4..;
    # slot numbers do not show in counters, so check the device is named and sized: 8 MiB
    # is 2,048 pages, 2,047 usable.
    t = write_trace(tmp_path / "w.txt", range(300), [True] * 300)
    j = run_json("replay", "--trace", str(t), "--policy", "fifo", "--frames", "200",
                 "--swap", "hdd:size=8MiB")
    assert j["swap"] == "hdd:size=8MiB" and j["stats"]["pswpout"] == 100
    p = run_cli("replay", "--trace", str(t), "--policy", "fifo", "--frames", "200",
                "--swap", "hdd:size=lots", "--json")
    assert_one_line_error(p, "hdd.size")
