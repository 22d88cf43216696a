"""Convolution of maps on the sphere with radially symmetric kernels, and the kernel split of
Sutter, Wandelt & Elsner: a compact real-space part (ARKCoS-like ring algorithm, GPU or CPU)
plus a truncated harmonic part, fitted by weighted least squares, with an error model, cost
models and an optimizer that picks the cheapest plan for an error bound.

Convention: convolving m with K multiplies its a_lm by K_l; the profile is
K(theta) = sum_l (2l+1)/(4 pi) K_l P_l(cos theta); with K_l = b_l this is healpy's smoothing
(with ``iter=0``). See :mod:`sphgpu.convolve.kernels`.
"""

from . import _declare  # noqa: F401  (how this capability plugs in: sphgpu.backends)
from .api import METHODS, convolve
from .calibrate import (AlphaCalibration, MeasuredError, PlanMeasurement, calibrate_alpha,
                        measure_error, measure_plan, white_noise)
from .cost import CostModel, MeasuredCostModel, PaperCostModel
from .kernels import ARCMIN, CompactKernel, RadialKernel
from .optimize import (FIT_PRESETS, Candidate, Plan, default_theta_grid, optimize_split,
                       plan_for_cuts)
from .split import KernelSplit, SplitFitter, clear_fit_cache, split_kernel

__all__ = ["RadialKernel", "CompactKernel", "convolve", "split_kernel", "KernelSplit",
           "SplitFitter", "optimize_split", "Plan", "Candidate", "default_theta_grid",
           "FIT_PRESETS", "CostModel", "PaperCostModel", "MeasuredCostModel", "calibrate_alpha",
           "AlphaCalibration", "measure_error", "MeasuredError", "white_noise", "METHODS",
           "ARCMIN", "plan_for_cuts", "measure_plan", "PlanMeasurement", "clear_fit_cache"]
