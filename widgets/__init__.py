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
first use of one of its names. Nothing here is imported by ``sphgpu`` itself.
"""

import importlib

#: Public name -> the module of this package that defines it (imported on first use).
_EXPORTS = {
    "TransformModel": "transforms", "TransformPanel": "transforms", "transform_panel": "transforms",
    "SortModel": "sort", "SortPanel": "sort", "sort_panel": "sort",
    "KernelSplitModel": "kernel_split", "KernelSplitPanel": "kernel_split",
    "kernel_split_panel": "kernel_split",
    "CorrelationModel": "correlation", "CorrelationPanel": "correlation",
    "correlation_panel": "correlation",
    "MonteCarloModel": "montecarlo", "MonteCarloPanel": "montecarlo",
    "montecarlo_panel": "montecarlo",
    "SpeedupModel": "speedup", "SpeedupPanel": "speedup", "speedup_panel": "speedup",
    "BenchmarkSpec": "speedup", "register_benchmark": "speedup",
    "mollview": "plots", "spectrum_plot": "plots",
}
_RENAMED = {"register_benchmark": "register"}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), _RENAMED.get(name, name))
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
