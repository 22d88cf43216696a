"""The package list, computed so that a new ``sphgpu/<name>/`` needs no entry anywhere; every
other setting (metadata, the folders mapped into the package, package data) is in
pyproject.toml.

The tests read :func:`packages` too, to check that ``docs/make_api.py`` documents every
package installed (this file runs ``setup`` only when setuptools executes it).
"""

import pathlib
import tomllib

from setuptools import find_packages, setup

ROOT = pathlib.Path(__file__).resolve().parent


def packages(root=ROOT):
    """Every package the distribution installs, sorted: those under ``sphgpu/`` with an
    ``__init__.py`` (found, not listed) and the folders ``[tool.setuptools.package-dir]`` maps
    into ``sphgpu`` (``widgets/`` as ``sphgpu.widgets``, ``data/`` as ``sphgpu.data``) with
    their own subpackages.

    Returns a list of dotted names.
    """
    root = pathlib.Path(root)
    config = tomllib.loads((root / "pyproject.toml").read_text())
    mapped = config.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    found = set(find_packages(where=str(root), include=["sphgpu", "sphgpu.*"]))
    for name, folder in mapped.items():
        if name:                # "" would remap the root itself, which this layout never does
            found.add(name)
            found.update(f"{name}.{sub}" for sub in find_packages(where=str(root / folder)))
    return sorted(found)


if __name__ == "__main__":
    setup(packages=packages())
