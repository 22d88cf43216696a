"""Draw docs/cmb_sky.png, the picture at the top of the README.

A CMB temperature sky is synthesized from the shipped Planck 2018 TT spectrum with
sphgpu.synfast, shown in a Mollweide projection with its true pixels (sphgpu.widgets.plots.mollview:
each cell of a regular longitude/latitude grid shows the HEALPix pixel containing its centre,
ducc0's ang2pix) and a graticule, and its spectrum is measured back with sphgpu.anafast and
compared with the input.

    python docs/make_readme_figure.py            # writes docs/cmb_sky.png next to this script
"""

from __future__ import annotations

import argparse
import io
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402  (Pillow comes with matplotlib)

import sphgpu  # noqa: E402
from sphgpu.data import planck2018_cl  # noqa: E402
from sphgpu.widgets.plots import mollview  # noqa: E402

NSIDE = 128
FWHM_ARCMIN = 30.0
SEED = 2018
CMAP = "RdBu_r"


def save_paletted(fig, out, cmap, dpi=120):
    """Save ``fig`` as an 8-bit paletted PNG: 224 colours of ``cmap`` plus 32 greys.

    Everything drawn uses the colormap or grey, so the picture looks the same as a full-colour
    PNG, and the noisy sky costs a third of the bytes.
    """
    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format="png")
    plt.close(fig)
    colours = plt.get_cmap(cmap)(np.linspace(0.0, 1.0, 224))[:, :3]
    greys = np.repeat(np.linspace(0.0, 1.0, 32)[:, None], 3, axis=1)
    palette = np.rint(255 * np.vstack([colours, greys])).astype(np.uint8)
    pal_image = Image.new("P", (1, 1))
    pal_image.putpalette(palette.ravel().tolist())
    image = Image.open(buf).convert("RGB").quantize(palette=pal_image, dither=Image.Dither.NONE)
    image.save(out, optimize=True)


def main(out: Path) -> None:
    geometry = sphgpu.RingGeometry.healpix(NSIDE)
    lmax = geometry.natural_lmax
    cl = planck2018_cl(lmax)                                    # raw C_l, muK^2
    sky = sphgpu.synfast(cl, NSIDE, fwhm_arcmin=FWHM_ARCMIN, seed=SEED, backend="cpu")
    cl_hat = sphgpu.anafast(sky, iter=3, backend="cpu")
    bl2 = sphgpu.gauss_beam(fwhm_arcmin=FWHM_ARCMIN, lmax=lmax) ** 2

    ell = np.arange(2, lmax + 1)
    to_dl = ell * (ell + 1) / (2 * math.pi)
    dl_in = to_dl * cl[2:] * bl2[2:]
    dl_hat = to_dl * cl_hat[2:]
    cosmic = dl_in * np.sqrt(2.0 / (2 * ell + 1))                # cosmic variance, full sky

    fig = plt.figure(figsize=(11.5, 3.9))
    ax_map = fig.add_axes([0.01, 0.13, 0.55, 0.80], projection="mollweide")
    ax_cl = fig.add_axes([0.625, 0.15, 0.36, 0.76])

    vmax = 3.0 * float(sky.std())
    mesh = mollview(sky, geometry, ax_map, nlon=1200, nlat=600, cmap=CMAP, vmin=-vmax,
                    vmax=vmax)
    ax_map.set_title(f"synfast: Planck 2018 TT, nside {NSIDE}, {FWHM_ARCMIN:g}' beam",
                     fontsize=10)
    cbar = fig.colorbar(mesh, ax=ax_map, orientation="horizontal", fraction=0.05, pad=0.03,
                        shrink=0.55, aspect=35)
    cbar.set_label(r"$\Delta T$ [$\mu$K]", fontsize=9)
    cbar.ax.tick_params(labelsize=8)

    ax_cl.fill_between(ell, dl_in - cosmic, dl_in + cosmic, color="0.85", lw=0,
                       label="cosmic variance")
    ax_cl.plot(ell, dl_hat, color="#b2182b", lw=0.9, label="anafast (iter=3)")
    ax_cl.plot(ell, dl_in, color="k", lw=1.3, label=r"input $C_\ell\, b_\ell^2$")
    ax_cl.set_xlim(2, lmax)
    ax_cl.set_ylim(0, None)
    ax_cl.set_xlabel(r"multipole $\ell$", fontsize=9)
    ax_cl.set_ylabel(r"$D_\ell = \ell(\ell+1)C_\ell/2\pi$ [$\mu$K$^2$]", fontsize=9)
    ax_cl.set_title("recovered vs input spectrum", fontsize=10)
    ax_cl.tick_params(labelsize=8)
    ax_cl.legend(fontsize=8, frameon=False, loc="upper right")

    out.parent.mkdir(parents=True, exist_ok=True)
    save_paletted(fig, out, CMAP)
    print(f"wrote {out} ({out.stat().st_size / 1024:.0f} KB)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path(__file__).with_name("cmb_sky.png"))
    main(parser.parse_args().output)
