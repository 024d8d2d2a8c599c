"""Resampling, heel strikes and gait-cycle normalisation on synthetic signals."""

from __future__ import annotations

import numpy as np
import pytest

from musclerl.evaluate import alignment as A
from musclerl.evaluate.gait_events import contact_events, gait_events


def test_resample_linear_nan_outside_and_next_to_nan():
    t = np.array([0.0, 1.0, 2.0, 3.0])
    v = np.array([0.0, 10.0, np.nan, 30.0])
    out = A.resample(t, v, np.array([-0.5, 0.5, 1.0, 1.5, 2.5, 3.0, 3.5]))
    np.testing.assert_allclose(out[[1, 2, 5]], [5.0, 10.0, 30.0])
    assert np.isnan(out[[0, 3, 4, 6]]).all()
    two = A.resample(t, np.c_[t, 2 * t], np.array([0.25]))
    np.testing.assert_allclose(two, [[0.25, 0.5]])


def _gait_force(time_s, strikes, stance_s=0.6):
    f = np.zeros_like(time_s)
    for s in strikes:
        f[(time_s >= s) & (time_s < s + stance_s)] = 700.0
    return f


def test_heel_strikes_found_and_chatter_ignored():
    t = np.arange(0, 5, 0.001)
    strikes = [0.3, 1.35, 2.4, 3.5]
    f = _gait_force(t, strikes)
    f[(t > 0.95) & (t < 0.97)] = 700.0  # a 20 ms blip 50 ms after lift-off: chatter
    found = gait_events(t, f, on=20.0, off=10.0, min_swing_s=0.1).heel_strikes_s
    np.testing.assert_allclose(found, strikes, atol=0.002)
    contact = contact_events(t, f > 0).heel_strikes_s
    np.testing.assert_allclose(contact, strikes, atol=0.002)


def test_cycles_normalised_and_outliers_dropped():
    strikes = np.array([0.0, 1.0, 2.0, 3.0, 5.0, 6.0])  # the 3->5 cycle is an outlier
    t = np.linspace(0, 6, 6001)
    phase = np.interp(t, strikes, np.arange(len(strikes)))  # cycle phase in cycles
    values = np.sin(2 * np.pi * phase)
    cycles = A.normalise_cycles(t, values, strikes)
    assert cycles.count == 4
    np.testing.assert_allclose(cycles.dropped_s, [[3.0, 5.0]])
    assert cycles.values.shape == (4, 101, 1)
    expected = np.sin(2 * np.pi * np.linspace(0, 1, 101))
    np.testing.assert_allclose(cycles.mean()[:, 0], expected, atol=1e-3)
    np.testing.assert_allclose(cycles.sd()[:, 0], 0.0, atol=1e-3)
    np.testing.assert_allclose(cycles.percent[[0, 50, 100]], [0, 50, 100])


def test_no_cycles_gives_empty():
    cycles = A.normalise_cycles(np.linspace(0, 1, 11), np.zeros(11), np.array([0.5]))
    assert cycles.count == 0 and np.isnan(cycles.mean()).all()


@pytest.mark.parametrize("tol, kept", [(0.05, 3), (0.6, 4)])
def test_cycle_tolerance(tol, kept):
    kept_b, dropped = A.cycle_bounds(np.array([0, 1.0, 2.0, 3.0, 4.4]), tol)
    assert len(kept_b) == kept and len(kept_b) + len(dropped) == 4
