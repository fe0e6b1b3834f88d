"""The replay's per-second figures on hand-worked cases."""

from __future__ import annotations

import numpy as np
import pytest

from iowatt.replay.results import max_open, mean_open

S = 1_000_000_000


def test_connections_open_on_average_and_at_most():
    # Request 0 over [0, 1) s, request 1 over [0.5, 1.5) s, request 2 from 1.2 s and never ended
    # (open to the end of the run, 3 s).
    sent = np.array([0, S // 2, 12 * S // 10], np.int64)
    done = np.array([S, 3 * S // 2, -1], np.int64)
    assert mean_open(sent, done, 3) == pytest.approx([1.5, 1.3, 1.0])
    assert max_open(sent, done) == 2


def test_a_connection_closing_as_another_opens_is_not_overlap():
    sent = np.array([0, S, -1], np.int64)
    done = np.array([S, 2 * S, -1], np.int64)
    assert max_open(sent, done) == 1
    assert mean_open(sent, done, 2) == pytest.approx([1.0, 1.0])
    assert mean_open(np.array([-1], np.int64), np.array([-1], np.int64), 2) == pytest.approx(
        [0.0, 0.0]
    )
