"""A Monte Carlo of pseudo-spectra that keeps what it has done: run, stop, run more; with
``bins``, each simulation's decoupled (MASTER) bandpowers too."""

from __future__ import annotations

import math
import sys
import threading
import time

import numpy as np

from .. import backends, master
from .._device import to_host
from .._validate import as_maps, as_real_array, check_int
from ..sht.beam_window import beam_rows
from ..sht.spectra import field_spectra, fwhm_radians
from .batching import auto_batch_size, tunes
from .pipeline import (SimulationPlan, expected_spectra, simulate_batch, spectrum_names,
                       transfer_factors)

__all__ = ["MonteCarlo", "simulate_spectra"]


def _spectra_table(name, cls, pol, new, lmax):
    """(n, n, lmax+1) covariance of the fields from healpy-ordered spectra, zero-padded."""
    if pol:
        count = len(cls) if isinstance(cls, (list, tuple)) else \
            np.shape(cls)[0] if np.ndim(cls) == 2 else 0
        if count not in (4, 6):
            raise ValueError(f"{name}: with pol=True give 4 spectra (TT, EE, BB, TE with "
                             f"new=True) or 6, as a (4 or 6, L) array or a list")
    elif np.ndim(cls) != 1:
        raise ValueError(f"{name} must be one spectrum C_l (1-D) with pol=False, got shape "
                         f"{np.shape(cls)}; pass pol=True for T, E, B")
    else:
        # a list went through as a list and failed deep inside ("tuple index out of range")
        cls = np.asarray(as_real_array(name, cls, allow_batch=False))
        if cls.size == 0:
            raise ValueError(f"{name} is empty: give C_l for l = 0, 1, ...")
    try:
        cov = field_spectra(cls, new, pol)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    out = np.zeros(cov.shape[:2] + (lmax + 1,))
    k = min(cov.shape[2], lmax + 1)
    out[:, :, :k] = cov[:, :, :k]
    if out.shape[0] > 1:
        # the draw clips negative eigenvalues to zero: the skies would not have these spectra
        w = np.linalg.eigvalsh(np.moveaxis(out, 2, 0))
        bad = w[:, 0] < -1e-10 * np.maximum(np.abs(w).max(axis=1), np.finfo(float).tiny)
        if bad.any():
            ell = int(np.argmax(bad))
            raise ValueError(f"{name}: the spectra at l={ell} are not a valid covariance "
                             "(e.g. TE**2 > TT*EE): no sky has them")
    return out


def _pixel_values(name, value, npix, rows):
    """A scalar or a per-pixel map ((npix,), or (rows, npix) for I, Q, U), finite, >= 0.

    Maps are read as healpy reads them (:func:`sphgpu._validate.as_maps`): the masked pixels
    of a ``numpy.ma`` array and pixels equal to ``healpy.UNSEEN`` count as 0 (np.asarray
    would keep what lies under a numpy.ma mask, and a masked mask would observe the full sky).
    """
    if np.isscalar(value):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
            raise TypeError(f"{name} must be a number or a map, got {type(value).__name__}")
        arr = np.float64(value)
    else:
        arr = as_maps(name, value, max_ndim=2)[0]
        if arr.shape not in {(npix,), (rows, npix)}:
            want = f"({npix},)" + (f" or ({rows}, {npix})" if rows > 1 else "")
            raise ValueError(f"{name} has shape {arr.shape}: give a HEALPix map of shape {want}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0 everywhere")
    return arr if np.ndim(arr) else float(arr)


def _stacked(cov, pol):
    """Spectra (nspec, L) in ``spectrum_names`` order from a (n, n, L) field covariance."""
    if not pol:
        return np.array(cov[:1, 0])
    return np.stack([cov[0, 0], cov[1, 1], cov[2, 2], cov[0, 1], cov[1, 2], cov[0, 2]])


def _purify_flag(purify_b, pol, mask):
    """``purify_b`` checked: a bool, with pol and an apodized (not binary) mask."""
    if not isinstance(purify_b, (bool, np.bool_)):
        raise TypeError(f"purify_b must be True or False, got {purify_b!r}")
    if not purify_b:
        return False
    if not pol:
        raise ValueError("purify_b=True purifies B: it needs pol=True")
    if mask is None:
        raise ValueError("purify_b=True needs a mask: the full sky has no E-to-B leakage")
    seen = mask[mask > 0]
    if np.any(mask == 0) and seen.min() == seen.max():
        raise ValueError("mask is binary (0 and one other value): purify_b=True needs a mask "
                         "that vanishes with its first derivative at the edge of the sky; "
                         "apodize it (sphgpu.master.apodize_mask(mask, 5.0, apotype='C2'))")
    return True


def _as_bins(bins, lmax):
    """``bins`` (a Bins, or a width) as a :class:`sphgpu.master.Bins` at ``lmax``."""
    if isinstance(bins, master.Bins):
        top = int(bins.edges[-1]) - 1
        if top > lmax:
            raise ValueError(f"bins reach l = {top}, beyond the Monte Carlo's lmax = {lmax}: "
                             f"give bins whose edges lie in 0..lmax + 1 = {lmax + 1}")
        if bins.lmax == lmax:
            return bins
        # the same bins, weights and f_l at this lmax (the weights are zero outside the bins,
        # where f_l is not used)
        k = min(lmax, bins.lmax) + 1
        weights, f_ell = np.zeros(lmax + 1), np.ones(lmax + 1)
        weights[:k] = bins.weights.sum(axis=0)[:k]
        f_ell[:k] = bins.f_ell[:k]
        return master.Bins(bins.edges, lmax=lmax, weights=weights, f_ell=f_ell)
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        width = check_int("bins", bins, minimum=1)
        if width > lmax - 1:
            raise ValueError(f"bins (a bin width) must be at most lmax - 1 = {lmax - 1} so "
                             f"that one bin fits in l = 2..lmax, got {width}")
        return master.Bins.linear(lmax, width, lmin=2)
    raise TypeError(f"bins must be a sphgpu.master.Bins or an int (a bin width), got "
                    f"{type(bins).__name__}")


class _Progress:
    """A progress line: an ipywidgets bar in a notebook, a rewritten line on stderr in a
    terminal, a callable ``progress(done, total)``, or nothing."""

    def __init__(self, progress, total):
        self.total, self.call, self.bar = total, None, None
        if callable(progress):
            self.call = progress
        elif progress and _in_notebook():
            import ipywidgets
            from IPython.display import display

            self.bar = ipywidgets.IntProgress(value=0, min=0, max=max(total, 1))
            self.label = ipywidgets.Label()
            display(ipywidgets.HBox([self.bar, self.label]))
        elif progress:
            self.call = self._line

    def _line(self, done, total):
        sys.stderr.write(f"\rsphgpu.sims: {done} of {total} simulations")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    def __call__(self, done, rate):
        if self.call is not None:
            self.call(done, self.total)
        if self.bar is not None:
            self.bar.value = done
            self.label.value = f"{done} of {self.total} simulations, {rate:.3g} per second"


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and "ZMQ" in type(shell).__name__


class MonteCarlo:
    """Simulated skies through beam, noise and mask, and their pseudo-spectra.

    Each simulation draws Gaussian a_lm with the input spectra (simulation i from its own
    counter-based stream keyed by ``numpy.random.SeedSequence(seed, spawn_key=(i,))``, the same
    numbers on the CPU and the GPU: the results do not depend on batch size, workers or
    device, but for rounding, since a batch's transforms group their maps by its size),
    multiplies them by the beam, adds noise a_lm, makes the maps
    (HEALPix RING), adds white noise, multiplies by the mask and measures the pseudo-spectra
    (``map2alm`` then ``alm2cl``). On a GPU the whole batch stays on the device. The object
    keeps every finished simulation: :meth:`run` adds more, :meth:`stop` (or Ctrl-C) ends a run
    early with the results so far.

    Parameters
    ----------
    cls : array_like, float64, muK^2
        Input spectra C_l (raw, not l(l+1)C_l/2pi), l from 0. With ``pol=False`` one spectrum
        (L,); with ``pol=True`` 4 spectra (TT, EE, BB, TE with ``new=True``) or 6, shape
        (4 or 6, L), healpy's orders. Entries past ``lmax`` are ignored, missing ones are 0.
    nside : int
        HEALPix resolution of the maps.
    lmax : int, optional
        Band limit of the simulated and measured a_lm (mmax = lmax); default ``3 * nside - 1``.
    pol : bool
        Temperature only (False, default), or T, E, B a_lm -> I, Q, U maps (True).
    new : bool
        healpy's order of 4 or 6 spectra: True (default) TT, EE, BB, TE[, EB, TB]; False
        TT, TE, EE, BB (4) or TT, TE, TB, EE, EB, BB (6).
    fwhm : float
        Gaussian beam full width at half maximum in radians (healpy's ``fwhm``); 0: no beam.
    fwhm_arcmin : float, optional
        The same in arcminutes (instead of ``fwhm``).
    beam_window : array_like, optional
        Any beam transfer function b_l instead of a Gaussian: shape (L,), (L, n >= 3) with T, E,
        B columns (healpy's ``gauss_beam(pol=True)``) or (3 or 4, L) rows, read as
        :func:`sphgpu.smoothing` reads it (:func:`sphgpu.sht.beam_window.parse_beam_window`).
    mask : array_like, optional
        Weights per pixel, shape (npix,), binary or apodized (>= 0), applied to every map;
        booleans are read as 1 (True, observed) and 0; the masked pixels of a ``numpy.ma``
        array and ``healpy.UNSEEN`` pixels as 0 (healpy's masked maps); None: the full sky.
    noise_sigma : float or array_like, optional
        White noise: standard deviation per pixel in muK, a number or a map (npix,) (or
        (3, npix) for I, Q, U). The same value applies to I, Q and U unless given per row.
        Masked (``numpy.ma``) and ``healpy.UNSEEN`` pixels of a map get no noise.
    noise_cls : array_like, optional
        Noise spectra in muK^2 (as ``cls``), added to the a_lm after the beam.
    iter : int
        Jacobi iterations of ``map2alm`` (default 0: one quadrature pass; the mask's coupling
        is what a pseudo-spectrum measures, and iterations do not undo it).
    seed : int
        Seed of the whole Monte Carlo (>= 0).
    batch_size : int, optional
        Simulations transformed together; default: chosen from free memory (GPU) or physical
        memory (CPU), at most 32. Does not change the results.
    backend : {"auto", "cuda", "cpu", "reference"}
        Where the transforms run (on a Dask cluster: the workers' kind, see :meth:`run`).
    bins : sphgpu.master.Bins or int, optional
        Also decouple every simulation's pseudo-spectra into MASTER bandpowers (Hivon et al.
        2002) over these multipole bins: a :class:`~sphgpu.master.Bins` whose edges lie in
        0..lmax + 1 (re-expressed at this lmax, weights kept), or an int, the width of
        ``Bins.linear(lmax, width, lmin=2)``. The mask's coupling matrix is computed once
        (:func:`sphgpu.master.coupling_matrix`, at this lmax; the full sky without a mask) and
        held, binned and inverted with the beam, in one :class:`~sphgpu.master.Workspace`
        per spin pair (``workspaces``). No pixel window enters: the maps are made from
        band-limited a_lm (their pixels are samples, not averages). The expected noise
        pseudo-spectrum (:attr:`noise_bias`) is subtracted before decoupling, so the
        bandpowers estimate the input signal (:attr:`expected_bandpowers`). The decoupling is a
        matrix product done here, on the client, as each batch arrives (also from a Dask
        cluster). None (default): pseudo-spectra only.
    purify_b : bool
        Measure pure B (Smith 2006; :func:`sphgpu.master.pseudo_alm_spin2`) instead of the
        masked maps' B: no E leaks into BB, EB and TB (``spectra`` then hold pure-B
        pseudo-spectra) and, with ``bins``, the coupling is
        ``coupling_matrix(..., purify_b=True)``. Needs ``pol=True`` and an apodized ``mask``
        (one that vanishes with its first derivative where the sky ends:
        :func:`sphgpu.master.apodize_mask`). The mask's derivatives come from its harmonic
        coefficients analysed with this ``iter``: give ``iter=3`` (an E-only sky's pure BB
        scattered 2300-70000 times less than the standard decoupled BB with it, 55-900 times
        with ``iter=0``, nside 32, a 10 degree edge: tests/sims/test_montecarlo_bandpowers.py).
        The noise bias subtracted is exact for ``iter=0`` (:attr:`noise_bias`). Default False.

    Attributes
    ----------
    plan : SimulationPlan
        The validated inputs every simulation shares.
    beam : numpy.ndarray, float64, shape (n, lmax+1)
        b_l of each field (T, or T, E, B).
    names : tuple of str
        The measured spectra: ("TT",) or TT, EE, BB, TE, EB, TB.
    seconds : float
        Wall time of all runs.
    stopped : bool
        The last run ended early (stop() or Ctrl-C).
    bins : sphgpu.master.Bins or None
        The bandpowers' bins (at this lmax), when ``bins`` was given.
    coupling : sphgpu.master.Coupling or None
        The mask's mode-coupling blocks ("00", and with ``pol`` "02", "++", "--").
    workspaces : dict
        ``{(0, 0): Workspace}``, with ``pol`` also (0, 2) (TE, TB) and (2, 2) (EE, EB, BE,
        BB); empty without bins.

    Raises
    ------
    ValueError, TypeError
        Bad input, naming the argument; with ``bins``: bins beyond lmax, a binned coupling
        that cannot be inverted (too much sky masked for bins this narrow, spin-2 bins below
        l = 2) or E and B beams that differ.
    """

    def __init__(self, cls, nside, lmax=None, *, pol=False, new=True, fwhm=0.0,
                 fwhm_arcmin=None, beam_window=None, mask=None, noise_sigma=None,
                 noise_cls=None, iter=0, seed=0, batch_size=None, backend="auto",
                 bins=None, purify_b=False):
        nside = check_int("nside", nside, minimum=1)
        lmax = 3 * nside - 1 if lmax is None else check_int("lmax", lmax, minimum=0)
        if lmax > 4 * nside:
            raise ValueError(f"lmax={lmax} is more than 4 * nside = {4 * nside}: the maps "
                             "cannot hold it")
        if not isinstance(pol, (bool, np.bool_)):
            raise TypeError(f"pol must be True or False, got {pol!r}")
        pol, n, npix = bool(pol), 3 if pol else 1, 12 * nside * nside
        cov = _spectra_table("cls", cls, pol, bool(new), lmax)
        if beam_window is not None and (fwhm not in (None, 0, 0.0) or fwhm_arcmin is not None):
            raise ValueError("give beam_window or a Gaussian fwhm, not both")
        if beam_window is not None:     # the one strict parser of smoothing's beam_window
            rows = beam_rows(n, pol, lmax, 0.0, beam_window)
        else:
            rows = beam_rows(n, pol, lmax, fwhm_radians(fwhm, fwhm_arcmin), None)
        noise_alm = noise_cov = None
        if noise_cls is not None:
            noise_cov = _spectra_table("noise_cls", noise_cls, pol, bool(new), lmax)
            noise_alm = transfer_factors(noise_cov, None)
        if mask is not None:
            if not hasattr(mask, "dtype"):
                mask = np.asarray(mask)
            if mask.dtype == np.bool_:           # True: observed
                mask = mask.astype(np.float64)
            mask = _pixel_values("mask", mask, npix, 1)
            if np.ndim(mask) == 0:
                raise ValueError("mask must be a HEALPix map of shape "
                                 f"({npix},), not a number")
            if not np.any(mask):
                raise ValueError("mask is zero everywhere: nothing would be observed")
        if noise_sigma is not None:
            noise_sigma = _pixel_values("noise_sigma", noise_sigma, npix, n)
        if batch_size is not None:
            batch_size = check_int("batch_size", batch_size, minimum=1)
        purify_b = _purify_flag(purify_b, pol, mask)
        self.plan = SimulationPlan(
            nside=nside, lmax=lmax, pol=pol, signal=transfer_factors(cov, rows),
            noise_alm=noise_alm, noise_sigma=noise_sigma, mask=mask,
            iter=check_int("iter", iter, minimum=0), seed=check_int("seed", seed, minimum=0),
            purify_b=purify_b)
        self.beam = np.array(rows)
        self.batch_size = batch_size
        self.backend = backends._check_name(backend)
        self.names = spectrum_names(pol)
        self.seconds = 0.0                          # wall time of all runs
        self.stopped = False                        # the last run ended by stop() or Ctrl-C
        self._results: dict[int, np.ndarray] = {}  # simulation index -> (nspec, lmax+1)
        self._timed = 0                             # simulations done inside timed runs
        self._run_from = 0                          # nsims when the current run began
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._input = _stacked(cov, pol)            # (nspec, lmax+1), names' order, muK^2
        self._bandpowers: dict[int, np.ndarray] = {}   # simulation index -> (nspec, nbins)
        self.bins, self.coupling, self.workspaces = None, None, {}
        self._noise_bias = None
        if bins is not None:
            self._set_bins(bins, noise_cov)

    # ------------------------------------------------------------------ results
    @property
    def nsims(self) -> int:
        """Number of finished simulations."""
        return len(self._results)

    @property
    def indices(self) -> np.ndarray:
        """Simulation numbers finished, sorted, shape (nsims,) int64."""
        with self._lock:
            return np.array(sorted(self._results), dtype=np.int64)

    @property
    def spectra(self) -> np.ndarray:
        """Every finished simulation's pseudo-spectra, shape (nsims, nspec, lmax+1), float64,
        muK^2, ordered by simulation number (``indices``); nspec 1 (TT) or 6 with ``pol``
        (TT, EE, BB, TE, EB, TB, see ``names``)."""
        with self._lock:
            keys = sorted(self._results)
            if not keys:
                return np.zeros((0, self.plan.nspec, self.plan.lmax + 1))
            return np.stack([self._results[k] for k in keys])

    @property
    def mean(self) -> np.ndarray:
        """Mean pseudo-spectra over the simulations, shape (nspec, lmax+1), muK^2."""
        s = self._need(1)
        return s.mean(axis=0)

    @property
    def std(self) -> np.ndarray:
        """Standard deviation of one simulation's spectra, shape (nspec, lmax+1), muK^2 (the
        error of the mean is ``std / sqrt(nsims)``)."""
        return self._need(2).std(axis=0, ddof=1)

    def covariance(self, bins=None) -> np.ndarray:
        """Sample covariance of the spectra over the simulations (unbiased, ddof 1).

        Parameters
        ----------
        bins : int or array_like of int, optional
            None: every l. An int: bins of that many l from 0. An array: bin edges in l
            (bin i is edges[i] <= l < edges[i+1]). Binned spectra are plain means over l.

        Returns
        -------
        numpy.ndarray, float64, shape (nspec * nbins, nspec * nbins), muK^4
            Spectra one after the other (all of TT, then EE, ...), nbins = lmax+1 without bins.

        Raises
        ------
        ValueError
            Fewer than 2 simulations, or bins that are not increasing edges within 0..lmax+1.
        """
        s = self._need(2)
        if bins is not None:
            s = self._binned(s, bins)
        flat = s.reshape(s.shape[0], -1)
        return np.atleast_2d(np.cov(flat, rowvar=False))

    def _binned(self, s, bins):
        lmax = self.plan.lmax
        if np.isscalar(bins):
            width = check_int("bins", bins, minimum=1)
            edges = np.arange(0, lmax + 2, width)
            if edges[-1] != lmax + 1:
                edges = np.append(edges, lmax + 1)
        else:
            edges = np.asarray(bins)
            if edges.ndim != 1 or edges.size < 2 or edges.dtype.kind not in "iu" \
                    or np.any(np.diff(edges) <= 0) or edges[0] < 0 or edges[-1] > lmax + 1:
                raise ValueError(f"bins must be increasing integer edges in 0..{lmax + 1}, "
                                 f"got {bins!r}")
        return np.stack([s[..., a:b].mean(axis=-1) for a, b in zip(edges[:-1], edges[1:])],
                        axis=-1)

    # ------------------------------------------------------------------ bandpowers
    def _set_bins(self, bins, noise_cov):
        """Bins at this lmax, the mask's coupling (once), a Workspace per spin pair, and the
        expected noise pseudo-spectrum."""
        p = self.plan
        self.bins = _as_bins(bins, p.lmax)
        if p.pol and not np.allclose(self.beam[1], self.beam[2], rtol=1e-12, atol=0):
            raise ValueError("bins: decoupling needs one beam for E and B (the Workspace "
                             "takes a T and a P row); beam_window gives them different rows")
        spins = "all" if p.pol else (0, 0)
        # "reference" runs the coupling sums in exact arithmetic, for lmax of a few tens: the
        # transforms' reference backend does not ask for that, so its coupling runs on the CPU
        where = backends.resolve(self.backend, "master")
        if backends.info(where).reference:
            where = "cpu"
        if p.mask is None:                  # the full sky: W_L = 4 pi delta_L0, M = 1
            wl = np.zeros(2 * p.lmax + 1)
            wl[0] = 4.0 * math.pi
            self.coupling = master.coupling_matrix(wl, p.lmax, spins=spins, is_cl=True,
                                                   backend=where)
        elif p.purify_b:
            # the mask analysed with the iterations that made its derivatives: the estimator
            # and its coupling then describe the same window (sphgpu.master.purify)
            self.coupling = master.coupling_matrix(p.mask, p.lmax, spins=spins, purify_b=True,
                                                   iter=p.iter, backend=where)
        else:
            self.coupling = master.coupling_matrix(p.mask, p.lmax, spins=spins, backend=where)
        beam = np.stack([self.beam[0], self.beam[1]]) if p.pol else self.beam[0]
        pairs = ((0, 0), (0, 2), (2, 2)) if p.pol else ((0, 0),)
        for pair in pairs:
            try:
                self.workspaces[pair] = master.Workspace(self.coupling, self.bins, spins=pair,
                                                         beam=beam)
            except ValueError as exc:
                raise ValueError(f"bins (with this mask and beam, spins {pair}): {exc}") \
                    from None
        self._noise_bias = self._expected_noise(noise_cov, where)

    def _expected_noise(self, noise_cov, where):
        """The mean pseudo-spectra of the noise alone, (nspec, lmax+1), muK^2.

        White pixel noise n_p of variance sigma_p^2, masked by w_p and analysed by one
        quadrature pass (weight Omega = 4 pi / npix) has <|a_lm|^2> = Omega^2 sum_p w_p^2
        sigma_p^2 |sY_lm(p)|^2, and sum_m |sY_lm(p)|^2 = (2l+1) / (4 pi) at every point (the
        addition theorem, spin 0 and 2), so its pseudo-C_l is flat: Omega mean_p(w^2 sigma^2)
        for TT, the same with (sigma_Q^2 + sigma_U^2) / 2 for EE and BB at l >= 2, and 0 for
        the cross-spectra. Exact with ``iter=0``; Jacobi iterations change it slightly.
        Pure B (Smith 2006) adds to the masked maps' B the curl of the spin-1 field
        edth-bar(W) P with weight f1_l = 2 / sqrt((l-1)(l+2)) and the scalar X1 U - X2 Q with
        weight f0_l = sqrt((l-2)!/(l+2)!) (D1 + i D2 = edth W, X1 + i X2 = edth^2 W); spin
        harmonics of different spins at one point sum to zero over m, so their noise adds:
        BB = Omega mean(W^2 s2 + f1_l^2 (D1^2 + D2^2) s2 + f0_l^2 (X1^2 sU^2 + X2^2 sQ^2)),
        s2 = (sQ^2 + sU^2) / 2; EB and TB stay 0.
        Noise spectra (``noise_cls``, added after the beam) are coupled by the mask like the
        signal, without the beam.
        """
        p = self.plan
        out = np.zeros((p.nspec, p.lmax + 1))
        w2 = 1.0 if p.mask is None else p.mask ** 2
        if p.noise_sigma is not None:
            s2 = np.broadcast_to(np.asarray(p.noise_sigma, dtype=np.float64) ** 2,
                                 (p.nfields, p.npix))
            omega = 4.0 * math.pi / p.npix
            out[0] = omega * np.mean(w2 * s2[0])
            if p.pol:
                out[1:3, 2:] = omega * np.mean(w2 * 0.5 * (s2[1] + s2[2]))
            if p.purify_b:
                (d1, d2), (x1, x2) = np.asarray(to_host(master.mask_derivatives(
                    p.mask, iter=p.iter, backend=where)))
                ell = np.arange(2, p.lmax + 1, dtype=np.float64)
                f1sq = 4.0 / ((ell - 1) * (ell + 2))
                f0sq = 1.0 / ((ell + 2) * (ell + 1) * ell * (ell - 1))
                sbar = 0.5 * (s2[1] + s2[2])
                out[2, 2:] += omega * (f1sq * np.mean((d1 ** 2 + d2 ** 2) * sbar)
                                       + f0sq * np.mean(x1 ** 2 * s2[2] + x2 ** 2 * s2[1]))
        if noise_cov is not None:
            nl = _stacked(noise_cov, p.pol)
            out[0] += self.coupling.couple_cell(nl[0], spins=(0, 0))
            if p.pol:
                ee, bb, te, eb, tb = nl[1], nl[2], nl[3], nl[4], nl[5]
                c22 = self.coupling.couple_cell(np.stack([ee, eb, eb, bb]), spins=(2, 2))
                c02 = self.coupling.couple_cell(np.stack([te, tb]), spins=(0, 2))
                out[1] += c22[0]
                out[2] += c22[3]
                out[4] += c22[1]
                out[3] += c02[0]
                out[5] += c02[1]
        return out

    def _need_bins(self):
        if self.bins is None:
            raise ValueError("bandpowers need bins: make the Monte Carlo with "
                             "MonteCarlo(..., bins=sphgpu.master.Bins(...)) or bins=width")

    def decouple(self, spectra) -> np.ndarray:
        """Decoupled bandpowers of pseudo-spectra measured as these simulations measure them.

        The expected noise pseudo-spectrum (:attr:`noise_bias`) is subtracted, then each spin
        pair's :class:`~sphgpu.master.Workspace` applies K^-1 P (EB stands for BE too: one
        field's E and B give one cross-spectrum).

        Parameters
        ----------
        spectra : array_like, float64, shape (..., nspec, lmax+1), muK^2
            Pseudo-spectra in the order of ``names``.

        Returns
        -------
        numpy.ndarray, float64, shape (..., nspec, nbins), muK^2
            Bandpowers in the order of ``names`` (TT, or TT, EE, BB, TE, EB, TB).

        Raises
        ------
        ValueError
            Without bins, or ``spectra`` of another shape.
        """
        self._need_bins()
        p = self.plan
        s = np.asarray(spectra, dtype=np.float64)
        if s.ndim < 2 or s.shape[-2:] != (p.nspec, p.lmax + 1):
            raise ValueError(f"spectra must have shape (..., {p.nspec}, {p.lmax + 1}) "
                             f"(spectra {self.names}, l = 0..lmax), got {s.shape}")
        s = s - self._noise_bias
        return self._through_workspaces(s, "decouple_cell")

    def _through_workspaces(self, s, method):
        """Apply each Workspace's ``method`` to spectra (..., nspec, lmax+1) in names' order:
        (..., nspec, nbins)."""
        out = np.empty(s.shape[:-1] + (self.bins.nbins,))
        out[..., 0, :] = getattr(self.workspaces[(0, 0)], method)(s[..., 0, :])
        if self.plan.pol:
            ee, bb, te, eb, tb = (s[..., i, :] for i in range(1, 6))
            c22 = getattr(self.workspaces[(2, 2)], method)(np.stack([ee, eb, eb, bb], -2))
            c02 = getattr(self.workspaces[(0, 2)], method)(np.stack([te, tb], -2))
            out[..., 1, :], out[..., 2, :], out[..., 4, :] = (c22[..., 0, :], c22[..., 3, :],
                                                              c22[..., 1, :])
            out[..., 3, :], out[..., 5, :] = c02[..., 0, :], c02[..., 1, :]
        return out

    @property
    def noise_bias(self) -> np.ndarray:
        """The expected pseudo-spectra of the noise alone, shape (nspec, lmax+1), float64,
        muK^2, which :meth:`decouple` subtracts (needs ``bins``; zeros without noise)."""
        self._need_bins()
        return self._noise_bias.copy()

    @property
    def input_spectra(self) -> np.ndarray:
        """The input spectra C_l (no beam), shape (nspec, lmax+1), float64, muK^2, in the order
        of ``names`` (EB, TB zero when 4 spectra were given)."""
        return self._input.copy()

    @property
    def expected_bandpowers(self) -> np.ndarray:
        """What the decoupled bandpowers estimate: the input spectra through the bandpower
        windows (:meth:`sphgpu.master.Workspace.bin_theory`), shape (nspec, nbins), float64,
        muK^2, names' order. For a C_l constant over each bin it is the binned input
        ``bins.bin_cell(input_spectra)``; otherwise it differs from it by the windows' leakage
        between neighbouring bins."""
        self._need_bins()
        return self._through_workspaces(self._input, "bin_theory")

    @property
    def bandpowers(self) -> np.ndarray:
        """Every finished simulation's decoupled bandpowers, shape (nsims, nspec, nbins),
        float64, muK^2, ordered by simulation number (``indices``), spectra as ``names``."""
        self._need_bins()
        with self._lock:
            keys = sorted(self._bandpowers)
            if not keys:
                return np.zeros((0, self.plan.nspec, self.bins.nbins))
            return np.stack([self._bandpowers[k] for k in keys])

    @property
    def bandpower_mean(self) -> np.ndarray:
        """Mean decoupled bandpowers over the simulations, shape (nspec, nbins), float64,
        muK^2."""
        self._need_bins()
        self._need(1)
        return self.bandpowers.mean(axis=0)

    @property
    def bandpower_std(self) -> np.ndarray:
        """Standard deviation of one simulation's bandpowers (ddof 1), shape (nspec, nbins),
        float64, muK^2; the error of the mean is ``bandpower_std / sqrt(nsims)``."""
        self._need_bins()
        self._need(2)
        return self.bandpowers.std(axis=0, ddof=1)

    def bandpower_covariance(self) -> np.ndarray:
        """Sample covariance of the decoupled bandpowers over the simulations (ddof 1).

        Returns
        -------
        numpy.ndarray, float64, shape (nspec * nbins, nspec * nbins), muK^4
            Spectra one after the other (all bins of TT, then EE, ... as ``names``).

        Raises
        ------
        ValueError
            Without bins, or with fewer than 2 simulations.
        """
        self._need_bins()
        self._need(2)
        b = self.bandpowers
        return np.atleast_2d(np.cov(b.reshape(b.shape[0], -1), rowvar=False))

    def _need(self, k):
        if self.nsims < k:
            raise ValueError(f"this needs at least {k} finished simulation(s); "
                             f"{self.nsims} are done: call run(nsims)")
        return self.spectra

    @property
    def rate(self) -> float:
        """Simulations per second over all runs so far (0 before the first)."""
        return self._timed / self.seconds if self.seconds > 0 else 0.0

    def expected(self, *, max_transforms: int = 50_000) -> np.ndarray:
        """The exact mean of the simulated spectra (brute force, small sizes only).

        Input spectra times beam^2, coupled by the mask (and the pixelisation), plus the
        noise, computed by transforming every unit a_lm and every noisy pixel once through the
        same pipeline (see :func:`sphgpu.sims.pipeline.expected_spectra`).

        Parameters
        ----------
        max_transforms : int
            Refuse sizes that need more transforms than this.

        Returns
        -------
        numpy.ndarray, float64, shape (nspec, lmax+1), muK^2

        Raises
        ------
        ValueError
            When the size needs more than ``max_transforms`` transforms (nside above ~16).
        """
        return expected_spectra(self.plan, self._local_backend(),
                                max_transforms=max_transforms)

    # ------------------------------------------------------------------ running
    def stop(self) -> None:
        """Ask a run in progress (in another thread) to end after its current batch."""
        self._stop.set()

    def _local_backend(self) -> str:
        return backends.resolve(self.backend, "sht")

    def _auto_batch(self, name) -> int:
        return auto_batch_size(self.plan, name)

    def run(self, nsims, *, progress=True, client=None, batch_size=None) -> "MonteCarlo":
        """Run ``nsims`` more simulations (the lowest numbers not yet done) and keep them.

        Parameters
        ----------
        nsims : int
            How many simulations to add (>= 0).
        progress : bool or callable
            True: a progress bar (a widget in a notebook, a line on stderr in a terminal);
            a callable ``progress(done, total)`` is called after every batch; False: silent.
        client : distributed.Client, optional
            Spread the batches over the workers of this Dask cluster (GPU workers when it has
            any and ``backend`` is "auto" or "cuda"); None: run here.
        batch_size : int, optional
            Simulations per batch (a task, on a cluster); default: the object's, else chosen
            from memory (on a cluster, from a worker's device).

        Returns
        -------
        MonteCarlo
            This object, holding its earlier simulations and the new ones. A run stopped by
            :meth:`stop` or Ctrl-C (KeyboardInterrupt) returns early with every finished batch
            kept and ``stopped`` set; ``run`` again continues.

        Raises
        ------
        ValueError, TypeError
            ``nsims`` or ``batch_size`` not a whole number >= 0 (>= 1 for batch_size).
        """
        nsims = check_int("nsims", nsims, minimum=0)
        if batch_size is not None:
            batch_size = check_int("batch_size", batch_size, minimum=1)
        todo = self._next(nsims)
        self._stop.clear()
        self.stopped = False
        if not todo:
            return self
        show = _Progress(progress, self.nsims + len(todo))
        t0 = time.perf_counter()
        self._run_from = self.nsims
        try:
            if client is None:
                self._run_here(todo, batch_size, show, t0)
            else:
                from ._dask import run_on_cluster

                run_on_cluster(self, client, todo, batch_size, show, t0)
        except KeyboardInterrupt:
            self.stopped = True
        finally:
            self.seconds += time.perf_counter() - t0
            self._timed += self.nsims - self._run_from
        if self._stop.is_set() and self.nsims < self._run_from + len(todo):
            self.stopped = True
        if self.stopped:
            print(f"sphgpu.sims: stopped with {self.nsims} simulations; run(more) continues",
                  file=sys.stderr)
        return self

    def _next(self, count):
        """The ``count`` lowest simulation numbers not yet done."""
        with self._lock:
            out, i = [], 0
            while len(out) < count:
                if i not in self._results:
                    out.append(i)
                i += 1
            return out

    def _keep(self, indices, spectra, show, t0):
        # decoupled here, on the client, for a local run and a cluster's alike: one product
        bandpowers = self.decouple(spectra) if self.bins is not None else None
        with self._lock:
            for q, (i, s) in enumerate(zip(indices, spectra)):
                self._results[int(i)] = s
                if bandpowers is not None:
                    self._bandpowers[int(i)] = bandpowers[q]
        show(self.nsims, (self.nsims - self._run_from) / max(time.perf_counter() - t0, 1e-9))

    def _run_here(self, todo, batch_size, show, t0):
        name = self._local_backend()
        size = batch_size or self.batch_size or self._auto_batch(name)
        for start in range(0, len(todo), size):
            if self._stop.is_set():
                return
            part = todo[start:start + size]
            tune = tunes(len(part), size, start == 0)
            self._keep(part, simulate_batch(self.plan, part, name, tune=tune), show, t0)

    def __repr__(self):
        p = self.plan
        if self.bins is not None:
            return (f"MonteCarlo(nside={p.nside}, lmax={p.lmax}, pol={p.pol}, "
                    f"nsims={self.nsims}, seed={p.seed}, nbins={self.bins.nbins})")
        return (f"MonteCarlo(nside={p.nside}, lmax={p.lmax}, pol={p.pol}, "
                f"nsims={self.nsims}, seed={p.seed})")


def simulate_spectra(cls, nside, nsims, lmax=None, *, progress=True, client=None, **options):
    """Run a Monte Carlo of pseudo-spectra and return it (see :class:`MonteCarlo`).

    Parameters
    ----------
    cls : array_like, float64, muK^2
        Input spectra: (L,) temperature, or (4 or 6, L) with ``pol=True``.
    nside : int
        HEALPix resolution.
    nsims : int
        Number of simulations.
    lmax : int, optional
        Band limit; default ``3 * nside - 1``.
    progress : bool or callable
        As :meth:`MonteCarlo.run`.
    client : distributed.Client, optional
        Spread the batches over this Dask cluster's workers.
    **options
        Any keyword argument of :class:`MonteCarlo` (``pol``, ``fwhm``, ``beam_window``,
        ``mask``, ``noise_sigma``, ``noise_cls``, ``iter``, ``seed``, ``batch_size``,
        ``backend``, ``bins``).

    Returns
    -------
    MonteCarlo
        With ``spectra`` (nsims, nspec, lmax+1), ``mean``, ``std`` and ``covariance()``; with
        ``bins``, ``bandpowers`` (nsims, nspec, nbins), ``bandpower_mean`` and
        ``bandpower_covariance()``.

    Raises
    ------
    ValueError, TypeError
        Bad input, naming the argument.
    """
    return MonteCarlo(cls, nside, lmax, **options).run(nsims, progress=progress, client=client)
