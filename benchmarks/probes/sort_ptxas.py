"""Registers, spills and shared memory of the radix sort's kernels for sm_90, without a GPU.

    NUMBA_ENABLE_CUDASIM=0 python3 benchmarks/probes/sort_ptxas.py [--sass]

Needs a real numba-cuda (not the simulator) and the CUDA toolkit's ``ptxas`` on PATH; Numba
compiles each kernel to PTX (``numba.cuda.compile_ptx``, which needs no device), the PTX
version is lowered to what this ptxas reads, and ``ptxas -v`` reports per kernel. Prints one
line per build of the pass kernel (``onesweep_kernel``); nothing is written.

``--sass`` also disassembles the sm_90 builds of uint32 keys with ``nvdisasm`` (on PATH; the
``nvidia-cuda-nvdisasm`` wheel has it) and counts the SASS instructions of each stretch
between two block barriers (static counts, the 15 keys of a thread fully unrolled): 1 = load
and rank, 2-3 = the scans over warps and digits, 4 = staging and look-back (a loop), 5 = the
write-out; "/key" divides by the keys per thread, NOPs left out. Where the current kernel
has a copy for full tiles (all but the last) and one for the last, the stretch counts both
and "full-tile copy" what a full tile runs (part 4: the staging, up to the look-back loop).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

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


_INSTR = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")
_KINDS = ("LDS", "STS", "ATOMS", "LDG", "STG", "ATOMG", "LDL", "STL", "VOTE", "SHFL", "POPC",
          "BAR")


def _disassemble(ptx, max_registers):
    with tempfile.TemporaryDirectory() as d:
        src, cubin = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(re.sub(r"\.version \d+\.\d+", f".version {PTX_VERSION}", ptx))
        cmd = ["ptxas", "-arch=sm_90", src, "-o", cubin]
        if max_registers:
            cmd.append(f"-maxrregcount={max_registers}")
        subprocess.run(cmd, check=True, capture_output=True)
        return subprocess.run(["nvdisasm", "-c", cubin], check=True, capture_output=True,
                              text=True).stdout


def sass_sections(text):
    """Per stretch of SASS between block barriers: (instructions without NOPs, {kind: count},
    instructions of the full-tile copy or None). The full-tile copy is where the stretch's
    first conditional branch goes (the partial-tile copy falls through; the kernel has both
    for loading, staging and writing out), up to the next unconditional branch or the end."""
    sections = [[]]
    for line in text.splitlines():
        m = _INSTR.match(line)
        label = re.match(r"^\.(L_x_\d+):", line.strip())
        if m:
            sections[-1].append((m.group(1), line))
            if m.group(1).startswith("BAR.SYNC"):
                sections.append([])
        elif label:
            sections[-1].append(("LABEL", label.group(1)))
    out = []
    for sec in sections:
        ops = [op.split(".")[0] for op, _ in sec if op != "LABEL"]
        target = next((re.search(r"\((\.L_x_\d+)\)", line).group(1)[1:]
                       for op, line in sec if op == "BRA" and re.search(r"@!?P\d", line)),
                      None)
        full, on = None, False
        for op, line in sec:
            if op == "LABEL" and line == target:
                on, full = True, 0
            elif on and op != "LABEL":
                if op == "BRA" and not re.search(r"@!?P\d", line):
                    break
                full += op != "NOP"
        out.append((sum(op != "NOP" for op in ops), {k: ops.count(k) for k in _KINDS if k in ops},
                    full))
    return out


def main():
    sass = "--sass" in sys.argv[1:]
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
                    if sass and kt == types.uint32 and regs == 64:
                        text = _disassemble(ptx, regs)
                        for i, (count, kinds, full) in enumerate(sass_sections(text)):
                            extra = (f"; full-tile copy {full} ({full / items:.1f}/key)"
                                     if full is not None and i in (1, 4, 5) else "")
                            print(f"    SASS part {i}: {count} ({count / items:.1f}/key) "
                                  + " ".join(f"{k}={v}" for k, v in kinds.items())
                                  + extra, flush=True)
    u32 = types.Array(types.uint32, 1, "C")
    i64 = types.Array(types.int64, 1, "C")
    ptx = compile_ptx(K.histogram_kernel(4, 8, 256, types.uint32).py_func,
                      types.void(u32, types.int64, i64, u32, types.Array(types.int64, 2, "C"),
                                 types.Array(types.int32, 1, "C"), u32), cc=(9, 0))[0]
    print("histogram and scan, uint32 4 x 8 bits:", ptxas(ptx))

if __name__ == "__main__":
    main()
