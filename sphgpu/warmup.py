"""``sphgpu.warmup()``: pay the first-call costs (compilation, autotuning, cost-model timing) up
front, with a line of progress for each, instead of inside the first real call.

What is slow the first time in a process: compiling the Numba kernels (on a machine's first
process; later ones load their cubins from sphgpu's disk cache, :mod:`sphgpu._kernel_cache`),
creating the CUDA context and cuFFT plans, and,
at a new problem size, the SHT's launch autotuner (measured once per GPU and size, then kept in
``~/.cache/sphgpu``) and the measured cost model of ``optimize_split``. Each step below runs the
public function on small or given inputs, so it warms exactly what a user's call will use.
"""

from __future__ import annotations

import time

import numpy as np

from . import _tuning
from ._validate import check_int

__all__ = ["warmup", "STEPS"]

#: the steps of :func:`warmup`, in order
STEPS = ("sht", "sort", "pair_counts", "convolve", "cost_model")


def warmup(nside=None, lmax=None, *, backend="auto", steps=None,
           sort_dtypes=("float64", "float32", "int64", "int32", "uint64", "uint32"),
           batch=1, pol=False, progress=None) -> dict:
    """Compile and tune now what is slow the first time, and say what is being done.

    Parameters
    ----------
    nside, lmax : int, optional
        The resolution and band limit the transforms will be called with: the SHT is run (and,
        on a GPU, its launch parameters tuned) at exactly this size, and the "cost_model" step
        times ``optimize_split``'s measured cost model for it. Default: nside 32, lmax
        2 * nside (kernels compiled, nothing size-specific tuned).
    backend : {"auto", "cuda", "cpu", "reference"}
        The backend the calls will use.
    steps : sequence of str, optional
        Which of :data:`STEPS` to run ("sht", "sort", "pair_counts", "convolve", and
        "cost_model", which needs ``nside``). Default: all but "cost_model", which is added
        when ``nside`` is given.
    sort_dtypes : sequence of dtype names
        Key dtypes to compile the sort for (each dtype compiles its own kernels), with and
        without the permutation.
    batch : int >= 1
        Maps the transforms will take at once (a Monte Carlo's batch, ``alm2map`` of a
        ``(k, nalm)`` array). On a GPU a launch of several maps has launch parameters tuned
        for it apart from single maps (at nside 2048 the first batch of a machine spent 16 s
        tuning them), so the "sht" step also runs a batch of this size (temperature maps).
        Default 1: single maps only.
    pol : bool
        Also warm the polarized transforms (I, Q, U <-> T, E, B; spin-2 kernels, tuned apart
        from spin 0): one set, and a batch of ``batch`` sets when ``batch`` > 1.
    progress : callable(str) or False, optional
        Called with one line before and after each step; default: print it (shown under the
        running cell in a notebook), False: say nothing.

    Returns
    -------
    dict
        Wall seconds of each step that ran, by step name.
    """
    say = _tuning.print_progress if progress is None else progress or (lambda s: None)
    if steps is None:
        steps = STEPS if nside is not None else STEPS[:-1]
    steps = tuple(steps)
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        raise ValueError(f"steps must be among {STEPS}, got {unknown}")
    if "cost_model" in steps and nside is None:
        raise ValueError("the 'cost_model' step needs nside (and lmax): the resolution to time")
    nside = check_int("nside", 32 if nside is None else nside, minimum=1)
    lmax = check_int("lmax", 2 * nside if lmax is None else lmax, minimum=0)
    batch = check_int("batch", batch, minimum=1)
    try:
        dtypes = [np.dtype(d) for d in sort_dtypes]
    except TypeError as e:
        raise TypeError(f"sort_dtypes must name NumPy dtypes, got {sort_dtypes!r}: {e}") from None
    bad = [d.name for d in dtypes if d.kind not in "iuf"]
    if bad:
        raise TypeError(f"sort_dtypes must be integer or float dtypes, got {bad}")

    if not isinstance(pol, (bool, np.bool_)):
        raise TypeError(f"pol must be True or False, got {pol!r}")
    run = {"sht": lambda: _sht(nside, lmax, backend, batch, bool(pol)),
           "sort": lambda: _sort(dtypes, backend),
           "pair_counts": lambda: _pair_counts(backend),
           "convolve": lambda: _convolve(backend),
           "cost_model": lambda: _cost_model(nside, lmax, backend, say)}
    what = {"sht": f"the transforms at nside {nside}, lmax {lmax}"
                   + (f" (single maps and batches of {batch})" if batch > 1 else "")
                   + (", polarized too" if pol else ""),
            "sort": f"the radix sort ({', '.join(d.name for d in dtypes)})",
            "pair_counts": "the pair counts",
            "convolve": "the real-space convolution",
            "cost_model": f"optimize_split's measured cost model at nside {nside}, lmax {lmax}"}
    seconds = {}
    total = time.perf_counter()
    for i, step in enumerate(steps):
        say(f"warming up {what[step]} ({i + 1}/{len(steps)})")
        t0 = time.perf_counter()
        run[step]()
        seconds[step] = time.perf_counter() - t0
        say(f"  done in {seconds[step]:.1f} s")
    say(f"warm-up finished in {time.perf_counter() - total:.1f} s")
    return seconds


def _sht(nside, lmax, backend, batch=1, pol=False):
    from . import backends
    from ._device import array_module
    from .sht import alm2map, map2alm

    rng = np.random.default_rng(0)
    npix = 12 * nside * nside
    m = rng.standard_normal(npix)
    alm2map(map2alm(m, lmax, backend=backend), nside, lmax=lmax, backend=backend)
    # batches are made where the transforms run (device arrays on a GPU, as a Monte Carlo's
    # maps are): at nside 2048 a batch of 16 polarized maps is 19 GB, which as host arrays
    # would take a Dask GPU worker's share of host memory and a copy each way. Rows repeat
    # one random map: kernels and launch parameters depend on the sizes, not the values.
    xp = array_module() if backends.info(backends.resolve(backend, "sht")).gpu else np
    one = xp.asarray(m)
    runs = [((batch,), False)] if batch > 1 else []
    if pol:
        runs += [((3,), True)] + ([((batch, 3), True)] if batch > 1 else [])
    for lead, polarized in runs:
        maps = xp.broadcast_to(one, lead + (npix,)).copy()
        alm2map(map2alm(maps, lmax, pol=polarized, backend=backend), nside, lmax=lmax,
                pol=polarized, backend=backend)


def _sort(dtypes, backend):
    from .sort import argsort, radix_sort

    rng = np.random.default_rng(0)
    for dt in dtypes:
        if dt.kind == "f":
            keys = rng.standard_normal(257).astype(dt)
        else:
            info = np.iinfo(dt)
            keys = rng.integers(max(info.min, -1000), min(info.max, 1000), 257).astype(dt)
        radix_sort(keys, backend=backend)
        argsort(keys, backend=backend)


def _pair_counts(backend):
    from .tpacf import AngularBins, pair_counts

    rng = np.random.default_rng(0)
    bins = AngularBins.log(0.5, 10.0, 4)
    ra, dec = rng.uniform(0, 20, 40), rng.uniform(-10, 10, 40)
    ra2, dec2 = rng.uniform(0, 20, 50), rng.uniform(-10, 10, 50)
    pair_counts(ra, dec, bins=bins, backend=backend)
    pair_counts(ra, dec, ra2, dec2, bins=bins, backend=backend)


def _convolve(backend):
    from .convolve import RadialKernel, convolve

    nside = 2
    m = np.random.default_rng(0).standard_normal(12 * nside * nside)
    convolve(m, RadialKernel.gaussian(1200.0, 3 * nside), method="realspace", theta_cut=0.8,
             backend=backend)


def _cost_model(nside, lmax, backend, say):
    from . import backends
    from .convolve import MeasuredCostModel

    kw = {}
    if not backends.info(backends.resolve(backend, "convolve")).gpu:
        kw = dict(harmonic_backends=("cpu",), realspace_backends=("cpu",))
    MeasuredCostModel(nside, lmax, progress=say, **kw)
