"""Choosing the split: scan theta_cut, bisect l_cut for the error bound, price each candidate
with a cost model, and compare with the all-harmonic and all-real-space plans.

The result is a :class:`Plan` that says what it will do and why (``print(plan)``), carries
every candidate it considered (for plots), and tells the executor what to run
(:meth:`Plan.parts`; ``plan.apply(maps)`` is ``convolve(maps, plan)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import backends
from .._validate import as_maps, check_int
from ..geometry import RingGeometry
from .cost import CostModel, MeasuredCostModel, PaperCostModel, resolve_cost_model
from .kernels import ARCMIN, RadialKernel
from .parts import Parts
from .run import execute
from .split import DEFAULT_ALPHA, FIT_PRESETS, KernelSplit, SplitFitter, _check_kernel

__all__ = ["Plan", "Candidate", "optimize_split", "plan_for_cuts", "default_theta_grid",
           "FIT_PRESETS", "SMALLEST_REACHABLE_ERROR"]

#: Below this the float64 transforms' own rounding dominates: no plan can promise less.
SMALLEST_REACHABLE_ERROR = 1e-12


def default_theta_grid(lmax: int, steps: int = 20) -> np.ndarray:
    """The theta_cut values (support radii) that :func:`optimize_split` scans by default.

    30 arcmin steps at lmax 4096, scaled by 4096 / lmax (the same number of pixels per support
    at any resolution), capped at pi. (The paper stepped its theta_cut, the support's full
    width, by 30 arcmin: :meth:`PaperCostModel.theta_grid` gives those radii.)

    Parameters
    ----------
    lmax : int
        Band limit of the kernel.
    steps : int
        Number of steps.

    Returns
    -------
    ndarray, shape (1 to steps,), float64
        Radians, increasing; ``[pi]`` (the whole sphere) for lmax < 12, where the first step
        would already pass pi (an empty grid had made :func:`optimize_split` blame a
        theta_grid its caller never gave).
    """
    step = 30.0 * ARCMIN * 4096.0 / max(lmax, 1)
    grid = step * np.arange(1, steps + 1)
    grid = grid[grid <= math.pi]
    return grid if grid.size else np.array([math.pi])


@dataclass(frozen=True)
class Candidate:
    """One priced option of :func:`optimize_split`; the parameters are also its attributes.

    Parameters
    ----------
    method : {"harmonic", "split", "realspace"}
        The kind of plan.
    l_cut : int
        lmax for "harmonic", -1 for "realspace".
    theta_cut : float
        Support radius in radians; 0 for "harmonic".
    error : float
        Predicted error (the paper's sigma, alpha included).
    time_harmonic, time_realspace, time_total : float
        Predicted seconds of each part and of the whole.
    harmonic_backend, realspace_backend : str or None
        Where each part would run (None: no such part).
    """

    method: str                 # "harmonic", "split" or "realspace"
    l_cut: int                  # lmax for harmonic, -1 for real space only
    theta_cut: float            # radians; 0 for harmonic
    error: float                # predicted (alpha included)
    time_harmonic: float
    time_realspace: float
    time_total: float
    harmonic_backend: str | None
    realspace_backend: str | None

    @property
    def theta_cut_arcmin(self) -> float:
        """``theta_cut`` in arcminutes."""
        return self.theta_cut / ARCMIN


@dataclass(eq=False)
class Plan:
    """The optimizer's choice for one kernel, resolution and error bound.

    Made by :func:`optimize_split` or :func:`plan_for_cuts`; the parameters are also its
    attributes. ``print(plan)`` says what it does and why; ``plan.apply(maps)`` runs it.

    Parameters
    ----------
    kernel : RadialKernel
        The kernel.
    nside : int
        HEALPix resolution the plan was priced for.
    error_bound : float
        The bound it was chosen for.
    alpha : float
        Error factor of Eq. 6.
    cost_model : CostModel
        The model that priced it.
    method : {"harmonic", "split", "realspace"}
    l_cut : int
        Harmonic band limit (lmax for "harmonic", -1 for "realspace").
    theta_cut : float
        Real-space support radius in radians (0 for "harmonic"); ``theta_cut_arcmin`` too, and
        ``paper_theta_cut_arcmin`` as the paper's Table 1 states it (the full width).
    predicted_error : float
        The paper's sigma (Eq. 6, alpha included) of the chosen split.
    time_harmonic, time_realspace, time_total : float
        Predicted seconds of each part and of the whole (parts on different devices overlap).
    time_all_harmonic : float
        Predicted seconds of the whole kernel in harmonic space (the baseline).
    harmonic_backend, realspace_backend : str or None
        Where each part runs (None: no such part).
    all_harmonic : Candidate
        The baseline, priced.
    all_realspace : Candidate or None
        The cheapest real-space-only plan that meets the bound, if any.
    candidates : list of Candidate
        Every (theta_cut, smallest l_cut) the scan priced, for plots.
    split : KernelSplit or None
        The fitted kernels of the chosen plan.
    fit : str
        The fit preset ("custom" for a fitter passed in).
    measured : PlanMeasurement or None
        Measured times and errors of this plan (:func:`sphgpu.convolve.measure_plan`).

    Attributes
    ----------
    speedup : float
        time_all_harmonic / time_total.
    """

    kernel: RadialKernel
    nside: int
    error_bound: float
    alpha: float
    cost_model: CostModel
    method: str
    l_cut: int
    theta_cut: float
    predicted_error: float
    time_harmonic: float
    time_realspace: float
    time_total: float
    time_all_harmonic: float
    harmonic_backend: str | None
    realspace_backend: str | None
    all_harmonic: Candidate
    all_realspace: Candidate | None
    candidates: list = field(default_factory=list)
    split: KernelSplit | None = None
    fit: str = "sphgpu"
    measured: object = None

    @property
    def meets_bound(self) -> bool:
        """Whether the predicted error is within the error bound."""
        return self.predicted_error <= self.error_bound

    @property
    def lmax(self) -> int:
        """Band limit of the kernel the plan convolves with."""
        return self.kernel.lmax

    @property
    def theta_cut_arcmin(self) -> float:
        """``theta_cut`` in arcminutes."""
        return self.theta_cut / ARCMIN

    @property
    def paper_theta_cut_arcmin(self) -> float:
        """theta_cut as the paper's Table 1 states it (arcmin): with the paper's cost model,
        whatever its ``theta_cut_is`` says (the support's full width by default); otherwise
        the support radius, ``theta_cut_arcmin``."""
        if isinstance(self.cost_model, PaperCostModel):
            return float(self.cost_model.paper_theta_cut(self.theta_cut)) / ARCMIN
        return self.theta_cut_arcmin

    @property
    def speedup(self) -> float:
        """Predicted all-harmonic time over the plan's time (inf for a zero time)."""
        return self.time_all_harmonic / self.time_total if self.time_total > 0 else math.inf

    def apply(self, maps, *, backend=None):
        """Convolve ``maps`` with the kernel as this plan says (see :func:`convolve`): pixels
        equal to ``healpy.UNSEEN`` and the masked pixels of a ``numpy.ma`` array enter as zero
        and come out as ``UNSEEN``.

        Parameters
        ----------
        maps : array, shape (npix,) or (k, npix), float64; NumPy, CuPy or Numba
            HEALPix RING maps at the plan's nside.
        backend : {"cuda", "cpu", "reference", "auto"}, optional
            Runs both parts there instead of the plan's own backends.

        Returns
        -------
        array of the shape and kind of ``maps``, float64

        Raises
        ------
        ValueError
            If ``maps`` does not have the plan's number of pixels.
        TypeError
            If ``maps`` is a GPU array and no part runs on the GPU.
        """
        arr, bad = as_maps("maps", maps)
        return execute(self.parts(backend, npix=arr.shape[-1]), arr, bad, maps)

    def parts(self, backend=None, *, npix=None):
        """What the executor runs for this plan: its method on its own backends, or both
        parts on ``backend`` when that names one. Plans priced with the paper's cost model
        name the paper's hardware, so their parts run on "auto".

        Parameters
        ----------
        backend : {"cuda", "cpu", "reference", "auto"} or None
            None or "auto": the plan's own backends.
        npix : int, optional
            Pixels of the maps it will run on, checked against the plan's nside.

        Returns
        -------
        Parts

        Raises
        ------
        ValueError
            If ``npix`` is not the plan's number of pixels, or ``backend`` names no backend.
        """
        geom = RingGeometry.healpix(self.nside)
        if npix is not None and npix != geom.npix:
            raise ValueError(f"maps has {npix} pixels but the plan is for nside {self.nside} "
                             f"({geom.npix} pixels)")
        own = isinstance(self.cost_model, MeasuredCostModel)
        named = backends.named(backend)
        hb = named or (self.harmonic_backend if own else None) or "auto"
        rb = named or (self.realspace_backend if own else None) or "auto"
        if self.method == "harmonic":
            return Parts.of(geom, bl=self.kernel.bl, backend=hb)
        return Parts.of_split(geom, self.split, backend=rb, harmonic_backend=hb)

    def explain(self) -> str:
        """What this plan does and why, in a few lines of text.

        Returns
        -------
        str
        """
        k = self.kernel
        lines = [f"Plan for {k.name} (lmax {k.lmax}) at nside {self.nside}, error bound "
                 f"{self.error_bound:g} (alpha = {self.alpha:g}), cost model "
                 f"'{self.cost_model.name}':"]
        if self.method == "harmonic":
            lines.append(f"  all harmonic on {self.harmonic_backend}: predicted "
                         f"{_fmt_t(self.time_total)}; no split met the bound more cheaply.")
        elif self.method == "realspace":
            lines.append(f"  real space only on {self.realspace_backend} within "
                         f"{self.theta_cut_arcmin:.4g} arcmin: predicted error "
                         f"{self.predicted_error:.3g}, time {_fmt_t(self.time_total)}.")
        else:
            how = ("at the same time" if self.cost_model.concurrent(self.harmonic_backend,
                                                                      self.realspace_backend)
                   else "one after the other")
            lines.append(f"  split: harmonic part l <= {self.l_cut} on {self.harmonic_backend} "
                         f"({_fmt_t(self.time_harmonic)}) and real-space part within "
                         f"{self.theta_cut_arcmin:.4g} arcmin on {self.realspace_backend} "
                         f"({_fmt_t(self.time_realspace)}), {how}: {_fmt_t(self.time_total)}.")
            lines.append(f"  predicted error {self.predicted_error:.3g} "
                         + (f"<= bound {self.error_bound:g}." if self.meets_bound else
                            f"> bound {self.error_bound:g}: this plan misses the bound."))
        lines.append(f"  all harmonic: {_fmt_t(self.time_all_harmonic)} -> speedup "
                     f"{self.speedup:.3g}x.")
        if self.all_realspace is not None:
            r = self.all_realspace
            lines.append(f"  all real space: within {r.theta_cut_arcmin:.4g} arcmin, "
                         f"{_fmt_t(r.time_total)}.")
        else:
            lines.append("  all real space: no support in the scanned range meets the bound.")
        feasible = [c for c in self.candidates if c.method == "split"]
        if feasible:
            lines.append(f"  scanned {len(self.candidates)} theta_cut values; "
                         f"{len(feasible)} gave a valid split.")
        if isinstance(self.cost_model, PaperCostModel):
            if self.method != "harmonic":
                lines.append(f"  in the paper's terms (its Table 1): l_cut {self.l_cut}, theta_cut "
                             f"{self.paper_theta_cut_arcmin:.4g} arcmin.")
            lines.append(f"  ({self.cost_model.describe()})")
        return "\n".join(lines)

    __str__ = explain

    def __repr__(self):
        return (f"Plan(method={self.method!r}, l_cut={self.l_cut}, theta_cut_arcmin="
                f"{self.theta_cut_arcmin:.4g}, predicted_error={self.predicted_error:.3g}, "
                f"time_total={self.time_total:.3g} s, speedup={self.speedup:.3g})")


def _fmt_t(t):
    if t >= 1:
        return f"{t:.3g} s"
    return f"{t * 1e3:.3g} ms"


def _check_bound(error_bound):
    if isinstance(error_bound, bool) or not isinstance(error_bound, (int, float, np.floating)):
        raise TypeError(f"error_bound must be a number, got {type(error_bound).__name__}")
    e = float(error_bound)
    if not math.isfinite(e) or e <= 0:
        raise ValueError(f"error_bound must be a positive number, got {error_bound!r}")
    if e < SMALLEST_REACHABLE_ERROR:
        raise ValueError(f"error_bound={e:g} is unreachable: the smallest reachable bound is "
                         f"{SMALLEST_REACHABLE_ERROR:g} (the float64 rounding of the transforms)")
    return e


def _price(cm, l_cut, theta, err, nside, lmax):
    """Candidates of one (l_cut, theta_cut) on every backend pair the cost model knows."""
    method = "realspace" if l_cut < 0 else "split"
    out = []
    for rb in cm.realspace_backends:
        t_r = cm.realspace_time(theta, nside, rb)
        for hb in (cm.harmonic_backends if l_cut >= 0 else (None,)):
            t_h = cm.harmonic_time(l_cut, nside, lmax, hb) if hb else 0.0
            total = cm.split_time(t_h, t_r, hb, rb) if hb else t_r
            out.append(Candidate(method, l_cut, theta, err, t_h, t_r, total, hb, rb))
    return out


def _all_harmonic(cm, nside, lmax):
    """The baseline: the whole kernel in harmonic space on the cheapest backend."""
    hb = min(cm.harmonic_backends, key=lambda b: cm.harmonic_time(lmax, nside, lmax, b))
    t = cm.harmonic_time(lmax, nside, lmax, hb)
    return Candidate("harmonic", lmax, 0.0, 0.0, t, 0.0, t, hb, None)


def make_fitter(kernel, theta_max, *, input_cl=None, alpha=DEFAULT_ALPHA, fit="sphgpu"):
    """The :class:`SplitFitter` of a fit preset (:data:`FIT_PRESETS`)."""
    return SplitFitter(kernel, theta_max, input_cl=input_cl, alpha=alpha, fit=fit)


def optimize_split(kernel, *, nside, error_bound=1e-5, cost_model="measured", alpha=None,
                   input_cl=None, theta_grid=None, methods=("harmonic", "split", "realspace"),
                   fit="sphgpu", cost_model_options=None, fitter=None, prune=True,
                   search=None) -> Plan:
    """Find the cheapest way to convolve HEALPix maps of ``nside`` with ``kernel`` within
    ``error_bound`` (the paper's fractional error sigma, Eq. 6).

    For every theta_cut of ``theta_grid`` (radians; :func:`default_theta_grid` by default) the
    smallest l_cut meeting the bound is found by bisection; each (l_cut, theta_cut) is priced
    with ``cost_model`` ("paper", "measured" or a :class:`CostModel`) on every pair of backends
    it knows, and compared with the whole kernel in harmonic space and the cheapest real-space-
    only plan.

    Parameters
    ----------
    kernel : RadialKernel or array of K_l
        The kernel (its lmax is the band limit).
    nside : int
        HEALPix resolution of the maps.
    error_bound : float
        The paper's fractional error bound, >= 1e-12.
    cost_model : "paper", "measured" or CostModel
        How to price the parts.
    alpha : float, optional
        Error factor (default 5, the paper's; see :func:`calibrate_alpha` to measure it).
    input_cl : scalar or array, optional
        C_l^input of the maps (see :class:`SplitFitter`; default 1).
    theta_grid : array, optional
        Support radii to scan, radians in (0, pi] (default :func:`default_theta_grid`).
    methods : tuple
        Which kinds of plan may be chosen ("harmonic" is always priced as the baseline).
    fit : "sphgpu" or "paper"
        Fit preset (:data:`FIT_PRESETS`).
    cost_model_options : dict, optional
        Keyword arguments of the cost model's constructor (for "paper" or "measured").
    fitter : SplitFitter, optional
        Reuse a fitter (its kernel, alpha and input_cl win over the arguments).
    prune : bool
        Stop the scan at the first theta_cut whose real-space part alone costs more than the
        best plan found so far (real-space time grows with theta_cut). ``False`` scans the
        whole grid (for plots of l_cut against theta_cut).
    search : "ripple" or "bisect", optional
        How the smallest l_cut is found at each theta_cut (:meth:`SplitFitter.smallest_l_cut`):
        "bisect" is the paper's plain binary search, the default with ``fit="paper"``;
        "ripple" (the default otherwise) also probes the error's ripple below the bisection's
        answer and so finds smaller valid l_cut.

    Returns
    -------
    Plan

    Raises
    ------
    TypeError
        If ``kernel`` is not a RadialKernel or array, or ``error_bound`` not a number.
    ValueError
        For a bad ``nside``, ``methods``, ``theta_grid``, ``search`` or ``cost_model``, a
        kernel of lmax 0, or an ``error_bound`` that no allowed plan reaches.
    """
    kernel = _check_kernel(kernel)
    nside = check_int("nside", nside, minimum=1)
    lmax = kernel.lmax
    if lmax < 1:
        # K_0 alone is a constant profile: no P_l(theta) part to cut at any theta_cut
        raise ValueError(f"kernel has lmax={lmax} (only K_0, a constant profile): there is "
                         "nothing to split; convolve it in harmonic space "
                         "(sphgpu.convolve.convolve(maps, kernel, method='harmonic'))")
    error_bound = _check_bound(error_bound)
    alpha = DEFAULT_ALPHA if alpha is None else float(alpha)
    bad = set(methods) - {"harmonic", "split", "realspace"}
    if bad or not methods:
        raise ValueError(f"methods must be a non-empty subset of ('harmonic', 'split', "
                         f"'realspace'), got {methods!r}")
    if theta_grid is None:
        theta_grid = default_theta_grid(lmax)
    theta_grid = np.asarray(theta_grid, dtype=np.float64)
    if theta_grid.ndim != 1 or theta_grid.size == 0 or np.any(theta_grid <= 0) or np.any(
            theta_grid > math.pi) or not np.all(np.isfinite(theta_grid)):
        raise ValueError("theta_grid must be a non-empty 1-D array of angles in (0, pi] radians")
    if search is None:
        search = "bisect" if fit == "paper" else "ripple"
    if search not in ("ripple", "bisect"):
        raise ValueError(f"search must be 'ripple' or 'bisect', got {search!r}")
    cm = resolve_cost_model(cost_model, nside, lmax, **(cost_model_options or {}))
    if fitter is None:
        fitter = make_fitter(kernel, float(theta_grid.max()), input_cl=input_cl, alpha=alpha,
                             fit=fit)

    all_harm = _all_harmonic(cm, nside, lmax)
    t_full = all_harm.time_total

    candidates = []
    best_err_seen = math.inf
    best_total = t_full if "harmonic" in methods else math.inf
    hint = None
    for theta in np.sort(theta_grid):
        if fitter.n_basis(theta) == 0:
            continue
        if prune and min(cm.realspace_time(float(theta), nside, rb)
                         for rb in cm.realspace_backends) >= best_total:
            break        # the real-space part alone costs more than the best plan so far
        l_cut = fitter.smallest_l_cut(float(theta), error_bound, lo=-1, hint=hint,
                                      search=search)
        if l_cut is None:
            best_err_seen = min(best_err_seen, fitter.error(lmax - 1, float(theta)))
            continue
        hint = l_cut
        err = fitter.error(l_cut, float(theta))
        best_err_seen = min(best_err_seen, err)
        priced = _price(cm, l_cut, float(theta), err, nside, lmax)
        candidates += priced
        if priced[0].method in methods:
            best_total = min(best_total, min(c.time_total for c in priced))

    real_only = [c for c in candidates if c.method == "realspace"]
    all_real = min(real_only, key=lambda c: c.time_total) if real_only else None
    allowed = [c for c in candidates if c.method in methods]
    if "harmonic" in methods:
        allowed.append(all_harm)
    if not allowed:
        raise ValueError(
            f"error_bound={error_bound:g} is unreachable with methods={tuple(methods)} over "
            f"theta_cut up to {theta_grid.max() / ARCMIN:.4g} arcmin: the smallest reachable "
            f"bound there is {best_err_seen:.3g}; allow 'harmonic', raise error_bound or "
            "widen theta_grid")
    chosen = min(allowed, key=lambda c: c.time_total)
    split = None
    if chosen.method != "harmonic":
        split = fitter.split(chosen.l_cut, chosen.theta_cut)
    return Plan(kernel=kernel, nside=nside, error_bound=error_bound, alpha=fitter.alpha,
                cost_model=cm, method=chosen.method, l_cut=chosen.l_cut,
                theta_cut=split.theta_cut if split is not None else 0.0,
                predicted_error=chosen.error, time_harmonic=chosen.time_harmonic,
                time_realspace=chosen.time_realspace, time_total=chosen.time_total,
                time_all_harmonic=t_full, harmonic_backend=chosen.harmonic_backend,
                realspace_backend=chosen.realspace_backend, all_harmonic=all_harm,
                all_realspace=all_real, candidates=candidates, split=split,
                fit=fit if isinstance(fit, str) else "custom")


def plan_for_cuts(kernel, *, nside, l_cut, theta_cut, error_bound=1e-5, cost_model="measured",
                  alpha=None, input_cl=None, fit="sphgpu", cost_model_options=None,
                  fitter=None) -> Plan:
    """The :class:`Plan` of cuts chosen by hand, priced as :func:`optimize_split` prices its
    candidates (on the cheapest pair of backends the cost model knows).

    Parameters
    ----------
    kernel : RadialKernel or array of K_l
        The kernel.
    nside : int
        HEALPix resolution of the maps.
    l_cut : int
        -1 (real space only) to lmax; ``l_cut >= lmax`` or ``theta_cut == 0`` is the whole
        kernel in harmonic space (method "harmonic", predicted error 0).
    theta_cut : float
        Real-space support radius in radians, in [0, pi].
    error_bound, cost_model, alpha, input_cl, fit, cost_model_options, fitter
        As in :func:`optimize_split`.

    Returns
    -------
    Plan
        It may miss ``error_bound``: :attr:`Plan.meets_bound` says whether it does;
        ``candidates`` holds the plan's own pricing on every backend pair.

    Raises
    ------
    TypeError
        If ``theta_cut`` is not a number.
    ValueError
        If ``l_cut`` or ``theta_cut`` is out of range, or ``l_cut=-1`` with ``theta_cut=0``.
    """
    kernel = _check_kernel(kernel)
    nside = check_int("nside", nside, minimum=1)
    lmax = kernel.lmax
    l_cut = check_int("l_cut", l_cut, minimum=-1)
    if isinstance(theta_cut, bool) or not isinstance(theta_cut, (int, float, np.floating)):
        raise TypeError(f"theta_cut must be a number of radians, got "
                        f"{type(theta_cut).__name__}")
    theta_cut = float(theta_cut)
    if not 0.0 <= theta_cut <= math.pi:
        raise ValueError(f"theta_cut must be in [0, pi] radians, got {theta_cut!r}")
    harmonic = l_cut >= lmax or theta_cut == 0.0
    if harmonic and l_cut < 0:
        raise ValueError("l_cut=-1 (real space only) needs theta_cut > 0")
    error_bound = _check_bound(error_bound)
    alpha = DEFAULT_ALPHA if alpha is None else float(alpha)
    cm = resolve_cost_model(cost_model, nside, lmax, **(cost_model_options or {}))
    all_harm = _all_harmonic(cm, nside, lmax)
    split = None
    if harmonic:
        chosen, priced = all_harm, [all_harm]
    else:
        if fitter is None:
            fitter = make_fitter(kernel, theta_cut, input_cl=input_cl, alpha=alpha, fit=fit)
        split = fitter.split(l_cut, theta_cut)
        alpha = fitter.alpha
        # priced at the requested radius, as optimize_split prices its grid
        priced = _price(cm, l_cut, theta_cut, split.predicted_error, nside, lmax)
        chosen = min(priced, key=lambda c: c.time_total)
    return Plan(kernel=kernel, nside=nside, error_bound=error_bound, alpha=alpha,
                cost_model=cm, method=chosen.method, l_cut=chosen.l_cut,
                theta_cut=split.theta_cut if split is not None else 0.0,
                predicted_error=chosen.error,
                time_harmonic=chosen.time_harmonic, time_realspace=chosen.time_realspace,
                time_total=chosen.time_total, time_all_harmonic=all_harm.time_total,
                harmonic_backend=chosen.harmonic_backend,
                realspace_backend=chosen.realspace_backend, all_harmonic=all_harm,
                all_realspace=None, candidates=priced, split=split,
                fit=fit if isinstance(fit, str) else "custom")
