"""Sort panel: timings checked against NumPy, the PIC demo, messages, and the panel headless."""

import math

import numpy as np
import pytest

from sphgpu.sort import pic
from sphgpu.widgets.sort import SortModel, bits_for_grid, sort_panel

from .conftest import INTERACTION_BUDGET_S, png, timed

SMALL = dict(log2n=10, key_bits=12, radix_bits=4, pic_log2n=10, pic_grid=8, pic_key_bits=8,
             pic_steps=2, backend="cpu")


@pytest.mark.parametrize("permutation", [False, True])
def test_run_times_every_radix_width_and_matches_numpy(permutation):
    m = SortModel(**dict(SMALL, permutation=permutation))
    r = m.run()
    assert m.message == "" and r is not None
    assert sorted(r.sphgpu_s) == list(range(1, 13))       # r = 1 .. min(b, 16)
    assert all(r.matches_numpy.values()) and all(s > 0 for s in r.sphgpu_s.values())
    assert list(r.peers_s) == ["numpy.argsort stable" if permutation else "numpy.sort stable"]
    assert r.passes(4) == 3 and r.passes(5) == 3 and r.passes(12) == 1
    keys = m.keys()
    assert keys.dtype == np.uint32 and keys.size == 2**10 and int(keys.max()) < 2**12


def test_key_bits_and_n_change_the_keys_and_a_wide_r_is_a_note():
    m = SortModel(**SMALL)
    k12 = m.keys()
    m.set(key_bits=4)
    assert int(m.keys().max()) < 16 and not np.array_equal(m.keys(), k12)
    m.set(radix_bits=8)
    assert "one pass" in m.note and m.message == ""
    r = m.run()
    assert sorted(r.sphgpu_s) == [1, 2, 3, 4, 8] and r.passes(8) == 1
    m.set(log2n=11)
    assert m.run().n == 2**11


def test_pic_keeps_particles_in_cell_order():
    m = SortModel(**dict(SMALL, pic_log2n=14, pic_grid=16, pic_steps=3))
    res = m.run_pic()
    assert res.sorted_ok and len(res.sort_s) == len(res.sort_min_s) == 3
    cells = pic.cell_index(res.pos, 16)
    assert np.all(cells[1:] >= cells[:-1]) and res.pos.shape == (2**14, 2)
    assert res.min_key_bits == bits_for_grid(16) == 8
    # A particle stays in its cell along one axis with probability 1/2 (uniform place in the
    # cell, uniform step in [-h, h]), so 1 - 1/4 of them change cell each step.
    assert np.mean(res.moved) == pytest.approx(0.75, abs=0.02)
    assert any("2 passes" in text or "passes" in label for label, text in res.numbers())


@pytest.mark.parametrize("settings, words", [
    (dict(pic_grid=64, pic_key_bits=10), "need 12 key bits"),
    (dict(log2n=30), "log2n must be a whole number from 1 to 24"),
    (dict(radix_bits=0), "radix_bits must be"),
    (dict(radix_bits=17), "radix_bits must be"),
    (dict(key_bits=33), "key_bits must be"),
    (dict(backend="gpu"), "backend must be one of"),
    (dict(pic_steps=0), "pic_steps must be"),
])
def test_invalid_settings_give_a_message(settings, words):
    m = SortModel(**SMALL)
    assert not m.set(**settings) and words in m.message
    assert m.run() is None and m.run_pic() is None


def test_cuda_without_a_gpu_is_a_message(no_gpu):
    m = SortModel(**dict(SMALL, backend="cuda"))
    assert "the cuda backend cannot run here" in m.message


def test_bits_for_grid():
    for grid in (1, 2, 3, 32, 33, 1024):
        assert 2 ** bits_for_grid(grid) >= grid * grid
        assert grid == 1 or 2 ** (bits_for_grid(grid) - 1) < grid * grid


# -- the panel, headless ------------------------------------------------------------------------
def test_panel_controls_change_the_plots_and_numbers():
    p = sort_panel(**SMALL)
    img, pic_img, numbers = png(p.figure), png(p.pic_figure), p.numbers.value
    assert img and pic_img and "Mkeys/s" in numbers and p.message.value == ""
    p.radix_bits.value = 6                         # picked from the cached sweep
    assert png(p.figure) != img and "6 / 2" in p.numbers.value
    p.key_bits.value = 20
    assert f"{math.ceil(20 / 6)}" in p.numbers.value and p.model.result.key_bits == 20
    pic_numbers = p.pic_numbers.value
    p.pic_grid.value = 4
    assert png(p.pic_figure) != pic_img and p.pic_numbers.value != pic_numbers
    p.permutation.value = True
    assert "argsort" in p.numbers.value


def test_panel_messages_and_run():
    p = sort_panel(**SMALL)
    p.pic_grid.value = 64                         # 4096 cells do not fit in 8 bits
    assert "need 12 key bits" in p.message.value and png(p.pic_figure) is None
    p.pic_key_bits.value = 12
    assert p.message.value == "" and png(p.pic_figure) is not None
    p.log2n.value = 17                             # above the live size: wait for Run
    assert "press Run" in p.message.value and png(p.figure) is None
    p.run_button.click()
    assert png(p.figure) is not None and p.model.result.n == 2**17 and p.progress.value == 1.0


@pytest.mark.timing
def test_panel_interactions_answer_within_a_second():
    p = sort_panel(backend="cpu")                  # the defaults are Binder sizes
    p.radix_bits.value = 7
    for control, value in [(p.radix_bits, 5), (p.key_bits, 20), (p.log2n, 15),
                           (p.permutation, True), (p.pic_grid, 16), (p.pic_key_bits, 12),
                           (p.pic_steps, 3), (p.log2n, 20)]:
        seconds = timed(lambda: setattr(control, "value", value))
        assert seconds < INTERACTION_BUDGET_S, (control.description, value, seconds)


def test_widths_the_backend_refuses_are_left_out_of_the_sweep(monkeypatch):
    import sphgpu

    real = sphgpu.radix_sort

    def at_most_8_bits(keys, *, radix_bits=None, **kw):      # as the CUDA backend does
        if radix_bits is not None and radix_bits > 8:
            raise ValueError(f"radix_bits must be <= 8, got {radix_bits}")
        return real(keys, radix_bits=radix_bits, **kw)

    monkeypatch.setattr(sphgpu, "radix_sort", at_most_8_bits)
    m = SortModel(**dict(SMALL, radix_bits=4))
    assert sorted(m.run().sphgpu_s) == list(range(1, 9))
    m.set(radix_bits=10)
    assert m.run() is None and "radix_bits must be <= 8" in m.message


def test_timings_say_what_was_timed():
    m = SortModel(**SMALL)
    rows = dict(m.run().numbers(4))
    assert "sphgpu (cpu, NumPy arrays; after a warm-up call)" in rows
    pic_rows = [label for label, _ in m.run_pic().numbers()]
    assert any(label.startswith("re-sort (NumPy arrays in and out), b = 8") for label in pic_rows)


def test_panel_sliders_keep_the_models_settings():
    """A slider whose range left out the model's (valid) value clamped it silently, and the
    next change of any control sent the clamped value to the model."""
    p = sort_panel(**dict(SMALL, log2n=8, pic_grid=300, pic_key_bits=17, pic_steps=30))
    assert (p.log2n.value, p.pic_grid.value, p.pic_steps.value) == (8, 300, 30)
    p.key_bits.value = 10
    m = p.model
    assert (m.log2n, m.pic_grid, m.pic_steps, m.message) == (8, 300, 30, "")
