"""One version: the package's, the one pip installs, and the CHANGELOG's latest release agree."""

import pathlib
import re
import warnings

import pytest

import sphgpu

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _changelog_releases():
    """[(version, date or None)] of the CHANGELOG's release headings, newest first."""
    text = (ROOT / "CHANGELOG.md").read_text()
    return [(m.group(1), m.group(2)) for m in
            re.finditer(r"^## (\d+\.\d+\.\d+)(?: \((\d{4}-\d\d-\d\d)\))?\s*$", text, re.M)]


def test_pyproject_builds_the_version_of_sphgpu():
    config = pytest.importorskip("setuptools.config.pyprojecttoml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # setuptools calls [tool.setuptools] beta
        project = config.read_configuration(ROOT / "pyproject.toml", expand=True)["project"]
    assert project["version"] == sphgpu.__version__


def test_the_latest_release_of_the_changelog_is_the_package_version():
    releases = _changelog_releases()
    assert releases, "CHANGELOG.md has no '## X.Y.Z (YYYY-MM-DD)' heading"
    version, date = releases[0]
    assert version == sphgpu.__version__, (
        f"CHANGELOG.md's latest release is {version}, sphgpu.__version__ is "
        f"{sphgpu.__version__}")
    assert date, f"CHANGELOG.md: release {version} has no date"


def test_the_changelog_lists_releases_newest_first_each_once():
    versions = [tuple(map(int, v.split("."))) for v, _ in _changelog_releases()]
    assert versions == sorted(set(versions), reverse=True)
    dates = [d for _, d in _changelog_releases()]
    assert all(dates) and dates == sorted(dates, reverse=True)


def test_unreleased_is_one_heading_above_the_releases():
    headings = re.findall(r"^## (.+?)\s*$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings[0] == "Unreleased" and headings.count("Unreleased") == 1, headings
