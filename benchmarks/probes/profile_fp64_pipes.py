"""Whether the FP64 FMA pipe and the FP64 tensor cores work at the same time: a kernel runs
``nv`` independent chains of fused multiply-adds a thread (DFMA) and ``nt`` independent chains of
m16n8k4 tensor-core products a warp (DMMA, :mod:`sphgpu._dmma`) per iteration, alone and mixed.
If the two ran side by side, a mixed kernel would take about as long as the slower of its two
parts alone; if they share one pipe, about the sum. (It decides whether one map's Legendre sums,
which would use a quarter of each product, could run on the tensor cores while the FMA pipe runs
the recurrence.)

Run on the GPU machine:  python benchmarks/probes/profile_fp64_pipes.py OUT.json [ITERATIONS]
"""
import json
import sys

from numba import cuda, float64

from sphgpu import _dmma
from sphgpu.bench import machine_info

mma = _dmma.device_function()
ITERS = int(sys.argv[2]) if len(sys.argv) > 2 else 50000
MIXES = [(8, 0), (16, 0), (0, 2), (0, 4), (8, 1), (8, 2), (8, 4), (16, 2), (4, 1)]


def make(nv, nt):
    @cuda.jit
    def kernel(out, a, b, iters):
        x = cuda.local.array(16, float64)
        for i in range(nv):
            x[i] = a + 0.001 * i
        acc = cuda.local.array((8, 4), float64)
        for j in range(nt):
            for q in range(4):
                acc[j, q] = 0.0
        scratch = cuda.shared.array(1, float64)
        bb = a * b
        for _ in range(iters):
            for i in range(nv):
                x[i] = x[i] * a + b
            for j in range(nt):
                d = mma(a, b, bb, acc[j, 0], acc[j, 1], acc[j, 2], acc[j, 3], scratch)
                for q in range(4):
                    acc[j, q] = d[q]
        s = 0.0
        for i in range(nv):
            s += x[i]
        for j in range(nt):
            for q in range(4):
                s += acc[j, q]
        out[cuda.grid(1)] = s       # every chain's result is used: none is optimised away
    return kernel


def main():
    nsm = cuda.get_current_device().MULTIPROCESSOR_COUNT
    res = {"machine": machine_info(), "iterations": ITERS, "threads_per_block": 128, "runs": []}
    for warps_per_sm in (8, 16):
        for nv, nt in MIXES:
            kernel = make(nv, nt)
            blocks = nsm * warps_per_sm // 4
            out = cuda.device_array(blocks * 128)
            kernel[blocks, 128](out, 0.999, 1e-9, 10)       # compile and warm up
            times = []
            for _ in range(3):
                e0, e1 = cuda.event(), cuda.event()
                e0.record()
                kernel[blocks, 128](out, 0.999, 1e-9, ITERS)
                e1.record()
                e1.synchronize()
                times.append(cuda.event_elapsed_time(e0, e1) / 1e3)
            t = min(times)
            dfma = blocks * 128 * nv * ITERS * 2
            dmma = blocks * 4 * nt * ITERS * 512 * 2
            row = dict(warps_per_sm=warps_per_sm, nv=nv, nt=nt, ms=t * 1e3,
                       dfma_tflops=dfma / t / 1e12, dmma_tflops=dmma / t / 1e12)
            res["runs"].append(row)
            print(row, flush=True)
    with open(sys.argv[1], "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
