#!/usr/bin/env python
"""Generate ``planck2018_cl.txt``: lensed CMB power spectra from CAMB.

This is a one-off maintenance script.  It is run by hand when the shipped
table needs to be rebuilt; nothing in the package or its tests calls it, and
the package itself never runs CAMB or downloads anything.

Regenerate (from the repository root, in an environment with ``camb``)::

    python data/make_planck2018_cl.py

Output columns: ell, C_ell^TT, C_ell^EE, C_ell^BB, C_ell^TE for
ell = 0 .. LMAX.  Values are raw C_ell (not ell(ell+1)C_ell/2pi) in muK^2,
lensed, scalar modes only (r = 0).  ell = 0 and 1 are identically zero.

Cosmology: flat base-LCDM with the Planck 2018 TT,TE,EE+lowE+lensing
parameters of Planck Collaboration 2018 results VI, A&A 641, A6 (2020),
Table 2.  Anything not listed below is left at the CAMB default for the
installed version; the header of the output file records the values that
were actually used.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import os
import sys
import time

import numpy as np

import camb

LMAX = 8192

# Planck 2018 VI, Table 2, column "TT,TE,EE+lowE+lensing".
COSMOLOGY = {
    "H0": 67.36,  # km/s/Mpc
    "ombh2": 0.02237,
    "omch2": 0.1200,
    "omk": 0.0,
    "tau": 0.0544,
    "mnu": 0.06,  # eV, sum of neutrino masses (one massive eigenstate)
    "nnu": 3.046,  # effective number of neutrino species, Planck 2018 baseline
}
PRIMORDIAL = {
    "As": 2.100e-9,  # 10^9 As = 2.100, i.e. ln(10^10 As) = 3.044
    "ns": 0.9649,
    "r": 0.0,
}

# Column order returned by CAMB for CMB spectra.
SPECTRA = ("TT", "EE", "BB", "TE")


def lens_accuracy_for(lmax: int) -> float:
    """Lensing-potential accuracy setting used for a given output lmax.

    Same rule as CAMB 2.0's automatic choice, written out so the value does
    not silently change with a future CAMB default.  At lmax = 8192 lower
    settings (1, 2, 4) change the lensed high-ell tail by 50%, 19% and 3%
    respectively, while going from this value to 20 changes it by < 0.1%.
    """
    return max(4.0, (lmax - 1500.0) / 500.0)


def build_params(lmax: int) -> camb.CAMBparams:
    pars = camb.CAMBparams()
    pars.set_cosmology(**COSMOLOGY)
    pars.InitPower.set_params(**PRIMORDIAL)
    pars.WantTensors = False
    pars.set_for_lmax(lmax, lens_potential_accuracy=lens_accuracy_for(lmax))
    return pars


def compute_cls(pars: camb.CAMBparams, lmax: int) -> np.ndarray:
    """Return an array of shape (lmax+1, 4): lensed TT, EE, BB, TE C_ell in muK^2."""
    results = camb.get_results(pars)
    powers = results.get_cmb_power_spectra(
        pars, lmax=lmax, spectra=["total"], CMB_unit="muK", raw_cl=True
    )
    cls = np.array(powers["total"], dtype=np.float64)
    if cls.shape != (lmax + 1, 4):
        raise RuntimeError(f"CAMB returned shape {cls.shape}, expected {(lmax + 1, 4)}")
    cls[:2, :] = 0.0
    if not np.all(np.isfinite(cls)):
        raise RuntimeError("CAMB returned non-finite C_ell")
    if np.any(cls[2:, 0] <= 0):
        raise RuntimeError("CAMB returned non-positive TT C_ell")
    return cls


def make_header(pars: camb.CAMBparams, lmax: int, command: str, seconds: float) -> str:
    today = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d")
    lines = [
        "Planck 2018 base-LCDM lensed CMB angular power spectra computed with CAMB",
        "Cosmology: Planck Collaboration 2018 results VI, A&A 641, A6 (2020), Table 2,",
        "  column TT,TE,EE+lowE+lensing",
        f"  H0 = {COSMOLOGY['H0']} km/s/Mpc",
        f"  ombh2 = {COSMOLOGY['ombh2']}",
        f"  omch2 = {COSMOLOGY['omch2']:.4f}",
        f"  omk = {COSMOLOGY['omk']}",
        f"  tau = {COSMOLOGY['tau']}",
        f"  As = {PRIMORDIAL['As']:.4e}  (ln(10^10 As) = {math.log(1e10 * PRIMORDIAL['As']):.4f})",
        f"  ns = {PRIMORDIAL['ns']}",
        f"  r = {PRIMORDIAL['r']}  (no tensor modes)",
        f"  mnu = {COSMOLOGY['mnu']} eV  (num_nu_massive = {pars.num_nu_massive}, omnuh2 = {pars.omnuh2:.6e})",
        f"  N_eff = {pars.N_eff:.4f}  (nnu = {COSMOLOGY['nnu']})",
        f"  YHe = {pars.YHe:.6f}  (CAMB BBN consistency)",
        f"  T_CMB = {pars.TCMB} K",
        f"CAMB version: {camb.__version__}  (Lewis, Challinor & Lasenby 2000, ApJ 538, 473)",
        f"CAMB settings: set_for_lmax({lmax}, lens_potential_accuracy={lens_accuracy_for(lmax):.6g}),"
        f" max_l = {pars.max_l}, max_eta_k = {pars.max_eta_k:.6g}, NonLinear = {pars.NonLinear},"
        f" halofit_version = {pars.NonLinearModel.halofit_version},"
        f" AccuracyBoost = {pars.Accuracy.AccuracyBoost}",
        "Spectra: lensed scalar ('total' with r = 0), get_cmb_power_spectra(CMB_unit='muK', raw_cl=True)",
        "Units: raw C_ell in muK^2 (NOT D_ell = ell(ell+1)C_ell/2pi); ell = 0 and 1 set to 0",
        f"Date made: {today} (UTC); CAMB run time {seconds:.1f} s",
        f"Command: {command}",
        "Columns: ell TT EE BB TE",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--lmax", type=int, default=LMAX, help=f"maximum multipole (default {LMAX})")
    parser.add_argument(
        "--output",
        default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "planck2018_cl.txt"),
        help="output path (default: planck2018_cl.txt next to this script)",
    )
    args = parser.parse_args(argv)
    if args.lmax < 2:
        parser.error("--lmax must be at least 2")

    command = "python " + " ".join(
        [os.path.relpath(os.path.abspath(sys.argv[0]))] + (sys.argv[1:] if argv is None else list(argv))
    )

    pars = build_params(args.lmax)
    t0 = time.perf_counter()
    cls = compute_cls(pars, args.lmax)
    seconds = time.perf_counter() - t0

    ell = np.arange(args.lmax + 1, dtype=np.float64)
    table = np.column_stack([ell, cls])
    np.savetxt(
        args.output,
        table,
        fmt=["%d"] + ["%.8e"] * len(SPECTRA),
        header=make_header(pars, args.lmax, command, seconds),
    )

    dl = ell * (ell + 1) * cls[:, 0] / (2 * np.pi)
    window = slice(100, 400)
    peak = int(np.argmax(dl[window])) + window.start
    print(f"CAMB {camb.__version__}: {seconds:.1f} s; wrote {args.output} "
          f"({os.path.getsize(args.output)} bytes)")
    print(f"first TT acoustic peak: ell = {peak}, D_ell = {dl[peak]:.1f} muK^2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
