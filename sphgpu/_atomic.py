"""Files written whole or not at all: the one way sphgpu writes a file.

:func:`atomic_write` hands the caller a temporary file in the target's own folder (so the final
``os.replace`` is a rename within one file system, atomic on POSIX and Windows) and renames it
over the target only after the caller's block finished without an exception and the data are
flushed to disk. A write that fails part-way (disk full, an exception, a killed process) leaves
the previous file as it was and no temporary file behind, except after a hard kill (then a
hidden ``.<name>.*.tmp`` beside it, which no reader opens). A reader beside a writer sees the old
file or the new one, never part of one.

This module imports only the standard library: the caches at the bottom of the import graph
(:mod:`sphgpu._tuning`, :mod:`sphgpu._kernel_cache`) use it as well as :mod:`sphgpu.io`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

__all__ = ["atomic_write"]


@contextlib.contextmanager
def atomic_write(path, *, overwrite=True, name="filename"):
    """Write ``path`` atomically: yields the path of a temporary file to write to.

    Parameters
    ----------
    path : str or os.PathLike
        The file to create or replace.
    overwrite : bool
        If False, an existing ``path`` raises FileExistsError before anything is written
        (healpy's ``write_map`` convention).
    name : str
        The argument's name, for error messages.

    Yields
    ------
    str
        A path in the same folder, already created (empty): the caller writes the whole file
        there with any library (``open(tmp, "w")``, ``numpy.save``, astropy's
        ``writeto(tmp, overwrite=True)``: the file exists, so astropy needs ``overwrite``).

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    FileNotFoundError, PermissionError
        The folder is missing or not writable (the message names ``path``).
    """
    target = os.fspath(path)
    if not isinstance(target, str):
        target = os.fsdecode(target)
    if not overwrite and os.path.exists(target):
        raise FileExistsError(f"{name}={target!r} exists; pass overwrite=True to replace it")
    folder = os.path.dirname(os.path.abspath(target))
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.",
                                   suffix=".tmp")
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"cannot write {name}={target!r}: the folder {folder!r} does "
                                "not exist") from exc
    except PermissionError as exc:
        raise PermissionError(f"cannot write {name}={target!r}: the folder {folder!r} is not "
                              "writable") from exc
    os.close(fd)
    try:
        yield tmp
        with open(tmp, "rb+") as f:       # on disk before the rename: a crash keeps old or new
            os.fsync(f.fileno())
        try:                              # mkstemp's 0600 would surprise a user's other tools
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        except OSError:
            pass
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
