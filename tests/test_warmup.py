"""sphgpu.warmup: runs each first-call step, says what it does, and leaves the caches a later
call needs."""

import pytest

import sphgpu
from sphgpu import warmup
from sphgpu.backends import cuda_available
from sphgpu.convolve import MeasuredCostModel


def test_steps_and_progress(monkeypatch, tmp_path):
    monkeypatch.setenv("SPHGPU_CACHE_DIR", str(tmp_path))
    lines = []
    secs = warmup(4, 6, backend="cpu", sort_dtypes=("int16", "float32"), progress=lines.append)
    assert list(secs) == ["sht", "sort", "pair_counts", "convolve", "cost_model"]
    assert all(s >= 0 for s in secs.values())
    assert lines[0] == "warming up the transforms at nside 4, lmax 6 (1/5)"
    assert "radix sort (int16, float32)" in lines[2]
    assert any(l.startswith("timing the harmonic part [cpu]") for l in lines)
    assert lines[-1].startswith("warm-up finished in")
    # the cost model a later optimize_split needs is on disk: no timing left to do
    cm = MeasuredCostModel(4, 6, harmonic_backends=("cpu",), realspace_backends=("cpu",),
                           measure=False)
    assert cm.harmonic["cpu"].b >= 0


def test_default_steps_without_nside_and_default_printing(capsys):
    secs = warmup(backend="cpu", steps=("sort",), sort_dtypes=("uint8",))
    assert list(secs) == ["sort"]
    out = capsys.readouterr().out
    assert "sphgpu: warming up the radix sort (uint8) (1/1)" in out
    assert warmup(backend="cpu", steps=(), progress=False) == {}
    assert capsys.readouterr().out == ""
    assert sphgpu.warmup is warmup and "warmup" in sphgpu.__all__


@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU or simulator")
def test_cuda_backend():
    lines = []
    secs = warmup(2, 3, backend="cuda", steps=("sht", "convolve", "sort"), sort_dtypes=("uint32",),
                  progress=lines.append)
    assert list(secs) == ["sht", "convolve", "sort"] and len(lines) == 7


def test_bad_arguments():
    with pytest.raises(ValueError, match="steps must be among"):
        warmup(steps=("fft",), progress=False)
    with pytest.raises(ValueError, match="'cost_model' step needs nside"):
        warmup(steps=("cost_model",), progress=False)
    with pytest.raises(ValueError, match="nside"):
        warmup(0, progress=False)
    with pytest.raises(TypeError, match="sort_dtypes must name NumPy dtypes"):
        warmup(sort_dtypes=("float128x",), progress=False)
    with pytest.raises(TypeError, match="sort_dtypes must be integer or float"):
        warmup(sort_dtypes=("complex128",), progress=False)
