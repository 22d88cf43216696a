"""healpy's ``read_map`` and ``write_map``: HEALPix maps in FITS binary tables.

Reading an uncompressed file goes through the table rows chunk by chunk (:data:`CHUNK_BYTES`):
each chunk is converted from FITS's big-endian values straight into the returned array, and a
file in the other ordering is reordered chunk by chunk at the same time
(:func:`sphgpu.pixelfunc.scatter_pixels`), so the memory a read takes beyond the map it returns
is a few chunks, whatever the ordering (``benchmarks/io_read_map.py`` measures it). With
``device=True`` the chunks go to the GPU one by one, so the map is never whole on the host.
Compressed files, file objects and scaled columns (TSCAL/TZERO) are read through astropy's
table instead (whole, at about twice the map's size).

Writing builds the table healpy builds, with the header keywords in healpy's order, and writes
it atomically (:func:`sphgpu.io.fitsfile.write_fits`).
"""

from __future__ import annotations

import numbers
import os
import re

import numpy as np

from .._device import is_device_array
from .._validate import UNSEEN
from ..pixelfunc import npix2nside, reorder, scatter_pixels
from ..pixelfunc.api import MAX_NSIDE
from . import fitsfile

__all__ = ["read_map", "write_map", "CHUNK_BYTES", "STANDARD_COLUMN_NAMES", "fits_format"]

#: bytes of table rows read at a time: large enough that the per-chunk work (a Numba call, a
#: few NumPy calls) is a small part, small against any map worth chunking (an nside 2048 float32
#: map is 201 MB a field)
CHUNK_BYTES = 8 << 20

#: the column names healpy gives 1, 2, 3 and 6 maps (others: COLUMN_1, COLUMN_2, ...)
STANDARD_COLUMN_NAMES = {1: ["TEMPERATURE"], 2: ["Q_POLARISATION", "U_POLARISATION"],
                         3: ["TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"],
                         6: ["II", "IQ", "IU", "QQ", "QU", "UU"]}

#: FITS binary-table type codes of NumPy dtypes (FITS standard 4.0, Table 18)
_FORMATS = {np.dtype(np.bool_): "L", np.dtype(np.uint8): "B", np.dtype(np.int16): "I",
            np.dtype(np.int32): "J", np.dtype(np.int64): "K", np.dtype(np.float32): "E",
            np.dtype(np.float64): "D", np.dtype(np.complex64): "C",
            np.dtype(np.complex128): "M"}
#: big-endian dtypes of the codes a map column may have, for the chunked reader
_NUMERIC = {"B": np.dtype("u1"), "I": np.dtype(">i2"), "J": np.dtype(">i4"),
            "K": np.dtype(">i8"), "E": np.dtype(">f4"), "D": np.dtype(">f8")}
#: bytes per element of every code (X: bits, counted by the caller; P/Q: array descriptors)
_SIZES = {"L": 1, "B": 1, "A": 1, "I": 2, "J": 4, "K": 8, "E": 4, "D": 8, "C": 8, "M": 16,
          "P": 8, "Q": 16}
_TFORM = re.compile(r"^\s*(\d*)\s*([A-Z])")
#: healpy's mask_bad tolerance, as a float64 scalar (see sphgpu.pixelfunc.api)
_BAD_TOL = np.float64(1e-8 + 1e-5 * abs(UNSEEN))


def fits_format(dtype, *, name="dtype"):
    """The FITS binary-table code of a NumPy dtype ("E" for float32, "D" for float64, ...).

    Parameters
    ----------
    dtype : numpy dtype or type
        bool, uint8, int16/32/64, float32/64 or complex64/128.
    name : str
        The argument's name in error messages.

    Returns
    -------
    str
        One letter.

    Raises
    ------
    TypeError
        A dtype FITS tables cannot hold.
    """
    try:
        dt = np.dtype(dtype).newbyteorder("=")
    except TypeError as exc:
        raise TypeError(f"{name}={dtype!r} is not a NumPy dtype") from exc
    if dt not in _FORMATS:
        raise TypeError(f"{name}={dtype!r}: FITS tables hold bool, uint8, int16, int32, int64, "
                        "float32, float64, complex64 or complex128")
    return _FORMATS[dt]


# ----------------------------------------------------------------------------- write_map
def _host_maps(m):
    """The maps of ``m`` as a list of 1-D NumPy arrays (masked pixels filled with UNSEEN)."""
    if is_device_array(m):
        from .._device import to_host

        m = to_host(m)
    if isinstance(m, np.ndarray) and m.ndim in (1, 2):
        rows = [m] if m.ndim == 1 else list(m)
    elif isinstance(m, (list, tuple)) and m and all(np.ndim(x) == 1 for x in m):
        rows = list(m)
    elif isinstance(m, (list, tuple)) and m and all(np.ndim(x) == 0 for x in m):
        rows = [np.asarray(m)]
    else:
        raise ValueError(f"m must be a map (npix,), maps (k, npix) or a sequence of maps, got "
                         f"{type(m).__name__} of shape {np.shape(m)}")
    out = []
    for x in rows:
        if is_device_array(x):
            from .._device import to_host

            x = to_host(x)
        if isinstance(x, np.ma.MaskedArray):
            x = x.filled(UNSEEN)
        out.append(np.asarray(x))
    lengths = sorted({x.size for x in out})
    if len(lengths) != 1:
        raise ValueError(f"m: the maps must have one length, got lengths {lengths}")
    return out


def _per_map(name, value, k, default):
    """``value`` for each of ``k`` maps: None or a scalar for all, or a sequence of k."""
    if value is None:
        return [default] * k
    if isinstance(value, (str, bytes, np.dtype, type)) or not hasattr(value, "__len__"):
        return [value] * k
    value = list(value)
    if len(value) != k:
        raise ValueError(f"{name} has {len(value)} entries for {k} maps")
    return value


def _pixel_format(pmax):
    """The code healpy gives the PIXEL column of a partial map: the smallest signed type that
    holds -pmax (uint8 for 0, and int16 where NumPy's choice, int8, has no FITS code)."""
    if pmax == 0:
        return "B"
    if pmax <= 1 << 15:
        return "I"
    if pmax <= 1 << 31:
        return "J"
    return "K"


def write_map(filename, m, nest=False, dtype=None, fits_IDL=True, coord=None, partial=False,
              column_names=None, column_units=None, extra_header=(), overwrite=False):
    """Write HEALPix maps to a FITS binary table, as healpy's ``write_map``.

    The file holds an empty primary HDU and one binary table with a column a map and healpy's
    header keywords (PIXTYPE, ORDERING, COORDSYS, EXTNAME, NSIDE, FIRSTPIX, LASTPIX, INDXSCHM,
    OBJECT, then ``extra_header``), so that healpy, HEALPix's Fortran/C++/IDL tools and
    astropy read it. The file is written whole or not at all: a temporary file in the same folder
    is renamed over ``filename`` at the end.

    Parameters
    ----------
    filename : str or os.PathLike
        The file (``.gz``: gzip-compressed).
    m : array, shape (npix,) or (k, npix), or a sequence of k maps
        NumPy, masked (masked pixels are written as UNSEEN) or device arrays.
    nest : bool
        The maps are NESTED (written as they are; the header says ORDERING=NESTED).
    dtype : numpy dtype or sequence of k, optional
        Column types in the file (None: each map's own dtype).
    fits_IDL : bool
        Rows of 1024 values a column ("1024E"), as HEALPix's IDL tools write, where npix is a
        multiple of 1024 and above it; else one value a row.
    coord : {"G", "E", "C"}, optional
        Coordinate system, written as COORDSYS.
    partial : bool
        Write only pixels that are not UNSEEN in the first map, with an explicit PIXEL column
        (INDXSCHM=EXPLICIT, OBJECT=PARTIAL).
    column_names : str or sequence of k str, optional
        Default: TEMPERATURE; Q_POLARISATION, U_POLARISATION; TEMPERATURE, Q_POLARISATION,
        U_POLARISATION; II, IQ, IU, QQ, QU, UU (1, 2, 3, 6 maps) or COLUMN_1, ...
    column_units : str or sequence of k str, optional
        TUNIT of each column.
    extra_header : sequence of tuples
        ``(keyword, value)`` or ``(keyword, value, comment)`` cards added at the end.
    overwrite : bool
        Replace an existing file.

    Raises
    ------
    FileExistsError
        ``filename`` exists and ``overwrite`` is False.
    ValueError
        A length that is not 12 nside**2, maps of different lengths, a partial map that is all
        UNSEEN, or column names/units/dtypes whose number is not the number of maps.
    TypeError
        A dtype that FITS tables cannot hold.
    OSError
        The folder is missing or not writable, or the write failed (the previous file is kept).
    """
    fits = fitsfile.astropy_fits()
    maps = _host_maps(m)
    k = len(maps)
    npix = maps[0].size
    nside = npix2nside(npix, name="m")
    dtypes = [x.dtype for x in maps] if dtype is None else _per_map("dtype", dtype, k, None)
    formats = [fits_format(d, name="dtype") for d in dtypes]
    if column_names is None:
        names = STANDARD_COLUMN_NAMES.get(k, [f"COLUMN_{i}" for i in range(1, k + 1)])
    else:
        names = _per_map("column_names", column_names, k, None)
    units = _per_map("column_units", column_units, k, None)
    cols = []
    if partial:
        fits_IDL = False
        good = ~(np.abs(maps[0] - UNSEEN) <= _BAD_TOL) if maps[0].dtype.kind in "fc" \
            else np.ones(npix, bool)
        pix = np.flatnonzero(good)
        if pix.size == 0:
            raise ValueError(f"m: every pixel of the first map is UNSEEN; a partial map of "
                             f"{fitsfile.display_name(filename)!r} would be empty")
        cols.append(fits.Column(name="PIXEL", format=_pixel_format(int(pix[-1])), array=pix))
        maps = [x[good] for x in maps]
    rows_of_1024 = fits_IDL and npix > 1024 and npix % 1024 == 0
    for name, unit, x, code in zip(names, units, maps, formats):
        if rows_of_1024:
            cols.append(fits.Column(name=name, format=f"1024{code}", unit=unit,
                                    array=x.reshape(-1, 1024)))
        else:
            cols.append(fits.Column(name=name, format=code, unit=unit, array=x))
    table = fits.BinTableHDU.from_columns(cols)
    header = table.header
    header["PIXTYPE"] = ("HEALPIX", "HEALPIX pixelisation")
    header["ORDERING"] = ("NESTED" if nest else "RING",
                          "Pixel ordering scheme, either RING or NESTED")
    if coord:
        header["COORDSYS"] = (coord, "Ecliptic, Galactic or Celestial (equatorial)")
    header["EXTNAME"] = ("xtension", "name of this binary table extension")
    header["NSIDE"] = (nside, "Resolution parameter of HEALPIX")
    if not partial:
        header["FIRSTPIX"] = (0, "First pixel # (0 based)")
        header["LASTPIX"] = (npix - 1, "Last pixel # (0 based)")
    header["INDXSCHM"] = ("EXPLICIT" if partial else "IMPLICIT",
                          "Indexing: IMPLICIT or EXPLICIT")
    header["OBJECT"] = ("PARTIAL" if partial else "FULLSKY",
                        "Sky coverage, either FULLSKY or PARTIAL")
    _add_cards(header, extra_header)
    fitsfile.write_fits(filename, [fits.PrimaryHDU(), table], overwrite=overwrite)


def _add_cards(header, extra_header):
    for card in extra_header:
        if isinstance(card, str) or len(card) < 2:
            raise ValueError(f"extra_header: each card is (keyword, value) or (keyword, value, "
                             f"comment), got {card!r}")
        header[card[0]] = tuple(card[1:])


# ----------------------------------------------------------------------------- read_map
class _Table:
    """What read_map needs of a HEALPix table: nside, ordering, indexing and its columns."""

    def __init__(self, hdul, hdu, shown, nest, partial):
        fits = fitsfile.astropy_fits()
        try:
            self.hdu = hdul[hdu]
        except (IndexError, KeyError) as exc:
            n = len(hdul)
            raise ValueError(f"{shown!r} has no HDU {hdu!r}: it has {n} HDU{'s' * (n != 1)} "
                             f"(0 .. {n - 1})") from exc
        self.index = hdul.index_of(self.hdu)
        if not isinstance(self.hdu, (fits.BinTableHDU, fits.TableHDU)):
            raise ValueError(f"{shown!r} is no HEALPix map: HDU {hdu!r} is a "
                             f"{type(self.hdu).__name__}, not a binary table of pixels")
        h = self.hdu.header
        pixtype = str(h.get("PIXTYPE", "HEALPIX")).strip().upper()
        if pixtype != "HEALPIX":
            raise ValueError(f"{shown!r} is no HEALPix map: HDU {hdu!r} has PIXTYPE={pixtype!r}")
        self.columns = list(self.hdu.columns)
        if not self.columns:
            raise ValueError(f"{shown!r} is no HEALPix map: HDU {hdu!r} has no columns")
        order = str(h.get("ORDERING", "UNDEF")).strip().upper()
        if order == "UNDEF":
            order = "NESTED" if nest else "RING"
        if order[:4] not in ("RING", "NEST"):
            raise ValueError(f"{shown!r}: ORDERING={order!r} is neither RING nor NESTED")
        self.ring = order[:4] == "RING"
        # healpy's reading of OBJECT and INDXSCHM, which override the caller's ``partial``
        obj = str(h.get("OBJECT", "UNDEF")).strip().upper()
        if obj == "PARTIAL":
            partial = True
        elif obj == "FULLSKY":
            partial = False
        schm = str(h.get("INDXSCHM", "UNDEF")).strip().upper()
        if (schm == "EXPLICIT" and obj == "FULLSKY") or (schm == "IMPLICIT" and obj == "PARTIAL"):
            raise ValueError(f"{shown!r}: INDXSCHM={schm} contradicts OBJECT={obj}")
        if schm == "EXPLICIT":
            partial = True
        elif schm == "IMPLICIT":
            partial = False
        self.partial = bool(partial)
        nrows = self.hdu.header.get("NAXIS2", 0)
        self.repeats = [self._repeat(c) for c in self.columns]
        nside = h.get("NSIDE")
        if nside is None:
            n = nrows * self.repeats[0]
            try:
                nside = npix2nside(n, name=f"{shown!r} (no NSIDE keyword; its first column)")
            except ValueError as exc:
                raise ValueError(f"{shown!r} is no HEALPix map: HDU {hdu!r} has no NSIDE keyword "
                                 f"and its first column holds {n} values, not 12 nside**2")\
                    from exc
        if (isinstance(nside, bool) or not isinstance(nside, numbers.Integral)
                or not 1 <= nside <= MAX_NSIDE):
            raise ValueError(f"{shown!r}: NSIDE={nside!r} is not a HEALPix nside")
        self.nside = int(nside)
        self.npix = 12 * self.nside ** 2
        self.nrows = nrows

    @staticmethod
    def _repeat(col):
        match = _TFORM.match(str(col.format))
        return int(match.group(1) or 1) if match else 1

    def column(self, f, shown):
        """Index of field ``f`` (int counted after the PIXEL column of a partial map, or name)."""
        names = [c.name for c in self.columns]
        values = names[1:] if self.partial else names
        if isinstance(f, str):
            for cand in (names.index(f) if f in names else None,
                         next((i for i, n in enumerate(names) if n.upper() == f.upper()), None)):
                if cand is not None:
                    return cand
            raise ValueError(f"{shown!r} has no field {f!r}; its columns are {values}")
        if isinstance(f, bool) or not isinstance(f, numbers.Integral):
            raise TypeError(f"field must be ints or column names, got {f!r}")
        i = int(f) + (1 if self.partial else 0)
        if not 0 <= f < len(values):
            raise ValueError(f"{shown!r} has no field {f}: it has {len(values)} map "
                             f"column{'s' * (len(values) != 1)} {values}")
        return i

    def row_dtype(self, indices):
        """Big-endian dtype of the rows' ``indices`` columns at their offsets, or None where a
        column is scaled, not numeric, or the row layout is not plain."""
        offsets, offset = [], 0
        for c in self.columns:
            match = _TFORM.match(str(c.format))
            if not match:
                return None
            repeat, code = int(match.group(1) or 1), match.group(2)
            offsets.append(offset)
            offset += (repeat + 7) // 8 if code == "X" else repeat * _SIZES.get(code, 0)
            if code not in _SIZES and code != "X":
                return None
        if offset != self.hdu.header.get("NAXIS1"):
            return None
        fields = {}
        for i in indices:
            c = self.columns[i]
            code = _TFORM.match(str(c.format)).group(2)
            if code not in _NUMERIC or c.bscale not in (None, 1) or c.bzero not in (None, 0):
                return None
            fields[f"c{i}"] = ((_NUMERIC[code], (self.repeats[i],)), offsets[i])
        return np.dtype({"names": list(fields), "formats": [v[0] for v in fields.values()],
                         "offsets": [v[1] for v in fields.values()], "itemsize": offset})


def _fix_unseen(a):
    """Values within healpy's tolerance of UNSEEN set to UNSEEN exactly (float arrays)."""
    if a.dtype.kind == "f":
        xp = np if isinstance(a, np.ndarray) else _device_xp()
        a[xp.abs(a - UNSEEN) <= _BAD_TOL] = UNSEEN


def _device_xp():
    from .._device import array_module

    return array_module()


def _check_device(device):
    if device is False or device is None:
        return False
    if device is True:
        from ..backends import BackendUnavailableError, cuda_available

        if not cuda_available():
            raise BackendUnavailableError("read_map(device=True) needs a CUDA GPU (none is "
                                          "usable here); read to the host with device=False")
        return True
    raise TypeError(f"device must be True or False, got {device!r}")


def _file_is_plain_fits(path):
    """Whether ``path`` is an uncompressed FITS file (which the chunked reader can read)."""
    with open(path, "rb") as f:
        return f.read(6) == b"SIMPLE"


def read_map(filename, field=0, dtype=None, nest=False, partial=False, hdu=1, h=False,
             verbose=True, memmap=False, *, device=False):
    """Read HEALPix maps from a FITS file, as healpy's ``read_map``.

    The result is in RING order by default whatever the file's ORDERING (``nest=True`` gives
    NESTED, ``nest=None`` the file's order). Cut-sky files (explicit PIXEL column, OBJECT=PARTIAL
    or INDXSCHM=EXPLICIT) are expanded to full maps with UNSEEN where the file has no pixel, and
    values within healpy's tolerance of UNSEEN become UNSEEN exactly. Values equal healpy's
    bit for bit; the byte order is the machine's (healpy keeps FITS's big-endian dtype).

    Parameters
    ----------
    filename : str, os.PathLike or binary file object
        The file (gzip-compressed files too, read whole through astropy).
    field : int, str, sequence of int/str, or None
        Which maps: column numbers (0 is the first map column; a partial file's PIXEL column is
        not counted), column names (exact, else ignoring case), or None for all.
    dtype : numpy dtype or sequence of them, optional
        dtype of each map (None: the column's type in the file, in native byte order).
    nest : bool or None
        NESTED result (True), RING (False) or the file's ordering (None).
    partial : bool
        Treat the file as cut-sky when its header does not say (OBJECT/INDXSCHM decide
        otherwise, as in healpy).
    hdu : int or str
        The HDU of the table (number or EXTNAME).
    h : bool
        Also return the table's header as a list of ``(keyword, value)``.
    verbose : bool
        Ignored; healpy's deprecated argument, kept for its positional order.
    memmap : bool
        Let astropy map the file when it reads the table (compressed files, file objects).
    device : bool
        Return device arrays (CuPy): the table goes to the GPU chunk by chunk, never whole on
        the host; reordering runs on the GPU.

    Returns
    -------
    map : ndarray, shape (npix,) or (k, npix); a list of k maps where their dtypes differ
        npix = 12 nside**2; one map for a single field (also ``field=(i,)``, as healpy), else
        one row a field.
    header : list of (str, object)
        Only with ``h=True``.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not a FITS file, no HEALPix table in ``hdu`` (an image, a table whose length is no
        HEALPix size, PIXTYPE other than HEALPIX), a missing field, an NSIDE or ORDERING that
        makes no sense, a file that ends inside its table. Each names the file.
    BackendUnavailableError
        ``device=True`` without a usable GPU.
    """
    del verbose
    device = _check_device(device)
    shown = fitsfile.display_name(filename)
    with fitsfile.open_fits(filename, memmap=memmap) as hdul:
        table = _Table(hdul, hdu, shown, nest, partial)
        if field is None:
            field = list(range(len(table.columns) - table.partial))
        single = isinstance(field, (str, numbers.Integral))
        fields = [field] if single else list(field)
        if not fields:
            raise ValueError("field: an empty list of fields")
        cols = [table.column(f, shown) for f in fields]
        if dtype is None or isinstance(dtype, (str, np.dtype, type)):
            wanted = [dtype] * len(cols)
        else:
            wanted = list(dtype)
            if len(wanted) != len(cols):
                raise ValueError(f"dtype has {len(wanted)} entries for {len(cols)} fields")
        to_ring = table.ring if nest is None else not nest
        dtypes = [np.dtype(w) if w is not None else _column_dtype(table, c)
                  for w, c in zip(wanted, cols)]
        if table.partial:
            # healpy fills with UNSEEN times ones of the map's dtype: floats for integer columns
            dtypes = [d if d.kind in "fc" else np.dtype(np.float64) for d in dtypes]
        if all(w == wanted[0] for w in wanted):
            dtypes = [np.result_type(*dtypes)] * len(dtypes)
        header = list(table.hdu.header.items()) if h else None
        row_dtype = None
        if (fitsfile.is_path(filename) and not table.partial
                and _file_is_plain_fits(os.fspath(filename))):
            row_dtype = table.row_dtype(cols)
        if row_dtype is not None:
            maps = _read_chunked(os.fspath(filename), hdul.fileinfo(table.index)["datLoc"],
                                 table, cols, row_dtype, dtypes, to_ring, device, shown)
        else:
            maps = _read_whole(table, cols, dtypes, to_ring, device, shown)
    if single or len(cols) == 1:             # healpy: one field, even in a list, is 1-D
        result = maps[0]
    elif all(d == dtypes[0] for d in dtypes):
        result = maps if not isinstance(maps, list) else _stack(maps)
    else:
        result = list(maps)
    return (result, header) if h else result


def _stack(maps):
    xp = np if isinstance(maps[0], np.ndarray) else _device_xp()
    return xp.stack(maps)


def _column_dtype(table, i):
    """The native dtype astropy gives column ``i`` (its physical type, scaling included)."""
    code = _TFORM.match(str(table.columns[i].format))
    c = table.columns[i]
    if code and code.group(2) in _NUMERIC and c.bscale in (None, 1) and c.bzero in (None, 0):
        return _NUMERIC[code.group(2)].newbyteorder("=")
    return np.dtype(c.dtype).newbyteorder("=") if c.dtype.kind != "O" else np.dtype(np.float64)


def _read_chunked(path, offset, table, cols, row_dtype, dtypes, to_ring, device, shown):
    """Full-sky maps read row chunk by row chunk into their final arrays."""
    repeats = {table.repeats[c] for c in cols}
    if len(repeats) != 1 or table.nrows * table.repeats[cols[0]] != table.npix:
        bad = next(c for c in cols if table.nrows * table.repeats[c] != table.npix)
        raise ValueError(f"{shown!r}: column {table.columns[bad].name!r} holds "
                         f"{table.nrows * table.repeats[bad]} values, but NSIDE={table.nside} "
                         f"needs {table.npix}")
    repeat = repeats.pop()
    xp = _device_xp() if device else np
    same = len(set(dtypes)) == 1
    if same:
        block = xp.empty((len(cols), table.npix), dtypes[0])
        maps = [block[k] for k in range(len(cols))]
    else:
        block = None
        maps = [xp.empty(table.npix, d) for d in dtypes]
    reorder_needed = to_ring != table.ring
    out_order = "RING" if to_ring else "NEST"
    rowbytes = row_dtype.itemsize
    chunk_rows = max(1, CHUNK_BYTES // max(rowbytes, 1))
    buf = np.empty(chunk_rows * rowbytes, np.uint8)
    with open(path, "rb") as f:
        f.seek(offset)
        row = 0
        while row < table.nrows:
            n = min(chunk_rows, table.nrows - row)
            view = memoryview(buf)[:n * rowbytes]
            got = 0
            while got < view.nbytes:
                r = f.readinto(view[got:])
                if not r:
                    raise ValueError(f"{shown!r} ends inside its table (row {row + got // rowbytes}"
                                     f" of {table.nrows}): the file is truncated")
                got += r
            recs = buf[:n * rowbytes].view(row_dtype)
            first = row * repeat
            for k, c in enumerate(cols):
                values = recs[f"c{c}"].reshape(-1)
                if device or reorder_needed:
                    chunk = values.astype(dtypes[k])          # native, one chunk
                    _fix_unseen(chunk)
                    if device:
                        from .._device import to_device

                        chunk = to_device(chunk)
                    if reorder_needed:
                        scatter_pixels(chunk, maps[k], first, out_order=out_order)
                    else:
                        maps[k][first:first + chunk.shape[0]] = chunk
                else:
                    dst = maps[k][first:first + values.shape[0]]
                    dst[...] = values                          # swaps bytes while it copies
                    _fix_unseen(dst)
            row += n
    return block if same else maps


def _read_whole(table, cols, dtypes, to_ring, device, shown):
    """Maps read through astropy's table (compressed files, file objects, scaled columns,
    partial maps)."""
    try:
        data = table.hdu.data
    except Exception as exc:  # noqa: BLE001  astropy raises several kinds for damaged tables
        raise ValueError(f"{shown!r}: its table cannot be read: {exc}") from exc
    if data is None or len(data) == 0:
        raise ValueError(f"{shown!r} is no HEALPix map: its table is empty")
    if table.partial:
        pix = np.asarray(data.field(0)).reshape(-1).astype(np.int64)
        if pix.size and (pix.min() < 0 or pix.max() >= table.npix):
            raise ValueError(f"{shown!r}: PIXEL column has pixels outside 0 .. {table.npix - 1}"
                             f" (NSIDE={table.nside})")
        if to_ring != table.ring:
            from ..pixelfunc import nest2ring, ring2nest

            pix = (nest2ring if to_ring else ring2nest)(table.nside, pix)
    maps = []
    for c, dt in zip(cols, dtypes):
        values = np.asarray(data.field(c)).reshape(-1).astype(dt)
        if table.partial:
            if values.size != pix.size:
                raise ValueError(f"{shown!r}: column {table.columns[c].name!r} has {values.size}"
                                 f" values for {pix.size} pixels")
            full = np.full(table.npix, UNSEEN, dtype=dt)
            full[pix] = values
            values = full
        else:
            if values.size != table.npix:
                raise ValueError(f"{shown!r}: column {table.columns[c].name!r} holds "
                                 f"{values.size} values, but NSIDE={table.nside} needs "
                                 f"{table.npix}")
            if to_ring != table.ring:
                values = reorder(values, inp="RING" if table.ring else "NEST",
                                 out="RING" if to_ring else "NEST")
        _fix_unseen(values)
        if device:
            from .._device import to_device

            values = to_device(values)
        maps.append(values)
    return maps
