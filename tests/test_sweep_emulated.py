"""The emulated sweep driver: disk profiles after the vibration study, the blk-throttle cgroup,
and a loop device that writes as fast as the profiled disk would under a stimulus."""

from __future__ import annotations

import mmap
import os
import random
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from iowatt.errors import ConfigError, SourceUnavailableError, TargetError
from iowatt.hostinfo import Mount
from iowatt.sweep import throttle as throttle_module
from iowatt.sweep.emulated import MIN_BPS, EmulatedDisk, EmulatedDriver, limit_bps
from iowatt.sweep.profiles import DiskProfile, get_profile, load_profiles
from iowatt.sweep.stimulus import Stimulus
from iowatt.sweep.throttle import Throttle, find_hierarchy

FAN = Stimulus("fan")
FREQ = Stimulus("frequency", amplitude_g=0.17)
AMP_800 = Stimulus("amplitude", band="20-800")
AMP_2000 = Stimulus("amplitude", band="20-2000")
SATA = ("fuj-sata", "hit-sata")
SAS = ("sea-sas2-a", "sea-sas2-b", "hit-sas")
FLOOR = 0.02  # the profiles' "stall" (a cap of 0 would mean no cap)

IO_SIZE = 64 * 1024
WARMUP_S = 0.3  # blk-throttle's first slice may run short or long; not measured
MEASURE_S = 2.0


@pytest.fixture(scope="module")
def profiles() -> dict[str, DiskProfile]:
    return load_profiles()


def mb_s(profile: DiskProfile, stim: Stimulus, value: float) -> float:
    return profile.write_mb_s * profile.fraction(stim, value)


# --- built-in profiles against the study -----------------------------------------------------


def test_builtin_profiles_are_the_disks_of_table_a(profiles: dict[str, DiskProfile]) -> None:
    speeds = {name: p.write_mb_s for name, p in profiles.items()}
    assert speeds == {
        "sea-sas2-a": 72.2,
        "sea-sas2-b": 70.6,
        "hit-sas": 81.6,
        "fuj-sata": 31.2,
        "hit-sata": 37.0,
        "int-ssd": 206.0,
    }
    assert profiles["hit-sata"].label == "HIT SATA"
    assert profiles["hit-sata"].model == "Hitachi Travelstar E5K500"
    assert profiles["int-ssd"].type == "SSD"


def test_fan_has_no_effect_up_to_half_duty(profiles: dict[str, DiskProfile]) -> None:
    for p in profiles.values():
        assert all(p.fraction(FAN, pwm) == 1.0 for pwm in range(0, 51)), p.name


def test_sata_disks_fall_steeply_above_half_duty(profiles: dict[str, DiskProfile]) -> None:
    assert profiles["fuj-sata"].fraction(FAN, 100) == pytest.approx(0.35)
    assert profiles["hit-sata"].fraction(FAN, 100) == pytest.approx(0.12)
    for name in SATA:
        curve = [profiles[name].fraction(FAN, pwm) for pwm in range(50, 101, 10)]
        assert curve == sorted(curve, reverse=True)
        assert curve[1] < 0.95  # already degraded at 60 %


def test_sas_disks_lose_about_two_percent_at_full_fan(profiles: dict[str, DiskProfile]) -> None:
    assert profiles["hit-sas"].fraction(FAN, 100) == pytest.approx(0.98)
    for name in SAS:
        assert profiles[name].fraction(FAN, 90) == 1.0
        assert 0.975 <= profiles[name].fraction(FAN, 100) < 1.0


def test_ssd_is_flat_whatever_the_stimulus(profiles: dict[str, DiskProfile]) -> None:
    ssd = profiles["int-ssd"]
    for stim, values in [
        (FAN, range(0, 101, 5)),
        (AMP_800, [0.0, 0.63, 1.8, 3.0]),
        (AMP_2000, [0.0, 0.63, 1.8]),
        (FREQ, range(20, 2001, 7)),
    ]:
        assert {mb_s(ssd, stim, v) for v in values} == {206.0}


def test_hit_sata_amplitude_figures_in_mb_s(profiles: dict[str, DiskProfile]) -> None:
    hit = profiles["hit-sata"]
    assert mb_s(hit, AMP_800, 0.63) == pytest.approx(8.6, abs=0.01)
    assert mb_s(hit, AMP_2000, 0.63) == pytest.approx(3.0, abs=0.01)
    # The stall at 1.8 grms is the floor, a trickle the throttle can still express.
    for stim in (AMP_800, AMP_2000):
        assert hit.fraction(stim, 1.8) == FLOOR
        assert 0 < limit_bps(hit, stim, 1.8) == round(FLOOR * 37e6)


def test_fuj_sata_beats_hit_sata_above_0_2_grms(profiles: dict[str, DiskProfile]) -> None:
    fuj, hit = profiles["fuj-sata"], profiles["hit-sata"]
    for stim in (AMP_800, AMP_2000):
        for g in [i / 100 for i in range(0, 21)]:
            assert mb_s(fuj, stim, g) <= mb_s(hit, stim, g), (stim.band, g)
        for g in [i / 100 for i in range(21, 181)]:
            assert mb_s(fuj, stim, g) > mb_s(hit, stim, g), (stim.band, g)


def test_sas_amplitude_flat_until_1_27_then_at_most_10_5_percent_down(
    profiles: dict[str, DiskProfile],
) -> None:
    for name in SAS:
        for stim in (AMP_800, AMP_2000):
            p = profiles[name]
            assert all(p.fraction(stim, i / 100) == 1.0 for i in range(0, 128)), name
            assert 0.895 <= p.fraction(stim, 1.8) < 0.95, name
    assert min(profiles[n].fraction(s, 1.8) for n in SAS for s in (AMP_800, AMP_2000)) == 0.895


def test_sata_frequency_response_has_narrow_dead_and_ideal_bands(
    profiles: dict[str, DiskProfile],
) -> None:
    for name in SATA:
        curve = {hz: profiles[name].fraction(FREQ, hz) for hz in range(20, 2001)}
        dead = [hz for hz, f in curve.items() if f <= FLOOR]
        ideal = [hz for hz, f in curve.items() if f >= 0.95]
        for hzs in (dead, ideal):
            runs = _runs(hzs)
            assert len(runs) >= 2, name
            assert all(len(r) <= 5 for r in runs), (name, runs)  # a few Hz wide
        # A 10 Hz step misses bands that a 1 Hz step finds.
        assert len(dead) > len([hz for hz in dead if hz % 10 == 0])


def test_sas_frequency_response_fluctuates_by_one_to_two_percent(
    profiles: dict[str, DiskProfile],
) -> None:
    for name in SAS:
        curve = [profiles[name].fraction(FREQ, hz) for hz in range(20, 2001)]
        assert 0.98 <= min(curve) <= 0.99 and max(curve) <= 1.0, name


def _runs(values: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for v in values:
        if runs and v == runs[-1][-1] + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return runs


# --- curves, bands, user profile files ------------------------------------------------------


def test_fraction_is_linear_between_points_and_flat_beyond(
    profiles: dict[str, DiskProfile],
) -> None:
    hit = profiles["hit-sata"]  # fan: [50, 1.0], [60, 0.78]; ends at 0 and 100 %
    assert hit.fraction(FAN, 55) == pytest.approx(0.89)
    assert hit.fraction(FAN, 150) == hit.fraction(FAN, 100)
    assert hit.fraction(FAN, -5) == 1.0
    assert hit.fraction(FREQ, 5) == hit.fraction(FREQ, 20)


def test_amplitude_sweep_needs_a_band_the_profile_has(profiles: dict[str, DiskProfile]) -> None:
    hit = profiles["hit-sata"]
    with pytest.raises(ConfigError, match="several bands") as e:
        hit.check(Stimulus("amplitude"))
    assert "--band" in (e.value.hint or "")
    with pytest.raises(ConfigError, match="no amplitude curve for the 20-500 Hz band") as e:
        hit.fraction(Stimulus("amplitude", band="20-500"), 0.5)
    assert "amplitude 20-800 Hz" in (e.value.hint or "")
    # The band as make_stimulus normalises it, or as a user might write it.
    assert hit.fraction(Stimulus("amplitude", band="20 - 800 Hz"), 0.63) == hit.fraction(
        AMP_800, 0.63
    )


def test_user_profile_file_adds_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(
        "[hit-sata]\nwrite_mb_s = 50.0\n[hit-sata.curves]\nfan = [[0, 1.0], [100, 0.5]]\n\n"
        '[rack7-sata]\nlabel = "rack 7"\nwrite_mb_s = 90\n'
        '[rack7-sata.curves.amplitude]\n"20-800" = [[0, 1.0], [1, 0.25]]\n'
    )
    profiles = load_profiles(path)
    assert profiles["hit-sata"].write_mb_s == 50.0
    assert profiles["hit-sata"].fraction(FAN, 50) == 0.75
    assert profiles["fuj-sata"].write_mb_s == 31.2  # untouched
    rack = get_profile("rack7-sata", profiles)
    assert rack.label == "rack 7"
    # One band only: an amplitude sweep without --band uses it.
    assert rack.fraction(Stimulus("amplitude"), 0.5) == pytest.approx(0.625)
    with pytest.raises(ConfigError, match="no fan curve") as e:
        rack.check(FAN)
    assert e.value.hint == "it has: amplitude 20-800 Hz"
    assert load_profiles()["hit-sata"].write_mb_s == 37.0  # the built-ins are not changed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[a\nwrite_mb_s = 1", "mine.toml"),
        ("[d.curves]\nfan = [[0, 1.0]]", "`d.write_mb_s` must be a positive number"),
        ("[d]\nwrite_mb_s = 10\nrpms = 1\n[d.curves]\nfan = [[0, 1]]", "`d.rpms` is not"),
        ("[d]\nwrite_mb_s = 10", "`d.curves` is missing"),
        ("[d]\nwrite_mb_s = 10\n[d.curves]\nvibes = [[0, 1]]", "`d.curves.vibes` is not"),
        ("[d]\nwrite_mb_s = 10\n[d.curves]\nfan = [[50, 1], [40, 1]]", "point 2: value `40`"),
        ("[d]\nwrite_mb_s = 10\n[d.curves]\nfan = [[50, 1.5]]", "fraction `1.5` is outside"),
        ("[d]\nwrite_mb_s = 10\n[d.curves]\nfan = [50, 1]", "point 1 `50`"),
        ("[d]\nwrite_mb_s = 10\n[d.curves.amplitude]\nlow = [[0, 1]]", "amplitude.low` is not"),
    ],
)
def test_malformed_profile_file_names_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"mine\.toml") as e:
        load_profiles(path)
    assert message in e.value.message


def test_missing_profile_file_and_unknown_profile_name(
    tmp_path: Path, profiles: dict[str, DiskProfile]
) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_profiles(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="unknown disk profile `hit-sas2`") as e:
        get_profile("hit-sas2", profiles)
    assert "hit-sata" in (e.value.hint or "") and "int-ssd" in (e.value.hint or "")


def test_limit_bps_follows_the_profile_and_never_reaches_zero(
    profiles: dict[str, DiskProfile],
) -> None:
    assert limit_bps(profiles["hit-sata"], FAN, 100) == 4_440_000
    assert limit_bps(profiles["hit-sata"], FAN, 30) == 37_000_000
    dead = DiskProfile("dead", "dead", None, None, 10.0, {"fan": ((0, 0.0),)})
    assert limit_bps(dead, FAN, 50) == MIN_BPS


# --- the throttle cgroup, on a fake cgroup v2 tree ------------------------------------------


def _fake_v2(tmp_path: Path) -> tuple[Path, list[Mount], Path, Path]:
    """A cgroup2 mount with io available, this process in /user.slice, and a sysfs holding
    disk 7:0 with partition 259:0."""
    root = tmp_path / "unified"
    (root / "user.slice").mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu io memory\n")
    (root / "cgroup.subtree_control").write_text("")
    (root / "user.slice" / "cgroup.procs").write_text("")
    proc_cgroup = tmp_path / "proc-self-cgroup"
    proc_cgroup.write_text("0::/user.slice\n")
    sys_root = tmp_path / "sys"
    disk = sys_root / "devices" / "virtual" / "block" / "loop0"
    (disk / "loop0p1").mkdir(parents=True)
    (disk / "dev").write_text("7:0\n")
    (disk / "loop0p1" / "dev").write_text("259:0\n")
    (disk / "loop0p1" / "partition").write_text("1\n")
    links = sys_root / "dev" / "block"
    links.mkdir(parents=True)
    (links / "7:0").symlink_to(disk)
    (links / "259:0").symlink_to(disk / "loop0p1")
    mounts = [Mount(0, 38, str(root), "cgroup2", "cgroup2")]
    return root, mounts, proc_cgroup, sys_root


def test_v2_throttle_writes_io_max_and_undoes_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, mounts, proc_cgroup, sys_root = _fake_v2(tmp_path)
    t = Throttle.create("iowatt-x", mounts=mounts, proc_cgroup=proc_cgroup, sys_root=sys_root)
    assert (t.version, t.path) == ("v2", root / "iowatt-x")
    assert (root / "cgroup.subtree_control").read_text() == "+io\n"
    for name in ("cgroup.procs", "io.max"):  # the kernel makes these at mkdir
        (t.path / name).write_text("")
    pid = str(os.getpid())

    t.enter()
    assert (t.path / "cgroup.procs").read_text() == f"{pid}\n"
    # A partition is throttled as its disk.
    assert t.set_write_bps(os.makedev(259, 0), 8_000_000) == os.makedev(7, 0)
    assert (t.path / "io.max").read_text() == "7:0 wbps=8000000\n"
    with pytest.raises(ValueError, match="None removes"):
        t.set_write_bps(os.makedev(7, 0), 0)

    # rmdir works on a real cgroup despite its control files; the fake needs rmtree.
    monkeypatch.setattr(throttle_module, "_remove_cgroup", shutil.rmtree)
    t.close()
    assert not t.path.exists()
    assert (root / "user.slice" / "cgroup.procs").read_text() == f"{pid}\n"
    t.close()  # again: nothing left to do


def test_v2_throttle_lifts_each_limit_on_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, mounts, proc_cgroup, sys_root = _fake_v2(tmp_path)
    (root / "cgroup.subtree_control").write_text("io memory\n")  # already delegated
    t = Throttle.create("iowatt-x", mounts=mounts, proc_cgroup=proc_cgroup, sys_root=sys_root)
    assert (root / "cgroup.subtree_control").read_text() == "io memory\n"
    (t.path / "io.max").write_text("")
    t.set_write_bps(os.makedev(7, 0), 5_000_000)
    t.set_write_bps(os.makedev(7, 0), None)
    t.set_write_bps(os.makedev(7, 0), 6_000_000)
    removed: list[str] = []

    def remove(path: Path) -> None:
        removed.append((path / "io.max").read_text())
        shutil.rmtree(path)

    monkeypatch.setattr(throttle_module, "_remove_cgroup", remove)
    t.close()
    assert removed == ["7:0 wbps=5000000\n7:0 wbps=max\n7:0 wbps=6000000\n7:0 wbps=max\n"]


def test_no_throttling_controller_is_a_clear_error() -> None:
    with pytest.raises(SourceUnavailableError, match="no cgroup controller") as e:
        Throttle.create("iowatt-x", mounts=[])
    assert "blkio" in (e.value.hint or "")


def test_emulated_driver_refuses_files_and_directories(
    tmp_path: Path, profiles: dict[str, DiskProfile]
) -> None:
    image = tmp_path / "disk.img"
    image.write_bytes(b"\0" * 4096)
    for path in (image, tmp_path):
        with pytest.raises(TargetError, match="use a loop device") as e:
            EmulatedDriver(FAN, [EmulatedDisk("d", path, profiles["hit-sata"])])
        assert "losetup --find --show" in (e.value.hint or "")
    with pytest.raises(TargetError, match="cannot be used"):
        EmulatedDriver(FAN, [EmulatedDisk("d", tmp_path / "nope", profiles["hit-sata"])])


# --- a real loop device and a real cgroup ---------------------------------------------------


@pytest.fixture
def shm_loop(shm_loops: Callable[[], Path]) -> Path:
    return shm_loops()


@pytest.fixture
def controller() -> str:
    """The cgroup version that throttles here; skips when there is none."""
    if os.geteuid() != 0:
        pytest.skip("needs root: cgroups")
    hierarchy = find_hierarchy()
    if hierarchy is None:
        pytest.skip("no cgroup v1 blkio and no cgroup v2 io controller")
    return hierarchy.version


@pytest.fixture
def throttle(controller: str) -> Iterator[Throttle]:
    t = Throttle.create(f"iowatt-test-{os.getpid()}")
    try:
        yield t
    finally:
        t.close()


def write_rate(device: Path) -> float:
    """Bytes/s of 64 KiB O_DIRECT writes at random aligned offsets, over ``MEASURE_S``."""
    buf = mmap.mmap(-1, IO_SIZE)  # page-aligned, as O_DIRECT wants
    buf.write(b"\xa5" * IO_SIZE)
    fd = os.open(device, os.O_WRONLY | os.O_DIRECT)
    try:
        blocks = os.lseek(fd, 0, os.SEEK_END) // IO_SIZE
        rng = random.Random(7)

        def burst(seconds: float) -> float:
            written, start = 0, time.monotonic()
            while time.monotonic() - start < seconds:
                written += os.pwrite(fd, buf, rng.randrange(blocks) * IO_SIZE)
            return written / (time.monotonic() - start)

        burst(WARMUP_S)
        return burst(MEASURE_S)
    finally:
        os.close(fd)
        buf.close()


def my_cgroup(version: str) -> str:
    """This process's cgroup in the throttling hierarchy, from /proc/self/cgroup."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        hid, controllers, rel = line.split(":", 2)
        v1 = version == "v1" and "blkio" in controllers.split(",")
        if v1 or (version == "v2" and hid == "0"):
            return rel
    raise AssertionError("no such hierarchy in /proc/self/cgroup")


@pytest.mark.needs_root
@pytest.mark.slow
def test_throttle_caps_writes_of_every_thread_and_close_undoes_it(
    shm_loop: Path, throttle: Throttle, controller: str
) -> None:
    before = my_cgroup(controller)
    # A thread started before enter() moves too (the generator's threads may be running).
    tid: list[int] = []
    release = threading.Event()

    def idle() -> None:
        tid.append(threading.get_native_id())
        release.wait()

    worker = threading.Thread(target=idle)
    worker.start()
    try:
        while not tid:
            time.sleep(0.01)
        throttle.enter()
        thread_cgroup = Path(f"/proc/self/task/{tid[0]}/cgroup").read_text()
        assert f"/{throttle.path.name}\n" in thread_cgroup
    finally:
        release.set()
        worker.join()
    assert my_cgroup(controller) == f"/{throttle.path.name}"

    limit = 8_000_000
    throttle.set_write_bps(os.stat(shm_loop).st_rdev, limit)
    measured = write_rate(shm_loop)
    assert measured == pytest.approx(limit, rel=0.10)

    throttle.close()
    assert not throttle.path.exists()
    assert my_cgroup(controller) == before
    assert write_rate(shm_loop) > 5 * limit


@pytest.mark.needs_root
def test_throttle_on_a_partition_caps_its_disk(
    loop_device: Path, loop_partition: Path, throttle: Throttle, controller: str
) -> None:
    disk = os.stat(loop_device).st_rdev
    assert throttle.set_write_bps(os.stat(loop_partition).st_rdev, 1_000_000) == disk
    control = throttle.path / (
        "blkio.throttle.write_bps_device" if controller == "v1" else "io.max"
    )
    majmin = f"{os.major(disk)}:{os.minor(disk)}"

    def limit() -> str | None:
        lines = [ln for ln in control.read_text().splitlines() if ln.startswith(f"{majmin} ")]
        return lines[0] if lines else None

    assert "1000000" in (limit() or "")
    throttle.set_write_bps(disk, None)
    assert limit() is None or "wbps=max" in (limit() or "")


@pytest.mark.needs_root
def test_throttle_reuses_a_cgroup_left_by_a_killed_run(controller: str) -> None:
    hierarchy = find_hierarchy()
    assert hierarchy is not None
    stale = hierarchy.root / f"iowatt-test-stale-{os.getpid()}"
    stale.mkdir()
    try:
        t = Throttle.create(stale.name)
        t.close()
        assert not stale.exists()
    finally:
        if stale.exists():
            stale.rmdir()


@pytest.mark.needs_root
@pytest.mark.slow
def test_emulated_driver_makes_a_loop_device_write_like_the_profile(
    shm_loop: Path, controller: str, profiles: dict[str, DiskProfile]
) -> None:
    hit = profiles["hit-sata"]
    driver = EmulatedDriver(FAN, [EmulatedDisk("hit", shm_loop, hit)])
    try:
        driver.prepare()
        plan = driver.guard_plan()
        info = driver.describe()
        assert info["driver"] == "emulated" and info["cgroup"] == controller
        assert plan.rmdirs == [info["cgroup_path"]]
        assert info["disks"][0]["profile"] == "hit-sata"
        assert info["disks"][0]["write_mb_s"] == 37.0

        driver.apply(100)
        assert write_rate(shm_loop) == pytest.approx(0.12 * 37e6, rel=0.10)
        driver.apply(40)  # below half duty the disk writes at its full 37 MB/s
        assert write_rate(shm_loop) == pytest.approx(37e6, rel=0.10)

        driver.safe()  # no stimulus: the device is as fast as it is
        assert write_rate(shm_loop) > 3 * 37e6
    finally:
        driver.restore()
    assert not Path(plan.rmdirs[0]).exists()


@pytest.mark.needs_root
def test_emulated_driver_checks_profiles_and_disks_up_front(
    loop_device: Path, loop_partition: Path, profiles: dict[str, DiskProfile]
) -> None:
    hit = profiles["hit-sata"]
    with pytest.raises(ConfigError, match="several bands"):
        EmulatedDriver(Stimulus("amplitude"), [EmulatedDisk("d", loop_device, hit)])
    with pytest.raises(TargetError, match="same disk"):
        EmulatedDriver(
            FAN, [EmulatedDisk("a", loop_device, hit), EmulatedDisk("b", loop_partition, hit)]
        )
