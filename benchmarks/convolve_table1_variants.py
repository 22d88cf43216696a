"""sphgpu's optimizer against the paper's Table 1: the readings of the paper's text tried, each
at Planck size (nside 2048, lmax 4096, C_l^input = 1, alpha 5, bound 1e-5, the paper's cost
model Eqs. 7-8, the paper's theta_cut in 30' steps up to 600').

The paper (Sutter, Wandelt & Elsner, Sect. 2) fixes the weights (2l+1), the rows (l = 0..lmax),
the joint system A^T W A x = A^T W K with harmonic columns delta_ij for j <= l_cut, the SVD with
singular values below 1e-6 dropped, Eq. 6 and the search (linear in theta_cut, binary in l_cut).
It leaves open the real-space unknowns ("z_cut = lmax - l_{cos theta_cut}" elements of a
Legendre transform operator P) and the scale of the columns, on which a threshold of 1e-6
depends, and it does not say in words whether theta_cut is the support's radius or its full
width. Its numbers say full width: "half the ... interpolation nodes within the first 1/16 of
the available support; in this case, within 7.5'" for theta_cut = 240' (7.5' = 120'/16), and
theta_cut ~ 6 deg kernels in 30 latitude bands of 6 deg, a band being "twice the kernel width".
sphgpu's theta_cut is the radius; ``PaperCostModel(theta_cut_is="diameter")`` (the default)
feeds Eq. 7 twice it. The scans name their reading:

* full scans (optimum and the error at each of Table 1's pairs), theta_cut = full width:
  - ``default_diameter``: sphgpu's default fit (below); reproduces Table 1 (all of 7..15'
    within 11%) and finds no useful split at 6' or 5', as the paper;
  - ``paper_preset_diameter``: ``fit="paper"`` (below);
  - ``default_diameter_wmap7_lensed`` / ``..._unlensed``: ``default_diameter`` with the WMAP7
    C_l (``--wmap7``, below);
* full scans, theta_cut = radius (the earlier reading: optimum cuts about half the paper's):
  - ``default``: sphgpu's fit (cubic splines in 1 - cos theta at 3 knots per pi/lmax, rows to
    4 lmax with target 0 above lmax, threshold 1e-9 on unit columns, ripple-aware search);
  - ``paper_preset``: ``fit="paper"`` (splines at 1 knot per pi/lmax, rows to lmax, 1e-6, the
    paper's plain bisection);
  - ``default_rows_to_lmax``: the default with rows only to lmax (as the paper's A);
  - ``default_sqrt_Dl``: the default with K_l = sqrt(l(l+1) C_l / 2 pi) B_l, i.e. sqrt of
    D_l instead of C_l (a hypothesis about the paper's kernel, not its text: CAMB writes D_l);
  - ``default_wmap7_lensed`` / ``default_wmap7_unlensed``: the default with a WMAP 7-year C_l
    (``--wmap7 DIR`` holding wmap7_lensed_tt.npy / wmap7_unlensed_tt.npy, raw C_l in muK^2
    from l = 0; the run in results/ used CAMB 2.0.5 with the WMAP7+BAO+H0 parameters of
    Komatsu et al. 2011, Table 1: H0 70.4, ombh2 0.02255, omch2 0.1126, tau 0.087, ns 0.968,
    As 2.43e-9 at pivot 0.002/Mpc, lens_potential_accuracy 1; CAMB is not a dependency);
* the error at Table 1's pairs only, theta_cut = radius (a full scan is slow and pointless when
  that error is far above the bound or saw-toothed in l_cut):
  - ``gl_reduced_unit``: real-space unknowns = kernel samples at the Gauss-Legendre nodes of an
    lmax-point grid inside theta_cut (the reading z_cut = lmax - l_{cos theta_cut}), harmonic
    unknowns eliminated, unit columns, 1e-6;
  - ``gl_joint_unit``: the same samples, the joint system (3) with unit columns, 1e-6;
  - ``gl_joint_quadrature``: the joint system with P_lj = 2 pi w_j P_l(z_j) (Gauss weights),
    1e-6 of the largest singular value;
  - ``uniform_z_hat``: z_cut = lmax (1 - cos theta_cut) unknowns, linear in z on knots 1/lmax
    apart (the other reading), exact transforms, joint system, unit columns, 1e-6;
  - ``{gl,ring,theta}_joint_raw_abs``: samples with P_lj = P_l(z_j) as they are (no weights,
    no column scaling) at the Gauss nodes, at the nside-2048 HEALPix ring latitudes, or at
    theta = j pi / lmax, joint system, eigenvalues below 1e-6 (absolute) dropped; the relative
    1e-6 drops the low multipoles of the harmonic part instead (errors 0.3-1.2). Near 1e-5
    at the pairs, but the error saw-tooths in l_cut (period ~200, between ~3e-6 and ~4e-5)
    instead of falling with it, so there is no smallest valid l_cut to speak of.

Also the tail argument behind "no valid split below 7'": the multipole above which the kernel
holds less than (bound / alpha)^2 of its power.

    python benchmarks/convolve_table1_variants.py [--wmap7 DIR] [--only NAME,...]
        [--out benchmarks/results]

writes convolve_table1_variants.json (CPU only; a few minutes). ``--only`` recomputes the
named scans / pair variants and merges them into an existing JSON in --out.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

from sphgpu.bench import machine_info
from sphgpu.convolve import ARCMIN, PaperCostModel, RadialKernel, SplitFitter, optimize_split
from sphgpu.convolve.kernels import _legendre_transform_pieces
from sphgpu.data import planck2018_cl

TABLE1 = {7: (1158, 390), 8: (1070, 390), 9: (1055, 360), 10: (979, 360), 11: (1014, 330),
          12: (960, 330), 13: (940, 330), 14: (929, 300), 15: (961, 270)}
LMAX, NSIDE, BOUND, ALPHA = 4096, 2048, 1e-5, 5.0
#: The paper's theta_cut values (30' steps), arcmin; each reading turns them into radii.
PAPER_THETAS = np.arange(30, 601, 30)
SCAN_FWHMS = (6, 7, 10, 15)


def legendre_at(lmax, z):
    """P_l(z) for l = 0..lmax, shape (lmax+1, len(z)) (three-term recurrence)."""
    z = np.asarray(z, dtype=np.float64)
    out = np.empty((lmax + 1, z.size))
    out[0] = 1.0
    if lmax > 0:
        out[1] = z
    for l in range(1, lmax):
        out[l + 1] = ((2 * l + 1) * z * out[l] - l * out[l - 1]) / (l + 1)
    return out


def sample_columns(kind, theta):
    """Columns [P x]_l, l = 0..lmax, of the real-space unknowns of a variant."""
    if kind == "gl":
        z, w = np.polynomial.legendre.leggauss(LMAX)
        sel = z >= math.cos(theta)
        return 2 * math.pi * w[sel] * legendre_at(LMAX, z[sel])
    if kind in ("gl_raw", "ring_raw", "theta_raw"):
        if kind == "gl_raw":
            z = np.polynomial.legendre.leggauss(LMAX)[0]
        elif kind == "ring_raw":                       # HEALPix nside 2048 ring latitudes
            i = np.arange(1, 4 * NSIDE)
            z = np.where(i < NSIDE, 1 - i ** 2 / (3.0 * NSIDE ** 2),
                         4.0 / 3 - 2.0 * i / (3 * NSIDE))
        else:
            z = np.cos(np.arange(LMAX) * math.pi / LMAX)
        return legendre_at(LMAX, z[z >= math.cos(theta)])
    if kind == "uniform_z_hat":
        n = int(math.floor(LMAX * (1 - math.cos(theta))))
        u_edges = np.arange(n + 1) / LMAX

        def vals(i, u):
            s = (u - u_edges[i]) * LMAX
            M = np.zeros((u.size, n))
            M[:, i] = 1 - s
            if i + 1 < n:
                M[:, i + 1] = s
            return M

        return _legendre_transform_pieces(u_edges, vals, LMAX).reshape(LMAX + 1, n)
    raise ValueError(kind)


def relative_rms(kernel, P, l_cut, system, scale, rcond=1e-6, absolute=False):
    """sigma_rms / sqrt(power) of the least-squares split with real-space columns P."""
    y = kernel.bl
    w = 2.0 * np.arange(LMAX + 1) + 1.0
    sw = np.sqrt(w)
    if system == "joint":
        A = np.hstack([np.eye(LMAX + 1)[:, : l_cut + 1], P])
    else:
        A = P.copy()
        A[: l_cut + 1] = 0.0
    M = A * sw[:, None]
    d = np.sqrt(np.sum(M * M, axis=0)) if scale == "unit" else np.ones(M.shape[1])
    d[d == 0] = 1.0
    M = M / d
    lam, V = np.linalg.eigh(M.T @ M)
    keep = lam > (rcond if absolute else rcond * lam.max())
    x = V[:, keep] @ ((V[:, keep].T @ (M.T @ (y * sw))) / lam[keep])
    r = M @ x / sw - y
    if system != "joint":
        r[: l_cut + 1] = 0.0
    return math.sqrt(np.sum(w * r * r) / np.sum(w * y * y))


def scan(name, make_fitter, fwhms, search, reading, log):
    """Full paper-cost-model scans; theta_cut_arcmin and the keys of smallest_l_cut_per_theta
    are the paper's theta_cut (full width for ``reading="diameter"``, radius for "radius")."""
    cm = PaperCostModel(theta_cut_is=reading)
    grid = cm.support_radius(PAPER_THETAS * ARCMIN)
    out = {}
    for fw in fwhms:
        f = make_fitter(fw, float(grid.max()))
        t0 = time.perf_counter()
        p = optimize_split(f.kernel, nside=NSIDE, cost_model=cm, theta_grid=grid,
                           fitter=f, prune=False, search=search)

        def paper(theta):
            return round(float(cm.paper_theta_cut(theta)) / ARCMIN)

        lmin = {paper(c.theta_cut): c.l_cut for c in p.candidates}
        chosen = [c for c in p.candidates if c.method == p.method and c.l_cut == p.l_cut]
        theta = paper(min(chosen, key=lambda c: c.time_total).theta_cut) if chosen else 0
        row = {"reading": reading, "method": p.method, "l_cut": p.l_cut,
               "theta_cut_arcmin": theta, "speedup": p.speedup, "predicted_error":
               p.predicted_error, "smallest_l_cut_per_theta": lmin,
               "seconds": time.perf_counter() - t0}
        if fw in TABLE1:
            lc, th = TABLE1[fw]
            row["error_at_paper_pair"] = f.error(lc, float(cm.support_radius(th * ARCMIN)))
        out[fw] = row
        log(f"{name:24s} FWHM {fw:2d}': optimum l_cut {row['l_cut']:5d}, theta_cut "
            f"{row['theta_cut_arcmin']:4d}' (speedup {p.speedup:5.1f}); paper "
            f"{TABLE1.get(fw)}; error at the paper's pair "
            f"{row.get('error_at_paper_pair', float('nan')):.2e}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--wmap7", metavar="DIR", help="folder with wmap7_lensed_tt.npy and "
                    "wmap7_unlensed_tt.npy (raw C_l, muK^2, from l = 0)")
    ap.add_argument("--only", metavar="NAMES", help="comma-separated scans / pair variants to "
                    "recompute, merged into an existing convolve_table1_variants.json")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None

    def log(msg):
        print(msg, flush=True)

    def wanted(name):
        return only is None or name in only

    path = os.path.join(args.out, "convolve_table1_variants.json")
    res = {"scans": {}, "at_paper_pairs": {}, "tail": {}}
    if only is not None and os.path.exists(path):
        with open(path) as f:
            res.update(json.load(f))
        for rows in res["scans"].values():      # scans from before "reading" existed
            for row in rows.values():
                row.setdefault("reading", "radius")
    res.update({"machine": machine_info(), "table1": {str(k): v for k, v in TABLE1.items()},
                "settings": {"nside": NSIDE, "lmax": LMAX, "bound": BOUND, "alpha": ALPHA,
                             "paper_theta_cut_grid_arcmin": [int(t) for t in PAPER_THETAS],
                             "cost_model": {r: PaperCostModel(theta_cut_is=r).describe()
                                            for r in PaperCostModel.THETA_CUT_READINGS}}})
    res["settings"].pop("grid_arcmin", None)
    all_fwhms = tuple(range(5, 16))
    scans = {
        "default_diameter": (lambda fw, g: SplitFitter(RadialKernel.cmb(fw, LMAX), g), "ripple",
                             "diameter", all_fwhms),
        "paper_preset_diameter": (lambda fw, g: SplitFitter(RadialKernel.cmb(fw, LMAX), g,
                                                            fit="paper"),
                                  "bisect", "diameter", SCAN_FWHMS),
        "default": (lambda fw, g: SplitFitter(RadialKernel.cmb(fw, LMAX), g), "ripple",
                    "radius", SCAN_FWHMS),
        "paper_preset": (lambda fw, g: SplitFitter(RadialKernel.cmb(fw, LMAX), g, fit="paper"),
                         "bisect", "radius", SCAN_FWHMS),
        "default_rows_to_lmax": (lambda fw, g: SplitFitter(RadialKernel.cmb(fw, LMAX), g,
                                                           l_fit=LMAX),
                                 "ripple", "radius", SCAN_FWHMS),
    }
    ell = np.arange(LMAX + 1)
    d_l = ell * (ell + 1) * planck2018_cl(LMAX) / (2 * math.pi)
    scans["default_sqrt_Dl"] = (lambda fw, g: SplitFitter(RadialKernel.cmb(fw, LMAX, cl=d_l), g),
                                "ripple", "radius", SCAN_FWHMS)
    if args.wmap7:
        for which in ("lensed", "unlensed"):
            cl = np.load(os.path.join(args.wmap7, f"wmap7_{which}_tt.npy"))
            scans[f"default_wmap7_{which}"] = (
                lambda fw, g, cl=cl: SplitFitter(RadialKernel.cmb(fw, LMAX, cl=cl), g), "ripple",
                "radius", SCAN_FWHMS)
            scans[f"default_diameter_wmap7_{which}"] = (
                lambda fw, g, cl=cl: SplitFitter(RadialKernel.cmb(fw, LMAX, cl=cl), g), "ripple",
                "diameter", all_fwhms)
    for name, (make, search, reading, fwhms) in scans.items():
        if wanted(name):
            res["scans"][name] = scan(name, make, fwhms, search, reading, log)

    # name: (columns, system, column scale, absolute threshold); theta_cut read as the radius
    variants = {"gl_reduced_unit": ("gl", "reduced", "unit", False),
                "gl_joint_unit": ("gl", "joint", "unit", False),
                "gl_joint_quadrature": ("gl", "joint", "raw", False),
                "uniform_z_hat": ("uniform_z_hat", "joint", "unit", False),
                "gl_joint_raw_abs": ("gl_raw", "joint", "raw", True),
                "ring_joint_raw_abs": ("ring_raw", "joint", "raw", True),
                "theta_joint_raw_abs": ("theta_raw", "joint", "raw", True)}
    cols = {}
    for name, (kind, system, scale, absolute) in variants.items():
        if not wanted(name):
            continue
        res["at_paper_pairs"][name] = {}
        for fw in (7, 10, 15):
            lc, th = TABLE1[fw]
            key = (kind, th)
            if key not in cols:
                cols[key] = sample_columns(kind, th * ARCMIN)
            k = RadialKernel.cmb(fw, LMAX)
            e = ALPHA * relative_rms(k, cols[key], lc, system, scale, absolute=absolute)
            row = {"l_cut": lc, "theta_cut_arcmin": th, "n_realspace": int(cols[key].shape[1]),
                   "error": e}
            if absolute:        # how the error runs with l_cut at the pair's theta_cut
                row["error_vs_l_cut"] = {
                    int(x): ALPHA * relative_rms(k, cols[key], int(x), system, scale,
                                                 absolute=True)
                    for x in range(lc - 200, lc + 201, 50)}
            res["at_paper_pairs"][name][fw] = row
            log(f"{name:24s} FWHM {fw:2d}' at the paper's ({lc}, {th}'): "
                f"{cols[key].shape[1]:4d} real-space unknowns, error {e:.2e}")

    if wanted("tail"):
        l = np.arange(LMAX + 1)
        for fw in (5, 6, 7, 8, 10, 15):
            p = (2 * l + 1) * RadialKernel.cmb(fw, LMAX).bl ** 2
            tail = np.cumsum(p[::-1])[::-1] / p.sum()
            below = np.nonzero(tail < (BOUND / ALPHA) ** 2)[0]
            res["tail"][str(fw)] = {"l_tail_below_bound": int(below[0]) if below.size else None,
                                    "power_fraction_at_lmax": float(tail[LMAX])}
            log(f"tail FWHM {fw}': power above l holds < (bound/alpha)^2 from l = "
                f"{res['tail'][str(fw)]['l_tail_below_bound']}; l = lmax alone holds "
                f"{tail[LMAX]:.1e}")

    os.makedirs(args.out, exist_ok=True)
    with open(path, "w") as f:
        json.dump(res, f, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
