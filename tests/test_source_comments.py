"""Source comments are a reference, not a diary (DESIGN.md, "Documentation is a reference"; issue
43): no line of sphgpu/ or widgets/ names a GPU model together with a timing or a rate (those
live in ``benchmarks/results/`` and the generated performance page), and none cites
``results/runs/``, which is gone (history lives in git).
"""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDERS = (ROOT / "sphgpu", ROOT / "widgets")

#: a GPU model, as a comment would name one
GPU = re.compile(
    r"\b(?:[HA]100|H200|GH200|B200|V100|T4|L4|L40S?|A10G?|A40|RTX ?\d{3,4}|MI\d{3}X?)\b")
#: a number followed by a unit of time or rate, or a ratio ("3x", "0.79x", "2 ×")
TIMING = re.compile(
    r"\d(?:[\d.,]*\d)?\s*(?:ms|us|µs|μs|ns|s|sec|seconds?|min|minutes?|[GMT]i?B/s|[GT]FLOP/s"
    r"|FLOP/s|Hz|x|×)(?![\w/])"
)
STALE = "results/runs/"


def offending_lines(text: str) -> list[tuple[int, str]]:
    """(line number, reason) of each line naming a GPU model with a timing, or results/runs/."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if GPU.search(line) and TIMING.search(line):
            out.append((number, "names a GPU model with a timing"))
        if STALE in line:
            out.append((number, "cites results/runs/ (gone: cite benchmarks/results/)"))
    return out


def test_the_pattern_finds_what_it_is_for():
    bad = ["# 4.5 ms a map on an H200", "took 3-4x slower on an H100", "(one H100: 2.91 ms)",
           "13.6 us on an H100 machine", "at 55 GB/s on the A100", "RTX 4090: 80 TFLOP/s",
           "see benchmarks/results/runs/x.json"]
    good = ["# 8 GiB (a tenth of an 80 GB GPU's memory)", "e.g. \"NVIDIA H100 80GB HBM3\"",
            "(benchmarks/results/sort_h200.json)", "1 ms of the launch's tail",
            "GPU 0: NVIDIA H200 (UUID: GPU-1111)"]
    assert all(offending_lines(line) for line in bad), [b for b in bad if not offending_lines(b)]
    assert not any(offending_lines(line) for line in good), [
        g for g in good if offending_lines(g)]


def test_no_source_line_names_a_gpu_with_a_timing():
    found = []
    for folder in FOLDERS:
        for path in sorted(folder.rglob("*.py")):
            for number, reason in offending_lines(path.read_text(encoding="utf-8")):
                found.append(f"{path.relative_to(ROOT)}:{number}: {reason}")
    assert not found, ("timings belong in benchmarks/results/, not in comments; a comment gives "
                       "the reason for a constant and the results file:\n" + "\n".join(found))


def test_no_notebook_cell_names_a_gpu_with_a_timing():
    """The teaching notebooks send readers to the performance page for GPU numbers."""
    import json

    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for k, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            for number, reason in offending_lines("".join(cell["source"])):
                found.append(f"{path.name}, cell {k}, line {number}: {reason}")
    assert not found, "\n".join(found)
