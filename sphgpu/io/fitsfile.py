"""The one place sphgpu imports astropy, and how every FITS file is opened and written.

For every writer and reader of FITS files inside sphgpu (maps, a_lm and spectra here; catalogs
and correlation results of :mod:`sphgpu.tpacf`):

* :func:`astropy_fits` imports ``astropy.io.fits`` with one clear ImportError when astropy is
  missing (it is optional at run time: only FITS needs it);
* :func:`write_fits` writes an HDU list atomically (:func:`sphgpu._atomic.atomic_write`: a
  temporary file in the same folder, then a rename), refusing an existing file unless
  ``overwrite``; ``.gz`` names are gzip-compressed;
* :func:`open_fits` opens a file (path or file object) and turns astropy's errors into ones that
  name the file.
"""

from __future__ import annotations

import contextlib
import gzip
import os

from .._atomic import atomic_write

__all__ = ["astropy_fits", "write_fits", "open_fits", "display_name", "is_path"]


def astropy_fits():
    """``astropy.io.fits``, or an ImportError that says how to get it.

    Returns
    -------
    module
        ``astropy.io.fits``.

    Raises
    ------
    ImportError
        astropy is not installed.
    """
    try:
        from astropy.io import fits
    except ImportError as exc:
        raise ImportError("reading and writing FITS files needs astropy: pip install astropy "
                          "(or conda install astropy)") from exc
    return fits


def is_path(filename):
    """Whether ``filename`` names a file (str or os.PathLike) rather than being a file object.

    Parameters
    ----------
    filename : object
        What a caller passed.

    Returns
    -------
    bool
    """
    return isinstance(filename, (str, os.PathLike))


def display_name(filename):
    """How messages name ``filename``: its path, or a file object's ``name``.

    Parameters
    ----------
    filename : str, os.PathLike or file object
        What a caller passed.

    Returns
    -------
    str
    """
    if is_path(filename):
        return os.fsdecode(os.fspath(filename))
    return str(getattr(filename, "name", None) or f"<{type(filename).__name__}>")


def write_fits(filename, hdus, *, overwrite=False, name="filename"):
    """Write HDUs to ``filename`` whole or not at all.

    Parameters
    ----------
    filename : str or os.PathLike
        The file; a name ending in ``.gz`` is gzip-compressed.
    hdus : sequence of astropy HDUs
        A PrimaryHDU first (else astropy adds an empty one).
    overwrite : bool
        Replace an existing file (else FileExistsError).
    name : str
        The argument's name in error messages.

    Raises
    ------
    FileExistsError
        ``filename`` exists and ``overwrite`` is False.
    FileNotFoundError, PermissionError
        The folder is missing or not writable (naming the file).
    OSError
        The write failed part-way (a full disk): the previous file, if any, is left intact.
    """
    fits = astropy_fits()
    hdul = fits.HDUList(list(hdus))
    target = display_name(filename)
    with atomic_write(filename, overwrite=overwrite, name=name) as tmp:
        try:
            if target.lower().endswith(".gz"):
                # astropy picks compression from the name, and the temporary name ends in .tmp
                with gzip.open(tmp, "wb") as out:
                    hdul.writeto(out)
            else:
                hdul.writeto(tmp, overwrite=True)     # the temporary file exists already
        except OSError as exc:
            raise OSError(exc.errno, f"writing {name}={target!r} failed part-way "
                          f"({exc.strerror or exc}); the previous file, if any, is intact") \
                from exc


@contextlib.contextmanager
def open_fits(filename, *, memmap=False, name="filename"):
    """Open a FITS file, with errors that name it.

    Parameters
    ----------
    filename : str, os.PathLike or binary file object
        The file.
    memmap : bool
        Let astropy map the file into memory instead of reading data it is asked for.
    name : str
        The argument's name in error messages.

    Yields
    ------
    astropy.io.fits.HDUList
        Loaded lazily: headers are read as HDUs are asked for, data when accessed.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        The file is not a FITS file (or is damaged).
    """
    fits = astropy_fits()
    shown = display_name(filename)
    target = os.fspath(filename) if is_path(filename) else filename
    if is_path(filename) and not os.path.exists(target):
        raise FileNotFoundError(f"{name}={shown!r}: no such file")
    try:
        hdul = fits.open(target, memmap=memmap, lazy_load_hdus=True)
        if len(hdul) == 0:                    # forces the primary header to be parsed
            raise OSError("no HDU in the file")
    except (OSError, ValueError, TypeError, EOFError) as exc:
        if isinstance(exc, IsADirectoryError):
            raise IsADirectoryError(f"{name}={shown!r} is a folder, not a FITS file") from exc
        raise ValueError(f"{name}={shown!r} is not a FITS file (or is damaged): {exc}") from exc
    try:
        yield hdul
    finally:
        hdul.close()
