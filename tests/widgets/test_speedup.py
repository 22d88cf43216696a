"""Speedup curves: reading the committed results (values taken from the JSON itself), the
generic reading of a new file, fresh measurements, messages, and the panel headless."""

import json

import numpy as np
import pytest

from sphgpu.widgets import speedup
from sphgpu.widgets.speedup import (BenchmarkSpec, SpeedupModel, default_results_dir,
                                    infer_spec, speedup_panel)

from .conftest import INTERACTION_BUDGET_S, png, timed


def committed(name):
    return json.loads((default_results_dir() / f"{name}.json").read_text())


def test_committed_results_load_with_their_specs():
    m = SpeedupModel(backend="cpu")
    assert {"sht", "sort"} <= set(m.benchmarks) and m.message == ""
    for name, b in m.benchmarks.items():
        assert b.spec is speedup.SPECS[name]
        assert all(b.spec.x in row for row in b.rows)


def test_seconds_speedup_and_throughput_are_read_from_the_json():
    data = committed("sht")
    m = SpeedupModel(benchmark="sht", group="map2alm", view="seconds", backend="cpu")
    curves = {c["key"]: c for c in m.curves()}
    rows = data["results"]
    want = [r["timings"]["cuda_device_map2alm"]["median_s"] for r in rows]
    np.testing.assert_array_equal(curves["cuda_device_map2alm"]["y"], want)
    np.testing.assert_array_equal(curves["cuda_device_map2alm"]["x"], [r["nside"] for r in rows])
    assert set(curves) == {"cuda_device_map2alm", "cuda_host_map2alm", "ducc0_all_map2alm",
                           "ducc0_1_map2alm", "healpy_map2alm"}

    m.set(view="speedup")
    assert m.baseline == "ducc0_all_map2alm"
    c = {c["key"]: c for c in m.curves()}
    assert "ducc0_all_map2alm" not in c                      # no curve of 1 against itself
    np.testing.assert_allclose(c["cuda_device_map2alm"]["y"],
                               [r["speedup_map2alm_vs_ducc0_all"] for r in rows], rtol=1e-12)

    m.set(view="throughput")
    c = {c["key"]: c for c in m.curves()}
    np.testing.assert_allclose(c["healpy_map2alm"]["y"],
                               [r["npix"] / r["timings"]["healpy_map2alm"]["median_s"] / 1e6
                                for r in rows])


def test_sort_results_and_a_missing_baseline_falls_back():
    data = committed("sort")
    m = SpeedupModel(benchmark="sort", view="throughput", backend="cpu")
    c = {c["key"]: c for c in m.curves()}
    np.testing.assert_allclose(c["cupy_sort"]["y"] / 1e3,
                               [r["gkeys_per_s"]["cupy_sort"] for r in data["uint32"]])
    # no numpy argsort in sort.json: the speedup of the permutation sort is against CuPy
    m.set(group="keys + permutation", view="speedup")
    assert m.baseline == "cupy_argsort" and m.message == ""
    c = {c["key"]: c for c in m.curves()}
    np.testing.assert_allclose(c["sphgpu_keys_perm"]["y"],
                               [r["ratio_perm_vs_cupy_argsort"] for r in data["uint32"]])


def _write(path, obj):
    path.write_text(json.dumps(obj))


def test_a_new_benchmark_file_is_read_without_a_mapping(tmp_path):
    rows = [{"npoints": n, "timings": {"sphgpu_cuda": {"median_s": 1e-3 * n},
                                       "treecorr": {"median_s": 5e-3 * n}}} for n in (10, 100)]
    _write(tmp_path / "newbench.json", {"machine": {"gpu": "X"}, "results": rows})
    (tmp_path / "broken.json").write_text("{not json")
    _write(tmp_path / "notes.json", {"text": "no rows here"})
    m = SpeedupModel(results_dir=tmp_path, backend="cpu")
    assert list(m.benchmarks) == ["newbench"] and m.group == "all" and m.baseline == "treecorr"
    assert set(m.skipped) == {"broken.json", "notes.json"}
    (c,) = m.curves()
    assert c["key"] == "sphgpu_cuda" and np.allclose(c["y"], 5.0)
    # which files were skipped is for the caller, not a line shown to users
    assert not any("broken.json" in text or "not shown" in label for label, text in m.summary())
    assert infer_spec("notes", {"text": "x"}) is None


def test_a_registered_spec_renames_and_groups(tmp_path, monkeypatch):
    monkeypatch.setattr(speedup, "SPECS", dict(speedup.SPECS))
    rows = [{"lmax": L, "timings": {"a": {"median_s": 2.0}, "b": {"median_s": 1.0}}}
            for L in (8, 16)]
    _write(tmp_path / "convolve.json", {"rows": rows})
    speedup.register(BenchmarkSpec(name="convolve", title="Convolution", rows="rows", x="lmax",
                                   x_label="lmax", groups={"split": (("a", "b"), "a")},
                                   labels={"b": "sphgpu split"}, sphgpu_prefixes=("b",)))
    m = SpeedupModel(results_dir=tmp_path, backend="cpu")
    (c,) = m.curves()
    assert c["label"] == "sphgpu split" and np.allclose(c["y"], 2.0) and c["sphgpu"]


def test_empty_folder_and_invalid_choices_give_messages(tmp_path):
    assert "no benchmark results found" in SpeedupModel(results_dir=tmp_path).message
    m = SpeedupModel(backend="cpu")
    for settings, words in [(dict(view="bogus"), "view must be"),
                            (dict(benchmark="nope"), "benchmark must be one of"),
                            (dict(benchmark="sht", group="sort it"), "operation must be"),
                            (dict(benchmark="sht", group="alm2map", baseline="cupy_sort"),
                             "baseline must be")]:
        assert not m.set(**settings) and words in m.message, settings
        assert m.curves() == [] and m.figure() is None
        m.set(benchmark="sht", group="alm2map", baseline=None, view="speedup")
        assert m.message == ""


def test_fresh_measurement_on_this_machine():
    m = SpeedupModel(benchmark="sort", group="keys", view="seconds", backend="cpu")
    for sizes, words in [("abc", "cannot read 'abc'"), ("", "sizes is empty"),
                         ("2^30", "2^30 is not allowed")]:
        m.set(sizes=sizes)
        assert not m.measure() and words in m.message
    m.set(backend="reference", sizes="2^20")
    assert not m.measure() and "not allowed for a measurement on the reference" in m.message
    m.set(backend="cpu", sizes="2^10, 2^12")
    assert m.measure() and m.message == ""
    fresh = m.fresh[("sort", "keys", "cpu")]
    assert sorted(fresh) == [2**10, 2**12]
    assert set(fresh[2**10]) == {"sphgpu_keys", "numpy_sort_stable"}
    mine = [c for c in m.curves() if c["fresh"]]
    assert {c["key"] for c in mine} == {"sphgpu_keys", "numpy_sort_stable"}
    m.set(view="speedup")
    (sp,) = [c for c in m.curves() if c["fresh"]]
    np.testing.assert_allclose(sp["y"], [fresh[n]["numpy_sort_stable"] / fresh[n]["sphgpu_keys"]
                                         for n in (2**10, 2**12)])



def test_fresh_sht_measurement_puts_sphgpu_against_its_peers_on_the_plot():
    """Issue 20: on a CPU machine Measure added only ducc0 rows and no sphgpu point."""
    m = SpeedupModel(benchmark="sht", group="alm2map", view="speedup", backend="cpu",
                     sizes="8, 16")
    assert m.measure() and m.message == ""
    fresh = m.fresh[("sht", "alm2map", "cpu")]
    assert set(fresh[8]) == {"cpu_alm2map", "ducc0_all_alm2map", "healpy_alm2map"}
    mine = {c["key"]: c for c in m.curves() if c["fresh"]}
    assert set(mine) == {"cpu_alm2map", "healpy_alm2map"}      # the baseline is ducc0
    sp = mine["cpu_alm2map"]
    assert sp["sphgpu"] and "sphgpu cpu backend" in sp["label"] and "this machine" in sp["label"]
    np.testing.assert_allclose(sp["y"], [fresh[n]["ducc0_all_alm2map"] / fresh[n]["cpu_alm2map"]
                                         for n in (8, 16)])
    fig = m.figure()
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    here = speedup.this_machine("cpu")
    assert f"sphgpu cpu backend (ducc0 inside) (this machine: {here})" in labels
    assert f"hollow markers: this machine ({here})" in fig.axes[0].get_title()
    rows = dict(m.summary())
    assert "sphgpu cpu backend" in rows[f"this machine ({here}), 8"]
    assert "after a warm-up call" in rows[f"this machine ({here}), 8"]


def test_cuda_measurement_without_a_gpu_is_a_message(no_gpu):
    m = SpeedupModel(benchmark="sort", backend="cuda", sizes="1024")
    assert not m.measure() and "cuda backend cannot run here" in m.message
    assert "cuda" not in speedup_panel(backend="cpu").backend.options


# -- the panel, headless ------------------------------------------------------------------------
def test_panel_controls_change_the_plot():
    p = speedup_panel(backend="cpu")
    img, numbers = png(p.figure), p.numbers.value
    assert img and "sht.json" in numbers
    p.view.value = "seconds"
    assert png(p.figure) != img
    img = png(p.figure)
    p.benchmark.value = "sort"
    assert p.group.options == ("keys", "keys + permutation") and p.group.value == "keys"
    assert png(p.figure) != img and "sort.json" in p.numbers.value
    img = png(p.figure)
    p.group.value = "keys + permutation"
    assert p.baseline.value == "cupy_argsort" and png(p.figure) != img
    p.sizes.value = "1024"
    p.run_button.click()
    assert "this machine" in p.numbers.value and p.message.value == ""
    p.sizes.value = "1 2 x"
    p.run_button.click()
    assert "cannot read" in p.message.value and "x" in p.message.value


@pytest.mark.timing
def test_panel_interactions_answer_within_a_second():
    p = speedup_panel(backend="cpu")
    for control, value in [(p.view, "seconds"), (p.group, "map2alm"),
                           (p.baseline, "healpy_map2alm"), (p.benchmark, "sort"),
                           (p.view, "throughput"), (p.sizes, "2^10")]:
        seconds = timed(lambda: setattr(control, "value", value))
        assert seconds < INTERACTION_BUDGET_S, (control.description, value, seconds)


def test_a_scaling_benchmark_is_read_by_its_mapping(tmp_path):
    # distributed.json as benchmarks/distributed_scaling.py writes it: rows nested, flat seconds
    rows = [{"units": n, "host_s": 8.0 / n ** 0.9, "device_s": 4.0 / n} for n in (1, 2, 4)]
    _write(tmp_path / "distributed.json", {"machine": {"gpu": "X", "cpu_count": 8},
                                           "batch": {"nside": 64, "rows": rows}})
    m = SpeedupModel(results_dir=tmp_path, view="speedup", backend="cpu")
    assert m.benchmark == "distributed" and m.message == "" and m.baseline is None
    c = {c["key"]: c for c in m.curves()}
    np.testing.assert_allclose(c["device_s"]["y"], [1, 2, 4])
    np.testing.assert_allclose(c["host_s"]["y"], [8.0 / r["host_s"] for r in rows])
    assert any("parallel efficiency" in label for label, _ in m.summary())
    assert m.figure() is not None
    m.set(view="seconds")
    np.testing.assert_allclose({c["key"]: c for c in m.curves()}["device_s"]["y"], [4, 2, 1])


def test_panel_on_a_scaling_benchmark(tmp_path):
    rows = [{"units": n, "host_s": 8.0 / n} for n in (1, 2)]
    _write(tmp_path / "distributed.json", {"batch": {"rows": rows}})
    p = speedup_panel(results_dir=tmp_path, backend="cpu")
    assert png(p.figure) and p.message.value == "" and p.baseline.value is None
    p.view.value = "seconds"
    assert p.message.value == "" and png(p.figure)
    p.sizes.value = "2"
    p.run_button.click()                           # no measurement defined for this one
    assert "no fresh measurement" in p.message.value


def test_tpacf_results_per_count_and_in_total():
    data = committed("tpacf")
    m = SpeedupModel(benchmark="tpacf", backend="cpu")
    assert m.group == "DD + DR + RR" and m.baseline == "treecorr" and m.message == ""
    c = {c["key"]: c for c in m.curves()}
    rows = data["results"]
    np.testing.assert_allclose(c["sphgpu_cuda_float32"]["y"],
                               [r["total_speedup_vs_treecorr"] for r in rows], rtol=1e-12)
    m.set(group="DR", view="seconds")
    c = {c["key"]: c for c in m.curves()}
    np.testing.assert_array_equal(c["cpu"]["y"], [r["counts"]["DR"]["cpu"]["median_s"]
                                                  for r in rows])
    np.testing.assert_array_equal(c["cpu"]["x"], [r["n_data"] for r in rows])


def test_stored_results_say_which_gpu_measured_them():
    """A committed run from another machine is labelled with the GPU its JSON names, in the
    figure and on every speedup row, apart from what this machine measures."""
    m = SpeedupModel(backend="cpu")
    for name in ("sht", "sort", "tpacf", "sht_pol", "sht_h100", "sht_h200", "sort_h200",
                 "tpacf_h200"):
        gpu = committed(name)["machine"]["gpu"]
        m.set(benchmark=name, group=None, baseline=None, view="speedup")
        assert m.message == "", name
        assert f"stored run on {gpu}" in m.figure().axes[0].get_title(), name
        rows = m.summary()
        assert gpu in rows[0][1]
        speedups = [label for label, _ in rows[1:]]
        assert speedups and all(f"stored run on {gpu}" in label for label in speedups), name


def test_tpacf_series_say_what_the_benchmark_timed():
    """tpacf.json's headline key is the whole call from NumPy arrays; the CuPy and prepared
    calls are shown too, each named for what it passed."""
    m = SpeedupModel(benchmark="tpacf", group="DR", view="seconds", backend="cpu")
    labels = {c["key"]: c["label"] for c in m.curves()}
    assert labels["sphgpu_cuda_float32"] == "sphgpu cuda, whole call from NumPy"
    assert labels["sphgpu_cuda_prepared"] == "sphgpu cuda, prepared Catalogs"
    assert "from CuPy" in labels["sphgpu_cuda_cupy"]


def test_this_machine_is_named_on_every_backend():
    assert speedup.this_machine("cpu").startswith("CPU, ")
    name = speedup.this_machine("cuda")             # a GPU's name, or the simulator's
    assert isinstance(name, str) and name


def test_polarized_speedups_compare_like_with_like():
    """The temperature transform was shown as a speedup over ducc0's spin-2 transform; each
    sphgpu series is now against ducc0 doing the same spin."""
    row = committed("sht_pol")["results"][0]
    t = {k: v["median_s"] for k, v in row["timings"].items()}
    m = SpeedupModel(benchmark="sht_pol", group="alm2map, temperature", view="speedup",
                     backend="cpu")
    assert m.baseline == "ducc0_all_t_alm2map" and m.message == ""
    (c,) = m.curves()
    assert c["key"] == "cuda_device_t_alm2map"
    np.testing.assert_allclose(c["y"], [t["ducc0_all_t_alm2map"] / t["cuda_device_t_alm2map"]])
    m.set(group="map2alm, spin 2 and T,E,B")
    assert m.baseline == "ducc0_all_spin2_map2alm"
    assert "cuda_device_t_map2alm" not in {c["key"] for c in m.curves()}


def test_measured_rows_stay_when_the_backend_is_switched():
    """Switching the backend chooses where the next Measure runs: the rows measured on the
    other backend stay on the plot and in the numbers, named by their backend."""
    p = speedup_panel(benchmark="sort", group="keys", view="seconds", backend="cpu")
    p.sizes.value = "2^10"
    p.run_button.click()
    here = speedup.this_machine("cpu")
    assert f"this machine ({here}), 2^10" in p.numbers.value
    img = png(p.figure)
    p.backend.value = "reference"
    assert f"this machine ({here}, cpu backend), 2^10" in p.numbers.value
    fresh = [c for c in p.model.curves() if c["fresh"]]
    assert fresh and all(c["backend"] == "cpu" and "cpu backend" in c["label"] for c in fresh)
    assert png(p.figure) is not None and png(p.figure) != img    # re-labelled, not gone
    p.backend.value = "cpu"
    assert f"this machine ({here}), 2^10" in p.numbers.value


def test_a_range_of_one_value_says_one_value(tmp_path):
    """"from 4815.67x to 4815.67x" said nothing: equal ends are said once, one size is
    called one size."""
    def write(speedups):
        rows = [{"n": n, "timings": {"sphgpu_cuda": {"median_s": 1.0},
                                     "peer": {"median_s": sp}}}
                for n, sp in zip((10, 100, 1000), speedups)]
        _write(tmp_path / "bench.json", {"results": rows})
        (row,) = [v for k, v in SpeedupModel(results_dir=tmp_path, backend="cpu").summary()
                  if " vs " in k]
        return row

    assert write([4815.67, 4815.67]) == "4815.67x at n 10 (the same at all 2 sizes)"
    assert write([4815.671]) == "4815.67x at n 10 (the one size measured)"
    assert write([2.0, 3.0, 2.5]) == "3.00x at n 100 (from 2.00x to 3.00x over 3 sizes)"
