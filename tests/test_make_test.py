"""`make test` runs every stage and fails at the end (a failed first stage used to stop make
before the timing tests and the docs ran)."""

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("target", ["test", "test-all"])
def test_every_stage_runs_and_the_target_fails_at_the_end(tmp_path, target):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "calls.log"
    fake = venv / "bin" / "python"
    # a Python that records each call and fails the first pytest stage only
    fake.write_text(f"#!/bin/sh\necho \"$*\" >> {log}\n"
                    "case \"$*\" in *pytest*timing*) [ \"$(grep -c pytest "
                    f"{log})\" = 1 ] && exit 1;; esac\nexit 0\n")
    fake.chmod(0o755)
    (venv / ".installed-lab-test-docs").touch()        # the environment is "installed"
    env = dict(os.environ, MAKEFLAGS="")
    # -o browser-deps: nothing is installed here (as root it would apt-get)
    run = subprocess.run(["make", "-s", "-o", "browser-deps", target, f"VENV={venv}"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    calls = log.read_text().splitlines()
    assert run.returncode != 0
    assert sum("pytest" in c for c in calls) == 2 and any("sphinx" in c for c in calls), calls
    assert "failed stages: tests" in run.stdout, run.stdout + run.stderr
