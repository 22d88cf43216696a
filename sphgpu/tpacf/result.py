"""CorrelationResult: w(theta) with its counts, covariance, mean separations; files; a plot.

A result keeps every count it was made from (:class:`PairCounts`, per-patch-pair counts
included), so its covariance can be estimated again by any method (:meth:`estimate_cov`,
:func:`joint_covariance`) without counting again, and :meth:`CorrelationResult.write` saves
all of it: FITS (``.fits``, ``.fit``, ``.fits.gz``; needs astropy) or ASCII (any other suffix).
Both hold a table for people (theta, mean theta, w, sigma, DD, DR, RR per bin) and the complete
state, which :meth:`CorrelationResult.read` restores identically (floats exactly; the
:class:`JackknifeRegions` object that labelled the catalogs is not saved, only the labels'
counts).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np

from .._atomic import atomic_write
from ..io.fitsfile import astropy_fits, open_fits, write_fits
from .bins import AngularBins
from .counts import ADDITIVE, PairCounts
from . import covariance as cov_
from .jackknife import JackknifeRegions

__all__ = ["CorrelationResult", "joint_covariance"]

_FORMAT = "sphgpu.tpacf.CorrelationResult"
_PC_SCALARS = ("n1", "n2", "auto", "total", "weighted_total", "self_total",
               "weighted_self_total", "pairs_compared", "refined", "pairs_at_once")
_RESULT_ARRAYS = ("theta", "w", "covariance", "sigma", "w_jackknife", "present")


def _path(path):
    """os.fspath(path), with an error that names the argument."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike file name, got {type(path).__name__}")
    return os.fspath(path)


@dataclass
class CorrelationResult:
    """w(theta) with its counts and, with regions, its covariance.

    Parameters
    ----------
    bins : AngularBins
    theta : ndarray, shape (nbins,)
        Bin centres in ``bins.unit``.
    w : ndarray, shape (nbins,)
    estimator : str
    dd : PairCounts
        DD (D1D2 for a cross-correlation), with its separations when counted with them.
    dr, rr : list of PairCounts
        DR (D1R2) and RR (R1R2), one per random catalog (dr empty for the natural estimator).
    rd : list of PairCounts
        R1D2 of a cross-correlation (empty for an auto-correlation).
    normalization : {"pairs", "treecorr"}
    var_method : str or None
        How ``covariance`` was estimated (:data:`sphgpu.tpacf.covariance.VAR_METHODS`).
    covariance : ndarray, shape (nbins, nbins), or None
    sigma : ndarray, shape (nbins,), or None
        sqrt of the covariance diagonal.
    w_jackknife : ndarray, shape (n_regions, nbins), or None
        w with each region left out (var_method "jackknife").
    regions : JackknifeRegions or None
        When the regions were made by :func:`angular_correlation`.
    present : ndarray, shape (n_regions,), bool, or None
        Regions that hold a point of some catalog: the covariances use these.
    seed : int or None
        Seed of a bootstrap covariance.
    num_bootstrap : int
        Draws of a bootstrap covariance.
    cross_patch_weight : str
        How ``covariance`` weighed pairs between selected and deselected patches
        (:mod:`sphgpu.tpacf.covariance`).
    """

    bins: AngularBins
    theta: np.ndarray
    w: np.ndarray
    estimator: str
    dd: PairCounts
    dr: list
    rr: list
    rd: list = field(default_factory=list)
    normalization: str = "pairs"
    var_method: str | None = None
    covariance: np.ndarray | None = None
    sigma: np.ndarray | None = None
    w_jackknife: np.ndarray | None = None
    regions: JackknifeRegions | None = field(default=None, repr=False)
    present: np.ndarray | None = field(default=None, repr=False)
    seed: int | None = None
    num_bootstrap: int = cov_.NUM_BOOTSTRAP
    cross_patch_weight: str = "simple"

    # --- derived ------------------------------------------------------------------------------
    @property
    def mean_theta(self):
        """Pair-weighted mean separation of the DD pairs per bin, (nbins,) in ``bins.unit``
        (TreeCorr's ``meanr``); NaN in empty bins, None if DD was counted without it."""
        return self.dd.mean_theta

    @property
    def mean_log_theta(self):
        """Pair-weighted mean of ln(theta / unit) of the DD pairs, (nbins,) (TreeCorr's
        ``meanlogr``); NaN in empty bins, None if DD was counted without it."""
        return self.dd.mean_log_theta

    @property
    def n_regions(self) -> int:
        """Number of jackknife regions of the counts (0: none)."""
        return self.dd.n_regions

    @property
    def cross(self) -> bool:
        """Whether this is a cross-correlation of two data sets."""
        return bool(self.rd)

    def estimate_cov(self, var_method, *, seed=None, num_bootstrap=cov_.NUM_BOOTSTRAP,
                     cross_patch_weight=None):
        """The covariance of w by another method, from the same counts.

        Parameters
        ----------
        var_method : {"jackknife", "sample", "bootstrap", "marked_bootstrap", "shot"}
        seed : int or None
            Seed of the bootstrap draws (>= 0).
        num_bootstrap : int
            Number of bootstrap draws.
        cross_patch_weight : {None, "simple", "mean", "match", "geom"}
            TreeCorr's weighting of pairs between selected and deselected patches (None:
            "simple"; :mod:`sphgpu.tpacf.covariance` says which method takes which).

        Returns
        -------
        ndarray, shape (nbins, nbins), float64

        Raises
        ------
        ValueError
            For an unknown method, or a patch method without regions (or fewer than 2), a
            cross_patch_weight the method does not define, a negative seed.
        """
        return cov_.covariance([self], var_method, seed=seed, num_bootstrap=num_bootstrap,
                               cross_patch_weight=cross_patch_weight)[0]

    def _set_covariance(self, var_method, seed, num_bootstrap, cross_patch_weight=None):
        c, rows = cov_.covariance([self], var_method, seed=seed, num_bootstrap=num_bootstrap,
                                  cross_patch_weight=cross_patch_weight)
        self.cross_patch_weight = cov_.check_cross_patch_weight(cross_patch_weight, var_method)
        self.var_method, self.covariance = var_method, c
        self.sigma = np.sqrt(np.diag(c))
        self.seed, self.num_bootstrap = seed, int(num_bootstrap)
        if var_method == "jackknife":
            w = np.full((self.n_regions, self.bins.nbins), np.nan)
            w[self.present] = rows
            self.w_jackknife = w

    # --- files --------------------------------------------------------------------------------
    def _terms(self):
        out = [("dd", self.dd)]
        for name, lst in (("dr", self.dr), ("rr", self.rr), ("rd", self.rd)):
            out += [(f"{name}{i}", pc) for i, pc in enumerate(lst)]
        return out

    def _state(self):
        """(meta: JSON-able dict, arrays: {name: ndarray}) holding everything."""
        seed = self.seed if (self.seed is None or isinstance(self.seed, (int, np.integer))) \
            else None
        meta = {"format": _FORMAT, "version": 1, "estimator": self.estimator,
                "normalization": self.normalization, "var_method": self.var_method,
                "seed": None if seed is None else int(seed),
                "num_bootstrap": int(self.num_bootstrap),
                "cross_patch_weight": self.cross_patch_weight, "unit": self.bins.unit,
                "spacing": self.bins.spacing, "terms": {}}
        arrays = {"bins_edges": np.asarray(self.bins.edges)}
        for name in _RESULT_ARRAYS:
            v = getattr(self, name)
            if v is not None:
                arrays[name] = np.asarray(v)
        for key, pc in self._terms():
            meta["terms"][key] = {n: getattr(pc, n) for n in _PC_SCALARS}
            for n in ADDITIVE:
                v = getattr(pc, n)
                if isinstance(v, np.ndarray):
                    arrays[f"{key}.{n}"] = v
        return meta, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
            got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
            raise _Damaged(f"its header is not a {_FORMAT} state (format {got!r})")
        for key in ("unit", "spacing", "terms", "estimator", "normalization", "var_method",
                    "seed", "num_bootstrap"):
            if key not in meta:
                raise _Damaged(f"its header lacks {key!r}")
        if not isinstance(meta["terms"], dict) or "dd" not in meta["terms"]:
            raise _Damaged("its header lists no DD counts")
        for key in ("bins_edges", "theta", "w"):
            if key not in arrays:
                raise _Damaged(f"the array {key!r} is missing")
        nb = np.asarray(arrays["bins_edges"]).size - 1
        for key in ("theta", "w", "sigma"):
            if key in arrays and np.shape(arrays[key]) != (nb,):
                raise _Damaged(f"the array {key!r} has shape {np.shape(arrays[key])}, not "
                               f"({nb},) as the bins")
        if "covariance" in arrays and np.shape(arrays["covariance"]) != (nb, nb):
            raise _Damaged(f"the covariance has shape {np.shape(arrays['covariance'])}, not "
                           f"({nb}, {nb})")
        bins = AngularBins(arrays["bins_edges"], meta["unit"], spacing=meta["spacing"])
        terms = {}
        for key, scalars in meta["terms"].items():
            kw = {n: arrays.get(f"{key}.{n}") for n in ADDITIVE
                  if f"{key}.{n}" in arrays}
            kw.update(scalars)
            terms[key] = PairCounts(bins, **kw)

        def lst(prefix):
            return [terms[k] for k in sorted((k for k in terms if k.startswith(prefix)),
                                             key=lambda k: int(k[len(prefix):]))]
        present = arrays.get("present")
        return cls(bins=bins, theta=arrays["theta"], w=arrays["w"], estimator=meta["estimator"],
                   dd=terms["dd"], dr=lst("dr"), rr=lst("rr"), rd=lst("rd"),
                   normalization=meta["normalization"], var_method=meta["var_method"],
                   covariance=arrays.get("covariance"), sigma=arrays.get("sigma"),
                   w_jackknife=arrays.get("w_jackknife"),
                   present=None if present is None else present.astype(bool),
                   seed=meta["seed"], num_bootstrap=meta["num_bootstrap"],
                   cross_patch_weight=meta.get("cross_patch_weight", "simple"))

    def _table(self):
        """Columns for people: name -> (nbins,) array."""
        def pooled(lst):
            return sum(lst[1:], lst[0]).counts if lst else None
        cols = {"theta": self.theta, "mean_theta": self.mean_theta,
                "mean_log_theta": self.mean_log_theta, "w": self.w, "sigma": self.sigma,
                "DD": self.dd.counts, "DR": pooled(self.dr), "RD": pooled(self.rd),
                "RR": pooled(self.rr)}
        return {k: np.asarray(v) for k, v in cols.items() if v is not None}

    def write(self, path):
        """Save the result: FITS for ``.fits``/``.fit``/``.fits.gz``, ASCII otherwise.

        The file is written whole or not at all (:func:`sphgpu._atomic.atomic_write`): a
        write that fails part-way (a full disk) leaves the previous file as it was, and a
        reader beside the writer sees the old file or the new one.

        Parameters
        ----------
        path : str or os.PathLike
            The file (replaced).

        Raises
        ------
        ImportError
            For FITS without astropy.
        OSError
            When the file cannot be written (the previous one is kept).
        """
        path = _path(path)
        meta, arrays = self._state()
        if _is_fits(path):
            write_fits(path, _fits_hdus(meta, arrays, self._table()), overwrite=True,
                       name="path")
        else:
            with atomic_write(path, name="path") as tmp:
                _write_ascii(tmp, meta, arrays, self._table(), self.bins.unit)

    @classmethod
    def read(cls, path):
        """Load a result saved by :meth:`write` (the format from the suffix).

        Parameters
        ----------
        path : str or os.PathLike

        Returns
        -------
        CorrelationResult
            Equal to the one written: the same bins, counts, totals, estimator, covariance.

        Raises
        ------
        ValueError
            If the file is not a whole saved CorrelationResult (truncated, damaged, another
            file): the message names the file and the format.
        FileNotFoundError
            If there is no such file.
        """
        path = _path(path)
        fits = _is_fits(path)
        kind = "FITS" if fits else "ASCII"
        what = f"{path} is not a saved CorrelationResult {kind} file, or is damaged"
        try:
            meta, arrays = _read_fits(path) if fits else _read_ascii(path)
            return cls._from_state(meta, arrays)
        except _Damaged as exc:
            raise ValueError(f"{what}: {exc}") from None
        except (OSError, EOFError) as exc:
            if isinstance(exc, (FileNotFoundError, IsADirectoryError, PermissionError)):
                raise
            raise ValueError(f"{what}: {type(exc).__name__}: {exc}") from exc
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            # anything else a damaged file raises inside astropy, json or numpy (JSON and
            # Unicode errors are ValueErrors)
            raise ValueError(f"{what}: {type(exc).__name__}: {exc}") from exc

    # --- plot ---------------------------------------------------------------------------------
    def plot(self, ax=None, **errorbar):
        """w(theta) with error bars (sigma), as the correlation panel draws it.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Where to draw (default: a new Figure, made outside pyplot; show ``ax.figure``).
        **errorbar
            Passed to ``ax.errorbar`` (e.g. ``label=``, ``color=``).

        Returns
        -------
        matplotlib.axes.Axes
        """
        if ax is None:
            from matplotlib.figure import Figure

            ax = Figure(figsize=(6.0, 4.0), layout="constrained").subplots()
        kw = dict(fmt="o-", ms=4, capsize=2, lw=1,
                  label=self.estimator + (f", {self.var_method}" if self.var_method else ""))
        kw.update(errorbar)
        ax.errorbar(self.theta, self.w, yerr=self.sigma, **kw)
        if self.bins.spacing == "log":
            ax.set_xscale("log")
        ax.axhline(0, color="0.6", lw=0.8)
        ax.set_xlabel(rf"$\theta$ [{self.bins.unit}]")
        ax.set_ylabel(r"$w(\theta)$")
        ax.legend(frameon=False)
        return ax


def joint_covariance(results, var_method="jackknife", *, seed=None,
                     num_bootstrap=cov_.NUM_BOOTSTRAP, cross_patch_weight=None):
    """The joint covariance of several correlation functions (TreeCorr's
    ``estimate_multi_cov``), from their counts.

    Parameters
    ----------
    results : list of CorrelationResult
        Counted with the same jackknife regions (e.g. from :func:`angular_correlations`, or
        :func:`angular_correlation` calls given one JackknifeRegions).
    var_method : {"jackknife", "sample", "bootstrap", "marked_bootstrap", "shot"}
        See :mod:`sphgpu.tpacf.covariance`.
    seed : int or None
        Seed of the bootstrap draws (the same seed repeats the covariance exactly).
    num_bootstrap : int
        Number of bootstrap draws.
    cross_patch_weight : {None, "simple", "mean", "match", "geom"}
        As in :meth:`CorrelationResult.estimate_cov`.

    Returns
    -------
    ndarray, shape (sum of nbins, sum of nbins), float64
        Blocks in the order of ``results``.

    Raises
    ------
    TypeError
        If ``results`` is not a non-empty list of CorrelationResult.
    ValueError
        For an unknown var_method, results without regions or with different regions, or a
        bootstrap with fewer than 2 regions.
    """
    if not isinstance(results, (list, tuple)) or not results or \
            not all(isinstance(r, CorrelationResult) for r in results):
        raise TypeError("results must be a non-empty list of CorrelationResult")
    return cov_.covariance(list(results), var_method, seed=seed, num_bootstrap=num_bootstrap,
                           cross_patch_weight=cross_patch_weight)[0]


def _is_fits(path):
    return path.lower().endswith((".fits", ".fit", ".fits.gz", ".fts"))


class _Damaged(Exception):
    """A file that does not hold a whole saved result (the reason; read() names the file)."""


def _fits_hdus(meta, arrays, table):
    """The HDUs of a saved result: the state as JSON in the primary header, the table for
    people, then one image per array."""
    fits = astropy_fits()
    primary = fits.PrimaryHDU()
    primary.header["SPHGPU"] = json.dumps(meta)          # long strings: CONTINUE cards
    hdus = [primary, fits.BinTableHDU.from_columns(
        [fits.Column(name=k, format="K" if v.dtype.kind in "iu" else "D", array=v)
         for k, v in table.items()], name="WTHETA")]
    for name, a in arrays.items():
        a = a.astype(np.uint8) if a.dtype == bool else a
        hdu = fits.ImageHDU(a, name=name.upper())
        hdu.header["SPHNAME"] = name
        hdu.header["SPHBOOL"] = arrays[name].dtype == bool
        hdus.append(hdu)
    return hdus


def _read_fits(path):
    with open_fits(path, name="path") as f:
        if "SPHGPU" not in f[0].header:
            raise _Damaged("no SPHGPU card in its primary header (not written by "
                           "CorrelationResult.write)")
        try:
            meta = json.loads(f[0].header["SPHGPU"])
        except (json.JSONDecodeError, TypeError) as exc:
            raise _Damaged(f"its SPHGPU card is not valid JSON ({exc})") from None
        arrays = {}
        for hdu in f[1:]:
            if "SPHNAME" in hdu.header:
                if hdu.data is None:
                    raise _Damaged(f"the array {hdu.header['SPHNAME']!r} holds no data")
                a = np.array(hdu.data)
                a = a.astype(a.dtype.newbyteorder("="))        # FITS is big-endian
                arrays[hdu.header["SPHNAME"]] = a.astype(bool) if hdu.header["SPHBOOL"] else a
    return meta, arrays


def _write_ascii(path, meta, arrays, table, unit):
    names = list(table)
    lines = [f"# sphgpu.tpacf correlation function, theta in {unit}",
             "# " + " ".join(f"{n:>24s}" for n in names)]
    for row in zip(*table.values()):
        lines.append("  " + " ".join(f"{v:24.16g}" for v in row))
    # the complete state, one JSON line (floats written by repr read back exactly)
    state = {"meta": meta, "arrays": {k: {"dtype": str(v.dtype), "shape": list(v.shape),
                                          "data": v.ravel().tolist()}
                                      for k, v in arrays.items()}}
    lines.append("# state: " + json.dumps(state))
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def _read_ascii(path):
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("# state: "):
                    state = json.loads(line[len("# state: "):])
                    break
            else:
                raise _Damaged("no '# state:' line (not written by CorrelationResult.write, "
                               "or cut short)")
    except UnicodeDecodeError as exc:
        raise _Damaged(f"it is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise _Damaged(f"its '# state:' line is not whole JSON ({exc.msg} at column "
                       f"{exc.colno}; a truncated file?)") from None
    if not isinstance(state, dict) or not isinstance(state.get("arrays"), dict) \
            or "meta" not in state:
        raise _Damaged("its '# state:' line lacks 'meta' or 'arrays'")
    arrays = {}
    for k, v in state["arrays"].items():
        try:
            arrays[k] = np.array(v["data"], dtype=v["dtype"]).reshape(v["shape"])
        except (KeyError, TypeError, ValueError) as exc:
            raise _Damaged(f"the array {k!r} is damaged ({type(exc).__name__}: {exc})") from None
    return state["meta"], arrays
