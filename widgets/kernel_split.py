"""Kernel-split tuner: split a beam's kernel into a harmonic and a real-space part, and see what
the split costs and how wrong it is, predicted and measured.

``KernelSplitModel`` holds the beam (FWHM, the paper's K_l = sqrt(C_l) B_l or a plain Gaussian),
the error bound, the cuts (l_cut, theta_cut), nside and the cost model, and computes through
the public :mod:`sphgpu.convolve` API: the two truncated kernels in l-space and real space, the
predicted error against l_cut, the predicted time of each part and the speedup, the optimizer's
choice, and (on Run) the measured error, times and the convolved map with its residual.
``KernelSplitPanel`` is the ipywidgets view. See :mod:`sphgpu.widgets._base` for the pattern.
"""

from __future__ import annotations

import dataclasses
import math
import time

import ipywidgets as w
import numpy as np

import sphgpu
from sphgpu import backends
from sphgpu.convolve import (ARCMIN, MeasuredCostModel, PaperCostModel, RadialKernel,
                             SplitFitter, convolve, default_theta_grid, measure_error,
                             optimize_split, white_noise)
from sphgpu.convolve.harmonic import harmonic_convolve

from ._base import (LRU, Panel, PanelModel, default_backend, fmt_seconds, is_int, new_figure,
                    numbers_html, show_figure)
from .plots import mollview

__all__ = ["KernelSplitModel", "KernelSplitResult", "KernelSplitPanel", "kernel_split_panel"]

#: nside choices offered (HEALPix powers of two).
NSIDES = tuple(2**k for k in range(2, 12))
#: Largest nside per backend here: a CPU real-space sum at nside 256 already takes seconds.
MAX_NSIDE = {"cpu": 256, "cuda": 2048, "reference": 8}
#: Up to this nside a change of a control recomputes the predictions at once.
LIVE_MAX_NSIDE = 128
COST_MODELS = ("measured", "paper")
KERNELS = ("cmb", "gaussian")
#: Points of the predicted-error curve against l_cut: each is one least-squares solve, and the
#: curve is redrawn on every beam or theta_cut change.
CURVE_POINTS = 4
#: theta_cut steps the tuner scans and offers: the first 12 of the optimizer's default grid
#: (30 arcmin steps at lmax 4096, scaled by 4096 / lmax), which hold every optimum seen; a
#: shorter range keeps the fit's basis small, so changing nside answers within a second.
SCAN_STEPS = 12


@dataclasses.dataclass
class KernelSplitResult:
    """One measured run of a split (Run button). Maps are NumPy float64 HEALPix RING."""

    nside: int
    backend: str
    l_cut: int
    theta_cut: float                 # radians
    predicted_error: float           # alpha included
    measured_spectrum_error: float
    measured_map_error: float
    curve: list                      # (l_cut, predicted, measured spectrum error)
    harmonic_s: float                # measured seconds of each part, the split, the full kernel
    realspace_s: float
    split_s: float
    full_s: float
    full_map: np.ndarray
    split_map: np.ndarray

    @property
    def residual(self) -> np.ndarray:
        return self.split_map - self.full_map

    @property
    def measured_speedup(self) -> float:
        return self.full_s / self.split_s if self.split_s > 0 else math.inf

    def numbers(self) -> list[tuple[str, str]]:
        return [
            ("measured spectrum error", f"{self.measured_spectrum_error:.3g}"),
            ("measured map error", f"{self.measured_map_error:.3g}"),
            ("measured harmonic / real space", f"{fmt_seconds(self.harmonic_s)} / "
                                               f"{fmt_seconds(self.realspace_s)}"),
            ("measured split / all harmonic", f"{fmt_seconds(self.split_s)} / "
                                              f"{fmt_seconds(self.full_s)}"),
            ("measured speedup", f"{self.measured_speedup:.3g}x"),
        ]


class KernelSplitModel(PanelModel):
    """State and computation of the kernel-split tuner.

    Parameters
    ----------
    nside : int
        HEALPix resolution (a power of two up to ``max_nside[backend]``).
    lmax : int, optional
        Band limit of the kernel, 2 to 4 nside (default 2 nside, as Planck's 4096 at 2048).
    fwhm_arcmin : float, optional
        Beam FWHM; default 10 arcmin scaled to this lmax (10 * 4096 / lmax), the paper's case.
    kernel : {"cmb", "gaussian"}
        K_l = sqrt(C_l^Planck) B_l (the paper's) or B_l.
    error_bound : float
        Bound on the paper's fractional error (Eq. 6, alpha included).
    l_cut, theta_cut_arcmin : optional
        The cuts; default: 60 arcmin scaled to lmax (60 * 4096 / lmax) and the smallest l_cut
        that meets the bound there.
    cost_model : {"measured", "paper"}
        How predicted times are made. "measured" uses this machine's timings once they exist
        (Optimize or Run measures them); until then the panel says so.
    alpha : float
        The error factor (5 as the paper; :func:`sphgpu.convolve.calibrate_alpha` measures it).
    backend : {"cpu", "cuda", "reference"}, optional
    seed : int
        Seed of the white-noise map of Run.
    """

    PARAMS = ("nside", "lmax", "fwhm_arcmin", "kernel", "error_bound", "l_cut",
              "theta_cut_arcmin", "cost_model", "alpha", "backend", "seed")

    def __init__(self, nside=64, lmax=None, fwhm_arcmin=None, kernel="cmb", error_bound=1e-5,
                 l_cut=None, theta_cut_arcmin=None, cost_model="measured", alpha=5.0,
                 backend=None, seed=0, *, max_nside=None, live_max_nside=LIVE_MAX_NSIDE):
        super().__init__()
        self.max_nside = dict(MAX_NSIDE, **(max_nside or {}))
        self.live_max_nside = live_max_nside
        self.nside = nside
        self.lmax = 2 * nside if lmax is None and is_int(nside) else lmax
        self.fwhm_arcmin = (10.0 * 4096 / self.lmax if fwhm_arcmin is None and is_int(self.lmax)
                            and self.lmax > 0 else fwhm_arcmin)
        self.kernel = kernel
        self.error_bound = error_bound
        self.cost_model = cost_model
        self.alpha = alpha
        self.backend = default_backend() if backend is None else backend
        self.seed = seed
        self.l_cut = l_cut
        self.theta_cut_arcmin = theta_cut_arcmin
        self.result: KernelSplitResult | None = None
        self.plan = None
        self._kernels = LRU(4)
        self._fitters = LRU(2)
        self._splits = LRU(16)
        self._curves = LRU(16)
        self._costs = LRU(4)
        self._runs = LRU(4)
        if (l_cut is None or theta_cut_arcmin is None) and self._basic_checks() == "":
            l0, t0 = self._starting_cuts()
            self.l_cut = l0 if l_cut is None else l_cut
            self.theta_cut_arcmin = t0 if theta_cut_arcmin is None else theta_cut_arcmin
        self.set()

    def _starting_cuts(self):
        """Cuts to start from: the second support of the optimizer's scan (60 arcmin scaled
        to this lmax: a few thousand pixels per disc, quick to Run on a CPU) with the smallest
        l_cut meeting the bound there."""
        grid = self.scan_grid()
        theta = float(grid[min(1, len(grid) - 1)])
        l_cut = None
        with self.capture("start"):
            l_cut = self._fitter().smallest_l_cut(theta, float(self.error_bound))
        self.message = ""
        return (self.lmax // 2 if l_cut is None else l_cut), theta / ARCMIN

    # -- validation ---------------------------------------------------------------------------
    def _basic_checks(self) -> str:
        if not isinstance(self.backend, str) or self.backend not in backends.BACKENDS:
            return f"backend must be one of {', '.join(backends.BACKENDS)}, not {self.backend!r}"
        if not is_int(self.nside) or self.nside < 1 or self.nside & (self.nside - 1):
            return f"nside must be a power of two (HEALPix), not {self.nside!r}"
        limit = self.max_nside[self.backend]
        if self.nside > limit:
            return (f"nside {self.nside} is not allowed on the {self.backend} backend here (at "
                    f"most {limit}: the real-space sum grows as nside^4); choose nside <= "
                    f"{limit} or another backend")
        if not is_int(self.lmax) or not 2 <= self.lmax <= 4 * self.nside:
            return (f"lmax must be a whole number from 2 to {4 * self.nside} for nside "
                    f"{self.nside}, not {self.lmax!r}")
        if not _real(self.fwhm_arcmin) or not 0 < self.fwhm_arcmin <= 10800:
            return f"fwhm_arcmin must be above 0 and at most 10800, not {self.fwhm_arcmin!r}"
        if self.kernel not in KERNELS:
            return f"kernel must be one of {', '.join(KERNELS)}, not {self.kernel!r}"
        if not _real(self.error_bound) or not 1e-12 <= self.error_bound <= 0.1:
            return f"error_bound must be from 1e-12 to 0.1, not {self.error_bound!r}"
        if not _real(self.alpha) or not 0 < self.alpha <= 100:
            return f"alpha must be above 0 and at most 100, not {self.alpha!r}"
        if self.cost_model not in COST_MODELS:
            return f"cost_model must be one of {', '.join(COST_MODELS)}, not {self.cost_model!r}"
        if not is_int(self.seed) or self.seed < 0:
            return f"seed must be a whole number >= 0, not {self.seed!r}"
        try:
            backends.resolve(self.backend, "sht")
        except backends.BackendUnavailableError as exc:
            return f"the {self.backend} backend cannot run here: {exc}"
        return ""

    def validate(self) -> str:
        msg = self._basic_checks()
        if msg:
            return msg
        if not is_int(self.l_cut) or not -1 <= self.l_cut <= self.lmax:
            return (f"l_cut must be a whole number from -1 (no harmonic part) to lmax = "
                    f"{self.lmax}, not {self.l_cut!r}")
        lo, hi = self.theta_range_arcmin
        if not _real(self.theta_cut_arcmin) or not 0 < self.theta_cut_arcmin <= 10800:
            return (f"theta_cut must be above 0 and at most 180 degrees (10800 arcmin), not "
                    f"{self.theta_cut_arcmin!r}")
        if self.theta_cut_arcmin < lo:
            return (f"theta_cut {self.theta_cut_arcmin:.4g}' is too small: the real-space "
                    f"kernel needs at least one knot, {lo:.4g} arcmin at lmax {self.lmax}")
        if self.theta_cut_arcmin > hi * (1 + 1e-9):
            return (f"theta_cut {self.theta_cut_arcmin:.4g}' is too large: at most {hi:.4g} "
                    f"arcmin (the tuner's scan range at lmax {self.lmax})")
        return ""

    @property
    def theta_range_arcmin(self) -> tuple[float, float]:
        """(smallest, largest) theta_cut the tuner offers, arcmin: one knot spacing of the
        real-space basis, and the optimizer's scan range."""
        fit = self._fitter()
        return (fit.h * 1.0001 / ARCMIN, self.scan_grid().max() / ARCMIN)

    def scan_grid(self):
        """theta_cut values (radians) the tuner's optimizer scans."""
        return default_theta_grid(self.lmax, steps=SCAN_STEPS)

    @property
    def live(self) -> bool:
        return not self.message and self.nside <= self.live_max_nside

    # -- cached pieces --------------------------------------------------------------------------
    def _kernel_key(self):
        return (self.kernel, float(self.fwhm_arcmin), self.lmax)

    def radial_kernel(self) -> RadialKernel:
        def make():
            if self.kernel == "cmb":
                return RadialKernel.cmb(float(self.fwhm_arcmin), self.lmax)
            return RadialKernel.gaussian(float(self.fwhm_arcmin), self.lmax)

        return self._kernels.get(self._kernel_key(), make)

    def _fitter(self) -> SplitFitter:
        key = self._kernel_key() + (float(self.alpha),)
        return self._fitters.get(key, lambda: SplitFitter(
            self.radial_kernel(), float(self.scan_grid().max()), alpha=float(self.alpha)))

    def split(self):
        """The :class:`sphgpu.convolve.KernelSplit` of the current cuts (None if invalid)."""
        if self.message:
            return None
        key = self._kernel_key() + (float(self.alpha), self.l_cut, float(self.theta_cut_arcmin))
        with self.capture("split"):
            return self._splits.get(key, lambda: self._fitter().split(
                self.l_cut, self.theta_cut_arcmin * ARCMIN))
        return None

    def error_curve(self):
        """Predicted error (alpha included) against l_cut at the current theta_cut:
        (l_cut array, error array)."""
        key = self._kernel_key() + (float(self.alpha), float(self.theta_cut_arcmin))

        def make():
            fit = self._fitter()
            ls = np.unique(np.linspace(-1, self.lmax - 1, CURVE_POINTS).astype(int))
            th = self.theta_cut_arcmin * ARCMIN
            return ls, np.array([fit.error(int(l), th) for l in ls])

        return self._curves.get(key, make)

    def costs(self, measure=False):
        """The cost model; the measured one only once it exists (or with ``measure=True``,
        which times this machine). None when not available yet."""
        if self.cost_model == "paper":
            return PaperCostModel()
        key = (self.nside, self.lmax, self.backend)
        if key in self._costs:
            return self._costs.get(key, None)
        hb = ("cpu",) + (("cuda",) if self.backend == "cuda" else ())
        rb = ("cuda",) if self.backend == "cuda" else ("cpu",)
        try:
            cm = MeasuredCostModel(self.nside, self.lmax, sizes="quick", harmonic_backends=hb,
                                   realspace_backends=rb, measure=measure)
        except LookupError:
            return None
        return self._costs.get(key, lambda: cm)

    def predicted_times(self):
        """dict(harmonic, realspace, total, all_harmonic, speedup, backends) in seconds, from
        the cost model (None when the measured model does not exist yet)."""
        cm = self.costs()
        s = self.split()
        if cm is None or s is None:
            return None
        theta = s.theta_cut if s.realspace is not None else 0.0
        best = None
        for hb in cm.harmonic_backends:
            for rb in cm.realspace_backends:
                t_h = cm.harmonic_time(self.l_cut, self.nside, self.lmax, hb)
                t_r = cm.realspace_time(theta, self.nside, rb)
                total = cm.split_time(t_h, t_r, hb, rb)
                if best is None or total < best["total"]:
                    best = dict(harmonic=t_h, realspace=t_r, total=total, harmonic_backend=hb,
                                realspace_backend=rb)
        full = min(cm.harmonic_time(self.lmax, self.nside, self.lmax, hb)
                   for hb in cm.harmonic_backends)
        best["all_harmonic"] = full
        best["speedup"] = full / best["total"] if best["total"] > 0 else math.inf
        return best

    # -- actions --------------------------------------------------------------------------------
    def _optimize(self, cm):
        with self.capture("optimize"):
            return optimize_split(self.radial_kernel(), nside=self.nside,
                                  error_bound=float(self.error_bound), cost_model=cm,
                                  alpha=float(self.alpha), fitter=self._fitter(),
                                  theta_grid=self.scan_grid())
        return None

    def optimize(self, progress=None):
        """Set l_cut and theta_cut to the optimizer's choice with the chosen cost model
        (measuring this machine first if needed). Returns the Plan, or None with a message."""
        progress = progress or (lambda f, t="": None)
        msg = self._basic_checks()
        if msg:
            self.message = msg
            return None
        progress(0.1, "timing this machine" if self.cost_model == "measured" else "scanning")
        cm = None
        with self.capture("cost model"):
            cm = self.costs(measure=True)
        if cm is None:
            return None
        progress(0.5, "scanning theta_cut")
        plan = self._optimize(cm)
        if plan is None:
            return None
        self.plan = plan
        self.set(l_cut=max(plan.l_cut, -1) if plan.method != "harmonic" else self.lmax,
                 theta_cut_arcmin=(plan.theta_cut_arcmin if plan.method != "harmonic"
                                   else self.theta_cut_arcmin))
        progress(1.0, f"{plan.method}: l_cut {plan.l_cut}, theta_cut "
                      f"{plan.theta_cut_arcmin:.4g}'")
        return plan

    def run(self, progress=None) -> KernelSplitResult | None:
        """Measured work: convolve a white-noise map with the split and with the full kernel,
        time each part, and measure the error at the current cuts and a few other l_cut.
        Returns a :class:`KernelSplitResult` (cached), or None with ``message`` set."""
        progress = progress or (lambda f, t="": None)
        self.result = None
        if not self.set():
            return None
        key = self._kernel_key() + (float(self.alpha), self.l_cut,
                                    float(self.theta_cut_arcmin), self.nside, self.seed,
                                    self.backend)
        with self.capture("run"):
            self.result = self._runs.get(key, lambda: self._run(progress))
        progress(1.0, "done" if self.result is not None else "")
        return self.result

    def _run(self, progress):
        s = self.split()
        geom = sphgpu.RingGeometry.healpix(self.nside)
        m = white_noise(self.nside, self.seed)
        k = self.radial_kernel()
        be = self.backend
        progress(0.05, "full kernel in harmonic space")
        t0 = time.perf_counter()
        full = harmonic_convolve(m, k.bl, geom, backend=be)
        full_s = time.perf_counter() - t0
        progress(0.25, "the split")
        t0 = time.perf_counter()
        approx = convolve(m, s, backend=be)
        split_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        harmonic_convolve(m, s.harmonic_bl, geom, backend=be)
        harmonic_s = time.perf_counter() - t0
        realspace_s = 0.0
        if s.realspace is not None:
            t0 = time.perf_counter()
            convolve(m, s.realspace, method="realspace", backend=be)
            realspace_s = time.perf_counter() - t0
        here = measure_error(s, self.nside, maps=m, full=full, backend=be)
        curve = [(self.l_cut, s.predicted_error, here.spectrum)]
        fit = self._fitter()
        others = sorted({int(l) for l in np.linspace(max(0, self.l_cut - self.lmax // 4),
                                                      min(self.lmax - 1,
                                                          self.l_cut + self.lmax // 4), 4)}
                        - {self.l_cut})
        for i, l in enumerate(others):
            progress(0.5 + 0.45 * i / max(1, len(others)), f"measuring l_cut {l}")
            other = fit.split(l, self.theta_cut_arcmin * ARCMIN)
            me = measure_error(other, self.nside, maps=m, full=full, backend=be)
            curve.append((l, other.predicted_error, me.spectrum))
        curve.sort()
        return KernelSplitResult(self.nside, be, self.l_cut, s.theta_cut, s.predicted_error,
                                 here.spectrum, here.map, curve, harmonic_s, realspace_s,
                                 split_s, full_s, full, approx)

    # -- views ----------------------------------------------------------------------------------
    def numbers(self) -> list[tuple[str, str]]:
        s = self.split()
        if s is None:
            return []
        rows = [("kernel", f"{self.radial_kernel().name}, lmax {self.lmax}, nside {self.nside}"),
                ("cuts", f"l_cut {self.l_cut}, theta_cut {s.theta_cut_arcmin:.4g}′"),
                ("predicted error (α = {:g})".format(float(self.alpha)),
                 f"{s.predicted_error:.3g} ({'within' if s.predicted_error <= self.error_bound else 'above'} "
                 f"bound {float(self.error_bound):g})")]
        t = self.predicted_times()
        if t is None:
            rows.append(("predicted times", "not measured on this machine yet: press "
                                            "Optimize or Run"))
        else:
            rows += [("predicted harmonic / real space",
                      f"{fmt_seconds(t['harmonic'])} ({t['harmonic_backend']}) / "
                      f"{fmt_seconds(t['realspace'])} ({t['realspace_backend']})"),
                     ("predicted split / all harmonic",
                      f"{fmt_seconds(t['total'])} / {fmt_seconds(t['all_harmonic'])}"),
                     ("predicted speedup", f"{t['speedup']:.3g}x ({self.cost_model} costs)")]
        if self.result is not None and self.result.l_cut == self.l_cut:
            rows += self.result.numbers()
        return rows

    def figure(self):
        """Kernels in l-space and real space, error against l_cut, times: a Figure (or None)."""
        s = self.split()
        if s is None:
            return None
        k = self.radial_kernel()
        fig = _quick_figure(11.0, 6.4)
        axs = fig.subplots(2, 2)
        fig.subplots_adjust(left=0.07, right=0.98, bottom=0.08, top=0.95, wspace=0.3,
                            hspace=0.38)
        ax = axs[0, 0]
        ell = np.arange(s.approx_bl.shape[0])
        norm = np.abs(k.bl).max() or 1.0
        ax.semilogy(ell[:k.lmax + 1], np.abs(k.bl) / norm, "k", lw=2, label="full K_ℓ")
        if s.l_cut >= 0:
            ax.semilogy(ell[:s.l_cut + 1], np.abs(s.harmonic_bl) / norm, color="#2166ac",
                        label="harmonic part")
        ax.semilogy(ell, np.abs(s.realspace_bl) / norm + 1e-300, color="#b2182b", lw=0.8,
                    label="|real-space part|")
        target = np.zeros_like(s.approx_bl)
        target[:k.lmax + 1] = k.bl
        ax.semilogy(ell, np.abs(s.approx_bl - target) / norm + 1e-300, color="0.5", lw=0.8,
                    label="|sum − full|")
        ax.axvline(k.lmax, color="0.7", ls=":")
        ax.set_ylim(1e-12, 10)
        ax.set_xlabel("ℓ")
        ax.set_title("kernels in harmonic space (÷ max |K_ℓ|)", fontsize="medium")
        ax.legend(fontsize="x-small", frameon=False)

        ax = axs[0, 1]
        th_cut = max(s.theta_cut, 1e-6)
        theta = np.linspace(0, 1.3 * th_cut, 300)
        full_prof = k.profile(np.minimum(theta, math.pi))
        scale = np.abs(full_prof).max() or 1.0
        ax.plot(theta / ARCMIN, full_prof / scale, "k", lw=2, label="full K(θ)")
        if s.realspace is not None:
            ax.plot(theta / ARCMIN, s.realspace(theta) / scale, color="#b2182b",
                    label="real-space part")
        ax.axvline(th_cut / ARCMIN, color="0.7", ls=":")
        ax.set_xlabel("θ [arcmin]")
        ax.set_title("profiles (÷ max |K(θ)|)", fontsize="medium")
        ax.legend(fontsize="x-small", frameon=False)

        ax = axs[1, 0]
        ls, errs = self.error_curve()
        ax.semilogy(ls, np.maximum(errs, 1e-16), "o-", color="#2166ac", ms=3,
                    label=f"predicted (α = {float(self.alpha):g})")
        ax.axhline(float(self.error_bound), color="k", ls="--", lw=1, label="bound")
        ax.plot([s.l_cut], [max(s.predicted_error, 1e-16)], "*", color="#2166ac", ms=12)
        r = self.result
        if r is not None and abs(r.theta_cut - s.theta_cut) < 1e-12:
            cl, _, meas = zip(*r.curve)
            ax.semilogy(cl, np.maximum(meas, 1e-16), "s", color="#b2182b", ms=5,
                        label="measured (spectrum)")
        ax.set_xlabel("l_cut")
        ax.set_title(f"error against l_cut at θ_cut = {s.theta_cut_arcmin:.4g}′",
                     fontsize="medium")
        ax.legend(fontsize="x-small", frameon=False)

        ax = axs[1, 1]
        t = self.predicted_times()
        labels, values, colors = [], [], []
        if t is not None:
            labels += ["harmonic", "real space", "split", "all harm."]
            values += [t["harmonic"], t["realspace"], t["total"], t["all_harmonic"]]
            colors += ["#92c5de"] * 4
        if r is not None and r.l_cut == s.l_cut:
            labels += ["harmonic*", "real space*", "split*", "all harm.*"]
            values += [r.harmonic_s, r.realspace_s, r.split_s, r.full_s]
            colors += ["#f4a582"] * 4
        if values:
            ax.barh(labels, values, color=colors)
            ax.set_xscale("log")
            ax.invert_yaxis()
            ax.set_xlabel("seconds (blue: predicted, red*: measured)")
        else:
            ax.text(0.5, 0.5, "times: press Optimize or Run\nto time this machine",
                    ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
        ax.set_title(f"time ({self.cost_model} cost model)", fontsize="medium")
        _quick_ticks(fig)
        return fig

    def map_figure(self):
        """The convolved white-noise map and the split's residual (after Run), or None."""
        r = self.result
        if r is None:
            return None
        fig = new_figure(11.0, 3.4)
        geom = sphgpu.RingGeometry.healpix(r.nside)
        for i, (vals, title) in enumerate([(r.full_map, "full kernel"),
                                           (r.residual, "split − full")]):
            ax = fig.add_subplot(1, 2, i + 1, projection="mollweide")
            v = 3 * float(np.std(vals)) or 1.0
            mesh = mollview(vals, geom, ax, cmap="RdBu_r", vmin=-v, vmax=v)
            fig.colorbar(mesh, ax=ax, orientation="horizontal", shrink=0.6, pad=0.04)
            ax.set_title(title, fontsize="medium")
        return fig


def _quick_figure(width, height):
    """A Figure with fixed margins: the constrained layout of ``new_figure`` costs about a
    third of a second per redraw, too much for a panel answering every slider move."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=80)


def _quick_ticks(fig):
    """Plain "1e-06" labels and no minor ticks on log axes: mathtext tick labels and minor
    ticks are about half the drawing time of this figure."""
    from matplotlib.ticker import FuncFormatter, NullLocator

    plain = FuncFormatter(lambda v, _pos: f"{v:.0e}" if v > 0 else "0")
    for ax in fig.axes:
        for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
            if scale == "log":
                axis.set_major_formatter(plain)
                axis.set_minor_locator(NullLocator())


def _real(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) \
        and math.isfinite(float(x))


class KernelSplitPanel(Panel):
    """The kernel-split tuner's view: beam and cut controls, Optimize, Run, figures, numbers."""

    def __init__(self, model: KernelSplitModel):
        super().__init__()
        self.model = m = model
        style = {"description_width": "9em"}
        nside = m.nside if is_int(m.nside) and m.nside in NSIDES else 64
        top = max(m.max_nside.values())
        self.nside = w.Dropdown(options=[n for n in NSIDES if n <= top], value=nside,
                                description="nside", style=style)
        lmax = m.lmax if is_int(m.lmax) and m.lmax >= 2 else 2 * nside
        fwhm = float(m.fwhm_arcmin) if _real(m.fwhm_arcmin) and m.fwhm_arcmin > 0 else 60.0
        self.fwhm = w.FloatSlider(value=fwhm, min=0.5, max=max(4 * fwhm, 600.0), step=0.5,
                                  description="beam FWHM [′]", continuous_update=False,
                                  style=style)
        self.kernel = w.ToggleButtons(options=list(KERNELS), value=m.kernel
                                      if m.kernel in KERNELS else "cmb",
                                      description="kernel", style=dict(style,
                                                                       button_width="6em"),
                                      tooltips=["sqrt(C_l) B_l (the paper's)", "B_l"])
        self.bound = w.FloatLogSlider(value=float(m.error_bound) if _real(m.error_bound)
                                      else 1e-5, base=10, min=-9, max=-2, step=0.25,
                                      description="error bound", continuous_update=False,
                                      style=style, readout_format=".1e")
        self.l_cut = w.IntSlider(value=m.l_cut if is_int(m.l_cut) else lmax // 2, min=-1,
                                 max=lmax, description="l_cut", continuous_update=False,
                                 style=style)
        lo, hi = (m.theta_range_arcmin if not m._basic_checks() else (1.0, 600.0))
        theta = float(m.theta_cut_arcmin) if _real(m.theta_cut_arcmin) else hi / 2
        self.theta = w.FloatSlider(value=min(max(theta, lo), hi), min=lo, max=hi,
                                   step=max((hi - lo) / 400, 0.01), description="θ_cut [′]",
                                   continuous_update=False, style=style, readout_format=".4g")
        self.cost = w.ToggleButtons(options=list(COST_MODELS), value=m.cost_model
                                    if m.cost_model in COST_MODELS else "measured",
                                    description="cost model",
                                    style=dict(style, button_width="6em"))
        self.backend = w.ToggleButtons(options=list(backends.BACKENDS), value=m.backend
                                       if m.backend in backends.BACKENDS else "cpu",
                                       description="backend",
                                       style=dict(style, button_width="6em"))
        self.optimize_button = w.Button(description="Optimize", icon="magic",
                                        tooltip="set l_cut and theta_cut to the cheapest split "
                                                "that meets the bound")
        self.figure = w.Output()
        self.map_figure = w.Output()
        self._syncing = False
        self.nside.observe(self.guarded(self._nside_changed), names="value")
        self.observe_values([self.fwhm, self.kernel, self.bound, self.l_cut, self.theta,
                             self.cost, self.backend], self._changed)
        self.optimize_button.on_click(self.guarded(lambda _b: self.optimize()))
        self.on_run(self.run)
        controls = w.HBox([w.VBox([self.fwhm, self.kernel, self.bound, self.nside]),
                           w.VBox([self.l_cut, self.theta, self.cost, self.backend])])
        self.children = [
            w.HTML("<b>Kernel split</b>: a harmonic part up to l_cut and a compact real-space "
                   "part within θ_cut; predicted and measured error and time"),
            controls, w.HBox([self.optimize_button, self.run_row()]), self.message,
            self.figure, self.numbers, self.map_figure]
        self.add_class("sphgpu-kernel-split-panel")
        self.guarded(self._refresh)()

    # -- events ---------------------------------------------------------------------------------
    def _nside_changed(self, change):
        """lmax follows nside (2 nside); the cut sliders take the new ranges."""
        self._syncing = True
        try:
            self.model.set(nside=change["new"], lmax=2 * change["new"])
            self._ranges()
        finally:
            self._syncing = False
        self._changed()

    def _ranges(self):
        m = self.model
        if m._basic_checks():
            return
        self.l_cut.max = m.lmax
        lo, hi = m.theta_range_arcmin
        # widen first, then narrow: a slider refuses min > max at every step
        self.theta.min = min(lo, self.theta.min)
        self.theta.max = max(hi, self.theta.max)
        self.theta.min, self.theta.max = lo, hi
        self.theta.step = max((hi - lo) / 400, 0.01)

    def _changed(self):
        if self._syncing:
            return
        self.model.set(fwhm_arcmin=self.fwhm.value, kernel=self.kernel.value,
                       error_bound=self.bound.value, l_cut=self.l_cut.value,
                       theta_cut_arcmin=self.theta.value, cost_model=self.cost.value,
                       backend=self.backend.value)
        self._refresh()

    def _refresh(self):
        # a live model shows its predictions at once (Run measures); else the base's message
        # or press-Run note
        if self.model.message or not self.model.live:
            super()._refresh()
        else:
            self._show()

    def stale_note(self):
        return f"nside {self.model.nside}: press Run to compute"

    def _show(self):
        m = self.model
        fig = m.figure()
        if fig is None:
            self.show_message(m.message)
            return
        self.show_message("" if m.split().predicted_error <= m.error_bound else
                          "the predicted error is above the bound: raise l_cut or theta_cut, "
                          "or press Optimize", "note")
        show_figure(self.figure, fig)
        self.numbers.value = numbers_html(m.numbers())
        mf = m.map_figure()
        if mf is not None and m.result.l_cut == m.l_cut:
            show_figure(self.map_figure, mf)
        else:
            self.map_figure.outputs = ()

    def _set_cuts_quietly(self, l_cut, theta_arcmin):
        self._syncing = True
        try:
            self.l_cut.value = int(l_cut)
            self.theta.value = min(max(float(theta_arcmin), self.theta.min), self.theta.max)
        finally:
            self._syncing = False

    def optimize(self):
        self.optimize_button.disabled = True
        try:
            plan = self.model.optimize(progress=self.report)
        finally:
            self.optimize_button.disabled = False
        if plan is None:
            self.show_message(self.model.message)
            return
        self._set_cuts_quietly(self.model.l_cut, self.model.theta_cut_arcmin)
        self.model.set(theta_cut_arcmin=self.theta.value)
        self._show()

    def run(self):
        r = self.model.run(progress=self.report)
        if r is None:
            self.show_message(self.model.message)
            return
        self._show()


def kernel_split_panel(**kw) -> KernelSplitPanel:
    """The kernel-split tuner. Keywords are :class:`KernelSplitModel`'s (nside, lmax,
    fwhm_arcmin, kernel, error_bound, l_cut, theta_cut_arcmin, cost_model, alpha, backend,
    seed, max_nside, live_max_nside)."""
    return KernelSplitPanel(KernelSplitModel(**kw))
