"""Point catalogs on the sky: validation, unit vectors, loading from NumPy, CSV and FITS.

RA and Dec are in degrees. The unit vector of a point is defined once, in
:mod:`sphgpu.tpacf.sky` (RA taken modulo 360, so RA 0 and 360 are one point), by arithmetic that
the host and the GPU carry out identically: every backend sees the same float64 unit vectors,
hence the same squared chord distance, and the same bin, for every pair.
"""

from __future__ import annotations

import os

import numpy as np

from .._device import SIMULATOR, array_module, is_device_array, to_host
from ..io.fitsfile import open_fits
from . import sky

__all__ = ["Catalog", "unit_vectors", "as_catalog", "pair_catalogs", "n_regions_of",
           "find_column", "check_left_out"]

#: Labels (jackknife region numbers) are below this.
MAX_LABEL = 2**31


def unit_vectors(ra_deg, dec_deg):
    """Unit vectors of points given in degrees: array (3,) + shape of ra, float64 (rows x, y,
    z), as :mod:`sphgpu.tpacf.sky` defines them."""
    ra = np.ascontiguousarray(ra_deg, dtype=np.float64)
    dec = np.ascontiguousarray(dec_deg, dtype=np.float64)
    if ra.shape != dec.shape:
        raise ValueError(f"ra and dec must have one shape, got {ra.shape} and {dec.shape}")
    out = np.empty((3, ra.size))
    sky.parallel_slices(sky.unit_vectors_into, ra.size, ra.ravel(), dec.ravel(), out)
    return out.reshape((3,) + ra.shape)


def _array(name, a, n=None, kind="f"):
    if a is None or isinstance(a, (str, bytes)):
        raise TypeError(f"{name} must be a 1-D array, got {type(a).__name__}")
    if is_device_array(a):
        a = to_host(a)
    arr = np.asarray(a)
    if arr.dtype.kind not in ("fiu" if kind == "f" else "iu"):
        want = "real numbers" if kind == "f" else "integers"
        raise TypeError(f"{name} must hold {want}, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} must have one entry per point ({n}), got {arr.shape[0]}")
    return arr


def _coordinate(name, a):
    """A float64 C-contiguous 1-D coordinate array: CuPy on the device for device input (on a
    real GPU), else NumPy."""
    if is_device_array(a) and not SIMULATOR:
        import cupy

        arr = cupy.asarray(a)
        if arr.dtype.kind not in "fiu":
            raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
        if arr.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
        return cupy.ascontiguousarray(arr, dtype=np.float64)
    return np.ascontiguousarray(_array(name, a), dtype=np.float64)


def check_column(name, column, values, where=""):
    """Raise ValueError unless ``values`` are valid for the catalog column ``column``: for
    "ra", "dec" and "weights" finite real numbers (NumPy or CuPy array), dec also in [-90, 90]
    degrees; for "labels" integers (NumPy array) in [0, 2**31). ``name`` names the values in
    the message and ``where`` ends it (" (rows 0:1000)"). The one rule for a :class:`Catalog`'s
    arrays and for the blocks that workers read from ``sphgpu.distributed.CatalogFiles``."""
    if column == "labels":
        if values.size and values.min() < 0:
            raise ValueError(f"{name} must be >= 0 (region numbers), got {values.min()}{where}")
        if values.size and int(values.max()) >= MAX_LABEL:
            raise ValueError(f"{name} must be < 2**31 (region numbers), got {values.max()}"
                             f"{where}")
        return
    xp = np if isinstance(values, np.ndarray) else array_module()
    if not bool(xp.isfinite(values).all()):
        raise ValueError(f"{name} contains NaN or infinite values{where}")
    if column == "dec" and values.size:
        lo, hi = float(values.min()), float(values.max())
        if lo < -90.0 or hi > 90.0:
            raise ValueError(f"{name} must be in [-90, 90] degrees, got values from {lo} to "
                             f"{hi}{where}")


class Catalog:
    """Points on the sky with optional weights and jackknife region labels.

    Parameters
    ----------
    ra, dec : array, shape (n,), degrees
        Right ascension (any finite value, taken modulo 360) and declination in [-90, 90].
        NumPy arrays, or device arrays (CuPy or Numba): these stay on the GPU, where the "cuda"
        backend prepares them (the host gets a copy only if something asks for ``ra``/``dec``).
    weights : array, shape (n,), optional
        Finite real weights; weighted pair sums use w_i * w_j. Kept on the host.
    labels : array, shape (n,), int, optional
        Jackknife region of each point, 0 <= label. Catalogs counted together share the numbering.
        Kept on the host.
    names : tuple of 4 str
        Argument names used in error messages (ra, dec, weights, labels).
    copy : bool
        True (default): the Catalog keeps private read-only copies of host arrays. False borrows
        them: they must not change while the Catalog is in use.

    Raises
    ------
    TypeError
        For arrays of the wrong kind (naming the argument).
    ValueError
        For empty, non-finite or out-of-range coordinates, or lengths that differ.

    Notes
    -----
    A Catalog caches what the backends prepare from it (cell keys, the points sorted into
    cells, their unit vectors; on the device for the "cuda" backend), so passing the same
    Catalog again -- a random catalog reused across counts -- skips that work. The cache lives
    as long as the Catalog (device memory included: about 52 bytes a point, 60 with weights).

    Attributes
    ----------
    ra, dec : ndarray (n,), float64, degrees (a host copy of device input, made on first use)
    weights : ndarray (n,), float64, or None
    labels : ndarray (n,), int64, or None
    size : int
    on_device : bool, whether ra and dec are held on the GPU
    xyz : ndarray (3, n), float64 (computed on first use by :func:`unit_vectors`)
    """

    def __init__(self, ra, dec, *, weights=None, labels=None,
                 names=("ra", "dec", "weights", "labels"), copy=True):
        n_ra, n_dec, n_w, n_l = names
        ra = _coordinate(n_ra, ra)
        dec = _coordinate(n_dec, dec)
        if type(ra) is not type(dec):
            raise TypeError(f"{n_ra} and {n_dec} must both be NumPy arrays or both device arrays")
        if ra.shape != dec.shape:
            raise ValueError(f"{n_ra} and {n_dec} must have the same length, got {ra.shape[0]} "
                             f"and {dec.shape[0]}")
        if ra.shape[0] == 0:
            raise ValueError(f"{n_ra} and {n_dec} are empty: a catalog needs at least one point")
        check_column(n_ra, "ra", ra)
        check_column(n_dec, "dec", dec)
        n = ra.shape[0]
        if weights is not None:
            weights = np.ascontiguousarray(_array(n_w, weights, n), dtype=np.float64)
            check_column(n_w, "weights", weights)
        if labels is not None:
            lab = _array(n_l, labels, n, kind="i")
            check_column(n_l, "labels", lab)
            labels = np.ascontiguousarray(lab, dtype=np.int64)
        if copy:
            # private read-only copies: sorted orders and device copies are cached on the catalog
            ra, dec, weights, labels = (None if a is None else a.copy() for a in
                                        (ra, dec, weights, labels))
            for a in (ra, dec, weights, labels):
                if isinstance(a, np.ndarray):
                    a.setflags(write=False)
        self._hold(ra, dec, weights, labels)

    def _hold(self, ra, dec, weights, labels):
        self._ra, self._dec, self.weights, self.labels = ra, dec, weights, labels
        self._host = None
        self._xyz = None
        self._cache = {}

    @classmethod
    def _of_checked(cls, ra, dec, weights=None, labels=None):
        """A Catalog of arrays cut from checked Catalogs (slices, gathers, an unpickled copy):
        held as they are, neither checked again nor copied. Stripes of a survey catalog are
        made and unpickled at every distributed count, where a check and a copy per stripe
        were a pass over each of its arrays."""
        cat = cls.__new__(cls)
        cat._hold(ra, dec, weights, labels)
        return cat

    @property
    def on_device(self) -> bool:
        """Whether the coordinates are device (CuPy or Numba) arrays."""
        return not isinstance(self._ra, np.ndarray)

    def coordinates(self, xp=np):
        """(ra, dec) in degrees as arrays of the module ``xp``.

        Parameters
        ----------
        xp : module
            NumPy or CuPy.

        Returns
        -------
        tuple of two arrays, shape (n,), float64
            The held arrays, or copies to the other side.
        """
        if xp is np:
            if self._host is None:
                self._host = tuple(to_host(a) for a in (self._ra, self._dec))
            return self._host
        if self.on_device:
            return self._ra, self._dec
        return xp.asarray(self._ra), xp.asarray(self._dec)

    @property
    def ra(self):
        """Right ascensions (n,) float64, degrees, as given (any finite value; the unit vectors
        take them modulo 360)."""
        return self.coordinates()[0]

    @property
    def dec(self):
        """Declinations (n,) float64, degrees in [-90, 90]."""
        return self.coordinates()[1]

    @property
    def size(self) -> int:
        """Number of points."""
        return self._ra.shape[0]

    def __len__(self):
        return self.size

    @property
    def xyz(self):
        """Unit vectors (3, n) float64, computed once."""
        if self._xyz is None:
            self._xyz = unit_vectors(self.ra, self.dec)
            self._xyz.setflags(write=False)
        return self._xyz

    @property
    def n_regions(self) -> int:
        """1 + the largest label (0 without labels)."""
        return 0 if self.labels is None else int(self.labels.max()) + 1

    def with_labels(self, labels):
        """The same points with jackknife labels (a new Catalog sharing the arrays).

        Parameters
        ----------
        labels : array_like, shape (n,), int

        Returns
        -------
        Catalog

        Raises
        ------
        TypeError, ValueError
            For labels that are not n non-negative integers.
        """
        return Catalog(self._ra, self._dec, weights=self.weights, labels=labels, copy=False)

    def part(self, start, stop):
        """Points ``start:stop`` as a new Catalog sharing this one's arrays (no copy; device
        coordinates stay on the device). Nothing prepared is shared: the part prepares itself.

        Parameters
        ----------
        start, stop : int
            Slice bounds, 0 <= start < stop <= size.

        Returns
        -------
        Catalog

        Raises
        ------
        ValueError
            For an empty or out-of-range slice.
        """
        if not 0 <= start < stop <= self.size:
            raise ValueError(f"part needs 0 <= start < stop <= {self.size}, got {start}:{stop}")
        s = slice(int(start), int(stop))
        return Catalog._of_checked(self._ra[s], self._dec[s],
                                   None if self.weights is None else self.weights[s],
                                   None if self.labels is None else self.labels[s])

    def subset(self, mask):
        """The points where ``mask`` is true, as a new Catalog.

        Parameters
        ----------
        mask : array_like, shape (n,), bool

        Returns
        -------
        Catalog

        Raises
        ------
        ValueError
            If no point is selected.
        """
        mask = np.asarray(mask, dtype=bool)
        return Catalog(self.ra[mask], self.dec[mask],
                       weights=None if self.weights is None else self.weights[mask],
                       labels=None if self.labels is None else self.labels[mask])

    def __repr__(self):
        extra = ("" if self.weights is None else ", weighted") + (
            "" if self.labels is None else f", {self.n_regions} regions")
        return f"Catalog({self.size} points{extra})"

    def __getstate__(self):
        return {"ra": self.ra, "dec": self.dec, "weights": self.weights, "labels": self.labels}

    def __setstate__(self, state):
        # the arrays of a pickled Catalog were checked when it was made
        self._hold(state["ra"], state["dec"], state["weights"], state["labels"])

    # --- loading ------------------------------------------------------------------------------
    @classmethod
    def from_csv(cls, path, *, ra="ra", dec="dec", weights=None, labels=None, delimiter=","):
        """Read a CSV (or other delimited) text file of numbers.

        Lines starting with ``#`` are skipped. If the first remaining line is not numeric it
        names the columns; 0-based column numbers work with or without a header. Names match
        exactly, else ignoring case.

        Parameters
        ----------
        path : str or os.PathLike
        ra, dec : str or int
            Columns of RA and Dec in degrees.
        weights, labels : str or int, optional
            Columns of weights and of integer jackknife labels.
        delimiter : str

        Returns
        -------
        Catalog

        Raises
        ------
        ValueError
            For an empty file, a missing column or labels that are not integers.
        """
        path = os.fspath(path)
        with open(path, encoding="utf-8") as f:
            lines = [ln for ln in f if ln.strip() and not ln.lstrip().startswith("#")]
        if not lines:
            raise ValueError(f"{path} holds no data")
        first = [x.strip().strip('"') for x in lines[0].split(delimiter)]
        try:
            [float(x) for x in first]
            names = None
        except ValueError:
            names, lines = first, lines[1:]
        if not lines:
            raise ValueError(f"{path} holds a header ({delimiter.join(names)}) but no rows: an "
                             "empty catalog (a catalog needs at least one point)")
        table = np.loadtxt(lines, delimiter=delimiter, ndmin=2)

        def get(c):
            if isinstance(c, (int, np.integer)) and not isinstance(c, bool):
                if not 0 <= c < table.shape[1]:
                    raise ValueError(f"column {c} not in {path}, which has {table.shape[1]}")
                return table[:, c]
            k = find_column(c, names or [])
            if k is None:
                raise ValueError(f"column {c!r} not found in {path}; columns are "
                                 f"{names if names else 'unnamed (use column numbers)'}")
            return table[:, k]
        lab = None
        if labels is not None:
            lab = get(labels)
            if np.any(lab != np.round(lab)):
                raise ValueError(f"column {labels!r} of {path} must hold integer labels")
            lab = lab.astype(np.int64)
        return cls(get(ra), get(dec), weights=None if weights is None else get(weights),
                   labels=lab)

    @classmethod
    def from_fits(cls, path, *, ra="RA", dec="DEC", weights=None, labels=None, hdu=1):
        """Read a FITS binary table (needs astropy). Names match exactly, else ignoring case.

        Parameters
        ----------
        path : str or os.PathLike
        ra, dec : str
            Columns of RA and Dec in degrees.
        weights, labels : str, optional
            Columns of weights and of integer jackknife labels.
        hdu : int
            The table's HDU.

        Returns
        -------
        Catalog

        Raises
        ------
        ImportError
            Without astropy.
        ValueError
            For a missing column.
        """
        with open_fits(path, name="path") as f:
            data = f[hdu].data
            names = list(data.columns.names)

            def get(c, dtype=np.float64):
                k = find_column(c, names)
                if k is None:
                    raise ValueError(f"column {c!r} not found in {path} (HDU {hdu}); columns "
                                     f"are {names}")
                return np.array(data[names[k]]).astype(dtype)   # big-endian: a native copy
            return cls(get(ra), get(dec),
                       weights=None if weights is None else get(weights),
                       labels=None if labels is None else get(labels, np.int64))

    @classmethod
    def read(cls, path, **columns):
        """Read a catalog from ``.fits``/``.fit``/``.fits.gz``, ``.csv``/``.txt`` or ``.npz``.

        Parameters
        ----------
        path : str or os.PathLike
        **columns
            Column or array names: ``ra=``, ``dec=``, ``weights=``, ``labels=`` (defaults
            "ra"/"dec", "RA"/"DEC" for FITS), and :meth:`from_csv`'s ``delimiter``.

        Returns
        -------
        Catalog

        Raises
        ------
        ValueError
            For an unknown suffix or a missing column.
        """
        p = os.fspath(path).lower()
        if p.endswith((".fits", ".fit", ".fits.gz", ".fts")):
            return cls.from_fits(path, **columns)
        if p.endswith(".npz"):
            names = {"ra": "ra", "dec": "dec", "weights": None, "labels": None, **columns}
            with np.load(path) as z:
                return cls(z[names["ra"]], z[names["dec"]],
                           weights=None if names["weights"] is None else z[names["weights"]],
                           labels=None if names["labels"] is None else z[names["labels"]])
        if p.endswith((".csv", ".txt", ".dat", ".tsv")):
            if p.endswith(".tsv"):
                columns.setdefault("delimiter", "\t")
            return cls.from_csv(path, **columns)
        raise ValueError(f"path {path!r}: unknown catalog format (use .fits, .csv or .npz)")


def find_column(name, names):
    """Index of column ``name`` (str) in ``names`` (list of str), exact match first, then
    ignoring case; None where it is not there. Catalog files and the distributed counts' file
    readers look their columns up by it."""
    if name in names:
        return names.index(name)
    low = [n.lower() for n in names]
    return low.index(name.lower()) if name.lower() in low else None


def as_catalog(obj, name="catalog"):
    """A Catalog from a Catalog, an (ra, dec) pair of arrays (tuple or list), or a file path:
    the one coercion of every catalog argument of sphgpu.tpacf and sphgpu.distributed."""
    if isinstance(obj, Catalog):
        return obj
    if isinstance(obj, (str, os.PathLike)):
        return Catalog.read(obj)
    if isinstance(obj, (tuple, list)) and len(obj) == 2:
        return Catalog(obj[0], obj[1], names=(f"{name} ra", f"{name} dec", "weights", "labels"))
    raise TypeError(f"{name} must be a Catalog, an (ra, dec) tuple of arrays or a file path, "
                    f"got {type(obj).__name__}")


def check_left_out(kind, reason, **arguments):
    """TypeError naming the first of ``arguments`` (name=value) that is not None: when the
    catalogs of a count are given as ``kind`` (str, e.g. "Catalog objects"), the array
    arguments are left out, for the ``reason`` (str) the message ends with."""
    for name, value in arguments.items():
        if value is not None:
            raise TypeError(f"{name} must be None when catalogs are given as {kind} ({reason})")


def pair_catalogs(ra1, dec1, ra2, dec2, weights1, weights2, labels1, labels2):
    """The catalogs of a pair count from :func:`sphgpu.tpacf.pair_counts`'s arguments, as
    (cat1, cat2): two Catalogs (cat2 None for an auto count) given as such in ``ra1`` and
    ``dec1``, or made from arrays of degrees (borrowed, not copied). TypeError or ValueError
    names the argument that does not fit (e.g. ``weights2`` without ``ra2``)."""
    if isinstance(ra1, Catalog):
        if dec1 is not None and not isinstance(dec1, Catalog):
            raise TypeError("when ra1 is a Catalog the second argument must be a Catalog or "
                            f"None, got {type(dec1).__name__}")
        check_left_out("Catalog objects", "their weights and labels live in the Catalog",
                       ra2=ra2, dec2=dec2, weights1=weights1, weights2=weights2,
                       labels1=labels1, labels2=labels2)
        return ra1, dec1
    if dec1 is None:
        raise TypeError("dec1 is missing: pass ra1, dec1 (degrees) or Catalog objects")
    # the arrays are only read during the call: borrowed, not copied
    cat1 = Catalog(ra1, dec1, weights=weights1, labels=labels1,
                   names=("ra1", "dec1", "weights1", "labels1"), copy=False)
    if ra2 is None and dec2 is None:
        for name, v in (("weights2", weights2), ("labels2", labels2)):
            if v is not None:
                raise ValueError(f"{name} was given without ra2/dec2 (an auto-correlation "
                                 "uses weights1 and labels1)")
        return cat1, None
    if ra2 is None or dec2 is None:
        raise ValueError("give both ra2 and dec2 for a cross-correlation, or neither")
    cat2 = Catalog(ra2, dec2, weights=weights2, labels=labels2,
                   names=("ra2", "dec2", "weights2", "labels2"), copy=False)
    return cat1, cat2


def n_regions_of(cat1, cat2, n_regions):
    """Number of jackknife regions of a count of ``cat1`` x ``cat2`` (``cat2`` None: auto), 0
    for none: ``n_regions`` (None: one more than the largest label) checked against the
    catalogs' labels, which both catalogs or neither must have. n_regions=0 ignores labels."""
    if isinstance(n_regions, (int, np.integer)) and not isinstance(n_regions, bool) \
            and n_regions == 0:
        return 0
    have = [c.labels is not None for c in (cat1, cat2) if c is not None]
    if not any(have):
        if n_regions is not None:
            raise ValueError("n_regions was given but no catalog has labels")
        return 0
    if not all(have):
        raise ValueError("labels1 and labels2 must both be given for jackknife counts "
                         "(one numbering of regions for both catalogs)")
    need = max(c.n_regions for c in (cat1, cat2) if c is not None)
    if n_regions is None:
        return need
    if isinstance(n_regions, bool) or not isinstance(n_regions, (int, np.integer)):
        raise TypeError(f"n_regions must be an integer, got {n_regions!r}")
    if n_regions < need:
        raise ValueError(f"n_regions={n_regions} but the labels go up to {need - 1}")
    return int(n_regions)
