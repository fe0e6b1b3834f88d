"""The open-files limit: raised as far as a run needs, never lowered, and a run the hard limit
cannot hold is refused in one line naming the files it needs, the limit and `ulimit -Hn`."""

from __future__ import annotations

import resource
from collections.abc import Iterator

import pytest

from iowatt.errors import ConfigError
from iowatt.limits import UNLIMITED, open_files_limit, raise_open_files_limit
from iowatt.replay.plan import FILES_RESERVE, connection_limit


@pytest.fixture
def limits_kept() -> Iterator[tuple[int, int]]:
    """This process's limits, put back after the test."""
    kept = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        yield kept
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, kept)


def test_a_soft_limit_below_the_need_is_raised_to_it(limits_kept):
    _, hard = open_files_limit()
    if hard < 2048:
        pytest.skip(f"the hard limit here ({hard}) is below what the test needs")
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, limits_kept[1]))
    assert raise_open_files_limit(1500, "x", "y") == hard
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == (1500, limits_kept[1])


def test_a_raise_never_lowers_what_is_set(limits_kept):
    soft, _ = open_files_limit()
    if soft < 2048:
        pytest.skip(f"the soft limit here ({soft}) is below what the test needs")
    # A caller's stale (soft, hard) below today's must not pull the limits down.
    raise_open_files_limit(1500, "x", "y", (1024, 1600))
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == limits_kept


def test_more_than_the_hard_limit_is_one_refusal_with_the_numbers_and_a_hint(limits_kept):
    with pytest.raises(ConfigError) as e:
        raise_open_files_limit(
            2624, "workload `w` keeps up to 2,560 files open", "use fewer threads", (1024, 2048)
        )
    assert e.value.message == (
        "workload `w` keeps up to 2,560 files open but the hard limit is 2,048 (RLIMIT_NOFILE)"
    )
    assert e.value.hint == (
        "raise the hard limit to 2624 (as root: `ulimit -Hn 2624`, or "
        "/etc/security/limits.conf), or use fewer threads"
    )
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == limits_kept, "a refusal changes nothing"


def test_a_replay_asking_for_more_connections_than_the_limit_is_refused_in_the_same_words():
    _, hard = open_files_limit()
    if hard >= UNLIMITED:
        pytest.skip("no hard limit here")
    with pytest.raises(ConfigError) as e:
        connection_limit(hard)
    assert f"`{hard}` needs {hard + FILES_RESERVE:,} descriptors" in e.value.message
    assert f"hard limit is {hard:,} (RLIMIT_NOFILE)" in e.value.message
    assert f"`ulimit -Hn {hard + FILES_RESERVE}`" in e.value.hint
    assert f"--max-conns {hard - FILES_RESERVE} or less" in e.value.hint
    assert connection_limit(None) == min(hard - FILES_RESERVE, 1_000_000)
