"""experiments/vswapper (seed 004): its script end to end at 1/64 of the paper's sizes, checked
against properties counted by hand rather than against its own output."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "experiments" / "vswapper" / "run.py"
SCALE, ITERS = 64, 3


def _script():
    spec = importlib.util.spec_from_file_location("vswapper_run", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    run = _script()
    out = tmp_path_factory.mktemp("vswapper") / "results.json"
    assert run.main(["run", "--configs", "baseline,balloon,mapper", "--scale", str(SCALE),
                     "--iterations", str(ITERS), "--out", str(out)]) == 0
    return run, out, json.loads(out.read_text())


def test_every_run_records_its_configuration_seed_and_version(tiny):
    run, _, res = tiny
    meta = res["meta"]
    assert meta["configs"] == ["baseline", "balloon", "mapper"] and meta["scale"] == SCALE
    # Per configuration: passes 0..ITERS, the allocation, the fresh read, 4 warm sizes × 2.
    assert len(res["runs"]) == 3 * (ITERS + 1 + 1 + 1 + 8) == meta["runs"]
    for r in res["runs"]:
        assert r["version"] == meta["version"] and r["seed"] == 0
        assert r["run_config"]["workload"] == [r["spec"]]
        assert r["run_config"]["cache_mode"] == "none"
    vs = {r["config"]: r["run_config"]["vswapper"] for r in res["runs"]}
    assert vs == {"baseline": "off", "balloon": "off", "mapper": "mapper"}
    assert all(r["run_config"]["balloon"] == (r["config"] == "balloon") for r in res["runs"])


def test_iterations_read_the_file_once_then_from_the_guest_cache(tiny):
    # 200 MiB / 64 = 3 MiB of file = 768 pages; the guest believes it has 8 MiB, so the
    # uncooperative guests read it from the image once and then from their page cache; the
    # ballooned guest (8 - 7 = 1 MiB) reads it every time. The earlier use (412 / 64 = 6 MiB,
    # 1,536 pages) reads nothing and first-touches each of its pages; each iteration's first
    # touches are dd's 16 KiB buffer (4 pages) in the first only; the allocation (3 MiB)
    # first-touches its 768 pages. The image's disk (the host's) also serves the Mapper's
    # refaults when the guest's cached pages the host dropped come back: each refaulted
    # block is read, by its own request or by one's read-around (windows of 16 to 32
    # pages, the refaults being in file order), so the pages read are at least the
    # refaults, at 8 pages a request or more.
    run, _, res = tiny
    for c in ("baseline", "mapper", "balloon"):
        its = run.per_step(res["runs"], c)
        assert len(its) == ITERS
        want = [768] * ITERS if c == "balloon" else [768] + [0] * (ITERS - 1)
        if c == "mapper":
            assert its[0]["image_dev.pages_read"] == 768
            for i in its[1:]:
                assert i["image_dev.pages_read"] >= i["pathologies.mapper_refaults"] > 0
                assert 8 * i["image_dev.read_requests"] <= i["image_dev.pages_read"]
        else:
            assert [i["image_dev.pages_read"] for i in its] == want
        assert [i["guest.first_touch"] for i in its] == [4] + [0] * (ITERS - 1)
        warm = next(r for r in res["runs"] if r["config"] == c and r["figure"] == "fig9"
                    and r["count"] == 0)
        assert warm["image_dev"]["pages_read"] == 0 and warm["guest"]["first_touch"] == 1536
        assert run.alloc_step(res["runs"], c)["guest.first_touch"] == 768
        # Each run is a prefix of the next: no cumulative counter falls.
        rs = sorted((r for r in res["runs"] if r["config"] == c and r["figure"] == "fig9"),
                    key=lambda r: r["count"])
        for a, b in zip(rs, rs[1:]):
            fa, fb = run._flat(a), run._flat(b)
            assert all(fb[k] >= fa[k] for k in fa if not k.startswith("time.")), (a, b)


def test_rereads_from_the_guest_cache_fault_on_the_host(tiny):
    # The guest's copies from its page cache touch host memory: at the start of iteration 2
    # the host (100 / 64 MiB = 400 frames) holds at most 400 of the file's 768 frames, so at
    # least 768 - 400 = 368 copies find their frame absent from the EPT: an EPT violation
    # each, and a host swap read (baseline) or a Mapper refault from the image (mapper).
    run, _, res = tiny
    b, m = run.per_step(res["runs"], "baseline"), run.per_step(res["runs"], "mapper")
    for it in b[1:]:
        assert it["ept_violations"] >= 368 and it["host.pswpin"] > 0
    for it in m[1:]:
        assert it["ept_violations"] >= 368 and it["pathologies.mapper_refaults"] >= 368
        assert it["host.pswpin"] == 0


def test_the_mapper_removes_silent_writes_and_stale_reads_the_baseline_has(tiny):
    run, _, res = tiny
    b, m = run.per_step(res["runs"], "baseline"), run.per_step(res["runs"], "mapper")
    # The baseline's first read fills frames the earlier use left in the host's swap (stale
    # reads) and the host swaps the cached blocks out (silent writes); the Mapper maps over
    # them and drops the cached blocks instead.
    assert b[0]["pathologies.stale_swap_reads"] > 0
    assert b[0]["pathologies.silent_swap_writes"] > 0
    for r in res["runs"]:
        if r["config"] == "mapper":
            p = r["pathologies"]
            assert p["silent_swap_writes"] == 0 and p["stale_swap_reads"] == 0
    assert m[0]["pathologies.mapper_discards"] > 0
    assert b[0]["pathologies.mapper_discards"] == 0
    # The allocation overwrites swapped-out frames whole in both (no Preventer yet).
    for c in ("baseline", "mapper"):
        assert run.alloc_step(res["runs"], c)["pathologies.false_swap_reads"] > 0


def test_findings_and_figures_are_written_from_the_data(tiny, tmp_path):
    run, out, _ = tiny
    text = run.findings(str(out), str(tmp_path))
    for head in ("## Fig. 3", "## Fig. 9", "## Fig. 10", "## Findings", "## Why"):
        assert head in text
    assert "Not run: vswapper, balloon+vswapper" in text
    assert "| Fig. 10: the Preventer more than doubles" in text and "pending |" in text
    for f in ("fig3.png", "fig9.png", "fig10.png"):
        assert (tmp_path / f).stat().st_size > 0


def test_a_vswapper_setting_the_library_lacks_is_refused_with_its_error(tmp_path, capsys,
                                                                       monkeypatch):
    run = _script()
    monkeypatch.setitem(run.CONFIGS, "bogus", {"vswapper": "nonesuch"})
    out = tmp_path / "r.json"
    assert run.main(["run", "--configs", "baseline,bogus", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "configuration 'bogus'" in err and 'unknown VSwapper setting "nonesuch"' in err
    assert not out.exists()
    with pytest.raises(SystemExit):
        run.main(["run", "--configs", "nosuch"])


def test_findings_fill_the_vswapper_claims_once_those_configurations_are_run(tiny, tmp_path):
    # The data of all five configurations, standing in until vmemsim has them: the mapper's
    # runs relabelled `vswapper`, the balloon's `balloon+vswapper` (only the findings' code
    # is exercised here, not a result).
    run, out, res = tiny
    five = dict(res)
    five["runs"] = list(res["runs"])
    for src, dst in (("mapper", "vswapper"), ("balloon", "balloon+vswapper")):
        five["runs"] += [dict(r, config=dst) for r in res["runs"] if r["config"] == src]
    five["meta"] = dict(res["meta"], configs=list(run.CONFIGS))
    data = tmp_path / "five.json"
    data.write_text(json.dumps(five))
    text = run.findings(str(data), str(tmp_path))
    assert "Not run:" not in text and "vswapper not run" not in text
    assert "| Fig. 10: the Preventer more than doubles the performance (mapper / vswapper) | " \
           "> 2× | 1.00× | no |" in text
    assert "### balloon+vswapper" in text
