"""Energy arithmetic: integration over real sample times, gaps, edges, counters, savings."""

from __future__ import annotations

import numpy as np
import pytest

from iowatt.power.energy import (
    Work,
    compare,
    counter_series,
    dynamic_energy,
    max_gap_ns,
    power_series,
    window_energy,
)

S = 1_000_000_000


def _times(seconds: list[float]) -> np.ndarray:
    return (np.asarray(seconds) * S).astype(np.int64)


def test_constant_power_integrates_to_power_times_time() -> None:
    t = _times(list(range(11)))
    e = window_energy(power_series(t, np.full(11, 100.0)), 0, 10 * S, max_gap_ns(t))
    assert e.energy_j == pytest.approx(1000.0)
    assert e.avg_w == pytest.approx(100.0)
    assert e.peak_w == 100.0
    assert e.gap_s == 0.0
    assert e.samples == 11


def test_trapezoids_follow_the_actual_sample_times() -> None:
    # Uneven sampling of a ramp 0 → 100 W over 10 s: the exact integral is 500 J.
    secs = [0, 0.5, 3, 3.1, 7, 10]
    t = _times(secs)
    e = window_energy(power_series(t, np.asarray(secs) * 10.0), 0, 10 * S, 10 * S)
    assert e.energy_j == pytest.approx(500.0)
    assert e.peak_w == pytest.approx(100.0)


def test_window_edges_are_interpolated_between_samples() -> None:
    t = _times(list(range(11)))
    s = power_series(t, np.full(11, 100.0))
    e = window_energy(s, int(2.5 * S), int(7.5 * S), max_gap_ns(t))
    assert e.energy_j == pytest.approx(500.0)
    assert e.duration_s == pytest.approx(5.0)


def test_a_gap_is_reported_and_not_bridged() -> None:
    secs = [0, 1, 2, 3, 4, 10, 11, 12, 13, 14]
    t = _times(secs)
    s = power_series(t, np.full(len(t), 100.0))
    e = window_energy(s, 0, 14 * S, max_gap_ns(t), t0_ns=0)
    assert e.gaps == [(4.0, 10.0)]
    assert e.gap_s == pytest.approx(6.0)
    assert e.energy_j == pytest.approx(800.0)  # 4 s + 4 s sampled, at 100 W
    assert e.covered_s == pytest.approx(8.0)
    assert e.avg_w == pytest.approx(100.0)


def test_time_before_the_first_sample_is_a_gap() -> None:
    t = _times([5, 6, 7, 8, 9, 10])
    e = window_energy(power_series(t, np.full(6, 50.0)), 0, 10 * S, max_gap_ns(t), t0_ns=0)
    assert e.gaps == [(0.0, 5.0)]
    assert e.energy_j == pytest.approx(250.0)


def test_counter_energy_is_exact_across_a_gap() -> None:
    # 20 W for 14 s as a cumulative counter sampled with a hole: still 280 J.
    secs = [0, 1, 2, 3, 4, 10, 11, 12, 13, 14]
    t = _times(secs)
    s = counter_series(t, np.asarray(secs) * 20.0)
    e = window_energy(s, 0, 14 * S, max_gap_ns(t), t0_ns=0)
    assert e.energy_j == pytest.approx(280.0)
    assert e.gap_s == pytest.approx(6.0)
    assert np.nanmax(s.watts) == pytest.approx(20.0)


def test_counter_derived_watts_follow_each_step() -> None:
    s = counter_series(_times([0, 1, 2, 4]), np.array([0.0, 10.0, 40.0, 80.0]))
    assert np.isnan(s.watts[0])
    assert s.watts[1:].tolist() == pytest.approx([10.0, 30.0, 20.0])


def test_out_of_order_samples_are_sorted_first() -> None:
    t = _times([0, 2, 1, 3])
    s = power_series(t, np.array([0.0, 20.0, 10.0, 30.0]))
    assert s.mono_ns.tolist() == sorted(t.tolist())
    assert window_energy(s, 0, 3 * S, 3 * S).energy_j == pytest.approx(45.0)


def test_dynamic_energy_subtracts_idle_power_over_the_duration() -> None:
    assert dynamic_energy(1000.0, 60.0, 10.0) == pytest.approx(400.0)
    assert dynamic_energy(1000.0, None, 10.0) is None


def test_saving_follows_the_spec_formula() -> None:
    base = Work(seconds=100.0, energy_j=20_000.0, avg_w=200.0, idle_w=80.0)
    cand = Work(seconds=60.0, energy_j=13_200.0, avg_w=220.0, idle_w=80.0)
    c = compare(base, cand, pue=1.6)
    assert c["time_saved_s"] == pytest.approx(40.0)
    assert c["energy_saved_j"] == pytest.approx(6800.0)
    assert c["energy_saved_pct"] == pytest.approx(34.0)
    assert c["facility_energy_saved_j"] == pytest.approx(6800.0 * 1.6)
    # time saved × (running − idle power) × PUE = 40 × (200 − 80) × 1.6
    assert c["estimated_saving_j"] == pytest.approx(7680.0)
    assert c["faster_drew_more_power"] is True


def test_no_estimate_without_idle_power() -> None:
    c = compare(Work(10.0, 100.0, 10.0), Work(5.0, 50.0, 10.0), pue=1.2)
    assert c["estimated_saving_j"] is None
    assert c["faster_drew_more_power"] is False
