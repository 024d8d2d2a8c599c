"""Comparison metrics between a simulated signal and a reference, honouring validity masks.

Every function takes 1-D arrays on a shared timeline (T,) and an optional boolean ``valid`` (T,)
mask; samples that are masked out, or NaN in either signal, are ignored. With fewer than
``MIN_SAMPLES`` usable samples a metric is NaN (never an exception): a column that is invalid
throughout simply reports NaN.

Conventions
-----------
``rmse``             sqrt(mean((sim - ref)^2)), in the signals' unit.
``normalised_rmse``  rmse / (max(ref) - min(ref)) over the usable samples (dimensionless).
``pearson_r``        Pearson correlation of the usable samples.
``best_lag``         the integer shift ``k`` (frames, |k| <= max_lag) maximising the Pearson r of
                     ``sim[t + k]`` against ``ref[t]``: a positive lag means the simulation
                     *lags* (happens later than) the reference by ``k`` frames. A best lag at the
                     search's bound is flagged (``lag_at_bound``): the window was too narrow.

No r for a flat reference: a column whose reference range (max - min over the usable samples)
is under :data:`MIN_RANGE_FOR_R` of its unit (1 degree for angles, 0.02 N·m/kg for moments, ...)
gets no r (``r_applicable`` False, r NaN) and no nRMSE: a locked subtalar joint (range 1e-5°)
correlates with noise, and that number says nothing about the policy. Its RMSE is still given.

Also here: EMG envelopes (band-pass, full-wave rectify, low-pass; normalised to the peak or to a
given reference value) and motion-tracking metrics as reported by MuscleMimic / PHC (success
rate, mean site error, MPJPE global and root-relative).
"""

from __future__ import annotations

import dataclasses

import numpy as np

MIN_SAMPLES = 3
FLAT_RANGE = 1e-4  # a reference whose range is below this (x (1 + max|ref|)) is flat
#: Smallest reference range (max - min, in the column's unit) for which r is reported.
MIN_RANGE_FOR_R = {"deg": 1.0, "N*m/kg": 0.02, "N/kg": 0.2, "m": 0.01, "BW": 0.02, "0-1": 0.01}


def usable(sim: np.ndarray, ref: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """Boolean (T,) mask: inside ``valid`` and finite in both signals."""
    sim = np.asarray(sim, dtype=float)
    ref = np.asarray(ref, dtype=float)
    if sim.shape != ref.shape:
        raise ValueError(f"sim and ref differ in shape: {sim.shape} vs {ref.shape}")
    mask = np.isfinite(sim) & np.isfinite(ref)
    if valid is not None:
        mask &= np.asarray(valid, dtype=bool)
    return mask


def rmse(sim: np.ndarray, ref: np.ndarray, valid: np.ndarray | None = None) -> float:
    """Root-mean-square of ``sim - ref`` (both (T,), same units) over the usable samples; NaN if too few."""
    m = usable(sim, ref, valid)
    if m.sum() < MIN_SAMPLES:
        return float("nan")
    d = np.asarray(sim, dtype=float)[m] - np.asarray(ref, dtype=float)[m]
    return float(np.sqrt(np.mean(d * d)))


def normalised_rmse(sim: np.ndarray, ref: np.ndarray, valid: np.ndarray | None = None) -> float:
    """RMSE divided by the reference's range (max - min) over the usable samples; NaN if it is flat."""
    m = usable(sim, ref, valid)
    if m.sum() < MIN_SAMPLES:
        return float("nan")
    r = np.asarray(ref, dtype=float)[m]
    span = float(r.max() - r.min())
    # a (numerically) constant reference (range below FLAT_RANGE, absolute and relative) has no
    # scale to normalise by
    if span <= FLAT_RANGE * (1.0 + float(np.abs(r).max())):
        return float("nan")
    return rmse(sim, ref, m) / span


def pearson_r(sim: np.ndarray, ref: np.ndarray, valid: np.ndarray | None = None) -> float:
    """Pearson correlation of ``sim`` and ``ref`` (both (T,)) over the usable samples; NaN if too few
    or if either is constant there."""
    m = usable(sim, ref, valid)
    if m.sum() < MIN_SAMPLES:
        return float("nan")
    a = np.asarray(sim, dtype=float)[m]
    b = np.asarray(ref, dtype=float)[m]
    a = a - a.mean()
    b = b - b.mean()
    denom = float(np.sqrt(np.dot(a, a) * np.dot(b, b)))
    return float(np.dot(a, b) / denom) if denom > 0 else float("nan")


def shift(signal: np.ndarray, lag: int) -> np.ndarray:
    """``out[t] = signal[t + lag]`` with NaN where ``t + lag`` falls outside, shape (T,)."""
    signal = np.asarray(signal, dtype=float)
    out = np.full_like(signal, np.nan)
    n = len(signal)
    if abs(lag) >= n:  # shifted past the whole signal (a search wider than a short trial)
        return out
    if lag >= 0:
        out[: n - lag] = signal[lag:]
    else:
        out[-lag:] = signal[: n + lag]
    return out


def best_lag(
    sim: np.ndarray, ref: np.ndarray, max_lag: int, valid: np.ndarray | None = None
) -> tuple[int, float]:
    """Lag ``k`` in frames (|k| <= max_lag) maximising r(sim[t+k], ref[t]), and that r.

    The reference's mask ``valid`` stays attached to the reference samples. Returns (0, nan) when
    no lag has enough usable samples.
    """
    best_k, best_r = 0, float("nan")
    ref = np.asarray(ref, dtype=float)
    for k in range(-int(max_lag), int(max_lag) + 1):
        r = pearson_r(shift(sim, k), ref, valid)
        if np.isfinite(r) and (not np.isfinite(best_r) or r > best_r):
            best_k, best_r = k, r
    return best_k, best_r


@dataclasses.dataclass(frozen=True)
class ColumnMetrics:
    """Metrics of one column. ``lag_s`` > 0: the simulation happens later than the reference."""

    column: str
    unit: str
    n_valid: int
    rmse: float
    nrmse: float
    r: float
    lag_frames: int
    lag_s: float
    r_at_lag: float
    ref_range: float = float("nan")  # max - min of the reference over the usable samples
    r_applicable: bool = True  # False: the reference range is under MIN_RANGE_FOR_R (r is NaN)
    lag_at_bound: bool = False  # the best lag sits at the search's bound

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def reference_range(sim: np.ndarray, ref: np.ndarray, valid: np.ndarray | None = None) -> float:
    """max - min of ``ref`` (T,) over the samples usable with ``sim``; NaN if too few."""
    m = usable(sim, ref, valid)
    if m.sum() < MIN_SAMPLES:
        return float("nan")
    r = np.asarray(ref, dtype=float)[m]
    return float(r.max() - r.min())


def r_applicable(ref_range: float, unit: str) -> bool:
    """Whether a reference that spans ``ref_range`` (in ``unit``) varies enough for an r
    (:data:`MIN_RANGE_FOR_R`; a unit not listed only needs a non-zero range)."""
    return bool(np.isfinite(ref_range) and ref_range >= MIN_RANGE_FOR_R.get(unit, 0.0) and ref_range > 0)


DEFAULT_MAX_LAG_S = 0.3  # about a quarter of a stride: wide enough for a late policy, not anti-phase


def column_metrics(
    column: str,
    sim: np.ndarray,
    ref: np.ndarray,
    rate_hz: float,
    valid: np.ndarray | None = None,
    max_lag_s: float = DEFAULT_MAX_LAG_S,
    unit: str = "",
) -> ColumnMetrics:
    """All metrics for one column sampled at ``rate_hz`` on a shared timeline (no r, r at lag nor
    nRMSE for a reference flatter than :data:`MIN_RANGE_FOR_R`)."""
    m = usable(sim, ref, valid)
    span = reference_range(sim, ref, m)
    ok = r_applicable(span, unit)
    max_lag = int(round(max_lag_s * rate_hz))
    lag, r_lag = best_lag(sim, ref, max_lag, valid) if ok else (0, float("nan"))
    nan = float("nan")
    return ColumnMetrics(
        column=column,
        unit=unit,
        n_valid=int(m.sum()),
        rmse=rmse(sim, ref, m),
        nrmse=normalised_rmse(sim, ref, m) if ok else nan,
        r=pearson_r(sim, ref, m) if ok else nan,
        lag_frames=int(lag),
        lag_s=float(lag / rate_hz),
        r_at_lag=r_lag,
        ref_range=span,
        r_applicable=ok,
        lag_at_bound=bool(ok and max_lag > 0 and abs(lag) == max_lag and np.isfinite(r_lag)),
    )


# --------------------------------------------------------------------------- EMG


def emg_envelope(
    raw: np.ndarray,
    rate_hz: float,
    band_hz: tuple[float, float] = (20.0, 450.0),
    lowpass_hz: float = 6.0,
    order: int = 4,
) -> np.ndarray:
    """Linear envelope of raw EMG (T,) or (T, C): band-pass, full-wave rectify, low-pass.

    Zero-phase Butterworth filters (``filtfilt``). A band edge at or above Nyquist is dropped
    (high-pass only), so already-processed low-rate EMG also works. NaN samples are rejected.
    """
    from scipy import signal

    x = np.asarray(raw, dtype=float)
    if not np.all(np.isfinite(x)):
        raise ValueError("EMG contains NaN or inf")
    nyq = 0.5 * rate_hz
    lo, hi = band_hz
    if hi < nyq:
        b, a = signal.butter(order, [lo / nyq, hi / nyq], btype="bandpass")
    else:
        b, a = signal.butter(order, lo / nyq, btype="highpass")
    x = signal.filtfilt(b, a, x, axis=0)
    x = np.abs(x)
    b, a = signal.butter(order, min(lowpass_hz / nyq, 0.99), btype="lowpass")
    return np.maximum(signal.filtfilt(b, a, x, axis=0), 0.0)


def normalise_envelope(envelope: np.ndarray, reference: np.ndarray | float | None = None) -> np.ndarray:
    """Envelope (T,) or (T, C) divided by its per-channel peak, or by ``reference`` (scalar or (C,))."""
    env = np.asarray(envelope, dtype=float)
    scale = np.nanmax(env, axis=0) if reference is None else np.asarray(reference, dtype=float)
    scale = np.where(scale > 0, scale, np.nan)
    return env / scale


# --------------------------------------------------------------------------- tracking


def success_rate(early_terminated: np.ndarray) -> float:
    """Fraction of episodes (E,) that ran to the end without an early termination."""
    t = np.asarray(early_terminated, dtype=bool)
    return float(1.0 - t.mean()) if t.size else float("nan")


def site_errors_m(sim_sites_m: np.ndarray, ref_sites_m: np.ndarray) -> np.ndarray:
    """Euclidean error per frame and site (T, S) between (T, S, 3) world positions."""
    return np.linalg.norm(np.asarray(sim_sites_m, float) - np.asarray(ref_sites_m, float), axis=-1)


def mean_site_error_m(sim_sites_m: np.ndarray, ref_sites_m: np.ndarray) -> float:
    """Mean over frames and sites of the site position error, metres (NaN sites ignored)."""
    return float(np.nanmean(site_errors_m(sim_sites_m, ref_sites_m)))


def mpjpe_m(sim_m: np.ndarray, ref_m: np.ndarray, root_index: int | None = None) -> np.ndarray:
    """Mean per-joint position error per frame (T,), metres, from (T, J, 3) positions.

    With ``root_index`` it is root-relative: both sets are first expressed relative to their own
    root point (translation only, as in PHC's ``mpjpe_l``); without, global.
    """
    a = np.asarray(sim_m, dtype=float)
    b = np.asarray(ref_m, dtype=float)
    if root_index is not None:
        a = a - a[:, root_index : root_index + 1]
        b = b - b[:, root_index : root_index + 1]
    return np.nanmean(np.linalg.norm(a - b, axis=-1), axis=1)
