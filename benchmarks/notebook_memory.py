"""Memory and wall time of each notebook's kernel after Run All, on the CPU backend.

Run from the repository root (one core, as a Binder class would have):

    python benchmarks/notebook_memory.py --one-core --out benchmarks/results
    python benchmarks/notebook_memory.py --notebooks 00 03 --out /tmp/nbmem   # a few only

Every notebook in ``notebooks/*.ipynb`` (or those whose names start with ``--notebooks``) is
executed cell by cell by nbclient in a fresh ``python3`` kernel with ``SPHGPU_BACKEND=cpu``,
twice:

``cold``
    Numba's and sphgpu's caches in fresh, empty directories (``NUMBA_CACHE_DIR``,
    ``SPHGPU_CACHE_DIR``): the first Run All on a new machine, every kernel compiled.
``warm``
    A second fresh kernel on the directories the cold run filled: what a user meets when the
    caches are warm (Binder's postBuild runs every notebook once), Numba's code loaded from
    disk.

After the last cell, before the kernel is shut down, the kernel process's ``VmRSS`` (memory
resident now, MB) and ``VmHWM`` (its peak) are read from ``/proc/<pid>/status``, with the
resident memory of its child processes (Dask workers) summed apart; ``rss_after_cell_mb`` lists
the kernel's RSS after each code cell, to find the cell that holds memory; ``numba_loaded``
says whether the kernel loaded Numba's compiler (about 130 MB: its import and its first
compiled call: ``numba_cost_mb`` measures it in a plain interpreter); ``cell_s`` the seconds
of each code cell. ``wall_s`` is the
Run All time (kernel start excluded); ``anon_mb`` the part of the RSS no file backs (what a
second kernel cannot share: libraries' pages are shared). The kernels get ``binder/start``'s
exports (``kernel_environment``). With every notebook open at once in one JupyterLab, the
memory of each kernel and of the server's tree is measured by the browser test
(tests/browser/test_lab_browser.py, proportional set sizes). The issue's goals (issue 40): kernel RSS after Run All at
most 250 MB with warm caches, each notebook at most 60 s on one core with cold caches. The
JSON (``notebook_memory.json``) holds the machine, whether the run was pinned to one core, the
load average before and after (the development machine is shared), and one row per notebook.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import re
import shutil
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: The issue's goals: kernel memory after Run All (MB, 10^6 bytes) and one-core cold time (s).
GOAL_RSS_MB = 250.0
GOAL_COLD_S = 60.0
#: Per-cell limit: a cold first call compiles for tens of seconds on a loaded core.
CELL_TIMEOUT_S = 900


def binder_exports() -> dict:
    """What ``binder/start`` exports before JupyterLab starts on Binder (and ``make lab`` sets):
    the kernels here run with it, as a class's do."""
    out = {}
    for line in (ROOT / "binder" / "start").read_text().splitlines():
        m = re.fullmatch(r"export (\w+)=(\S+)", line.strip())
        if m:
            out[m.group(1)] = m.group(2)
    return out


def status_mb(pid: int) -> dict:
    """``VmRSS``, ``VmHWM`` and ``RssAnon`` (the resident memory no file backs) of process
    ``pid`` in MB (10^6 bytes), from /proc."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon"):
                out[key] = int(value.split()[0]) * 1024 / 1e6      # kB in /proc
    return out


def children_rss_mb(pid: int) -> float:
    """Summed VmRSS (MB) of every descendant of ``pid`` (Dask workers, their nannies)."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            kids = []
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    kids += [int(k) for k in f.read().split()]
        except OSError:
            continue
        for k in kids:
            try:
                total += status_mb(k).get("VmRSS", 0.0)
            except OSError:
                pass
        todo += kids
    return total


def numba_in(pid: int) -> bool:
    """Whether process ``pid`` has loaded Numba's compiler (llvmlite's library is mapped)."""
    with open(f"/proc/{pid}/maps") as f:
        return any("llvmlite" in line for line in f)


def run_notebook(path: pathlib.Path, env: dict) -> dict:
    """Execute ``path`` in a fresh kernel with this process's environment changed by ``env``
    (a value None removes the variable); its memory and time after Run All."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    saved = dict(os.environ)
    for key, value in env.items():           # the kernel inherits this process's environment
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                         resources={"metadata": {"path": str(path.parent)}})
        with client.setup_kernel():
            pid = client.km.provisioner.process.pid
            after_cell, cell_s, errors = [], [], []
            t0 = time.perf_counter()
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                c0 = time.perf_counter()
                try:
                    client.execute_cell(cell, index)
                except nbclient.exceptions.CellExecutionError as exc:
                    errors.append(f"cell {index}: {str(exc).splitlines()[-1][:300]}")
                    break
                after_cell.append(round(status_mb(pid)["VmRSS"], 1))
                cell_s.append(round(time.perf_counter() - c0, 2))
            wall = time.perf_counter() - t0
            mem = status_mb(pid)
            children = children_rss_mb(pid)
            numba_loaded = numba_in(pid)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return {"wall_s": round(wall, 2), "rss_mb": round(mem["VmRSS"], 1),
            "anon_mb": round(mem["RssAnon"], 1), "hwm_mb": round(mem["VmHWM"], 1), "children_rss_mb": round(children, 1),
            "numba_loaded": numba_loaded, "rss_after_cell_mb": after_cell, "cell_s": cell_s,
            "errors": errors}


_NUMBA_COST = """
import json, sys
def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 / 1e6 for l in f if l.startswith("VmRSS"))
import numpy as np
out = {"numpy_mb": rss()}
import sphgpu
out["sphgpu_mb"] = rss()
import numba
out["numba_import_mb"] = rss()
sphgpu.radix_sort(np.arange(100, dtype=np.uint32)[::-1], backend="cpu")
out["first_numba_call_mb"] = rss()
print(json.dumps(out))
"""


def numba_cost(env: dict) -> dict:
    """RSS (MB) of a fresh interpreter after NumPy, ``import sphgpu``, ``import numba`` and a
    first call of compiled code (``radix_sort`` on the CPU), run twice on the caches of
    ``env``: the second run loads from the cache, as a warm kernel does."""
    import subprocess

    e = dict(os.environ, **env)
    runs = [subprocess.run([sys.executable, "-c", _NUMBA_COST], env=e, capture_output=True,
                           text=True, check=True, timeout=600) for _ in range(2)]
    return json.loads(runs[-1].stdout)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"),
                        help="folder of notebook_memory.json (default benchmarks/results)")
    parser.add_argument("--notebooks", nargs="*", default=None,
                        help="run only notebooks whose names start with these (e.g. 00 06)")
    parser.add_argument("--one-core", action="store_true",
                        help="pin this process and its kernels to the first allowed core")
    parser.add_argument("--skip-cold", action="store_true",
                        help="warm runs only, on the default cache directories")
    args = parser.parse_args(argv)

    from sphgpu.bench import machine_info

    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if args.notebooks:
        paths = [p for p in paths if p.name.startswith(tuple(args.notebooks))]
        if not paths:
            parser.error(f"--notebooks {args.notebooks} matches no notebook in notebooks/")
    if args.one_core:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {
        "machine": machine_info(),
        "cores_used": sorted(os.sched_getaffinity(0)),
        "shared_machine_note": ("the development machine (2 cores) was shared with other "
                                "jobs: times are upper bounds, see load_average"),
        "load_average_before": list(os.getloadavg()),
        "goals": {"rss_mb": GOAL_RSS_MB, "cold_one_core_s": GOAL_COLD_S},
        # notebook 01 compares with healpy where it is installed (Binder's environment has no
        # healpy): its kernel holds healpy too when this is true
        "healpy_installed": importlib.util.find_spec("healpy") is not None,
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "notebooks": [],
    }
    base = dict(binder_exports(), SPHGPU_BACKEND="cpu", PYDEVD_DISABLE_FILE_VALIDATION="1")
    result["kernel_environment"] = base
    caches = tempfile.mkdtemp(prefix="nbmem-")
    try:
        # what Numba alone costs a process, the floor of every notebook that compiles code
        result["numba_cost_mb"] = numba_cost(dict(base, NUMBA_CACHE_DIR=caches))
    finally:
        shutil.rmtree(caches, ignore_errors=True)
    for path in paths:
        row = {"notebook": path.name}
        caches = tempfile.mkdtemp(prefix="nbmem-")
        env = dict(base, NUMBA_CACHE_DIR=os.path.join(caches, "numba"),
                   SPHGPU_CACHE_DIR=os.path.join(caches, "sphgpu"))
        try:
            if not args.skip_cold:
                row["cold"] = run_notebook(path, env)
                row["warm"] = run_notebook(path, env)
            else:
                row["warm"] = run_notebook(path, base)
        finally:
            shutil.rmtree(caches, ignore_errors=True)
        row["warm_rss_within_goal"] = row["warm"]["rss_mb"] <= GOAL_RSS_MB
        if "cold" in row:
            row["cold_within_goal"] = row["cold"]["wall_s"] <= GOAL_COLD_S
        result["notebooks"].append(row)
        print(json.dumps({k: v for k, v in row.items()}, default=str), flush=True)
        result["load_average_after"] = list(os.getloadavg())
        (out / "notebook_memory.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
