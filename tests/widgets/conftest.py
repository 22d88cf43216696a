"""Helpers for the headless panel tests: what a panel shows, and how long an interaction took."""

import base64
import time

import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("matplotlib")

#: Interactions that do not press Run must answer within this many seconds at Binder sizes
#: (issue 6).
INTERACTION_BUDGET_S = 1.0


def png(output):
    """The PNG bytes an Output widget shows (None when it shows nothing)."""
    if not output.outputs:
        return None
    data = base64.b64decode(output.outputs[0]["data"]["image/png"])
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return data


def timed(action):
    """Run ``action()``; return the smaller of its wall and CPU seconds.

    The budget is about the work a panel does: on this shared two-core machine other test
    workers can stretch wall time, never the process's own CPU time (small sizes here run
    no long multi-threaded work, so CPU time does not overcount wall time either).
    """
    w0, c0 = time.perf_counter(), time.process_time()
    action()
    return min(time.perf_counter() - w0, time.process_time() - c0)


@pytest.fixture
def no_gpu(monkeypatch):
    """Make the CUDA backend unavailable, as on Binder (the tests otherwise see Numba's
    simulator as a GPU)."""
    from sphgpu import backends

    monkeypatch.setattr(backends, "_cuda_status", lambda: (False, "no CUDA GPU (test)"))
