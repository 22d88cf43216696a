import subprocess
import sys
import warnings

import pytest

from sphgpu import backends
from sphgpu.backends import BackendUnavailableError, resolve, use_backend


@pytest.fixture(autouse=True)
def _no_backend_env(monkeypatch):
    monkeypatch.delenv("SPHGPU_BACKEND", raising=False)


def test_explicit_names_and_context():
    assert resolve("cpu") == "cpu"
    assert resolve("Reference") == "reference"
    with use_backend("reference"):
        assert resolve("auto") == "reference"
        assert resolve("cpu") == "cpu"          # an explicit argument wins over the context
        with use_backend("cpu"):
            assert resolve() == "cpu"
        assert resolve() == "reference"


def test_environment_variable(monkeypatch):
    monkeypatch.setenv("SPHGPU_BACKEND", "reference")
    assert resolve("auto") == "reference"
    monkeypatch.setenv("SPHGPU_BACKEND", "tpu")
    with pytest.raises(ValueError, match="SPHGPU_BACKEND"):
        resolve("auto")


def test_bad_names():
    with pytest.raises(ValueError, match="backend"):
        resolve("gpu")
    with pytest.raises(TypeError, match="backend"):
        resolve(None)
    with pytest.raises(ValueError, match="backend"):
        with use_backend("fast"):
            pass


def test_cuda_without_gpu_raises_and_auto_falls_back(monkeypatch):
    monkeypatch.setattr(backends, "_cuda_status", lambda: (False, "no GPU here (test)"))
    monkeypatch.setattr(backends, "_fallback_warned", False)
    with pytest.raises(BackendUnavailableError, match="backend='cuda'.*no GPU here"):
        resolve("cuda")
    with pytest.warns(RuntimeWarning, match="CPU backend"):
        assert resolve("auto") == "cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # said once, not at every call
        assert resolve("auto") == "cpu"


def test_cuda_requested_where_capability_lacks_it(monkeypatch):
    monkeypatch.setattr(backends, "_cuda_status", lambda: (True, "fake GPU"))
    with pytest.raises(BackendUnavailableError, match="no CUDA backend"):
        resolve("cuda", capability="nonexistent")


def test_import_is_silent_and_touches_no_gpu():
    code = ("import sys, warnings; warnings.simplefilter('error'); import sphgpu; "
            "assert 'numba.cuda' not in sys.modules, 'numba.cuda imported'; "
            "assert 'cupy' not in sys.modules; print(len(sphgpu.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() != "" and out.stderr == ""


# ----------------------------------------------------------------------------- asking the registry
def test_info_answers_what_callers_used_to_compare_names_for():
    assert backends.info("cuda").gpu and not backends.info("cuda").reference
    assert not backends.info(" CPU ").gpu
    assert backends.info("reference").reference and backends.info("reference").module == "reference"
    with pytest.raises(ValueError, match="resolve it first"):
        backends.info("auto")
    with pytest.raises(ValueError, match="backend"):
        backends.info("gpu")


def test_available_and_default_follow_the_gpu(monkeypatch):
    monkeypatch.setattr(backends, "_cuda_status", lambda: (False, "no GPU here (test)"))
    assert backends.available() == ("cpu", "reference")
    assert backends.default() == "cpu"
    monkeypatch.setattr(backends, "_cuda_status", lambda: (True, "fake GPU"))
    assert backends.available("convolve") == ("cuda", "cpu", "reference")
    assert backends.default() == "cuda"
    assert backends.default("nonexistent") == "cpu"       # no CUDA module: "auto" means CPU
    monkeypatch.setenv("SPHGPU_BACKEND", "reference")
    assert backends.default() == "reference"
    monkeypatch.setenv("SPHGPU_BACKEND", "tpu")           # reported by resolve(), not here
    assert backends.default() == "cuda"


def test_named_and_resolve_remote():
    assert backends.named("auto") is None and backends.named(None) is None
    assert backends.named("Cuda") == "cuda"
    with pytest.raises(ValueError, match="backend"):
        backends.named("fast")
    with use_backend("reference"):                  # remote work ignores this process's choice
        assert backends.resolve_remote("auto", lambda: True) == "cuda"
        assert backends.resolve_remote("auto", lambda: False) == "cpu"
    assert backends.resolve_remote("reference", lambda: pytest.fail("asked")) == "reference"
    with pytest.raises(TypeError, match="backend"):
        backends.resolve_remote(3, lambda: True)
