"""The scripts under benchmarks/ as modules, for tests of their pure parts."""

import importlib.util
import pathlib
import sys

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str):
    """``benchmarks/<name>.py`` imported as a module (its folder on the path while it loads,
    for the helpers it imports from beside it, e.g. ``_scaling_common``)."""
    path = BENCHMARKS / f"{name}.py"
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(f"benchmark_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module
