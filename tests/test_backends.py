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


# ----------------------------------------------------------------------------- declarations
def test_every_capability_package_declares_itself():
    assert {"sht", "sort", "tpacf", "convolve", "master", "pixelfunc", "sims"} <= set(
        backends.CAPABILITIES)
    for name in backends.CAPABILITIES:
        declared = backends.declaration(name)
        assert declared.name == name and declared.package == f"sphgpu.{name}"
        assert backends.PROTOCOLS[name] is declared.protocol
    assert backends.SHTBackend is backends.PROTOCOLS["sht"]       # the old names still work
    with pytest.raises(AttributeError, match="NoSuchBackend"):
        backends.NoSuchBackend


def test_reading_the_declarations_imports_no_capability():
    # tpacf, convolve, master and sims import Numba: learning what they declare must not
    code = ("import sys, sphgpu; from sphgpu import backends; "
            "caps = backends.CAPABILITIES; protos = backends.PROTOCOLS; "
            "forms = backends.dask_forms(); "
            "bad = [m for m in ('numba', 'dask', 'sphgpu.tpacf', 'sphgpu.convolve', "
            "'sphgpu.master', 'sphgpu.sims') if m in sys.modules]; "
            "assert not bad, bad; assert 'tpacf' in caps and 'pair_counts' in forms")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


_TOY_DECLARE = '''
from typing import Protocol, runtime_checkable
from ..backends import Capability

@runtime_checkable
class ToyBackend(Protocol):
    def double(self, x): ...

CAPABILITY = Capability(ToyBackend, backends=("cpu", "reference"),
                        dask="sphgpu.distributed.toy", dask_names=("double_many",))
'''


@pytest.fixture
def toy_folder(tmp_path, monkeypatch):
    """A folder on the sphgpu package's path holding a capability "toycap" that no list of
    sphgpu names: what adding the folder sphgpu/toycap/ does."""
    import sphgpu

    pkg = tmp_path / "toycap"
    pkg.mkdir()
    # importing the package is what discovery must avoid: it says so in sys.modules
    (pkg / "__init__.py").write_text("import sys\nsys.modules['toycap_imported'] = sys\n")
    (pkg / "_declare.py").write_text(_TOY_DECLARE)
    (pkg / "_cpu.py").write_text("def double(x):\n    return 2 * x\n")
    (pkg / "reference.py").write_text("def double(x):\n    return x + x\n")
    monkeypatch.setattr(sphgpu, "__path__", list(sphgpu.__path__) + [str(tmp_path)])
    yield pkg
    for name in [m for m in sys.modules if m.startswith("sphgpu.toycap")] + ["toycap_imported"]:
        sys.modules.pop(name, None)


def test_a_capability_declared_in_its_own_folder_is_found(toy_folder, monkeypatch):
    assert "toycap" in backends.CAPABILITIES
    declared = backends.declaration("toycap")
    assert declared.backends == ("cpu", "reference") and declared.package == "sphgpu.toycap"
    assert backends.PROTOCOLS["toycap"].__name__ == "ToyBackend"
    assert "ToyBackend" in backends.__all__ and backends.ToyBackend is declared.protocol
    assert backends.dask_forms()["double_many"] == "sphgpu.distributed.toy"
    assert "toycap_imported" not in sys.modules       # read without importing its package
    monkeypatch.setattr(backends, "_cuda_status", lambda: (True, "fake GPU"))
    monkeypatch.setattr(backends, "_fallback_warned", False)
    assert backends.available("toycap") == ("cpu", "reference")
    with pytest.warns(RuntimeWarning, match="toycap has no CUDA backend"):
        assert backends.resolve("auto", "toycap") == "cpu"
    with pytest.raises(BackendUnavailableError, match="no CUDA backend"):
        backends.load("toycap", "cuda")
    module = backends.load("toycap", "reference")
    assert module.double(21) == 42 and isinstance(module, declared.protocol)
    assert "toycap_imported" in sys.modules and backends.load("toycap", "cpu").double(2) == 4


def test_the_folder_gone_the_capability_is_gone(toy_folder, monkeypatch):
    import sphgpu

    assert "toycap" in backends.CAPABILITIES
    monkeypatch.setattr(sphgpu, "__path__", [p for p in sphgpu.__path__
                                             if p != str(toy_folder.parent)])
    assert "toycap" not in backends.CAPABILITIES


def test_a_declaration_without_its_capability_is_reported(toy_folder):
    (toy_folder / "_declare.py").write_text("CAPABILITY = 3\n")
    with pytest.raises(TypeError, match=r"sphgpu\.toycap\._declare must define CAPABILITY"):
        backends.declaration("toycap")


def test_two_dask_forms_of_one_name_are_reported(toy_folder):
    (toy_folder / "_declare.py").write_text(_TOY_DECLARE.replace('"double_many"', '"alm2map"'))
    with pytest.raises(ValueError, match="'alm2map' is declared by two Dask forms"):
        backends.dask_forms()


def test_capability_arguments_are_checked():
    with pytest.raises(ValueError, match="capability must be one of .*'sht'"):
        backends.load("nonexistent", "cpu")
    with pytest.raises(TypeError, match="capability must be a string"):
        backends.declaration(3)
    proto = backends.PROTOCOLS["sort"]
    with pytest.raises(ValueError, match="backends must name"):
        backends.Capability(proto, backends=("gpu",))
    with pytest.raises(TypeError, match="backends must be a tuple of strings"):
        backends.Capability(proto, backends="cpu")
    with pytest.raises(TypeError, match="protocol must be a Protocol class"):
        backends.Capability("SortBackend")
    with pytest.raises(ValueError, match="dask_names needs dask"):
        backends.Capability(proto, dask_names=("f",))


def test_for_arrays_names_the_backend_of_an_array_kind():
    assert backends.info(backends.for_arrays(True)).gpu
    host = backends.info(backends.for_arrays(False))
    assert not host.gpu and not host.reference
    with pytest.raises(TypeError, match="device must be a bool"):
        backends.for_arrays("cuda")
