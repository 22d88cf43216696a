"""The browser tests' waits (no browser needed): limits stretch with the machine's load, and a
notebook is waited on for as long as it makes progress."""

import itertools
import time

import pytest

from tests.browser import test_lab_browser as lab


def test_limits_scale_with_the_load(monkeypatch):
    monkeypatch.setattr(lab.os, "getloadavg", lambda: (8.0, 0.0, 0.0))
    monkeypatch.setattr(lab.os, "cpu_count", lambda: 2)
    assert lab.load_factor() == 4.0 and lab.scaled(45) == 180
    monkeypatch.setattr(lab.os, "getloadavg", lambda: (0.5, 0.0, 0.0))
    assert lab.scaled(45) == 45                       # an idle machine keeps the base limit


def test_work_that_progresses_is_waited_for_past_the_limit(monkeypatch):
    monkeypatch.setattr(lab, "load_factor", lambda: 1.0)
    counter = itertools.count()
    t0 = time.monotonic()
    # the predicate turns true after 1.2 s; each poll makes progress; the limit is 0.5 s
    assert lab._wait_for(lambda: time.monotonic() - t0 > 1.2, 0.5, "work",
                         progress=lambda: next(counter))
    with pytest.raises(AssertionError, match="without progress"):
        lab._wait_for(lambda: False, 0.5, "stalled work", progress=lambda: 0)
    with pytest.raises(AssertionError, match="timed out"):
        lab._wait_for(lambda: False, 0.3, "anything")
