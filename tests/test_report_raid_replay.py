"""`iowatt report REPLAY-RUN [EMULATE-RUN] SIM-RUN` for a replay over an emulated array: a
generated log served by nginx from a PARAID array of emulated disks, its power recorded through
`--power emulated:path=MOUNT`, and `iowatt sim raid` of that replay. The report sets the
array's power per bin beside the simulator's and the replay's CDFs beside the simulator's, each
number as the runs' tables give it, and says where the personality came from."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import ks_2samp

from iowatt.report.raid_replay import binned_energy, ks_distance
from iowatt.units import format_joules
from support.cli import iowatt, runs_in
from support.emulated import MountProcess, mount_dirs
from support.nginx import nginx

# One bin a second on both sides, so a replay of seconds has several.
PARAMS = "[array]\nbin_s = 1.0\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A replay over a PARAID array (labelled personality=paraid), the emulate run that
    served it, and the simulation of the replay under RAID-0 and PARAID."""
    base = tmp_path_factory.mktemp("raid-replay")
    src = base / "src"
    for d in range(3):
        (src / f"dir{d}").mkdir(parents=True)
        for f in range(5):
            (src / f"dir{d}" / f"page{f}.html").write_bytes(b"x" * (100 + 20_011 * d * f))
    (base / "tree.key").write_bytes(bytes(range(32)))
    params = base / "raid.toml"
    params.write_text(PARAMS)
    dirs = mount_dirs(base)
    backing, mount, results = next(dirs)
    for args in (
        ["tree", "snapshot", src, "--key-file", base / "tree.key", "-o", base / "tree.parquet",
         "-q"],
        ["trace", "generate", "-o", base / "access.log", "--tree", base / "tree.parquet",
         "--duration", "4m", "--rate", "3", "--slow-share", "0", "--not-modified", "0",
         "--seed", "7", "-q"],
        ["tree", "recreate", base / "tree.parquet", backing, "-q"],
    ):  # fmt: skip
        _run(*args)
    m = MountProcess(backing, mount, results / "emulate", "--array", "paraid", "--disks", "4",
                     "--params", str(params))  # fmt: skip
    try:
        with nginx(mount, base / "nginx") as url:
            _run("replay", base / "access.log", "--target", url, "--speedup", "60",
                 "--power", f"emulated:path={mount}", "--label", "personality=paraid",
                 "--results", results / "replay", "--no-report", "-q")  # fmt: skip
    except BaseException:
        m.stop()
        raise
    emulate = m.finish()
    (replay,) = runs_in(results / "replay")
    _run("sim", "raid", replay, "--tree", base / "tree.parquet", "--params", params,
         "--personalities", "raid0,paraid", "--results", results / "sim", "--no-report",
         "-q")  # fmt: skip
    (sim,) = runs_in(results / "sim")
    yield {"replay": replay, "emulate": emulate, "sim": sim, "base": base}
    next(dirs, None)


def _run(*args: str | Path) -> None:
    """``iowatt ARGS`` as a subprocess (a module fixture has no capsys)."""
    r = subprocess.run(["iowatt", *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def _report(capsys: pytest.CaptureFixture[str], out: Path, *runs: Path) -> str:
    r = iowatt(capsys, "report", *runs, "-o", out)
    assert r.code == 0, r.err
    return out.read_text()


def _row(html: str) -> str:
    """The text of the comparison's table body, one space between cells."""
    start = html.index('data-table="emulated-vs-simulated"')
    body = html[html.index("<tbody>", start) : html.index("</table>", start)]
    return " ".join(re.sub(r"<[^>]+>", " ", body).split())


@pytest.mark.slow
@pytest.mark.needs_root
def test_the_emulated_array_s_power_and_cdfs_are_set_beside_the_simulator_s(
    capsys: pytest.CaptureFixture[str], runs: dict[str, Path], tmp_path: Path
) -> None:
    replay, emulate, sim = runs["replay"], runs["emulate"], runs["sim"]
    html = _report(capsys, tmp_path / "r.html", replay, emulate, sim)
    for plot in ("raid-replay-power", "raid-replay-cdf"):
        assert f'data-plot="{plot}"' in html
    # The replay first, then the comparison, the emulated array and the simulation.
    order = ["Web trace replay", "The emulated array beside the simulation",
             "Emulated array: ", "RAID simulation of the trace"]  # fmt: skip
    assert [html.index(h) for h in order] == sorted(html.index(h) for h in order)
    assert f"its personality from the emulate run <code>{emulate.name}</code>" in html

    # The energy compared, from the tables: the simulator's PARAID bins, and the replay's
    # energy counter read at the same bins from its first served request's due time.
    requests = pq.read_table(replay / "requests.parquet").to_pylist()
    served = [q for q in requests if q["method"] == "GET" and q["log_bytes"]
              and 200 <= (q["log_status"] or 0) < 300]  # fmt: skip
    zero = min(q["due_ns"] for q in served) / 1e9
    bins = [b for b in pq.read_table(sim / "raid_power.parquet").to_pylist()
            if b["personality"] == "paraid" and b["disk"] is None]  # fmt: skip
    bins.sort(key=lambda b: b["t_s"])
    power = [p for p in pq.read_table(replay / "power.parquet").to_pylist()
             if p["source"] == "emulated" and p["channel"] == "disk"]  # fmt: skip
    t = np.array([p["t_s"] for p in power])
    joules = np.array([p["joules"] for p in power])
    emulated = simulated = 0.0
    covered = 0
    for b in bins:
        start, end = zero + b["t_s"], zero + b["t_s"] + b["width_s"]
        if start >= t[0] and end <= t[-1]:
            covered += 1
            emulated += float(np.interp(end, t, joules) - np.interp(start, t, joules))
            simulated += b["energy_j"]
    assert covered >= 3
    # The simulator's latency and completion against the replay's first and last byte.
    latency = {
        m: pq.read_table(sim / "raid_requests.parquet", filters=[("personality", "=", "paraid")])[
            m
        ].to_numpy()
        for m in ("latency_ns", "completion_ns")
    }
    answered = [q for q in served if q["completion_ns"] is not None]
    ks_latency = ks_2samp(
        [q["ttfb_ns"] for q in answered], latency["latency_ns"], method="asymp"
    ).statistic
    ks_completion = ks_2samp(
        [q["completion_ns"] for q in answered], latency["completion_ns"], method="asymp"
    ).statistic
    assert _row(html) == (
        f"PARAID {covered} of {len(bins)} {format_joules(emulated)} {format_joules(simulated)}"
        f" {emulated / simulated - 1:+.1%} {ks_latency:.3f} {ks_completion:.3f}"
    )


@pytest.mark.slow
@pytest.mark.needs_root
def test_the_personality_comes_from_the_emulate_run_beside_the_replay_else_its_label(
    capsys: pytest.CaptureFixture[str], runs: dict[str, Path], tmp_path: Path
) -> None:
    replay, emulate, sim = runs["replay"], runs["emulate"], runs["sim"]
    # Given only the replay and the simulation: the label says PARAID.
    html = _report(capsys, tmp_path / "label.html", replay, sim)
    assert "its personality from the replay&#39;s label personality=paraid" in html
    assert 'data-plot="raid-replay-power"' in html and "Emulated array: " not in html
    # The emulate run in the replay's results directory is found there, and preferred.
    together = tmp_path / "results"
    for run in (replay, emulate):
        shutil.copytree(run, together / run.name)
    html = _report(capsys, tmp_path / "beside.html", together / replay.name, sim)
    assert f"its personality from the emulate run <code>{emulate.name}</code>" in html
    # Neither: the replay is left out, and the note says how to name it.
    alone = tmp_path / "alone" / replay.name
    shutil.copytree(replay, alone)
    manifest = json.loads((alone / "manifest.json").read_text())
    manifest["labels"] = {}
    (alone / "manifest.json").write_text(json.dumps(manifest))
    html = _report(capsys, tmp_path / "alone.html", alone, sim)
    assert "under a personality the report cannot tell" in html
    assert "<code>--label personality=paraid</code>" in html
    assert 'data-plot="raid-replay-power"' not in html
    assert "RAID simulation of the trace" in html, "the simulation is reported all the same"
    # A replay that read one emulated disk (its power has no channel per disk) has none.
    summary = json.loads((alone / "summary.json").read_text())
    summary["power"]["channels"] = [c for c in summary["power"]["channels"] if not c["parent"]]
    (alone / "summary.json").write_text(json.dumps(summary))
    html = _report(capsys, tmp_path / "one.html", alone, sim)
    assert "read one emulated disk at" in html and "cannot tell" not in html


@given(
    st.lists(st.integers(0, 50), min_size=1, max_size=40),
    st.lists(st.integers(0, 50), min_size=1, max_size=40),
)
def test_the_ks_distance_is_scipy_s_two_sample_statistic(a: list[int], b: list[int]) -> None:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # Only the statistic is compared: scipy's p-value warns on tiny or tied samples.
        warnings.simplefilter("ignore")
        statistic = ks_2samp(a, b, method="asymp").statistic
    assert ks_distance(a, b) == pytest.approx(statistic)


def test_binned_energy_reads_a_counter_linearly_and_leaves_uncovered_bins_out() -> None:
    t = np.array([0.0, 1.0, 3.0])
    so_far = np.array([0.0, 10.0, 30.0])  # 10 W throughout
    energy = binned_energy(t, so_far, np.array([-1.0, 0.5, 2.5, 4.0]))
    assert np.isnan(energy[0]) and np.isnan(energy[2])
    assert energy[1] == pytest.approx(20.0)
