"""The committed kernel-validation matrix (experiments/kernel-validation/data/kernel-runs.json):
real Linux runs of each workload, re-compared here with the simulator as it is now.

Every configuration must stay within the issue's tolerances (major faults, pswpin and pswpout
±5%, pgscan and pgsteal ±15%, each widened to the kernel's own repeat spread) and MG-LRU −
classic must have the kernel's sign wherever the kernel's difference exceeds its spread.
Configurations the models do not reach yet are listed in KNOWN_OFF with the reason found
(FINDINGS.md); they are strict xfails, so one that comes within tolerance fails here until it
is taken off the list."""

import importlib.util
import json
from pathlib import Path

import pytest

from vmemsim.validate.workload import make_workload

EXP = Path(__file__).resolve().parent.parent / "experiments" / "kernel-validation"
DATA = EXP / "data" / "kernel-runs.json"


def _matrix():
    spec = importlib.util.spec_from_file_location("kv_matrix", EXP / "matrix.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


matrix = _matrix()
RAW = json.loads(DATA.read_text())["cases"]
KEYS = [(c["name"], c["swap_label"], c["settings"]["lru"]) for c in RAW]

#: Configurations out of tolerance with the errors measured when this list was written
#: (FINDINGS.md says why, as far as it is known). Every entry is a strict xfail.
KNOWN_OFF = {
    ('zipf-0.9', 'disk-pc0', 'mglru'): 'pgmajfault +5.0%, pswpin +5.0%',
    ('zipf-1.2-1.3x', 'disk-pc0', 'mglru'): 'pgmajfault +73.9%, pswpin +73.9%, pswpout +15.0%, pgscan +22.9%',
    ('zipf-1.2-1.3x', 'disk-pc3', 'classic'): 'pgmajfault -21.7%, pswpin -20.5%, pswpout -7.1%, pgscan -25.0%',
    ('zipf-1.2-1.3x', 'disk-pc3', 'mglru'): 'pgmajfault +69.5%, pswpin +64.2%, pswpout +11.9%, pgscan +21.6%',
    ('zipf-1.2-1.3x', 'zram', 'classic'): 'pgmajfault -24.7%, pswpin -24.7%, pswpout -9.5%, pgscan +17.0%',
    ('zipf-1.2-1.3x', 'zram', 'mglru'): 'pgmajfault +58.0%, pswpin +58.0%, pswpout +17.9%, pgscan +27.8%',
}
#: (workload, swap) pairs whose MG-LRU − classic sign vmemsim gets wrong.
KNOWN_WRONG_SIGN = {
    ('loop', 'disk-pc0'): 'kernel +30 (spread 6), vmemsim +0',
    ('loop', 'zram'): 'kernel +38 (spread 2), vmemsim +0',
    ('zipf-1.2-1.3x', 'disk-pc0'): 'kernel -384 (spread 180), vmemsim +593',
    ('zipf-1.2-1.3x', 'disk-pc3'): 'kernel -541 (spread 85), vmemsim +632',
}


@pytest.fixture(scope="module")
def loaded():
    return {(n, l, c.settings["lru"]): c for n, l, c in matrix.load_cases()}


def test_the_matrix_covers_the_issues_grid():
    names = {c["name"] for c in RAW}
    assert {"zipf-0.9", "zipf-1.2", "zipf+scan", "loop", "memcached", "stress-ng"} <= names
    for n in names:
        got = {(c["swap_label"], c["settings"]["lru"]) for c in RAW if c["name"] == n}
        extra = matrix.EXTRA_SWAPS if n in matrix.EXTRA_WORKLOADS else []
        assert got == {(s, l) for s, _, _ in matrix.SWAPS + extra for l in ("classic", "mglru")}, n
    for c in RAW:
        assert len(c["kernel_runs"]) >= 2
        for r in c["kernel_runs"]:
            assert r["kernel"].startswith("linux-image-") and r["release"]
            assert len(r["log_sha256"]) == 64
            free = r["vmstat_before"]["nr_free_pages"]
            # The workload is 2-4x the memory the kernel had free.
            w = make_workload(matrix.resolve(c["spec"]), c["mode"], c["seed"]) if c["spec"].startswith("gen:") else None
            if w is not None and c["name"] != "zipf-1.2-1.3x":  # kept outside the rule on purpose
                assert 2 <= w.footprint_pages() / free <= 4, (c["name"], free)


@pytest.mark.parametrize("key", KEYS, ids=["/".join(k) for k in KEYS])
def test_configuration_within_tolerance(loaded, key, request):
    if key in KNOWN_OFF:
        request.applymarker(pytest.mark.xfail(strict=True, reason=KNOWN_OFF[key]))
    case = loaded[key]
    bad = {
        k: round(case.row(k).error * 100, 1)
        for k in matrix.TOLERANCE
        if not matrix.within(case.row(k))
    }
    assert not bad, f"{key}: errors out of tolerance (%): {bad}"


SIGN_KEYS = sorted({(n, l) for n, l, _ in KEYS})


@pytest.mark.parametrize("pair", SIGN_KEYS, ids=["/".join(p) for p in SIGN_KEYS])
def test_mglru_minus_classic_has_the_kernels_sign(loaded, pair, request):
    if pair in KNOWN_WRONG_SIGN:
        request.applymarker(pytest.mark.xfail(strict=True, reason=KNOWN_WRONG_SIGN[pair]))
    ls = [(n, l, c) for (n, l, _), c in loaded.items() if (n, l) == pair]
    (row,) = [r for r in matrix.sign_checks(ls)]
    assert row[5] != "WRONG SIGN", row
