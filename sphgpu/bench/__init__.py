"""Timing harness shared by benchmarks/, notebooks and the CLI."""

from .timing import Timing, machine_info, run_sizes, time_call

__all__ = ["Timing", "time_call", "machine_info", "run_sizes"]
