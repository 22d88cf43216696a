"""A real browser drives JupyterLab: open 00_start_here.ipynb, run it, move a slider of the
transform explorer, and check that its plot and numbers change.

Needs Debian's ``chromium`` (``make browser-deps`` installs it as root) and the ``playwright``
package (the ``test`` extra; its wheel carries the driver, and the browser is the system one,
so nothing is downloaded). Without chromium the test is skipped, unless
SPHGPU_REQUIRE_BROWSER=1 (set by .ci/run), where it fails. JupyterLab listens on 127.0.0.1
with a random token, on a copy of the notebook, with the CPU backend. A screenshot is saved to
build/test-artifacts/ either way.
"""

from __future__ import annotations

import os
import pathlib
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHROMIUM = pathlib.Path(os.environ.get("SPHGPU_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = ROOT / "build" / "test-artifacts"
NOTEBOOK = "00_start_here.ipynb"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]       # containers often have a tiny /dev/shm
#: Seconds allowed for each stage; the whole test stays well under two minutes.
SERVER_START_S = 60
NOTEBOOK_RUN_S = 90
UPDATE_S = 30


def _require_browser():
    """Skip (or fail where the browser is required) when chromium or playwright is missing."""
    required = os.environ.get("SPHGPU_REQUIRE_BROWSER") == "1"
    missing = []
    if not CHROMIUM.exists():
        missing.append(f"{CHROMIUM} not found (Debian: apt-get install chromium, or "
                       f"`make browser-deps` as root)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the playwright package is not installed (the test extra)")
    if missing:
        why = "; ".join(missing)
        if required:
            pytest.fail(f"SPHGPU_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab_server(tmp_path):
    """JupyterLab on 127.0.0.1 with a token, serving a copy of the notebook; yields its URL."""
    _require_browser()
    work = tmp_path / "notebooks"
    work.mkdir()
    shutil.copy(ROOT / "notebooks" / NOTEBOOK, work / NOTEBOOK)
    # A quiet, clean JupyterLab: start the notebook's kernel without asking, keep every cell in
    # the page (no windowing, which drops cells scrolled out of view), fetch no news.
    settings = tmp_path / "settings" / "@jupyterlab"
    tracker = '{"autoStartDefaultKernel": true, "windowingMode": "none"}'
    for ext, name, value in (("notebook-extension", "tracker", tracker),
                             ("apputils-extension", "notification", '{"fetchNews": "false"}')):
        (settings / ext).mkdir(parents=True, exist_ok=True)
        (settings / ext / f"{name}.jupyterlab-settings").write_text(value)
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, SPHGPU_BACKEND="cpu", OMP_WAIT_POLICY="PASSIVE",
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               IPYTHONDIR=str(tmp_path / "ipython"))
    env.pop("NUMBA_ENABLE_CUDASIM", None)          # the kernel is a user's, not a test's
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
           f"--port={port}", "--port-retries=0", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={work}", "--allow-root",
           f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
           f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    log = open(tmp_path / "jupyter.log", "wb")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("JupyterLab did not start:\n"
                                + (tmp_path / "jupyter.log").read_text()[-3000:])
                time.sleep(0.5)
        yield f"{base}/lab/tree/{NOTEBOOK}?token={token}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _wait_for(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


def test_start_here_runs_and_a_slider_updates_the_panel(lab_server, tmp_path):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "lab_start_here.png"
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            user_data_dir=str(tmp_path / "chromium-profile"), executable_path=str(CHROMIUM),
            headless=True, args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 1000})
        page = context.pages[0] if context.pages else context.new_page()
        try:
            page.goto(lab_server, timeout=SERVER_START_S * 1000)
            page.locator(".jp-NotebookPanel .jp-Notebook").first.wait_for(
                timeout=SERVER_START_S * 1000)
            # A kernel dialog, should one still come up, accepts the preferred kernel.
            dialog = page.locator(".jp-Dialog .jp-mod-accept")
            try:
                dialog.first.click(timeout=3000)
            except Exception:  # no dialog: the settings above took effect
                pass
            # Run > Run All Cells
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()

            panel = page.locator(".sphgpu-transform-panel")
            image = panel.locator("img").first
            numbers = panel.locator(".sphgpu-numbers").first
            image.wait_for(timeout=NOTEBOOK_RUN_S * 1000)
            numbers.wait_for(timeout=UPDATE_S * 1000)
            # The last cell, the accuracy check, ran and passed.
            page.get_by_text("passed; notebook ran in").first.wait_for(
                timeout=NOTEBOOK_RUN_S * 1000)
            panel.scroll_into_view_if_needed()
            src0, text0 = image.get_attribute("src"), numbers.inner_text()
            assert src0 and "μK" in text0

            # Move the seed slider one step with the keyboard.
            seed = panel.locator(".widget-slider", has=page.locator(
                ".widget-label", has_text="seed")).first
            readout0 = seed.locator(".widget-readout").inner_text()
            handle = seed.locator(".noUi-handle").first
            handle.focus()
            handle.press("ArrowRight")
            _wait_for(lambda: seed.locator(".widget-readout").inner_text() != readout0,
                      UPDATE_S, "the seed slider to move")
            _wait_for(lambda: image.get_attribute("src") != src0
                      and numbers.inner_text() != text0, UPDATE_S,
                      "the plot and the numbers to change")
            assert "μK" in numbers.inner_text()
            assert "error" not in panel.locator(".sphgpu-message").all_inner_texts()
        finally:
            page.screenshot(path=str(shot), full_page=False)
            context.close()
    assert shot.stat().st_size > 0
