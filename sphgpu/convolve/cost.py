"""Cost models of the two parts of a split convolution: how long each takes, in seconds.

A cost model answers three questions for the optimizer:

* ``harmonic_time(l_cut, nside, lmax, backend)``: map2alm + alm2map up to l_cut on a HEALPix
  map of ``nside`` (0 when l_cut < 0);
* ``realspace_time(theta_cut, nside, backend)``: the real-space sum within theta_cut (0 when
  theta_cut <= 0);
* ``concurrent(harmonic_backend, realspace_backend)``: whether both parts run at the same time
  (then a split costs the longer of the two, else their sum).

:class:`PaperCostModel` is the paper's pair of fits (Eqs. 7 and 8; a GTX 480 GPU and one core of
a 2.8 GHz Core2 Quad, nside 2048, lmax 4096), kept to reproduce its Table 1 and Fig. 10.
:class:`MeasuredCostModel` times both parts on this machine, fits the same kind of formula
(a constant plus the work: (l_cut+1)^2 for the harmonic part at a fixed nside, pixel pairs for
the real-space part) and keeps the constants in ``~/.cache/sphgpu/convolve_cost.json``
(``SPHGPU_CACHE_DIR`` moves it; see :mod:`sphgpu._tuning`), per device, backend and nside.
Timing stops once a part has used its time budget (about half a second), so a first call takes
seconds, and says what it times as it goes.
"""

from __future__ import annotations

import math
import os
import platform
import time
from dataclasses import dataclass, field

import numpy as np

from .. import _tuning, backends
from .._device import SIMULATOR
from .._validate import check_int
from ..bench.timing import time_call
from ..geometry import RingGeometry
from . import harmonic
from .kernels import ARCMIN, RadialKernel
from .realspace import pair_count, ring_plan

__all__ = ["CostModel", "PaperCostModel", "MeasuredCostModel", "resolve_cost_model",
           "cache_path"]


class CostModel:
    """Interface of the cost models (see the module docstring). Subclasses set ``name``,
    ``harmonic_backends`` and ``realspace_backends`` (the backends they can price)."""

    name = "abstract"
    harmonic_backends: tuple = ("cpu",)
    realspace_backends: tuple = ("cpu",)

    def harmonic_time(self, l_cut: int, nside: int, lmax: int, backend: str) -> float:
        """Seconds of the harmonic part: map2alm + alm2map up to ``l_cut``.

        Parameters
        ----------
        l_cut : int
            Band limit of the part (< 0: no harmonic part, 0 s).
        nside : int
            HEALPix resolution of the maps.
        lmax : int
            Band limit of the whole kernel.
        backend : str
            One of ``harmonic_backends``.

        Returns
        -------
        float
        """
        raise NotImplementedError

    def realspace_time(self, theta_cut: float, nside: int, backend: str) -> float:
        """Seconds of the real-space part within ``theta_cut``.

        Parameters
        ----------
        theta_cut : float
            Support radius in radians (<= 0: no real-space part, 0 s).
        nside : int
            HEALPix resolution of the maps.
        backend : str
            One of ``realspace_backends``.

        Returns
        -------
        float
        """
        raise NotImplementedError

    def concurrent(self, harmonic_backend: str, realspace_backend: str) -> bool:
        """Whether the two parts run at the same time: parts on different backends (CPU and
        GPU) overlap; on one they add up.

        Parameters
        ----------
        harmonic_backend, realspace_backend : str
            Where each part runs.

        Returns
        -------
        bool
        """
        return harmonic_backend != realspace_backend

    def split_time(self, t_harmonic, t_realspace, harmonic_backend, realspace_backend):
        """Seconds of a split: the longer part when they overlap (:meth:`concurrent`), else
        their sum.

        Parameters
        ----------
        t_harmonic, t_realspace : float
            Seconds of each part.
        harmonic_backend, realspace_backend : str
            Where each part runs.

        Returns
        -------
        float
        """
        if self.concurrent(harmonic_backend, realspace_backend):
            return max(t_harmonic, t_realspace)
        return t_harmonic + t_realspace

    def describe(self) -> str:
        """A line (or a few) saying what the model is, for plan reports.

        Returns
        -------
        str
        """
        return self.name


class PaperCostModel(CostModel):
    """The paper's formulas, Eqs. (7) and (8):

        t_ARKCoS = 0.0232 s * theta_cut[arcmin] + 2.428 s           (real space, GPU)
        t_libpsht = 160 s * l_cut^2 * lmax / 4096^3                  (harmonic, one CPU core)

    fitted at nside 2048, lmax 4096. At other resolutions the real-space time is scaled by
    npix / npix(2048) (an extrapolation the paper does not make). The two parts run in parallel
    (a split costs the longer one), and the paper's baseline, the whole kernel in harmonic
    space, is ``harmonic_time(lmax, ...)`` = 160 s at lmax 4096.

    What the paper's theta_cut measures (``theta_cut_is``): everywhere in sphgpu theta_cut is the
    support *radius* of the real-space part (it vanishes beyond theta_cut from the centre). The
    paper's own numbers make its theta_cut the support's full width, twice the radius:

    * "half the available interpolation nodes within the first 1/16 of the available support;
      in this case, within 7.5'" for theta_cut = 240': 7.5' is 1/16 of 120', half of 240';
    * "with theta_cut ~ 6 deg, [the sky] could potentially be split amongst 30 GPUs" in
      latitude bands, which works "until the width of the latitude bands is equal to twice the
      kernel width": 30 bands of 6 deg each make the kernel 3 deg wide on either side.

    With ``theta_cut_is="diameter"`` (default) Eq. 7 is fed twice the radius, and with it the
    optimizer lands on the paper's Table 1 (``benchmarks/convolve_table1_variants.py``);
    ``"radius"`` feeds the radius itself (an earlier reading; optimum cuts about half the
    paper's, see that script). :meth:`paper_theta_cut` converts a radius to the paper's
    theta_cut and :meth:`theta_grid` gives the radii of the paper's 30' steps.

    Parameters
    ----------
    theta_cut_is : {"diameter", "radius"}
        What the paper's theta_cut measures (see above).

    Raises
    ------
    ValueError
        For another ``theta_cut_is``.
    """

    name = "paper"
    harmonic_backends = ("cpu",)
    realspace_backends = ("cuda",)
    ARKCOS_PER_ARCMIN = 0.0232
    ARKCOS_CONSTANT = 2.428
    LIBPSHT_FULL = 160.0
    THETA_CUT_READINGS = ("diameter", "radius")

    def __init__(self, theta_cut_is: str = "diameter"):
        if theta_cut_is not in self.THETA_CUT_READINGS:
            raise ValueError(f"theta_cut_is must be one of {self.THETA_CUT_READINGS}, got "
                             f"{theta_cut_is!r}")
        self.theta_cut_is = theta_cut_is
        # the paper's theta_cut per radian of support radius
        self._width = 2.0 if theta_cut_is == "diameter" else 1.0

    def paper_theta_cut(self, theta_cut):
        """The paper's theta_cut of a real-space part of support radius ``theta_cut``.

        Parameters
        ----------
        theta_cut : float or array_like
            Support radius in radians.

        Returns
        -------
        ndarray, float64, the shape of ``theta_cut``
            Radians.
        """
        return self._width * np.asarray(theta_cut, dtype=np.float64)

    def support_radius(self, paper_theta_cut):
        """Inverse of :meth:`paper_theta_cut`: the support radius of the paper's theta_cut.

        Parameters
        ----------
        paper_theta_cut : float or array_like
            The paper's theta_cut in radians.

        Returns
        -------
        ndarray, float64, the shape of ``paper_theta_cut``
            Radians.
        """
        return np.asarray(paper_theta_cut, dtype=np.float64) / self._width

    def theta_grid(self, max_arcmin: float = 600.0, step_arcmin: float = 30.0) -> np.ndarray:
        """Support radii of the paper's theta_cut scan: step_arcmin, 2 step_arcmin, ... up to
        max_arcmin in the paper's theta_cut (30' steps as its Table 1).

        Parameters
        ----------
        max_arcmin : float
            Largest paper theta_cut, arcminutes.
        step_arcmin : float
            Step, arcminutes, 0 < step_arcmin <= max_arcmin.

        Returns
        -------
        ndarray, float64
            Support radii in radians.

        Raises
        ------
        ValueError
            If the step or the maximum is out of range.
        """
        if not (step_arcmin > 0 and max_arcmin >= step_arcmin):
            raise ValueError(f"need 0 < step_arcmin <= max_arcmin, got {step_arcmin!r}, "
                             f"{max_arcmin!r}")
        paper = np.arange(1, int(max_arcmin / step_arcmin + 1e-9) + 1) * step_arcmin * ARCMIN
        return self.support_radius(paper)

    def harmonic_time(self, l_cut, nside, lmax, backend="cpu"):
        if l_cut < 0:
            return 0.0
        return self.LIBPSHT_FULL * l_cut ** 2 * lmax / 4096.0 ** 3

    def realspace_time(self, theta_cut, nside, backend="cuda"):
        if theta_cut <= 0:
            return 0.0
        scale = (nside / 2048.0) ** 2
        paper_arcmin = self._width * theta_cut / ARCMIN
        return (self.ARKCOS_PER_ARCMIN * paper_arcmin + self.ARKCOS_CONSTANT) * scale

    def concurrent(self, harmonic_backend, realspace_backend):
        """Always True: the paper runs its parts on its CPU and its GPU at once.

        Parameters
        ----------
        harmonic_backend, realspace_backend : str
            Where each part runs (not used).

        Returns
        -------
        bool
        """
        return True

    def describe(self):
        what = ("the support's full width, twice sphgpu's radius" if self._width == 2.0
                else "sphgpu's support radius")
        return ("paper (Eqs. 7-8): t_ARKCoS = 0.0232 s/arcmin * theta_cut + 2.428 s on a GTX 480, "
                f"theta_cut = {what}; t_libpsht = 160 s * l_cut^2 lmax / 4096^3 on one CPU core")


CACHE = "convolve_cost"


def cache_path() -> str:
    """The file of the measured constants (see :mod:`sphgpu._tuning`)."""
    return _tuning.cache_path(CACHE)


def _device_name(backend):
    if backends.info(backend).gpu:
        return _tuning.device_name()
    threads = os.environ.get("SPHGPU_NUM_THREADS", "all")
    return f"{platform.processor() or platform.machine()} x{os.cpu_count()} threads={threads}"


def _fit_line(x, t):
    """Least-squares t = a + b x with a, b >= 0 (the work never takes negative time)."""
    x = np.asarray(x, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    A = np.stack([np.ones_like(x), x], axis=1)
    (a, b), *_ = np.linalg.lstsq(A, t, rcond=None)
    if b < 0:
        return float(np.mean(t)), 0.0
    if a < 0:
        return 0.0, float(np.dot(x, t) / np.dot(x, x))
    return float(a), float(b)


@dataclass
class _Fit:
    a: float
    b: float
    points: list = field(default_factory=list)     # (work, seconds)

    def __call__(self, work):
        return self.a + self.b * work

    @classmethod
    def from_cache(cls, value):
        """A cached entry {"a", "b", "points"} -> _Fit; ValueError/TypeError/KeyError when it
        is damaged (a NaN or negative constant would price plans at NaN or negative times)."""
        num = _tuning.nonnegative_number
        points = value.get("points", [])
        if not isinstance(points, list):
            raise TypeError("points: expected a list")
        return cls(num(value["a"]), num(value["b"]), [(num(w), num(t)) for w, t in points])


class MeasuredCostModel(CostModel):
    """Costs timed on this machine, for one nside.

    Harmonic part, per backend: t = a + b (l_cut + 1)^2 from map2alm + alm2map at a few l_cut
    on the real nside (a holds the ring FFTs, which do not shrink with l_cut), from the smallest
    l_cut up. Real-space part: t = a + b * pairs(theta_cut) from a few small theta_cut at nside
    ``min(nside, realspace_nside)`` (the work per pixel pair does not depend on nside), from the
    smallest up. Each part stops timing larger cases once the next would pass ``budget``
    seconds (at least two cases are timed). Fitted constants are cached on disk per (device,
    backend, nside, lmax); ``measure=False`` refuses to time and needs the cache.

    Parameters
    ----------
    nside, lmax : int
        Resolution and band limit of the maps to convolve.
    harmonic_backends, realspace_backends : tuple of str, optional
        What to price; default: "cpu" and, with a GPU, "cuda" for both.
    sizes : "full" or "quick"
        "quick" times fewer, smaller cases (tests, Binder).
    use_cache : bool
        Read and write the disk cache (False: time every part afresh, keep nothing).
    progress : callable(str) or False, optional
        Called with a line of text before each timing; default: print the line
        (:func:`sphgpu._tuning.print_progress`), False: say nothing.
    realspace_nside : int, optional
        Resolution at which the real-space part is timed (default: 1024 with a GPU, else 256,
        or 64 with "quick"; never above ``nside``).
    measure : bool
        False: use the disk cache only and raise LookupError when a part was never timed
        (panels use this to stay quick until asked to measure).
    budget : float
        Seconds each part (per backend) may spend timing, warm-up included, before it stops
        adding larger cases (default 0.5).

    Raises
    ------
    ValueError
        For a bad ``nside``, ``lmax``, ``sizes`` or ``budget``, or when pricing another nside.
    LookupError
        With ``measure=False``, for a part never timed here.
    """

    name = "measured"

    def __init__(self, nside, lmax, *, harmonic_backends=None, realspace_backends=None,
                 sizes="full", use_cache=True, progress=None, realspace_nside=None,
                 measure=True, budget=0.5):
        self.nside = check_int("nside", nside, minimum=1)
        self.lmax = check_int("lmax", lmax, minimum=1)
        gpu = ("cuda",) if backends.cuda_available() and not SIMULATOR else ()
        self.harmonic_backends = tuple(harmonic_backends or ("cpu",) + gpu)
        self.realspace_backends = tuple(realspace_backends or gpu or ("cpu",))
        if sizes not in ("full", "quick"):
            raise ValueError(f"sizes must be 'full' or 'quick', got {sizes!r}")
        self.sizes = sizes
        self.progress = (_tuning.print_progress if progress is None
                         else progress or (lambda s: None))
        if not (isinstance(budget, (int, float)) and 0 < budget < math.inf):
            raise ValueError(f"budget must be a positive number of seconds, got {budget!r}")
        self.budget = float(budget)
        # 1024 keeps a GPU busy (3M threads with the quarter-turn symmetry) for milliseconds
        default_rs_nside = 1024 if gpu else (64 if sizes == "quick" else 256)
        self.realspace_nside = min(self.nside, realspace_nside or default_rs_nside)
        self.use_cache = use_cache
        self.measure = measure
        self.harmonic = {}
        self._host_maps = {}         # nside -> the map every backend's harmonic timings use
        self.realspace = {}
        for b in self.harmonic_backends:
            self.harmonic[b] = self._cached("harmonic", b, self._measure_harmonic)
        for b in self.realspace_backends:
            self.realspace[b] = self._cached("realspace", b, self._measure_realspace)
        self._host_maps.clear()       # 400 MB at nside 2048, not needed for pricing

    # ------------------------------------------------------------------ pricing
    def harmonic_time(self, l_cut, nside, lmax, backend):
        if l_cut < 0:
            return 0.0
        self._check_nside(nside)
        return self.harmonic[backend]((l_cut + 1) ** 2)

    def realspace_time(self, theta_cut, nside, backend):
        if theta_cut <= 0:
            return 0.0
        self._check_nside(nside)
        return self.realspace[backend](pair_count(nside, theta_cut))

    def _check_nside(self, nside):
        if nside != self.nside:
            raise ValueError(f"this MeasuredCostModel was timed for nside={self.nside}, not "
                             f"{nside}; build one for nside={nside}")

    def describe(self):
        lines = [f"measured on this machine (nside {self.nside}, lmax {self.lmax}):"]
        for b, f in self.harmonic.items():
            lines.append(f"  harmonic [{b}]: {f.a * 1e3:.3g} ms + {f.b * 1e9:.3g} ns * (l_cut+1)^2")
        for b, f in self.realspace.items():
            lines.append(f"  real space [{b}]: {f.a * 1e3:.3g} ms + {f.b * 1e12:.3g} ps * pairs")
        return "\n".join(lines)

    # ------------------------------------------------------------------ cache
    def _key(self, part, backend):
        extra = f"|rs_nside={self.realspace_nside}" if part == "realspace" else ""
        return (f"{part}|{backend}|{_device_name(backend)}|nside={self.nside}|lmax={self.lmax}"
                f"|{self.sizes}{extra}")

    def _cached(self, part, backend, measure):
        key = self._key(part, backend)
        if self.use_cache:
            fit = _tuning.lookup(CACHE, key, check=_Fit.from_cache)
            if fit is not None:
                return fit
        if not self.measure:
            raise LookupError(f"the {part} part on {backend} was never timed at nside "
                              f"{self.nside}, lmax {self.lmax} on this machine")
        with _tuning.paused():
            fit = measure(backend)
        if self.use_cache:
            _tuning.store(CACHE, key, {"a": fit.a, "b": fit.b, "points": fit.points,
                                       "when": time.strftime("%Y-%m-%d %H:%M:%S")})
        return fit

    def _time_cases(self, cases, backend):
        """Time ``cases`` [(work, label, fn)] in order of growing work, until the next case
        would pass the budget (predicted from the last one, work in proportion); -> _Fit."""
        start = time.perf_counter()
        points = []
        for i, (work, label, fn) in enumerate(cases):
            if len(points) >= 2:
                w0, t0 = points[-1]
                # two calls per case (warm-up and one timed)
                if time.perf_counter() - start + 2 * t0 * work / w0 > self.budget:
                    break
            self.progress(f"timing {label} ({i + 1}/{len(cases)})")
            points.append((work, _time(fn, backend)))
        a, b = _fit_line(*zip(*points))
        return _Fit(a, b, points)

    # ------------------------------------------------------------------ timing
    def _measure_harmonic(self, backend):
        """t = a + b (l_cut+1)^2. From nside 256 up, b (the Legendre work, per ring) is timed
        at a quarter of the resolution, where it stands out of the ring FFTs already at the
        l_cut a short budget affords, and scaled by the ratio of rings; a (the FFTs) is then
        what one call at the real nside and the smallest l_cut leaves over. Timing every l_cut
        at the real nside would take many times optimize_split's first-call goal
        (benchmarks/results/first_call.json, "goals_s")."""
        maps = {}

        def case(nside, l_cut):
            geom = RingGeometry.healpix(nside)
            if nside not in maps:
                # one map per resolution, made once for every backend (drawing normals for
                # each case at nside 2048 was a large part of a first optimize_split:
                # benchmarks/results/first_call_optimize_split.json); a block of 2^16 uniform
                # values repeated is as good for a timing (no
                # step of a transform depends on the values) and costs a copy, not a draw
                if nside not in self._host_maps:
                    self._host_maps[nside] = _repeated_noise(geom.npix)
                maps[nside] = _to_backend(self._host_maps[nside], backend)
            m = maps[nside]
            bl = np.ones(l_cut + 1)
            return ((l_cut + 1) ** 2, f"the harmonic part [{backend}] at l_cut {l_cut}, nside "
                    f"{nside}", lambda: harmonic.harmonic_convolve(m, bl, geom, backend=backend))

        fractions = (0.125, 0.5, 1.0) if self.sizes == "quick" else (0.0625, 0.125, 0.25, 0.5, 1.0)
        l_cuts = [max(1, int(round(f * self.lmax))) for f in fractions]
        low = self.nside // 4 if self.nside >= 256 else self.nside
        fit = self._time_cases([case(low, l) for l in l_cuts], backend)
        if low == self.nside:
            return fit
        rings = (4 * self.nside - 1) / (4 * low - 1)
        work, label, run = case(self.nside, l_cuts[0])
        self.progress(f"timing {label}")
        # ducc0 (the host backends) compiles nothing: its warm-up call at the real nside would
        # only repeat ~0.5 s
        t = _time(run, backend, warmup=1 if backends.info(backend).gpu else 0)
        b = fit.b * rings
        points = [(w * rings, s) for w, s in fit.points] + [(work, t)]
        return _Fit(max(0.0, t - b * work), b, points)

    def _measure_realspace(self, backend):
        nside = self.realspace_nside
        geom = RingGeometry.healpix(nside)
        rng = np.random.default_rng(0)
        m = _to_backend(rng.standard_normal((1, geom.npix)), backend)
        # supports of about 30 to 3000 pixels (quick: 10 to 300)
        targets = (10, 40, 160) if self.sizes == "quick" else (30, 120, 500, 2000)
        pix = 4 * math.pi / geom.npix
        kernel = RadialKernel.gaussian(max(1.0, 2.0 * math.sqrt(pix) / ARCMIN), 3 * nside)
        impl = backends.load("convolve", backend)
        cases = []
        plans = {}

        def run(ck):
            # planned at the case's first (untimed) call: cases the budget skips cost nothing
            if ck.theta_cut not in plans:
                plans[ck.theta_cut] = ring_plan(geom, ck.theta_cut)
            return impl.convolve(m, plans[ck.theta_cut], ck)

        for npix_disc in targets:
            theta = min(math.pi, 2.0 * math.asin(min(1.0, math.sqrt(npix_disc * pix / math.pi) / 2)))
            ck = kernel.tabulate(theta, rtol=1e-6)
            cases.append((pair_count(nside, ck.theta_cut),
                          f"the real-space part [{backend}] at theta_cut "
                          f"{ck.theta_cut / ARCMIN:.3g} arcmin, nside {nside}",
                          lambda ck=ck: run(ck)))
        fit = self._time_cases(cases, backend)
        # the constant was measured at realspace_nside; launch/row overheads grow with npix
        fit.a *= (self.nside / nside) ** 2
        return fit


def _repeated_noise(n, block=1 << 16):
    """(n,) float64: one block of uniform values in [-0.5, 0.5) repeated (a copy through a
    broadcast: 0.05 s at n = 50M on a 2-core machine, where numpy.tile and numpy.resize took
    0.7-0.9 s, as long as drawing all n values)."""
    values = np.random.default_rng(0).random(block) - 0.5
    out = np.empty(-(-n // block) * block)
    out.reshape(-1, block)[:] = values
    return out[:n]


def _on_device(backend):
    """Whether ``backend`` computes on a real GPU (device arrays, asynchronous launches)."""
    return backends.info(backend).gpu and not SIMULATOR


def _to_backend(a, backend):
    if _on_device(backend):
        import cupy

        return cupy.asarray(a)
    return a


def _time(fn, backend, repeat=1, warmup=1):
    sync = None
    if _on_device(backend):
        import cupy

        sync = cupy.cuda.Device().synchronize
    # one timed call after the warm-up: its spread is small next to the fit's (three calls per
    # case put optimize_split's first call over its goal: benchmarks/results/first_call.json)
    return time_call(fn, repeat=repeat, warmup=warmup, sync=sync).median


def resolve_cost_model(cost_model, nside, lmax, **kw) -> CostModel:
    """A CostModel from a name ("paper", "measured") or an instance (returned as is); ``kw``
    go to the model's constructor."""
    if isinstance(cost_model, CostModel):
        return cost_model
    if cost_model == "paper":
        return PaperCostModel(**kw)
    if cost_model == "measured":
        return MeasuredCostModel(nside, lmax, **kw)
    raise ValueError(f"cost_model must be 'paper', 'measured' or a CostModel instance, got "
                     f"{cost_model!r}")
