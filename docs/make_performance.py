"""Generate the performance page, the README's Status table and the speedup panel's data from
the committed benchmark results (``benchmarks/results/*.json``).

    python docs/make_performance.py           # write the three outputs
    python docs/make_performance.py --check   # exit 1 and name what differs (tests, CI)

Outputs:

* ``docs/performance.rst``: a section per capability, a table per results file (one GPU kind
  and run each), every table headed by its GPU, host cores, date and what the times include;
  the plots the benchmark scripts drew.
* README.md, between ``<!-- status:begin -->`` and ``<!-- status:end -->``: the Status table,
  one number per cell, each from the newest file of that GPU kind, linking to the page.
* ``data/benchmarks/*.json``: copies of the results files the speedup panel reads
  (``sphgpu.widgets.speedup.load_results``), installed with the package as ``sphgpu.data``.

No number is typed here: each comes from a results file. A file without a ``date`` entry is
dated by the last commit that changed it.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "performance.rst"
README = ROOT / "README.md"
PANEL_DATA = ROOT / "data" / "benchmarks"
BEGIN, END = "<!-- status:begin -->", "<!-- status:end -->"
PAGE_LINK = "docs/performance.rst"


# -- formatting -------------------------------------------------------------------------------
def _sig(x: float, digits: int = 3) -> str:
    text = f"{x:.{digits}g}"
    if "e" in text:                                   # 1.23e+03 -> 1230
        text = f"{x:.0f}"
    return text


def seconds(s) -> str:
    """A duration in the unit that reads best: 0.766 ms, 13.5 ms, 1.39 s."""
    if s is None:
        return "–"
    return f"{_sig(s * 1e3)} ms" if s < 1 else f"{_sig(s)} s"


def ms(x) -> str:
    return "–" if x is None else f"{_sig(x)} ms"


def times(x) -> str:
    return "–" if x is None else f"{_sig(x)}x"


def number(x, digits=3) -> str:
    return "–" if x is None else _sig(x, digits)


def error(x) -> str:
    return "–" if x is None else f"{x:.1e}"


def get(node, path, default=None):
    """``node[a][b]...`` for "a.b..."; ``default`` where a step is missing."""
    for part in path.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return default
    return node


def median(node, path):
    return get(node, path + ".median_s")


# -- the files --------------------------------------------------------------------------------
class Result:
    """One results file: its JSON, GPU, host and date."""

    def __init__(self, path: pathlib.Path):
        self.path = path
        self.name = path.name
        self.data = json.loads(path.read_text())
        machine = self.data.get("machine") or {}
        self.gpu = str(machine.get("gpu") or "no GPU recorded")
        self.cores = machine.get("cpu_count")
        date = self.data.get("date")
        if date:
            self.date, self.dated_by = str(date)[:10], "run"
            self.stamp = str(date)
        else:
            self.date, self.dated_by = _commit_date(path), "commit"
            self.stamp = self.date

    @property
    def kind(self) -> str:
        """The GPU kind: H100, H200 (the device name without vendor and memory)."""
        m = re.search(r"\b([A-Z]\d{2,4}[A-Z]?)\b", self.gpu)
        return m.group(1) if m else self.gpu

    def heading(self, includes: str) -> str:
        dated = "run" if self.dated_by == "run" else "committed"
        cores = f", {self.cores} host cores" if self.cores else ""
        return (f"**{self.gpu}**{cores}; {dated} {self.date}; ``benchmarks/results/{self.name}``. "
                f"{includes}")


def _commit_date(path: pathlib.Path) -> str:
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%cs", "--", str(path)], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        out = ""
    return out or "date not recorded"


def load(pattern: str) -> list[Result]:
    """The files matching ``pattern`` (a regular expression on the file name), by name."""
    return [Result(p) for p in sorted(RESULTS.glob("*.json")) if re.fullmatch(pattern, p.name)]


def newest(results, kind, pick):
    """``pick(result)`` of the newest result of GPU kind ``kind`` where it is not None."""
    for r in sorted((r for r in results if r.kind == kind), key=lambda r: r.stamp, reverse=True):
        value = pick(r)
        if value is not None:
            return value
    return None


# -- rst --------------------------------------------------------------------------------------
def table(header, rows) -> list[str]:
    if not rows:                # docutils rejects a list-table with a header only
        return ["(no rows in this results file)", ""]
    out = [".. list-table::", "   :header-rows: 1", ""]
    for row in [header, *rows]:
        out.append("   * - " + str(row[0]))
        out += [f"     - {cell}" for cell in row[1:]]
    return out + [""]


def section(title, char="-") -> list[str]:
    return [title, char * len(title), ""]


def figure(name, alt) -> list[str]:
    if not (RESULTS / name).is_file():
        return []
    return [f".. image:: ../benchmarks/results/{name}", f"   :alt: {alt}", ""]


# -- capabilities -----------------------------------------------------------------------------
SHT = load(r"sht(_[a-z]+\d+)?\.json")
SHT_BATCH = load(r"sht_batch_[a-z]+\d+\.json")
SHT_POL = load(r"sht_pol(_[a-z]+\d+)?\.json")
SHT_ROOFLINE = load(r"sht_roofline(_[a-z0-9]+)?\.json")
SORT = load(r"sort(_[a-z]+\d+)?\.json")
TPACF = load(r"tpacf(_[a-z]+\d+)?\.json")
TPACF_SCALE = load(r"tpacf_scale(_[a-z]+\d+)?\.json")
TPACF_SURVEY = load(r"tpacf_survey(_[a-z0-9]+)?\.json")
CONVOLVE = load(r"convolve(_[a-z]+\d+)?\.json")
MONTECARLO = load(r"montecarlo(?!_bandpowers)(_[a-z0-9]+)*\.json")
DISTRIBUTED = load(r"distributed(_[a-z]+\d+)?\.json")
DISTRIBUTED_SCALING = load(r"distributed_scaling(_[a-z0-9]+)?\.json")
MASTER = load(r"master_coupling(_[a-z]+\d+)?\.json")
MC_BANDPOWERS = load(r"montecarlo_bandpowers(_[a-z0-9]+)?\.json")
BIN_SLOP = load(r"tpacf_bin_slop(_[a-z0-9]+)?\.json")
IO = load(r"io_read_map\.json")
NOTEBOOK_MEMORY = load(r"notebook_memory\.json")
LAB_MEMORY = load(r"lab_memory\.json")
FIRST_CALL = load(r"first_call(_optimize_split)?(_[a-z]+\d+)?\.json")


def sht_page() -> list[str]:
    out = section("Spherical harmonic transforms")
    out += ["HEALPix maps, lmax = 2 nside, mmax = lmax; ``benchmarks/sht.py``. Public ``alm2map`` "
            "and ``map2alm`` (``iter=0``) on the ``cuda`` backend: *device* with CuPy arrays in "
            "and out, *host* with NumPy arrays in and out (copies included); ducc0 on every host "
            "thread in the same process. Medians after a warm-up call; the first call of the "
            "process is its own column. Errors are relative L2 differences from ducc0.", ""]
    for r in SHT:
        out += [r.heading(""), ""]
        rows = []
        for row in r.data.get("results", []):
            t = row.get("timings", {})
            rows.append([row["nside"],
                         seconds(median(t, "cuda_device_alm2map")),
                         seconds(median(t, "cuda_host_alm2map")),
                         seconds(median(t, "ducc0_all_alm2map")),
                         times(row.get("speedup_alm2map_vs_ducc0_all")),
                         seconds(median(t, "cuda_device_map2alm")),
                         seconds(median(t, "cuda_host_map2alm")),
                         seconds(median(t, "ducc0_all_map2alm")),
                         times(row.get("speedup_map2alm_vs_ducc0_all")),
                         seconds(row.get("cuda_first_call_s")),
                         f"{error(row.get('err_alm2map_vs_ducc0'))} / "
                         f"{error(row.get('err_map2alm_vs_ducc0'))}"])
        out += table(["nside", "alm2map device", "alm2map host", "ducc0 alm2map",
                      "device speedup", "map2alm device", "map2alm host", "ducc0 map2alm",
                      "device speedup", "first call", "error alm2map / map2alm"], rows)
        out += figure(r.name.replace("sht", "sht_speedup").replace(".json", ".png"),
                      f"SHT timings and speedups, {r.gpu}")

    out += section("Batches of maps", "^")
    out += ["``benchmarks/sht_batch.py``: public calls on CuPy arrays, k maps a call, milliseconds "
            "a map (medians of synchronized calls); the first call of each batch size "
            "(compilation and autotuning) is its own column.", ""]
    for r in SHT_BATCH:
        out += [r.heading(""), ""]
        rows = [[row["nside"], row["maps"], ms(row.get("alm2map_ms_per_map")),
                 ms(row.get("map2alm_ms_per_map")), seconds(row.get("first_s"))]
                for row in r.data.get("rows", [])]
        out += table(["nside", "maps a call", "alm2map a map", "map2alm a map", "first call"],
                     rows)
    out += figure("sht_batch.png", "milliseconds a map against maps a call")

    out += section("Polarization", "^")
    out += ["``benchmarks/sht_pol.py``: T,E,B <-> I,Q,U and spin 2 alone through the public "
            "calls on the ``cuda`` backend, CuPy arrays (device) or NumPy arrays (host, copies "
            "included); ducc0 on every host thread. Speedups are against ducc0's spin-2 "
            "transform. Medians after a warm-up call.", ""]
    for r in SHT_POL:
        out += [r.heading(""), ""]
        rows = []
        for op in ("alm2map", "map2alm"):
            for row in r.data.get("results", []):
                t = row.get("timings", {})
                rows.append([op, row["nside"],
                             seconds(median(t, f"cuda_device_t_{op}")),
                             seconds(median(t, f"cuda_device_pol_{op}")),
                             seconds(median(t, f"cuda_host_pol_{op}")),
                             seconds(median(t, f"cuda_device_spin2_{op}")),
                             seconds(median(t, f"ducc0_all_spin2_{op}")),
                             times(row.get(f"speedup_pol_{op}_vs_ducc0_all")),
                             error(row.get(f"err_pol_{op}_vs_ducc0"))])
        out += table(["call", "nside", "temperature device", "T,E,B device", "T,E,B host",
                      "spin 2 device", "ducc0 spin 2", "T,E,B speedup", "error T,E,B"], rows)
        out += figure(r.name.replace(".json", ".png"), f"polarized transforms, {r.gpu}")
    return out + roofline_rows()


def roofline_rows() -> list[str]:
    if not SHT_ROOFLINE:
        return []
    out = section("Stages on the roofline", "^")
    out += ["``benchmarks/sht_roofline.py``: each stage of ``alm2map`` and ``map2alm`` "
            "(``iter=0``) timed alone on CuPy arrays through the package's private stage "
            "functions (the launches the public call makes for it), beside the public calls; "
            "FP64 flops and bytes from the work model of ``sphgpu.bench.roofline`` (useful "
            "work, not the kernels' own); ceilings measured in the same run (an FP64 FMA loop, "
            "a device copy). Bound: the longer of the flops at the FP64 ceiling and the bytes "
            "at the copy bandwidth; the last column is time over bound (1 is the roof).", ""]
    for r in SHT_ROOFLINE:
        c = r.data.get("ceilings", {})
        out += [r.heading(f"ceilings: {number((c.get('flops_per_s') or 0) / 1e12)} TFLOP/s "
                          f"FP64, {number((c.get('bytes_per_s') or 0) / 1e12)} TB/s copy."), ""]
        rows = []
        for row in r.data.get("rows", []):
            k = row["maps"]
            for name, p in row.get("stages", {}).items():
                rows.append([row["nside"], k, name, ms(p["seconds"] * 1e3 / k),
                             f"{number(p['flops_per_s'] / 1e12)} ({number(p['flops_fraction'])})",
                             f"{number(p['bytes_per_s'] / 1e12)} ({number(p['bytes_fraction'])})",
                             f"{number(p['time_over_bound'])} ({p['limit']})"])
            rows.append([row["nside"], k, "public alm2map / map2alm",
                         f"{ms(row['public_alm2map_s'] * 1e3 / k)} / "
                         f"{ms(row['public_map2alm_s'] * 1e3 / k)}", "–", "–", "–"])
        out += table(["nside", "maps", "stage", "time a map", "TFLOP/s (of ceiling)",
                      "TB/s (of ceiling)", "time / bound"], rows)
        out += figure(r.name.replace(".json", ".png"),
                      f"transform stages on the roofline, {r.gpu}")
    return out


def sort_page() -> list[str]:
    out = section("Radix sort")
    out += ["``benchmarks/sort.py``: whole calls of the public ``radix_sort`` on CuPy arrays "
            "(synchronized, host time included), keys alone against ``cupy.sort`` and keys + "
            "permutation against ``cupy.argsort`` (CUB), in the same run; medians after "
            "warm-up calls. Every result is checked against NumPy's stable order.", ""]
    for r in SORT:
        out += [r.heading(""), ""]
        rows = []
        for row in r.data.get("dtypes", []):
            t = row.get("timings", {})
            rows.append([row["dtype"], f"2^{int(row['n']).bit_length() - 1}",
                         seconds(median(t, "sphgpu_keys")), seconds(median(t, "cupy_sort")),
                         times(row.get("ratio_keys_vs_cupy_sort")),
                         seconds(median(t, "sphgpu_keys_perm")),
                         seconds(median(t, "cupy_argsort")),
                         times(row.get("ratio_perm_vs_cupy_argsort"))])
        out += table(["dtype", "keys", "radix_sort", "cupy.sort", "ratio",
                      "radix_sort + permutation", "cupy.argsort", "ratio"], rows)
        pic = r.data.get("pic_8M")
        if pic:
            out += [f"Particle-in-cell re-sort ({pic.get('n')} particles, 10-bit cell keys with "
                    f"the permutation): ``radix_sort`` {seconds(median(pic, 'sphgpu_radix_sort'))}, "
                    f"``cupy.argsort`` {seconds(median(pic, 'cupy_argsort'))}: "
                    f"{times(pic.get('ratio_vs_cupy_argsort'))}.", ""]
        out += figure(r.name.replace(".json", "_throughput.png"), f"sort throughput, {r.gpu}")
    return out


def tpacf_page() -> list[str]:
    out = section("Angular correlation functions")
    out += ["``benchmarks/tpacf.py``: exact pair counts in angular bins, whole ``pair_counts`` "
            "calls: from NumPy arrays (catalog preparation inside the call), from CuPy arrays, "
            "and on prepared catalogs; sphgpu's CPU path and TreeCorr (exact, ``bin_slop=0``, "
            "every host thread) once each. Medians after a warm-up call. Counts equal "
            "TreeCorr's as integers.", ""]
    for r in TPACF:
        out += [r.heading(""), ""]
        rows = []
        for row in r.data.get("results", []):
            for count in ("DD", "DR", "RR"):
                c = get(row, f"counts.{count}") or {}
                rows.append([f"{row.get('footprint')} {row['n_data']} / {row['n_random']}", count,
                             seconds(median(c, "sphgpu_cuda_float32")),
                             seconds(median(c, "sphgpu_cuda_cupy")),
                             seconds(median(c, "sphgpu_cuda_prepared")),
                             seconds(median(c, "cpu")), seconds(median(c, "treecorr")),
                             times(c.get("speedup_vs_treecorr"))])
            total = row.get("total_s", {})
            rows.append([f"{row.get('footprint')} {row['n_data']} / {row['n_random']}",
                         "DD + DR + RR", seconds(total.get("sphgpu_cuda_float32")),
                         seconds(total.get("sphgpu_cuda_cupy")),
                         seconds(total.get("sphgpu_cuda_prepared")), seconds(total.get("cpu")),
                         seconds(total.get("treecorr")),
                         times(row.get("total_speedup_vs_treecorr"))])
        out += table(["data / randoms", "count", "from NumPy", "from CuPy", "prepared",
                      "sphgpu CPU", "TreeCorr exact", "speedup vs TreeCorr"], rows)
        out += figure(r.name.replace("tpacf", "tpacf_speed").replace(".json", ".png"),
                      f"pair-count timings, {r.gpu}")
    for r in TPACF_SCALE:
        d = r.data
        out += [r.heading(""), ""]
        out += table(["work", "time"], [
            [f"RR of {d.get('n')} full-sky randoms, one GPU, whole call",
             seconds(median(d, "one_gpu.whole_call"))],
            [f"the same, TreeCorr with its default bin_slop",
             seconds(get(d, "treecorr_default_bin_slop.seconds"))],
            [f"{get(d, 'cluster.n')} points over a Dask cluster of "
             f"{get(d, 'cluster.gpu_workers')} GPU worker(s)",
             seconds(get(d, "cluster.seconds"))]])
    out += survey_rows()
    return out


#: tpacf_survey.py's workloads, as the page names them
SURVEY_WORKLOADS = {"rr7": "RR, full-sky randoms, 20 bins 0.01-10°",
                    "rr8": "RR, full-sky randoms, 20 bins 0.01-10°",
                    "des": "DES-like DD + DR + RR, 100 patches, 2.5′-250′",
                    "des-files": "the same, catalogs read by the workers from .npy files"}


def survey_rows() -> list[str]:
    out = []
    if TPACF_SURVEY:
        out += ["``benchmarks/tpacf_survey.py``: exact counts at survey scale, whole public calls "
                "from NumPy arrays: the plain one-GPU call without Dask, and "
                "``sphgpu.distributed.pair_counts`` on a fresh cluster of 1, 2, ... GPU "
                "workers, first call apart. Counts (per patch pair too) equal the plain "
                "call's as integers.", ""]
    for r in TPACF_SURVEY:
        d = r.data
        units = [str(u) for u in d.get("units", [])]
        sizes = d.get("sizes", {})
        n = {"rr7": sizes.get("rr_small"), "rr8": sizes.get("rr_large"),
             "des": sizes.get("des_n"), "des-files": sizes.get("des_n")}
        out += [r.heading(""), ""]
        rows = []
        for w in d.get("workloads", []):
            plain = get(d, f"plain.{w}") or {}
            count = f"{float(n[w]):.2g}".replace("e+0", "e") if n.get(w) else "?"
            cells = [f"{SURVEY_WORKLOADS.get(w, w)}, {count} points",
                     seconds(plain.get("seconds")), seconds(plain.get("first_s"))]
            for u in units:
                row = get(d, f"rows.{u}.{w}") or {}
                equal = row.get("counts_equal")
                note = (", counts not compared (no plain call)" if equal is None
                        else "" if equal else ", counts differ")
                cells.append(f"{seconds(row.get('seconds'))} ({seconds(row.get('first_s'))} "
                             f"first){note}")
            rows.append(cells)
        out += table(["workload", "plain call", "plain, first"]
                     + [f"{u} GPU worker(s) (first)" for u in units], rows)
    return out


def convolve_page() -> list[str]:
    out = section("Convolution and the kernel split")
    out += ["``benchmarks/convolve.py``: the plan that ``optimize_split`` chooses with the "
            "measured cost model, run through the public ``convolve`` with CuPy arrays "
            "(device) and NumPy arrays (host), against ducc0's map2alm + alm2map on every host "
            "thread and healpy's ``smoothing``; medians after a warm-up call.", ""]
    for r in CONVOLVE:
        s = r.data.get("speed") or {}
        t = s.get("timings", {})
        plan = s.get("plan", {})
        out += [r.heading(f"nside {s.get('nside')}, lmax {s.get('lmax')}, Gaussian FWHM "
                          f"{number(s.get('fwhm_arcmin'))}′; plan: {plan.get('method')} "
                          f"(harmonic part on {plan.get('harmonic_backend')})."), ""]
        out += table(["call", "time"], [
            ["sphgpu ``convolve`` with the plan, device", seconds(median(t, "plan_device"))],
            ["sphgpu ``convolve`` with the plan, host", seconds(median(t, "plan_host"))],
            ["ducc0 map2alm + alm2map",
             seconds(median(t, "ducc0_map2alm_alm2map_all_threads"))],
            ["healpy ``smoothing`` (iter 0)", seconds(median(t, "healpy_smoothing_iter0"))],
            ["speedup vs ducc0, device / host",
             f"{times(s.get('speedup_plan_device_vs_ducc0'))} / "
             f"{times(s.get('speedup_plan_host_vs_ducc0'))}"]])
        for name, alt in (("convolve_table.png", "the optimizer's split against Table 1"),
                          ("convolve_errors.png", "predicted against measured split errors"),
                          ("convolve_speed.png", "convolution timings")):
            out += figure(name, alt)
    return out


def montecarlo_page() -> list[str]:
    out = section("Monte Carlo")
    out += ["``benchmarks/montecarlo.py``: simulations per second of ``MonteCarlo.run`` "
            "(a_lm, beam, map, noise, apodized mask, map2alm, pseudo-C_l, all on the device) "
            "on one GPU in the process and on k GPUs as a local Dask cluster, against the same "
            "pipeline in ducc0 on every host thread; the first run (compilation, tuning, "
            "plans) is not counted in the rates. E(k) = rate(k) / (k rate(1)).", ""]
    for r in MONTECARLO:
        out += [r.heading(""), ""]
        rows = []
        for row in r.data.get("rows", []):
            gpus = [k for k in row if k.startswith("sphgpu ")]
            for k in gpus:
                v = row[k]
                rows.append([row["nside"], k.removeprefix("sphgpu "),
                             f"{number(v.get('rate'))} /s", v.get("batch_size", "–"),
                             number(v.get("efficiency")) if "efficiency" in v else "–",
                             seconds(v.get("first_s")),
                             f"{number(get(row, 'ducc0.rate'))} /s",
                             times(row.get("speedup_vs_ducc0")) if k == "sphgpu 1 GPU" else "–"])
        out += table(["nside", "GPUs", "sphgpu", "batch", "E(k)", "first run",
                      "ducc0 pipeline", "1 GPU / ducc0"], rows)
        out += figure(r.name.replace(".json", ".png"), f"Monte Carlo rates, {r.gpu}")
    return out


def master_page() -> list[str]:
    out = section("Bandpowers")
    out += ["``benchmarks/master_coupling.py``: the public ``sphgpu.master.coupling_matrix`` of "
            "a mask's power spectrum (W_L to 2 lmax) on the GPU, from NumPy (result downloaded) "
            "and from CuPy (result left on the device), against ducc0's coupling matrices on "
            "every host thread (as ``backend=\"cpu\"`` calls them), medians; \"all\" is the "
            "four blocks 00, 02, ++, --. The first call in a fresh process is apart. Error: "
            "largest relative difference from ducc0 in any row.", ""]
    for r in MASTER:
        out += [r.heading(""), ""]
        rows = [[row["lmax"], row["blocks"], seconds(median(row, "sphgpu_cuda_numpy")),
                 seconds(median(row, "sphgpu_cuda_device_arrays")),
                 seconds(median(row, "ducc0_cpu")), times(row.get("speedup_vs_ducc0")),
                 error(max((row.get("max_row_rel_err_vs_ducc0") or {}).values(), default=None)),
                 seconds(row.get("first_call_fresh_process_s"))]
                for row in r.data.get("rows", [])]
        out += table(["lmax", "blocks", "sphgpu, NumPy", "sphgpu, CuPy", "ducc0",
                      "NumPy / ducc0", "error", "first call"], rows)
    return out + master_montecarlo_page()


def master_montecarlo_page() -> list[str]:
    out = section("Bandpowers of simulations", "^")
    out += ["``benchmarks/montecarlo_bandpowers.py``: polarized masked simulations to decoupled "
           "bandpowers, ``MonteCarlo(cls, nside, pol=True, mask=..., bins=...).run(n)`` on one "
           "GPU, bandpowers of every simulation included; construction (the mask's coupling, "
           "the Workspaces) and the first run (compilation, tuning) timed apart; the same "
           "pipeline without bins beside it. chi²: the mean bandpowers against the expected "
           "ones over the bins (diagonal errors).", ""]
    for r in MC_BANDPOWERS:
        d = r.data
        out += [r.heading(f"nside {d.get('nside')}, lmax {d.get('lmax')}, bins of "
                          f"{d.get('bin_width')}; goal: {d.get('goal')}."), ""]
        rows = []
        for row in d.get("rows", []):
            chi2 = row.get("chi2_mean_vs_expected") or {}
            rows.append(["bandpowers" if row.get("bins") else "pseudo-spectra only",
                         seconds(row.get("construct_s")), seconds(row.get("construct_again_s")),
                         seconds(row.get("first_run_s")),
                         f"{row.get('nsims')} in {seconds(row.get('run_s'))}",
                         f"{number(row.get('rate'))} /s",
                         ", ".join(f"{k} {v['chi2']:.0f}/{v['bins']}" for k, v in chi2.items())
                         or "–"])
        out += table(["output", "construct", "construct again", "first run", "simulations",
                      "rate", "chi² / bins"], rows)
        dask = d.get("dask") or {}
        if dask:
            out += [f"The same bandpowers through ``MonteCarlo.run(client=...)`` on a fresh "
                    f"local cluster of GPU workers; goal: {d.get('dask_goal')}. E: the steady "
                    f"rate over the workers times the one-GPU rate above; difference: the "
                    f"largest relative difference of the shared simulations' bandpowers from "
                    f"the one-GPU run's.", ""]
            out += table(["workers", "simulations a run", "first run", "steady", "E",
                          "first / steady", "difference"],
                         [[n, v.get("sims"), f"{seconds(v.get('first_run_s'))} "
                           f"({number(v.get('first_run_rate'))} /s)",
                           f"{seconds(v.get('steady_s'))} ({number(v.get('rate'))} /s)",
                           number(v.get("efficiency")), number(v.get("first_over_steady")),
                           error(v.get("max_rel_diff_vs_plain"))]
                          for n, v in sorted(dask.items(), key=lambda kv: int(kv[0]))])
    return out


def bin_slop_page() -> list[str]:
    if not BIN_SLOP:
        return []
    out = section("Approximate counts (bin_slop)", "^")
    out += ["``benchmarks/tpacf_bin_slop.py``: an auto count (RR) of uniform full-sky points in "
            "20 log bins 2.5′-250′, ``pair_counts(..., bin_slop=s)`` from NumPy (median after "
            "the process's first call), s = 0 exact (the cuda backend counts exactly whatever "
            "the slop); TreeCorr's ``NNCorrelation`` with its default bin_slop on every host "
            "thread in the same run, Catalog built inside the timing. Difference: the largest "
            "relative difference of a bin's count from sphgpu's exact count; \"at once\": the "
            "fraction of pairs counted a cell pair at a time; the last column: TreeCorr's time "
            "over sphgpu's exact count's (one GPU; the distributed row: over that row's).", ""]
    for r in BIN_SLOP:
        d = r.data
        out += [r.heading(""), ""]
        rows = []
        for row in d.get("rows", []):
            exact = next((e for e in row.get("sphgpu", []) if e.get("bin_slop") == 0), None)
            for e in row.get("sphgpu", []):
                rows.append([f"{row['n']:,}", f"sphgpu {d.get('backend')}, bin_slop "
                             f"{e['bin_slop']}", seconds(e.get("median_s")),
                             error(e.get("max_rel_diff")),
                             number(e.get("pairs_at_once_fraction")), "–"])
            dask = row.get("dask") or {}
            tc = row.get("treecorr") or {}
            if "median_s" in dask:
                same = {True: "counts equal", False: "counts differ"}.get(
                    dask.get("counts_equal"), "counts not compared")
                rows.append([f"{row['n']:,}", f"sphgpu.distributed, {dask.get('workers')} "
                             f"workers, exact ({seconds(dask.get('first_s'))} first)",
                             seconds(dask["median_s"]), same, "–",
                             times(tc["seconds"] / dask["median_s"]) if "seconds" in tc
                             else "–"])
            if "seconds" in tc:
                ratio = (tc["seconds"] / exact["median_s"]) if exact else None
                rows.append([f"{row['n']:,}", f"TreeCorr, bin_slop {tc['bin_slop']:.3f}, "
                             f"{d.get('treecorr_threads')} threads", seconds(tc["seconds"]),
                             error(tc.get("max_rel_diff")), "–", times(ratio)])
        out += table(["points", "counter", "time", "difference", "at once",
                      "TreeCorr / sphgpu exact"], rows)
    return out


def io_page() -> list[str]:
    out = section("Reading maps")
    out += ["``benchmarks/io_read_map.py``: ``read_map`` of an nside 2048 I, Q, U float32 "
            "file (RING and NESTED on disk, RING returned) against healpy's, each in a fresh "
            "process; healpy imports astropy when it is imported, sphgpu on its first read, so "
            "the first read is shown with the import. Memory: the first read's peak resident "
            "memory beyond the process's before, over the map's bytes. CPU only.", ""]
    for r in IO:
        out += [r.heading(""), ""]
        rows = [[row["file_ordering"], row["library"],
                 seconds(row.get("import_and_first_s")), seconds(row.get("second_s")),
                 f"{number(row.get('rss_extra_per_map'))} x"]
                for row in r.data.get("results", [])]
        out += table(["file", "library", "import + first read", "second read",
                      "extra memory / map"], rows)
    return out


def notebooks_page() -> list[str]:
    out = section("Notebooks on a Binder-sized machine")
    out += ["``benchmarks/notebook_memory.py``: each notebook run alone (Run All) in a fresh "
            "kernel on the CPU backend, pinned to one core of a shared two-core machine (times "
            "are upper bounds), first with Numba's and sphgpu's caches empty (cold), then "
            "warm; the kernel's resident memory after the last cell, and its anonymous part "
            "(what no file backs, so what no other kernel can share).", ""]
    for r in NOTEBOOK_MEMORY:
        out += [r.heading(""), ""]
        rows = [[row["notebook"], seconds(get(row, "cold.wall_s")),
                 seconds(get(row, "warm.wall_s")), f"{number(get(row, 'warm.rss_mb'))} MB",
                 f"{number(get(row, 'warm.anon_mb'))} MB",
                 "yes" if get(row, "warm.numba_loaded") else "no"]
                for row in r.data.get("notebooks", [])]
        out += table(["notebook", "Run All, cold", "warm", "resident, warm", "anonymous",
                      "Numba"], rows)
    if LAB_MEMORY:
        out += ["``tests/browser/test_lab_browser.py``: every notebook run in one JupyterLab in "
                "Chromium (Run All, then every control of its panels moved), started as on "
                "Binder (``binder/postBuild`` first, ``binder/start``'s settings), each kernel "
                "left alive; then the memory of each kernel and of the server's whole process "
                "tree. Proportional set size (PSS) counts a page shared by n processes 1/n in "
                "each, so the tree's sum counts it once; resident size counts it in every "
                "process that maps it.", ""]
    for r in LAB_MEMORY:
        goals = r.data.get("goals", {})
        out += [r.heading(f"Goals: each kernel at most {number(goals.get('kernel_pss'))} MB, "
                          f"the tree at most {number(goals.get('tree_pss'))} MB (PSS)."), ""]
        rows = [[name, f"{number(k['pss'])} MB", f"{number(k['rss'])} MB",
                 f"{number(k['anon'])} MB"] for name, k in r.data.get("kernels", {}).items()]
        tree = r.data.get("tree", {})
        rows.append(["server and every kernel", f"{number(tree.get('pss'))} MB",
                     f"{number(tree.get('rss'))} MB", f"{number(tree.get('anon'))} MB"])
        out += table(["kernel", "PSS", "resident", "anonymous"], rows)
    return out


def distributed_page() -> list[str]:
    out = section("Dask")
    out += ["``benchmarks/distributed_scaling.py``: ``sphgpu.distributed`` on 1, 2 and 4 GPU "
            "workers of one machine (medians of 3). Parallel efficiency E(k) = T(1) / (k T(k)).",
            ""]
    for r in DISTRIBUTED:
        d = r.data
        out += [r.heading(""), ""]
        rows = []
        b = d.get("batch", {})
        for row in b.get("rows", []):
            rows.append([f"{b.get('maps')} alm2map, nside {b.get('nside')}, a_lm and maps on "
                         f"the GPUs", row["units"], seconds(row.get("device_s")),
                         number(row.get("efficiency_device"))])
        for row in b.get("rows", []):
            rows.append([f"the same, NumPy a_lm and maps on the workers", row["units"],
                         seconds(row.get("host_s")), number(row.get("efficiency_host"))])
        big = d.get("big", {})
        t1 = next((x["seconds"] for x in big.get("rows", []) if x["units"] == 1), None)
        for row in big.get("rows", []):
            eff = t1 / (row["units"] * row["seconds"]) if t1 else None
            rows.append([f"one alm2map, nside {big.get('nside')}, lmax {big.get('lmax')}, "
                         f"by rings", row["units"], seconds(row["seconds"]), number(eff)])
        for key in ("dr", "dr_large"):
            dr = d.get(key, {})
            for row in dr.get("rows", []):
                rows.append([f"DR of {dr.get('n_data')} points against {dr.get('randoms')} "
                             f"catalogs of {dr.get('n_random')}", row["units"],
                             seconds(row["seconds"]), number(row.get("efficiency"))])
        c = d.get("convolve", {})
        for row in c.get("rows", []):
            rows.append([f"one split convolution, nside {c.get('nside')}, host to host",
                         row["units"], seconds(row["seconds"]), "–"])
        out += table(["work", "GPUs", "time", "E(k)"], rows)
        out += figure("distributed_scaling.png", "scaling of a batch of transforms")
        out += figure("distributed_convolve.png", "a distributed convolution")
    out += distributed_scaling_rows()
    return out


def _rate(gbps, ratio) -> str:
    """A transfer's reported GB/s and its ratio to the loopback's: 0.794 GB/s (0.83x)."""
    return "–" if gbps is None else f"{number(gbps)} GB/s ({times(ratio)})"


def _split_send(steps) -> str:
    """A pair count's CountSteps (distributed_scaling.py's JSON): split + send seconds."""
    if not steps:
        return "–"
    return f"{seconds(steps['split_s'])} + {seconds(steps['send_s'])}"


def _slowest(steps) -> str:
    """The longest stripe task of a pair count's CountSteps, seconds."""
    tasks = [st["seconds"] for st in (steps or {}).get("stripes", [])]
    return seconds(max(tasks)) if tasks else "–"


def distributed_scaling_rows() -> list[str]:
    """distributed_scaling.py's format: the plain one-GPU call and 1, 2, 4 workers."""
    if not DISTRIBUTED_SCALING:
        return []
    out = section("Against the plain one-GPU call", "^")
    out += ["``benchmarks/distributed_scaling.py``: whole ``sphgpu.distributed`` calls on a "
            "fresh Dask cluster for each number of workers (one worker per GPU), against the "
            "plain one-GPU call in the same run; medians. RR: exact counts of full-sky "
            "randoms in 20 log bins 0.01-10°, equal as integers to the plain call's, from "
            "NumPy (stripes sent at every call) and from a ``Catalog`` kept on the workers "
            "(its second call); where the run has them, the ``report=`` of the median calls: "
            "the client's seconds cutting and sending the stripes, and the longest stripe "
            "task on its worker (preparing and counting new points, or counting kept ones). "
            "Kept: the a_lm sent to the GPUs once, ``alm2map_many`` and "
            "``map2alm_many`` (iter 0) futures in, futures out; plain: the in-process plan on "
            "device arrays, per map times the maps. From/to NumPy: the client's arrays sent "
            "and gathered in the call; the rates each call reports, and their ratio to the "
            "loopback's (one array sent to a worker and gathered back through Dask in the "
            "same run). Monte Carlo: T only, 5′ beam; the first run is the fresh cluster's "
            "first call. E(n) = t(plain) / (n t(n)) per unit of work.", ""]
    for r in DISTRIBUTED_SCALING:
        d = r.data
        units = d.get("units", [])
        sz = d.get("sizes", {})
        plain = d.get("plain", {})
        ran = [name for key, name in (("rr", "RR"), ("sht", "transforms"),
                                      ("mc", "Monte Carlo")) if key in plain]
        kind = "GPU" if d.get("backend") == "cuda" else "CPU"
        each_one = "one per GPU" if kind == "GPU" else "one thread each"
        out += [r.heading(f"{kind} workers: {', '.join(map(str, units)) or 'none'} "
                          f"({each_one}); workloads run: {', '.join(ran) or 'none'}."), ""]

        def each(path, fmt):
            return [fmt(get(d, f"rows.{n}.{path}")) for n in units]

        def scaled(path, factor):
            v = get(plain, path)
            return None if v is None else v * factor

        def rate(prefix):
            return [_rate(get(d, f"rows.{n}.sht.{prefix}_GBps"),
                          get(d, f"rows.{n}.sht.{prefix}_over_loopback")) for n in units]

        def equal(v):
            return "–" if v is None else ("yes" if v else "no")

        def per_s(v):
            return "–" if v is None else f"{number(v)} /s"

        def with_e(path, e_path):
            """Seconds (or a rate) per number of workers, with E(n) where the run has it."""
            cells = []
            for n in units:
                v, e = get(d, f"rows.{n}.{path}"), get(d, f"rows.{n}.{e_path}")
                cell = per_s(v) if path.startswith("mc.") else seconds(v)
                cells.append(cell if e is None else f"{cell} (E {number(e)})")
            return cells

        k, m = sz.get("maps"), sz.get("gathered")
        rr_n = sz.get("rr_n")
        rows = [
            [f"RR of {rr_n:,} randoms from NumPy" if rr_n else "RR from NumPy",
             seconds(get(plain, "rr.seconds")), *each("rr.seconds", seconds)],
            ["RR, Catalog kept on the workers", "–", *each("rr.kept_seconds", seconds)],
            ["RR counts equal to the plain call's", "–", *each("rr.counts_equal", equal)],
            ["RR from NumPy: the client's split + send", "–", *each("rr.steps", _split_send)],
            ["RR: the slowest stripe's task, from NumPy / kept", "–",
             *[f"{_slowest(get(d, f'rows.{n}.rr.steps'))} / "
               f"{_slowest(get(d, f'rows.{n}.rr.kept_steps'))}" for n in units]],
            [f"``alm2map_many``, {k} maps kept, nside {sz.get('nside')}",
             seconds(scaled("sht.alm2map_s_per_map", k or 0)),
             *with_e("sht.alm2map_kept_s", "sht.alm2map_kept_efficiency")],
            [f"``map2alm_many``, {k} maps kept", seconds(scaled("sht.map2alm_s_per_map", k or 0)),
             *with_e("sht.map2alm_kept_s", "sht.map2alm_kept_efficiency")],
            [f"``alm2map_many``, {m} maps from/to NumPy",
             seconds(scaled("sht.alm2map_numpy_s_per_map", m or 0)),
             *with_e("sht.gathered_s", "sht.gathered_efficiency")],
            ["the same: a_lm sent, GB/s (x loopback)", "–", *rate("gathered_alm2map_send")],
            ["the same: maps gathered, GB/s (x loopback)", "–",
             *rate("gathered_alm2map_receive")],
            [f"``map2alm_many``, {m} maps from/to NumPy",
             seconds(scaled("sht.map2alm_numpy_s_per_map", m or 0)),
             *with_e("sht.gathered_map2alm_s", "sht.gathered_map2alm_efficiency")],
            ["the same: maps sent, GB/s (x loopback)", "–", *rate("gathered_map2alm_send")],
            ["the same: a_lm gathered, GB/s (x loopback)", "–",
             *rate("gathered_map2alm_receive")],
            [f"Monte Carlo, nside {sz.get('mc_nside')}, first run", "–",
             *each("mc.first_run_sims_per_s", per_s)],
            ["Monte Carlo, steady", per_s(get(plain, "mc.sims_per_s")),
             *with_e("mc.steady_sims_per_s", "mc.efficiency")],
        ]
        out += table(["workload", f"plain, one {kind}",
                      *[f"{n} worker{'s' if n > 1 else ''}" for n in units]], rows)
        out += figure(r.name.replace(".json", ".png"),
                      f"sphgpu.distributed against the plain call, {r.gpu}")
    return out


FIRST_CASES = {"alm2map": "``alm2map``", "radix_sort": "``radix_sort``",
               "pair_counts": "``pair_counts``", "convolve": "``convolve`` (real space)",
               "convolve_split": "``convolve`` (split)",
               "optimize_split": "``optimize_split(cost_model='measured')``",
               "optimize_split_cached": "``optimize_split``, cost model cached"}


def first_call_page() -> list[str]:
    out = section("First calls")
    out += ["``benchmarks/first_call.py``: the first call of one public function in a new "
            "process, NumPy arrays in, synchronized; importing sphgpu and making the inputs "
            "are not counted. *Warm*: kernel and tuning caches filled by an earlier process "
            "(median and max of fresh processes); *empty*: the very first call on a machine.",
            ""]
    for r in FIRST_CALL:
        d = r.data
        out += [r.heading(""), ""]
        rows = []
        for case, label in FIRST_CASES.items():
            warm = get(d, f"warm.{case}")
            if not warm:
                continue
            empty = get(d, f"empty.{case}")
            empty_s = empty.get("first_s") if isinstance(empty, dict) else None
            goal = warm.get("goal_s")
            rows.append([label, seconds(warm.get("first_median_s")),
                         seconds(warm.get("first_max_s")), seconds(empty_s),
                         seconds(goal) if goal else "–"])
        out += table(["first call", "warm, median", "warm, max", "empty caches", "goal"],
                     rows)
    return out


def render_page() -> str:
    out = [".. Generated by docs/make_performance.py from benchmarks/results/*.json: do not edit.",
           "", "Performance", "===========", "",
           "Every number on this page is read from a results file committed under "
           "``benchmarks/results/`` by the benchmark script named in its section "
           "(``benchmarks/README.md`` describes them and how to run them). Each table is one "
           "run on one machine: its GPU, host cores and date head it, and every peer in it ran "
           "in the same process. Speedups are against that machine's own host, and hosts "
           "differ between machines of one GPU kind.", ""]
    for part in (sht_page, sort_page, tpacf_page, bin_slop_page, convolve_page,
                 montecarlo_page, master_page, io_page, notebooks_page, distributed_page,
                 first_call_page):
        out += part()
    return "\n".join(out).rstrip() + "\n"


# -- README Status table ----------------------------------------------------------------------
def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _sht(op):
    return lambda r: next((row.get(f"speedup_{op}_vs_ducc0_all") for row in r.data.get("results", [])
                           if row.get("nside") == 2048), None)


def _batch(r):
    return next((row.get("alm2map_ms_per_map") for row in r.data.get("rows", [])
                 if row.get("nside") == 2048 and row.get("maps") == 16), None)


def _pol(r):
    return next((row.get("speedup_pol_alm2map_vs_ducc0_all") for row in r.data.get("results", [])
                 if row.get("nside") == 2048), None)


def _sort(r):
    return next((row.get("ratio_perm_vs_cupy_argsort") for row in r.data.get("dtypes", [])
                 if row.get("dtype") == "uint32" and row.get("n") == 2**25), None)


def _tpacf(r):
    return next((row.get("total_speedup_vs_treecorr") for row in r.data.get("results", [])
                 if row.get("n_data") == 84000), None)


def _mc(r):
    return next((get(row, "sphgpu 1 GPU.rate") for row in r.data.get("rows", [])
                 if row.get("nside") == 2048), None)


def _master(r):
    return next((row.get("speedup_vs_ducc0") for row in r.data.get("rows", [])
                 if row.get("lmax") == 4096 and row.get("blocks") == "all"), None)


def _dask(r):
    return get(r.data, "rows.4.sht.alm2map_kept_efficiency")


def _first(r):
    return get(r.data, "warm.alm2map.first_median_s")


STATUS = [
    # capability, measure, files, pick, format, performance-page section
    ("Transforms", "alm2map, nside 2048, CuPy arrays: times ducc0 on all host threads",
     SHT, _sht("alm2map"), times, "Spherical harmonic transforms"),
    ("Batches of maps", "alm2map, nside 2048, 16 maps a call: time a map",
     SHT_BATCH, _batch, ms, "Batches of maps"),
    ("Polarization", "T,E,B alm2map, nside 2048, CuPy arrays: times ducc0's spin 2",
     SHT_POL, _pol, times, "Polarization"),
    ("Convolution", "planned convolve, nside 2048, 10′ beam, CuPy arrays: times ducc0",
     CONVOLVE, lambda r: get(r.data, "speed.speedup_plan_device_vs_ducc0"), times,
     "Convolution and the kernel split"),
    ("Radix sort", "2^25 uint32 keys with permutation, CuPy arrays: times cupy.argsort",
     SORT, _sort, times, "Radix sort"),
    ("Correlation functions", "DD + DR + RR, 84k data, 900k randoms, NumPy: times TreeCorr",
     TPACF, _tpacf, times, "Angular correlation functions"),
    ("Monte Carlo", "simulations a second at nside 2048 on one GPU", MONTECARLO, _mc,
     lambda x: f"{number(x)} /s", "Monte Carlo"),
    ("Bandpowers", "coupling matrices (4 blocks), lmax 4096, NumPy: times ducc0", MASTER,
     _master, times, "Bandpowers"),
    ("Dask", "64 alm2map at nside 2048 kept on 4 GPUs: efficiency against one GPU without "
     "Dask", DISTRIBUTED_SCALING, _dask, number, "Dask"),
    ("First call", "alm2map at nside 2048 in a new process, warm caches (median)",
     FIRST_CALL, _first, seconds, "First calls"),
]
KINDS = ("H100", "H200")


def render_status() -> str:
    """The README's Status table (Markdown), links by reference so that rows stay short."""
    lines = ["| capability | measure | " + " | ".join(KINDS) + " |",
             "|---|---|" + "---|" * len(KINDS)]
    refs = {}
    for capability, measure, results, pick, fmt, anchor in STATUS:
        ref = _slug(anchor)
        cells = []
        for kind in KINDS:
            value = newest(results, kind, pick)
            if value is None:
                cells.append("not measured")
            else:
                cells.append(f"[{fmt(value)}][{ref}]")
                refs[ref] = f"{PAGE_LINK}#{ref}"
        lines.append(f"| {capability} | {measure} | " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"[{ref}]: {target}" for ref, target in refs.items()]
    return "\n".join(lines)


def readme_with_status(text: str) -> str:
    if BEGIN not in text or END not in text:
        raise SystemExit(f"README.md has no {BEGIN} ... {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{render_status()}\n{END}{tail}"


# -- the panel's copies -----------------------------------------------------------------------
def panel_files() -> dict[str, bytes]:
    """The results files the speedup panel reads, by name, as bytes."""
    sys.path.insert(0, str(ROOT))
    from sphgpu.widgets.speedup import load_results   # needs the lab extra (ipywidgets)

    found, _ = load_results(RESULTS)
    return {f"{name}.json": (RESULTS / f"{name}.json").read_bytes() for name in sorted(found)}


PANEL_README = """\
# Benchmark results shipped with the package

Copies of the files in `benchmarks/results/` that the speedup panel
(`sphgpu.widgets.speedup_panel`) reads, so that it works from an installed wheel. They are
written by `docs/make_performance.py` (run by `make docs`); do not edit them here.
"""


# -- main -------------------------------------------------------------------------------------
def outputs() -> dict[pathlib.Path, bytes]:
    """Every generated file, by path, with its content."""
    out = {PAGE: render_page().encode(),
           README: readme_with_status(README.read_text()).encode(),
           PANEL_DATA / "README.md": PANEL_README.encode()}
    out.update({PANEL_DATA / name: data for name, data in panel_files().items()})
    return out


def stale() -> list[str]:
    """Generated files that differ from what would be generated (or are left over)."""
    want = outputs()
    bad = [str(p.relative_to(ROOT)) for p, data in want.items()
           if not p.is_file() or p.read_bytes() != data]
    extra = [str(p.relative_to(ROOT)) for p in PANEL_DATA.glob("*.json") if p not in want]
    return bad + [f"{e} (no longer in benchmarks/results)" for e in extra]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 naming the generated files that differ")
    args = p.parse_args(argv)
    if args.check:
        bad = stale()
        if bad:
            print("out of date (run python docs/make_performance.py):", *bad, sep="\n  ")
            return 1
        return 0
    want = outputs()
    PANEL_DATA.mkdir(exist_ok=True)
    for path in PANEL_DATA.glob("*.json"):
        if path not in want:
            path.unlink()
    for path, data in want.items():
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
            print("wrote", path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
