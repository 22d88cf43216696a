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


def test_batch_runs_the_transforms_on_that_many_maps_too(monkeypatch):
    import sphgpu.sht as sht
    seen = []
    real_a2m, real_m2a = sht.alm2map, sht.map2alm
    monkeypatch.setattr(sht, "map2alm", lambda m, *a, **k: seen.append(("map2alm", m.shape))
                        or real_m2a(m, *a, **k))
    monkeypatch.setattr(sht, "alm2map", lambda a, *r, **k: seen.append(("alm2map", a.shape))
                        or real_a2m(a, *r, **k))
    lines = []
    warmup(2, 4, backend="cpu", steps=("sht",), batch=3, progress=lines.append)
    assert seen == [("map2alm", (48,)), ("alm2map", (15,)), ("map2alm", (3, 48)),
                    ("alm2map", (3, 15))]
    assert lines[0] == ("warming up the transforms at nside 2, lmax 4 (single maps and batches "
                        "of 3) (1/1)")
    seen.clear()
    warmup(2, 4, backend="cpu", steps=("sht",), progress=False)
    assert [s for _, s in seen] == [(48,), (15,)]


def test_bad_arguments():
    with pytest.raises(ValueError, match="steps must be among"):
        warmup(steps=("fft",), progress=False)
    with pytest.raises(ValueError, match="'cost_model' step needs nside"):
        warmup(steps=("cost_model",), progress=False)
    with pytest.raises(ValueError, match="nside"):
        warmup(0, progress=False)
    with pytest.raises(ValueError, match="batch"):
        warmup(batch=0, progress=False)
    with pytest.raises(TypeError, match="sort_dtypes must name NumPy dtypes"):
        warmup(sort_dtypes=("float128x",), progress=False)
    with pytest.raises(TypeError, match="sort_dtypes must be integer or float"):
        warmup(sort_dtypes=("complex128",), progress=False)
