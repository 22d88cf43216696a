"""Transform explorer: synthesize a polarized CMB sky from the shipped Planck 2018 C_l, analyse
it back.

``TransformModel`` draws Gaussian T, E, B a_lm with the Planck 2018 TT, EE, BB, TE spectra
(``synalm``), applies a Gaussian beam with its polarized columns (``gauss_beam(pol=True)``,
``almxfl``), synthesizes I, Q, U HEALPix maps (``alm2map``) and measures the six spectra back
(``map2alm`` with ``iter`` Jacobi iterations, ``alm2cl``), timing both transforms on the chosen
backend. ``TransformPanel`` shows one map (T, Q, U, or the E-only / B-only sky) in a Mollweide
view, one input against recovered spectrum (TT, EE, BB or TE), and the numbers. See
:mod:`sphgpu.widgets._base` for the pattern.

lmax follows nside (2 nside) until the user moves its slider, which pins it; the "pin lmax" box
shows the pin and releases it, and a pinned lmax outside a new nside's range is clamped with a
note. A map of 12 nside^2 pixels holds l < 3 nside: the numbers average those l only, and at
lmax >= 3 nside they say that the power above has aliased into them.

"Open a map" replaces the simulated sky by a HEALPix FITS file (a path or an uploaded file,
read by :func:`sphgpu.io.read_sky`): the same maps, zoom and spectra, measured from the file
(``map2alm`` with ``iter``, ``alm2cl``), against the Planck model times the beam set by the
slider. A file that is not a HEALPix map gives a message naming it.

A mask (``mask``: a galactic cut |b| < ``cut_deg`` or WMAP's analysis mask, apodized) cuts the
sky: the panel then shows the MASTER bandpowers of the cut sky (:mod:`sphgpu.master`: the
pseudo-spectra of the masked maps decoupled by the mask's binned, inverted coupling matrices of
spins (0, 0), (0, 2) and (2, 2), in bins of ``bin_width`` multipoles; B purified with
``purify_b``) against the binned input, and the coupling matrix as a picture: TT, EE, BB and
TE against the input, EB and TB against zero (the input has none), each with approximate
error bars. With ``purify_b`` the E-only part of the sky is purified too: its BB (zero for an
exact pure estimator) is drawn beside the BB bandpowers, and a note names the bins where it
exceeds the error bars, so that a window too sharp for the nside (WMAP's mask below nside 64)
is said, not shown as a result. An opened map with UNSEEN pixels is always cut by its seen
pixels: with ``mask="none"`` they are the (binary) mask.
"""

from __future__ import annotations

import dataclasses
import html
import io
import math
import time
import warnings

import ipywidgets as w
import numpy as np

import sphgpu
from sphgpu import master
from sphgpu.data import planck2018_cl

from ._base import (LRU, USER_ERRORS, Panel, PanelModel, backend_options, backend_problem,
                    default_backend, first_call, fmt_call_seconds, is_int, is_real, new_figure,
                    numbers_html, show_figure, toggle_buttons, unknown_backend)
from .plots import (FONT, bandpower_plot, coupling_image, gnomview, mollview, mollweide_x,
                    spectrum_plot)

__all__ = ["TransformModel", "TransformResult", "TransformPanel", "transform_panel"]
#: the names sphgpu.widgets offers from this module; the package reads this line from the
#: source, since importing a panel module imports ipywidgets and matplotlib
_PACKAGE_EXPORTS = ("TransformModel", "TransformPanel", "transform_panel")

#: nside choices offered by the panel (sphgpu itself takes any nside >= 1). From 16 up the
#: spectrum checks' cosmic variance is at most 0.043, so 0.8-1.25 is over 4.5 sigma; at nside 8 it
#: is 0.085 and 1 to 2 skies in 100 fall outside by chance (TT, EE; measured over seeds 0-99).
NSIDES = tuple(2**k for k in range(4, 13))
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
#: Maps the panel shows: I (T), Q, U of the polarized sky, and the E-only and B-only skies
#: (the E or B a_lm alone synthesized as a spin-0 field, the usual picture of E and B modes).
FIELDS = ("T", "Q", "U", "E", "B")
#: Rows of anafast's answer for an I, Q, U map (healpy's order).
SPECTRA = ("TT", "EE", "BB", "TE", "EB", "TB")
#: Spectra the panel plots (EB and TB are zero in the input; they stay in the result).
SHOWN_SPECTRA = SPECTRA[:4]
#: Spectra with a ratio check: the auto spectra (TE changes sign, a ratio would divide by ~0).
RATIO_SPECTRA = SPECTRA[:3]
#: Masks offered: none (the full sky), a galactic cut |b| < cut_deg, WMAP's 7-year temperature
#: analysis mask (nside 32, shipped in sphgpu.io.sky) moved to the explorer's nside.
MASKS = ("none", "galactic", "WMAP")
#: Apodization of each mask (NaMaster's kinds, sphgpu.master.apodize_mask), degrees and kind.
#: Pure B needs more than a window that vanishes with its derivative at the edge: HEALPix's
#: quadrature of the window's products with the sky must hold, so the window's spectrum must
#: fall fast. "C2" tapers (a kink where the taper meets 1, distances between pixel centres)
#: keep a power-law tail, which WMAP's many point-source holes make large: with "C2" 5 deg the
#: E-only part of the sky leaked into pure BB up to 7.7 sigma of the BB error bars at nside 64
#: (3 of 15 bins beyond 1 sigma, 3 skies, beam 0 and 60'); "Smooth" 1 deg (a Gaussian, whose
#: spectrum falls as exp(-l^2 sigma^2 / 2)) kept it below 0.71 sigma at nside 64 and 0.03 at
#: 128, for f_sky_eff 0.227 instead of 0.255 (Smooth 1.5 deg: 0.09 sigma, f_sky_eff 0.080). At
#: nside 16 and 32 (pixels of 3.7 and 1.8 deg) C2 5 deg, Smooth 1 and 1.5 deg all leaked 6.3
#: sigma or more in some bin, and wider Gaussians grow WMAP's holes over most of the sky
#: (f_sky_eff 0.05 with Smooth 2 deg at nside 32); the panel then says so (LEAK_MAX_SIGMA).
#: The galactic cut's "C2"
#: 10 deg edge, smooth and long, leaked at most 0.12 sigma (nside 16 to 128, cuts 10 to 40 deg).
MASK_APODIZATION_DEG = {"galactic": 10.0, "WMAP": 1.0}
MASK_APODIZATION_TYPE = {"galactic": "C2", "WMAP": "Smooth"}
#: Pure B is called unreliable when the E-only part of the sky, purified and decoupled, gives
#: a BB bandpower beyond this many of the BB bandpowers' error bars (:attr:`TransformResult.sigma`).
LEAK_MAX_SIGMA = 1.0
#: Spectra with decoupled bandpowers, rows of :attr:`TransformResult.bandpowers`: TT from the
#: spin (0, 0) coupling, EE, EB, BB from (2, 2), TE and TB from (0, 2). The auto spectra get a
#: ratio to the input in the numbers; the cross spectra (TE changes sign, EB and TB are zero
#: in the input) a chi-square against what they estimate.
BANDPOWER_SPECTRA = SPECTRA
CROSS_SPECTRA = SPECTRA[3:]
MAX_BIN_WIDTH = 64
_FIELD_LABEL = {"T": "ΔT [μK]", "Q": "Q [μK]", "U": "U [μK]",
                "E": "E-mode sky (a_E alone, spin 0) [μK]",
                "B": "B-mode sky (a_B alone, spin 0) [μK]"}


@dataclasses.dataclass
class TransformResult:
    """One polarized synthesis + analysis, and the view of it (``field``, ``spectrum``).
    Arrays are float64 NumPy arrays; spectra rows follow :data:`SPECTRA`."""

    nside: int
    lmax: int
    backend: str               # the backend that ran
    maps: np.ndarray           # (3, 12 nside^2) I, Q, U in muK, HEALPix RING
    eb_maps: np.ndarray        # (2, 12 nside^2) E-only and B-only skies (spin 0), muK
    cl_model: np.ndarray       # (6, lmax+1) input TT, EE, BB, TE (times beams), EB, TB = 0; muK^2
    cl_hat: np.ndarray         # (6, lmax+1) recovered spectra (anafast's rows), muK^2
    roundtrip_error: float     # |map2alm(alm2map(a)) - a| / |a| over T, E, B, relative L2, over
    #                            the l the map holds (l < 3 nside; see held_lmax)
    synthesis_s: float         # alm2map (T, E, B -> I, Q, U) wall time
    analysis_s: float          # map2alm (I, Q, U -> T, E, B, with iter) wall time
    iter: int
    beam: np.ndarray           # (lmax+1, 4) b_l applied: gauss_beam's T, E, B, TE columns
    field: str = "T"           # the map shown, one of FIELDS
    spectrum: str = "TT"       # the spectrum shown, one of SHOWN_SPECTRA
    fwhm_arcmin: float = 0.0   # the beam and seed the sky was drawn with
    seed: int = 0
    synthesis_first: bool = False   # the panel's first alm2map / map2alm on this backend and
    analysis_first: bool = False    # size in this process (compilation and tuning inside)
    source: str = ""           # the file the maps were read from ("": a simulated sky)
    f_sky: float = 1.0         # fraction of pixels that are not UNSEEN
    # -- the cut sky (all None / "" without a mask) --
    mask: str = "none"         # the mask's name: "galactic |b| < 20°", "WMAP", "seen pixels"
    window: np.ndarray | None = None      # (12 nside^2,) float64 in [0, 1]: the mask applied
    bins: object = None        # sphgpu.master.Bins over l = 0..held_lmax
    bandpowers: np.ndarray | None = None  # (6, nbins) decoupled TT, EE, BB, TE, EB, TB
    #                                       (rows of SPECTRA), muK^2
    expected: np.ndarray | None = None    # (6, nbins) the input times b_l^2 through the
    #                                       workspaces' bandpower windows (bin_theory), muK^2
    binned: np.ndarray | None = None      # (6, nbins) the input times b_l^2 averaged over each
    #                                       bin alone (Bins.bin_cell), muK^2
    sigma: np.ndarray | None = None       # (6, nbins) approximate one-sigma scatter of each
    #                                       bandpower, muK^2 (:func:`_bandpower_sigma`)
    leak: np.ndarray | None = None        # (nbins,) with pure B: the pure BB bandpowers of
    #                                       the sky's E alone (E-to-B leakage), muK^2
    coupling: dict | None = None          # spectrum -> (held_lmax+1,)*2 block M[l, l'] coupling
    #                                       it to itself ("00", "++", "++" or pure "pp", "02",
    #                                       "++" or pure "+p", "02" or pure "0p")
    purified: bool = False     # BB is the pure-B estimate (Smith 2006)
    bandpower_note: str = ""   # why there are no bandpowers, or why B was not purified

    @property
    def held_lmax(self) -> int:
        """Largest l the numbers average over: lmax, or 3 nside - 1 when lmax reaches beyond
        what the map holds (a HEALPix map of 12 nside^2 pixels cannot hold l >= 3 nside: their
        power aliases into lower l)."""
        return min(self.lmax, 3 * self.nside - 1)

    @property
    def aliased(self) -> bool:
        """True when the band limit reaches l >= 3 nside, which the map cannot hold."""
        return self.lmax >= 3 * self.nside

    @property
    def map(self) -> np.ndarray:
        """The map shown, (12 nside^2,) muK."""
        i = FIELDS.index(self.field)
        return self.maps[i] if i < 3 else self.eb_maps[i - 3]

    def ratio_range_of(self, spec: str = "TT") -> tuple[int, int]:
        """(first, last) l of the check of an auto spectrum ("TT", "EE" or "BB"): l >= 2, where
        its beam keeps at least :data:`RATIO_MIN_BEAM2` of the power and the map resolves the
        mode (l < 3 nside); (2, 1) when there is no such l."""
        i = SPECTRA.index(spec)
        ell = np.arange(self.lmax + 1)
        ok = (ell >= 2) & (self.beam[:, i] ** 2 >= RATIO_MIN_BEAM2) & (ell < 3 * self.nside) & (
            self.cl_model[i] > 0)
        if not ok.any():
            return (2, 1)
        return (int(ell[ok][0]), int(ell[ok][-1]))

    def ratio_of(self, spec: str = "TT") -> tuple[float, float]:
        """(ratio, sigma): sum (2l+1) C_hat / (C b^2) / sum (2l+1) over :meth:`ratio_range_of`,
        1 within its cosmic variance sigma = sqrt(2 / sum (2l+1)); (nan, nan) when the range is
        empty (a beam wider than the sky the map holds)."""
        lo, hi = self.ratio_range_of(spec)
        if hi < lo:
            return (math.nan, math.nan)
        i = SPECTRA.index(spec)
        modes = 2 * np.arange(lo, hi + 1) + 1
        ratio = self.cl_hat[i, lo:hi + 1] / self.cl_model[i, lo:hi + 1]
        return float(np.sum(modes * ratio) / modes.sum()), float(math.sqrt(2.0 / modes.sum()))

    @property
    def ratio_range(self) -> tuple[int, int]:
        """:meth:`ratio_range_of` for TT."""
        return self.ratio_range_of("TT")

    @property
    def spectrum_ratio(self) -> tuple[float, float]:
        """:meth:`ratio_of` for TT."""
        return self.ratio_of("TT")

    @property
    def fsky_eff(self) -> float:
        """w2^2 / w4 of the mask (the full sky: 1), the sky fraction whose modes the cut sky's
        bandpowers are worth: their cosmic variance is that of a full sky over it."""
        if self.window is None:
            return 1.0
        return float(np.mean(self.window**2) ** 2 / np.mean(self.window**4))

    def decoupled_bins_of(self, spec: str = "TT") -> np.ndarray:
        """Indices of the bins whose multipoles all lie in :meth:`ratio_range_of` (for a cross
        spectrum XY, in those of XX and of YY) with a positive expected bandpower (auto
        spectra) or error (cross spectra); int64, empty without bandpowers."""
        if self.bandpowers is None:
            return np.zeros(0, dtype=np.int64)
        i = BANDPOWER_SPECTRA.index(spec)
        if spec in CROSS_SPECTRA:
            (lo1, hi1), (lo2, hi2) = (self.ratio_range_of(spec[0] * 2),
                                      self.ratio_range_of(spec[1] * 2))
            lo, hi, positive = max(lo1, lo2), min(hi1, hi2), self.sigma[i] > 0
        else:
            (lo, hi), positive = self.ratio_range_of(spec), self.expected[i] > 0
        e = np.asarray(self.bins.edges)
        return np.flatnonzero((e[:-1] >= lo) & (e[1:] - 1 <= hi) & positive)

    def decoupled_chi2_of(self, spec: str = "TE") -> tuple[float, int]:
        """(chi2, n): sum over the n bins of :meth:`decoupled_bins_of` of ((C_b - expected) /
        sigma)^2 with :attr:`sigma` (expected: the input through the bandpower windows, zero
        for EB and TB); (nan, 0) without bandpowers or bins. About n when the bandpowers
        scatter as :func:`_bandpower_sigma` approximates."""
        keep = self.decoupled_bins_of(spec)
        if keep.size == 0:
            return (math.nan, 0)
        i = BANDPOWER_SPECTRA.index(spec)
        pull = (self.bandpowers[i, keep] - self.expected[i, keep]) / self.sigma[i, keep]
        return float(pull @ pull), int(keep.size)

    def decoupled_ratio_of(self, spec: str = "TT") -> tuple[float, float]:
        """(ratio, sigma): the mode-weighted (sum over the bin of 2l+1) mean of decoupled /
        expected over :meth:`decoupled_bins_of`, and its cosmic variance on the cut sky,
        sigma = sqrt(2 / (fsky_eff sum (2l+1))) (an approximation: the bins' correlations and
        the scatter that leaked E adds to standard B are left out); (nan, nan) without
        bandpowers or bins."""
        keep = self.decoupled_bins_of(spec)
        if keep.size == 0:
            return (math.nan, math.nan)
        e = np.asarray(self.bins.edges)
        modes = np.array([np.sum(2 * np.arange(e[b], e[b + 1]) + 1) for b in keep], float)
        i = BANDPOWER_SPECTRA.index(spec)
        ratio = self.bandpowers[i, keep] / self.expected[i, keep]
        return (float(modes @ ratio / modes.sum()),
                float(math.sqrt(2.0 / (self.fsky_eff * modes.sum()))))

    def _bandpower_rows(self):
        if self.bandpowers is None:
            return [("decoupled bandpowers", self.bandpower_note)] if self.bandpower_note else []
        e = np.asarray(self.bins.edges)
        rows = [("mask: f_sky / w2² / w4",
                 f"{self.mask}: {float(np.mean(self.window > 0)):.3f} / {self.fsky_eff:.3f}; "
                 f"{self.bins.nbins} bins of {int(e[1] - e[0])} ℓ from ℓ {int(e[0])}")]
        for spec in RATIO_SPECTRA:
            label = f"{spec} decoupled: ⟨C_b / binned input⟩"
            keep = self.decoupled_bins_of(spec)
            if keep.size == 0:
                rows.append((label, "no whole bin where the beam keeps signal"))
                continue
            ratio, sigma = self.decoupled_ratio_of(spec)
            what = ""
            if spec == "BB":
                what = ("; pure B" if self.purified else
                        "; standard B: MASTER takes the leaked E out of its mean, not out of "
                        "its scatter (tick purify B)")
            rows.append((f"{label}, ℓ {int(e[keep[0]])}–{int(e[keep[-1] + 1] - 1)}",
                         f"{ratio:.3f} ± {sigma:.3f} (≈ cosmic variance of the cut sky: a full "
                         f"sky's over w2²/w4, leakage and bin correlations left out{what})"))
        for spec in CROSS_SPECTRA:
            rows.append(self._chi2_row(spec))
        if self.bandpower_note:
            rows.append(("note", self.bandpower_note))
        return rows

    def _chi2_row(self, spec):
        """The numbers row of a cross spectrum's decoupled bandpowers: chi-square against
        what they estimate (TE: the input through the windows; EB, TB: zero)."""
        against = "expected" if spec == "TE" else "0 (none in the input)"
        label = f"{spec} decoupled against {against}: χ² / bins"
        chi2, n = self.decoupled_chi2_of(spec)
        if n == 0:
            return (label, "no whole bin where the beams keep signal")
        e = np.asarray(self.bins.edges)
        keep = self.decoupled_bins_of(spec)
        return (f"{label}, ℓ {int(e[keep[0]])}–{int(e[keep[-1] + 1] - 1)}",
                f"{chi2:.1f} / {n} (≈ {n} ± {math.sqrt(2 * n):.1f} if consistent; approximate "
                "errors: the Gaussian covariance of the pseudo-C_ℓ, narrow-kernel "
                "approximation, through the inverse coupling)")

    def numbers(self) -> list[tuple[str, str]]:
        return self._sky_numbers() + self._bandpower_rows()

    def _sky_numbers(self) -> list[tuple[str, str]]:
        if self.source:
            return [
                ("map file", self.source),
                ("nside / pixels", f"{self.nside} / {self.maps.shape[-1]:,} × I, Q, U"),
                ("sky seen (not UNSEEN)", f"{self.f_sky:.1%}"),
                ("backend", self.backend),
                ("read_map, one call", f"{self.synthesis_s:.3f} s"),
                (f"map2alm (iter={self.iter}), one call, NumPy in and out",
                 fmt_call_seconds(self.analysis_s, self.analysis_first)),
                (f"map rms ({self.field})", f"{_seen_rms(self.map):.3g} μK"),
            ] + [self._ratio_row(spec) for spec in RATIO_SPECTRA]
        return [
            ("nside / pixels", f"{self.nside} / {self.maps.shape[-1]:,} × I, Q, U"),
            ("lmax / a_lm",
             f"{self.lmax} / {(self.lmax + 1) * (self.lmax + 2) // 2:,} × T, E, B"),
            ("backend", self.backend),
            ("alm2map (T, E, B → I, Q, U), one call, NumPy in and out",
             fmt_call_seconds(self.synthesis_s, self.synthesis_first)),
            (f"map2alm (iter={self.iter}), one call, NumPy in and out",
             fmt_call_seconds(self.analysis_s, self.analysis_first)),
            (f"map rms ({self.field})", f"{self.map.std():.3g} μK"),
            (f"round-trip error of a_lm, ℓ 0–{self.held_lmax}",
             f"{self.roundtrip_error:.2e}" + (
                 f" (ℓ ≥ {3 * self.nside} left out: the map cannot hold them)"
                 if self.aliased else "")),
        ] + [self._ratio_row(spec) for spec in RATIO_SPECTRA]

    def _ratio_row(self, spec):
        if self.source:
            label = f"{spec}: ⟨C_hat / f_sky / C b²⟩"
            lo, hi = self.ratio_range_of(spec)
            if hi < lo:
                return (label, "no ℓ ≥ 2 where the beam keeps signal")
            ratio, _ = self.ratio_of(spec)
            return (f"{label}, ℓ {lo}–{hi}",
                    f"{ratio / self.f_sky:.3f} (the Planck 2018 model times the beam slider's "
                    "b_ℓ²; pseudo-spectrum over f_sky)")
        # TT keeps the bare label (the browser test and older notebooks read it by that name).
        label = "⟨C_hat / C b²⟩" if spec == "TT" else f"{spec}: ⟨C_hat / C b²⟩"
        lo, hi = self.ratio_range_of(spec)
        ratio, sigma = self.ratio_of(spec)
        if hi < lo:
            return (label, "no ℓ ≥ 2 where the beam keeps signal")
        if self.aliased:
            # the l shown are held, but the power of l >= 3 nside has aliased into them (and
            # E into B): the ratio measures that aliasing, not C_hat against C
            return (f"{label}, ℓ {lo}–{hi}",
                    f"{ratio:.3f}, not an estimate of 1 ± {sigma:.3f}: lmax {self.lmax} ≥ "
                    f"3 nside = {3 * self.nside}, whose power aliases into every lower ℓ; "
                    f"lmax < {3 * self.nside} measures the spectrum")
        return (f"{label}, ℓ {lo}–{hi}",
                f"{ratio:.3f} ± {sigma:.3f} (cosmic variance; b_ℓ² ≥ {RATIO_MIN_BEAM2:g})")


class TransformModel(PanelModel):
    """State and computation of the transform explorer.

    Parameters
    ----------
    nside : int >= 1
        HEALPix resolution of the synthesized map (12 nside^2 pixels).
    lmax : int, optional
        Band limit, 2 to 4 nside. Left out, it follows nside (2 nside, also after later
        changes of nside); given, or set later through ``set(lmax=...)``, it is pinned:
        a change of nside keeps it, clamped to the new nside's range with a ``note``.
    lmax_pinned : bool, optional
        Whether lmax stays when nside changes (default: whether ``lmax`` was given);
        ``set(lmax_pinned=False)`` releases it to 2 nside.
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
    field : {"T", "Q", "U", "E", "B"}
        The map shown (a view setting): I, Q or U of the polarized sky, or the E-only /
        B-only sky.
    spectrum : {"TT", "EE", "BB", "TE"}
        The spectrum plotted (a view setting).
    live_max_nside : int
        Up to this nside the panel recomputes on every change (``live``).
    mask : {"none", "galactic", "WMAP"}
        The cut sky: none (the full sky), |b| < ``cut_deg`` or WMAP's analysis mask, each
        apodized (:data:`MASK_APODIZATION_TYPE`, :data:`MASK_APODIZATION_DEG`: "C2" 10° for
        the galactic cut, "Smooth" 1° for WMAP's mask). With a mask (or an opened map with
        UNSEEN pixels) the result holds decoupled TT, EE, BB, TE, EB, TB bandpowers.
    cut_deg : float, degrees, 0 < cut_deg < 90
        Half-width of the galactic cut.
    bin_width : int, 1 to 64
        Multipoles per bandpower bin (from l = 2).
    purify_b : bool
        BB bandpowers of pure B (Smith 2006) instead of the standard pseudo-B.
    """

    PARAMS = ("nside", "lmax", "lmax_pinned", "fwhm_arcmin", "seed", "iter", "backend",
              "zoom_lon", "zoom_lat", "zoom_width", "field", "spectrum", "mask", "cut_deg",
              "bin_width", "purify_b")

    def __init__(self, nside=32, lmax=None, fwhm_arcmin=60.0, seed=0, iter=3, backend=None, *,
                 lmax_pinned=None, zoom_lon=0.0, zoom_lat=0.0, zoom_width=30.0, field="T",
                 spectrum="TT", max_nside=None, live_max_nside=LIVE_MAX_NSIDE, mask="none",
                 cut_deg=20.0, bin_width=8, purify_b=False):
        super().__init__()
        self.mask, self.cut_deg, self.bin_width, self.purify_b = mask, cut_deg, bin_width, \
            purify_b
        #: a sentence on what a change did besides what was asked (lmax kept or clamped)
        self.note = ""
        self.lmax_pinned = lmax is not None if lmax_pinned is None else bool(lmax_pinned)
        self.field, self.spectrum = field, spectrum
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
        self.opened = None          # {"name", "maps", "info", "seconds"} of an opened map file
        # (nside, lmax, fwhm, seed, backend) -> (IQU maps, E/B maps, TEB a_lm, seconds)
        self._synth = LRU(4)
        self._analysis = LRU(8)     # + iter -> (cl_hat, roundtrip error, seconds)
        self._windows = LRU(4)      # (mask, cut, nside, seen pixels) -> (name, window)
        # (window key, lmax, bin width, purify, iter, backend) -> (bins, workspaces, blocks)
        self._workspaces = LRU(8)
        self.set()

    # -- validation ---------------------------------------------------------------------------
    def validate(self) -> str:
        if problem := unknown_backend(self.backend):
            return problem
        if not is_int(self.nside) or self.nside < 1:
            return f"nside must be a whole number >= 1, not {self.nside!r}"
        if self.opened is not None and self.nside != self.opened["info"]["nside"]:
            return (f"the open map {self.opened['name']} has nside "
                    f"{self.opened['info']['nside']}; press \"simulated sky\" for another nside")
        limit = self.max_nside[self.backend]
        if self.nside > limit:
            return (f"nside {self.nside} is not allowed on the {self.backend} backend here "
                    f"(at most {limit}: about {_map_mb(self.nside):.0f} MB per map and long "
                    f"transforms); choose nside <= {limit} or another backend")
        if not is_int(self.lmax) or not 2 <= self.lmax <= lmax_top(self.nside):
            top = lmax_top(self.nside)
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
        if self.field not in FIELDS:
            return f"field must be one of {', '.join(FIELDS)}, not {self.field!r}"
        if self.spectrum not in SHOWN_SPECTRA:
            return f"spectrum must be one of {', '.join(SHOWN_SPECTRA)}, not {self.spectrum!r}"
        if self.mask not in MASKS:
            return f"mask must be one of {', '.join(MASKS)}, not {self.mask!r}"
        if not is_real(self.cut_deg) or not 0 < self.cut_deg < 90:
            return (f"the galactic cut must be from 0 to 90 degrees (exclusive), not "
                    f"{self.cut_deg!r}")
        if not is_int(self.bin_width) or not 1 <= self.bin_width <= MAX_BIN_WIDTH:
            return (f"bin width must be a whole number of multipoles from 1 to "
                    f"{MAX_BIN_WIDTH}, not {self.bin_width!r}")
        if (self.mask != "none" or self.opened is not None) and \
                self.bin_width > min(self.lmax, 3 * self.nside - 1) - 1:
            return (f"bin width {self.bin_width} leaves no bin in ℓ 2–"
                    f"{min(self.lmax, 3 * self.nside - 1)}: choose at most "
                    f"{min(self.lmax, 3 * self.nside - 1) - 1}")
        if not isinstance(self.purify_b, (bool, np.bool_)):
            return f"purify_b must be True or False, not {self.purify_b!r}"
        return backend_problem(self.backend, "sht")

    @property
    def live(self) -> bool:
        """True when the work is small enough to redo on every change of a control."""
        return (not self.message and self.nside <= self.live_max_nside
                and self.nside <= self.max_nside[self.backend])

    # -- a map from a file --------------------------------------------------------------------
    def open_map(self, source, name=None, unit=None) -> bool:
        """Show a HEALPix FITS file instead of the simulated sky.

        source : str, os.PathLike or bytes (an uploaded file's content)
        name : str, optional -- how messages and numbers name it (default: the path)
        unit : {"K", "mK", "uK"}, optional -- None: the file's TUNIT1, else μK

        Returns True when the file was read; else ``message`` says why (the file named).
        """
        name = str(source) if name is None else name
        data = io.BytesIO(bytes(source)) if isinstance(source, (bytes, bytearray, memoryview)) \
            else source
        self.message = ""
        try:
            t0 = time.perf_counter()
            maps, info = sphgpu.io.read_sky(data, unit=unit)
            seconds = time.perf_counter() - t0
        except (ValueError, OSError, TypeError) as exc:
            self.message = f"{name} is not a HEALPix map sphgpu can read: {exc}"
            return False
        self.opened = {"name": name, "maps": maps, "info": info, "seconds": seconds}
        self.result = None
        nside = info["nside"]
        self.max_nside = {b: max(v, nside) for b, v in self.max_nside.items()}
        return self.set(nside=nside, lmax=2 * nside, lmax_pinned=False)

    def close_map(self) -> bool:
        """Back to the simulated sky."""
        self.opened = None
        self.result = None
        return self.set()

    def _run_opened(self):
        o = self.opened
        maps = o["maps"]
        with self.capture("analysis"):
            t0 = time.perf_counter()
            alm = sphgpu.map2alm(maps, self.lmax, iter=self.iter, backend=self.backend)
            t_ana = time.perf_counter() - t0
            first = first_call("map2alm", self.backend, self.nside, self.lmax)
            eb_maps = sphgpu.alm2map(alm[1:], self.nside, self.lmax, pol=False,
                                     backend=self.backend)
            cl_hat = sphgpu.alm2cl(alm)
        if self.message:
            return None
        beam = self._beam()
        seen = _seen(maps[0])
        cl_model = _cl_model(self._cl_input(), beam)
        self.result = TransformResult(
            nside=self.nside, lmax=self.lmax, backend=self.backend, maps=maps, eb_maps=eb_maps,
            cl_model=cl_model, cl_hat=cl_hat,
            roundtrip_error=math.nan, synthesis_s=o["seconds"], analysis_s=t_ana,
            iter=self.iter, beam=beam, field=self.field, spectrum=self.spectrum,
            fwhm_arcmin=float(self.fwhm_arcmin), seed=self.seed, analysis_first=first,
            source=o["name"], f_sky=float(seen.mean()),
            **self._bandpowers(np.where(seen, maps, 0.0), cl_model,
                               None if seen.all() else seen, e_alm=alm[1]))
        return self.result

    # -- computation --------------------------------------------------------------------------
    def run(self, progress=None) -> TransformResult | None:
        """Synthesize and analyse with the current settings (cached); None if invalid.

        progress : callable(fraction, text), optional
        """
        progress = progress or (lambda f, t="": None)
        self.result = None
        if not self.set():
            return None
        if self.opened is not None:
            progress(0.0, "analysis of the map file")
            result = self._run_opened()
            progress(1.0, "done")
            return result
        progress(0.0, "synthesis")
        key = (self.nside, self.lmax, float(self.fwhm_arcmin), self.seed, self.backend)
        with self.capture("synthesis"):
            maps, eb_maps, alm, t_syn, syn_first = self._synth.get(key, self._synthesize)
        if self.message:
            return None
        progress(0.5, f"analysis, iter={self.iter}")
        with self.capture("analysis"):
            cl_hat, err, t_ana, ana_first = self._analysis.get(key + (self.iter,),
                                                               lambda: self._analyse(maps, alm))
        if self.message:
            return None
        progress(1.0, "done")
        beam = self._beam()
        cl_model = _cl_model(self._cl_input(), beam)
        self.result = TransformResult(
            nside=self.nside, lmax=self.lmax, backend=self.backend, maps=maps, eb_maps=eb_maps,
            cl_model=cl_model, cl_hat=cl_hat, roundtrip_error=err,
            synthesis_s=t_syn, analysis_s=t_ana, iter=self.iter, beam=beam, field=self.field,
            spectrum=self.spectrum, fwhm_arcmin=float(self.fwhm_arcmin), seed=self.seed,
            synthesis_first=syn_first, analysis_first=ana_first,
            **self._bandpowers(maps, cl_model, e_alm=alm[1]))
        return self.result

    # -- the cut sky --------------------------------------------------------------------------
    @property
    def cut_sky(self) -> bool:
        """Whether the sky is cut: a mask chosen, or an opened map with UNSEEN pixels."""
        return self.mask != "none" or (
            self.opened is not None and not _seen(self.opened["maps"][0]).all())

    def window(self, seen=None):
        """The mask applied: (name, (12 nside^2,) float64 window in [0, 1]), or None for the
        full sky. ``seen``: (12 nside^2,) bool, the seen pixels of an opened map (None: all),
        which cut the sky too; alone (``mask="none"``) they are a binary window."""
        if self.mask == "none" and seen is None:
            return None
        key = (self.mask, float(self.cut_deg), self.nside,
               None if seen is None else hash(seen.tobytes()))
        return self._windows.get(key, lambda: self._make_window(seen))

    def _make_window(self, seen):
        if self.mask == "none":
            return "seen pixels (binary)", seen.astype(np.float64)
        if self.mask == "galactic":
            name = f"galactic |b| < {float(self.cut_deg):g}°"
            binary = sphgpu.sims.latitude_cut_mask(self.nside, float(self.cut_deg))
        else:
            name = "WMAP"
            # WMAP's mask is nside 32: ud_grade copies it to finer pixels, averages it onto
            # coarser ones (a coarse pixel is kept when most of it was)
            wmap = sphgpu.pixelfunc.ud_grade(sphgpu.io.sky.wmap_mask(dtype=np.float64),
                                             self.nside)
            binary = (wmap >= 0.5).astype(np.float64)
        if seen is not None:
            binary = binary * seen
            name += " × seen pixels"
        deg, kind = MASK_APODIZATION_DEG[self.mask], MASK_APODIZATION_TYPE[self.mask]
        return (f"{name}, {kind}-apodized {deg:g}°",
                master.apodize_mask(binary, deg, apotype=kind))

    def _workspaces_for(self, window, key, lb, pure):
        """(bins, {spins: workspace} for (0, 0), (0, 2), (2, 2), coupling blocks shown,
        (covariance kernel, {spins: decouplers}) for :func:`_bandpower_sigma`), cached per
        key."""
        def make():
            # the reference coupling sums in exact arithmetic (seconds at lmax 64): the
            # explorer's reference runs the transforms, and the coupling where it is fast
            cb = (sphgpu.backends.default("master") if sphgpu.backends.info(self.backend).reference
                  else self.backend)
            # the three couplings share the mask's spectrum: analysed once, as
            # coupling_matrix(window, lb) would (W_L to min(2 lb, 3 nside - 1))
            wl = master.mask_spectrum(window, lmax=min(2 * lb, 3 * self.nside - 1),
                                      iter=self.iter, backend=cb)
            made = {spins: master.coupling_matrix(wl, lb, spins=spins, is_cl=True,
                                                  purify_b=pure and spins != (0, 0),
                                                  backend=cb)
                    for spins in ((0, 0), (0, 2), (2, 2))}
            bins = master.Bins.linear(lb, self.bin_width, lmin=2)
            shown = {"TT": ((0, 0), "00"), "EE": ((2, 2), "++"),
                     "BB": ((2, 2), "pp" if pure else "++"), "TE": ((0, 2), "02"),
                     "EB": ((2, 2), "+p" if pure else "++"), "TB": ((0, 2), "0p" if pure else "02")}
            blocks = {s: np.asarray(getattr(blk, "get", lambda: blk)())
                      for s, (spins, b) in shown.items() for blk in [made[spins].blocks[b]]}
            ws = {s: master.Workspace(c, bins) for s, c in made.items()}
            # the bandpowers' errors (_bandpower_sigma) couple with the squared window
            w4 = master.mask_spectrum(window**2, lmax=min(2 * lb, 3 * self.nside - 1),
                                      iter=self.iter, backend=cb)
            kernel = master.coupling_matrix(w4, lb, spins=(0, 0), is_cl=True,
                                            backend=cb).blocks["00"]
            kernel = np.asarray(getattr(kernel, "get", lambda: kernel)())
            return bins, ws, blocks, (kernel / (2.0 * np.arange(lb + 1) + 1.0),
                                      {s: _decouplers(w) for s, w in ws.items()})
        return self._workspaces.get(key + (lb, self.bin_width, pure, self.iter, self.backend),
                                    make)

    def _bandpowers(self, maps, cl_model, seen=None, e_alm=None) -> dict:
        """The cut sky's fields of :class:`TransformResult`: the decoupled TT, EE, BB, TE, EB,
        TB of ``maps`` ((3, 12 nside^2) I, Q, U in muK, zero where not seen) against
        ``cl_model`` ((6, lmax+1) muK^2) binned; {} for the full sky. A setting the library
        refuses (too narrow bins for the mask) becomes ``bandpower_note``. With pure B,
        ``e_alm`` (the sky's E a_lm to lmax, muK, complex128) gives :attr:`TransformResult.leak`
        and a note when it exceeds :data:`LEAK_MAX_SIGMA`."""
        made = self.window(seen)
        if made is None:
            return {}
        name, window = made
        notes = []
        pure = bool(self.purify_b)
        if pure and self.mask == "none":
            pure = False
            notes.append("purify B needs an apodized mask: the seen pixels alone are a binary "
                         "mask, which cannot be purified (Smith 2006); BB is the standard "
                         "estimate. Choose galactic or WMAP (apodized, cut by the seen "
                         "pixels too)")
        lb = min(self.lmax, 3 * self.nside - 1)
        key = (self.mask, float(self.cut_deg), self.nside,
               None if seen is None else hash(seen.tobytes()))
        out = dict(mask=name, window=window)
        try:
            with warnings.catch_warnings(record=True) as caught:
                # the library warns when a window is too sharp for pure B (WMAP's point-source
                # holes at small nside): the panel says so instead of a log line
                warnings.simplefilter("always", UserWarning)
                bins, ws, blocks, spread, decoupled = self._decoupled(maps, window, key, lb,
                                                                      pure)
            notes += [str(c.message) for c in caught if issubclass(c.category, UserWarning)]
            model = cl_model[:, :lb + 1]
            expected = _six(ws, model, "bin_theory")
            coupled = _six(ws, model, "couple_cell")
        except USER_ERRORS as exc:
            notes.append(f"no decoupled bandpowers: {exc}")
            return dict(out, bandpower_note="; ".join(notes))
        sigma = _bandpower_sigma(spread, coupled, window)
        leak = None
        if pure and e_alm is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)     # said once above
                leak = self._e_only_leak(e_alm, window, ws[(2, 2)])
            notes += self._leak_note(leak, sigma[2], bins, name)
        return dict(out, bins=bins, bandpowers=decoupled, binned=bins.bin_cell(model),
                    expected=expected, sigma=sigma, leak=leak, coupling=blocks,
                    purified=pure, bandpower_note="; ".join(notes))

    def _e_only_leak(self, e_alm, window, ws22):
        """(nbins,) the pure-B BB bandpowers of the E-only part of the sky (Q, U of ``e_alm``
        alone, synthesized to the sky's lmax), muK^2: zero for a pure estimator in exact
        arithmetic; what HEALPix's quadrature of the window's products leaves is E leaking
        into B."""
        zero = np.zeros_like(e_alm)
        _, q, u = sphgpu.alm2map(np.stack([zero, e_alm, zero]), self.nside, self.lmax,
                                 backend=self.backend)
        if self.opened is not None:          # an opened map is read where it was seen only
            seen = window > 0
            q, u = np.where(seen, q, 0.0), np.where(seen, u, 0.0)
        return master.bandpowers_spin2(q, u, window, workspace=ws22, purify_b=True,
                                       iter=self.iter, backend=self.backend)[3]

    def _leak_note(self, leak, sigma_bb, bins, name):
        """[] when the E-only leakage stays within LEAK_MAX_SIGMA of the BB error bars in
        every bin; else a sentence that says where pure B is unreliable, and by how much."""
        ratio = np.abs(leak) / np.where(sigma_bb > 0, sigma_bb, np.inf)
        bad = np.flatnonzero(ratio > LEAK_MAX_SIGMA)
        if bad.size == 0:
            return []
        e = np.asarray(bins.edges)
        worst = int(bad[np.argmax(ratio[bad])])
        where = ", ".join(f"ℓ {int(e[b])}–{int(e[b + 1] - 1)}" for b in bad)
        return [f"pure B is unreliable here: the E-only part of this sky, purified, gives BB "
                f"beyond {LEAK_MAX_SIGMA:g} σ of the BB error bars in {where} (up to "
                f"{ratio[worst]:.3g} σ at ℓ {int(e[worst])}–{int(e[worst + 1] - 1)}; crosses "
                f"in the BB plot). The window ({name}) is too sharp for HEALPix's "
                f"quadrature at nside {self.nside}: its products with the sky alias, and E "
                "leaks into B. Measured: WMAP's mask leaks below 1 σ from nside 64, the "
                "galactic cut at every nside from 16"]

    def _decoupled(self, maps, window, key, lb, pure):
        """The workspaces, blocks and error propagators (cached) and the decoupled TT, EE, BB,
        TE, EB, TB (6, nbins) of ``maps`` ((3, 12 nside^2) I, Q, U in muK) under ``window``:
        the masked T's a_lm and the spin-2 pseudo-a_lm (pure B with ``pure``) of sphgpu.master,
        their six pseudo-spectra, each spin pair's through its workspace."""
        bins, ws, blocks, spread = self._workspaces_for(window, key, lb, pure)
        t = sphgpu.map2alm(maps[0] * window, lb, iter=self.iter, pol=False, backend=self.backend)
        eb = master.pseudo_alm_spin2(maps[1], maps[2], window, lb, purify_b=pure,
                                     iter=self.iter, backend=self.backend)
        return bins, ws, blocks, spread, _six(ws, sphgpu.alm2cl(np.stack([t, eb[0], eb[1]])),
                                              "decouple_cell")

    def set(self, **params) -> bool:
        """Assign parameters and validate (see :class:`PanelModel`), keeping lmax coupled to
        nside: an lmax given pins it; a new nside moves an unpinned lmax to 2 nside and
        clamps a pinned one to the new range, saying so in ``note``; ``lmax_pinned=False``
        alone sends lmax back to 2 nside."""
        if params:                  # set() alone (run's validation) keeps the last note
            self.note = ""
        if "lmax" in params and "lmax_pinned" not in params:
            params["lmax_pinned"] = True
        nside = params.get("nside", self.nside)
        pinned = params.get("lmax_pinned", self.lmax_pinned)
        valid_nside = is_int(nside) and nside >= 1
        if "lmax" not in params and valid_nside:
            if not pinned:
                params["lmax"] = 2 * nside
            elif nside != self.nside:
                params["lmax"] = self._pinned_lmax(nside)
        ok = super().set(**params)
        # field and spectrum are views of the result: follow them without recomputing
        if ok and self.result is not None:
            self.result = dataclasses.replace(self.result, field=self.field,
                                              spectrum=self.spectrum)
        return ok

    def _pinned_lmax(self, nside: int) -> int:
        """The pinned lmax for a new ``nside``: kept, or clamped into 2..:func:`lmax_top`
        with a ``note`` saying so."""
        lmax, top = self.lmax, lmax_top(nside)
        if not is_int(lmax) or not 2 <= lmax <= top:
            new = top if is_int(lmax) and lmax > top else 2
            self.note = (f"lmax was pinned at {lmax!r}, outside 2..{top} for nside {nside} "
                         f"(at most {LMAX_PER_NSIDE} nside): clamped to {new}")
            return new
        return lmax

    def pin_text(self) -> str:
        """What the lmax pin does now, for the panel's label."""
        n, lmax = self.nside, self.lmax
        if not (is_int(n) and is_int(lmax)):
            return ""
        if not self.lmax_pinned:
            return f"lmax follows nside: 2 × {n} = {lmax}"
        text = f"lmax pinned at {lmax} (2 nside = {2 * n}): nside changes keep it"
        if lmax >= 3 * n:
            text += f"; ℓ ≥ 3 nside = {3 * n} alias (the map cannot hold them)"
        return text

    def _beam(self):
        return sphgpu.gauss_beam(fwhm_arcmin=float(self.fwhm_arcmin), lmax=self.lmax, pol=True)

    def _cl_input(self):
        return planck2018_cl(self.lmax, spectra=SHOWN_SPECTRA)

    def _synthesize(self):
        alm = sphgpu.synalm(self._cl_input(), self.lmax, new=True, seed=self.seed)
        beam = self._beam()
        alm = np.stack([sphgpu.almxfl(alm[i], beam[:, i]) for i in range(3)])
        t0 = time.perf_counter()
        maps = sphgpu.alm2map(alm, self.nside, self.lmax, backend=self.backend)
        seconds = time.perf_counter() - t0
        first = first_call("alm2map", self.backend, self.nside, self.lmax)
        # the E-only and B-only skies: a_E and a_B each synthesized as a scalar field
        eb_maps = sphgpu.alm2map(alm[1:], self.nside, self.lmax, pol=False, backend=self.backend)
        return maps, eb_maps, alm, seconds, first

    def _analyse(self, maps, alm):
        t0 = time.perf_counter()
        alm_hat = sphgpu.map2alm(maps, self.lmax, iter=self.iter, backend=self.backend)
        seconds = time.perf_counter() - t0
        first = first_call("map2alm", self.backend, self.nside, self.lmax)
        # over the l the map holds: l >= 3 nside cannot come back from 12 nside^2 pixels
        held = sphgpu.AlmLayout(self.lmax).lm()[0] < 3 * self.nside
        err = float(np.linalg.norm(alm_hat[:, held] - alm[:, held])
                    / np.linalg.norm(alm[:, held]))
        return sphgpu.alm2cl(alm_hat), err, seconds, first

    # -- views --------------------------------------------------------------------------------
    def figure(self):
        """The shown map (Mollweide, with the zoom's centre marked), its gnomonic zoom, and the
        shown spectrum against its input of the last result, as a matplotlib Figure (or None)."""
        r = self.result
        if r is None:
            return None
        cut = r.bandpowers is not None
        fig = new_figure(13.0, 7.6 if cut else 3.9)
        if cut:
            # fixed margins: the constrained layout of six axes took a third of each redraw
            # (0.4 of 1.2 s at nside 64), and a live redraw must answer within the budget
            fig.set_layout_engine("none")
        gs = fig.add_gridspec(2 if cut else 1, 3, width_ratios=[1.5, 0.95, 1.15],
                              **(dict(left=0.06, right=0.985, bottom=0.07, top=0.94,
                                      wspace=0.28, hspace=0.42) if cut else {}))
        ax = fig.add_subplot(gs[0, 0], projection="mollweide")
        sky = r.map
        vmax = 3 * _seen_rms(sky) or 1.0
        geom = sphgpu.RingGeometry.healpix(r.nside)
        style = dict(cmap="RdBu_r", vmin=-vmax, vmax=vmax)
        # the cut sky as the bandpowers see it: the map times the window, grey where 0 (the
        # zoom keeps the whole map: its default centre lies in any galactic cut)
        mesh = mollview(sky if r.window is None else
                        np.where(r.window > 0, sky * r.window, sphgpu.UNSEEN), geom, ax, **style)
        ax.plot(mollweide_x(self.zoom_lon), np.deg2rad(self.zoom_lat), "s", mfc="none",
                mec="k", ms=9, mew=1.5)
        fig.colorbar(mesh, ax=ax, orientation="horizontal", shrink=0.6, pad=0.04,
                     label=_FIELD_LABEL[r.field])
        ax.set_title((f"{r.field}: {r.source}, nside {r.nside}" if r.source else
                      f"{r.field}: nside {r.nside}, {r.fwhm_arcmin:g}′ beam, seed {r.seed}")
                     + (f"\n× mask {r.mask}" if r.window is not None else ""))
        zx = fig.add_subplot(gs[0, 1])
        gnomview(sky, geom, zx, lon_deg=float(self.zoom_lon), lat_deg=float(self.zoom_lat),
                 width_deg=float(self.zoom_width), npix=160, **style)
        zx.set_title(f"zoom on ({float(self.zoom_lon):g}°, {float(self.zoom_lat):g}°), "
                     f"{float(self.zoom_width):g}° wide")
        i = SPECTRA.index(r.spectrum)
        sx = fig.add_subplot(gs[0, 2])
        spectrum_plot(sx, r.cl_model[i], r.cl_hat[i],
                      band=_te_band(r.cl_model) if r.spectrum == "TE" else None)
        # EE and BB span decades (reionization bump, beam fall-off): log; TE changes sign
        # and TT is the familiar linear peak plot
        if r.spectrum in ("EE", "BB"):
            sx.set_yscale("log")
        else:
            sx.axhline(0.0, color="0.5", lw=0.5)
        if r.aliased:
            # the map holds l < 3 nside: mark where the recovered spectrum stops meaning C_l
            sx.axvline(3 * r.nside, color="0.35", ls=":", lw=1.2)
            sx.set_title(f"{r.spectrum}: input × beam against anafast;\n"
                         f"ℓ ≥ 3 nside = {3 * r.nside} (dotted) alias")
        else:
            sx.set_title(f"{r.spectrum}: input × beam against anafast")
        if cut:
            self._bandpower_axes(fig, gs, r)
        return fig

    @staticmethod
    def _bandpower_axes(fig, gs, r):
        """The second row: the shown spectrum's decoupled bandpowers against the binned input,
        and the coupling matrix that the workspace inverted for it."""
        bx = fig.add_subplot(gs[1, :2])
        mx = fig.add_subplot(gs[1, 2])
        spec = r.spectrum if r.spectrum in BANDPOWER_SPECTRA else "TT"
        i = BANDPOWER_SPECTRA.index(spec)
        kind = ("pure B" if r.purified else "standard B") if "B" in spec else "MASTER"
        # TT is the familiar linear peak plot and TE changes sign; EE and BB span decades
        bandpower_plot(bx, r.bins.ell_eff, r.expected[i], r.bandpowers[i],
                       label=f"decoupled {spec} ({kind})", binned=r.binned[i],
                       log=spec in ("EE", "BB"), sigma=r.sigma[i])
        if spec == "BB" and r.leak is not None:
            # what pure B makes of the sky's E alone: zero if the purification holds
            db = r.bins.ell_eff * (r.bins.ell_eff + 1) / (2 * np.pi)
            bx.plot(r.bins.ell_eff, db * r.leak, "x", color="#d6604d", ms=6,
                    label="E-only part of the sky, pure B (leakage)")
            bx.legend(frameon=False, fontsize=FONT["legend"])
        shown = "" if spec == r.spectrum else f" (no {r.spectrum} bandpowers: TT shown)"
        if spec in CROSS_SPECTRA:
            chi2, n = r.decoupled_chi2_of(spec)
            stat = f"χ² = {chi2:.3g} for {n} bins"
        else:
            ratio, sigma = r.decoupled_ratio_of(spec)
            stat = f"⟨decoupled / input⟩ = {ratio:.3g} ± {sigma:.2g}"
        bx.set_title(f"{spec} bandpowers of the cut sky ({r.mask}){shown}: {stat}")
        coupling_image(mx, r.coupling[spec])
        mx.set_title(f"{spec} coupling of the mask: "
                     + mx.get_title().removeprefix("coupling "))


def lmax_top(nside: int) -> int:
    """Largest lmax the explorer takes at ``nside``: 4 nside, and no more than the shipped
    Planck 2018 table reaches."""
    return min(LMAX_PER_NSIDE * nside, planck2018_cl().shape[-1] - 1)


def _seen(m):
    """Pixels that are not UNSEEN (healpy's tolerance) and finite."""
    return (np.abs(m - sphgpu.UNSEEN) > 1e-5 * abs(sphgpu.UNSEEN)) & np.isfinite(m)


def _seen_rms(m) -> float:
    good = m[_seen(m)]
    return float(good.std()) if good.size else 0.0


def _map_mb(nside: int) -> float:
    return 12 * nside**2 * 8 / 1e6


def _cl_model(cl4, beam):
    """(6, lmax+1) expected spectra of the beamed sky from the input TT, EE, BB, TE (rows of
    ``cl4``) and gauss_beam's (lmax+1, 4) T, E, B, TE columns; EB and TB are zero."""
    model = np.zeros((6, cl4.shape[-1]))
    model[:3] = cl4[:3] * beam[:, :3].T ** 2
    model[3] = cl4[3] * beam[:, 0] * beam[:, 1]    # gauss_beam's TE column is sqrt(b_T b_E)
    return model


def _te_band(model):
    """(lmax+1,) one-sigma cosmic variance of a full-sky TE estimate from the (6, lmax+1) model:
    sqrt((C_TE^2 + C_TT C_EE) / (2l+1))."""
    ell = np.arange(model.shape[-1])
    return np.sqrt((model[3] ** 2 + model[0] * model[1]) / (2 * ell + 1))


def _six(ws, cl6, method):
    """A :class:`sphgpu.master.Workspace` method (``"decouple_cell"``, ``"bin_theory"`` or
    ``"couple_cell"``) applied to six spectra through the workspace of each spin pair.

    ws : dict, spins -> Workspace for (0, 0), (0, 2), (2, 2)
    cl6 : ndarray, shape (6, lmax + 1), muK^2 -- TT, EE, BB, TE, EB, TB (one field each of T
        and Q, U, so BE = EB)

    Returns ndarray, shape (6, n): the rows of ``cl6`` (n = nbins, or lmax + 1 for
    ``couple_cell``).
    """
    tt = getattr(ws[(0, 0)], method)(cl6[0])
    pol = getattr(ws[(2, 2)], method)(np.stack([cl6[1], cl6[4], cl6[4], cl6[2]]))
    te = getattr(ws[(0, 2)], method)(np.stack([cl6[3], cl6[5]]))
    return np.stack([tt, pol[0], pol[3], te[0], pol[1], te[1]])


#: The two auto spectra (rows of SPECTRA) whose product sets each spectrum's variance.
_VARIANCE_PAIRS = ((0, 0), (1, 1), (2, 2), (0, 1), (1, 2), (0, 2))


def _decouplers(ws):
    """A workspace's decoupler D = K^-1 P (read off its linear ``decouple_cell`` applied to
    unit spectra), split by the pseudo-spectra it acts on: (n, [(row of SPECTRA, (n nbins,
    lmax+1) columns of D)]) with n the workspace's spectra; BE's columns are added to EB's
    (one field: BE = EB)."""
    n, nl = len(ws.spectra), ws.lmax + 1
    d = ws.decouple_cell(np.eye(n * nl).reshape(n * nl, n, nl)).reshape(n * nl, -1).T
    cols = [d[:, i * nl:(i + 1) * nl] for i in range(n)]
    if n == 1:
        return n, [(0, cols[0])]                                      # TT
    if n == 2:
        return n, [(3, cols[0]), (5, cols[1])]                        # TE, TB
    return n, [(1, cols[0]), (4, cols[1] + cols[2]), (2, cols[3])]    # EE, EB (+ BE), BB


def _bandpower_sigma(spread, coupled, window):
    """(6, nbins) approximate one-sigma scatter of decoupled TT, EE, BB, TE, EB, TB, muK^2.

    The Gaussian covariance of the pseudo-spectra in the narrow-kernel approximation
    (Efstathiou 2004; Garcia-Garcia et al. 2019), with spectra C = M C_input / w2 (the
    expected pseudo-spectra over w2: the power the masked maps hold, standard B's leaked E
    included):

        Cov(C~_XY,l, C~_XY,l') = (g_l g_l' + C_XY,l C_XY,l') M[w^2]_ll' / (2l' + 1),
        g = sqrt(C_XX C_YY),

    M[w^2] the spin-0 coupling of the squared window, carried to the bandpowers through the
    decoupler: var(C_b) = (D Cov D^T)_bb. Left out: covariances between different
    pseudo-spectra (zero for these inputs, which have no EB or TB) and the spin-2 fields' own
    kernels (the spin-0 one stands in). Measured over 30 skies per case (nside 32 and 64, the
    galactic cut and WMAP's mask apodized "C2" 5 deg, 8-wide bins, standard and pure B) the
    pulls' standard deviation per bin and spectrum was 0.38 to 1.43, mostly 0.8 to 1.1; over 25
    skies with WMAP's "Smooth" 1 deg window at nside 64, 0.39 to 1.37 (median 0.87 standard,
    0.95 pure B).

    spread : (kernel, {spins: decouplers}) -- M[w^2] / (2l' + 1), shape (lmax+1, lmax+1),
        and :func:`_decouplers` of the three workspaces
    coupled : ndarray, shape (6, lmax + 1) -- expected pseudo-spectra (``couple_cell``), muK^2
    window : ndarray, shape (npix,) -- the mask
    """
    kernel, decouplers = spread
    c = coupled / float(np.mean(window**2))
    var = {}
    for spins, (n, parts) in decouplers.items():
        total = 0.0
        for k, d in parts:
            i, j = _VARIANCE_PAIRS[k]
            # (u u^T) o kernel = diag(u) kernel diag(u): a sum of two such terms
            for u in (np.sqrt(np.maximum(c[i] * c[j], 0.0)), c[k]):
                du = d * u[None, :]
                total = total + np.sum((du @ kernel) * du, axis=1)
        var[spins] = np.maximum(total, 0.0).reshape(n, -1)
    tt, te, pol = var[(0, 0)], var[(0, 2)], var[(2, 2)]
    return np.sqrt(np.stack([tt[0], pol[0], pol[3], te[0], pol[1], te[1]]))


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
                                max=lmax_top(nside), description="lmax",
                                continuous_update=False, style=style)
        # lmax follows nside unless pinned: moving the slider pins it, unticking releases it
        self.lmax_pin = w.Checkbox(value=bool(m.lmax_pinned), description="pin lmax",
                                   indent=False, layout=w.Layout(width="7em"),
                                   tooltip="keep lmax when nside changes")
        self.pin_label = w.HTML(html.escape(m.pin_text()),
                                layout=w.Layout(max_width="24em"))   # wraps, never clipped
        # ranges reach the model's own values: a slider would clamp them without a word, and
        # the next change of any control would send the clamped value back to the model
        self.fwhm = w.FloatSlider(value=float(m.fwhm_arcmin), min=0.0,
                                  max=max(600.0, float(m.fwhm_arcmin)), step=5.0,
                                  description="beam FWHM [′]", continuous_update=False,
                                  style=style)
        self.seed = w.IntSlider(value=m.seed, min=0, max=max(99, m.seed), description="seed",
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
        self.field = toggle_buttons(list(FIELDS), m.field if m.field in FIELDS else "T", "map",
                                    style["description_width"],
                                    tooltips=["temperature", "Stokes Q", "Stokes U",
                                              "E-only sky", "B-only sky"])
        self.spectrum = toggle_buttons(list(SHOWN_SPECTRA),
                                       m.spectrum if m.spectrum in SHOWN_SPECTRA else "TT",
                                       "spectrum", style["description_width"])
        # the cut sky: a mask, the bins of its decoupled bandpowers, pure B
        self.mask = toggle_buttons(list(MASKS), m.mask if m.mask in MASKS else "none", "mask",
                                   style["description_width"],
                                   tooltips=["the full sky",
                                             f"galactic cut |b| < {float(m.cut_deg):g}°" if
                                             is_real(m.cut_deg) else "galactic cut",
                                             "WMAP's 7-year temperature analysis mask"])
        self.bin_width = w.IntSlider(value=m.bin_width if is_int(m.bin_width) else 8, min=1,
                                     max=max(MAX_BIN_WIDTH, m.bin_width if is_int(m.bin_width)
                                             else 0),
                                     description="bin width [ℓ]", continuous_update=False,
                                     style=style)
        self.purify = w.Checkbox(value=bool(m.purify_b), description="purify B", indent=False,
                                 layout=w.Layout(width="8em"),
                                 tooltip="BB of pure B (Smith 2006): no E-to-B leakage")
        self.figure = w.Output()
        # open a map: a path or an uploaded file, in a unit (K, mK, μK; "file": its TUNIT)
        self.path = w.Text(placeholder="path/to/map.fits", description="open a map",
                           style=style, layout=w.Layout(width="28em"))
        self.open_button = w.Button(description="Open", icon="folder-open",
                                    tooltip="read the HEALPix FITS file at this path")
        self.upload = w.FileUpload(accept=".fits,.fit,.fits.gz,.fts", multiple=False,
                                   description="Upload")
        self.unit = w.Dropdown(options=[("unit: file's (μK if none)", ""), ("K", "K"),
                                        ("mK", "mK"), ("μK", "uK")], value="",
                               layout=w.Layout(width="14em"))
        self.simulated = w.Button(description="simulated sky", icon="random",
                                  tooltip="back to the sky drawn from the Planck spectra")
        self.open_button.on_click(self.guarded(lambda b: self._open(self.path.value.strip())))
        self.upload.observe(self.guarded(self._uploaded), names="value")
        self.simulated.on_click(self.guarded(lambda b: self._close()))
        self._syncing = False
        self._last_run = None           # _shown_key() of the last run shown
        self.nside.observe(self.guarded(lambda change: self._changed()), names="value")
        self.lmax.observe(self.guarded(lambda change: self._changed(lmax_moved=True)),
                          names="value")
        self.lmax_pin.observe(self.guarded(self._pin_changed), names="value")
        self.seed.observe(self.guarded(self._seed_changed), names="value")
        self.unit.observe(self.guarded(self._unit_changed), names="value")
        self.observe_values([self.fwhm, self.iter, self.backend, self.mask], self._changed)
        self.observe_values([self.bin_width, self.purify], self._bandpower_changed)
        self.observe_values([self.zoom_lon, self.zoom_lat, self.zoom_width, self.field,
                             self.spectrum], self._viewed)
        self.on_run(self._run_pressed)
        controls = w.HBox([w.VBox([self.nside, self.lmax,
                                   w.HBox([self.lmax_pin, self.pin_label]), self.backend]),
                           w.VBox([self.fwhm, self.seed, self.iter]),
                           w.VBox([self.zoom_lon, self.zoom_lat, self.zoom_width])])
        views = w.HBox([self.field, self.spectrum])
        cut = w.HBox([self.mask, self.bin_width, self.purify])
        opening = w.HBox([self.path, self.open_button, self.upload, self.unit, self.simulated])
        self.children = [w.HTML("<b>Transform explorer</b>: a polarized CMB sky (I, Q, U) "
                                "from the Planck 2018 spectra through alm2map and back "
                                "through map2alm"),
                         controls, views, cut, opening, self.run_row(), self.message, self.figure,
                         self.numbers]
        self.add_class("sphgpu-transform-panel")
        self.guarded(self._refresh)()

    def _open(self, source, name=None):
        """Read a map file (path or bytes) into the model and show it, or say why not."""
        if isinstance(source, str) and not source:
            self.show_message("type the path of a HEALPix FITS file, or upload one")
            return
        if not self.model.open_map(source, name=name, unit=self.unit.value or None):
            self.show_message(self.model.message)
            return
        self._syncing = True
        try:
            nside = self.model.nside
            if nside not in self.nside.options:
                self.nside.options = sorted(set(self.nside.options) | {nside})
            self.nside.value = nside
        finally:
            self._syncing = False
        self._sync_lmax()
        self._refresh()

    def _uploaded(self, change):
        files = change["new"]
        if files:
            f = files[0]
            self._open(f["content"], name=f["name"])

    def _close(self):
        if self.model.opened is None:
            self.show_message("the simulated sky is shown already (no map file is open)", "note")
            return
        self.model.close_map()
        self._changed()

    def _shown_key(self):
        """What the shown result was computed from (None when nothing is shown)."""
        m = self.model
        if m.result is None or not self.figure.outputs or m.message:
            return None
        return (m.nside, m.lmax, float(m.fwhm_arcmin), m.seed, m.iter, m.backend,
                m.result.source, m.mask, m.cut_deg, m.bin_width, m.purify_b)

    def _run_pressed(self):
        """Run; when the settings shown are those already computed, say so rather than redraw
        the same picture without a word."""
        key = self._shown_key()
        if key is not None and key == self._last_run:
            self.show_message("these settings are shown already: change a control to compute "
                              "another sky (small nside recompute as you move them)", "note")
            return
        self.run()

    def _sync_lmax(self):
        """Show the model's lmax, its range for the nside chosen and its pin (the model
        couples them: :meth:`TransformModel.set`)."""
        m = self.model
        self._syncing = True
        try:
            if is_int(m.nside) and m.nside >= 1:
                self.lmax.max = lmax_top(m.nside)
            if is_int(m.lmax) and self.lmax.min <= m.lmax <= self.lmax.max:
                self.lmax.value = m.lmax
            self.lmax_pin.value = bool(m.lmax_pinned)
            self.pin_label.value = html.escape(m.pin_text())
        finally:
            self._syncing = False

    def _changed(self, lmax_moved=False):
        """A control of the computation moved: set the model (the lmax slider's value only
        when it was the one moved, which pins lmax), show the coupled lmax, recompute."""
        if self._syncing:
            return
        m = self.model
        params = dict(nside=self.nside.value, fwhm_arcmin=self.fwhm.value,
                      seed=self.seed.value, iter=self.iter.value, backend=self.backend.value,
                      mask=self.mask.value, bin_width=self.bin_width.value,
                      purify_b=self.purify.value)
        if lmax_moved:
            params["lmax"] = self.lmax.value
        m.set(**params)
        self._sync_lmax()
        self._refresh()

    def _bandpower_changed(self):
        """Bins and purification shape the bandpowers of a cut sky: on the full sky they change
        nothing shown, and the panel says so."""
        m = self.model
        if m.mask == "none" and not m.cut_sky:
            m.set(bin_width=self.bin_width.value, purify_b=self.purify.value)
            self.show_message(m.message or (
                f"bin width {self.bin_width.value} and purify B "
                f"{'on' if self.purify.value else 'off'} apply to the decoupled bandpowers of "
                "a cut sky: choose a mask (galactic or WMAP) to see them"),
                "error" if m.message else "note")
            return
        self._changed()

    def _pin_changed(self, change):
        """Ticking pins lmax where it is (nothing to recompute: the label says so);
        unticking sends it back to 2 nside."""
        if self._syncing:
            return
        m = self.model
        before = m.lmax
        m.set(lmax_pinned=bool(change["new"]))
        self._sync_lmax()
        if m.lmax != before or m.message:
            self._refresh()
        elif not m.message:
            self.show_message(f"{m.pin_text()}; lmax is unchanged, so is the sky", "note")

    def _seed_changed(self, change):
        """The seed draws the simulated sky: with a map file open it changes nothing shown,
        and the panel says so."""
        if self._syncing:
            return
        if self.model.opened is not None:
            self.model.set(seed=self.seed.value)
            self.show_message(f"the seed draws the simulated sky; the open map "
                              f"{self.model.opened['name']} stays (press \"simulated sky\" "
                              f"to see seed {self.seed.value})", "note")
            return
        self._changed()

    def _unit_changed(self, change):
        """The unit is read with the next file: say so rather than change nothing silently."""
        opened = self.model.opened
        now = f"; {opened['name']} stays as read (open it again)" if opened else ""
        self.show_message(f"the unit applies to the next Open or Upload{now}", "note")

    def run(self):
        """:meth:`Panel.run`, then the model's note (an lmax clamped), if any."""
        super().run()
        self._last_run = self._shown_key()
        m = self.model
        notes = [m.note, m.result.bandpower_note if m.result is not None else ""]
        if any(notes) and not m.message and m.result is not None:
            self.show_message("; ".join(n for n in notes if n), "note")

    def _viewed(self):
        """The zoom, the map and the spectrum shown are views of the result: redraw without
        recomputing."""
        m = self.model
        m.set(zoom_lon=self.zoom_lon.value, zoom_lat=self.zoom_lat.value,
              zoom_width=self.zoom_width.value, field=self.field.value,
              spectrum=self.spectrum.value)
        if m.message:
            self.show_message(m.message)
        elif m.result is not None and self.figure.outputs:   # not while stale (press Run)
            show_figure(self.figure, m.figure())
            self.numbers.value = numbers_html(m.result.numbers())
        else:
            self.show_message(f"{self.stale_note()}; then it shows the {m.field} map, the "
                              f"{m.spectrum} spectrum and the zoom on "
                              f"({float(m.zoom_lon):g}°, {float(m.zoom_lat):g}°), "
                              f"{float(m.zoom_width):g}° wide", "note")

    def stale_note(self):
        m = self.model
        note = f"; {m.note}" if m.note else ""
        cut = (f", mask {m.mask} (bins of {m.bin_width} ℓ, purify B "
               f"{'on' if m.purify_b else 'off'})" if m.mask != "none" else "")
        return (f"nside {m.nside}, lmax {m.lmax}, beam {float(m.fwhm_arcmin):g}′, seed {m.seed}, "
                f"iter {m.iter} on {m.backend}{cut}: press Run to compute{note}")


def transform_panel(**kw) -> TransformPanel:
    """The transform explorer. Keywords are :class:`TransformModel`'s (nside, lmax,
    fwhm_arcmin, seed, iter, backend, lmax_pinned, zoom_lon, zoom_lat, zoom_width, field,
    spectrum, max_nside, live_max_nside, mask, cut_deg, bin_width, purify_b)."""
    return TransformPanel(TransformModel(**kw))
