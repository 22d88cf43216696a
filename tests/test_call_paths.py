"""How far a public call wanders through sphgpu's modules (issue 44, "One spine").

A :class:`CallPath` follows one value (the maps of a convolution, the plan of a Monte Carlo
batch) through one public call, with :func:`sys.setprofile`:

* a *step* is a call of a sphgpu function that receives a followed value among its arguments
  (``self`` included); what such a call returns is followed from then on (the items of a
  returned tuple or list too), and so is a NumPy array sharing memory with a followed one (a
  view) and, for a followed object with attributes (a plan), what it holds directly;
* a step's caller is the innermost sphgpu frame below it on its thread (None at the top of
  the call, or at the top of a worker thread); a step whose caller lies in another module is
  a *transition*, which *enters* the callee's module;
* the path is that of one capability (``scope``, the package called): only steps made by its
  modules or into them count (and the top of the call). What another capability does inside
  a call it receives (the SHT plan inside ``sht.map2alm``) is that capability's own path,
  measured on its own; a call back into the scope from there still counts;
* a transition goes *back up* when the callee's module imports the caller's module, directly
  or through others (the static import graph of ``tests/test_architecture.py``): control
  returns to a floor above by a call rather than by returning.

The goals of the issue: at most 4 transitions back up, no module entered more than 3 times.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter

import numpy as np
import pytest

from tests.test_architecture import MODULES, _imports

#: goals of issue 44 for a public call
MAX_BACK_UP = 4
MAX_ENTRIES = 3


def import_closure(graph):
    """{module: every module it imports, directly or through others} of ``graph``
    ({module: modules it imports directly})."""
    out = {}

    def reach(m):
        if m not in out:
            out[m] = set()
            for n in graph.get(m, ()):
                out[m] |= {n} | reach(n)
        return out[m]

    for m in graph:
        reach(m)
    return out


_CLOSURE = None


def sphgpu_closure():
    """The import closure of sphgpu's modules, built once per test process."""
    global _CLOSURE
    if _CLOSURE is None:
        _CLOSURE = import_closure({m: _imports(m, p, MODULES) for m, p in MODULES.items()})
    return _CLOSURE


class CallPath:
    """The steps of one call that follows a value (see the module docstring).

    Parameters
    ----------
    closure : dict
        {module: the modules it imports, transitively}; a module absent from it is above
        nothing and below nothing.
    prefix : str
        Only functions of modules named ``prefix`` or ``prefix.*`` are steps.
    scope : str, optional
        The package whose path is measured (e.g. "sphgpu.convolve"); None: every step.
    """

    def __init__(self, closure, prefix="sphgpu", scope=None):
        self.closure = closure
        self.prefix = prefix
        self.scope = scope
        self.transitions = []          # (caller module or None, callee module, function)
        self._followed = {}            # id -> object (kept alive so ids are not reused)
        self._open = set()             # ids of step frames not yet returned

    # ------------------------------------------------------------------ what is followed
    @staticmethod
    def _within(module, package):
        return module is not None and (module == package or module.startswith(package + "."))

    def _ours(self, module):
        return self._within(module, self.prefix)

    def _in_scope(self, caller, callee):
        return (self.scope is None or caller is None or self._within(caller, self.scope)
                or self._within(callee, self.scope))

    def follow(self, value, held=True):
        """Follow ``value`` (and, with ``held``, the items of a tuple or list, and the
        attributes of an object that has a ``__dict__``)."""
        if value is None or isinstance(value, (bool, int, float, str, type)):
            return
        if id(value) in self._followed:
            return
        self._followed[id(value)] = value
        if not held:
            return
        if isinstance(value, (tuple, list)):
            for v in value:
                self.follow(v, held=False)
        elif hasattr(value, "__dict__") and not isinstance(value, np.ndarray):
            for v in vars(value).values():
                self.follow(v, held=False)

    def is_followed(self, value):
        """Whether ``value`` is followed: by identity, or an array that shares memory with a
        followed array (a view, however many times reshaped: NumPy keeps only the owner as a
        view's ``base``)."""
        if id(value) in self._followed:
            return True
        return isinstance(value, np.ndarray) and any(
            isinstance(f, np.ndarray) and np.may_share_memory(value, f)
            for f in self._followed.values())

    def _takes_followed(self, frame):
        code = frame.f_code
        n = code.co_argcount + code.co_kwonlyargcount
        n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)   # *args, **kwargs
        for name in code.co_varnames[:n]:
            v = frame.f_locals.get(name)
            if isinstance(v, dict) and name == code.co_varnames[n - 1] and code.co_flags & 0x08:
                v = tuple(v.values())
            items = v if isinstance(v, tuple) else (v,)
            if any(self.is_followed(x) for x in items):
                return True
        return False

    # ------------------------------------------------------------------ the profiler
    def _caller(self, frame):
        f = frame.f_back
        while f is not None:
            module = f.f_globals.get("__name__")
            if self._ours(module):
                return module
            f = f.f_back
        return None

    def _profile(self, frame, event, arg):
        if event == "call":
            module = frame.f_globals.get("__name__")
            if not (self._ours(module) and self._takes_followed(frame)):
                return
            caller = self._caller(frame)
            if self._in_scope(caller, module):
                self._open.add(id(frame))
                if caller != module:
                    self.transitions.append((caller, module, frame.f_code.co_name))
        elif event == "return" and id(frame) in self._open:
            self._open.discard(id(frame))
            self.follow(arg)

    def run(self, fn, *args, follow, **kwargs):
        """``fn(*args, **kwargs)`` following ``follow``; returns its result. Threads started
        during the call are followed too (not threads that already run)."""
        self.follow(follow)
        threading.setprofile(self._profile)
        sys.setprofile(self._profile)
        try:
            return fn(*args, **kwargs)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)

    # ------------------------------------------------------------------ the report
    def back_up(self):
        """The transitions (caller, callee, function) whose callee imports the caller."""
        return [t for t in self.transitions
                if t[0] is not None and t[0] in self.closure.get(t[1], ())]

    def entries(self):
        """Counter {module: transitions into it}."""
        return Counter(t[1] for t in self.transitions)

    def report(self):
        lines = [f"{len(self.transitions)} transitions, {len(self.back_up())} back up, "
                 f"entries {dict(self.entries().most_common())}"]
        up = set(self.back_up())
        for caller, callee, fn in self.transitions:
            mark = "  UP " if (caller, callee, fn) in up else "     "
            lines.append(f"{mark}{caller} -> {callee}.{fn}")
        return "\n".join(lines)


# ----------------------------------------------------------------------------- the tracer itself
def _synthetic_modules():
    """Three fake sphgpu modules: ``sphgpu._fake_high`` imports ``sphgpu._fake_low``, which
    imports ``sphgpu._fake_other``; low's ``up`` calls back up into high. Returns the modules
    and their import closure."""
    import types

    high, low, other = (types.ModuleType(f"sphgpu._fake_{n}") for n in ("high", "low", "other"))
    exec("def g(x):\n    return x\n", other.__dict__)
    exec("def low(x):\n    return x + 1\n"
         "def up(x):\n    return HIGH.high(x) + OTHER.g(x)\n", low.__dict__)
    exec("def high(x):\n    return LOW.low(x) * 2\n"
         "def start(x):\n    return LOW.up(x) + LOW.low(x) + LOW.low(0.0)\n", high.__dict__)
    high.LOW, low.HIGH, low.OTHER = low, high, other
    closure = {"sphgpu._fake_high": {"sphgpu._fake_low", "sphgpu._fake_other"},
               "sphgpu._fake_low": {"sphgpu._fake_other"}, "sphgpu._fake_other": set()}
    return high, low, closure


@pytest.mark.parametrize("scope", [None, "sphgpu._fake_high"])
def test_tracer_counts_transitions_back_up_and_entries(scope):
    high, low, closure = _synthetic_modules()
    x = np.arange(3.0)
    path = CallPath(closure, scope=scope)
    out = path.run(high.start, x, follow=x)
    np.testing.assert_array_equal(out, 2 * (x + 1) + x + (x + 1) + 1.0)
    # start(x) -> low.up(x) -> high.high(x) [back up] -> low.low(x); low.up -> other.g(x)
    # (outside the scope: low and other are not high); start -> low.low(x); low.low(0.0)
    # takes nothing followed and is no step
    want = [("sphgpu._fake_high", "start"), ("sphgpu._fake_low", "up"),
            ("sphgpu._fake_high", "high"), ("sphgpu._fake_low", "low"),
            ("sphgpu._fake_other", "g"), ("sphgpu._fake_low", "low")]
    if scope:
        want.remove(("sphgpu._fake_other", "g"))
    assert [(c, f) for _, c, f in path.transitions] == want
    assert path.back_up() == [("sphgpu._fake_low", "sphgpu._fake_high", "high")]
    assert path.entries() == Counter({"sphgpu._fake_low": 3, "sphgpu._fake_high": 2,
                                      **({} if scope else {"sphgpu._fake_other": 1})})


def test_tracer_follows_returned_values_views_and_held_attributes():
    high, low, closure = _synthetic_modules()

    class Holder:
        def __init__(self, a):
            self.a = a

    x = np.arange(4.0)
    path = CallPath(closure)
    # a view of a followed array, and an array held by a followed object, are followed
    path.follow(Holder(x))
    assert path.is_followed(x) and path.is_followed(x[1:].reshape(1, 3)[:, ::2])
    assert not path.is_followed(x.copy()) and not path.is_followed(1.0)
    # low(x) returns a new array: followed, so high(...) on it is a step
    path = CallPath(closure)
    path.run(lambda v: high.high(low.low(v)), x, follow=x)
    assert [f for _, _, f in path.transitions] == ["low", "high", "low"]


def test_import_closure_is_transitive():
    assert import_closure({"a": {"b"}, "b": {"c"}, "c": set()}) == {
        "a": {"b", "c"}, "b": {"c"}, "c": set()}
    closure = sphgpu_closure()
    # the public package imports convolve's entry, which imports what runs it
    assert "sphgpu.convolve.api" in closure["sphgpu"]
    assert "sphgpu._validate" in closure["sphgpu.convolve.api"]


# ----------------------------------------------------------------------------- the public calls
def _convolve_path(method, **cuts):
    from concurrent.futures import ThreadPoolExecutor

    from sphgpu.convolve import RadialKernel, convolve, run

    nside = 8
    m = np.random.default_rng(4).standard_normal(12 * nside * nside)
    k = RadialKernel.gaussian(600.0, 16)
    convolve(m, k, method=method, backend="cpu", **cuts)       # caches and compiles first
    # a fresh harmonic worker thread, started inside the traced call so that it is followed
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(run, "_worker", lambda: pool)
            path = CallPath(sphgpu_closure(), scope="sphgpu.convolve")
            path.run(convolve, m, k, method=method, backend="cpu", follow=m, **cuts)
    finally:
        pool.shutdown(wait=True)
    return path


#: modules a convolution must pass through, per method: the tracer saw the whole call (the
#: harmonic part of a split runs in a worker thread)
_THROUGH = {"harmonic": {"sphgpu.convolve.harmonic"}, "realspace": {"sphgpu.convolve._cpu"},
            "split": {"sphgpu.convolve.harmonic", "sphgpu.convolve._cpu"}}


@pytest.mark.parametrize("method, cuts", [("harmonic", {}), ("realspace", {"theta_cut": 0.6}),
                                          ("split", {"l_cut": 8, "theta_cut": 0.6})])
def test_convolve_call_path(method, cuts):
    # before issue 44 (split): 21 transitions, 1 back up (run.with_mask calling api's lambda),
    # sphgpu._validate entered 9 times
    path = _convolve_path(method, **cuts)
    print(path.report())
    assert _THROUGH[method] <= set(path.entries()), path.report()
    assert len(path.back_up()) <= MAX_BACK_UP, path.report()
    assert max(path.entries().values()) <= MAX_ENTRIES, path.report()


def test_monte_carlo_batch_call_path():
    from sphgpu.sims import MonteCarlo, simulate_batch

    ell = np.arange(17)
    cl = 1.0 / (ell + 2.0) ** 2
    mc = MonteCarlo([cl, 0.3 * cl, 0.05 * cl, 0.1 * cl], 4, 8, pol=True, noise_sigma=0.1,
                    seed=3, iter=1, backend="cpu")
    simulate_batch(mc.plan, [0, 1], "cpu")
    path = CallPath(sphgpu_closure(), scope="sphgpu.sims")
    path.run(simulate_batch, mc.plan, [0, 1], "cpu", follow=mc.plan)
    print(path.report())
    # the batch runs on the SimulationPlan's transform plan (sphgpu.SHT)
    assert "sphgpu.sht.plan" in path.entries(), path.report()
    assert len(path.back_up()) <= MAX_BACK_UP, path.report()
    assert max(path.entries().values()) <= MAX_ENTRIES, path.report()
