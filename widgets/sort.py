"""Sort panel: radix sort throughput for chosen n, key bits b and radix bits r, and the
particle-in-cell demo of Helluy (2011).

``SortModel`` times ``sphgpu.radix_sort`` on n random b-bit uint32 keys for every digit width r
(a sweep, so moving r is answered from the cache), against ``numpy.sort(kind="stable")`` (and
CuPy's CUB sort on a GPU), and checks the result against NumPy. Its PIC part moves particles in
a periodic square by at most one cell per step and re-sorts them by cell with
``sphgpu.sort.pic``, timing the sort with b key bits and with the fewest bits the cells need.
``SortPanel`` is the view. See :mod:`sphgpu.widgets._base` for the pattern.
"""

from __future__ import annotations

import dataclasses
import math

import ipywidgets as w
import numpy as np

import sphgpu
from sphgpu import backends
from sphgpu.bench import time_call
from sphgpu.sort import pic

from ._base import (LRU, Panel, PanelModel, backend_options, backend_problem, default_backend,
                    fit_descriptions,
                    fmt_seconds, is_int, new_figure, numbers_html, show_figure, toggle_buttons,
                    unknown_backend)
from .plots import FONT

__all__ = ["SortModel", "SortResult", "PicResult", "SortPanel", "sort_panel"]
#: the names sphgpu.widgets offers from this module; the package reads this line from the
#: source, since importing a panel module imports ipywidgets and matplotlib
_PACKAGE_EXPORTS = ("SortModel", "SortPanel", "sort_panel")

#: Largest log2(n) each backend sorts here by default (2^24 uint32 keys and their int64
#: permutation are about 200 MB, within Binder's memory; the NumPy reference is slow).
MAX_LOG2N = {"cpu": 24, "cuda": 28, "reference": 16}
#: Up to this log2(n) (and PIC size) a change of a control re-measures at once.
LIVE_MAX_LOG2N = 16
LIVE_MAX_PIC_WORK = 2**14 * 5            # particles x steps
MAX_RADIX_BITS = 16
KEY_BITS = 32                            # the keys are uint32
MAX_GRID = 1024
MAX_STEPS = 50
#: Points drawn in the PIC picture (evenly spaced along the list).
PIC_DRAW = 3000


@dataclasses.dataclass
class SortResult:
    """Timings of one (n, b) setting: sphgpu for every r, and the peers."""

    n: int
    key_bits: int
    permutation: bool
    backend: str
    sphgpu_s: dict            # radix bits r -> median seconds
    peers_s: dict             # "numpy.sort stable" / "cupy.sort" ... -> median seconds
    matches_numpy: dict       # r -> True when keys (and permutation) equal NumPy's stable sort
    on_device: bool = False   # sphgpu and CuPy sorted CuPy arrays (no host copies timed)

    @property
    def arrays(self) -> str:
        """What sphgpu's timed calls were given."""
        return "CuPy arrays on the device" if self.on_device else "NumPy arrays"

    def passes(self, r: int) -> int:
        return math.ceil(self.key_bits / r)

    def best_radix_bits(self) -> int:
        return min(self.sphgpu_s, key=self.sphgpu_s.get)

    def numbers(self, r: int) -> list[tuple[str, str]]:
        t = self.sphgpu_s[r]
        rows = [("keys", f"n = 2^{int(math.log2(self.n))} = {self.n:,} uint32, "
                         f"{self.key_bits} key bits"
                         + (", with the permutation" if self.permutation else "")),
                ("radix bits r / passes", f"{r} / {self.passes(r)}"),
                (f"sphgpu ({self.backend}, {self.arrays}; after a warm-up call)",
                 f"{fmt_seconds(t)}, {self.n / t / 1e6:.1f} Mkeys/s"),
                ("same result as NumPy's stable sort", "yes" if self.matches_numpy[r] else "NO")]
        for name, s in self.peers_s.items():
            rows.append((name, f"{fmt_seconds(s)}, {self.n / s / 1e6:.1f} Mkeys/s "
                               f"(sphgpu {s / t:.2f}x)"))
        best = self.best_radix_bits()
        rows.append(("fastest r here", f"{best} ({fmt_seconds(self.sphgpu_s[best])})"))
        return rows


@dataclasses.dataclass
class PicResult:
    """The PIC demo: per-step sort seconds with b key bits and with the minimal bits."""

    n: int
    grid: int
    key_bits: int
    min_key_bits: int
    radix_bits: int
    backend: str
    sort_s: list              # per step, with key_bits
    sort_min_s: list          # per step, with min_key_bits
    moved: list               # per step, fraction of particles that changed cell
    pos: np.ndarray           # (n, 2) final positions, in cell order
    sorted_ok: bool           # every step ended with non-decreasing cells

    def numbers(self) -> list[tuple[str, str]]:
        t, t_min = float(np.median(self.sort_s)), float(np.median(self.sort_min_s))
        p = math.ceil(self.key_bits / self.radix_bits)
        p_min = math.ceil(self.min_key_bits / self.radix_bits)
        return [("particles / cells", f"{self.n:,} / {self.grid}×{self.grid} = "
                                      f"{self.grid**2:,}"),
                ("particles changing cell per step", f"{100 * float(np.mean(self.moved)):.1f} %"),
                (f"re-sort (NumPy arrays in and out), b = {self.key_bits} ({p} passes of "
                 f"{self.radix_bits} bits)",
                 f"{fmt_seconds(t)} per step, {self.n / t / 1e6:.1f} Mparticles/s"),
                (f"re-sort, b = {self.min_key_bits} ({p_min} passes), the fewest bits",
                 f"{fmt_seconds(t_min)} per step"),
                ("cells in order after every step", "yes" if self.sorted_ok else "NO")]


def bits_for_grid(grid: int) -> int:
    """Key bits the cells of a grid x grid mesh need (at least 1)."""
    return max((grid * grid - 1).bit_length(), 1)


class SortModel(PanelModel):
    """State and measurements of the sort panel.

    Parameters
    ----------
    log2n : int
        Sort 2**log2n random keys (10 up to :data:`MAX_LOG2N` of the backend).
    key_bits : int, 1 to 32
        The keys are uniform in [0, 2**key_bits), uint32; the sort looks at these bits only.
    radix_bits : int, 1 to 16
        Digit width r of a pass: ceil(b / r) passes.
    permutation : bool
        Also return the permutation (compared with ``numpy.argsort(kind="stable")``).
    backend : {"cpu", "cuda", "reference"}, optional
    pic_log2n, pic_grid, pic_key_bits, pic_steps : int
        The PIC demo: 2**pic_log2n particles on a pic_grid x pic_grid mesh, cells sorted with
        pic_key_bits bits (at least what the cells need), for pic_steps steps.
    seed : int
    """

    PARAMS = ("log2n", "key_bits", "radix_bits", "permutation", "backend", "pic_log2n",
              "pic_grid", "pic_key_bits", "pic_steps", "seed")

    def __init__(self, log2n=14, key_bits=32, radix_bits=8, permutation=False, backend=None,
                 pic_log2n=14, pic_grid=32, pic_key_bits=30, pic_steps=5, seed=0, *,
                 max_log2n=None, live_max_log2n=LIVE_MAX_LOG2N,
                 live_max_pic_work=LIVE_MAX_PIC_WORK):
        super().__init__()
        self.max_log2n = dict(MAX_LOG2N, **(max_log2n or {}))
        self.live_max_log2n = live_max_log2n
        self.live_max_pic_work = live_max_pic_work
        self.log2n, self.key_bits, self.radix_bits = log2n, key_bits, radix_bits
        self.permutation = permutation
        self.backend = default_backend() if backend is None else backend
        self.pic_log2n, self.pic_grid = pic_log2n, pic_grid
        self.pic_key_bits, self.pic_steps = pic_key_bits, pic_steps
        self.seed = seed
        self.result: SortResult | None = None
        self.pic_result: PicResult | None = None
        self._keys = LRU(2)        # (n, b, seed) -> keys
        self._sweeps = LRU(64)     # (n, b, perm, backend, seed, r) -> (seconds, matches NumPy)
        self._peers = LRU(8)       # (n, b, perm, backend, seed) -> peer times
        self._pics = LRU(8)
        self.set()

    # -- validation ---------------------------------------------------------------------------
    def validate(self) -> str:
        if problem := unknown_backend(self.backend):
            return problem
        top = self.max_log2n[self.backend]
        checks = (("log2n", self.log2n, 1, top), ("key_bits", self.key_bits, 1, KEY_BITS),
                  ("radix_bits", self.radix_bits, 1, MAX_RADIX_BITS),
                  ("pic_log2n", self.pic_log2n, 1, top), ("pic_grid", self.pic_grid, 1, MAX_GRID),
                  ("pic_key_bits", self.pic_key_bits, 1, KEY_BITS),
                  ("pic_steps", self.pic_steps, 1, MAX_STEPS), ("seed", self.seed, 0, 2**63))
        for name, value, lo, hi in checks:
            if not is_int(value) or not lo <= value <= hi:
                extra = (f" on the {self.backend} backend here (about "
                         f"{_sort_mb(2**value, self.permutation):.0f} MB)"
                         if name.endswith("log2n") and is_int(value) and value > hi else "")
                return f"{name} must be a whole number from {lo} to {hi}{extra}, not {value!r}"
        need = bits_for_grid(self.pic_grid)
        if self.pic_key_bits < need:
            return (f"PIC: a {self.pic_grid} × {self.pic_grid} grid has {self.pic_grid**2:,} "
                    f"cells, which need {need} key bits; pic_key_bits = {self.pic_key_bits} is "
                    f"too few")
        return backend_problem(self.backend, "sort")

    @property
    def note(self) -> str:
        """A remark on a valid but notable setting (shown, not an error)."""
        if not self.message and self.radix_bits > self.key_bits:
            return (f"r = {self.radix_bits} > b = {self.key_bits}: one pass over "
                    f"{self.key_bits} bits")
        return ""

    @property
    def live(self) -> bool:
        return (not self.message and self.log2n <= self.live_max_log2n
                and 2**self.pic_log2n * self.pic_steps <= self.live_max_pic_work)

    # -- throughput ---------------------------------------------------------------------------
    def _sort_key(self):
        return (2**self.log2n, self.key_bits, bool(self.permutation), self.backend, self.seed)

    def keys(self) -> np.ndarray:
        """The n random b-bit uint32 keys of the current setting (cached)."""
        n, b = 2**self.log2n, self.key_bits

        def make():
            rng = np.random.default_rng(self.seed)
            return rng.integers(0, 2**b, n, dtype=np.uint64).astype(np.uint32)

        return self._keys.get((n, b, self.seed), make)

    def radix_range(self) -> range:
        """The digit widths r the sweep measures: 1 .. min(b, 16)."""
        return range(1, min(self.key_bits, MAX_RADIX_BITS) + 1)

    def run(self, progress=None) -> SortResult | None:
        """Time sphgpu for every r of :meth:`radix_range` (and the chosen r) and the peers,
        checking each result against NumPy's stable sort (cached)."""
        progress = progress or (lambda f, t="": None)
        self.result = None
        if not self.set():
            return None
        key = self._sort_key()
        with self.capture("sort"):
            rs = list(self.radix_range())
            if self.radix_bits not in rs:
                rs.append(self.radix_bits)
            times, ok = {}, {}
            for i, r in enumerate(rs):
                progress(0.9 * i / len(rs), f"sphgpu, r = {r}")
                try:
                    times[r], ok[r] = self._sweeps.get(key + (r,), lambda: self._time_one(r))
                except ValueError:
                    # A width this backend refuses (the CUDA counters must fit in shared
                    # memory) is left out of the sweep; refusing the chosen r is the message.
                    if r == self.radix_bits:
                        raise
            peers = self._peers.get(key, self._time_peers)
        if self.message:
            return None
        progress(1.0, "done")
        self.result = SortResult(n=2**self.log2n, key_bits=self.key_bits,
                                 permutation=bool(self.permutation), backend=self.backend,
                                 sphgpu_s=times, peers_s=peers, matches_numpy=ok,
                                 on_device=self._cupy() is not None)
        return self.result

    def _cupy(self):
        """CuPy when the backend runs on a GPU and CuPy imports (the keys are then timed on
        the device), else None (Numba's simulator, no CuPy: host arrays in and out)."""
        if not backends.info(self.backend).gpu:
            return None
        try:
            import cupy
        except ImportError:
            return None
        return cupy

    def _device(self):
        """(keys on the backend's device, synchronise or None) for timing."""
        cupy = self._cupy()
        if cupy is None:
            return self.keys(), None
        return cupy.asarray(self.keys()), cupy.cuda.Device().synchronize

    def _time_one(self, r):
        """(median seconds, result equals NumPy's stable sort) of sphgpu with r radix bits."""
        keys, sync = self._device()
        host = self.keys()
        n, b, perm = 2**self.log2n, self.key_bits, bool(self.permutation)

        def call():
            return sphgpu.radix_sort(keys, key_bits=b, radix_bits=r, return_permutation=perm,
                                     backend=self.backend)

        out = call()                          # also the warm-up (compilation on first use)
        seconds = time_call(call, repeat=3 if n <= 2**20 else 1, warmup=0, sync=sync,
                            max_seconds=2.0).median
        want = np.argsort(host, kind="stable")
        got_keys, got_perm = out if perm else (out, None)
        match = np.array_equal(_host(got_keys), host[want])
        if perm:
            match = match and np.array_equal(_host(got_perm), want)
        return seconds, bool(match)

    def _time_peers(self):
        keys = self.keys()
        n = keys.size
        repeat = 3 if n <= 2**20 else 1
        fn = np.argsort if self.permutation else np.sort
        name = "numpy.argsort stable" if self.permutation else "numpy.sort stable"
        peers = {name: time_call(lambda: fn(keys, kind="stable"), repeat=repeat,
                                 max_seconds=2.0).median}
        dev, sync = self._device()
        if sync is not None:        # a GPU with CuPy: CUB's radix sort, same keys on the device
            import cupy

            cfn = cupy.argsort if self.permutation else cupy.sort
            peers["cupy." + cfn.__name__ + " (CUB)"] = time_call(
                lambda: cfn(dev), repeat=5, sync=sync).median
        return peers

    # -- particle in cell ---------------------------------------------------------------------
    def run_pic(self, progress=None) -> PicResult | None:
        """The PIC demo with the current settings (cached)."""
        progress = progress or (lambda f, t="": None)
        self.pic_result = None
        if not self.set():
            return None
        key = (2**self.pic_log2n, self.pic_grid, self.pic_key_bits, self.radix_bits,
               self.pic_steps, self.backend, self.seed)
        with self.capture("PIC"):
            self.pic_result = self._pics.get(key, lambda: self._pic(progress))
        return self.pic_result

    def _pic(self, progress):
        n, grid, steps = 2**self.pic_log2n, self.pic_grid, self.pic_steps
        b, b_min = self.pic_key_bits, bits_for_grid(grid)
        r = self.radix_bits
        rng = np.random.default_rng(self.seed)
        pos = pic.make_particles(n, grid, seed=rng)
        cells = pic.cell_index(pos, grid)
        # Warm-up: the first call of a backend may compile.
        pic.resort(pos, cells, b, radix_bits=r, backend=self.backend)
        t_b, t_min, moved, ok = [], [], [], True
        for step in range(steps):
            progress(step / steps, f"PIC step {step + 1} of {steps}")
            new = pic.move(pos, grid, rng)
            new_cells = pic.cell_index(new, grid)
            moved.append(float(np.mean(new_cells != cells)))
            t_min.append(time_call(lambda: pic.resort(new, new_cells, b_min, radix_bits=r,
                                                      backend=self.backend),
                                   repeat=1, warmup=0).median)
            holder = {}

            def resort():
                holder["out"] = pic.resort(new, new_cells, b, radix_bits=r, backend=self.backend)

            t_b.append(time_call(resort, repeat=1, warmup=0).median)
            pos, cells, _ = holder["out"]
            ok = ok and bool(np.all(cells[1:] >= cells[:-1]))
        return PicResult(n=n, grid=grid, key_bits=b, min_key_bits=b_min, radix_bits=r,
                         backend=self.backend, sort_s=t_b, sort_min_s=t_min, moved=moved,
                         pos=np.asarray(pos), sorted_ok=ok)

    # -- views --------------------------------------------------------------------------------
    def figure(self):
        """Throughput against the peers, and seconds against r (the sweep); None if no result."""
        res = self.result
        if res is None:
            return None
        fig = new_figure(10.0, 3.3)
        ax1, ax2 = fig.subplots(1, 2, width_ratios=[1, 1.3])
        r = self.radix_bits
        names = [f"sphgpu {res.backend}\nr = {r}"] + [k.replace(" (", "\n(") for k in res.peers_s]
        secs = [res.sphgpu_s[r]] + list(res.peers_s.values())
        ax1.barh(names[::-1], [res.n / s / 1e6 for s in secs][::-1],
                 color=(["0.6"] * len(res.peers_s) + ["#b2182b"]))
        ax1.set_xlabel("throughput [Mkeys / s]")
        ax1.set_title(f"n = 2^{int(math.log2(res.n))}, b = {res.key_bits}", fontsize="medium")
        rs = sorted(res.sphgpu_s)
        ax2.plot(rs, [res.sphgpu_s[k] * 1e3 for k in rs], "o-", color="#2166ac")
        ax2.plot([r], [res.sphgpu_s[r] * 1e3], "o", ms=11, mfc="none", mec="#b2182b", mew=2,
                 label=f"r = {r}: {res.passes(r)} passes")
        ax2.set_xlabel("radix bits r")
        ax2.set_ylabel("time per sort [ms]")
        ax2.set_yscale("log")
        ax2.set_xticks(rs)
        ax2.grid(True, alpha=0.3)
        ax2.legend(frameon=False, fontsize=FONT["legend"])
        ax2.set_title("sweep over the digit width", fontsize="medium")
        return fig

    def pic_figure(self):
        """Particles coloured by their place in the list, and per-step sort times."""
        res = self.pic_result
        if res is None:
            return None
        fig = new_figure(10.0, 3.6)
        ax1, ax2 = fig.subplots(1, 2, width_ratios=[1, 1.4])
        idx = np.linspace(0, res.n - 1, min(res.n, PIC_DRAW)).astype(np.int64)
        ax1.scatter(res.pos[idx, 0], res.pos[idx, 1], c=idx, s=3, cmap="viridis", lw=0)
        if res.grid <= 32:
            ticks = np.linspace(0, 1, res.grid + 1)
            ax1.set_xticks(ticks, [])
            ax1.set_yticks(ticks, [])
            ax1.grid(True, lw=0.4, alpha=0.5)
        ax1.set_xlim(0, 1)
        ax1.set_ylim(0, 1)
        ax1.set_aspect("equal")
        ax1.set_xlabel("x [box lengths]")
        ax1.set_ylabel("y [box lengths]")
        ax1.set_title("colour = place in the sorted list", fontsize="medium")
        steps = np.arange(1, len(res.sort_s) + 1)
        ax2.plot(steps, np.array(res.sort_s) * 1e3, "o-", color="#b2182b",
                 label=f"b = {res.key_bits}: {math.ceil(res.key_bits / res.radix_bits)} passes")
        ax2.plot(steps, np.array(res.sort_min_s) * 1e3, "s--", color="#2166ac",
                 label=f"b = {res.min_key_bits}: "
                       f"{math.ceil(res.min_key_bits / res.radix_bits)} passes")
        ax2.set_xlabel("time step")
        ax2.set_xticks(steps)
        ax2.set_ylabel("time per re-sort [ms]")
        ax2.set_ylim(bottom=0)
        ax2.legend(frameon=False, fontsize=FONT["legend"])
        ax2.set_title(f"re-sort by cell, r = {res.radix_bits}", fontsize="medium")
        return fig


def _host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _sort_mb(n: int, permutation: bool) -> float:
    return n * (4 * 3 + (16 if permutation else 0)) / 1e6


class SortPanel(Panel):
    """The sort panel's view: throughput section and PIC section, one Run button."""

    def __init__(self, model: SortModel):
        super().__init__()
        self.model = model
        m = model
        style = {"description_width": "8em"}
        top = max(m.max_log2n.values())

        def islider(value, lo, hi, description):
            # the range reaches the model's value: a slider would clamp it without a word,
            # and the next change of any control would send the clamped value to the model
            v = value if is_int(value) else lo
            return w.IntSlider(value=v, min=min(lo, v), max=max(hi, v),
                               description=description, continuous_update=False, style=style)

        self.log2n = islider(m.log2n, 10, top, "log2 n")
        self.key_bits = islider(m.key_bits, 1, KEY_BITS, "key bits b")
        self.radix_bits = islider(m.radix_bits, 1, MAX_RADIX_BITS, "radix bits r")
        self.permutation = w.Checkbox(value=bool(m.permutation), description="permutation too")
        self.backend = toggle_buttons(backend_options(m.backend), m.backend, "backend",
                                      style["description_width"])
        self.pic_log2n = islider(m.pic_log2n, 8, top, "log2 particles")
        self.pic_grid = islider(m.pic_grid, 1, 256, "grid")
        self.pic_key_bits = islider(m.pic_key_bits, 1, KEY_BITS, "PIC key bits")
        self.pic_steps = islider(m.pic_steps, 1, 20, "steps")
        self.figure = w.Output()
        self.pic_figure = w.Output()
        self.pic_numbers = w.HTML()
        self._drawn = {}             # what the figures show: {"sort": (result, r), "pic": result}
        sort_controls = [self.log2n, self.key_bits, self.radix_bits, self.permutation,
                         self.backend]
        pic_controls = [self.pic_log2n, self.pic_grid, self.pic_key_bits, self.pic_steps]
        self.observe_values(sort_controls + pic_controls, self._changed)
        self.on_run(self.run)
        fit_descriptions(sort_controls[:3] + pic_controls[:2])
        fit_descriptions([self.backend] + pic_controls[2:])
        self.children = [
            w.HTML("<b>Radix sort</b>: throughput for n keys of b bits sorted r bits per pass, "
                   "and the particle-in-cell re-sort"),
            w.HBox([w.VBox(sort_controls[:3]), w.VBox(sort_controls[3:])]),
            w.HBox([w.VBox(pic_controls[:2]), w.VBox(pic_controls[2:])]),
            self.run_row(), self.message,
            w.HTML("<b>Throughput</b>"), self.figure, self.numbers,
            w.HTML("<b>Particle in cell</b>"), self.pic_figure, self.pic_numbers]
        self.add_class("sphgpu-sort-panel")
        self.guarded(self._refresh)()

    def _changed(self):
        self.model.set(log2n=self.log2n.value, key_bits=self.key_bits.value,
                       radix_bits=self.radix_bits.value, permutation=self.permutation.value,
                       backend=self.backend.value, pic_log2n=self.pic_log2n.value,
                       pic_grid=self.pic_grid.value, pic_key_bits=self.pic_key_bits.value,
                       pic_steps=self.pic_steps.value)
        self._refresh()

    def stale_note(self):
        m = self.model
        return (f"2^{m.log2n} keys, 2^{m.pic_log2n} particles × {m.pic_steps} steps on "
                f"{m.backend}: press Run to measure")

    def _stale(self):
        super()._stale()
        self.pic_figure.outputs = ()
        self.pic_numbers.value = ""
        self._drawn = {}

    def run(self):
        m = self.model
        res = m.run(progress=lambda f, t="": self.report(0.5 * f, t))
        pres = m.run_pic(progress=lambda f, t="": self.report(0.5 + 0.5 * f, t)) if res else None
        if res is None or pres is None:
            self._stale()
            self.show_message(m.message)
            return
        self.report(1.0, "done")
        self.show_message(m.note, "note")
        # Redraw only what changed: drawing a figure costs more than a small sort.
        if self._drawn.get("sort") != (res, m.radix_bits):      # SortResult compares by value
            show_figure(self.figure, m.figure())
            self.numbers.value = numbers_html(res.numbers(m.radix_bits))
            self._drawn["sort"] = (res, m.radix_bits)
        if self._drawn.get("pic") is not pres:                  # cached: same object
            show_figure(self.pic_figure, m.pic_figure())
            self.pic_numbers.value = numbers_html(pres.numbers())
            self._drawn["pic"] = pres


def sort_panel(**kw) -> SortPanel:
    """The sort panel. Keywords are :class:`SortModel`'s (log2n, key_bits, radix_bits,
    permutation, backend, pic_log2n, pic_grid, pic_key_bits, pic_steps, seed, max_log2n...)."""
    return SortPanel(SortModel(**kw))
