"""The pattern every panel follows: a pure-Python model and a thin ipywidgets view over it.

A panel module ``widgets/<name>.py`` holds

``<Name>Model(PanelModel)``
    The state (plain attributes) and the compute methods, which call the public sphgpu API.
    ``set(**params)`` changes parameters and validates the combination: an invalid one sets
    ``model.message`` (a sentence for the user) and leaves the results empty instead of
    raising. Expensive results are cached (:class:`LRU`) by the parameters they depend on.
    Models never touch widgets, so they are tested without a browser or a kernel.
``<Name>Panel(Panel)``
    The view, an ``ipywidgets.VBox``: controls bound to the model, a Run button with a
    progress bar for long work, matplotlib figures shown in ``Output`` widgets
    (:func:`show_figure`, as PNG: no ipympl and no pyplot state), and HTML widgets for
    ``model.message`` and the numbers. Changing a control is answered at once (in well
    under a second at Binder sizes) when the model says the work is small (``model.live``);
    otherwise it only marks the shown results as stale until Run is pressed.
``<name>_panel(**kw)``
    The factory users call in a notebook: ``display(transform_panel(nside=16))``.

Everything here is presentation; numerics live in sphgpu.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import html
import io
import math
import time
from collections import OrderedDict

import ipywidgets as w
import numpy as np

__all__ = ["PanelModel", "LRU", "Panel", "figure_png", "figure_outputs", "show_figure",
           "numbers_html", "new_figure", "USER_ERRORS", "default_backend", "fmt_seconds",
           "first_call", "fmt_call_seconds", "is_int", "is_real", "backend_options",
           "unknown_backend",
           "toggle_buttons", "fit_descriptions", "description_em", "DPI"]

#: Figures are drawn at CSS pixel density, so that a point of font is 4/3 of a screen pixel at
#: 100 % zoom (80 dpi made 7 px legends).
DPI = 96

#: Exceptions that mean "these settings cannot run here" (bad values, no GPU, not enough
#: memory): the model turns them into ``message``. Anything else is a bug and propagates.
USER_ERRORS = (ValueError, TypeError, RuntimeError, MemoryError)


def default_backend() -> str:
    """A panel's starting backend: what "auto" stands for here (:func:`sphgpu.backends.default`:
    SPHGPU_BACKEND when it names one, else "cuda" where a GPU is usable, else "cpu"); panels
    show the backend they use rather than "auto"."""
    from sphgpu import backends

    return backends.default()


def backend_options(current=None) -> list[str]:
    """Backends a panel offers: "cpu" and "reference", and "cuda" only where a GPU is usable
    (or when ``current`` already names it, so that the model's message can say why not)."""
    from sphgpu import backends

    opts = list(backends.available())
    if current in backends.BACKENDS and current not in opts:
        opts.append(current)
    return opts


def toggle_buttons(options, value, description, description_width="8.5em", **kw):
    """ToggleButtons whose buttons are wide enough for their longest label (ipywidgets cuts
    longer labels to "measu…")."""
    labels = [o[0] if isinstance(o, tuple) else str(o) for o in options]
    width = f"{0.62 * max(len(t) for t in labels) + 2.2:.1f}em"
    return w.ToggleButtons(options=options, value=value, description=description,
                           style={"description_width": description_width,
                                  "button_width": width}, **kw)


def description_em(text: str) -> float:
    """Width (em) a control's description needs in JupyterLab's 13 px sans-serif: 0.62 em a
    character (its widest lower-case letters and symbols average under that) plus the label's
    padding. Narrower widths cut the label to "mask cut |b| <..."."""
    return 0.62 * len(text) + 1.0


def fit_descriptions(controls) -> str:
    """Give ``controls`` (widgets with a ``description``) one description width, wide enough
    for the longest; returns it (e.g. "12.2em"), for controls made later to share."""
    width = f"{math.ceil(10 * max(description_em(c.description) for c in controls)) / 10}em"
    for c in controls:
        c.style.description_width = width
    return width


def unknown_backend(backend) -> str:
    """Why ``backend`` names no backend ("" when it names one): a panel's message."""
    from sphgpu import backends

    if not isinstance(backend, str) or backend not in backends.BACKENDS:
        return f"backend must be one of {', '.join(backends.BACKENDS)}, not {backend!r}"
    return ""


def backend_problem(backend: str, capability: str) -> str:
    """Why ``backend`` cannot run ``capability`` here ("" when it can): a panel's message."""
    from sphgpu import backends

    try:
        backends.resolve(backend, capability)
    except backends.BackendUnavailableError as exc:
        return f"the {backend} backend cannot run here: {exc}"
    return ""


def fmt_seconds(s: float) -> str:
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


#: Work the panels have timed in this process (see :func:`first_call`).
_TIMED: set = set()


def first_call(*key) -> bool:
    """True the first time a panel times the work ``key`` (e.g. a function and its backend) in
    this process: that time may include compiling kernels and tuning launches, so the panel
    says so next to it."""
    first = key not in _TIMED
    _TIMED.add(key)
    return first


def fmt_call_seconds(seconds: float, first: bool) -> str:
    """A timed call's seconds, with a note when it was the first (see :func:`first_call`)."""
    note = " (first call in this session: may include compiling and tuning)" if first else ""
    return fmt_seconds(seconds) + note


def is_real(x) -> bool:
    """A finite real number as a setting: Python or NumPy int or float, not bool."""
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) \
        and bool(np.isfinite(x))


def is_int(x) -> bool:
    """A whole number as a setting: Python or NumPy integer, not bool."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


class LRU:
    """A small least-recently-used cache: ``get(key, compute)`` runs ``compute()`` on a miss.

    Results hold maps of up to tens of MB, so a handful of entries is plenty.
    """

    def __init__(self, maxsize: int = 4):
        self.maxsize = maxsize
        self._items: OrderedDict = OrderedDict()
        self.misses = 0

    def get(self, key, compute):
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        self.misses += 1
        value = compute()
        self._items[key] = value
        while len(self._items) > self.maxsize:
            self._items.popitem(last=False)
        return value

    def put(self, key, value):
        """Store ``value`` under ``key`` (replacing any); returns ``value``."""
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.maxsize:
            self._items.popitem(last=False)
        return value

    def __contains__(self, key):
        return key in self._items

    def clear(self):
        self._items.clear()


class PanelModel:
    """Base of the panel models: ``message`` and the ``capture`` guard.

    ``message`` is "" when the settings are valid; otherwise one sentence saying what is wrong
    and what would be allowed. Subclasses implement ``validate() -> str`` and call
    ``set(**params)``, which assigns known attributes only (a typo raises, as it is a bug of
    the caller, not a user setting).
    """

    #: Names ``set`` accepts; subclasses list their parameters.
    PARAMS: tuple[str, ...] = ()

    def __init__(self):
        self.message = ""

    def set(self, **params) -> bool:
        """Assign parameters, then validate. Returns True when the combination is valid."""
        for name, value in params.items():
            if name not in self.PARAMS:
                raise AttributeError(f"{type(self).__name__} has no parameter {name!r}; "
                                     f"parameters: {', '.join(self.PARAMS)}")
            setattr(self, name, value)
        self.message = self.validate()
        return not self.message

    def validate(self) -> str:
        return ""

    @property
    def params(self) -> dict:
        return {name: getattr(self, name) for name in self.PARAMS}

    @contextlib.contextmanager
    def capture(self, what: str = ""):
        """Turn a user error raised by sphgpu inside the block into ``message``.

        The block is abandoned; callers check ``message`` (or a result left as None).
        """
        try:
            yield
        except USER_ERRORS as exc:
            prefix = f"{what}: " if what else ""
            self.message = f"{prefix}{exc}"


def new_figure(width: float, height: float):
    """A matplotlib Figure outside pyplot (no global state, freed with its last reference)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def figure_png(fig) -> bytes:
    """The figure rendered as PNG bytes (Agg)."""
    from .plots import readable

    readable(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def figure_outputs(fig) -> tuple:
    """``fig`` rendered as the ``outputs`` of an ``ipywidgets.Output``: one PNG display_data
    (render first, assign later: a background thread can draw without holding a lock)."""
    png = base64.b64encode(figure_png(fig)).decode("ascii")
    return ({"output_type": "display_data",
             "data": {"image/png": png, "text/plain": f"<{fig.get_label() or 'figure'}>"},
             "metadata": {}},)


def show_figure(output, fig) -> None:
    """Replace what ``output`` (an ``ipywidgets.Output``) shows by ``fig`` as a PNG.

    Setting ``outputs`` directly (rather than ``with output: display(fig)``) works the same
    inside and outside a kernel, so headless tests see exactly what the browser shows.
    """
    output.outputs = figure_outputs(fig)


def numbers_html(rows) -> str:
    """A two-column HTML table of (label, value) rows, values already formatted."""
    cells = "".join(f"<tr><td style='padding-right:1em'>{html.escape(str(k))}</td>"
                    f"<td><b>{html.escape(str(v))}</b></td></tr>" for k, v in rows)
    return f"<table class='sphgpu-numbers'>{cells}</table>"


def _message_html(text: str, kind: str) -> str:
    if not text:
        return ""
    color = {"error": "#b2182b", "note": "#555555"}[kind]
    return f"<span class='sphgpu-message' style='color:{color}'>{html.escape(text)}</span>"


class Panel(w.VBox):
    """Shared parts of a panel view: message line, numbers, Run button and progress bar.

    Subclasses set ``self.model``, call ``super().__init__()``, build their controls, then set
    ``self.children`` using the shared parts below.
    """

    def __init__(self, **kw):
        super().__init__(**kw)
        self.message = w.HTML(layout=w.Layout(min_height="1.5em"))
        self.numbers = w.HTML()
        self.run_button = w.Button(description="Run", button_style="primary", icon="play",
                                   tooltip="run the long computation with these settings")
        self.progress = w.FloatProgress(value=0.0, min=0.0, max=1.0,
                                        layout=w.Layout(width="16em"))
        self.progress_label = w.Label()
        self.last_seconds = 0.0          # wall time of the last handled interaction

    # -- messages ---------------------------------------------------------------------------
    def show_message(self, text: str, kind: str = "error"):
        self.message.value = _message_html(text, kind)

    def report(self, fraction: float, text: str = ""):
        """Progress callback handed to the model: fraction in [0, 1] and a short text."""
        self.progress.value = min(max(float(fraction), 0.0), 1.0)
        self.progress_label.value = text

    # -- event plumbing ---------------------------------------------------------------------
    def guarded(self, handler):
        """Wrap a callback so that an unexpected exception shows in the panel (rather than as
        a traceback in the browser's log) and the call is timed (``last_seconds``)."""

        @functools.wraps(handler)
        def wrapper(*args, **kw):
            t0 = time.perf_counter()
            try:
                return handler(*args, **kw)
            except Exception as exc:  # a bug: show it where the user looks
                self.show_message(f"unexpected error: {type(exc).__name__}: {exc}")
            finally:
                self.last_seconds = time.perf_counter() - t0

        return wrapper

    def observe_values(self, controls, handler):
        """Call ``handler()`` (guarded) whenever one of ``controls`` changes value."""
        h = self.guarded(lambda change: handler())
        for c in controls:
            c.observe(h, names="value")

    def on_run(self, handler):
        """Call ``handler()`` (guarded) on Run; the button is disabled while it works."""

        def clicked(_button):
            self.run_button.disabled = True
            try:
                handler()
            finally:
                self.run_button.disabled = False

        self.run_button.on_click(self.guarded(clicked))

    def run_row(self):
        return w.HBox([self.run_button, self.progress, self.progress_label])

    # -- state shown ------------------------------------------------------------------------
    def _refresh(self):
        """Show the model's state: its message, fresh results when it is live, else the
        results cleared and :meth:`stale_note` (press Run)."""
        m = self.model
        if m.message:
            self._stale()
            self.show_message(m.message)
        elif m.live:
            self.run()
        else:
            self._stale()
            self.show_message(self.stale_note(), "note")

    def _stale(self):
        """Clear the shown results (subclasses with more outputs extend this)."""
        self.figure.outputs = ()
        self.numbers.value = ""
        self.report(0.0, "")

    def stale_note(self) -> str:
        return "press Run to compute"

    def run(self):
        """Run the model (progress in the bar) and show its figure and numbers, or its
        message. Panels with other outputs override this."""
        r = self.model.run(progress=self.report)
        if r is None:
            self._stale()
            self.show_message(self.model.message)
            return
        self.show_message("")
        show_figure(self.figure, self.model.figure())
        self.numbers.value = numbers_html(r.numbers())
