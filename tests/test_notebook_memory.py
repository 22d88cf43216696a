"""A notebook's kernel within a class's memory (issue 40: at most 250 MB after Run All on the
CPU): ``import sphgpu`` and ducc0's transforms load no Numba (about 130 MB with its first
compiled call), kernel-split fits free their cache on request, and the notebooks that need no
Numba stay under 250 MB in a fresh kernel. ``benchmarks/notebook_memory.py`` measures every
notebook (``benchmarks/results/notebook_memory.json``)."""

import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).parents[1]


def _python(code, **env):
    """Run ``code`` in a fresh interpreter with this environment changed by ``env`` (a value
    None removes the variable); its stdout, stripped."""
    e = {k: v for k, v in os.environ.items() if k not in env}
    e.update({k: v for k, v in env.items() if v is not None})
    run = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_import_sphgpu_and_its_panels_loads_no_numba():
    out = _python("import sys, sphgpu, sphgpu.widgets; print('numba' in sys.modules)",
                  NUMBA_ENABLE_CUDASIM=None)
    assert out == "False"


def test_ducc0_transforms_load_no_numba():
    code = """
import sys
import numpy as np
import sphgpu
from sphgpu.data import planck2018_cl
teb = sphgpu.synalm(planck2018_cl(32, spectra=("TT", "EE", "BB", "TE")), 32, new=True, seed=1)
teb = np.stack([sphgpu.almxfl(teb[i], sphgpu.gauss_beam(fwhm_arcmin=60.0, lmax=32, pol=True)[:, i])
                for i in range(3)])
iqu = sphgpu.alm2map(teb, 16, 32, backend="cpu")
cl = sphgpu.anafast(iqu, lmax=32, iter=3, backend="cpu")
print(cl.shape, 'numba' in sys.modules)
"""
    assert _python(code, NUMBA_ENABLE_CUDASIM=None, SPHGPU_BACKEND="cpu") == "(6, 33) False"


def test_coupling_matrices_by_ducc0_load_no_numba():
    """``from sphgpu import master`` and its ducc0 path need no compiler (notebook 07); the
    Numba twin and ``wigner3j`` load it on first use."""
    code = """
import sys
import numpy as np
from sphgpu import master
mask = np.ones(12 * 8**2)
mask[:200] = 0.0
c = master.coupling_matrix(mask, 15, spins="all", backend="cpu")
print(sorted(c.blocks), 'numba' in sys.modules)
master.wigner3j(3, 4)
print('numba' in sys.modules)
"""
    assert _python(code, NUMBA_ENABLE_CUDASIM=None).splitlines() == [
        "['++', '--', '00', '02'] False", "True"]


def test_cuda_available_without_a_driver_answers_without_numba():
    code = ("import sys, sphgpu; from sphgpu import backends; "
            "print(backends._no_cuda_driver(), sphgpu.cuda_available(), 'numba' in sys.modules)")
    out = _python(code, NUMBA_ENABLE_CUDASIM=None)
    if out.startswith("False"):
        pytest.skip("a CUDA driver is installed here: Numba is asked")
    assert out == "True False False"


@pytest.mark.parametrize("value", ["1", "0", None])
def test_the_simulator_flag_read_without_numba_is_numbas(value):
    code = ("from sphgpu._cuda_launch import SIMULATOR; import numba; "
            "print(SIMULATOR, bool(numba.config.ENABLE_CUDASIM))")
    flag, numbas = _python(code, NUMBA_ENABLE_CUDASIM=value).split()
    assert flag == numbas == str(value == "1")


def test_subpackages_import_on_first_use():
    code = """
import sys, sphgpu
before = 'sphgpu.sims' in sys.modules
from sphgpu import tpacf
print(before, sphgpu.sims.MonteCarlo.__name__, tpacf.pair_counts.__name__,
      sphgpu.master.__name__)
try:
    sphgpu.no_such_thing
except AttributeError as exc:
    print(exc)
"""
    lines = _python(code).splitlines()
    assert lines[0] == "False MonteCarlo pair_counts sphgpu.master"
    assert lines[1] == "module 'sphgpu' has no attribute 'no_such_thing'"


def test_clear_fit_cache_frees_the_kept_designs():
    from sphgpu.convolve import RadialKernel, SplitFitter, clear_fit_cache, split

    fitter = SplitFitter(RadialKernel.gaussian(600.0, 48), 0.6)
    fitter.split(20, 0.4)
    assert split._Design._cache
    clear_fit_cache()
    assert not split._Design._cache and not split._Design._order
    # the next fit rebuilds what it needs
    SplitFitter(RadialKernel.gaussian(500.0, 48), 0.6).split(20, 0.4)
    assert len(split._Design._cache) == 1


def _benchmark():
    spec = importlib.util.spec_from_file_location("notebook_memory",
                                                  ROOT / "benchmarks" / "notebook_memory.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("name", ["00_start_here.ipynb", "01_transforms.ipynb"])
def test_notebook_kernel_within_250_mb_after_run_all(name):
    """The transform notebooks in a fresh kernel, caches as they are (warm after the first
    run); the others load Numba's compiler and are measured by the benchmark."""
    pytest.importorskip("nbclient")
    bench = _benchmark()
    # as on Binder: the CPU backend, no CUDA simulator (the tests' conftest turns it on)
    row = bench.run_notebook(ROOT / "notebooks" / name,
                             {"SPHGPU_BACKEND": "cpu", "NUMBA_ENABLE_CUDASIM": None})
    assert not row["errors"], row["errors"]
    assert not row["numba_loaded"]
    assert row["rss_mb"] <= bench.GOAL_RSS_MB, row
