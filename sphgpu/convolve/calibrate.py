"""Measured errors of a split, and alpha (paper Eq. 6) calibrated from them.

The paper estimates the error of a split as alpha * sigma_rms / sqrt(power) and found by
experiment that the actual error was about 5 times the unscaled estimate (alpha = 5: single
precision and kernel interpolation on its GPU). Here nothing is assumed: :func:`measure_error`
convolves a white-noise map with the split and with the full kernel, and
:func:`calibrate_alpha` fits alpha from several splits.

Measured errors (both maps come from the same noise realisation, so cosmic variance cancels):

* spectrum error: sqrt(sum_l (2l+1) (sqrt(C^split_l) - sqrt(C^full_l))^2 / sum_l (2l+1) C^full_l),
  C_l from map2alm (iter=0) up to lmax: the fractional rms error of the output's power spectrum
  in amplitude, the quantity Eq. 6 estimates (for a noise map C^split / C^full = (K~_l / K_l)^2);
* map error: ||m_split - m_full|| / ||m_full||, the rms error of the map itself.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .. import backends
from .._validate import check_int
from ..bench.timing import ratio, time_interleaved
from ..geometry import RingGeometry
from ..sht import alm2cl, map2alm
from .api import convolve
from .harmonic import harmonic_convolve
from .optimize import default_theta_grid, make_fitter
from .split import KernelSplit, _check_kernel

__all__ = ["MeasuredError", "AlphaCalibration", "PlanMeasurement", "measure_error",
           "measure_plan", "calibrate_alpha", "white_noise"]


def white_noise(nside, seed=0, nmaps=None):
    """Unit-variance Gaussian white noise on HEALPix.

    Parameters
    ----------
    nside : int
        HEALPix resolution, >= 1.
    seed : int or numpy.random.Generator
        Seed of ``numpy.random.default_rng``.
    nmaps : int, optional
        Number of maps (default: one map, 1-D).

    Returns
    -------
    ndarray, shape (npix,) or (nmaps, npix), float64

    Raises
    ------
    ValueError
        If ``nside`` is not a positive integer.
    """
    nside = check_int("nside", nside, minimum=1)
    rng = np.random.default_rng(seed)
    shape = (12 * nside * nside,) if nmaps is None else (nmaps, 12 * nside * nside)
    return rng.standard_normal(shape)


@dataclass
class MeasuredError:
    """Errors of one split measured on a white-noise map (see the module docstring); the
    parameters are also its attributes.

    Parameters
    ----------
    l_cut : int
        Harmonic band limit of the split.
    theta_cut : float
        Support radius of its real-space part, radians.
    predicted : float
        alpha * relative_rms (the paper's sigma).
    predicted_no_alpha : float
        relative_rms, the estimate without alpha.
    spectrum : float
        Measured spectrum error.
    map : float
        Measured map error.
    cl_full, cl_split : ndarray, shape (lmax+1,), float64
        Power spectra of the map convolved with the full kernel and with the split.
    """

    l_cut: int
    theta_cut: float
    predicted: float            # alpha * relative_rms (the paper's sigma)
    predicted_no_alpha: float   # relative_rms
    spectrum: float
    map: float
    cl_full: np.ndarray = field(repr=False)
    cl_split: np.ndarray = field(repr=False)

    def relative_error_per_l(self) -> np.ndarray:
        """``|sqrt(C^split_l / C^full_l) - 1|`` per l (the measured twin of paper Eq. 10).

        Returns
        -------
        ndarray, shape (lmax+1,), float64
        """
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(np.sqrt(self.cl_split / self.cl_full) - 1.0)


def _spectrum_error(cs, cf):
    l = np.arange(cf.shape[-1])
    num = np.sum((2 * l + 1) * (np.sqrt(np.maximum(cs, 0)) - np.sqrt(np.maximum(cf, 0))) ** 2)
    den = np.sum((2 * l + 1) * cf)
    return math.sqrt(num / den)


def measure_error(split: KernelSplit, nside: int, *, seed=0, backend="auto", maps=None,
                  full=None) -> MeasuredError:
    """Convolve white noise (or ``maps``) with ``split`` and with its full kernel, and measure
    the spectrum and map errors.

    Parameters
    ----------
    split : KernelSplit
        The split to measure.
    nside : int
        HEALPix resolution of the maps.
    seed : int
        Seed of the white noise (when ``maps`` is None).
    backend : {"auto", "cuda", "cpu", "reference"}
        Where the convolutions run.
    maps : array, shape (npix,), float64, optional
        The map to convolve instead of white noise.
    full : array, shape (npix,), float64, optional
        The full-kernel result for the same map, if already known.

    Returns
    -------
    MeasuredError

    Raises
    ------
    ValueError
        If ``nside`` is not a positive integer or the maps do not match it.
    """
    nside = check_int("nside", nside, minimum=1)
    geom = RingGeometry.healpix(nside)
    m = white_noise(nside, seed) if maps is None else np.asarray(maps, dtype=np.float64)
    lmax = split.kernel.lmax
    if full is None:
        full = harmonic_convolve(m, split.kernel.bl, geom, backend=backend)
    approx = convolve(m, split, backend=backend)
    cf = alm2cl(map2alm(full, lmax, lmax, iter=0, pol=False, backend=backend))
    cs = alm2cl(map2alm(approx, lmax, lmax, iter=0, pol=False, backend=backend))
    return MeasuredError(split.l_cut, split.theta_cut, split.predicted_error, split.relative_rms,
                         _spectrum_error(cs, cf),
                         float(np.linalg.norm(approx - full) / np.linalg.norm(full)), cf, cs)


@dataclass
class PlanMeasurement:
    """A plan run on one white-noise map: wall seconds of each part alone, of the plan and of
    the whole kernel in harmonic space, and the errors of the plan's output against the whole
    kernel's (spectrum and map errors as in the module docstring; 0 for an all-harmonic plan,
    which is the whole kernel's computation). Maps are float64 NumPy HEALPix RING. The
    parameters are also its attributes.

    Parameters
    ----------
    backend : str
        The backend the plan ran on.
    time_harmonic, time_realspace, time_total, time_all_harmonic : float
        Wall seconds of each part alone, of the plan, and of the whole kernel in harmonic
        space.
    spectrum_error, map_error : float
        Errors of the plan's output against the whole kernel's.
    seed : int
        Seed of the white-noise map.
    full_map, plan_map : ndarray, shape (npix,), float64
        The whole kernel's output and the plan's.
    timings : dict of str to sphgpu.bench.Timing, optional
        Every timed repetition, by part ("all harmonic", "plan", "harmonic part",
        "real-space part"); the ``time_*`` fields are their medians.

    Attributes
    ----------
    speedup : float
        The median of the rounds' time_all_harmonic / time_total (one round: that ratio).
    speedup_ratio : sphgpu.bench.Ratio or None
        The speedup of each round (all harmonic and plan timed back to back): its median and
        spread; None without ``timings``.
    """

    backend: str                # the backend the plan ran on
    time_harmonic: float
    time_realspace: float
    time_total: float
    time_all_harmonic: float
    spectrum_error: float
    map_error: float
    seed: int
    full_map: np.ndarray = field(repr=False)
    plan_map: np.ndarray = field(repr=False)
    timings: dict = field(default=None, repr=False)

    @property
    def speedup(self) -> float:
        """Measured all-harmonic time over the measured plan's time: the median of the
        rounds' ratios (:attr:`speedup_ratio`) when timed in rounds, else the ratio of the
        times (inf for a zero time)."""
        r = self.speedup_ratio
        if r is not None and self.time_total > 0:
            return r.median
        return self.time_all_harmonic / self.time_total if self.time_total > 0 else math.inf

    @property
    def speedup_ratio(self):
        """The per-round speedups (:class:`sphgpu.bench.Ratio`), or None without timings."""
        t = self.timings
        if not t or "all harmonic" not in t or "plan" not in t:
            return None
        return ratio(t["all harmonic"], t["plan"])


def measure_plan(plan, *, seed=0, backend="auto", repeat=1, warmup=0, max_seconds=30.0,
                 progress=None):
    """Run ``plan`` (a :class:`sphgpu.convolve.Plan`) on white noise at its nside and measure
    it: returns a copy of the plan whose ``measured`` is a :class:`PlanMeasurement`.

    Every part runs on ``backend`` (one backend, the one named in the result), so the
    measured times say what this machine does with it; the plan's predicted times and
    backends stay as the cost model gave them. With ``repeat`` > 1 the whole kernel, the
    plan and each of its parts are timed in rounds (:func:`sphgpu.bench.time_interleaved`):
    the times are medians, and ``measured.speedup_ratio`` holds each round's speedup.

    Parameters
    ----------
    plan : Plan
        The plan to run.
    seed : int
        Seed of the white-noise map.
    backend : {"auto", "cuda", "cpu", "reference"}
        Where every part runs.
    repeat : int >= 1
        Most timed rounds (fewer once ``max_seconds`` is spent; one at least).
    warmup : int >= 0
        Untimed rounds first: a process's first calls compile kernels.
    max_seconds : float
        Stop repeating once the timed calls add up to more than this.
    progress : callable(fraction, text), optional
        Called before each call (warm-up, round and part named).

    Returns
    -------
    Plan
        A copy with ``measured`` set.

    Raises
    ------
    ValueError, BackendUnavailableError
        For a bad or unavailable ``backend``, ``repeat`` < 1 or ``warmup`` < 0.
    """
    be = backends.resolve(backend, "convolve")
    repeat = check_int("repeat", repeat, minimum=1)
    warmup = check_int("warmup", warmup, minimum=0)
    geom = RingGeometry.healpix(plan.nside)
    m = white_noise(plan.nside, seed)
    out = {}

    def keep(name, fn):
        def call():
            out[name] = fn()
        return call

    calls = {"all harmonic": keep("full", lambda: harmonic_convolve(m, plan.kernel.bl, geom,
                                                                    backend=be))}
    split = plan.split if plan.method != "harmonic" else None
    if split is not None:
        calls["plan"] = keep("plan", lambda: convolve(m, split, backend=be))
        if split.l_cut >= 0:
            calls["harmonic part"] = lambda: harmonic_convolve(m, split.harmonic_bl, geom,
                                                               backend=be)
        if split.realspace is not None:
            calls["real-space part"] = lambda: convolve(m, split.realspace, method="realspace",
                                                        backend=be)
    t = time_interleaved(calls, repeat=repeat, warmup=warmup, max_seconds=max_seconds,
                         progress=progress)
    full = out["full"]
    t_full = t["all harmonic"].median
    if split is None:
        t["plan"] = t["all harmonic"]
        meas = PlanMeasurement(be, t_full, 0.0, t_full, t_full, 0.0, 0.0, seed, full, full, t)
        return dataclasses.replace(plan, measured=meas)
    approx = out["plan"]
    t_h = t["harmonic part"].median if "harmonic part" in t else 0.0
    t_r = t["real-space part"].median if "real-space part" in t else 0.0
    lmax = plan.kernel.lmax
    cf = alm2cl(map2alm(full, lmax, lmax, iter=0, backend=be))
    cs = alm2cl(map2alm(approx, lmax, lmax, iter=0, backend=be))
    meas = PlanMeasurement(be, t_h, t_r, t["plan"].median, t_full, _spectrum_error(cs, cf),
                           float(np.linalg.norm(approx - full) / np.linalg.norm(full)), seed,
                           full, approx, t)
    return dataclasses.replace(plan, measured=meas)


@dataclass
class AlphaCalibration:
    """alpha fitted from measured errors: the largest ratio measured / predicted (without
    alpha) over the points, so that alpha * estimate bounds every measured error; the
    parameters are also its attributes.

    Parameters
    ----------
    alpha : float
        The fitted alpha.
    kind : {"spectrum", "map"}
        Which measured error it bounds.
    points : list of MeasuredError
        One per split measured.
    ratios : ndarray, shape (len(points),), float64
        Measured / predicted (without alpha) per point: the spread.
    """

    alpha: float
    kind: str                                  # "spectrum" or "map"
    points: list = field(default_factory=list)  # MeasuredError per split
    ratios: np.ndarray = field(default=None, repr=False)

    def table(self) -> str:
        """The points as a text table, one row per split, and the fitted alpha.

        Returns
        -------
        str
        """
        rows = [f"{'l_cut':>6} {'theta_cut':>10} {'estimate':>10} {'spectrum':>10} "
                f"{'map':>10} {'ratio':>7}"]
        for p, r in zip(self.points, self.ratios):
            rows.append(f"{p.l_cut:>6} {p.theta_cut * 10800 / math.pi:>9.4g}' "
                        f"{p.predicted_no_alpha:>10.3g} {p.spectrum:>10.3g} {p.map:>10.3g} "
                        f"{r:>7.3g}")
        rows.append(f"alpha ({self.kind}) = {self.alpha:.3g}")
        return "\n".join(rows)


def calibrate_alpha(kernel, nside, splits=None, *, fit="sphgpu", kind="spectrum", seed=0,
                    backend="auto", progress=None) -> AlphaCalibration:
    """Measure alpha for ``kernel`` at ``nside``.

    For each (l_cut, theta_cut) in ``splits``, compare the measured error on one white-noise
    map with the estimate without alpha; alpha is the largest ratio.

    Parameters
    ----------
    kernel : RadialKernel or array of K_l
        The kernel.
    nside : int
        HEALPix resolution of the white-noise map.
    splits : list of (int, float), optional
        (l_cut, theta_cut in radians) pairs; default: three supports of the default scan,
        each with the l_cut where the estimate is near 1e-6, 1e-5 and 1e-4.
    fit : "sphgpu" or "paper"
        Fit preset (:data:`FIT_PRESETS`).
    kind : {"spectrum", "map"}
        Which measured error to bound ("spectrum" is the paper's quantity).
    seed : int
        Seed of the white-noise map.
    backend : {"auto", "cuda", "cpu", "reference"}
        Where the convolutions run.
    progress : callable(str), optional
        Called with a line of text before each measurement.

    Returns
    -------
    AlphaCalibration

    Raises
    ------
    TypeError
        If ``kernel`` is not a RadialKernel or an array.
    ValueError
        For a bad ``nside`` or ``kind``, or no split to measure.
    """
    kernel = _check_kernel(kernel)
    nside = check_int("nside", nside, minimum=1)
    if kind not in ("spectrum", "map"):
        raise ValueError(f"kind must be 'spectrum' or 'map', got {kind!r}")
    grid = default_theta_grid(kernel.lmax)
    fitter = make_fitter(kernel, float(grid[min(5, len(grid) - 1)]), fit=fit, alpha=1.0)
    if splits is None:
        splits = []
        for theta in grid[[1, 3, 5]] if len(grid) > 5 else grid[:3]:
            for target in (1e-4, 1e-5, 1e-6):
                lc = fitter.smallest_l_cut(float(theta), target, lo=0)
                if lc is not None and (lc, float(theta)) not in splits:
                    splits.append((lc, float(theta)))
    if not splits:
        raise ValueError("no split to measure: give splits=[(l_cut, theta_cut), ...]")
    geom = RingGeometry.healpix(nside)
    m = white_noise(nside, seed)
    full = harmonic_convolve(m, kernel.bl, geom, backend=backend)
    points = []
    for l_cut, theta in splits:
        if progress:
            progress(f"measuring l_cut {l_cut}, theta_cut {theta * 10800 / math.pi:.4g}'")
        s = fitter.split(int(l_cut), float(theta))
        points.append(measure_error(s, nside, maps=m, full=full, backend=backend))
    measured = np.array([p.spectrum if kind == "spectrum" else p.map for p in points])
    predicted = np.array([p.predicted_no_alpha for p in points])
    ratios = measured / np.maximum(predicted, np.finfo(float).tiny)
    return AlphaCalibration(float(np.max(ratios)), kind, points, ratios)
