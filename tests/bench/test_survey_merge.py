"""tpacf_survey.py --merge: runs of different workloads on one machine kind become one record,
each run's date and whether its counts were compared kept; runs that do not belong together
are refused."""

import json

import pytest

from tests.benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def survey():
    return load_benchmark("tpacf_survey")


def _run(tmp_path, name, workload, plain, date, gpu="NVIDIA H200"):
    run = {"machine": {"gpu": gpu}, "backend": "cuda", "units": [4], "quick": False,
           "sizes": {f"{workload}_n": 10}, "workloads": [workload],
           "plain": {workload: {"first_s": 3.0}} if plain else {},
           "rows": {"4": {workload: {"first_s": 1.0, "counts_equal": True if plain else None}}},
           "plain_skipped": not plain, "date": date, "wall_s": 5.0}
    path = tmp_path / name
    path.write_text(json.dumps(run))
    return str(path)


def test_two_runs_become_one_record(survey, tmp_path):
    a = _run(tmp_path, "a.json", "rr8", True, "2026-11-29 19:26:09 UTC")
    b = _run(tmp_path, "b.json", "des", False, "2026-11-29 19:38:13 UTC")
    data = survey.merge([a, b])
    assert data["workloads"] == ["rr8", "des"]
    assert data["plain"] == {"rr8": {"first_s": 3.0}}
    assert data["rows"]["4"]["rr8"]["counts_equal"] is True
    assert data["rows"]["4"]["des"]["counts_equal"] is None
    assert data["sizes"] == {"rr8_n": 10, "des_n": 10}
    assert [(r["file"], r["plain_skipped"]) for r in data["runs"]] == [("a.json", False),
                                                                       ("b.json", True)]
    assert data["date"] == "2026-11-29 19:38:13 UTC"
    assert "des" in survey.table(data) and "rr8" in survey.table(data)


def test_runs_that_do_not_belong_together_are_refused(survey, tmp_path):
    a = _run(tmp_path, "a.json", "rr8", True, "2026-11-29")
    again = _run(tmp_path, "again.json", "rr8", False, "2026-11-29")
    with pytest.raises(SystemExit, match="workloads .*rr8.* in two runs"):
        survey.merge([a, again])
    other = _run(tmp_path, "other.json", "des", True, "2026-11-29", gpu="NVIDIA H100")
    with pytest.raises(SystemExit, match="another GPU"):
        survey.merge([a, other])
