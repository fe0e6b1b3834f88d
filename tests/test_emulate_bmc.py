"""An emulated disk following a BMC's fan duty (`iowatt emulate mount --at-from bmc`), against
the simulated BMC on 127.0.0.1 (tests/support/bmc.py): a duty set with ipmitool becomes the
disk's stimulus — read back from a Supermicro BMC, or from a fan tachometer with --fan-rpm —
`iowatt emulate set` is refused while it follows, a silent BMC keeps the last value and says
so, nothing is ever sent that sets a fan, and bad input mounts nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from iowatt.sweep.profiles import interpolate, load_profiles
from support.bmc import BmcSim
from support.cli import assert_user_error, iowatt, manifest, runs_in, summary
from support.emulated import MountProcess as Mount
from support.emulated import mount_dirs, mounted
from support.wait import wait_for

pytestmark = [pytest.mark.needs_root]
HIT_SATA_FAN = load_profiles()["hit-sata"].curves["fan"]
PASSWORD_ENV = "IOWATT_TEST_BMC_PW"


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    yield from mount_dirs(tmp_path)


def bmc_option(bmc: BmcSim) -> str:
    """``--bmc`` as `iowatt sweep` spells it, the password in the environment."""
    return (
        f"host={bmc.host},port={bmc.port},user={bmc.user},password-env={PASSWORD_ENV},"
        "cipher-suite=3"
    )


def raw(bmc: BmcSim, *args: str) -> None:
    done = bmc.run("raw", *args)
    assert done.returncode == 0, done.stderr


def smc_zone0(bmc: BmcSim, duty: int) -> None:
    """Supermicro: zone 0 (the one read back) to ``duty`` %."""
    raw(bmc, "0x30", "0x70", "0x66", "0x01", "0x00", f"{duty:#04x}")


def stimulus(m: Mount) -> float:
    return float(m.control("stimulus"))


def events(run: Path) -> list[dict[str, object]]:
    return pq.read_table(run / "events.parquet").to_pylist()


def stimuli(run: Path) -> list[float]:
    out = []
    for e in events(run):
        if e["kind"] == "stimulus":
            match = re.match(r"fan ([\d.]+) %: r = ", str(e["message"]))
            assert match, e["message"]
            out.append(float(match[1]))
    return out


def sets_fans(log: list[str]) -> list[str]:
    """The firmware's log without the reads."""
    return [line for line in log if " get " not in line]


def test_the_disk_follows_a_supermicro_duty_set_with_ipmitool_and_set_is_refused(
    bmc: BmcSim,
    dirs: tuple[Path, Path, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backing, mount, results = dirs
    monkeypatch.setenv(PASSWORD_ENV, bmc.password)
    raw(bmc, "0x30", "0x45", "0x01", "0x01")  # full mode: zone duties hold
    smc_zone0(bmc, 75)
    m = Mount(backing, mount, results, "--curve", "hit-sata", "--at-from", "bmc",
              "--bmc", bmc_option(bmc), "--vendor", "supermicro", "--poll", "100ms")  # fmt: skip
    assert any("following the fan duty of 127.0.0.1" in line for line in m.err)
    wait_for(lambda: stimulus(m) == 75, m.proc, what="the disk at 75 %")
    assert float(m.control("speed")) == pytest.approx(interpolate(HIT_SATA_FAN, 75))

    r = iowatt(capsys, "emulate", "set", mount, "50")
    assert_user_error(r, str(mount), "follows a BMC", "`50`")
    assert stimulus(m) == 75, "nothing changed"

    smc_zone0(bmc, 60)
    wait_for(lambda: stimulus(m) == 60, m.proc, what="the disk at 60 %")
    assert float(m.control("speed")) == pytest.approx(interpolate(HIT_SATA_FAN, 60))
    wait_for(lambda: bmc.fan_log().count("smc get zone 0") >= 3, m.proc, what="more polls")
    run = m.finish()

    assert sets_fans(bmc.fan_log()) == ["smc mode 1", "smc zone 0 duty 75", "smc zone 0 duty 60"]
    assert stimuli(run) == [0, 75, 60], "the curve's first point, then each new duty once"
    config = manifest(run)["config"]
    assert config["at_from"] == "bmc"
    assert config["bmc"]["vendor"] == "supermicro"
    assert config["bmc"]["read"] == "raw 0x30 0x70 0x66 0x00 0x00"
    assert config["bmc"]["bmc"]["host"] == "127.0.0.1"
    assert config["bmc"]["poll_s"] == pytest.approx(0.1)
    assert config["bmc"]["stale_s"] == 10
    assert "password" not in str(config["bmc"]).lower()
    assert summary(run)["vibration"]["source"] == "bmc"


def test_a_tachometer_mapped_to_duty_is_followed_where_the_vendor_reads_none_back(
    bmc: BmcSim, dirs: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    backing, mount, results = dirs
    monkeypatch.setenv(PASSWORD_ENV, bmc.password)
    raw(bmc, "0x30", "0x30", "0x01", "0x00")  # Dell: manual control
    raw(bmc, "0x30", "0x30", "0x02", "0xff", "0x4b")  # every fan at 75 %: FAN1 7800 rpm
    bmc.wait_for_sensors()
    m = Mount(backing, mount, results, "--curve", "hit-sata", "--at-from", "bmc",
              "--bmc", bmc_option(bmc), "--vendor", "dell", "--fan-rpm", "FAN1=600..10200",
              "--poll", "100ms")  # fmt: skip
    wait_for(lambda: stimulus(m) == 75, m.proc, what="the disk at 75 %")
    raw(bmc, "0x30", "0x30", "0x02", "0xff", "0x19")  # 25 %: FAN1 3000 rpm
    wait_for(lambda: stimulus(m) == 25, m.proc, what="the disk at 25 %")
    run = m.finish()
    assert stimuli(run) == [0, 75, 25]
    assert sets_fans(bmc.fan_log()) == ["dell manual", "dell duty 75", "dell duty 25"]
    follow = manifest(run)["config"]["bmc"]
    assert follow["read"] == "tachometer FAN1=600..10200 rpm"
    assert follow["fan_rpm"] == {"sensor": "FAN1", "low": 600, "high": 10200}


def test_a_silent_bmc_keeps_the_last_value_and_says_so_and_set_is_refused_meanwhile(
    bmc: BmcSim,
    dirs: tuple[Path, Path, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backing, mount, results = dirs
    monkeypatch.setenv(PASSWORD_ENV, bmc.password)
    raw(bmc, "0x30", "0x45", "0x01", "0x01")
    smc_zone0(bmc, 80)

    def said(text: str, n: int = 1) -> bool:
        return sum(text in line for line in m.err) >= n

    bmc.pause()  # silent from the mount on
    try:
        m = Mount(backing, mount, results, "--curve", "hit-sata", "--at-from", "bmc",
                  "--bmc", bmc_option(bmc), "--vendor", "supermicro", "--poll", "100ms",
                  "--stale", "500ms")  # fmt: skip
        wait_for(lambda: said("silent for 0.5 s: keeping the curve's first point"), m.proc,
                 what="the BMC said silent")  # fmt: skip
        r = iowatt(capsys, "emulate", "set", mount, "50")
        assert_user_error(r, "follows a BMC")
        assert stimulus(m) == 0
    finally:
        bmc.resume()
    wait_for(lambda: said("answers again: 80 %"), m.proc, what="the BMC back")
    wait_for(lambda: stimulus(m) == 80, m.proc, what="the disk at 80 %")
    bmc.pause()
    try:
        wait_for(lambda: said("silent for 0.5 s: keeping 80 %"), m.proc,
                 what="the BMC said silent again")  # fmt: skip
        assert stimulus(m) == 80, "the last value holds"
    finally:
        bmc.resume()
    wait_for(lambda: said("answers again: 80 %", 2), m.proc, what="the BMC back again")
    run = m.finish()
    bmc_events = [(e["kind"], e["message"]) for e in events(run) if e["source"] == "bmc"]
    assert [kind for kind, _ in bmc_events] == ["stale", "answers", "stale", "answers"]
    assert "keeping 80 %" in str(bmc_events[2][1])
    assert stimuli(run) == [0, 80], "the same duty after the silence: no new value"


def test_bad_input_is_one_line_and_mounts_nothing(
    dirs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backing, mount, results = dirs
    schedule = tmp_path / "fans.csv"
    schedule.write_text("0,60\n10,80\n")
    bmc = "host=127.0.0.1,user=u,password-env=IOWATT_TEST_NO_SUCH_ENV"
    follow = ("--curve", "hit-sata", "--at-from", "bmc", "--bmc", bmc)

    def refused(*args: str | Path, fragments: tuple[str, ...]) -> None:
        r = iowatt(capsys, "emulate", "mount", backing, mount, "--results", results, *args)
        assert_user_error(r, *fragments)
        assert not mounted(mount)
        assert runs_in(results) == []

    smc = (*follow, "--vendor", "supermicro")
    refused(*smc, "--at", "60", fragments=("--at and --at-from bmc", "one"))
    refused(*smc, "--schedule", schedule, fragments=("--schedule and --at-from bmc", "one"))
    refused(*smc, "--poll", "0s", fragments=("--poll", "above 0"))
    refused(*smc, "--poll", "soon", fragments=("--poll", "soon"))
    refused(*smc, "--stale", "0", fragments=("--stale", "above 0"))
    refused(*follow, "--vendor", "hp", fragments=("`hp`", "not a vendor"))
    refused(*follow, "--vendor", "dell", fragments=("dell", "reads the fan duty back"))
    refused(*follow, "--fan-rpm", "FAN1=10200..600", fragments=("10200", "not below"))
    refused(*follow, "--fan-rpm", "FAN1", fragments=("`FAN1`", "SENSOR=LOW..HIGH"))
    refused(*follow, "--fan-rpm", "FAN1=fast..slow", fragments=("fast..slow",))
    refused("--curve", "hit-sata", "--at-from", "ipmi", fragments=("`ipmi`", "not a source"))
    refused("--curve", "hit-sata", "--at-from", "bmc", "--vendor", "supermicro",
            fragments=("needs --bmc",))  # fmt: skip
    refused("--at-from", "bmc", "--bmc", bmc, "--vendor", "supermicro",
            fragments=("--at-from bmc", "needs a curve"))  # fmt: skip
    refused("--curve", "hit-sata", "--bmc", bmc, fragments=("--bmc", "--at-from bmc"))
    refused(*smc, "--stimulus", "frequency", fragments=("fan duty", "frequency curve"))
    refused(*smc, fragments=("IOWATT_TEST_NO_SUCH_ENV",))
