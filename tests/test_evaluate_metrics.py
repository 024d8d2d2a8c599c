"""Metrics against independent numpy/scipy computations on synthetic signals."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import signal, stats

from musclerl.evaluate import metrics


def _signals(n: int = 400, r_target: float = 0.6, seed: int = 0):
    """ref and sim with population correlation r_target (orthogonalised exactly in sample)."""
    rng = np.random.default_rng(seed)
    ref = rng.standard_normal(n)
    noise = rng.standard_normal(n)
    ref = (ref - ref.mean()) / ref.std()
    noise -= noise.mean()
    noise -= ref * (noise @ ref) / (ref @ ref)
    noise /= noise.std()
    sim = r_target * ref + np.sqrt(1 - r_target**2) * noise
    return sim, ref


def test_pearson_r_known_value_and_scipy():
    sim, ref = _signals(r_target=0.6)
    assert metrics.pearson_r(sim, ref) == pytest.approx(0.6, abs=1e-12)
    assert metrics.pearson_r(sim, ref) == pytest.approx(stats.pearsonr(sim, ref)[0], abs=1e-12)


def test_rmse_and_normalised_rmse_known_offset():
    t = np.linspace(0, 2 * np.pi, 200)
    ref = 3.0 * np.sin(t)
    sim = ref + 0.5
    assert metrics.rmse(sim, ref) == pytest.approx(0.5, abs=1e-12)
    assert metrics.normalised_rmse(sim, ref) == pytest.approx(0.5 / np.ptp(ref), rel=1e-12)
    flat = np.full(200, -3e-6) + 1e-7 * np.sin(t)  # e.g. an IK coordinate locked at 0
    assert np.isnan(metrics.normalised_rmse(sim, flat))
    assert metrics.rmse(sim, flat) > 0


def test_nan_and_mask_ignored_like_manual_subset():
    sim, ref = _signals(n=300, r_target=0.3, seed=1)
    sim = sim.copy()
    ref = ref.copy()
    sim[5:20] = np.nan
    ref[100:110] = np.nan
    valid = np.ones(300, dtype=bool)
    valid[200:260] = False
    keep = np.isfinite(sim) & np.isfinite(ref) & valid
    a, b = sim[keep], ref[keep]
    assert metrics.pearson_r(sim, ref, valid) == pytest.approx(np.corrcoef(a, b)[0, 1], abs=1e-12)
    assert metrics.rmse(sim, ref, valid) == pytest.approx(np.sqrt(np.mean((a - b) ** 2)), abs=1e-12)
    assert metrics.usable(sim, ref, valid).sum() == keep.sum()


def test_all_invalid_gives_nan():
    sim, ref = _signals(n=50)
    valid = np.zeros(50, dtype=bool)
    assert np.isnan(metrics.rmse(sim, ref, valid))
    assert np.isnan(metrics.pearson_r(sim, ref, valid))
    m = metrics.column_metrics("c", sim, ref, 100.0, valid)
    assert m.n_valid == 0 and np.isnan(m.r)


@pytest.mark.parametrize("true_lag", [-7, 0, 4])
def test_best_lag_recovers_shift(true_lag):
    rng = np.random.default_rng(2)
    base = signal.filtfilt(*signal.butter(2, 0.1), rng.standard_normal(600))
    ref = base[50:550]
    sim = base[50 - true_lag : 550 - true_lag]  # sim[t + lag] == ref[t]
    lag, r = metrics.best_lag(sim, ref, max_lag=10)
    assert lag == true_lag
    assert r == pytest.approx(1.0, abs=1e-12)
    # independent: scipy cross-correlation of standardised signals peaks at the same lag
    a = (sim - sim.mean()) / sim.std()
    b = (ref - ref.mean()) / ref.std()
    xc = signal.correlate(a, b, mode="full")
    lags = signal.correlation_lags(len(a), len(b), mode="full")
    window = np.abs(lags) <= 10
    assert lags[window][np.argmax(xc[window])] == true_lag
    m = metrics.column_metrics("x", sim, ref, rate_hz=100.0, max_lag_s=0.1)
    assert m.lag_frames == true_lag and m.lag_s == pytest.approx(true_lag / 100.0)


def test_best_lag_keeps_mask_on_reference_samples():
    rng = np.random.default_rng(3)
    base = signal.filtfilt(*signal.butter(2, 0.1), rng.standard_normal(400))
    ref = base[20:320].copy()
    sim = base[17:317].copy()  # sim[t + 3] == ref[t]: lag +3
    valid = np.ones(300, dtype=bool)
    valid[:40] = False
    ref[:40] = 1e6  # garbage where invalid must not matter
    lag, r = metrics.best_lag(sim, ref, 8, valid)
    assert lag == 3 and r == pytest.approx(1.0, abs=1e-12)


def test_emg_envelope_tracks_modulation_and_normalises():
    rate = 1000.0
    t = np.arange(0, 4, 1 / rate)
    modulation = 0.5 * (1 - np.cos(2 * np.pi * 1.0 * t))  # 1 Hz bursts
    rng = np.random.default_rng(4)
    raw = modulation * rng.standard_normal(len(t))
    env = metrics.emg_envelope(raw, rate)
    norm = metrics.normalise_envelope(env)
    assert np.nanmax(norm) == pytest.approx(1.0)
    core = slice(500, -500)
    assert np.corrcoef(env[core], modulation[core])[0, 1] > 0.95
    given = metrics.normalise_envelope(env, reference=2.0 * env.max())
    assert np.nanmax(given) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        metrics.emg_envelope(np.array([np.nan] * 100), rate)


def test_tracking_metrics():
    T, J = 10, 4
    rng = np.random.default_rng(5)
    ref = rng.standard_normal((T, J, 3))
    sim = ref + np.array([0.3, 0.0, 0.4])  # every joint 0.5 m off, same translation
    assert metrics.mean_site_error_m(sim, ref) == pytest.approx(0.5)
    np.testing.assert_allclose(metrics.mpjpe_m(sim, ref), 0.5)
    np.testing.assert_allclose(metrics.mpjpe_m(sim, ref, root_index=0), 0.0, atol=1e-12)
    sim2 = sim.copy()
    sim2[:, 2] += np.array([0.0, 0.0, 1.0])
    expected = np.mean(np.linalg.norm((sim2 - sim2[:, :1]) - (ref - ref[:, :1]), axis=-1), axis=1)
    np.testing.assert_allclose(metrics.mpjpe_m(sim2, ref, root_index=0), expected)
    assert metrics.success_rate(np.array([False, True, False, False])) == pytest.approx(0.75)


def test_a_lag_longer_than_the_signal_shifts_it_out():
    """A lag search wider than a short trial (6 samples, lags up to 7) sees nothing to compare
    there rather than failing (an evaluation of 5 control steps crashed on it)."""
    from musclerl.evaluate.metrics import shift

    signal = np.arange(6.0)
    for lag in (6, 7, -6, -9):
        assert np.isnan(shift(signal, lag)).all()
    np.testing.assert_array_equal(shift(signal, 5)[:1], [5.0])
    np.testing.assert_array_equal(shift(signal, -5)[-1:], [0.0])
    bumpy = np.array([0.0, 3.0, 1.0, 4.0, 1.0, 5.0])
    lag, r = metrics.best_lag(bumpy, bumpy, 7)
    assert lag == 0 and r == pytest.approx(1.0)
