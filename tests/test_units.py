"""Sizes and durations as users type them, and as iowatt prints them."""

from __future__ import annotations

import pytest

from iowatt.errors import ConfigError
from iowatt.units import format_bytes, format_rate, parse_duration, parse_size


def test_sizes_are_powers_of_1024_and_errors_name_the_option():
    assert parse_size("10g") == 10 << 30
    with pytest.raises(ConfigError) as e:
        parse_size("12 parsecs", "--filesize")
    assert e.value.message == "--filesize: invalid size `12 parsecs`"
    assert "k, m, g" in (e.value.hint or "")


def test_durations_default_to_seconds():
    assert parse_duration("120") == 120.0
    assert parse_duration("250ms") == 0.25
    with pytest.raises(ConfigError, match="--runtime: invalid duration `fast`"):
        parse_duration("fast", "--runtime")


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0 B"), (1023, "1,023 B"), (1024, "1 KiB"), (8 << 20, "8 MiB"), (1536 << 30, "1.5 TiB")],
)
def test_format_bytes(n, text):
    assert format_bytes(n) == text


def test_format_rate():
    assert format_rate(41152.3) == "41,152"
    assert format_rate(12.345) == "12.3"
