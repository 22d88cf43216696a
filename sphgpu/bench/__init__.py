"""Timing harness shared by benchmarks/, notebooks and the CLI."""

from .timing import Timing, machine_info, time_call

__all__ = ["Timing", "time_call", "machine_info"]
