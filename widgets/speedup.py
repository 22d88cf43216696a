"""Speedup curves: the committed benchmark results, and a fresh measurement on this machine.

Benchmark scripts write ``benchmarks/results/<name>.json`` with the shared timing harness
(:mod:`sphgpu.bench`): a list of rows, one per problem size, each with a ``"timings"`` dict of
``{series: {"median_s": ...}}``. A :class:`BenchmarkSpec` says how to read one file: which list
holds the rows, which field is the size, where a series' seconds are, which series belong
together (an operation: alm2map, map2alm, a sort with or without the permutation) and what the
speedup is measured against (a peer series, or the series itself at its smallest size for a
scaling benchmark). A new benchmark (tpacf.json, convolve.json, distributed.json...) is shown by adding one
entry to :data:`SPECS`; a file without an entry is still shown when its layout can be inferred
(:func:`infer_spec`), with its own series names as labels.

``SpeedupModel`` loads the files and turns a choice (benchmark, operation, view: seconds,
speedup or throughput) into curves; its ``measure`` times sphgpu (and the peers it can reach)
at chosen sizes on this machine with the public API and adds them to the plot as hollow
markers. ``SpeedupPanel`` is the view. See :mod:`sphgpu.widgets._base` for the pattern.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import json
import math
import os
import pathlib
import re
from collections.abc import Callable

import ipywidgets as w
import matplotlib.ticker
import numpy as np

import sphgpu
from sphgpu import backends
from sphgpu.bench import time_call

from ._base import (Panel, PanelModel, backend_options, backend_problem, default_backend,
                    fit_descriptions,
                    fmt_seconds, new_figure, numbers_html, show_figure, toggle_buttons,
                    unknown_backend)

__all__ = ["BenchmarkSpec", "SPECS", "register", "gpu_variant", "infer_spec", "load_results",
           "default_results_dir", "this_machine", "SpeedupModel", "SpeedupPanel", "speedup_panel"]
#: the names sphgpu.widgets offers from this module; the package reads this line from the
#: source, since importing a panel module imports ipywidgets and matplotlib
_PACKAGE_EXPORTS = ("SpeedupModel", "SpeedupPanel", "speedup_panel",
                    "BenchmarkSpec", "register_benchmark")

VIEWS = ("seconds", "speedup", "throughput")


def _lookup(node, dotted: str):
    """``node[a][b]...`` for the path "a.b...", or None where a step is missing."""
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


@dataclasses.dataclass(frozen=True)
class BenchmarkSpec:
    """How to read and plot one benchmark JSON file.

    Attributes
    ----------
    name : str
        The file's stem (``sht`` for sht.json).
    title : str
    rows : str
        Key of the list of per-size rows in the JSON; dots go into nested dicts
        ("batch.rows").
    x : str
        Key of the problem size in a row; ``x_label`` labels the axis, ``x_log2`` writes ticks
        as powers of two.
    groups : dict
        Operation name -> (series keys, baseline key or None).
    timing : str or dict
        Where a row keeps a series' seconds: a dotted path with ``{key}`` (the series) and
        ``{group}`` (the operation) in it, by default the shared harness's
        ``"timings.{key}.median_s"`` (:mod:`sphgpu.bench`); ``"{key}"`` for seconds stored
        flat in the row. A dict gives one path per operation (``"*"``: the others).
    scaling : bool
        The speedup of a series is its own seconds at the smallest size over its seconds at
        each size (parallel scaling over workers), drawn with the ideal line; no baseline.
    labels : dict
        Series key -> legend label (keys without one are shown as they are).
    sphgpu_prefixes : tuple of str
        Series whose key starts with one of these are sphgpu's own (solid lines), others are
        peers (thin lines).
    work : str or None
        Row key counting the units of work (pixels, keys) for the throughput view, with
        ``work_label`` naming its unit (per second).
    measure : callable or None
        ``measure(size, group, backend) -> {series key: seconds}``: times the group on this
        machine at one size with the public API, keyed like the JSON series it matches.
    max_measure : dict
        Largest size ``measure`` accepts per backend ("cpu", "cuda"); others are refused.
    capability : str or None
        The sphgpu subpackage measured (to say early when its backend cannot run here).
    """

    name: str
    title: str
    rows: str
    x: str
    x_label: str
    groups: dict
    timing: str | dict = "timings.{key}.median_s"
    scaling: bool = False
    labels: dict = dataclasses.field(default_factory=dict)
    sphgpu_prefixes: tuple = ("sphgpu", "cuda", "cpu")
    x_log2: bool = False
    work: str | None = None
    work_label: str = "items"
    measure: Callable | None = None
    max_measure: dict = dataclasses.field(default_factory=dict)
    capability: str | None = None

    def label(self, key: str) -> str:
        return self.labels.get(key, key)

    def seconds(self, row: dict, key: str, group: str):
        """The median seconds of series ``key`` of operation ``group`` in ``row``, or None
        when the row lacks it."""
        path = self.timing
        if isinstance(path, dict):
            path = path.get(group, path.get("*"))
        value = _lookup(row, path.format(key=key, group=group))
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return float(value) if ok else None

    def rows_of(self, data: dict):
        """The per-size rows of a loaded file (None when the path does not lead to a list)."""
        node = _lookup(data, self.rows)
        return node if isinstance(node, list) else None


    def is_sphgpu(self, key: str) -> bool:
        return key.startswith(self.sphgpu_prefixes)


# -- fresh measurements, with the public API only ----------------------------------------------
def _device_kit(backend):
    """(to_device, synchronise) for timing device-resident arrays on CUDA with CuPy; host
    arrays (identity, None) otherwise."""
    if backends.info(backend).gpu:
        try:
            import cupy

            return cupy.asarray, cupy.cuda.Device().synchronize
        except ImportError:
            pass
    return (lambda a: a), None


def _ducc0_call(nside, lmax, group, alm, sky):
    """ducc0 called directly (all threads), as a peer: synthesis, or the one-pass analysis
    (pixel-area weights) that sphgpu's map2alm with iter=0 computes."""
    import ducc0

    info = ducc0.healpix.Healpix_Base(nside, "RING").sht_info()
    if group == "alm2map":
        return lambda: ducc0.sht.synthesis(alm=alm[None], lmax=lmax, mmax=lmax, spin=0,
                                           nthreads=0, **info)
    weighted = sky * (4 * np.pi / sky.size)
    return lambda: ducc0.sht.adjoint_synthesis(map=weighted[None], lmax=lmax, mmax=lmax,
                                               spin=0, nthreads=0, **info)


def _healpy_call(nside, lmax, group, alm, sky):
    """healpy's transform, as a peer (None when healpy is not installed)."""
    try:
        import healpy
    except ImportError:
        return None
    if group == "alm2map":
        return lambda: healpy.alm2map(alm, nside, lmax=lmax)
    return lambda: healpy.map2alm(sky, lmax=lmax, iter=0)


def measure_sht(nside, group, backend):
    """sphgpu's transform (``group`` is "alm2map" or "map2alm", one pass) at lmax = 2 nside
    on ``backend`` (on CUDA with device and host arrays), against its peers on this machine:
    ducc0 called directly on all threads and healpy where installed."""
    from sphgpu.data import planck2018_cl

    lmax = 2 * nside
    alm = sphgpu.synalm(planck2018_cl(lmax), lmax, seed=1)
    sky = sphgpu.alm2map(alm, nside, lmax, backend="cpu")
    out = {}

    def sphgpu_call(arr_alm, arr_sky):
        if group == "alm2map":
            return lambda: sphgpu.alm2map(arr_alm, nside, lmax, backend=backend)
        return lambda: sphgpu.map2alm(arr_sky, lmax, iter=0, backend=backend)

    if backends.info(backend).gpu:
        to_dev, sync = _device_kit(backend)
        if sync is not None:
            out[f"cuda_device_{group}"] = time_call(sphgpu_call(to_dev(alm), to_dev(sky)),
                                                    repeat=3, sync=sync, max_seconds=10.0).median
        out[f"cuda_host_{group}"] = time_call(sphgpu_call(alm, sky), repeat=3,
                                              max_seconds=10.0).median
    else:
        out[f"{backend}_{group}"] = time_call(sphgpu_call(alm, sky), repeat=3,
                                              max_seconds=10.0).median
    out[f"ducc0_all_{group}"] = time_call(_ducc0_call(nside, lmax, group, alm, sky), repeat=3,
                                          max_seconds=10.0).median
    peer = _healpy_call(nside, lmax, group, alm, sky)
    if peer is not None:
        out[f"healpy_{group}"] = time_call(peer, repeat=3, max_seconds=10.0).median
    return out


def measure_sort(n, group, backend):
    """sphgpu's radix sort of n random uint32 keys (``group`` "keys" or "keys + permutation")
    on ``backend`` against NumPy's stable sort, and CuPy's on a GPU with CuPy."""
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    perm = group != "keys"
    to_dev, sync = _device_kit(backend)
    d = to_dev(keys)
    out = {("sphgpu_keys_perm" if perm else "sphgpu_keys"): time_call(
        lambda: sphgpu.radix_sort(d, return_permutation=perm, backend=backend), repeat=3,
        sync=sync, max_seconds=10.0).median}
    np_fn = np.argsort if perm else np.sort
    out["numpy_argsort_stable" if perm else "numpy_sort_stable"] = time_call(
        lambda: np_fn(keys, kind="stable"), repeat=3, max_seconds=10.0).median
    if sync is not None:
        import cupy

        cfn = cupy.argsort if perm else cupy.sort
        out["cupy_argsort" if perm else "cupy_sort"] = time_call(lambda: cfn(d), repeat=5,
                                                                  sync=sync).median
    return out


_SHT_LABELS = {"cuda_device": "sphgpu cuda, device arrays", "cuda_host": "sphgpu cuda, host arrays",
               "cpu": "sphgpu cpu backend (ducc0 inside)",
               "reference": "sphgpu reference (NumPy)",
               "ducc0_all": "ducc0, all threads", "ducc0_1": "ducc0, 1 thread",
               "healpy": "healpy"}

#: One entry per benchmark file; add one for each new benchmark.
SPECS: dict[str, BenchmarkSpec] = {}


def register(spec: BenchmarkSpec) -> BenchmarkSpec:
    """Add (or replace) the reading of one benchmark file."""
    SPECS[spec.name] = spec
    return spec


#: :func:`register` as ``sphgpu.widgets`` offers it, where the name says what it registers
register_benchmark = register


register(BenchmarkSpec(
    name="sht", title="Spherical harmonic transforms, lmax = 2 nside", rows="results", x="nside",
    x_label="nside", x_log2=True, work="npix", work_label="Mpixels",
    groups={op: (tuple(f"{impl}_{op}" for impl in _SHT_LABELS), f"ducc0_all_{op}")
            for op in ("alm2map", "map2alm")},
    labels={f"{impl}_{op}": text for impl, text in _SHT_LABELS.items()
            for op in ("alm2map", "map2alm")},
    measure=measure_sht, max_measure={"cpu": 256, "cuda": 4096, "reference": 16},
    capability="sht"))

register(BenchmarkSpec(
    name="sort", title="Radix sort of random uint32 keys", rows="uint32", x="n",
    x_label="number of keys", x_log2=True, work="n", work_label="Mkeys",
    groups={"keys": (("sphgpu_keys", "cupy_sort", "numpy_sort_stable"), "numpy_sort_stable"),
            "keys + permutation": (("sphgpu_keys_perm", "cupy_argsort", "numpy_argsort_stable"),
                                   "numpy_argsort_stable")},
    labels={"sphgpu_keys": "sphgpu radix_sort", "sphgpu_keys_perm": "sphgpu, with permutation",
            "cupy_sort": "cupy.sort (CUB)", "cupy_argsort": "cupy.argsort (CUB)",
            "numpy_sort_stable": "numpy.sort stable", "numpy_argsort_stable":
            "numpy.argsort stable"},
    measure=measure_sort, max_measure={"cpu": 2**22, "cuda": 2**28, "reference": 2**16},
    capability="sort"))

_POL = {"cuda_device_t": "sphgpu cuda, temperature only (device)",
        "cuda_device_pol": "sphgpu cuda, T,E,B (device)",
        "cuda_host_pol": "sphgpu cuda, T,E,B (host arrays)",
        "cuda_device_spin2": "sphgpu cuda, spin 2 alone (device)",
        "ducc0_all_spin2": "ducc0 spin 2, all threads", "ducc0_all_t": "ducc0 spin 0, all threads",
        "healpy_pol": "healpy T,E,B"}
# Each operation in two groups, each against ducc0 doing the same transform: the temperature
# transform against ducc0's spin 0, spin 2 and T,E,B against ducc0's spin 2 (for T,E,B a lower
# bound of the speedup: ducc0's T,E,B also runs spin 0)
_POL_GROUPS = {"temperature": (("cuda_device_t", "ducc0_all_t"), "ducc0_all_t"),
               "spin 2 and T,E,B": (("cuda_device_pol", "cuda_host_pol", "cuda_device_spin2",
                                     "ducc0_all_spin2", "healpy_pol"), "ducc0_all_spin2")}
register(BenchmarkSpec(
    name="sht_pol", title="Polarized transforms (T,E,B <-> I,Q,U), lmax = 2 nside",
    rows="results", x="nside", x_label="nside", x_log2=True, work="npix", work_label="Mpixels",
    groups={f"{op}, {kind}": (tuple(f"{impl}_{op}" for impl in impls), f"{base}_{op}")
            for op in ("alm2map", "map2alm") for kind, (impls, base) in _POL_GROUPS.items()},
    labels={f"{impl}_{op}": text for impl, text in _POL.items()
            for op in ("alm2map", "map2alm")}))

_TPACF = ("sphgpu_cuda_float32", "sphgpu_cuda_cupy", "sphgpu_cuda_prepared",
          "sphgpu_cuda_float64", "cpu", "treecorr")
register(BenchmarkSpec(
    name="tpacf", title="Exact pair counts (10.7 randoms per point)", rows="results",
    x="n_data", x_label="data points",
    groups={"DD + DR + RR": (_TPACF, "treecorr"), "DD": (_TPACF, "treecorr"),
            "DR": (_TPACF, "treecorr"), "RR": (_TPACF, "treecorr")},
    timing={"DD + DR + RR": "total_s.{key}", "*": "counts.{group}.{key}.median_s"},
    # what benchmarks/tpacf.py times under each key: "float32" is the default precision,
    # called with NumPy arrays (catalog preparation inside the call); cpu and TreeCorr ran once
    labels={"sphgpu_cuda_float32": "sphgpu cuda, whole call from NumPy",
            "sphgpu_cuda_cupy": "sphgpu cuda, from CuPy arrays",
            "sphgpu_cuda_prepared": "sphgpu cuda, prepared Catalogs",
            "sphgpu_cuda_float64": "sphgpu cuda, float64, from NumPy",
            "cpu": "sphgpu cpu (Numba), one run",
            "treecorr": "TreeCorr, exact (bin_slop=0), one run"},
    sphgpu_prefixes=("sphgpu", "cpu")))

register(BenchmarkSpec(
    name="distributed", title="sphgpu.distributed: a batch of alm2map", rows="batch.rows",
    x="units", x_label="GPU workers", timing="{key}", scaling=True,
    sphgpu_prefixes=("device", "host"),
    groups={"batch": (("device_s", "host_s"), None)},
    labels={"device_s": "maps on the GPUs", "host_s": "NumPy maps, host copies"}))


# -- reading ----------------------------------------------------------------------------------
_SIZE_KEYS = ("nside", "n", "lmax", "npoints", "npix", "size")


def infer_spec(name: str, data: dict) -> BenchmarkSpec | None:
    """A spec for a file that follows the harness's layout but has no entry in SPECS: the
    first list of rows with a ``"timings"`` dict, its size field, every series in one group
    (speedup against the first series not from sphgpu). None when there is no such list."""
    for key, rows in data.items():
        if not (isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows)
                and all(isinstance(r.get("timings"), dict) for r in rows)):
            continue
        x = next((k for k in _SIZE_KEYS if isinstance(rows[0].get(k), (int, float))), None)
        x = x or next((k for k, v in rows[0].items()
                       if isinstance(v, (int, float)) and not isinstance(v, bool)), None)
        if x is None:
            return None
        series = tuple(dict.fromkeys(k for r in rows for k in r["timings"]))
        spec = BenchmarkSpec(name=name, title=name, rows=key, x=x, x_label=x, groups={})
        baseline = next((s for s in series if not spec.is_sphgpu(s)), None)
        return dataclasses.replace(spec, groups={"all": (series, baseline)})
    return None


@dataclasses.dataclass
class Benchmark:
    """One loaded file: its spec, the JSON, and where it came from."""

    spec: BenchmarkSpec
    data: dict
    path: pathlib.Path

    @property
    def rows(self) -> list:
        return self.spec.rows_of(self.data)

    def series(self, key: str, group: str):
        """(x, median seconds, work) over the rows that have the series, sorted by size."""
        spec = self.spec
        pts = sorted((r[spec.x], spec.seconds(r, key, group), r.get(spec.work, 1))
                     for r in self.rows if spec.seconds(r, key, group) is not None)
        if not pts:
            return np.array([]), np.array([]), np.array([])
        return tuple(np.array(c, dtype=np.float64) for c in zip(*pts))

    @property
    def gpu(self) -> str:
        """The GPU the stored run used, as its JSON names it."""
        return str(self.data.get("machine", {}).get("gpu") or "no GPU recorded")

    def machine(self) -> str:
        m = self.data.get("machine", {})
        parts = [self.gpu, f"{m.get('cpu_count', '?')} CPU cores"]
        if "date" in self.data:
            parts.append(str(self.data["date"]))
        return ", ".join(parts)


def this_machine(backend) -> str:
    """What a fresh measurement on ``backend`` runs on: the GPU's name, or the host's cores."""
    if backends.info(backend).gpu:
        from numba import cuda

        if not hasattr(cuda, "get_current_device"):     # Numba's simulator names no device
            return "Numba's CUDA simulator"
        name = cuda.get_current_device().name
        return name.decode() if isinstance(name, bytes) else str(name)
    return f"CPU, {os.cpu_count()} cores"


def default_results_dir() -> pathlib.Path:
    """The benchmark results installed with the package (``sphgpu.data``'s ``benchmarks/``:
    copies of the files of benchmarks/results that this panel reads, made by
    docs/make_performance.py), so that the panel works from an installed wheel."""
    return pathlib.Path(str(importlib.resources.files("sphgpu.data") / "benchmarks"))


def gpu_variant(stem: str) -> BenchmarkSpec | None:
    """The spec of a benchmark run again on another GPU, ``<name>_<gpu>`` (``sort_h200``,
    ``sht_h100``: the machine entry of each file names the GPU): ``<name>``'s spec under that
    name, registered; None when ``<name>`` is no known benchmark."""
    base, _, gpu = stem.rpartition("_")
    if base in SPECS and re.fullmatch(r"[a-z]+\d+(x\d+)?", gpu):
        return register(dataclasses.replace(SPECS[base], name=stem))
    return None


def load_results(results_dir=None) -> tuple[dict, dict]:
    """Read every ``*.json`` in ``results_dir``: ({name: Benchmark}, {file name: why skipped})."""
    root = pathlib.Path(results_dir) if results_dir is not None else default_results_dir()
    found, skipped = {}, {}
    for path in sorted(root.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            skipped[path.name] = f"unreadable: {exc}"
            continue
        spec = SPECS.get(path.stem) or gpu_variant(path.stem) or infer_spec(path.stem, data)
        if spec is None or spec.rows_of(data) is None:
            skipped[path.name] = "no per-size rows with timings found"
            continue
        found[path.stem] = Benchmark(spec, data, path)
    return found, skipped


def _parse_sizes(text) -> list[int]:
    sizes = []
    for part in str(text).replace(",", " ").split():
        if part.startswith("2^") and part[2:].isdigit():
            sizes.append(2 ** int(part[2:]))
        elif part.isdigit():
            sizes.append(int(part))
        else:
            raise ValueError(f"sizes must be whole numbers or powers like 2^20, separated by "
                             f"commas; cannot read {part!r}")
    if not sizes:
        raise ValueError("sizes is empty: give at least one size, e.g. 32, 64")
    return sizes


class SpeedupModel(PanelModel):
    """Curves from the committed benchmark results, plus fresh measurements.

    Parameters
    ----------
    results_dir : path, optional
        Folder of benchmark JSON files (default: the copies installed with the package).
    benchmark : str, optional
        File stem to show first (default: the first of :data:`SPECS` found, else any).
    group : str, optional
        Operation within it (default: its first).
    view : {"seconds", "speedup", "throughput"}
    baseline : str, optional
        Series the speedup is against (default: the group's baseline).
    sizes : str
        Sizes for a fresh measurement, e.g. "32, 64" or "2^16, 2^20".
    backend : {"cpu", "cuda", "reference"}, optional
    """

    PARAMS = ("benchmark", "group", "view", "baseline", "sizes", "backend")

    def __init__(self, results_dir=None, benchmark=None, group=None, view="speedup",
                 baseline=None, sizes="", backend=None):
        super().__init__()
        self.results_dir = results_dir
        self.benchmarks, self.skipped = load_results(results_dir)
        # By default the first benchmark in registration order (sht, sort, ...), then others.
        order = [n for n in SPECS if n in self.benchmarks] + list(self.benchmarks)
        self.benchmark = benchmark if benchmark is not None else next(iter(order), None)
        self.group = group
        self.view = view
        self.baseline = baseline
        self.sizes = sizes
        self.backend = default_backend() if backend is None else backend
        #: (benchmark, group, backend) -> {size: {series key: seconds}}
        self.fresh: dict = {}
        self.set()

    # -- state --------------------------------------------------------------------------------
    @property
    def current(self) -> Benchmark | None:
        return self.benchmarks.get(self.benchmark)

    def groups(self) -> list[str]:
        b = self.current
        return list(b.spec.groups) if b else []

    def series_keys(self) -> tuple:
        b = self.current
        if b is None or self.group not in b.spec.groups:
            return ()
        keys = b.spec.groups[self.group][0]
        return tuple(k for k in keys
                     if any(b.spec.seconds(r, k, self.group) is not None for r in b.rows)
                     or any(k in row for _, t in self._fresh_tables() for row in t.values()))

    def set(self, **params) -> bool:
        """Assign parameters, fill the operation and baseline a change of benchmark leaves
        open (None), then validate."""
        if "benchmark" in params and params["benchmark"] != self.benchmark:
            params.setdefault("group", None)
            params.setdefault("baseline", None)
        if "group" in params and params["group"] != self.group:
            params.setdefault("baseline", None)
        for name, value in params.items():
            if name not in self.PARAMS:
                raise AttributeError(f"SpeedupModel has no parameter {name!r}; "
                                     f"parameters: {', '.join(self.PARAMS)}")
            setattr(self, name, value)
        b = self.current
        if b is not None:
            if self.group is None:
                self.group = next(iter(b.spec.groups))
            if self.baseline is None and self.group in b.spec.groups:
                self.baseline = self._default_baseline()
        self.message = self.validate()
        return not self.message

    def _default_baseline(self):
        """The spec's baseline where it has data, else the first peer series that has."""
        keys, wanted = self.current.spec.groups[self.group]
        have = self.series_keys()
        if wanted in have:
            return wanted
        return next((k for k in have if not self.current.spec.is_sphgpu(k)), wanted)

    def validate(self) -> str:
        if not self.benchmarks:
            where = self.results_dir or default_results_dir()
            return (f"no benchmark results found in {where}; pass results_dir= the folder "
                    f"holding the benchmarks' JSON files")
        if self.benchmark not in self.benchmarks:
            return (f"benchmark must be one of {', '.join(self.benchmarks)}, "
                    f"not {self.benchmark!r}")
        spec = self.current.spec
        if self.group is not None and self.group not in spec.groups:
            return (f"{spec.name}: operation must be one of {', '.join(spec.groups)}, "
                    f"not {self.group!r}")
        if self.view not in VIEWS:
            return f"view must be one of {', '.join(VIEWS)}, not {self.view!r}"
        if self.view == "throughput" and spec.work is None:
            return f"{spec.name}.json records no work per size: choose seconds or speedup"
        if self.baseline is not None and self.group is not None:
            if self.baseline not in spec.groups[self.group][0]:
                return (f"baseline must be one of the series of {self.group}, "
                        f"not {self.baseline!r}")
        if self.view == "speedup" and self.baseline is None and not spec.scaling:
            return f"{spec.name}: no baseline series to measure a speedup against"
        if problem := unknown_backend(self.backend):
            return problem
        return ""

    def _fresh_rows(self) -> dict:
        """This operation's fresh measurements on the chosen backend: {size: {key: s}}."""
        return self.fresh.get((self.benchmark, self.group, self.backend), {})

    def _fresh_tables(self) -> list:
        """(backend, {size: {key: seconds}}) of every backend measured for this operation,
        the chosen backend first: switching the backend chooses where the next measurement
        runs; it does not hide the ones made (they vanished before)."""
        tables = [(be, t) for (bench, group, be), t in self.fresh.items()
                  if bench == self.benchmark and group == self.group and t]
        return sorted(tables, key=lambda bt: bt[0] != self.backend)

    def _fresh_label(self, backend) -> str:
        where = this_machine(backend)
        return where if backend == self.backend else f"{where}, {backend} backend"

    # -- curves -------------------------------------------------------------------------------
    def curves(self) -> list[dict]:
        """The selected curves: dicts with label, key, x, y, sphgpu (bool) and fresh (bool).

        y is seconds, the speedup ``baseline seconds / seconds`` at sizes both have, or the
        throughput ``work / seconds`` (millions per second)."""
        b = self.current
        if b is None or self.message:
            return []
        spec = b.spec
        out = []
        committed = {k: b.series(k, self.group) for k in self.series_keys()}
        tables = [(False, None, committed)]
        for be, fresh in self._fresh_tables():
            fresh_series = {}
            for k in self.series_keys():
                pts = sorted((x, row[k]) for x, row in fresh.items() if k in row)
                if pts:
                    xs, ss = (np.array(c, dtype=np.float64) for c in zip(*pts))
                    fresh_series[k] = (xs, ss, self._work(xs))
            tables.append((True, be, fresh_series))
        for is_fresh, be, table in tables:
            base = table.get(self.baseline)
            for k, (x, s, work) in table.items():
                if not x.size:
                    continue
                if self.view == "seconds":
                    y = s
                elif self.view == "throughput":
                    y = work / s / 1e6
                elif spec.scaling:                 # against itself at the smallest size
                    y = s[0] / s
                else:
                    if base is None or k == self.baseline:
                        continue
                    common, ia, ib = np.intersect1d(x, base[0], return_indices=True)
                    if not common.size:
                        continue
                    x, y = common, base[1][ib] / s[ia]
                label = spec.label(k) + (f" (this machine: {self._fresh_label(be)})"
                                         if is_fresh else "")
                out.append(dict(label=label, key=k, x=x, y=y, sphgpu=spec.is_sphgpu(k),
                                fresh=is_fresh, backend=be))
        return out

    def _work(self, xs):
        """Work units at fresh sizes, from the committed rows' relation, else by formula."""
        spec = self.current.spec
        if spec.work is None:
            return np.ones_like(xs)
        if spec.work == spec.x:
            return xs.copy()
        if spec.x == "nside" and spec.work == "npix":
            return 12.0 * xs**2
        return np.full_like(xs, np.nan)

    def summary(self) -> list[tuple[str, str]]:
        b = self.current
        if b is None or self.message:
            return []
        rows = [("stored results, measured on", f"{b.machine()} ({b.path.name})")]
        stored = f"stored run on {b.gpu}"
        base = self.baseline
        if b.spec.scaling:
            for k in self.series_keys():
                x, s, _ = b.series(k, self.group)
                if x.size > 1:
                    eff = s[0] * x[0] / (s * x)
                    rows.append((f"{b.spec.label(k)}: parallel efficiency ({stored})",
                                 ", ".join(f"{_size_text(n, b.spec)}: {e:.2f}"
                                           for n, e in zip(x, eff))))
        elif base is not None:
            xb, sb, _ = b.series(base, self.group)
            for k in self.series_keys():
                if k == base or not b.spec.is_sphgpu(k):
                    continue
                x, s, _ = b.series(k, self.group)
                common, ia, ib = np.intersect1d(x, xb, return_indices=True)
                if common.size:
                    rows.append((f"{b.spec.label(k)} vs {b.spec.label(base)} ({stored})",
                                 _speedup_range(sb[ib] / s[ia], common, b.spec)))
        for be, table in self._fresh_tables():
            for size, row in sorted(table.items()):
                text = ", ".join(f"{b.spec.label(k)} {fmt_seconds(v)}" for k, v in row.items())
                rows.append((f"this machine ({self._fresh_label(be)}), "
                             f"{_size_text(size, b.spec)}",
                             text + " (medians after a warm-up call)"))
        return rows

    # -- fresh measurement --------------------------------------------------------------------
    def measure(self, progress=None) -> bool:
        """Time the current operation at ``sizes`` on ``backend``; True when done."""
        progress = progress or (lambda f, t="": None)
        if not self.set():
            return False
        spec = self.current.spec
        if spec.measure is None:
            self.message = f"{spec.name}: no fresh measurement is defined for this benchmark"
            return False
        with self.capture():
            sizes = _parse_sizes(self.sizes)
        if self.message:
            return False
        top = spec.max_measure.get(self.backend)
        if top is None:
            self.message = (f"{spec.name}: measurements run on "
                            f"{' or '.join(spec.max_measure)}, not on {self.backend}")
            return False
        bad = [s for s in sizes if not 1 <= s <= top]
        if bad:
            self.message = (f"{spec.x_label} {_size_text(bad[0], spec)} is not allowed for a "
                            f"measurement on the {self.backend} backend here: sizes from 1 to "
                            f"{_size_text(top, spec)}")
            return False
        if spec.capability is not None:
            self.message = backend_problem(self.backend, spec.capability)
            if self.message:
                return False
        table = self.fresh.setdefault((self.benchmark, self.group, self.backend), {})
        for i, size in enumerate(sizes):
            progress(i / len(sizes), f"{spec.x_label} {_size_text(size, spec)}")
            with self.capture("measurement"):
                table[size] = spec.measure(size, self.group, self.backend)
            if self.message:
                return False
        progress(1.0, "done")
        return True

    # -- view ---------------------------------------------------------------------------------
    def figure(self):
        curves = self.curves()
        b = self.current
        if b is None or not curves:
            return None
        spec = b.spec
        fig = new_figure(9.0, 4.2)
        ax = fig.add_subplot()
        colors = {}
        for c in curves:
            color = colors.setdefault(c["key"], f"C{len(colors)}")
            if c["fresh"]:
                # the chosen backend's circles, another backend's measurements diamonds
                ax.plot(c["x"], c["y"], "o" if c["backend"] == self.backend else "D",
                        mfc="none", mec=color, mew=1.8, ms=8, label=c["label"])
            else:
                ax.plot(c["x"], c["y"], "o-" if c["sphgpu"] else "s--", color=color,
                        lw=2.0 if c["sphgpu"] else 1.0, label=c["label"])
        ax.set_xscale("log", base=2 if spec.x_log2 else 10)
        ax.set_yscale("log")
        sizes = np.unique(np.concatenate([c["x"] for c in curves]))
        if sizes.size <= 12:                  # label the measured sizes themselves
            ax.set_xticks(sizes, [_size_text(x, spec) for x in sizes])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        if self.view == "speedup":
            ax.axhline(1.0, color="0.5", lw=0.8)
            if spec.scaling:
                x0 = min(c["x"][0] for c in curves)
                xs = np.unique(np.concatenate([c["x"] for c in curves]))
                ax.plot(xs, xs / x0, ":", color="0.4", label="ideal")
                ax.set_ylabel(f"speedup over {_size_text(x0, spec)} {spec.x_label}")
            else:
                ax.set_ylabel(f"speedup over {spec.label(self.baseline)}")
        elif self.view == "throughput":
            ax.set_ylabel(f"{spec.work_label} / s")
        else:
            ax.set_ylabel("seconds (median)")
        ax.set_xlabel(spec.x_label)
        ax.grid(True, which="both", alpha=0.25)
        title = f"{spec.title}: {self.group}\nlines: stored run on {b.gpu}"
        if any(c["fresh"] for c in curves):
            title += f"; hollow markers: this machine ({this_machine(self.backend)})"
        ax.set_title(title, fontsize="medium")
        ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        return fig


def _speedup_range(sp, sizes, spec) -> str:
    """The best speedup and where, and the range over the sizes as printed: a range whose
    ends print alike is one value ("from 4815.67x to 4815.67x" said nothing)."""
    i = int(np.argmax(sp))
    best = f"{sp[i]:.2f}x at {spec.x_label} {_size_text(sizes[i], spec)}"
    lo, hi = f"{sp.min():.2f}x", f"{sp.max():.2f}x"
    if sp.size == 1:
        return f"{best} (the one size measured)"
    if lo == hi:
        return f"{best} (the same at all {sp.size} sizes)"
    return f"{best} (from {lo} to {hi} over {sp.size} sizes)"


def _size_text(x, spec) -> str:
    x = int(x)
    if spec.x_log2 and x > 1 and x & (x - 1) == 0 and x >= 2**10:
        return f"2^{int(math.log2(x))}"
    return str(x)


class SpeedupPanel(Panel):
    """The speedup panel's view: choose file, operation, view and baseline; Run measures."""

    def __init__(self, model: SpeedupModel):
        super().__init__()
        self.model = model
        m = model
        style = {"description_width": "7em"}
        self.benchmark = w.Dropdown(options=list(m.benchmarks), value=m.benchmark,
                                    description="benchmark", style=style)
        self.group = w.Dropdown(options=m.groups(), value=m.group, description="operation",
                                style=style)
        self.view = toggle_buttons(list(VIEWS), m.view, "show", style["description_width"])
        self.baseline = w.Dropdown(options=self._baseline_options(), value=m.baseline,
                                   description="speedup over", style=style)
        self.sizes = w.Text(value=m.sizes, description="measure at", style=style,
                            placeholder="e.g. 32, 64, 128  or  2^16, 2^20")
        self.backend = toggle_buttons(backend_options(m.backend), m.backend, "backend",
                                      style["description_width"])
        self.run_button.description = "Measure"
        self.run_button.tooltip = "time sphgpu at these sizes on this machine"
        self.figure = w.Output()
        self._syncing = False
        self.benchmark.observe(self.guarded(
            lambda ch: self._changed(benchmark=ch["new"], group=None, baseline=None)), "value")
        self.group.observe(self.guarded(
            lambda ch: self._changed(group=ch["new"], baseline=None)), "value")
        self.observe_values([self.view, self.baseline, self.backend], self._changed)
        self.sizes.observe(self.guarded(lambda change: self.model.set(sizes=change["new"])),
                           names="value")
        self.on_run(self.run)
        fit_descriptions([self.benchmark, self.group, self.baseline])
        fit_descriptions([self.view, self.sizes, self.backend])
        self.children = [w.HTML("<b>Speedup curves</b>: committed benchmark results, and a "
                                "fresh measurement on this machine"),
                         w.HBox([w.VBox([self.benchmark, self.group, self.baseline]),
                                 w.VBox([self.view, self.sizes, self.backend])]),
                         self.run_row(), self.message, self.figure, self.numbers]
        self.add_class("sphgpu-speedup-panel")
        self.guarded(self._refresh)()

    def _baseline_options(self):
        spec = self.model.current.spec if self.model.current else None
        return [(spec.label(k), k) for k in self.model.series_keys()] if spec else []

    def _changed(self, **params):
        """Pass the controls to the model (``params`` override them), then show the result."""
        if self._syncing:
            return
        m = self.model
        m.set(**dict(dict(benchmark=self.benchmark.value, group=self.group.value,
                          view=self.view.value, baseline=self.baseline.value,
                          backend=self.backend.value), **params))
        # The operation and baseline choices follow the benchmark.
        self._syncing = True
        try:
            self.group.options = m.groups()
            self.group.value = m.group
            self.baseline.options = self._baseline_options()
            self.baseline.value = m.baseline
        finally:
            self._syncing = False
        self._refresh()

    def _refresh(self):
        m = self.model
        if m.message:
            self.figure.outputs = ()
            self.numbers.value = ""
            self.show_message(m.message)
            return
        self.show_message("")
        fig = m.figure()
        if fig is None:
            self.figure.outputs = ()
        else:
            show_figure(self.figure, fig)
        self.numbers.value = numbers_html(m.summary())

    def run(self):
        m = self.model
        m.set(sizes=self.sizes.value)
        if not m.measure(progress=self.report):
            self.show_message(m.message)
            return
        self._refresh()


def speedup_panel(**kw) -> SpeedupPanel:
    """The speedup-curves panel. Keywords are :class:`SpeedupModel`'s (results_dir, benchmark,
    group, view, baseline, sizes, backend)."""
    return SpeedupPanel(SpeedupModel(**kw))
