"""Sizes and durations as users type them, and as iowatt prints them."""

from __future__ import annotations

import pytest

from iowatt.errors import ConfigError
from iowatt.units import format_bytes, format_joules, format_rate, parse_duration, parse_size


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


# --- lists and ranges: every simulator's list options ---------------------------------------

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from iowatt.units import parse_int_list, parse_list  # noqa: E402


@pytest.mark.parametrize(
    ("text", "items"),
    [
        ("W1..W10", [f"W{i}" for i in range(1, 11)]),
        ("1,2,3", ["1", "2", "3"]),
        ("1..4", ["1", "2", "3", "4"]),
        ("0.5..2:0.5", ["0.5", "1", "1.5", "2"]),
        ("0..0.3:0.1", ["0", "0.1", "0.2", "0.3"]),  # no 0.30000000000000004
        ("W4, W1..W2,W4", ["W4", "W1", "W2"]),  # in order, repeats dropped
        ("DLB,FSTM-NoSSD", ["DLB", "FSTM-NoSSD"]),
        ("-2..1", ["-2", "-1", "0", "1"]),
    ],
)
def test_parse_list_expands_names_numbers_and_ranges(text, items):
    assert parse_list(text, "--workloads") == items


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("W3..W1", "runs backwards"),
        ("W1..X3", "not a range"),
        ("1..3:0", "not a number above 0"),
        ("1..3:-1", "not a number above 0"),
        ("1..3:x", "not a number above 0"),
        ("W1..W3:2", "not a range"),
        ("1,,2", "empty item"),
        ("", "is empty"),
        ("1..1e9", "more than 100,000 items"),
        ("1..x5", "not a range"),
        ("1..inf", "not a range"),
    ],
)
def test_parse_list_refuses_a_bad_item_naming_it(text, fragment):
    with pytest.raises(ConfigError) as e:
        parse_list(text, "--seed")
    assert fragment in e.value.message and "--seed" in e.value.message
    assert e.value.hint


def test_parse_int_list_checks_whole_numbers_in_range():
    assert parse_int_list("1..3,7", "--seed", 0, 10) == [1, 2, 3, 7]
    with pytest.raises(ConfigError, match="not a whole number"):
        parse_int_list("0.5..1:0.5", "--seed", 0, 10)
    with pytest.raises(ConfigError, match="at most 10"):
        parse_int_list("9..11", "--seed", 0, 10)


@given(st.text(max_size=30))
def test_parse_list_gives_items_or_one_config_error(text):
    try:
        items = parse_list(text, "--workloads")
    except ConfigError as e:
        assert e.message.startswith("--workloads") and "\n" not in e.message
    else:
        assert items and len(items) == len(set(items)) and all(i.strip() == i for i in items)


@pytest.mark.parametrize(
    ("joules", "text"),
    [(-1e-9, "0 J"), (0.0, "0 J"), (-0.0125, "-12.5 mJ"), (1250.0, "1.25 kJ"), (None, "–")],
)
def test_format_joules_signs_only_what_it_shows(joules, text):
    # An energy above idle that is a rounding error below zero prints as 0, not -0.
    assert format_joules(joules) == text
