#!/usr/bin/env python
"""Generate ``healpix_weights.npz`` from HEALPix's ring and pixel weight FITS tables.

A one-off maintenance script, run by hand; nothing in the package or its tests calls it. It
needs ``astropy``, the ring weights ``weight_ring_n?????.fits`` (Debian's ``healpy-data`` installs
them under ``/usr/share/healpy/data``) and the compact pixel weights ``weight_pixel_n?????.fits``
(in healpy's source package, ``healpy-1.20.1/cextern/healpix/data``; Debian does not ship them)::

    apt-get install healpy-data
    pip download --no-deps --no-binary healpy healpy==1.20.1 -d /tmp && tar xzf /tmp/healpy-1.20.1.tar.gz -C /tmp
    python data/make_healpix_weights.py --pixel-dir /tmp/healpy-1.20.1/cextern/healpix/data

It stores the first column of each ring table (the three columns, T, Q, U, are equal; the script
checks it) and the one column of each pixel table, with an entry ``source`` naming each input
file with its MD5, then reads the file back and checks every value bit for bit.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

import numpy as np
from astropy.io import fits

from sphgpu.data.healpix_weights import (PIXEL_NSIDES, RING_NSIDES, n_compact_pixel_weights,
                                         pixel_entry, ring_entry)

DEFAULT_RING_DIR = "/usr/share/healpy/data"
DEFAULT_OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "healpix_weights.npz")


def _md5(path):
    with open(path, "rb") as fh:
        return hashlib.md5(fh.read()).hexdigest()


def read_column(path: str, nside: int, size: int, all_equal: bool) -> np.ndarray:
    with fits.open(path) as hdul:
        hdu = hdul[1]
        if hdu.header.get("NSIDE") != nside:
            raise ValueError(f"{path}: header NSIDE={hdu.header.get('NSIDE')}, expected {nside}")
        cols = [np.asarray(hdu.data.field(i), dtype=np.float64).ravel()  # one row or many
                for i in range(len(hdu.columns))]
    if all_equal and any(not np.array_equal(c, cols[0]) for c in cols):
        raise ValueError(f"{path}: the columns differ; this script stores one")
    if cols[0].shape != (size,):
        raise ValueError(f"{path}: {cols[0].shape} values, expected ({size},)")
    return cols[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ring-dir", default=DEFAULT_RING_DIR)
    parser.add_argument("--pixel-dir", required=True)
    parser.add_argument("--output", default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    entries, source = {}, []
    for nside in RING_NSIDES:
        name = f"weight_ring_n{nside:05d}.fits"
        path = os.path.join(args.ring_dir, name)
        entries[ring_entry(nside)] = read_column(path, nside, 2 * nside, True)
        source.append(f"{name} md5 {_md5(path)}")
    for nside in PIXEL_NSIDES:
        name = f"weight_pixel_n{nside:05d}.fits"
        path = os.path.join(args.pixel_dir, name)
        entries[pixel_entry(nside)] = read_column(path, nside, n_compact_pixel_weights(nside), False)
        source.append(f"{name} md5 {_md5(path)}")
    tmp = args.output + ".tmp.npz"
    np.savez_compressed(tmp, source=np.array("\n".join(source)), **entries)
    with np.load(tmp, allow_pickle=False) as npz:
        for key, values in entries.items():
            if not np.array_equal(npz[key].view(np.int64), values.view(np.int64)):
                raise RuntimeError(f"{key}: round trip is not bit-exact")
    os.replace(tmp, args.output)
    print(f"wrote {args.output}: {os.path.getsize(args.output)} bytes, {len(entries)} tables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
