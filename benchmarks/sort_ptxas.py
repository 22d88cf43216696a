"""Registers, spills and shared memory of the radix sort's kernels for sm_90, without a GPU.

    NUMBA_ENABLE_CUDASIM=0 python3 benchmarks/sort_ptxas.py

Needs a real numba-cuda (not the simulator) and the CUDA toolkit's ``ptxas`` on PATH; Numba
compiles each kernel to PTX (``numba.cuda.compile_ptx``, which needs no device), the PTX
version is lowered to what this ptxas reads, and ``ptxas -v`` reports per kernel. Prints one
line per build; nothing is written.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from numba import types                          # noqa: E402
from numba.cuda import compile_ptx               # noqa: E402

from sphgpu.sort import _cuda_kernels as K       # noqa: E402

PTX_VERSION = os.environ.get("SORT_PTX_VERSION", "9.0")     # what the local ptxas accepts


def ptxas(ptx, max_registers=None):
    """(registers, (spill store bytes, spill load bytes), shared bytes) from ``ptxas -v``."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(re.sub(r"\.version \d+\.\d+", f".version {PTX_VERSION}", ptx))
        cmd = ["ptxas", "-arch=sm_90", "-v", src, "-o", os.path.join(d, "k.cubin")]
        if max_registers:
            cmd.append(f"-maxrregcount={max_registers}")
        out = subprocess.run(cmd, capture_output=True, text=True)
        text = out.stderr + out.stdout
    if out.returncode:
        raise RuntimeError(text)
    regs = re.search(r"Used (\d+) registers", text)
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
    smem = re.search(r"(\d+) bytes smem", text)
    return (int(regs.group(1)), (int(spill.group(1)), int(spill.group(2))),
            int(smem.group(1)) if smem else 0)


def onesweep_ptx(bits, threads, items, kt, mode, max_registers, shift_bits=30):
    kernel = K.onesweep_kernel(bits, threads, items, kt, mode, shift_bits, max_registers)
    keys = types.Array(kt, 1, "C")
    u32 = types.Array(types.uint32, 1, "C")
    perm_out = types.Array(types.int64, 1, "C") if mode else u32
    status = types.Array(types.uint32 if shift_bits == 30 else types.uint64, 2, "C")
    sig = types.void(keys, u32, keys, perm_out, kt, types.Array(types.int64, 2, "C"), status,
                     types.Array(types.int32, 1, "C"), types.int64)
    return compile_ptx(kernel.py_func, sig, cc=(9, 0))[0]


def main():
    for kt in (types.uint32, types.uint64):
        for mode in (0, 2):
            for bits in (8, 5):
                for regs in (64, 80):
                    items = min(15, K.max_items(bits, 256, kt.bitwidth // 8, mode != 0))
                    ptx = onesweep_ptx(bits, 256, items, kt, mode, regs)
                    r, spill, smem = ptxas(ptx, regs)
                    print(f"onesweep {kt} perm_mode={mode} r={bits} items={items} "
                          f"cap={regs}: {r} registers, spill {spill[0]}/{spill[1]} B, smem "
                          f"{smem} B, PTX barriers {ptx.count('bar.sync')}, votes "
                          f"{ptx.count('vote.sync')}", flush=True)
    u32 = types.Array(types.uint32, 1, "C")
    i64 = types.Array(types.int64, 1, "C")
    ptx = compile_ptx(K.histogram_kernel(4, 8, 256, types.uint32).py_func,
                      types.void(u32, types.int64, i64, u32), cc=(9, 0))[0]
    print("histogram uint32 4 x 8 bits:", ptxas(ptx))
    ptx = compile_ptx(K.scan_kernel(4, 8, 256).py_func,
                      types.void(i64, types.int64, types.Array(types.int64, 2, "C"),
                                 types.Array(types.int32, 1, "C")), cc=(9, 0))[0]
    print("scan 4 x 8 bits:", ptxas(ptx))


if __name__ == "__main__":
    main()
