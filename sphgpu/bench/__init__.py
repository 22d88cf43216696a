"""Timing harness shared by benchmarks/, notebooks and the CLI."""

from .timing import (Ratio, Timing, machine_info, ratio, run_sizes, time_call,
                     time_interleaved)

__all__ = ["Timing", "Ratio", "ratio", "time_call", "time_interleaved", "machine_info",
           "run_sizes"]
