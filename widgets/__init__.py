"""ipywidgets panels over sphgpu (installed as ``sphgpu.widgets``); the panels arrive with the
interactive-environment work. Nothing here is imported by ``sphgpu`` itself."""

__all__: list[str] = []
