"""Transform explorer: synthesize a CMB sky from the shipped Planck 2018 C_l, analyse it back.

``TransformModel`` draws Gaussian a_lm with the Planck 2018 TT spectrum (``synalm``), applies a
Gaussian beam (``almxfl``), synthesizes a HEALPix map (``alm2map``) and measures the spectrum
back (``map2alm`` with ``iter`` Jacobi iterations, ``alm2cl``), timing both transforms on the
chosen backend. ``TransformPanel`` shows the map in a Mollweide view, input against recovered
spectrum, and the numbers. See :mod:`sphgpu.widgets._base` for the pattern.
"""

from __future__ import annotations

import dataclasses
import math
import time

import ipywidgets as w
import numpy as np

import sphgpu
from sphgpu import backends
from sphgpu.data import planck2018_cl

from ._base import (LRU, Panel, PanelModel, backend_options, default_backend, fmt_seconds, is_int,
                    is_real, new_figure, show_figure, toggle_buttons)
from .plots import gnomview, mollview, mollweide_x, spectrum_plot

__all__ = ["TransformModel", "TransformResult", "TransformPanel", "transform_panel"]

#: nside choices offered by the panel (sphgpu itself takes any nside >= 1): below 8 a sky has too
#: few modes (fewer than 300 at l >= 2) for its spectrum check to mean anything.
NSIDES = tuple(2**k for k in range(3, 13))
#: Largest nside each backend runs here by default: the CPU limit keeps Binder (1-2 GB, two
#: cores) within seconds; the NumPy reference is the readable specification, not a fast path.
MAX_NSIDE = {"cpu": 512, "cuda": 4096, "reference": 32}
#: Up to this nside a change of a control recomputes at once (well under a second on a CPU).
LIVE_MAX_NSIDE = 64
#: Largest band limit relative to nside: beyond 4 nside a HEALPix map cannot hold the modes.
LMAX_PER_NSIDE = 4
MAX_ITER = 10
#: The spectrum check uses the l where the beam keeps at least this fraction of the power
#: (b_l^2): beyond, C_hat holds mostly the transforms' rounding divided by a tiny b_l^2.
RATIO_MIN_BEAM2 = 1e-3


@dataclasses.dataclass
class TransformResult:
    """One synthesis + analysis. Arrays are float64 / complex128 NumPy arrays."""

    nside: int
    lmax: int
    backend: str               # the backend that ran
    map: np.ndarray            # (12 nside^2,) muK, HEALPix RING
    cl_model: np.ndarray       # (lmax+1,) input C_l b_l^2, muK^2
    cl_hat: np.ndarray         # (lmax+1,) recovered C_l, muK^2
    roundtrip_error: float     # |map2alm(alm2map(a)) - a| / |a|, relative L2
    synthesis_s: float         # alm2map wall time
    analysis_s: float          # map2alm (with iter) wall time
    iter: int
    beam2: np.ndarray          # (lmax+1,) b_l^2 of the beam applied

    @property
    def ratio_range(self) -> tuple[int, int]:
        """(first, last) l of the spectrum check: l >= 2, where the beam keeps at least
        :data:`RATIO_MIN_BEAM2` of the power and the map resolves the mode (l < 3 nside)."""
        ell = np.arange(self.lmax + 1)
        ok = (ell >= 2) & (self.beam2 >= RATIO_MIN_BEAM2) & (ell < 3 * self.nside) & (
            self.cl_model > 0)
        if not ok.any():
            return (2, 1)
        return (int(ell[ok][0]), int(ell[ok][-1]))

    @property
    def spectrum_ratio(self) -> tuple[float, float]:
        """(ratio, sigma): sum (2l+1) C_hat / (C b^2) / sum (2l+1) over :attr:`ratio_range`,
        1 within its cosmic variance sigma = sqrt(2 / sum (2l+1)); (nan, nan) when the range is
        empty (a beam wider than the sky the map holds)."""
        lo, hi = self.ratio_range
        if hi < lo:
            return (math.nan, math.nan)
        ell = np.arange(lo, hi + 1)
        modes = 2 * ell + 1
        ratio = self.cl_hat[lo:hi + 1] / self.cl_model[lo:hi + 1]
        return float(np.sum(modes * ratio) / modes.sum()), float(math.sqrt(2.0 / modes.sum()))

    def numbers(self) -> list[tuple[str, str]]:
        return [
            ("nside / pixels", f"{self.nside} / {self.map.size:,}"),
            ("lmax / a_lm", f"{self.lmax} / {(self.lmax + 1) * (self.lmax + 2) // 2:,}"),
            ("backend", self.backend),
            ("alm2map", fmt_seconds(self.synthesis_s)),
            (f"map2alm (iter={self.iter})", fmt_seconds(self.analysis_s)),
            ("map rms", f"{self.map.std():.2f} μK"),
            ("round-trip error of a_lm", f"{self.roundtrip_error:.2e}"),
            self._ratio_row(),
        ]

    def _ratio_row(self):
        lo, hi = self.ratio_range
        ratio, sigma = self.spectrum_ratio
        if hi < lo:
            return ("⟨C_hat / C b²⟩", "no ℓ ≥ 2 where the beam keeps signal")
        note = ("; lmax ≥ 3 nside: modes the map cannot hold alias into lower ℓ"
                if self.lmax >= 3 * self.nside else "")
        return (f"⟨C_hat / C b²⟩, ℓ {lo}–{hi}",
                f"{ratio:.3f} ± {sigma:.3f} (cosmic variance; b_ℓ² ≥ {RATIO_MIN_BEAM2:g}{note})")


class TransformModel(PanelModel):
    """State and computation of the transform explorer.

    Parameters
    ----------
    nside : int >= 1
        HEALPix resolution of the synthesized map (12 nside^2 pixels).
    lmax : int, optional
        Band limit, 2 to 4 nside (default 2 nside).
    fwhm_arcmin : float >= 0
        Gaussian beam applied to the a_lm, full width at half maximum in arcminutes.
    seed : int
        Seed of the sky realisation.
    iter : int, 0 to 10
        Jacobi iterations of map2alm (healpy's ``iter``).
    backend : {"cpu", "cuda", "reference"}, optional
        Default: ``SPHGPU_BACKEND`` if set, else "cuda" where a GPU is usable, else "cpu".
    max_nside : dict, optional
        Largest nside per backend (default :data:`MAX_NSIDE`); larger ones set ``message``.
    zoom_lon, zoom_lat : float, degrees
        Centre of the gnomonic zoom (a view setting: moving it recomputes nothing).
    zoom_width : float, degrees
        Width of the zoom, 1 to 90.
    live_max_nside : int
        Up to this nside the panel recomputes on every change (``live``).
    """

    PARAMS = ("nside", "lmax", "fwhm_arcmin", "seed", "iter", "backend", "zoom_lon", "zoom_lat",
              "zoom_width")

    def __init__(self, nside=32, lmax=None, fwhm_arcmin=60.0, seed=0, iter=3, backend=None, *,
                 zoom_lon=0.0, zoom_lat=0.0, zoom_width=30.0, max_nside=None,
                 live_max_nside=LIVE_MAX_NSIDE):
        super().__init__()
        self.zoom_lon, self.zoom_lat, self.zoom_width = zoom_lon, zoom_lat, zoom_width
        self.max_nside = dict(MAX_NSIDE, **(max_nside or {}))
        self.live_max_nside = live_max_nside
        self.nside = nside
        self.lmax = 2 * nside if lmax is None and isinstance(nside, int) else lmax
        self.fwhm_arcmin = fwhm_arcmin
        self.seed = seed
        self.iter = iter
        self.backend = default_backend() if backend is None else backend
        self.result: TransformResult | None = None
        self._synth = LRU(4)        # (nside, lmax, fwhm, seed, backend) -> (map, alm, seconds)
        self._analysis = LRU(8)     # + iter -> (cl_hat, roundtrip error, seconds)
        self.set()

    # -- validation ---------------------------------------------------------------------------
    def validate(self) -> str:
        if not isinstance(self.backend, str) or self.backend not in backends.BACKENDS:
            return f"backend must be one of {', '.join(backends.BACKENDS)}, not {self.backend!r}"
        if not is_int(self.nside) or self.nside < 1:
            return f"nside must be a whole number >= 1, not {self.nside!r}"
        limit = self.max_nside[self.backend]
        if self.nside > limit:
            return (f"nside {self.nside} is not allowed on the {self.backend} backend here "
                    f"(at most {limit}: about {_map_mb(self.nside):.0f} MB per map and long "
                    f"transforms); choose nside <= {limit} or another backend")
        table_lmax = planck2018_cl().shape[-1] - 1
        if not is_int(self.lmax) or not 2 <= self.lmax <= min(LMAX_PER_NSIDE * self.nside,
                                                                 table_lmax):
            top = min(LMAX_PER_NSIDE * self.nside, table_lmax)
            return (f"lmax must be a whole number from 2 to {top} for nside {self.nside} "
                    f"(at most {LMAX_PER_NSIDE} nside), not {self.lmax!r}")
        if not isinstance(self.fwhm_arcmin, (int, float)) or not 0 <= self.fwhm_arcmin <= 10800:
            return f"fwhm_arcmin must be from 0 to 10800 arcminutes, not {self.fwhm_arcmin!r}"
        if not is_int(self.iter) or not 0 <= self.iter <= MAX_ITER:
            return f"iter must be a whole number from 0 to {MAX_ITER}, not {self.iter!r}"
        if not is_int(self.seed) or self.seed < 0:
            return f"seed must be a whole number >= 0, not {self.seed!r}"
        if not is_real(self.zoom_lat) or not -90 <= self.zoom_lat <= 90:
            return f"zoom latitude must be from -90 to 90 degrees, not {self.zoom_lat!r}"
        if not is_real(self.zoom_lon):
            return f"zoom longitude must be a number of degrees, not {self.zoom_lon!r}"
        if not is_real(self.zoom_width) or not 1 <= self.zoom_width <= 90:
            return f"zoom width must be from 1 to 90 degrees, not {self.zoom_width!r}"
        try:
            backends.resolve(self.backend, "sht")
        except backends.BackendUnavailableError as exc:
            return f"the {self.backend} backend cannot run here: {exc}"
        return ""

    @property
    def live(self) -> bool:
        """True when the work is small enough to redo on every change of a control."""
        return (not self.message and self.nside <= self.live_max_nside
                and self.nside <= self.max_nside[self.backend])

    # -- computation --------------------------------------------------------------------------
    def run(self, progress=None) -> TransformResult | None:
        """Synthesize and analyse with the current settings (cached); None if invalid.

        progress : callable(fraction, text), optional
        """
        progress = progress or (lambda f, t="": None)
        self.result = None
        if not self.set():
            return None
        progress(0.0, "synthesis")
        key = (self.nside, self.lmax, float(self.fwhm_arcmin), self.seed, self.backend)
        with self.capture("synthesis"):
            sky, alm, t_syn = self._synth.get(key, self._synthesize)
        if self.message:
            return None
        progress(0.5, f"analysis, iter={self.iter}")
        with self.capture("analysis"):
            cl_hat, err, t_ana = self._analysis.get(key + (self.iter,),
                                                    lambda: self._analyse(sky, alm))
        if self.message:
            return None
        progress(1.0, "done")
        self.result = TransformResult(
            nside=self.nside, lmax=self.lmax, backend=self.backend, map=sky,
            cl_model=self._cl_model(), cl_hat=cl_hat, roundtrip_error=err,
            synthesis_s=t_syn, analysis_s=t_ana, iter=self.iter, beam2=self._beam() ** 2)
        return self.result

    def _beam(self):
        return sphgpu.gauss_beam(fwhm_arcmin=float(self.fwhm_arcmin), lmax=self.lmax)

    def _cl_model(self):
        return planck2018_cl(self.lmax) * self._beam() ** 2

    def _synthesize(self):
        alm = sphgpu.synalm(planck2018_cl(self.lmax), self.lmax, seed=self.seed)
        alm = sphgpu.almxfl(alm, self._beam())
        t0 = time.perf_counter()
        sky = sphgpu.alm2map(alm, self.nside, self.lmax, backend=self.backend)
        return sky, alm, time.perf_counter() - t0

    def _analyse(self, sky, alm):
        t0 = time.perf_counter()
        alm_hat = sphgpu.map2alm(sky, self.lmax, iter=self.iter, backend=self.backend)
        seconds = time.perf_counter() - t0
        err = float(np.linalg.norm(alm_hat - alm) / np.linalg.norm(alm))
        return sphgpu.alm2cl(alm_hat), err, seconds

    # -- views --------------------------------------------------------------------------------
    def figure(self):
        """Map (Mollweide, with the zoom's centre marked), its gnomonic zoom, and the spectra
        of the last result, as a matplotlib Figure (or None)."""
        r = self.result
        if r is None:
            return None
        fig = new_figure(13.0, 3.9)
        gs = fig.add_gridspec(1, 3, width_ratios=[1.5, 0.95, 1.15])
        ax = fig.add_subplot(gs[0], projection="mollweide")
        vmax = 3 * float(r.map.std()) or 1.0
        geom = sphgpu.RingGeometry.healpix(r.nside)
        style = dict(cmap="RdBu_r", vmin=-vmax, vmax=vmax)
        mesh = mollview(r.map, geom, ax, **style)
        ax.plot(mollweide_x(self.zoom_lon), np.deg2rad(self.zoom_lat), "s", mfc="none",
                mec="k", ms=9, mew=1.5)
        fig.colorbar(mesh, ax=ax, orientation="horizontal", shrink=0.6, pad=0.04,
                     label="ΔT [μK]")
        ax.set_title(f"nside {r.nside}, {float(self.fwhm_arcmin):g}′ beam, seed {self.seed}")
        zx = fig.add_subplot(gs[1])
        gnomview(r.map, geom, zx, lon_deg=float(self.zoom_lon), lat_deg=float(self.zoom_lat),
                 width_deg=float(self.zoom_width), npix=160, **style)
        zx.set_title(f"zoom on ({float(self.zoom_lon):g}°, {float(self.zoom_lat):g}°), "
                     f"{float(self.zoom_width):g}° wide")
        spectrum_plot(fig.add_subplot(gs[2]), r.cl_model, r.cl_hat)
        return fig


def _map_mb(nside: int) -> float:
    return 12 * nside**2 * 8 / 1e6


class TransformPanel(Panel):
    """The transform explorer's view: controls, Run, a figure and the numbers."""

    def __init__(self, model: TransformModel):
        super().__init__()
        self.model = model
        m = model
        style = {"description_width": "8.5em"}
        top = max(m.max_nside.values())
        nsides = [n for n in NSIDES if n <= top]
        nside = m.nside if is_int(m.nside) and m.nside >= 1 else nsides[0]
        # The controls show the model's settings, clamped to their ranges; an invalid
        # setting given to the factory stays in the model (and its message) until a
        # control is moved.
        self.nside = w.Dropdown(options=sorted(set(nsides) | {nside}), value=nside,
                                description="nside", style=style)
        self.lmax = w.IntSlider(value=m.lmax if is_int(m.lmax) else 2 * nside, min=2,
                                max=LMAX_PER_NSIDE * nside, description="lmax",
                                continuous_update=False, style=style)
        self.fwhm = w.FloatSlider(value=float(m.fwhm_arcmin), min=0.0, max=600.0, step=5.0,
                                  description="beam FWHM [′]", continuous_update=False,
                                  style=style)
        self.seed = w.IntSlider(value=m.seed, min=0, max=99, description="seed",
                                continuous_update=False, style=style)
        self.iter = w.IntSlider(value=m.iter, min=0, max=MAX_ITER, description="map2alm iter",
                                continuous_update=False, style=style)
        self.backend = toggle_buttons(backend_options(m.backend), m.backend, "backend",
                                      style["description_width"])
        self.zoom_lon = w.FloatSlider(value=float(m.zoom_lon), min=-180.0, max=180.0, step=5.0,
                                      description="zoom lon [°]", continuous_update=False,
                                      style=style)
        self.zoom_lat = w.FloatSlider(value=float(m.zoom_lat), min=-90.0, max=90.0, step=5.0,
                                      description="zoom lat [°]", continuous_update=False,
                                      style=style)
        self.zoom_width = w.FloatSlider(value=float(m.zoom_width), min=1.0, max=90.0, step=1.0,
                                        description="zoom width [°]", continuous_update=False,
                                        style=style)
        self.figure = w.Output()
        self._syncing = False
        self.nside.observe(self.guarded(self._nside_changed), names="value")
        self.observe_values([self.lmax, self.fwhm, self.seed, self.iter, self.backend],
                            self._changed)
        self.observe_values([self.zoom_lon, self.zoom_lat, self.zoom_width], self._zoomed)
        self.on_run(self.run)
        controls = w.HBox([w.VBox([self.nside, self.lmax, self.backend]),
                           w.VBox([self.fwhm, self.seed, self.iter]),
                           w.VBox([self.zoom_lon, self.zoom_lat, self.zoom_width])])
        self.children = [w.HTML("<b>Transform explorer</b>: a CMB sky from the Planck 2018 "
                                "spectrum through alm2map and back through map2alm"),
                         controls, self.run_row(), self.message, self.figure, self.numbers]
        self.add_class("sphgpu-transform-panel")
        self.guarded(self._refresh)()

    def _nside_changed(self, change):
        """Keep lmax in step with nside: the slider's range is 2..4 nside and a value at the
        usual 2 nside follows the new nside."""
        old, new = change["old"], change["new"]
        self._syncing = True
        try:
            self.lmax.max = max(LMAX_PER_NSIDE * new, 2)
            if self.lmax.value == 2 * old or self.lmax.value > self.lmax.max:
                self.lmax.value = max(2 * new, 2)
        finally:
            self._syncing = False
        self._changed()

    def _changed(self):
        if self._syncing:
            return
        m = self.model
        m.set(nside=self.nside.value, lmax=self.lmax.value, fwhm_arcmin=self.fwhm.value,
              seed=self.seed.value, iter=self.iter.value, backend=self.backend.value)
        self._refresh()

    def _zoomed(self):
        """The zoom is a view of the shown map: redraw without recomputing."""
        m = self.model
        m.set(zoom_lon=self.zoom_lon.value, zoom_lat=self.zoom_lat.value,
              zoom_width=self.zoom_width.value)
        if m.message:
            self.show_message(m.message)
        elif m.result is not None and self.figure.outputs:   # not while stale (press Run)
            show_figure(self.figure, m.figure())

    def stale_note(self):
        m = self.model
        return f"nside {m.nside} on {m.backend}: press Run to compute"


def transform_panel(**kw) -> TransformPanel:
    """The transform explorer. Keywords are :class:`TransformModel`'s (nside, lmax,
    fwhm_arcmin, seed, iter, backend, max_nside, live_max_nside)."""
    return TransformPanel(TransformModel(**kw))
