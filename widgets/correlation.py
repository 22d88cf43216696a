"""Correlation-function panel: w(theta) of a catalog with jackknife errors, and its DD/DR/RR.

``CorrelationModel`` takes a catalog (the shipped example, a clustered Neyman-Scott mock from
:func:`sphgpu.tpacf.mocks.clustered_catalog`, or an uploaded CSV/NPZ/FITS file with RA/Dec in
degrees), draws random catalogs uniform over its footprint
(:func:`sphgpu.tpacf.mocks.uniform_randoms`) and calls :func:`sphgpu.tpacf.angular_correlation`
(k-means jackknife regions on the first random catalog); the panel shows that function's
:class:`sphgpu.tpacf.CorrelationResult` (w, its jackknife errors, DD/DR/RR), cached by the
settings it depends on. ``CorrelationPanel`` shows w(theta) with error bars, the normalised
counts per bin and the numbers. See :mod:`sphgpu.widgets._base` for the pattern.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import tempfile
import time

import ipywidgets as w
import numpy as np

from sphgpu import backends
from sphgpu.tpacf import AngularBins, Catalog, CorrelationResult, angular_correlation
from sphgpu.tpacf.mocks import clustered_catalog, uniform_randoms

from ._base import (LRU, Panel, PanelModel, backend_options, backend_problem, default_backend,
                    fit_descriptions,
                    first_call, fmt_call_seconds, is_int, is_real, new_figure, show_figure,
                    toggle_buttons, unknown_backend)

__all__ = ["CorrelationModel", "CorrelationRun", "CorrelationPanel", "correlation_panel",
           "EXAMPLE_BOX"]
#: the names sphgpu.widgets offers from this module; the package reads this line from the
#: source, since importing a panel module imports ipywidgets and matplotlib
_PACKAGE_EXPORTS = ("CorrelationModel", "CorrelationPanel", "correlation_panel")

#: Footprint of the shipped example (RA min, RA max, Dec min, Dec max in degrees): 60 x 60
#: degrees, as in notebooks/04_correlation.ipynb.
EXAMPLE_BOX = (0.0, 60.0, -20.0, 40.0)
ESTIMATORS = ("landy-szalay", "natural", "multi-random")
SPACINGS = ("log", "linear")
YSCALES = ("symlog", "linear", "log")
SOURCES = ("example", "upload")
#: Largest number of points (data + all randoms) each backend counts here by default: the CPU
#: limit keeps a Binder session (two cores) within about a minute for wide bins; the NumPy
#: reference compares every pair.
MAX_POINTS = {"cpu": 2_000_000, "cuda": 50_000_000, "reference": 30_000}
#: Up to these sizes a change of a control recounts at once (well under a second on a CPU).
LIVE_MAX_DATA = 3000
LIVE_MAX_RANDOM_POINTS = 6 * LIVE_MAX_DATA        # all random catalogs together
#: ... and up to this many pairs to compare, estimated (:meth:`CorrelationModel.pair_work`):
#: the CPU backend compares some 5e7 pairs a second on one Binder core, so wide bins
#: (theta_max of tens of degrees) wait for Run even with few points.
LIVE_MAX_PAIRS = 2e7
MAX_BINS = 100
MAX_RANDOM_CATALOGS = 20
MAX_RANDOM_FACTOR = 50.0
MAX_REGIONS = 200
#: Uploaded files larger than this are refused (a browser upload travels through the kernel).
MAX_UPLOAD_BYTES = 200 * 2**20


@dataclasses.dataclass
class CorrelationRun:
    """One call of :func:`sphgpu.tpacf.angular_correlation` and what it was called on.

    ``result`` is that function's :class:`sphgpu.tpacf.CorrelationResult`; ``w``, ``sigma``,
    ``theta`` (bin centres, degrees), the counts and the rest are read from it."""

    result: CorrelationResult
    seconds: float               # wall time of the call (counting and estimating)
    backend: str
    n_data: int
    n_random: int                # points per random catalog
    n_regions: int               # 0: no jackknife
    source: str                  # "example mock" or the uploaded file's name
    first: bool = False          # the panel's first call on this backend in this process

    def __getattr__(self, name):
        if name in ("bins", "theta", "w", "sigma", "covariance", "w_jackknife", "estimator",
                    "dd", "dr", "rr"):
            return getattr(self.result, name)
        raise AttributeError(name)

    def numbers(self) -> list[tuple[str, str]]:
        r = self.result
        pooled_rr = sum(r.rr[1:], r.rr[0])
        rows = [
            ("catalog", f"{self.source}: {self.n_data:,} points"),
            ("randoms", f"{len(r.rr)} × {self.n_random:,} points"),
            ("bins", f"{r.bins.nbins} {r.bins.spacing}, {r.bins.edges[0]:g}° to "
                     f"{r.bins.edges[-1]:g}°"),
            ("estimator", r.estimator),
            ("jackknife regions", str(self.n_regions) if self.n_regions else "none"),
            ("backend", self.backend),
            ("DD pairs in bins", f"{int(r.dd.counts.sum()):,}"),
        ]
        if r.dr:
            rows.append(("DR pairs in bins (all catalogs)",
                         f"{int(sum(int(c.counts.sum()) for c in r.dr)):,}"))
        rows.append(("RR pairs in bins (all catalogs)", f"{int(pooled_rr.counts.sum()):,}"))
        rows.append(("time of angular_correlation (one call: counts, jackknife, estimator)",
                     fmt_call_seconds(self.seconds, self.first)))
        finite = np.isfinite(r.w)
        if finite.any():
            k = int(np.argmax(finite))
            err = "" if r.sigma is None else f" ± {r.sigma[k]:.3g}"
            rows.append((f"w({r.theta[k]:.3g}°)", f"{r.w[k]:.4g}{err}"))
        return rows


class CorrelationModel(PanelModel):
    """State and computation of the correlation-function panel.

    Parameters
    ----------
    source : {"example", "upload"}
        The shipped clustered mock (``n_points`` points in :data:`EXAMPLE_BOX`), or the
        catalog given to :meth:`load_file`.
    n_points : int >= 2
        Size of the example catalog.
    seed : int >= 0
        Seed of the example catalog; random catalog i uses seed + 1 + i.
    theta_min, theta_max : float, degrees
        Bin range, 0 <= theta_min < theta_max <= 180 (theta_min > 0 for log bins).
    nbins : int, 1 to 100
    spacing : {"log", "linear"}
    n_randoms : int, 1 to 20
        Number of random catalogs (DR and RR are counted for each).
    random_factor : float
        Points per random catalog as a multiple of the data size (0 < factor <= 50).
    estimator : {"landy-szalay", "natural", "multi-random"}
    jackknife : int
        0: no errors; K >= 2: K k-means regions fitted on the first random catalog.
    backend : {"cpu", "cuda", "reference"}, optional
        Default: ``SPHGPU_BACKEND`` if set, else "cuda" where a GPU is usable, else "cpu".
    yscale : {"symlog", "linear", "log"}
        y axis of the w(theta) plot (a view setting: changing it recounts nothing).
    max_points : dict, optional
        Largest data + random points per backend (default :data:`MAX_POINTS`).
    live_max_data, live_max_random_points : int; live_max_pairs : float
        Up to these sizes (points, random points in all, estimated pairs to compare) the
        panel recounts on every change (``live``).

    Randoms of an uploaded catalog are uniform over its RA/Dec bounding box (the footprint
    the panel can infer); the example's randoms cover :data:`EXAMPLE_BOX`.
    """

    PARAMS = ("source", "n_points", "seed", "theta_min", "theta_max", "nbins", "spacing",
              "n_randoms", "random_factor", "estimator", "jackknife", "backend", "yscale")

    def __init__(self, source="example", n_points=2000, seed=0, theta_min=0.05, theta_max=10.0,
                 nbins=12, spacing="log", n_randoms=2, random_factor=3.0,
                 estimator="landy-szalay", jackknife=10, backend=None, yscale="symlog", *,
                 max_points=None, live_max_data=LIVE_MAX_DATA,
                 live_max_random_points=LIVE_MAX_RANDOM_POINTS, live_max_pairs=LIVE_MAX_PAIRS):
        super().__init__()
        self.max_points = dict(MAX_POINTS, **(max_points or {}))
        self.live_max_data = live_max_data
        self.live_max_random_points = live_max_random_points
        self.live_max_pairs = live_max_pairs
        self.source = source
        self.n_points = n_points
        self.seed = seed
        self.theta_min = theta_min
        self.theta_max = theta_max
        self.nbins = nbins
        self.spacing = spacing
        self.n_randoms = n_randoms
        self.random_factor = random_factor
        self.estimator = estimator
        self.jackknife = jackknife
        self.backend = default_backend() if backend is None else backend
        self.yscale = yscale
        self.uploaded: Catalog | None = None   # the catalog of the last good load_file
        self.upload_name = ""
        self.upload_error = ""                 # why the last load_file failed ("" if it did not)
        self._upload_key = None
        self.result: CorrelationRun | None = None
        self._catalogs = LRU(24)     # catalog key -> Catalog (data, randoms)
        self._runs = LRU(16)         # everything a run depends on -> CorrelationRun
        self.set()

    # -- uploads ------------------------------------------------------------------------------
    def load_file(self, name: str, content: bytes) -> bool:
        """Parse an uploaded catalog (``.csv``/``.txt``/``.tsv``, ``.npz`` with ``ra`` and
        ``dec``, or ``.fits`` with RA/DEC when astropy is installed); RA/Dec in degrees.

        Selects ``source="upload"``. Returns True when the file gave a catalog; otherwise
        ``message`` says why (the previous upload is dropped).
        """
        self.uploaded, self.upload_name, self.upload_error, self._upload_key = None, "", "", None
        name = os.path.basename(str(name or "upload"))
        content = bytes(content or b"")
        self.upload_name = name
        try:
            self.uploaded = _parse_catalog(name, content)
            self._upload_key = ("upload", name, hashlib.sha1(content).hexdigest())
        except (ValueError, TypeError, KeyError, OSError, ImportError, UnicodeDecodeError,
                EOFError) as exc:
            self.upload_error = f"cannot read {name!r}: {exc}"
        return self.set(source="upload")

    # -- validation ---------------------------------------------------------------------------
    def validate(self) -> str:
        if self.source not in SOURCES:
            return f"source must be one of {', '.join(SOURCES)}, not {self.source!r}"
        if problem := unknown_backend(self.backend):
            return problem
        if self.source == "example":
            if not is_int(self.n_points) or self.n_points < 2:
                return f"n_points must be a whole number >= 2, not {self.n_points!r}"
            if not is_int(self.seed) or self.seed < 0:
                return f"seed must be a whole number >= 0, not {self.seed!r}"
        elif self.upload_error:
            return self.upload_error
        elif self.uploaded is None:
            return "no catalog uploaded yet: choose a CSV, NPZ or FITS file with ra/dec columns"
        elif self.uploaded.size < 2:
            return f"the uploaded catalog has {self.uploaded.size} point: at least 2 are needed"
        elif _footprint(self.uploaded) is None:
            return ("the uploaded catalog spans no area (all points share one RA or one Dec): "
                    "randoms cannot be drawn over its footprint")
        elif not (0.0 <= self.uploaded.ra.min() and self.uploaded.ra.max() <= 360.0):
            return (f"the uploaded catalog's RA must lie within 0-360° for its randoms, not "
                    f"{self.uploaded.ra.min():.4g}° to {self.uploaded.ra.max():.4g}°")
        elif _crosses_ra_zero(self.uploaded.ra):
            ra = self.uploaded.ra
            return (f"the uploaded catalog crosses RA 0° (from {ra[ra > 180].min():.4g}° to "
                    f"{ra[ra <= 180].max():.4g}°): its randoms, drawn over an RA/Dec box from "
                    f"the smallest to the largest RA, would cover all the RA it does not; "
                    f"rotate its RA so that it does not cross 0°")
        if not is_real(self.theta_min) or not is_real(self.theta_max):
            return "theta_min and theta_max must be numbers of degrees"
        if self.spacing not in SPACINGS:
            return f"spacing must be one of {', '.join(SPACINGS)}, not {self.spacing!r}"
        if self.theta_min < 0 or (self.spacing == "log" and self.theta_min <= 0):
            need = "> 0 for log bins" if self.spacing == "log" else ">= 0"
            return f"theta_min must be {need}, not {self.theta_min:g}°"
        if self.theta_max > 180:
            return f"theta_max must be at most 180°, not {self.theta_max:g}°"
        if self.theta_max <= self.theta_min:
            return (f"theta_max ({self.theta_max:g}°) must be larger than theta_min "
                    f"({self.theta_min:g}°)")
        if not is_int(self.nbins) or not 1 <= self.nbins <= MAX_BINS:
            return f"the number of bins must be a whole number from 1 to {MAX_BINS}, not {self.nbins!r}"
        if not is_int(self.n_randoms) or not 1 <= self.n_randoms <= MAX_RANDOM_CATALOGS:
            return (f"the number of random catalogs must be a whole number from 1 to "
                    f"{MAX_RANDOM_CATALOGS}, not {self.n_randoms!r}")
        if not is_real(self.random_factor) or not 0 < self.random_factor <= MAX_RANDOM_FACTOR:
            return (f"randoms per catalog must be more than 0 and at most {MAX_RANDOM_FACTOR:g} "
                    f"times the data size, not {self.random_factor!r}")
        if not isinstance(self.estimator, str) or self.estimator not in ESTIMATORS:
            return f"estimator must be one of {', '.join(ESTIMATORS)}, not {self.estimator!r}"
        if self.yscale not in YSCALES:
            return f"yscale must be one of {', '.join(YSCALES)}, not {self.yscale!r}"
        n_data, n_random = self.n_data, self.n_random
        if not is_int(self.jackknife) or self.jackknife < 0 or self.jackknife == 1:
            return (f"jackknife regions must be 0 (none) or a whole number >= 2, not "
                    f"{self.jackknife!r}")
        if self.jackknife > min(n_random, n_data, MAX_REGIONS):
            return (f"{self.jackknife} jackknife regions is more than allowed here: at most "
                    f"{min(n_random, n_data, MAX_REGIONS)} (no more than the {n_data} data "
                    f"points, the {n_random} points of a random catalog, or {MAX_REGIONS})")
        total = n_data + self.n_randoms * n_random
        limit = self.max_points[self.backend]
        if total > limit:
            return (f"{total:,} points (data + {self.n_randoms} × {n_random:,} randoms) are too "
                    f"many for the {self.backend} backend here (at most {limit:,}); use fewer "
                    f"points or randoms, or another backend")
        return backend_problem(self.backend, "tpacf")

    @property
    def n_data(self) -> int:
        """Points of the current catalog (0 when there is none)."""
        if self.source == "upload":
            return 0 if self.uploaded is None else self.uploaded.size
        return int(self.n_points) if is_int(self.n_points) else 0

    @property
    def n_random(self) -> int:
        """Points per random catalog: random_factor times the data size, at least 1."""
        f = float(self.random_factor) if is_real(self.random_factor) else 0.0
        return max(1, int(round(f * self.n_data)))

    @property
    def live(self) -> bool:
        """True when the counts are small enough to redo on every change of a control."""
        return (not self.message and self.n_data <= self.live_max_data
                and self.n_randoms * self.n_random <= self.live_max_random_points
                and self.pair_work() <= self.live_max_pairs
                and not backends.info(self.backend).reference)

    def pair_work(self) -> float:
        """Estimated pairs the counts compare: all pairs of DD, DR and RR times the fraction
        of the footprint within theta_max of a point (the grid prunes the others)."""
        if self.source == "example":
            box = EXAMPLE_BOX
        else:
            box = None if self.uploaded is None else _footprint(self.uploaded)
        if box is None or not is_real(self.theta_max):
            return 0.0
        area = np.deg2rad(box[1] - box[0]) * (np.sin(np.deg2rad(box[3]))
                                              - np.sin(np.deg2rad(box[2])))
        cap = 2 * np.pi * (1 - np.cos(np.deg2rad(min(max(self.theta_max, 0.0), 180.0))))
        nd, nr = self.n_data, self.n_random
        pairs = nd * (nd - 1) / 2 + self.n_randoms * nr * (nr - 1) / 2
        if self.estimator != "natural":
            pairs += self.n_randoms * nd * nr
        return float(pairs * min(1.0, cap / area))

    @property
    def size_note(self) -> str:
        """Why the panel waits for Run ("" when it recounts live)."""
        if self.message or self.live:
            return ""
        return (f"{self.n_data:,} points and {self.n_randoms} × {self.n_random:,} randoms on "
                f"{self.backend} with θ max {self.theta_max:g}° are too many to recount on "
                f"every change (live up to {self.live_max_data:,} points, "
                f"{self.live_max_random_points:,} randoms in all and about "
                f"{self.live_max_pairs:.0e} pairs to compare; these need "
                f"{self.pair_work():.1e}): press Run to count")

    # -- computation --------------------------------------------------------------------------
    def bins(self) -> AngularBins:
        make = AngularBins.log if self.spacing == "log" else AngularBins.linear
        return make(float(self.theta_min), float(self.theta_max), int(self.nbins), unit="deg")

    def _data_key(self):
        if self.source == "upload":
            return self._upload_key
        return ("example", int(self.n_points), int(self.seed))

    def data_catalog(self) -> Catalog:
        """The current data catalog (unlabelled), cached."""
        if self.source == "upload":
            return self.uploaded
        n, seed = int(self.n_points), int(self.seed)
        return self._catalogs.get(self._data_key(), lambda: Catalog(
            *clustered_catalog(n, EXAMPLE_BOX, seed=seed, members=25, sigma_deg=(0.03, 1.0))))

    def _random_key(self, i):
        return ("random", self._data_key(), self.n_random, i)

    def random_catalog(self, i: int) -> Catalog:
        """Random catalog i (0-based): n_random points uniform over the footprint, seed
        ``seed + 1 + i`` (cached)."""
        box = EXAMPLE_BOX if self.source == "example" else _footprint(self.uploaded)
        seed = (int(self.seed) if is_int(self.seed) else 0) + 1 + i
        n = self.n_random
        return self._catalogs.get(self._random_key(i),
                                  lambda: Catalog(*uniform_randoms(n, box, seed=seed)))

    def _run_key(self):
        return (self._data_key(), self.n_random, self.n_randoms, self.bins().chord2_edges.tobytes(),
                self.estimator, int(self.jackknife), self.backend)

    def run(self, progress=None) -> CorrelationRun | None:
        """w(theta) of the current settings through :func:`sphgpu.tpacf.angular_correlation`
        (cached); None with ``message`` set if invalid.

        progress : callable(fraction, text), optional
        """
        progress = progress or (lambda f, t="": None)
        self.result = None
        if not self.set():
            return None
        key = self._run_key()
        if key not in self._runs:
            progress(0.0, "catalogs")
            run = None
            with self.capture("correlation"):
                data = self.data_catalog()
                randoms = [self.random_catalog(i) for i in range(self.n_randoms)]
                progress(0.1, f"counting DD, DR and RR ({self.backend})")
                t0 = time.perf_counter()
                with np.errstate(divide="ignore", invalid="ignore"):   # RR = 0 bins: NaN
                        res = angular_correlation(data, randoms, bins=self.bins(),
                                              estimator=self.estimator,
                                              jackknife=int(self.jackknife) or None,
                                              backend=self.backend)
                run = CorrelationRun(
                    res, time.perf_counter() - t0, self.backend, self.n_data, self.n_random,
                    int(self.jackknife),
                    "example mock" if self.source == "example" else self.upload_name,
                    first_call("angular_correlation", self.backend))
            if run is None:
                return None
            self._runs.put(key, run)
        self.result = self._runs.get(key, None)
        progress(1.0, "done")
        return self.result

    # -- views --------------------------------------------------------------------------------
    def figure(self):
        """w(theta) with jackknife error bars and the normalised DD/DR/RR per bin, as a
        matplotlib Figure (or None without a result)."""
        r = self.result
        if r is None:
            return None
        fig = new_figure(11.0, 3.8)
        # fixed margins: constrained layout measures every tick label of the log axes and
        # would take most of the 1 s an interaction may use
        fig.set_layout_engine("none")
        ax, bx = fig.subplots(1, 2, gridspec_kw=dict(left=0.07, right=0.99, bottom=0.14,
                                                     top=0.92, wspace=0.22))
        log_x = r.bins.spacing == "log"
        label = f"{r.estimator}" + (f", {r.n_regions} jackknife regions" if r.n_regions else "")
        ax.errorbar(r.theta, r.w, yerr=r.sigma, fmt="o-", color="#b2182b", ms=4, capsize=2,
                    lw=1, label=label)
        if log_x:
            ax.set_xscale("log")
        if self.yscale == "symlog":
            finite = np.abs(r.w[np.isfinite(r.w) & (r.w != 0)])
            ax.set_yscale("symlog", linthresh=float(max(finite.min(), 1e-4)) if finite.size
                          else 1e-2)
        elif self.yscale == "log":
            ax.set_yscale("log", nonpositive="mask")
        ax.axhline(0, color="0.6", lw=0.8)
        ax.set_xlabel(r"$\theta$ [deg]")
        ax.set_ylabel(r"$w(\theta)$ [dimensionless]")
        ax.set_title(f"{r.source}, {r.n_data:,} points", fontsize="medium")
        ax.legend(frameon=False)
        curves = [("DD", r.dd, "o-")]
        if r.dr:
            curves.append(("DR" + (" (pooled)" if len(r.dr) > 1 else ""),
                           sum(r.dr[1:], r.dr[0]), "s-"))
        curves.append(("RR" + (" (pooled)" if len(r.rr) > 1 else ""), sum(r.rr[1:], r.rr[0]),
                       "^-"))
        for name, pc, style in curves:
            y = pc.normalized()
            bx.plot(r.theta, np.where(y > 0, y, np.nan), style, ms=4, lw=1,
                    label=f"{name}: {int(pc.counts.sum()):,} pairs")
        if log_x:
            bx.set_xscale("log")
        bx.set_yscale("log")
        bx.set_xlabel(r"$\theta$ [deg]")
        bx.set_ylabel("pairs / possible pairs")
        bx.set_title("pair counts per bin", fontsize="medium")
        bx.legend(frameon=False)
        return fig


def _crosses_ra_zero(ra) -> bool:
    """True when the RA/Dec box of RA values in [0, 360] (what the randoms cover) is much
    wider than the points' own RA extent on the circle: the points sit on both sides of 0°
    (RA 350° to 10° has a box from 0° to 360°)."""
    r = np.sort(np.asarray(ra, dtype=np.float64))
    gaps = np.diff(np.append(r, r[0] + 360.0))
    extent = 360.0 - gaps.max()          # the RA the points cover, going round the circle
    # a catalog spread over all RA has a box as wide as its extent; one crossing 0° has a box
    # of nearly 360° around a narrow extent
    return bool(r[-1] - r[0] > 1.5 * extent)


def _footprint(cat):
    """The RA/Dec bounding box of a catalog, for its randoms; None when it has no area."""
    ra0, ra1 = float(cat.ra.min()), float(cat.ra.max())
    dec0, dec1 = float(cat.dec.min()), float(cat.dec.max())
    if not (ra0 < ra1 and dec0 < dec1):
        return None
    return (ra0, ra1, dec0, dec1)


def _parse_catalog(name: str, content: bytes) -> Catalog:
    """A Catalog from an uploaded file's bytes, through :meth:`Catalog.read` (by suffix)."""
    if not content:
        raise ValueError("the file is empty")
    if len(content) > MAX_UPLOAD_BYTES:
        raise ValueError(f"the file is larger than {MAX_UPLOAD_BYTES // 2**20} MB")
    low = name.lower()
    if low.endswith(".npz"):
        with np.load(io.BytesIO(content)) as z:
            missing = [k for k in ("ra", "dec") if k not in z.files]
            if missing:
                raise ValueError(f"the NPZ file has no array named {missing[0]!r} (arrays: "
                                 f"{', '.join(z.files) or 'none'})")
            return Catalog(z["ra"], z["dec"])
    if not low.endswith((".csv", ".txt", ".dat", ".tsv", ".fits", ".fit", ".fits.gz", ".fts")):
        raise ValueError("unknown format: upload a .csv, .txt, .tsv, .npz or .fits file")
    # Catalog.read takes a path: write the bytes to a private temporary file with the name's
    # suffix so the same reader (and its messages) serve files and uploads.
    suffix = ".fits.gz" if low.endswith(".fits.gz") else os.path.splitext(low)[1]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "catalog" + suffix)
        with open(path, "wb") as f:
            f.write(content)
        try:
            return Catalog.read(path)
        except (ValueError, TypeError, KeyError, OSError) as exc:
            # messages name the file: the user's name, not the temporary one
            raise ValueError(str(exc).replace(path, name)) from None


class CorrelationPanel(Panel):
    """The correlation-function panel's view: catalog, bins, randoms, estimator, jackknife,
    backend; Run; w(theta) and the counts; the numbers."""

    def __init__(self, model: CorrelationModel):
        super().__init__()
        self.model = model
        m = model
        style = {"description_width": "9em"}
        narrow = w.Layout(width="19em")

        def num(v, default):
            return v if is_real(v) else default

        self.source = toggle_buttons([("example mock", "example"), ("uploaded file", "upload")],
                                     m.source if m.source in SOURCES else "example", "catalog",
                                     style["description_width"])
        self.upload = w.FileUpload(accept=".csv,.txt,.tsv,.npz,.fits,.fit,.fits.gz",
                                   multiple=False, description="upload")
        self.n_points = w.BoundedIntText(value=int(num(m.n_points, 2000)), min=2,
                                         max=max(m.max_points.values()), step=500,
                                         description="example points", style=style,
                                         layout=narrow)
        # the bound reaches the model's seed: a larger one would be clamped without a word
        self.seed = w.BoundedIntText(value=int(num(m.seed, 0)), min=0,
                                     max=max(10**6, int(num(m.seed, 0))),
                                     description="seed", style=style, layout=narrow)
        # FloatText (not bounded) so that out-of-range angles reach the model and its message
        self.theta_min = w.FloatText(value=float(num(m.theta_min, 0.05)),
                                     description="θ min [deg]", style=style, layout=narrow)
        self.theta_max = w.FloatText(value=float(num(m.theta_max, 10.0)),
                                     description="θ max [deg]", style=style, layout=narrow)
        self.nbins = w.IntText(value=int(num(m.nbins, 12)), description="bins", style=style,
                               layout=narrow)
        self.spacing = toggle_buttons(list(SPACINGS), m.spacing if m.spacing in SPACINGS
                                      else "log", "spacing", style["description_width"])
        self.n_randoms = w.IntText(value=int(num(m.n_randoms, 2)),
                                   description="random catalogs", style=style, layout=narrow)
        self.random_factor = w.FloatText(value=float(num(m.random_factor, 3.0)),
                                         description="randoms × data", style=style,
                                         layout=narrow)
        self.estimator = w.Dropdown(options=list(ESTIMATORS),
                                    value=m.estimator if m.estimator in ESTIMATORS
                                    else ESTIMATORS[0], description="estimator", style=style,
                                    layout=narrow)
        self.jackknife = w.IntText(value=int(num(m.jackknife, 0)),
                                   description="jackknife regions", style=style, layout=narrow)
        options = backend_options(m.backend)
        self.backend = toggle_buttons(options, m.backend if m.backend in options else "cpu",
                                      "backend", style["description_width"])
        self.yscale = toggle_buttons(list(YSCALES), m.yscale if m.yscale in YSCALES
                                     else "symlog", "w axis", style["description_width"])
        self.figure = w.Output()
        self.observe_values([self.source, self.n_points, self.seed, self.theta_min,
                             self.theta_max, self.nbins, self.spacing, self.n_randoms,
                             self.random_factor, self.estimator, self.jackknife, self.backend],
                            self._changed)
        self.yscale.observe(self.guarded(self._view_changed), names="value")
        self.upload.observe(self.guarded(self._uploaded), names="value")
        self.on_run(self.run)
        fit_descriptions([self.source, self.n_points, self.seed])
        fit_descriptions([self.theta_min, self.theta_max, self.nbins, self.spacing])
        fit_descriptions([self.n_randoms, self.random_factor, self.estimator, self.jackknife,
                          self.backend, self.yscale])
        controls = w.HBox([
            w.VBox([self.source, w.HBox([self.upload]), self.n_points, self.seed]),
            w.VBox([self.theta_min, self.theta_max, self.nbins, self.spacing]),
            w.VBox([self.n_randoms, self.random_factor, self.estimator, self.jackknife,
                    self.backend, self.yscale]),
        ])
        self.children = [w.HTML("<b>Angular correlation function</b>: exact DD, DR and RR pair "
                                "counts, w(θ) with jackknife errors"),
                         controls, self.run_row(), self.message, self.figure, self.numbers]
        self.add_class("sphgpu-correlation-panel")
        self.guarded(self._refresh)()

    # -- callbacks ----------------------------------------------------------------------------
    def _uploaded(self, change):
        files = change["new"]
        if not files:
            return
        f = files[0] if isinstance(files, (list, tuple)) else next(iter(files.values()))
        name = f.get("name", "upload") if isinstance(f, dict) else getattr(f, "name", "upload")
        content = f["content"] if isinstance(f, dict) else f.content
        self.model.load_file(name, bytes(content))
        if self.source.value != "upload":
            self.source.value = "upload"       # observed: refreshes through _changed
        else:
            self._changed()

    def _changed(self):
        self.model.set(source=self.source.value, n_points=self.n_points.value,
                       seed=self.seed.value, theta_min=self.theta_min.value,
                       theta_max=self.theta_max.value, nbins=self.nbins.value,
                       spacing=self.spacing.value, n_randoms=self.n_randoms.value,
                       random_factor=self.random_factor.value,
                       estimator=self.estimator.value, jackknife=self.jackknife.value,
                       backend=self.backend.value)
        self._refresh()

    def _view_changed(self, change):
        """The w axis only redraws the last result (no counting)."""
        self.model.set(yscale=self.yscale.value)
        # not while stale: the last result is of other settings until Run counts again
        if self.model.result is not None and not self.model.message and self.figure.outputs:
            show_figure(self.figure, self.model.figure())

    def stale_note(self):
        return self.model.size_note


def correlation_panel(**kw) -> CorrelationPanel:
    """The correlation-function panel. Keywords are :class:`CorrelationModel`'s (source,
    n_points, seed, theta_min, theta_max, nbins, spacing, n_randoms, random_factor, estimator,
    jackknife, backend, yscale, max_points, live_max_data, live_max_random_points,
    live_max_pairs)."""
    return CorrelationPanel(CorrelationModel(**kw))
