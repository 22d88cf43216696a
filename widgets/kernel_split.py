"""Kernel-split tuner: split a beam's kernel into a harmonic and a real-space part, and see what
the split costs and how wrong it is, predicted and measured.

``KernelSplitModel`` holds the beam (FWHM, the paper's K_l = sqrt(C_l) B_l or a plain Gaussian),
the error bound, the cuts (l_cut, theta_cut), nside, backend and cost model. Its state is a
:class:`sphgpu.convolve.Plan` (``model.plan``): the optimizer's (:func:`optimize_split`, on
opening and on Optimize) or the one of the cuts set by hand (:func:`plan_for_cuts`), and after
Run the same plan measured (:func:`measure_plan`). Every number and mark the panel shows is read
from that one plan. ``KernelSplitPanel`` is the ipywidgets view. See
:mod:`sphgpu.widgets._base` for the pattern.
"""

from __future__ import annotations

import math

import ipywidgets as w
import numpy as np

import sphgpu
from sphgpu.convolve import (ARCMIN, MeasuredCostModel, PaperCostModel, RadialKernel,
                             SplitFitter, default_theta_grid, measure_plan, optimize_split,
                             plan_for_cuts)

from ._base import (DPI, LRU, Panel, PanelModel, backend_options, backend_problem, default_backend,
                    first_call, fit_descriptions, fmt_seconds, is_int, is_real, new_figure,
                    numbers_html, show_figure, toggle_buttons, unknown_backend)
from .plots import mollview

__all__ = ["KernelSplitModel", "KernelSplitPanel", "kernel_split_panel"]
#: the names sphgpu.widgets offers from this module; the package reads this line from the
#: source, since importing a panel module imports ipywidgets and matplotlib
_PACKAGE_EXPORTS = ("KernelSplitModel", "KernelSplitPanel", "kernel_split_panel")

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
#: How the paper's cost model names its machines (it prices the paper's hardware, not this one).
PAPER_BACKENDS = {"cpu": "paper's CPU core (libpsht)", "cuda": "paper's GPU (GTX 480)"}
#: Run times the whole kernel and the plan back to back in up to this many rounds, for the
#: median speedup and its spread (one run of each gave 0.0608x where repeated timing gave
#: 0.0089x on a loaded two-core machine)...
RUN_ROUNDS = 5
#: ...and stops starting rounds once the timed calls pass this many seconds (a split at nside
#: 64 on a CPU costs about 4 s a round: two rounds).
RUN_SECONDS = 5.0


class KernelSplitModel(PanelModel):
    """State and computation of the kernel-split tuner; the state shown is ``plan``.

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
        The cuts (l_cut = lmax: the whole kernel in harmonic space; -1: real space only).
        Default: the optimizer's plan for the other settings where the cost model can price
        (the paper's, or this machine's once timed); else 60 arcmin scaled to lmax with the
        smallest l_cut meeting the bound there.
    cost_model : {"measured", "paper"}
        How predicted times are made. "measured" prices the chosen backend with this machine's
        timings once they exist (Optimize or Run measures them); "paper" prices the paper's
        hardware (Eq. 7 and 8: HEALPix on one CPU core, the real-space part on a GTX 480).
    alpha : float
        The error factor (5 as the paper; :func:`sphgpu.convolve.calibrate_alpha` measures it).
    backend : {"cpu", "cuda", "reference"}, optional
        Where Run (and the measured cost model) runs.
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
        self._kernels = LRU(4)
        self._fitters = LRU(2)
        self._curves = LRU(16)
        self._costs = LRU(4)
        self._plans = LRU(32)       # plan key -> Plan (the optimizer's, by hand, measured)
        #: where the cuts come from: ("optimizer" or "hand", the settings they were chosen at)
        self.cuts_from = ("hand", None)
        #: the last Run's measured Plan (shown, labelled, when the cuts have moved since)
        self.last_run = None
        #: a one-off note on the last Optimize or Run ("" when none); any change clears it
        self.note = ""
        if (l_cut is None or theta_cut_arcmin is None) and self._basic_checks() == "":
            self._open(l_cut, theta_cut_arcmin)
        self.set()
        if self.cuts_from[1] is None and not self._basic_checks():
            self.cuts_from = ("hand" if l_cut is not None and theta_cut_arcmin is not None
                              else "start", self.settings_key())

    def _open(self, l_cut, theta_cut_arcmin):
        """Starting cuts: the optimizer's plan where the cost model can price now; else the
        second support of the scan (60 arcmin scaled to lmax) with the smallest l_cut meeting
        the bound there."""
        cm = self.costs()
        plan = None if cm is None or l_cut is not None or theta_cut_arcmin is not None \
            else self._optimize(cm)
        if plan is not None:
            self._adopt(plan)
            return
        grid = self.scan_grid()
        theta = float(grid[min(1, len(grid) - 1)])
        found = None
        with self.capture("start"):
            found = self._fitter().smallest_l_cut(theta, float(self.error_bound))
        self.message = ""
        self.l_cut = (self.lmax // 2 if found is None else found) if l_cut is None else l_cut
        self.theta_cut_arcmin = theta / ARCMIN if theta_cut_arcmin is None else theta_cut_arcmin

    def set(self, **params) -> bool:
        """Assign and validate (see :class:`PanelModel`); a valid theta_cut becomes the
        support the fit has, the largest knot radius within it (what the plan is priced at
        and the real-space part covers). Cuts that move are the user's from then on; any
        change of a setting clears :attr:`note`."""
        before = self.params
        ok = super().set(**params)
        if ok and not self.all_harmonic:
            self.theta_cut_arcmin = self._support(float(self.theta_cut_arcmin) * ARCMIN) / ARCMIN
        if self.params != before:
            self.note = ""
        # cuts given with new values are the user's; the knot snapping above and a change of
        # nside (which keeps them) are not a choice of cuts
        theta = params.get("theta_cut_arcmin", before["theta_cut_arcmin"])
        moved = params.get("l_cut", before["l_cut"]) != before["l_cut"] or (
            not self.all_harmonic and is_real(theta) and is_real(before["theta_cut_arcmin"])
            and abs(theta - before["theta_cut_arcmin"]) > 1e-9 * abs(theta))
        if ok and moved:
            self.cuts_from = ("hand", self.settings_key())
        return ok

    def set_nside(self, nside) -> bool:
        """Change nside with lmax following (2 nside): the cuts stay (an all-harmonic plan
        stays all harmonic), and :meth:`stale_cuts` says when they are not chosen for it."""
        harmonic = self.all_harmonic
        lmax = 2 * nside if is_int(nside) else self.lmax
        source = self.cuts_from
        ok = self.set(nside=nside, lmax=lmax, **({"l_cut": lmax} if harmonic else {}))
        self.cuts_from = source
        return ok

    def settings_key(self):
        """Everything but the cuts that decides which cuts are best (the optimizer's input)."""
        return self._kernel_key() + (float(self.alpha), float(self.error_bound), self.nside,
                                     self.cost_model, self.backend)

    def stale_cuts(self) -> str:
        """Why the cuts shown may not suit the settings ("" when they do): the optimizer's
        cuts for other settings, or cuts set by hand at another nside."""
        source, key = self.cuts_from
        if key is None or self.message or key == self.settings_key():
            return ""
        names = ("kernel", "FWHM", "lmax", "alpha", "error bound", "nside", "cost model",
                 "backend")
        changed = [f"{n} {a:g}" if isinstance(a, float) else f"{n} {a}"
                   for n, a, b in zip(names, key, self.settings_key()) if a != b]
        if source == "optimizer":
            return (f"l_cut and θ_cut are the optimizer's plan for {', '.join(changed)}, not "
                    f"for these settings: press Optimize for theirs.")
        if key[5] != self.nside:
            how = "set by hand" if source == "hand" else "the tuner's starting cuts"
            return (f"l_cut and θ_cut were {how} at nside {key[5]}: press Optimize for the "
                    f"fastest plan at nside {self.nside}.")
        return ""

    def _support(self, theta):
        """The fitted real-space support (radians) for a requested radius: n whole knots."""
        fit = self._fitter()
        return 2.0 * math.asin(min(1.0, 0.5 * fit.n_basis(theta) * fit.h))

    # -- validation ---------------------------------------------------------------------------
    def _basic_checks(self) -> str:
        if problem := unknown_backend(self.backend):
            return problem
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
        if not is_real(self.fwhm_arcmin) or not 0 < self.fwhm_arcmin <= 10800:
            return f"fwhm_arcmin must be above 0 and at most 10800, not {self.fwhm_arcmin!r}"
        if self.kernel not in KERNELS:
            return f"kernel must be one of {', '.join(KERNELS)}, not {self.kernel!r}"
        if not is_real(self.error_bound) or not 1e-12 <= self.error_bound <= 0.1:
            return f"error_bound must be from 1e-12 to 0.1, not {self.error_bound!r}"
        if not is_real(self.alpha) or not 0 < self.alpha <= 100:
            return f"alpha must be above 0 and at most 100, not {self.alpha!r}"
        if self.cost_model not in COST_MODELS:
            return f"cost_model must be one of {', '.join(COST_MODELS)}, not {self.cost_model!r}"
        if not is_int(self.seed) or self.seed < 0:
            return f"seed must be a whole number >= 0, not {self.seed!r}"
        return backend_problem(self.backend, "sht")

    def validate(self) -> str:
        msg = self._basic_checks()
        if msg:
            return msg
        if not is_int(self.l_cut) or not -1 <= self.l_cut <= self.lmax:
            return (f"l_cut must be a whole number from -1 (no harmonic part) to lmax = "
                    f"{self.lmax} (all harmonic), not {self.l_cut!r}")
        if self.all_harmonic:
            return ""                   # theta_cut plays no part
        lo, hi = self.theta_range_arcmin
        if not is_real(self.theta_cut_arcmin) or not 0 < self.theta_cut_arcmin <= 10800:
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
    def all_harmonic(self) -> bool:
        """l_cut = lmax: the whole kernel in harmonic space, no real-space part."""
        return is_int(self.l_cut) and is_int(self.lmax) and self.l_cut >= self.lmax

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
        """The cost model; the measured one (of the chosen backend alone) only once it exists,
        or with ``measure=True``, which times this machine. None when not available yet."""
        if self.cost_model == "paper":
            return PaperCostModel()
        key = (self.nside, self.lmax, self.backend)
        if key in self._costs:
            return self._costs.get(key, None)
        try:
            cm = MeasuredCostModel(self.nside, self.lmax, sizes="quick",
                                   harmonic_backends=(self.backend,),
                                   realspace_backends=(self.backend,), measure=measure)
        except LookupError:
            return None
        return self._costs.get(key, lambda: cm)

    def backend_label(self, name) -> str:
        """How a plan's backend is named: the paper's machines for the paper's cost model."""
        if name is None:
            return "-"
        return PAPER_BACKENDS.get(name, name) if self.cost_model == "paper" else name

    # -- the plan -------------------------------------------------------------------------------
    def _plan_key(self):
        cuts = ("harmonic",) if self.all_harmonic else (self.l_cut, float(self.theta_cut_arcmin))
        return (self._kernel_key() + (float(self.alpha), float(self.error_bound), self.nside,
                                      self.cost_model, self.backend) + cuts)

    @property
    def plan(self):
        """The :class:`sphgpu.convolve.Plan` of the current settings (the optimizer's after
        Optimize, measured after Run), or None when invalid or the cost model cannot price
        yet (``message`` or :meth:`numbers` say which)."""
        if self.message:
            return None
        cm = self.costs()
        if cm is None:
            return None
        key = self._plan_key()
        if key in self._plans:
            return self._plans.get(key, None)
        plan = None
        with self.capture("plan"):
            plan = plan_for_cuts(self.radial_kernel(), nside=self.nside, l_cut=self.l_cut,
                                 theta_cut=(0.0 if self.all_harmonic
                                            else self.theta_cut_arcmin * ARCMIN),
                                 error_bound=float(self.error_bound), cost_model=cm,
                                 fitter=self._fitter())
        return None if plan is None else self._plans.put(key, plan)

    def split(self):
        """The :class:`sphgpu.convolve.KernelSplit` of the current cuts (None if invalid or
        all harmonic)."""
        if self.message or self.all_harmonic:
            return None
        p = self.plan
        if p is not None:
            return p.split
        with self.capture("split"):
            return self._fitter().split(self.l_cut, self.theta_cut_arcmin * ARCMIN)
        return None

    def predicted_error(self) -> float | None:
        """The plan's predicted error (0 all harmonic), or the split's before any plan."""
        p = self.plan
        if p is not None:
            return p.predicted_error
        if self.all_harmonic:
            return 0.0
        s = self.split()
        return None if s is None else s.predicted_error

    def advice(self) -> str:
        """What meets the bound when the current cuts do not ("" when they do), from the
        fit's numbers: the smallest l_cut at this theta_cut and the smallest theta_cut of the
        scan at this l_cut. The error ripples in l_cut, so raising l_cut by one can raise it:
        the advice says so when it does here."""
        err = self.predicted_error()
        bound = float(self.error_bound)
        if err is None or err <= bound:
            return ""
        fit, theta = self._fitter(), self.theta_cut_arcmin * ARCMIN
        parts = [f"predicted error {err:.3g} is above the bound {bound:g}."]
        if self.l_cut + 1 < self.lmax and fit.error(self.l_cut + 1, theta) > err:
            parts.append(f"Here raising l_cut to {self.l_cut + 1} raises it (it ripples with "
                         f"a period of about {2 * math.pi / theta:.0f} in l).")
        need = fit.smallest_l_cut(theta, bound, lo=-1)
        if need is not None:
            parts.append(f"At θ_cut {self.theta_cut_arcmin:.4g}′ l_cut {need} meets it "
                         f"(error {fit.error(need, theta):.3g}).")
        else:
            parts.append(f"No l_cut below lmax meets it at θ_cut {self.theta_cut_arcmin:.4g}′.")
        if self.l_cut >= 0:
            wider = [t for t in self.scan_grid() if t > theta
                     and fit.error(self.l_cut, float(t)) <= bound]
            if wider:
                t = float(wider[0])
                parts.append(f"At l_cut {self.l_cut} θ_cut {self._support(t) / ARCMIN:.4g}′ "
                             f"meets it "
                             f"(error {fit.error(self.l_cut, t):.3g}).")
        parts.append(f"l_cut {self.lmax} (all harmonic) has no split error; Optimize picks "
                     f"the fastest plan within the bound.")
        return " ".join(parts)

    # -- actions --------------------------------------------------------------------------------
    def _optimize(self, cm):
        with self.capture("optimize"):
            return optimize_split(self.radial_kernel(), nside=self.nside,
                                  error_bound=float(self.error_bound), cost_model=cm,
                                  alpha=float(self.alpha), fitter=self._fitter(),
                                  theta_grid=self.scan_grid())
        return None

    def _adopt(self, plan):
        """Make ``plan`` the state: its cuts become the settings, the plan itself is shown."""
        if plan.method == "harmonic":
            self.l_cut = self.lmax
            if not is_real(self.theta_cut_arcmin):
                self.theta_cut_arcmin = float(self.scan_grid()[0]) / ARCMIN
        else:
            self.l_cut, self.theta_cut_arcmin = plan.l_cut, plan.theta_cut_arcmin
        self._plans.put(self._plan_key(), plan)
        self.cuts_from = ("optimizer", self.settings_key())

    def _describe_cuts(self, plan) -> str:
        if plan.method == "harmonic":
            return f"all harmonic (l_cut = lmax = {plan.lmax})"
        return f"l_cut {plan.l_cut}, θ_cut {plan.theta_cut_arcmin:.4g}′"

    def optimize(self, progress=None):
        """Make the optimizer's plan for the chosen cost model the state (timing this machine
        first if needed). Returns the Plan, or None with a message."""
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
        shown = None if self.message else self.plan
        plan = self._optimize(cm)
        if plan is None:
            return None
        self._adopt(plan)
        self.set()
        progress(1.0, f"{plan.method}: l_cut {plan.l_cut}"
                      + ("" if plan.method == "harmonic"
                         else f", theta_cut {plan.theta_cut_arcmin:.4g}'"))
        new = self._describe_cuts(plan)
        if shown is not None and self._describe_cuts(shown) == new:
            # the cuts shown were the optimizer's already: say so, or Optimize looks broken
            self.note = (f"Optimize: the plan shown, {new}, is already the fastest within the "
                         f"bound for these settings ({self.cost_model} costs, predicted "
                         f"speedup {plan.speedup:.3g}x); nothing to change.")
        else:
            self.note = (f"Optimize: {new} (was "
                         f"{'-' if shown is None else self._describe_cuts(shown)}).")
        return self.plan

    def run(self, progress=None):
        """Measure the current plan (timing this machine first for the measured cost model):
        convolve a white-noise map with it and with the whole kernel on the chosen backend,
        back to back in up to :data:`RUN_ROUNDS` rounds. Returns the measured Plan (cached
        under the cuts it was run with, which stay the last Run's even if the settings move
        meanwhile), or None with ``message`` set."""
        progress = progress or (lambda f, t="": None)
        if not self.set():
            return None
        if self.costs() is None:
            progress(0.05, "timing this machine")
            with self.capture("cost model"):
                self.costs(measure=True)
            if self.message:
                return None
        plan, key = self.plan, self._plan_key()
        if plan is None:
            return None
        if plan.measured is None or plan.measured.seed != self.seed:
            measured = None
            # a first run compiles the kernels inside the timed calls (17 s against 0.06 s for
            # a split at nside 32 on the CPU): an untimed warm-up round keeps that out
            warm = first_call("measure_plan", self.backend, plan.method)

            def step(fraction, text):
                progress(0.1 + 0.85 * fraction, text)

            with self.capture("run"):
                measured = measure_plan(plan, seed=int(self.seed), backend=self.backend,
                                        repeat=RUN_ROUNDS, warmup=int(warm),
                                        max_seconds=RUN_SECONDS, progress=step)
            if measured is None:
                return None
            self._plans.put(key, measured)
            plan = measured
        self.last_run = plan
        if self._plan_key() != key:
            # the settings moved while this ran (a slider in the browser): keep the result and
            # say whose it is, rather than showing the new cuts as if nothing had happened
            self.note = (f"Run measured {self._describe_cuts(plan)} at nside {plan.nside}; the "
                         f"settings changed during the run: press Run to measure these.")
        progress(1.0, "done")
        return plan

    # -- views ----------------------------------------------------------------------------------
    def numbers(self) -> list[tuple[str, str]]:
        """(label, text) rows, every one read from :attr:`plan` (or, before any cost model
        can price, the split's predicted error and a note)."""
        if self.message:
            return []
        p = self.plan
        rows = [("kernel", f"{self.radial_kernel().name}, lmax {self.lmax}, nside {self.nside}")]
        err = self.predicted_error()
        if self.all_harmonic:
            rows.append(("plan", f"all harmonic (l_cut = lmax = {self.lmax}, no real-space "
                                 f"part)"))
        else:
            kind = "real space only" if self.l_cut < 0 else "split"
            s = self.split()
            # set() moved the θ_cut asked for to the fit's support: say so where it is shown
            rows.append(("plan", f"{kind}: l_cut {self.l_cut}, theta_cut "
                                 f"{s.theta_cut_arcmin:.4g}′ (taken at a knot of the fit; "
                                 f"knots about {self._fitter().h / ARCMIN:.3g}′ apart)"))
        within = "within" if err <= float(self.error_bound) else "above"
        rows.append((f"predicted error (α = {float(self.alpha):g})",
                     f"{err:.3g} ({within} bound {float(self.error_bound):g})"))
        if p is None:
            rows.append(("predicted times", "not measured on this machine yet: press "
                                            "Optimize or Run"))
            return rows
        where = (f" on the {self.backend} backend" if self.cost_model == "measured"
                 else " on the paper's machines")
        rows += [("predicted harmonic / real space",
                  f"{fmt_seconds(p.time_harmonic)} ({self.backend_label(p.harmonic_backend)}) / "
                  f"{fmt_seconds(p.time_realspace)} ({self.backend_label(p.realspace_backend)})"),
                 ("predicted plan / all harmonic",
                  f"{fmt_seconds(p.time_total)} / {fmt_seconds(p.time_all_harmonic)}"),
                 ("predicted speedup over all harmonic",
                  f"{p.speedup:.3g}x ({self.cost_model} costs{where})")]
        m = p.measured
        if m is not None:
            rows += [(f"measured on {m.backend}: spectrum / map error",
                      f"{m.spectrum_error:.3g} / {m.map_error:.3g}"),
                     ("measured harmonic / real space", f"{fmt_seconds(m.time_harmonic)} / "
                                                        f"{fmt_seconds(m.time_realspace)}"),
                     ("measured plan / all harmonic", f"{fmt_seconds(m.time_total)} / "
                                                      f"{fmt_seconds(m.time_all_harmonic)}"),
                     ("measured speedup over all harmonic", _speedup_text(m))]
        elif self.last_run is not None and self.last_run is not p:
            r = self.last_run
            rows.append(("last Run (other settings)",
                         f"{self._describe_cuts(r)} at nside {r.nside}: measured speedup "
                         f"{_speedup_text(r.measured)}; press Run to measure the plan shown"))
        return rows

    def notes(self) -> str:
        """The grey line under the controls: the last Optimize's or Run's note, stale cuts,
        and advice when the cuts miss the bound."""
        return " ".join(t for t in (self.note, self.stale_cuts(), self.advice()) if t)

    def figure(self):
        """Kernels in l-space and real space, error against l_cut, times: a Figure (or None).
        The marks of the current cuts, error and times are the plan's."""
        if self.message:
            return None
        p, s, k = self.plan, self.split(), self.radial_kernel()
        err = self.predicted_error()
        fig = _quick_figure(11.0, 6.6)
        axs = fig.subplots(2, 2)
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.09, top=0.95, wspace=0.3,
                            hspace=0.42)
        ax = axs[0, 0]
        norm = np.abs(k.bl).max() or 1.0
        ell = np.arange(k.lmax + 1)
        ax.semilogy(ell, np.abs(k.bl) / norm, "k", lw=2, label="full K_ℓ")
        if s is not None:
            ell_s = np.arange(s.approx_bl.shape[0])
            if s.l_cut >= 0:
                ax.semilogy(ell_s[:s.l_cut + 1], np.abs(s.harmonic_bl) / norm, color="#2166ac",
                            label="harmonic part")
            ax.semilogy(ell_s, np.abs(s.realspace_bl) / norm + 1e-300, color="#b2182b", lw=0.8,
                        label="|real-space part|")
            target = np.zeros_like(s.approx_bl)
            target[:k.lmax + 1] = k.bl
            ax.semilogy(ell_s, np.abs(s.approx_bl - target) / norm + 1e-300, color="0.5",
                        lw=0.8, label="|sum − full|")
        ax.axvline(k.lmax, color="0.7", ls=":")
        ax.set_ylim(1e-12, 10)
        ax.set_xlabel("multipole ℓ")
        ax.set_ylabel("|K_ℓ| / max |K_ℓ|")
        ax.set_title("kernels in harmonic space")
        ax.legend(frameon=False)

        ax = axs[0, 1]
        th_cut = s.theta_cut if s is not None else float(self.scan_grid()[-1])
        theta = np.linspace(0, 1.3 * th_cut, 300)
        full_prof = k.profile(np.minimum(theta, math.pi))
        scale = np.abs(full_prof).max() or 1.0
        ax.plot(theta / ARCMIN, full_prof / scale, "k", lw=2, label="full K(θ)")
        if s is not None and s.realspace is not None:
            ax.plot(theta / ARCMIN, s.realspace(theta) / scale, color="#b2182b",
                    label="real-space part")
            ax.axvline(th_cut / ARCMIN, color="0.7", ls=":")
        ax.set_xlabel("θ [arcmin]")
        ax.set_ylabel("K(θ) / max |K(θ)|")
        ax.set_title("profiles")
        ax.legend(frameon=False)

        ax = axs[1, 0]
        ls, errs = self.error_curve()
        ax.semilogy(ls, np.maximum(errs, 1e-16), "o-", color="#2166ac", ms=3,
                    label=f"predicted at θ_cut {self.theta_cut_arcmin:.4g}′")
        ax.axhline(float(self.error_bound), color="k", ls="--", lw=1, label="bound")
        if self.all_harmonic:
            ax.text(0.97, 0.9, "all harmonic: no split error", ha="right",
                    transform=ax.transAxes)
        else:
            ax.plot([self.l_cut], [max(err, 1e-16)], "*", color="#2166ac", ms=13,
                    label="this plan, predicted")
            if p is not None and p.measured is not None:
                ax.plot([self.l_cut], [max(p.measured.spectrum_error, 1e-16)], "s",
                        color="#b2182b", ms=7, label=f"measured on {p.measured.backend}")
        ax.set_xlabel("l_cut")
        ax.set_ylabel(f"fractional error σ (α = {float(self.alpha):g})")
        ax.set_title("error against l_cut")
        ax.legend(frameon=False)

        ax = axs[1, 1]
        labels, values, colors = [], [], []
        if p is not None:
            labels += ["harmonic", "real space", "plan", "all harm."]
            values += [p.time_harmonic, p.time_realspace, p.time_total, p.time_all_harmonic]
            colors += ["#92c5de"] * 4
            if p.measured is not None:
                m = p.measured
                labels += ["harmonic*", "real space*", "plan*", "all harm.*"]
                values += [m.time_harmonic, m.time_realspace, m.time_total, m.time_all_harmonic]
                colors += ["#f4a582"] * 4
        shown = [(lb, v, c) for lb, v, c in zip(labels, values, colors) if v > 0]
        if shown:
            lb, v, c = zip(*shown)
            ax.barh(lb, v, color=c)
            ax.set_xscale("log")
            ax.invert_yaxis()
            ax.set_xlabel("seconds (blue: predicted, red*: measured)")
            ax.set_title(f"time ({self.cost_model} cost model; predicted speedup over all "
                         f"harmonic {p.speedup:.3g}x)")
        else:
            ax.text(0.5, 0.5, "times: press Optimize or Run\nto time this machine",
                    ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
        _quick_ticks(fig)
        return fig

    def map_figure(self):
        """The convolved white-noise map and the plan's residual (after Run), or None."""
        p = self.plan
        if p is None or p.measured is None:
            return None
        m = p.measured
        fig = new_figure(11.0, 3.6)
        geom = sphgpu.RingGeometry.healpix(p.nside)
        for i, (vals, title) in enumerate([(m.full_map, "white noise ⊛ full kernel"),
                                           (m.plan_map - m.full_map, "plan − full kernel")]):
            ax = fig.add_subplot(1, 2, i + 1, projection="mollweide")
            v = 3 * float(np.std(vals)) or 1.0
            mesh = mollview(vals, geom, ax, cmap="RdBu_r", vmin=-v, vmax=v)
            fig.colorbar(mesh, ax=ax, orientation="horizontal", shrink=0.6, pad=0.04,
                         label="map value [units of the unit-variance input noise]")
            ax.set_title(title)
        return fig


def _speedup_text(m) -> str:
    """A PlanMeasurement's speedup: the median of its rounds with their spread."""
    r = m.speedup_ratio
    how = "whole kernel / plan, timed back to back per round, NumPy map in and out"
    if r is None:
        return f"{m.speedup:.3g}x (one run of each; {how})"
    return f"{r.text()} ({how})"


def _quick_figure(width, height):
    """A Figure with fixed margins: the constrained layout of ``new_figure`` costs about a
    third of a second per redraw, too much for a panel answering every slider move."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI)


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


class KernelSplitPanel(Panel):
    """The kernel-split tuner's view: beam and cut controls, Optimize, Run, figures, numbers.
    The cut sliders show the model's plan (l_cut at lmax and θ_cut disabled: all harmonic)."""

    def __init__(self, model: KernelSplitModel):
        super().__init__()
        self.model = m = model
        style = {"description_width": "9em"}
        nside = m.nside if is_int(m.nside) and m.nside in NSIDES else 64
        top = max(m.max_nside.values())
        self.nside = w.Dropdown(options=[n for n in NSIDES if n <= top], value=nside,
                                description="nside", style=style)
        lmax = m.lmax if is_int(m.lmax) and m.lmax >= 2 else 2 * nside
        fwhm = float(m.fwhm_arcmin) if is_real(m.fwhm_arcmin) and m.fwhm_arcmin > 0 else 60.0
        # slider ranges reach the model's values: a slider would clamp them without a word,
        # and the next change of any control would send the clamped value to the model
        self.fwhm = w.FloatSlider(value=fwhm, min=min(0.5, fwhm), max=max(4 * fwhm, 600.0),
                                  step=0.5,
                                  description="beam FWHM [′]", continuous_update=False,
                                  style=style)
        self.kernel = toggle_buttons(list(KERNELS), m.kernel if m.kernel in KERNELS else "cmb",
                                     "kernel", style["description_width"],
                                     tooltips=["sqrt(C_l) B_l (the paper's)", "B_l"])
        bound = float(m.error_bound) if is_real(m.error_bound) and m.error_bound > 0 else 1e-5
        self.bound = w.FloatLogSlider(value=bound, base=10, min=min(-9.0, math.log10(bound)),
                                      max=max(-2.0, math.log10(bound)), step=0.25,
                                      description="error bound", continuous_update=False,
                                      style=style, readout_format=".1e")
        self.l_cut = w.IntSlider(value=m.l_cut if is_int(m.l_cut) else lmax // 2, min=-1,
                                 max=lmax, description="l_cut (lmax: all harm.)",
                                 continuous_update=False, style=dict(style,
                                                                     description_width="11em"))
        lo, hi = (m.theta_range_arcmin if not m._basic_checks() else (1.0, 600.0))
        theta = float(m.theta_cut_arcmin) if is_real(m.theta_cut_arcmin) else hi / 2
        self.theta = w.FloatSlider(value=min(max(theta, lo), hi), min=lo, max=hi,
                                   step=max((hi - lo) / 400, 0.01), description="θ_cut [′]",
                                   continuous_update=False, style=dict(
                                       style, description_width="11em"), readout_format=".4g")
        self.cost = toggle_buttons(list(COST_MODELS), m.cost_model if m.cost_model in
                                   COST_MODELS else "measured", "cost model",
                                   style["description_width"])
        self.backend = toggle_buttons(backend_options(m.backend), m.backend, "backend",
                                      style["description_width"])
        self.optimize_button = w.Button(description="Optimize", icon="magic",
                                        tooltip="make the fastest plan that meets the bound "
                                                "the state")
        # why θ_cut is disabled (an all-harmonic plan has no real-space part): a disabled
        # slider alone looked broken
        self.theta_note = w.HTML(layout=w.Layout(margin="0 0 0 11em"))
        self.figure = w.Output()
        self.map_figure = w.Output()
        self._syncing = False
        self.nside.observe(self.guarded(self._nside_changed), names="value")
        self.observe_values([self.fwhm, self.kernel, self.bound, self.l_cut, self.theta,
                             self.cost, self.backend], self._changed)
        self.optimize_button.on_click(self.guarded(lambda _b: self.optimize()))
        self.on_run(self.run)
        fit_descriptions([self.fwhm, self.kernel, self.bound, self.nside])
        fit_descriptions([self.l_cut, self.theta, self.cost, self.backend])
        self.theta_note.layout.margin = f"0 0 0 {self.theta.style.description_width}"
        controls = w.HBox([w.VBox([self.fwhm, self.kernel, self.bound, self.nside]),
                           w.VBox([self.l_cut, self.theta, self.theta_note, self.cost,
                                   self.backend])])
        self.children = [
            w.HTML("<b>Kernel split</b>: a harmonic part up to l_cut and a compact real-space "
                   "part within θ_cut; predicted and measured error and time"),
            controls, w.HBox([self.optimize_button, self.run_row()]), self.message,
            self.figure, self.numbers, self.map_figure]
        self.add_class("sphgpu-kernel-split-panel")
        self._show_cuts()
        self.guarded(self._refresh)()

    # -- events ---------------------------------------------------------------------------------
    def _nside_changed(self, change):
        """lmax follows nside (2 nside); the cut sliders take the new ranges. Cuts that were
        the optimizer's are re-optimized for the new nside where the cost model can price it
        without timing; otherwise the note says they are stale."""
        m = self.model
        self._syncing = True
        try:
            m.set_nside(change["new"])
            again = (m.cuts_from[0] == "optimizer" and not m._basic_checks()
                     and m.costs() is not None)
            if again:
                m.optimize(progress=self.report)
                if not m.message:
                    m.note = (f"nside {change['old']} -> {change['new']}: re-optimized, "
                              + m.note[len("Optimize: "):])
            self._ranges()
        finally:
            self._syncing = False
        self._show_cuts()
        if again:
            self._refresh()
        else:
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
        self._show_cuts()
        self._refresh()

    def _show_cuts(self):
        """The sliders show the model's cuts: θ_cut is disabled for an all-harmonic plan."""
        m = self.model
        self._syncing = True
        try:
            if is_int(m.l_cut):
                self.l_cut.value = int(m.l_cut)
            if is_real(m.theta_cut_arcmin):
                self.theta.value = min(max(float(m.theta_cut_arcmin), self.theta.min),
                                       self.theta.max)
            self.theta.disabled = m.all_harmonic
            self.theta_note.value = (
                "<span class='sphgpu-message' style='color:#555555'>θ_cut unused: the plan is "
                "all harmonic (l_cut = lmax), no real-space part; lower l_cut to split</span>"
                if m.all_harmonic and not m._basic_checks() else "")
        finally:
            self._syncing = False
        if is_real(m.theta_cut_arcmin) and not m.all_harmonic and not m._basic_checks():
            m.set(theta_cut_arcmin=self.theta.value)        # what the slider can hold

    def _refresh(self):
        # a live model shows its predictions at once (Run measures); else the base's message
        # or press-Run note
        if self.model.message or not self.model.live:
            super()._refresh()
        else:
            self._show()

    def _stale(self):
        super()._stale()
        self.map_figure.outputs = ()

    def stale_note(self):
        return f"nside {self.model.nside}: press Run to compute"

    def _show(self):
        m = self.model
        fig = m.figure()
        if fig is None:
            self._stale()
            self.show_message(m.message)
            return
        self.show_message(m.notes(), "note")
        show_figure(self.figure, fig)
        self.numbers.value = numbers_html(m.numbers())
        mf = m.map_figure()
        if mf is not None:
            show_figure(self.map_figure, mf)
        else:
            self.map_figure.outputs = ()

    def optimize(self):
        self.optimize_button.disabled = True
        try:
            plan = self.model.optimize(progress=self.report)
        finally:
            self.optimize_button.disabled = False
        if plan is None:
            self.show_message(self.model.message)
            return
        self._show_cuts()
        self._show()

    def run(self):
        plan = self.model.run(progress=self.report)
        if plan is None:
            self._stale()
            self.show_message(self.model.message)
            return
        # the controls may have moved during the run (their events queue behind it in a
        # kernel, or come from another thread): show the model's state, whose numbers keep
        # this run as "last Run" when its cuts are no longer the ones shown
        self._show_cuts()
        self._show()


def kernel_split_panel(**kw) -> KernelSplitPanel:
    """The kernel-split tuner. Keywords are :class:`KernelSplitModel`'s (nside, lmax,
    fwhm_arcmin, kernel, error_bound, l_cut, theta_cut_arcmin, cost_model, alpha, backend,
    seed, max_nside, live_max_nside)."""
    return KernelSplitPanel(KernelSplitModel(**kw))
