"""ipywidgets panels over sphgpu (installed as ``sphgpu.widgets``; needs the ``lab`` extra).

Each panel is a pure-Python model holding the state and calling sphgpu, and a thin ipywidgets
view over it (the pattern is described in ``widgets/README.md`` and :mod:`sphgpu.widgets._base`)::

    from sphgpu.widgets import transform_panel
    transform_panel(nside=32)          # the last expression of a cell displays the panel

Panels: :func:`transform_panel` (synthesize a CMB sky and measure its spectrum back),
:func:`sort_panel` (radix sort throughput and the particle-in-cell demo),
:func:`correlation_panel` (w(theta) of a catalog with jackknife errors, and its DD/DR/RR),
:func:`montecarlo_panel` (simulated masked skies whose pseudo-spectra converge, live),
:func:`speedup_panel`
(the committed benchmark results and fresh measurements). :func:`mollview` draws a map with
matplotlib alone.

Importing this package is light: a panel's module (and ipywidgets, matplotlib) is imported on
first use of one of its names. Nothing here is imported by ``sphgpu`` itself. The names come
from the modules of this folder: each declares those it offers here in a module-level tuple
``_PACKAGE_EXPORTS``, read from its source without importing it, so a new panel module edits
nothing in this file.
"""

import ast
import importlib
import pathlib

_HERE = pathlib.Path(__file__).resolve().parent
_DECLARATION = "_PACKAGE_EXPORTS"


def _declared_names(path):
    """The names the module at ``path`` declares for this package to offer.

    Reads the module-level assignment ``_PACKAGE_EXPORTS = ("name", ...)`` from the source
    with :mod:`ast`, without importing the module. Returns a tuple of str, empty when the
    module declares nothing; raises ``ValueError`` when the declaration is not a literal tuple
    or list of identifiers.
    """
    path = pathlib.Path(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign) and node.value
                   else [])
        if any(isinstance(t, ast.Name) and t.id == _DECLARATION for t in targets):
            try:
                names = ast.literal_eval(node.value)
            except ValueError:
                names = None
            if (not isinstance(names, (tuple, list))
                    or not all(isinstance(n, str) and n.isidentifier() for n in names)):
                raise ValueError(f"{path.name}: {_DECLARATION} must be a literal tuple of "
                                 f"names, line {node.lineno}")
            return tuple(names)
    return ()


def _discover(folder=_HERE):
    """Every name the public modules of ``folder`` (``*.py`` not starting with ``_``) declare.

    Returns a dict, name -> the module's name (no package prefix), in the order of the files'
    names; raises ``ImportError`` when two modules declare the same name.
    """
    exports = {}
    for path in sorted(pathlib.Path(folder).glob("*.py")):
        if path.stem.startswith("_"):
            continue
        for name in _declared_names(path):
            if name in exports:
                raise ImportError(f"{name!r} is declared by both {exports[name]}.py and "
                                  f"{path.name} in {folder}")
            exports[name] = path.stem
    return exports


_exports = None     # _discover()'s answer, made on first use: importing the package parses nothing


def _offered():
    global _exports
    if _exports is None:
        _exports = _discover()
    return _exports


def __getattr__(name):
    if name == "__all__":
        value = sorted(_offered())
    else:
        module = _offered().get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_offered()))
