"""A peer's own test folder, taken at test time from its source package on the registry (never
copied into this repository: healpy is GPL), cached outside the checkout."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tarfile
import tempfile

import pytest


def peer_tests(spec: str, folder: str, marker: str) -> pathlib.Path:
    """The unpacked ``folder`` (e.g. "test") of the sdist of ``spec`` ("healpy==1.20.1"):
    ``<cache>/<name>-<version>/<folder>``, downloaded with pip the first time (the test skips
    when that fails, e.g. offline). ``marker``: a file of the folder that shows it is there.

    The cache is ``$SPHGPU_TEST_CACHE`` or ``~/.cache/sphgpu-tests``.
    """
    root = os.environ.get("SPHGPU_TEST_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "sphgpu-tests")
    dest = pathlib.Path(root) / spec.replace("==", "-")
    if not (dest / folder / marker).is_file():
        _fetch(dest, spec, folder, marker)
    return dest / folder


def _fetch(dest: pathlib.Path, spec: str, folder: str, marker: str) -> None:
    """Download the sdist and unpack its ``folder`` into ``dest`` (a folder renamed into place,
    so parallel workers and interrupted runs never see half of it)."""
    name = spec.partition("==")[0]
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", name,
               "-d", tmp, spec]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        sdists = [p for p in pathlib.Path(tmp).glob("*.tar.gz")
                  if p.name.lower().startswith(name.lower() + "-")]
        if done.returncode != 0 or not sdists:
            pytest.skip(f"could not download {spec}'s source package (offline?): "
                        f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}")
        unpacked = pathlib.Path(tmp) / "unpacked"
        with tarfile.open(sdists[0]) as tar:
            members = [m for m in tar.getmembers()
                       if m.name.split("/")[1:2] == [folder] and (m.isfile() or m.isdir())]
            try:
                tar.extractall(unpacked, members=members, filter="data")
            except TypeError:                    # Python without extraction filters
                tar.extractall(unpacked, members=members)
        try:
            os.replace(next(unpacked.iterdir()), dest)
        except OSError:
            if not (dest / folder / marker).is_file():   # another worker won the race, or not
                raise
