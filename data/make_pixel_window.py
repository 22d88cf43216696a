#!/usr/bin/env python
"""Generate ``healpix_pixel_window.npz`` from HEALPix's pixel-window FITS tables.

A one-off maintenance script, run by hand; nothing in the package or its tests calls it. It
needs ``astropy`` and the FITS files ``pixel_window_n0002.fits`` ... ``pixel_window_n8192.fits``,
which Debian's ``healpy-data`` package installs under ``/usr/share/healpy/data``. Without
installing it system-wide::

    cd /tmp && apt-get download healpy-data && dpkg-deb -x healpy-data_*_all.deb healpy-data
    python data/make_pixel_window.py --fits-dir /tmp/healpy-data/usr/share/healpy/data

The output holds, per nside, the two FITS columns (TEMPERATURE, POLARIZATION) in the lossless
compact form of ``sphgpu.data.pixel_window.encode_columns``, plus an entry ``source`` naming
each input file with its MD5. The script reads the written file back and checks that every value
equals the FITS value bit for bit.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

import numpy as np
from astropy.io import fits

from sphgpu.data.pixel_window import NSIDES, decode_columns, encode_columns, entry_name

DEFAULT_FITS_DIR = "/usr/share/healpy/data"
DEFAULT_OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "healpix_pixel_window.npz")


def read_fits(path: str, nside: int) -> np.ndarray:
    """The (2, 4*nside+1) float64 table of one FITS file, checked against its own header."""
    with fits.open(path) as hdul:
        hdu = hdul[1]
        if hdu.header.get("NSIDE") != nside:
            raise ValueError(f"{path}: header NSIDE={hdu.header.get('NSIDE')}, expected {nside}")
        names = [name.upper() for name in hdu.columns.names]
        if names != ["TEMPERATURE", "POLARIZATION"]:
            raise ValueError(f"{path}: columns {names}, expected TEMPERATURE, POLARIZATION")
        table = np.stack([hdu.data.field(0), hdu.data.field(1)]).astype(np.float64)
    if table.shape != (2, 4 * nside + 1):
        raise ValueError(f"{path}: shape {table.shape}, expected {(2, 4 * nside + 1)}")
    return table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits-dir", default=DEFAULT_FITS_DIR,
                        help=f"folder holding pixel_window_n????.fits (default {DEFAULT_FITS_DIR})")
    parser.add_argument("--output", default=DEFAULT_OUTPUT, help="npz file to write")
    args = parser.parse_args(argv)

    tables, entries, source = {}, {}, []
    for nside in NSIDES:
        name = f"pixel_window_n{nside:04d}.fits"
        path = os.path.join(args.fits_dir, name)
        with open(path, "rb") as fh:
            md5 = hashlib.md5(fh.read()).hexdigest()
        tables[nside] = read_fits(path, nside)
        entries[entry_name(nside)] = encode_columns(tables[nside])
        source.append(f"{name} md5 {md5}")
    entries["source"] = np.array("\n".join(source))

    tmp = args.output + ".tmp.npz"
    np.savez_compressed(tmp, **entries)
    with np.load(tmp, allow_pickle=False) as npz:
        for nside, table in tables.items():
            back = decode_columns(npz[entry_name(nside)])
            if not np.array_equal(back.view(np.int64), table.view(np.int64)):
                raise RuntimeError(f"nside {nside}: round trip is not bit-exact")
    os.replace(tmp, args.output)
    raw = sum(t.nbytes for t in tables.values())
    print(f"wrote {args.output}: {os.path.getsize(args.output)} bytes "
          f"({raw} bytes of float64), {len(tables)} tables, round trip bit-exact")
    return 0


if __name__ == "__main__":
    sys.exit(main())
