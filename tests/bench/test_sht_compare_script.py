"""benchmarks/sht_compare.py's results file, from the processes' RESULT lines (the timing
children need a GPU; their output is stood in for here)."""

import json
import types

from tests.benchmark_scripts import load_benchmark


def _child(ms, samples):
    return {"machine": {"gpu": "test"}, "ms": ms, "first_s": {c: 1.0 for c in ms},
            "summary": {c: {"sumsq": 1.0, "samples": samples} for c in ms},
            "host_ms_alm2map_batch_call": None}


def test_results_are_written_after_every_process_and_compare_the_trees(tmp_path):
    sc = load_benchmark("sht_compare")
    args = types.SimpleNamespace(out=str(tmp_path), name="c.json", nside=8, batch=2, repeat=1,
                                 rounds=2)
    trees = {"before": "/a", "after": "/b"}
    runs = {"before": [_child({"map2alm": 4.0}, [1.0, -2.0])], "after": []}
    partial = sc._result(args, trees, runs)
    # the run cut short after the first process keeps it, with no comparison yet
    assert partial["processes"] == {"before": 1, "after": 0}
    assert partial["rows"] == [{"call": "map2alm",
                                "before": {"ms_median": 4.0, "ms_each_process": [4.0]}}]
    runs["after"].append(_child({"map2alm": 3.0}, [1.0, -2.5]))
    runs["before"].append(_child({"map2alm": 6.0}, [1.0, -2.0]))
    sc._result(args, trees, runs)
    written = json.loads((tmp_path / "c.json").read_text())
    [row] = written["rows"]
    assert row["before"]["ms_each_process"] == [4.0, 6.0]
    assert row["ratio"] == 3.0 / 5.0
    assert row["max_rel_diff"] == 0.5 / 2.0
