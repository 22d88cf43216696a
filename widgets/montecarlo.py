"""Monte Carlo panel: masked, beamed, noisy skies, their pseudo-spectra and decoupled
bandpowers, converging live.

``MonteCarloModel`` keeps a :class:`sphgpu.sims.MonteCarlo` (with ``bins``: MASTER bandpowers
of every simulation) per setting of nside, beam, mask cut, noise, seed and backend, and runs
it up to the number of simulations asked for (a larger number continues the same run:
finished simulations are never redrawn). ``MonteCarloPanel`` runs it in a background thread
and redraws, after each batch, the mean pseudo-spectrum and the mean decoupled bandpowers with
their error bars against the input, the mask's coupling matrix, both estimates' ratio to the
input per bin, the error of the mean against the number of simulations, and the throughput;
Stop ends the run with what it has. See :mod:`sphgpu.widgets._base` for the pattern.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import ipywidgets as w
import numpy as np

from sphgpu.data import planck2018_cl
from sphgpu.sims import MonteCarlo, latitude_cut_mask

from ._base import (LRU, USER_ERRORS, Panel, PanelModel, backend_options, backend_problem,
                    default_backend, figure_outputs, fit_descriptions, is_int, is_real,
                    new_figure, numbers_html, toggle_buttons, unknown_backend)
from .plots import coupling_image

__all__ = ["MonteCarloModel", "MonteCarloSettings", "MonteCarloResult", "MonteCarloPanel",
           "montecarlo_panel"]
#: the names sphgpu.widgets offers from this module; the package reads this line from the
#: source, since importing a panel module imports ipywidgets and matplotlib
_PACKAGE_EXPORTS = ("MonteCarloModel", "MonteCarloPanel", "montecarlo_panel")

NSIDES = (8, 16, 32, 64, 128, 256, 512)
#: largest nside per backend (a CPU simulation at nside 512 takes about a second)
MAX_NSIDE = {"cpu": 512, "reference": 16, "cuda": 2048}
MAX_SIMS = 100_000
#: width of the mask's cosine edge, degrees
APODIZATION_DEG = 5.0
#: the ratio to the model is averaged over l >= this (the mask couples the lowest l strongly)
RATIO_LMIN = 30


def bin_width(lmax: int) -> int:
    """Width of the panel's bandpower bins (from l = 2): about 16 bins, at least 4 multipoles
    each (narrower bins of a 60 degree cut make the binned coupling harder to invert).

    Parameters
    ----------
    lmax : int
        Band limit of the simulations.

    Returns
    -------
    int
    """
    return max(4, lmax // 16)


@dataclass(frozen=True)
class MonteCarloSettings:
    """The settings of a Monte Carlo run, as :class:`MonteCarloModel` takes them.

    Parameters
    ----------
    nsims : int
        Simulations wanted.
    nside : int
        HEALPix resolution; lmax = 2 nside.
    fwhm_arcmin : float
        Gaussian beam FWHM, arcminutes.
    cut_deg : float
        Half-width of the hidden band around the equator, degrees.
    noise_muK : float
        White noise per pixel, muK.
    seed : int
        Seed of the Monte Carlo.
    backend : str
        Backend of the transforms.
    """

    nsims: int
    nside: int
    fwhm_arcmin: float
    cut_deg: float
    noise_muK: float
    seed: int
    backend: str

    @property
    def sky(self) -> tuple:
        """Everything but ``nsims``: settings equal here share their simulations."""
        return (self.nside, self.fwhm_arcmin, self.cut_deg, self.noise_muK, self.seed,
                self.backend)


@dataclass(frozen=True)
class MonteCarloResult:
    """What the panel shows of a Monte Carlo, for its first ``settings.nsims`` simulations.

    Parameters
    ----------
    settings : MonteCarloSettings
        The settings of the run that made this result (not necessarily the model's now).
    lmax : int
        Band limit (2 nside).
    spectra : numpy.ndarray, float64, shape (nsims, lmax+1)
        Pseudo-C_l (TT) of the simulations done, muK^2.
    model : numpy.ndarray, float64, shape (lmax+1,)
        The simple expectation w2 (b_l^2 C_l + N_l), muK^2.
    input_cl : numpy.ndarray, float64, shape (lmax+1,)
        The input C_l, muK^2.
    w2 : float
        Mean squared mask weight.
    fsky : float
        Mean mask weight.
    ran : int
        Simulations computed by this run (0: all were done before).
    seconds : float
        Wall time of this run up to its last batch, the time spent drawing left out.
    history : tuple of (int, float)
        (simulations done, seconds) after each batch of this run.
    stopped : bool
        The run ended early (Stop).
    wall_seconds : float
        Wall time of this run from its start to its end (to this batch for a result drawn
        during the run), the redraws and progress updates during it included.
    bandpowers : numpy.ndarray, float64, shape (nsims, nbins), or None
        Decoupled TT bandpowers of the simulations (:attr:`sphgpu.sims.MonteCarlo.bandpowers`,
        noise bias removed, beam deconvolved), muK^2.
    expected : numpy.ndarray, float64, shape (nbins,), or None
        The binned input they estimate (``MonteCarlo.expected_bandpowers``), muK^2.
    bin_edges : numpy.ndarray, int64, shape (nbins + 1,), or None
        Bin b holds bin_edges[b] <= l < bin_edges[b + 1].
    ell_eff : numpy.ndarray, float64, shape (nbins,), or None
        Effective multipole of each bin.
    coupling : numpy.ndarray, float64, shape (lmax+1, lmax+1), or None
        The mask's mode-coupling matrix M^00[l, l'] (``MonteCarlo.coupling.blocks["00"]``).
    """

    settings: MonteCarloSettings
    lmax: int
    spectra: np.ndarray
    model: np.ndarray
    input_cl: np.ndarray
    w2: float
    fsky: float
    ran: int
    seconds: float
    history: tuple
    stopped: bool
    wall_seconds: float = 0.0
    bandpowers: np.ndarray | None = None
    expected: np.ndarray | None = None
    bin_edges: np.ndarray | None = None
    ell_eff: np.ndarray | None = None
    coupling: np.ndarray | None = None

    @property
    def nside(self) -> int:
        """HEALPix resolution."""
        return self.settings.nside

    @property
    def backend(self) -> str:
        """Backend of the transforms."""
        return self.settings.backend

    @property
    def target(self) -> int:
        """Simulations asked for."""
        return self.settings.nsims

    @property
    def nsims(self) -> int:
        """Simulations shown."""
        return int(self.spectra.shape[0])

    @property
    def rate(self) -> float:
        """Simulations per second of this run's computing, drawing left out (0 when it
        computed none)."""
        return self.ran / self.seconds if self.ran and self.seconds > 0 else 0.0

    @property
    def wall_rate(self) -> float:
        """Simulations per second of wall time, the redraws during the run included (0 when
        it computed none)."""
        return self.ran / self.wall_seconds if self.ran and self.wall_seconds > 0 else 0.0

    def error_of_mean(self, nsims=None) -> float:
        """The relative precision of the mean: median over l >= 2 of sigma_l / (sqrt(N) <C_l>).

        Parameters
        ----------
        nsims : int, optional
            Use the first N = ``nsims`` simulations (default: all).

        Returns
        -------
        float
            NaN with fewer than 2 simulations.
        """
        s = self.spectra[:self.nsims if nsims is None else nsims, 2:]
        if s.shape[0] < 2:
            return math.nan
        mean = s.mean(axis=0)
        ok = mean > 0
        return float(np.median(s.std(axis=0, ddof=1)[ok] / mean[ok]) / math.sqrt(s.shape[0]))

    def ratio(self) -> tuple[float, float]:
        """The mean pseudo-spectrum over the simple model, averaged over l >= RATIO_LMIN.

        Returns
        -------
        tuple of float
            (r, sigma): the 2l+1 weighted mean of C_hat_l / model_l and its error from the
            scatter of the simulations; (nan, nan) with fewer than 2 or lmax < RATIO_LMIN.
        """
        if self.nsims < 2 or self.lmax < RATIO_LMIN:
            return (math.nan, math.nan)
        ell = np.arange(RATIO_LMIN, self.lmax + 1)
        per_sim = (self.spectra[:, ell] / self.model[ell]) @ (2 * ell + 1) / (2 * ell + 1).sum()
        return float(per_sim.mean()), float(per_sim.std(ddof=1) / math.sqrt(self.nsims))

    def _ratio_bins(self):
        """Bins whose effective l is >= RATIO_LMIN, and their number of modes sum (2l+1)."""
        keep = np.flatnonzero(self.ell_eff >= RATIO_LMIN)
        modes = np.array([np.sum(2 * np.arange(self.bin_edges[b], self.bin_edges[b + 1]) + 1)
                          for b in keep], dtype=np.float64)
        return keep, modes

    def decoupled_ratio(self) -> tuple[float, float]:
        """The mean decoupled bandpowers over the binned input, averaged over the bins with
        effective l >= RATIO_LMIN; unbiased estimates make it consistent with 1.

        Returns
        -------
        tuple of float
            (r, sigma): the mean over simulations of the mode-weighted (sum over the bin of
            2l+1) mean of C_b / expected_b, and its error from the scatter of the
            simulations; (nan, nan) without bandpowers, with fewer than 2 simulations or no
            bin at l >= RATIO_LMIN.
        """
        if self.bandpowers is None or self.nsims < 2:
            return (math.nan, math.nan)
        keep, modes = self._ratio_bins()
        if keep.size == 0:
            return (math.nan, math.nan)
        per_sim = (self.bandpowers[:, keep] / self.expected[keep]) @ modes / modes.sum()
        return float(per_sim.mean()), float(per_sim.std(ddof=1) / math.sqrt(self.nsims))

    def numbers(self) -> list[tuple[str, str]]:
        """The rows of the panel's numbers table.

        Returns
        -------
        list of (str, str)
            (label, value) rows.
        """
        r, sigma = self.ratio()
        done = f"{self.nsims} of {self.target}" + (" (stopped: Run continues)"
                                                  if self.stopped else "")
        rate = (f"{self.rate:.3g} simulations/s ({self.ran} in {self.seconds:.2g} s of "
                f"computing, drawing left out)"
                if self.ran else "none run: these simulations were already done")
        rows = [("simulations", done), ("throughput", rate)]
        if self.ran:
            rows.append(("throughput on screen",
                         f"{self.wall_rate:.3g} simulations/s ({self.ran} in "
                         f"{self.wall_seconds:.2g} s of wall time, "
                         f"{max(0.0, self.wall_seconds - self.seconds):.2g} s of it redrawing "
                         f"during the run)"))
        rows += [
                ("nside / lmax", f"{self.nside} / {self.lmax}"), ("backend", self.backend),
                ("mask: f_sky / w2", f"{self.fsky:.3f} / {self.w2:.3f}")]
        err = self.error_of_mean()
        if not math.isnan(err):
            rows.append(("error of the mean (median over ℓ)", f"{100 * err:.2g} %"))
        rd, sd = self.decoupled_ratio()
        if not math.isnan(rd):
            dev = (rd - 1.0) / sd if sd > 0 else math.inf
            verdict = "consistent with 1" if abs(dev) < 3 else "not consistent with 1"
            rows.append((f"⟨decoupled C_b / binned input⟩, ℓ ≥ {RATIO_LMIN}",
                         f"{rd:.4f} ± {sd:.4f}"))
            rows.append(("decoupled (MASTER) bandpowers",
                         f"{abs(dev):.1f}σ {'above' if dev > 0 else 'below'} 1: {verdict}; "
                         f"the mask's coupling matrix is inverted over "
                         f"{len(self.ell_eff)} bins of {int(np.diff(self.bin_edges)[0])} ℓ"))
        if not math.isnan(r):
            rows.append((f"⟨C_hat / w2 (b² C + N)⟩, ℓ ≥ {RATIO_LMIN}",
                         f"{r:.4f} ± {sigma:.4f}"))
            rows.append(("why not exactly 1", self.ratio_note()))
        return rows

    def ratio_note(self) -> str:
        """What the ratio to w2 (b² C + N) can be expected to be, and why: a cut sky's
        pseudo-C_l is the true spectrum convolved with the mask's mode coupling, which
        w2 (b² C + N) only approximates; a full sky has no coupling.

        Returns
        -------
        str
            "" when there is no ratio (fewer than 2 simulations or lmax < RATIO_LMIN).
        """
        r, sigma = self.ratio()
        if math.isnan(r):
            return ""
        dev = (r - 1.0) / sigma if sigma > 0 else math.inf
        where = f"{abs(dev):.1f}σ {'above' if dev > 0 else 'below'} 1"
        if self.fsky >= 1.0:
            return (f"{where}: the full sky has no mode coupling, so only the scatter of "
                    f"{self.nsims} simulations separates the mean from the model")
        return (f"{where}: expected for a cut sky. The mask couples multipoles: the mean "
                f"pseudo-C_ℓ is the true spectrum convolved with the mask's coupling matrix, "
                f"which w2 (b² C + N) only approximates, and more simulations shrink the "
                f"error bar, not this offset; the decoupled bandpowers (MASTER: the "
                f"coupling inverted) remove it")


class MonteCarloModel(PanelModel):
    """State and computation of the Monte Carlo panel.

    Parameters
    ----------
    nsims : int
        Simulations wanted, 2 to 100000 (more continue the same run).
    nside : int
        HEALPix resolution; lmax = 2 nside.
    fwhm_arcmin : float
        Gaussian beam FWHM in arcminutes, 0 to 600.
    cut_deg : float
        Half-width of the hidden band around the equator, 0 to 60 degrees (5 degree cosine
        edge).
    noise_muK : float
        White noise per pixel in muK, >= 0.
    seed : int
        Seed of the Monte Carlo, >= 0.
    backend : {"cpu", "cuda", "reference", "auto"}, optional
        Default (or "auto"): ``SPHGPU_BACKEND`` if set, else "cuda" where a GPU is usable,
        else "cpu".
    max_nside : dict, optional
        Largest nside per backend (default :data:`MAX_NSIDE`).

    Attributes
    ----------
    result : MonteCarloResult or None
        The last run's result.
    running : MonteCarloSettings or None
        The settings of the run in progress (None when none is).

    Notes
    -----
    :meth:`run` may go on in another thread while :meth:`set` changes the settings: the run
    keeps the settings it started with (``running``) and its results say so (``settings``);
    a second run while one is going raises RuntimeError.
    """

    PARAMS = ("nsims", "nside", "fwhm_arcmin", "cut_deg", "noise_muK", "seed", "backend")

    def __init__(self, nsims=100, nside=32, fwhm_arcmin=60.0, cut_deg=20.0, noise_muK=20.0,
                 seed=0, backend=None, *, max_nside=None):
        super().__init__()
        self.nsims, self.nside, self.fwhm_arcmin = nsims, nside, fwhm_arcmin
        self.cut_deg, self.noise_muK, self.seed = cut_deg, noise_muK, seed
        self.backend = default_backend() if backend in (None, "auto") else backend
        self.max_nside = dict(MAX_NSIDE, **(max_nside or {}))
        self.result: MonteCarloResult | None = None
        self.running: MonteCarloSettings | None = None
        self._runs = LRU(4)         # settings.sky -> MonteCarlo (keeps its simulations)
        self._running_mc: MonteCarlo | None = None
        # a run in another thread reads the settings and the LRU while set() may change them
        self._lock = threading.RLock()
        self.set()

    def set(self, **params) -> bool:
        """Change settings and validate them (a run in progress keeps its own).

        Parameters
        ----------
        **params
            Any of ``PARAMS``.

        Returns
        -------
        bool
            True when the settings are valid; else ``message`` says why not.
        """
        with self._lock:
            return super().set(**params)

    @property
    def settings(self) -> MonteCarloSettings:
        """The current settings (as set, valid or not)."""
        return MonteCarloSettings(**self.params)

    def validate(self) -> str:
        """Check the settings.

        Returns
        -------
        str
            "" when they are valid, else one sentence saying what is wrong and what is allowed.
        """
        if problem := unknown_backend(self.backend):
            return problem
        if not is_int(self.nsims) or not 2 <= self.nsims <= MAX_SIMS:
            return f"nsims must be a whole number from 2 to {MAX_SIMS}, not {self.nsims!r}"
        if not is_int(self.nside) or self.nside < 2:
            return f"nside must be a whole number >= 2, not {self.nside!r}"
        limit = self.max_nside[self.backend]
        if self.nside > limit:
            return (f"nside {self.nside} is not allowed on the {self.backend} backend here "
                    f"(at most {limit}); choose a smaller nside or another backend")
        if not is_real(self.fwhm_arcmin) or not 0 <= self.fwhm_arcmin <= 600:
            return f"fwhm_arcmin must be from 0 to 600 arcminutes, not {self.fwhm_arcmin!r}"
        if not is_real(self.cut_deg) or not 0 <= self.cut_deg <= 60:
            return f"cut_deg must be from 0 to 60 degrees, not {self.cut_deg!r}"
        if not is_real(self.noise_muK) or self.noise_muK < 0:
            return f"noise_muK must be a number >= 0, not {self.noise_muK!r}"
        if not is_int(self.seed) or self.seed < 0:
            return f"seed must be a whole number >= 0, not {self.seed!r}"
        return backend_problem(self.backend, "sht")

    # -- the Monte Carlo of given settings -----------------------------------------------------
    def _montecarlo(self, s=None) -> MonteCarlo:
        s = s or self.settings

        def make():
            mask = latitude_cut_mask(s.nside, float(s.cut_deg),
                                     apodization_deg=APODIZATION_DEG if s.cut_deg else 0.0)
            return MonteCarlo(planck2018_cl(2 * s.nside), s.nside, 2 * s.nside,
                              fwhm_arcmin=float(s.fwhm_arcmin), mask=mask,
                              noise_sigma=float(s.noise_muK), seed=s.seed, backend=s.backend,
                              bins=bin_width(2 * s.nside))

        with self._lock:
            return self._runs.get(s.sky, make)

    @property
    def live(self) -> bool:
        """True when the simulations wanted are already done (showing them costs nothing)."""
        with self._lock:
            s = self.settings
            return (not self.message and s.sky in self._runs
                    and self._montecarlo(s).nsims >= s.nsims)

    def run(self, progress=None, on_batch=None) -> MonteCarloResult | None:
        """Run the simulations still missing up to ``nsims``, with the settings of now.

        Parameters
        ----------
        progress : callable(fraction, text), optional
            Called after each batch.
        on_batch : callable(MonteCarloResult), optional
            Called after each batch with the results so far (the panel redraws with it).

        Returns
        -------
        MonteCarloResult or None
            Built from the settings the run started with, even if :meth:`set` changed them
            meanwhile. None if those settings are invalid or sphgpu raises (``message`` says
            why, unless the settings changed meanwhile: it is about the settings of now).

        Raises
        ------
        RuntimeError
            When a run is already going on this model (in another thread).
        """
        progress = progress or (lambda f, t="": None)
        with self._lock:
            if self.running is not None:
                raise RuntimeError("a Monte Carlo run is already going on this model: wait "
                                   "for it to end, or stop() it")
            self.result = None
            if not self.set():
                return None
            s = self.settings
            with self.capture("Monte Carlo"):
                mc = self._montecarlo(s)
            if self.message:
                return None
            self.running, self._running_mc = s, mc
        start = mc.nsims
        history, t0 = [], time.perf_counter()
        shown = [0.0]           # seconds spent in the callbacks, left out of the throughput

        def batch(done, total):
            t = time.perf_counter()
            history.append((done, t - t0 - shown[0]))
            progress(done / s.nsims, f"{done} of {s.nsims} simulations")
            if on_batch is not None:
                on_batch(self._result(mc, s, start, history, stopped=False, wall=t - t0))
            shown[0] += time.perf_counter() - t

        error = ""
        try:
            mc.run(max(0, s.nsims - mc.nsims), progress=batch)
            done = min(mc.nsims, s.nsims)
            progress(done / s.nsims, f"{done} of {s.nsims} simulations")
            result = self._result(mc, s, start, history, stopped=mc.stopped,
                                  wall=time.perf_counter() - t0)
        except USER_ERRORS as exc:
            error = f"Monte Carlo: {exc}"
        finally:
            with self._lock:
                self.running = self._running_mc = None
        with self._lock:
            if error:
                if self.settings == s:
                    self.message = error
                return None
            self.result = result
        return result

    def stop(self) -> None:
        """End the run in progress (in another thread) after its current batch."""
        mc = self._running_mc
        if mc is not None:
            mc.stop()

    @staticmethod
    def _result(mc, s, start, history, stopped, wall=0.0):
        mask = mc.plan.mask
        w2 = float(np.mean(mask**2))
        cl = planck2018_cl(mc.plan.lmax)
        noise = float(s.noise_muK) ** 2 * 4 * math.pi / mc.plan.npix
        return MonteCarloResult(
            settings=s, lmax=mc.plan.lmax, spectra=mc.spectra[:s.nsims, 0],
            model=w2 * (mc.beam[0] ** 2 * cl + noise), input_cl=cl, w2=w2,
            fsky=float(np.mean(mask)), ran=max(0, min(mc.nsims, s.nsims) - start),
            seconds=history[-1][1] if history else 0.0, history=tuple(history),
            stopped=stopped, wall_seconds=wall, bandpowers=mc.bandpowers[:s.nsims, 0],
            expected=mc.expected_bandpowers[0], bin_edges=np.asarray(mc.bins.edges),
            ell_eff=mc.bins.ell_eff, coupling=mc.coupling.blocks["00"])

    def figure(self, result=None):
        """Mean D_l (pseudo) and mean decoupled D_b with their error bars against the input, the
        mask's coupling matrix, both estimates over the input per bin, and the error of the mean
        against the number of simulations.

        Parameters
        ----------
        result : MonteCarloResult, optional
            What to draw (default: the last result).

        Returns
        -------
        matplotlib.figure.Figure or None
            None without a result.
        """
        r = result or self.result
        if r is None or r.nsims == 0:
            return None
        fig = new_figure(10.5, 6.4)
        # fixed margins: the constrained layout of four axes took half of each redraw's time,
        # and a redraw of a live setting must answer within a second (tests/widgets)
        fig.set_layout_engine("none")
        (ax, mx), (qx, cx) = fig.subplots(2, 2, gridspec_kw={
            "width_ratios": [1.6, 1], "left": 0.08, "right": 0.98, "bottom": 0.08,
            "top": 0.93, "wspace": 0.28, "hspace": 0.5})
        ell = np.arange(2, r.lmax + 1)
        dl = ell * (ell + 1) / (2 * np.pi)
        mean = r.spectra[:, 2:].mean(axis=0)
        ax.plot(ell, dl * r.input_cl[2:], color="0.6", lw=1, label=r"input $C_\ell$")
        ax.plot(ell, dl * r.model[2:], "k--", lw=1,
                label=r"$w_2\,(b_\ell^2 C_\ell + N_\ell)$")
        if r.nsims >= 2:
            err = r.spectra[:, 2:].std(axis=0, ddof=1) / math.sqrt(r.nsims)
            ax.fill_between(ell, dl * (mean - err), dl * (mean + err), color="#b2182b",
                            alpha=0.3, lw=0)
        ax.plot(ell, dl * mean, color="#b2182b", lw=1, label=f"pseudo-$C_\\ell$, mean of {r.nsims}")
        if r.bandpowers is not None:
            lb = r.ell_eff
            db = lb * (lb + 1) / (2 * np.pi)
            ax.plot(lb, db * r.expected, "ks", ms=4, mfc="none", label="binned input")
            berr = (r.bandpowers.std(axis=0, ddof=1) / math.sqrt(r.nsims) if r.nsims >= 2
                    else np.zeros_like(lb))
            ax.errorbar(lb, db * r.bandpowers.mean(axis=0), yerr=db * berr, fmt="o", ms=3,
                        color="#2166ac", capsize=2, label="decoupled $C_b$ (MASTER)")
        ax.set_xlabel(r"$\ell$")
        ax.set_ylabel(r"$D_\ell$ [$\mu$K$^2$]")
        ax.legend(fontsize=7)
        if r.coupling is not None:
            coupling_image(mx, r.coupling)
        else:
            mx.set_axis_off()
        if r.bandpowers is not None and r.nsims >= 2:
            lb, e = r.ell_eff, r.bin_edges
            dec = r.bandpowers / r.expected
            qx.errorbar(lb, dec.mean(0), yerr=dec.std(0, ddof=1) / math.sqrt(r.nsims), fmt="o",
                        ms=3, color="#2166ac", capsize=2, label="decoupled / binned input")
            pse = np.stack([(r.spectra[:, a:b] / r.model[a:b]).mean(axis=1)
                            for a, b in zip(e[:-1], e[1:])], axis=1)
            qx.errorbar(lb + 0.15 * np.diff(e), pse.mean(0),
                        yerr=pse.std(0, ddof=1) / math.sqrt(r.nsims), fmt="s", ms=3,
                        color="#b2182b", capsize=2, label=r"pseudo / $w_2(b^2C+N)$")
            qx.axhline(1.0, color="k", lw=0.8)
            qx.set_xlabel(r"$\ell$")
            qx.set_ylabel("mean / expected, per bin")
            qx.legend(fontsize=7)
        else:
            qx.set_axis_off()
        ns = np.unique(np.geomspace(2, max(r.nsims, 2), 24).astype(int))
        ns = ns[ns <= r.nsims]
        if ns.size:
            errs = [r.error_of_mean(n) for n in ns]
            cx.loglog(ns, errs, "o-", ms=3, color="#2166ac", label="measured")
            cx.loglog(ns, errs[0] * np.sqrt(ns[0] / ns), "k:", lw=1, label=r"$\propto 1/\sqrt{N}$")
            cx.legend(fontsize=8)
        cx.set_xlabel("simulations N")
        cx.set_ylabel("error of the mean (median over ℓ)")
        cx.set_title(f"{r.rate:.3g} simulations/s computing\n{r.wall_rate:.3g}/s with the "
                     f"redraws" if r.ran else "already done", fontsize=9)
        return fig


class MonteCarloPanel(Panel):
    """The Monte Carlo panel's view: controls, Run and Stop, a live figure and the numbers.

    A run goes on in a background thread. What it draws (each batch's redraw, the progress,
    the final result) is shown only while the controls show the settings it runs with; a
    setting changed meanwhile takes effect when the run ends (or Stop ends it).
    """

    #: least seconds between redraws during a run (each redraw renders a PNG)...
    REDRAW_S = 0.5
    #: ...and at least this many times the last redraw's own seconds: on a slow machine a
    #: redraw took longer than a batch, and redrawing every batch made a run of 6 s of
    #: computing take 33 s on screen; drawing now takes at most a quarter of the wall time
    REDRAW_GAP = 3.0

    def __init__(self, model: MonteCarloModel):
        super().__init__()
        self.model = model
        m = model
        style = {"description_width": "8.5em"}
        nside = m.nside if is_int(m.nside) and m.nside >= 2 else NSIDES[1]
        self.nsims = w.BoundedIntText(value=m.nsims if is_int(m.nsims) else 100, min=2,
                                      max=MAX_SIMS, description="simulations", style=style)
        self.nside = w.Dropdown(options=sorted(set(NSIDES) | {nside}), value=nside,
                                description="nside", style=style)
        self.fwhm = w.FloatSlider(value=float(m.fwhm_arcmin), min=0.0, max=600.0, step=5.0,
                                  description="beam FWHM [′]", continuous_update=False,
                                  style=style)
        self.cut = w.FloatSlider(value=float(m.cut_deg), min=0.0, max=60.0, step=1.0,
                                 description="mask cut |b| < [°]", continuous_update=False,
                                 style=style)
        self.backend = toggle_buttons(backend_options(m.backend), m.backend, "backend",
                                      style["description_width"])
        self.stop_button = w.Button(description="Stop", icon="stop", disabled=True,
                                    tooltip="end the run after its current batch; Run continues")
        self.figure = w.Output()
        self._thread: threading.Thread | None = None
        self._running = False       # a background run is going (set before its thread starts)
        self._stop_asked = False    # Stop was pressed during this run
        # held while checking that a result belongs to the controls and drawing it, and while
        # a control change updates the model and the view: neither can come between the two
        self._lock = threading.RLock()
        self._drawn_at = 0.0
        self._draw_s = 0.0          # seconds the last redraw during a run took
        self.observe_values([self.nsims, self.nside, self.fwhm, self.cut, self.backend],
                            self._changed)
        self.run_button.on_click(self.guarded(lambda _b: self.start()))
        self.stop_button.on_click(self.guarded(lambda _b: self._stop()))
        # labels in full ("mask cut |b| < [°]" was cut to "mask cut |b| <...")
        fit_descriptions([self.nsims, self.nside, self.backend])
        fit_descriptions([self.fwhm, self.cut])
        controls = w.HBox([w.VBox([self.nsims, self.nside, self.backend]),
                           w.VBox([self.fwhm, self.cut])])
        self.children = [w.HTML("<b>Monte Carlo</b>: CMB skies through a beam, white noise and "
                                "a latitude cut; their pseudo-spectra and decoupled "
                                "bandpowers converge"),
                         controls, w.HBox([self.run_row(), self.stop_button]), self.message,
                         self.figure, self.numbers]
        self.add_class("sphgpu-montecarlo-panel")
        self.guarded(self._refresh)()

    def _changed(self):
        with self._lock:
            self.model.set(nsims=self.nsims.value, nside=self.nside.value,
                           fwhm_arcmin=self.fwhm.value, cut_deg=self.cut.value,
                           backend=self.backend.value)
            if not self._running:
                self._refresh()
                return
            # never a second run on the model: what is shown is cleared until the run ends
            self._stale()
            m = self.model
            if m.message:
                self.show_message(m.message)
            elif m.running == m.settings:       # back to the run's settings: it draws again
                self._drawn_at = 0.0
                self.show_message("running: the results return with the next batch", "note")
            else:
                self.show_message("a run with the earlier settings is going: these take "
                                  "effect when it ends (Stop ends it now)", "note")

    def stale_note(self):
        """The note shown while the results are not computed for these settings.

        Returns
        -------
        str
        """
        m = self.model
        return f"{m.nsims} simulations at nside {m.nside} on {m.backend}: press Run"

    def _shows(self, settings) -> bool:
        """Whether the controls show ``settings`` now (the caller holds the lock)."""
        return settings == self.model.settings

    def _show(self, result) -> bool:
        """Show ``result`` if it belongs to the settings of the controls; True if it did."""
        outputs = figure_outputs(self.model.figure(result))     # slow: outside the lock
        numbers = numbers_html(result.numbers())
        with self._lock:
            if not self._shows(result.settings):
                return False
            self.show_message("")
            self.figure.outputs = outputs
            self.numbers.value = numbers
            return True

    def _stop(self):
        self._stop_asked = True
        self.model.stop()

    def _progress(self, fraction, text=""):
        if self._stop_asked:    # pressed before the run had begun: end it after this batch
            self.model.stop()
        with self._lock:
            if self._shows(self.model.running):
                self.report(fraction, text)

    def _batch(self, result):
        now = time.perf_counter()
        if now - self._drawn_at >= max(self.REDRAW_S, self.REDRAW_GAP * self._draw_s):
            self._show(result)
            self._drawn_at = time.perf_counter()
            self._draw_s = self._drawn_at - now

    def _ended(self, result):
        """After a run: its result if the controls still show its settings, else the state
        of theirs (done simulations at once, or the note to press Run)."""
        shown = result is not None and self._show(result)
        with self._lock:
            self._running = False
            if not (shown and self._shows(result.settings)):
                self._refresh()

    def run(self):
        """Run in this thread (Run uses :meth:`start`): used when the simulations are done."""
        self._ended(self.model.run(progress=self._progress, on_batch=self._batch))

    def start(self):
        """Start the run in a background thread, so that Stop and the live redraws work."""
        with self._lock:
            if self._running:
                return
            self._running = True
            r = self.model.result
            if r is not None and r.stopped and self._shows(r.settings):
                # the numbers said "stopped: Run continues": no longer true once it does
                self.numbers.value = ""
                self.show_message("running: the results return with the next batch", "note")
        self._stop_asked = False
        self.run_button.disabled, self.stop_button.disabled = True, False
        self._drawn_at = 0.0

        def work():
            try:
                self.run()
            finally:
                self._running = False   # also after a bug in run(): Run works again
                self.run_button.disabled, self.stop_button.disabled = False, True

        self._thread = threading.Thread(target=self.guarded(work), daemon=True)
        self._thread.start()

    def wait(self, timeout=None) -> bool:
        """Wait for a started run to end.

        Parameters
        ----------
        timeout : float, optional
            Seconds to wait at most (default: until it ends).

        Returns
        -------
        bool
            True when no run is going on.
        """
        if self._thread is not None:
            self._thread.join(timeout)
        return self._thread is None or not self._thread.is_alive()


def montecarlo_panel(**kw) -> MonteCarloPanel:
    """The Monte Carlo panel.

    Parameters
    ----------
    **kw
        :class:`MonteCarloModel`'s keywords (nsims, nside, fwhm_arcmin, cut_deg, noise_muK,
        seed, backend, max_nside).

    Returns
    -------
    MonteCarloPanel
    """
    return MonteCarloPanel(MonteCarloModel(**kw))
