"""Wall-clock timing with warm-up and device synchronisation, and a description of the machine.

GPU work is asynchronous: ``time_call(..., sync=...)`` synchronises the device before reading
the clock at both ends, so a timing covers the whole computation. Medians are reported.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from dataclasses import dataclass, field
from importlib import metadata

from .._atomic import atomic_write

__all__ = ["Timing", "Ratio", "ratio", "time_call", "time_interleaved", "machine_info", "run_sizes"]


@dataclass
class Timing:
    """Seconds of each timed repetition (after warm-up); ``median`` and ``best`` summarise.

    Parameters
    ----------
    seconds : list of float, optional
        Wall-clock seconds of each repetition.
    """

    seconds: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        """Median of the repetitions, seconds."""
        return statistics.median(self.seconds)

    @property
    def best(self) -> float:
        """Fastest repetition, seconds."""
        return min(self.seconds)

    @property
    def worst(self) -> float:
        """Slowest repetition, seconds."""
        return max(self.seconds)

    def as_dict(self) -> dict:
        """The summary for a benchmark JSON file.

        Returns
        -------
        dict
            ``median_s`` and ``best_s`` (float, seconds) and ``repeats`` (int).
        """
        return {"median_s": self.median, "best_s": self.best, "repeats": len(self.seconds)}


def time_call(fn, *, repeat: int = 5, warmup: int = 1, sync=None, max_seconds: float = 30.0):
    """Run ``fn()`` ``warmup`` times untimed, then up to ``repeat`` timed times (fewer if the
    timed runs pass ``max_seconds`` in total).

    Parameters
    ----------
    fn : callable
        Called with no arguments.
    repeat : int, optional
        Most timed runs.
    warmup : int, optional
        Untimed runs first (compilation, caches).
    sync : callable, optional
        Called before each clock read (e.g. a device synchronise).
    max_seconds : float, optional
        Stop repeating once the timed runs add up to more than this.

    Returns
    -------
    Timing
        The timed repetitions.
    """
    sync = sync or (lambda: None)
    for _ in range(warmup):
        fn()
    sync()
    t = Timing()
    total = 0.0
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        dt = time.perf_counter() - t0
        t.seconds.append(dt)
        total += dt
        if total > max_seconds:
            break
    return t


@dataclass
class Ratio:
    """A ratio of two timed calls (e.g. a speedup, baseline / candidate) from repetitions timed
    in pairs, one of each back to back, so that a load that comes and goes slows both sides of
    a pair alike and shows up as spread rather than as a wrong ratio.

    Parameters
    ----------
    values : list of float
        baseline seconds / candidate seconds of each pair.
    """

    values: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        """Median over the pairs."""
        return statistics.median(self.values)

    @property
    def low(self) -> float:
        """Smallest ratio of a pair."""
        return min(self.values)

    @property
    def high(self) -> float:
        """Largest ratio of a pair."""
        return max(self.values)

    @property
    def n(self) -> int:
        """Number of pairs."""
        return len(self.values)

    def text(self, digits: int = 3) -> str:
        """The median and the spread as text: "2.31x (2.1x to 2.5x over 5 pairs)"; a range
        of one value says it once ("all 5 pairs 2.3x"), and one pair says it has no spread.

        Parameters
        ----------
        digits : int, optional
            Significant digits of each number.

        Returns
        -------
        str
        """
        med = f"{self.median:.{digits}g}x"
        if self.n == 1:
            return f"{med} (one pair: no spread)"
        lo, hi = f"{self.low:.{digits}g}x", f"{self.high:.{digits}g}x"
        spread = f"all {self.n} pairs {lo}" if lo == hi else f"{lo} to {hi} over {self.n} pairs"
        return f"{med} ({spread})"


def time_interleaved(fns, *, repeat: int = 5, warmup: int = 1, sync=None,
                     max_seconds: float = 30.0, progress=None) -> dict:
    """Time several calls in rounds, each round calling every one once (in the given order),
    after ``warmup`` untimed rounds: on a shared machine a slow spell then falls on every
    call of a round alike, so their ratios (:func:`ratio`) stay meaningful.

    Parameters
    ----------
    fns : dict of str to callable
        The calls, by name; each called with no arguments.
    repeat : int, optional
        Most timed rounds (at least one is always timed).
    warmup : int, optional
        Untimed rounds first (compilation, caches).
    sync : callable, optional
        Called before each clock read (e.g. a device synchronise).
    max_seconds : float, optional
        Stop after the round in which the timed calls add up to more than this.
    progress : callable(fraction, text), optional
        Called before each call, with the fraction of the most rounds done.

    Returns
    -------
    dict of str to Timing
        One Timing per name, each with one repetition per timed round.
    """
    sync = sync or (lambda: None)
    progress = progress or (lambda f, t="": None)
    rounds = warmup + max(1, repeat)
    out = {name: Timing() for name in fns}
    total = 0.0
    for r in range(rounds):
        timed = r >= warmup
        for i, (name, fn) in enumerate(fns.items()):
            what = (f"round {r - warmup + 1} of {max(1, repeat)}" if timed
                    else f"warm-up {r + 1} of {warmup}")
            progress((r + i / len(fns)) / rounds, f"{what}: {name}")
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            dt = time.perf_counter() - t0
            if timed:
                out[name].seconds.append(dt)
                total += dt
        if timed and total > max_seconds:
            break
    progress(1.0, "timed")
    return out


def ratio(numerator: Timing, denominator: Timing) -> Ratio:
    """Per-round ratios of two Timings of :func:`time_interleaved` (e.g. all-harmonic / plan:
    the speedup).

    Parameters
    ----------
    numerator, denominator : Timing
        Timed in the same rounds (equal numbers of repetitions).

    Returns
    -------
    Ratio

    Raises
    ------
    ValueError
        If the repetitions differ in number or a denominator time is not positive.
    """
    a, b = numerator.seconds, denominator.seconds
    if len(a) != len(b) or not a:
        raise ValueError(f"numerator and denominator must have the same number (>= 1) of "
                         f"repetitions, got {len(a)} and {len(b)}")
    if min(b) <= 0:
        raise ValueError("denominator times must be positive")
    return Ratio([x / y for x, y in zip(a, b)])


def _version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict:
    """Host, GPU and package versions, for benchmark JSON files.

    Returns
    -------
    dict
        ``host``, ``platform``, ``python``, ``cpu_count``, ``versions`` (package: version or
        None) and ``gpu`` (its name, or why there is none); with a GPU also
        ``gpu_compute_capability`` and ``gpu_multiprocessors``.
    """
    info = {
        "host": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "versions": {n: _version(n) for n in ("sphgpu", "numpy", "numba", "numba-cuda", "ducc0",
                                               "healpy", "cupy-cuda13x", "cupy-cuda12x")},
    }
    try:
        from numba import cuda

        if cuda.is_available():
            dev = cuda.get_current_device()
            info["gpu"] = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
            info["gpu_compute_capability"] = list(dev.compute_capability)
            info["gpu_multiprocessors"] = dev.MULTIPROCESSOR_COUNT
    except Exception as exc:  # no GPU: record why, the CPU numbers still stand
        info["gpu"] = f"none ({exc.__class__.__name__})"
    return info


def run_sizes(sizes, bench, info, path, **extra):
    """Run ``bench`` for each size, writing the results after every one.

    Each row is stamped with the GPU and host core count; the JSON at ``path``
    (``{machine, **extra, results, date}``) is rewritten after every row, so a run cut short
    keeps the sizes it finished.

    Parameters
    ----------
    sizes : iterable
        The sizes, each passed to ``bench``.
    bench : callable
        ``bench(size)`` returns one row, a dict that JSON can write.
    info : dict
        The machine, from :func:`machine_info`.
    path : str or os.PathLike
        The JSON file written.
    **extra
        More top-level entries of the JSON.

    Returns
    -------
    list of dict
        The rows, in the order of ``sizes``.
    """
    results = []
    for size in sizes:
        row = bench(size)
        row["gpu"], row["cpu_count"] = info.get("gpu"), info["cpu_count"]
        results.append(row)
        with atomic_write(path) as tmp, open(tmp, "w") as f:    # a killed run keeps the last
            json.dump({"machine": info, **extra, "results": results,
                       "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}, f,
                      indent=1)
    return results
