"""Every control's description fits the width its panel gives it ("mask cut |b| < [°]" was
cut to "mask cut |b| <..."). The exact check, on rendered labels, is in tests/browser; this one
needs no browser and uses the same width per character as the panels."""

import ipywidgets as w
import pytest

from sphgpu.widgets._base import description_em


def _controls(widget):
    """Every widget under ``widget`` that shows a description beside it."""
    out = []
    for child in getattr(widget, "children", ()):
        out += _controls(child)
    if (getattr(widget, "description", "") and hasattr(widget, "style")
            and not isinstance(widget, (w.Button, w.Checkbox, w.FileUpload))):
        out.append(widget)
    return out


def _panels():
    from sphgpu.widgets import (correlation_panel, kernel_split_panel, montecarlo_panel,
                                sort_panel, speedup_panel)

    return {"montecarlo": lambda: montecarlo_panel(nside=8, backend="cpu"),
            "kernel_split": lambda: kernel_split_panel(nside=8, backend="cpu",
                                                       cost_model="paper"),
            "speedup": lambda: speedup_panel(backend="cpu"),
            "sort": lambda: sort_panel(log2n=10, backend="cpu"),
            "correlation": lambda: correlation_panel(n_points=200, backend="cpu")}


@pytest.mark.parametrize("name", sorted(_panels()))
def test_every_description_fits_its_width(name, no_gpu):
    panel = _panels()[name]()
    controls = _controls(panel)
    assert controls
    short = [(c.description, c.style.description_width) for c in controls
             if not c.style.description_width.endswith("em")
             or float(c.style.description_width[:-2]) < description_em(c.description) - 1e-9]
    assert not short, short
