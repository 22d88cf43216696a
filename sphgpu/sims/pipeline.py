"""One batch of simulated skies, from seeds to pseudo-spectra, through a transform plan.

:class:`SimulationPlan` holds everything the simulations share (validated, as NumPy arrays),
and the transform plan (:class:`sphgpu.SHT`) of each backend it ran on;
:func:`simulate_batch` runs simulations ``indices`` of a plan and returns their spectra. Both
are module-level and picklable, so a Dask worker runs exactly what one process runs.

A simulation i draws from its own stream, keyed by
``numpy.random.SeedSequence(seed, spawn_key=(i,))`` (:mod:`sphgpu.sims.random`: counter-based,
the same numbers on the CPU and the GPU), in a fixed order: the signal a_lm, the noise a_lm
(with noise spectra), the white-noise map (with a noise sigma). So its spectra depend on
(seed, i) alone, to the rounding of the transforms of the backend, never on the batch it ran
in or the worker.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from .. import _tuning, backends, master
from .._device import array_module, to_host
from ..alm import AlmLayout
from ..sht.plan import SHT
from ..sht.spectra import alm2cl
from .random import Stream

__all__ = ["SimulationPlan", "simulate_batch", "spectrum_names", "transfer_factors"]


def spectrum_names(pol: bool) -> tuple[str, ...]:
    """Names of the measured spectra, in healpy's anafast order.

    Parameters
    ----------
    pol : bool
        Temperature only (False) or T, E, B (True).

    Returns
    -------
    tuple of str
        ("TT",), or ("TT", "EE", "BB", "TE", "EB", "TB").
    """
    return ("TT", "EE", "BB", "TE", "EB", "TB") if pol else ("TT",)


def transfer_factors(cov, rows_beam):
    """Per-l factors G_l with G_l G_l^T = B_l C_l B_l (B_l = diag of ``rows_beam`` at l).

    An eigen-decomposition, not Cholesky, so that singular spectra (BB = 0, or C_l = 0 at
    l < 2) are allowed.

    Parameters
    ----------
    cov : numpy.ndarray, float64, shape (n, n, L)
        Covariance of the n fields per l, muK^2.
    rows_beam : numpy.ndarray, float64, shape (n, L), or None
        Beam transfer function of each field (None: no beam).

    Returns
    -------
    numpy.ndarray, float64, shape (L, n, n)
        G_l, muK.
    """
    w, v = np.linalg.eigh(np.moveaxis(cov, 2, 0))
    g = v * np.sqrt(np.maximum(w, 0.0))[:, None, :]
    if rows_beam is not None:
        g = g * np.asarray(rows_beam).T[:, :, None]
    return np.ascontiguousarray(g)


@dataclass(frozen=True, eq=False)
class SimulationPlan:
    """What every simulation of a Monte Carlo shares (validated host arrays, float64).

    Made by :class:`sphgpu.sims.MonteCarlo` (which checks the inputs); picklable, so that Dask
    sends it to each worker once.

    Parameters
    ----------
    nside : int
        HEALPix resolution of the maps.
    lmax : int
        Band limit (mmax = lmax).
    pol : bool
        Temperature only (False) or T, E, B -> I, Q, U (True).
    signal : numpy.ndarray, float64, shape (lmax+1, n, n)
        Factors G_l of the beamed signal (n = 1, or 3 with ``pol``), see
        :func:`transfer_factors`; muK.
    noise_alm : numpy.ndarray or None
        The same for noise spectra (no beam), or None.
    noise_sigma : None, float or numpy.ndarray
        White noise per pixel in muK: a number, or (npix,) / (3, npix).
    mask : numpy.ndarray, float64, shape (npix,), or None
        Weights applied to every map (I, Q and U alike).
    iter : int
        Jacobi iterations of map2alm.
    seed : int
        The Monte Carlo's seed (>= 0).
    purify_b : bool
        Measure pure B (:func:`sphgpu.master.pseudo_alm_spin2`, Smith 2006) instead of the
        masked maps' B (``pol`` and an apodized ``mask`` only).

    Notes
    -----
    The transform plan of each backend (:meth:`transforms`) is made at its first batch and kept
    with the plan; it does not travel with a pickled copy (a worker makes its own).
    """

    nside: int
    lmax: int
    pol: bool
    signal: np.ndarray
    noise_alm: np.ndarray | None
    noise_sigma: object
    mask: np.ndarray | None
    iter: int
    seed: int
    purify_b: bool = False
    _transforms: dict = field(default_factory=dict, init=False, repr=False)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_transforms"] = {}
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def transforms(self, backend: str) -> SHT:
        """The transform plan of these simulations (nside, lmax = mmax) on ``backend``: made at
        the first call, then the same object, holding the backend's set-up (the GPU's tables).

        Parameters
        ----------
        backend : {"cuda", "cpu", "reference"}
            A backend name, as :func:`sphgpu.backends.resolve` gives it.

        Returns
        -------
        sphgpu.SHT
        """
        sht = self._transforms.get(backend)
        if sht is None:
            sht = self._transforms.setdefault(backend, SHT(self.nside, self.lmax, self.lmax,
                                                           backend=backend))
        return sht

    @property
    def nfields(self) -> int:
        """Fields simulated: 1 (T) or 3 (T, E, B)."""
        return 3 if self.pol else 1

    @property
    def npix(self) -> int:
        """Pixels of a map, 12 nside^2."""
        return 12 * self.nside * self.nside

    @property
    def nspec(self) -> int:
        """Spectra measured: 1 (TT) or 6 (TT, EE, BB, TE, EB, TB)."""
        return len(spectrum_names(self.pol))

    def bytes_per_simulation(self) -> int:
        """Memory a simulation holds during a batch: a_lm and maps, a few copies of each
        (the draws, the products, the transforms' outputs and work arrays), and the
        transforms' Legendre intermediate (one complex value per ring and m).

        Returns
        -------
        int
            Bytes.
        """
        nalm = AlmLayout(self.lmax).size
        legendre = 16 * (4 * self.nside) * (self.lmax + 1)
        return self.nfields * (4 * 16 * nalm + 4 * 8 * self.npix + legendre)


@functools.lru_cache(maxsize=4)
def _device_arrays(plan: SimulationPlan, device_kind: str):
    """The plan's arrays where the batch runs (cached: a worker keeps them for every batch).

    ``factors[which]`` holds, for the nonzero (i, j) entries of G_l (T-E only couple: 4 of 9),
    the factors of Re and Im of the unit normals per a_lm, as the random backends'
    ``correlate`` takes them: (rows i, columns j, fre, fim), fre = G_l[i, j] sqrt(1/2) (Re and
    Im each carry half the variance) and fim the same, but for a_l0, real: G_l[i, j] and 0.
    """
    xp = np if device_kind == "host" else array_module()
    lidx, m = AlmLayout(plan.lmax).lm()
    scale = np.where(m == 0, 1.0, math.sqrt(0.5))
    put = (lambda a: None if a is None else xp.asarray(a))
    factors = {}
    for which in ("signal", "noise_alm"):
        g = getattr(plan, which)
        if g is not None:
            ij = [(i, j) for i in range(plan.nfields) for j in range(plan.nfields)
                  if np.any(g[:, i, j])]
            fre = np.stack([g[lidx, i, j] * scale for i, j in ij])
            factors[which] = (xp.asarray([i for i, _ in ij], dtype=np.int64),
                              xp.asarray([j for _, j in ij], dtype=np.int64),
                              xp.asarray(fre), xp.asarray(np.where(m == 0, 0.0, fre)))
    # sigma as an array where the maps are, a number too: made once here, not at every
    # simulation's noise (a copy to the device that would wait for the queued transforms)
    sigma = None if plan.noise_sigma is None else put(
        np.asarray(plan.noise_sigma, dtype=np.float64).reshape(-1))
    return dict(xp=xp, factors=factors, mask=put(plan.mask), sigma=sigma)


def _draw_alm(stream, factors, out):
    """Adds the a_lm G_l z to ``out`` (n, nalm) complex128, z independent unit complex normals
    (real for m = 0): two draws of ``stream``, combined by its backend in one pass."""
    re = stream.standard_normal(out.shape)
    im = stream.standard_normal(out.shape)
    backends.load("sims", stream.backend).correlate(re, im, factors, out)


def simulate_batch(plan: SimulationPlan, indices, backend: str = "auto", *,
                   tune: bool = True) -> np.ndarray:
    """Pseudo-spectra of the simulations ``indices`` of ``plan``.

    Parameters
    ----------
    plan : SimulationPlan
    indices : sequence of int
        Simulation numbers (each draws from its own stream, see the module docstring).
    backend : {"auto", "cuda", "cpu", "reference"}
        Where the transforms run; with "cuda" every array stays on the GPU until the spectra.
    tune : bool
        Whether the GPU's launch autotuners may measure launch shapes this batch is the first
        to use. False for a run's last, smaller batch: it then takes the default launches
        instead of spending seconds tuning a shape that the run uses once (a tuning at
        nside 2048 takes seconds; 300 polarized simulations, whose last batch held 4 after
        batches of 8, took 21.0 s where 288 took 13.9 s, a difference not split further).

    Returns
    -------
    numpy.ndarray, float64, shape (len(indices), nspec, lmax+1)
        Pseudo-C_l in muK^2 (nspec 1: TT; 6 with pol: TT, EE, BB, TE, EB, TB).
    """
    if not tune:
        with _tuning.paused():
            return _simulate(plan, indices, backend)
    return _simulate(plan, indices, backend)


def _simulate(plan, indices, backend):
    sht = plan.transforms(backends.resolve(backend, "sht"))
    on_device = sht.accepts_device_arrays
    d = _device_arrays(plan, "device" if on_device else "host")
    xp = d["xp"]
    n, nalm, k = plan.nfields, AlmLayout(plan.lmax).size, len(indices)
    rngs = [Stream(plan.seed, int(i), device=on_device) for i in indices]
    alm = xp.zeros((k, n, nalm), dtype=np.complex128)
    for q, rng in enumerate(rngs):
        _draw_alm(rng, d["factors"]["signal"], alm[q])
        if "noise_alm" in d["factors"]:
            _draw_alm(rng, d["factors"]["noise_alm"], alm[q])
    shape = (k, n, nalm) if plan.pol else (k, nalm)
    maps = sht.alm2map(alm.reshape(shape), pol=plan.pol)
    mask = d["mask"]
    if d["sigma"] is not None:
        # the mask goes in with the noise, in the same pass, unless purification reads the
        # unmasked Q and U
        fused = None if plan.purify_b else mask
        for q, rng in enumerate(rngs):
            rng.add_standard_normal(maps[q], d["sigma"], fused)
        if fused is not None:
            mask = None
    alm = _masked_alm(plan, maps, mask, sht, inplace=True)
    cl = alm2cl(alm.reshape(k, n, nalm))
    return np.asarray(to_host(cl)).reshape(k, plan.nspec, plan.lmax + 1)


def _masked_alm(plan, maps, mask, sht, inplace=False):
    """a_lm (k, n, nalm) of a batch of unmasked maps (k, n, npix) or (k, npix) through the
    mask (``mask``: the plan's, where the maps are; ``inplace`` masks ``maps`` themselves, a
    batch's memory saved) by the transform plan ``sht``; with ``purify_b`` the B row is pure
    B, which reads the unmasked Q, U with the mask's derivatives."""
    if plan.purify_b:
        device = hasattr(maps, "__cuda_array_interface__")
        xp = array_module() if device else np
        t = sht.map2alm(maps[:, 0] * mask, iter=plan.iter, pol=False)
        eb = master.pseudo_alm_spin2(maps[:, 1], maps[:, 2], mask, plan.lmax,
                                     purify_b=True, iter=plan.iter, backend=sht.backend,
                                     derivatives=_mask_derivatives(plan, sht.backend, device))
        return xp.concatenate([t[:, None], eb], axis=1)
    if mask is not None and inplace:
        maps *= mask
    elif mask is not None:
        maps = maps * mask
    alm = sht.map2alm(maps, iter=plan.iter, pol=plan.pol)
    return alm.reshape(maps.shape[0], plan.nfields, alm.shape[-1])


@functools.lru_cache(maxsize=4)
def _mask_derivatives(plan: SimulationPlan, backend: str, device: bool):
    """The plan's window derivatives for purification (:func:`sphgpu.master.mask_derivatives`),
    made once per plan, backend and kind of array instead of at every batch (at nside 2048
    three transforms at lmax 3 nside - 1 and a pass over the window), with the warning of a
    window too steep for purification, then once."""
    put = array_module().asarray if device else np.asarray
    return master.mask_derivatives(put(plan.mask), iter=plan.iter, backend=backend, warn=True)


def _analysed_spectra(plan, maps, sht):
    """Pseudo-spectra (B, nspec, lmax+1) of a batch of unmasked maps, as simulate_batch
    measures them: mask, map2alm, alm2cl."""
    maps = maps.reshape((-1,) + maps.shape[-2:]) if plan.pol else maps.reshape(-1, plan.npix)
    return np.asarray(to_host(alm2cl(_masked_alm(plan, maps, plan.mask, sht))))


def expected_spectra(plan: SimulationPlan, backend: str = "auto", *,
                     max_transforms: int = 50_000, chunk: int = 512) -> np.ndarray:
    """The exact mean of :func:`simulate_batch`'s spectra, by brute force (small sizes only).

    The pipeline is linear from its unit normal draws x_b to the measured a_lm, and a spectrum
    is a quadratic form Q of those a_lm, so E[Q(sum_b x_b v_b)] = sum_b var(x_b) Q(v_b): the
    spectra of the pipeline's response v_b to each draw alone, weighted by its variance. Each
    v_b is one transform of a unit a_lm (or one noise pixel), so this costs about
    2 * n * nalm + 3 * npix transforms: it checks the simulations and gives the mode coupling of
    a mask at nside <= 16 or so.

    Parameters
    ----------
    plan : SimulationPlan
    backend : {"auto", "cuda", "cpu", "reference"}
    max_transforms : int
        Refuse (ValueError) plans that need more transforms than this.
    chunk : int
        Unit vectors transformed together.

    Returns
    -------
    numpy.ndarray, float64, shape (nspec, lmax+1)
        Expected pseudo-C_l in muK^2, in the order of :func:`spectrum_names`.

    Raises
    ------
    ValueError
        When the plan needs more than ``max_transforms`` transforms.
    """
    sht = plan.transforms(backends.resolve(backend, "sht"))
    n, layout = plan.nfields, AlmLayout(plan.lmax)
    lidx, m = layout.lm()
    # every draw: (factor table, field j, a_lm index p, unit 1 or i, variance)
    draws = [(g, j, p, u, 1.0 if m[p] == 0 else 0.5)
             for g in (plan.signal, plan.noise_alm) if g is not None
             for j in range(n) for p in range(layout.size)
             for u in ((1.0,) if m[p] == 0 else (1.0, 1j))
             if np.any(g[lidx[p], :, j])]
    sigma = None
    if plan.noise_sigma is not None:
        sigma = np.broadcast_to(np.asarray(plan.noise_sigma, dtype=np.float64),
                                (n, plan.npix) if plan.pol else (plan.npix,)).reshape(-1)
    pixels = [] if sigma is None else np.flatnonzero(sigma)
    count = len(draws) + len(pixels)
    if count > max_transforms:
        raise ValueError(f"expected_spectra would need {count} transforms (nside={plan.nside}, "
                         f"lmax={plan.lmax}), more than max_transforms={max_transforms}: it is "
                         "a brute-force check for small sizes")
    total = np.zeros((plan.nspec, plan.lmax + 1))
    shape = (n, layout.size) if plan.pol else (layout.size,)
    for start in range(0, len(draws), chunk):
        part = draws[start:start + chunk]
        alm = np.zeros((len(part), n, layout.size), dtype=np.complex128)
        for b, (g, j, p, u, _) in enumerate(part):
            alm[b, :, p] = g[lidx[p], :, j] * u
        maps = sht.alm2map(alm.reshape((-1,) + shape), pol=plan.pol)
        var = np.array([d[-1] for d in part])
        total += np.einsum("b,bsl->sl", var, _analysed_spectra(plan, maps, sht))
    for start in range(0, len(pixels), chunk):
        part = pixels[start:start + chunk]
        maps = np.zeros((len(part), sigma.size))
        maps[np.arange(len(part)), part] = sigma[part]
        maps = maps.reshape((-1,) + ((n, plan.npix) if plan.pol else (plan.npix,)))
        total += _analysed_spectra(plan, maps, sht).sum(axis=0)
    return total
