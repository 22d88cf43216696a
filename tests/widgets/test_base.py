"""The shared panel pattern: cache, model messages, figure output, guarded callbacks, and a
light package import."""

import subprocess
import sys

import ipywidgets
import pytest

from sphgpu.widgets import _base

from .conftest import png


def test_lru_computes_once_and_evicts_the_oldest():
    cache = _base.LRU(maxsize=2)
    calls = []

    def make(k):
        calls.append(k)
        return k * 10

    assert cache.get("a", lambda: make("a")) == "a" * 10
    assert cache.get("a", lambda: make("a")) == "a" * 10
    cache.get("b", lambda: make("b"))
    cache.get("a", lambda: make("a"))          # a is now the most recent
    cache.get("c", lambda: make("c"))          # evicts b
    assert "a" in cache and "c" in cache and "b" not in cache
    assert calls == ["a", "b", "c"] and cache.misses == 3


class _Toy(_base.PanelModel):
    PARAMS = ("x",)

    def __init__(self):
        super().__init__()
        self.x = 1

    def validate(self):
        return "" if self.x > 0 else f"x must be > 0, not {self.x}"


def test_model_set_validates_and_refuses_unknown_parameters():
    m = _Toy()
    assert m.set(x=2) and m.message == "" and m.params == {"x": 2}
    assert not m.set(x=-1) and m.message == "x must be > 0, not -1"
    with pytest.raises(AttributeError, match="no parameter 'y'"):
        m.set(y=1)


def test_capture_turns_user_errors_into_the_message_and_lets_bugs_through():
    m = _Toy()
    with m.capture("step"):
        raise ValueError("lmax too large")
    assert m.message == "step: lmax too large"
    with pytest.raises(KeyError):
        with m.capture():
            raise KeyError("a bug")


def test_show_figure_puts_a_png_into_the_output():
    fig = _base.new_figure(2, 1)
    fig.add_subplot().plot([0, 1], [1, 0])
    out = ipywidgets.Output()
    _base.show_figure(out, fig)
    assert len(out.outputs) == 1 and len(png(out)) > 100


def test_numbers_html_escapes():
    text = _base.numbers_html([("a<b", "1 & 2")])
    assert "a&lt;b" in text and "1 &amp; 2" in text


def test_guarded_callback_shows_a_bug_in_the_panel():
    panel = _base.Panel()

    def boom():
        raise ZeroDivisionError("oops")

    panel.guarded(boom)()
    assert "ZeroDivisionError: oops" in panel.message.value
    assert panel.last_seconds >= 0.0


def test_importing_the_package_is_light_and_every_name_resolves():
    code = ("import sys, sphgpu.widgets as w; "
            "heavy = [m for m in ('ipywidgets', 'matplotlib', 'sphgpu.widgets.transforms') "
            "if m in sys.modules]; print(heavy); "
            "[getattr(w, n) for n in w.__all__]; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "[]" and out[1] == "ok"
    import sphgpu.widgets as w

    with pytest.raises(AttributeError):
        w.no_such_panel  # noqa: B018
