"""Binder's environment agrees with pyproject.toml and environment.yml.

Binder (CPU only, and blind to the root files because binder/ exists) installs what
binder/requirements.txt says: the package with its ``lab`` extra, so pyproject.toml is the one
list of dependencies. These tests keep the three files from drifting apart and check that the
notebooks import nothing Binder would lack.
"""

import ast
import importlib.metadata
import json
import os
import pathlib
import re
import sys
import tomllib

import pytest

yaml = pytest.importorskip("yaml")
packaging_requirements = pytest.importorskip("packaging.requirements")
from packaging.specifiers import SpecifierSet  # noqa: E402
from packaging.utils import canonicalize_name  # noqa: E402
from packaging.version import Version  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS = PROJECT["optional-dependencies"]
#: The package itself: "-e .[a,b]", ". [a]", "."
LOCAL = re.compile(r"^(?:-e\s*)?\.\s*(?:\[(?P<extras>[^\]]*)\])?$")


def _requirements(lines):
    return [packaging_requirements.Requirement(x) for x in lines]


def _declared(extras):
    """{canonical name: Requirement} of the core dependencies and the given extras."""
    reqs = _requirements(PROJECT["dependencies"])
    for e in extras:
        reqs += _requirements(EXTRAS[e])
    return {canonicalize_name(r.name): r for r in reqs}


def _local_extras(line, where):
    m = LOCAL.match(line)
    assert m, f"{where}: expected the local package ('-e .[extras]'), got {line!r}"
    extras = [e.strip() for e in (m.group("extras") or "").split(",") if e.strip()]
    unknown = set(extras) - set(EXTRAS)
    assert not unknown, f"{where}: extras {unknown} are not in pyproject.toml"
    return extras


def _binder_lines():
    text = (ROOT / "binder" / "requirements.txt").read_text()
    return [x.split("#")[0].strip() for x in text.splitlines() if x.split("#")[0].strip()]


def binder_extras():
    local = [x for x in _binder_lines() if x.startswith(("-e", "."))]
    assert len(local) == 1, "binder/requirements.txt must install the package itself, once"
    return _local_extras(local[0], "binder/requirements.txt")


def environment():
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def test_binder_installs_the_package_with_the_lab_extra_and_no_gpu():
    extras = binder_extras()
    assert "lab" in extras and "gpu" not in extras


def test_binder_pins_only_what_pyproject_declares():
    declared = _declared(binder_extras())
    for line in _binder_lines():
        if line.startswith(("-e", ".")):
            continue
        req = packaging_requirements.Requirement(line)
        name = canonicalize_name(req.name)
        assert name in declared, f"binder/requirements.txt adds {req.name}, which " \
                                 f"pyproject.toml does not declare"
        assert req.specifier == declared[name].specifier, (
            f"{req.name}: binder pins {req.specifier}, pyproject.toml {declared[name].specifier}")


def test_python_versions_agree():
    runtime = (ROOT / "binder" / "runtime.txt").read_text().strip()
    assert runtime.startswith("python-"), runtime
    binder_python = runtime.removeprefix("python-")
    conda_python = [d.split("=", 1)[1] for d in environment()["dependencies"]
                    if isinstance(d, str) and d.startswith("python=")]
    assert conda_python == [binder_python], (conda_python, binder_python)
    assert Version(binder_python) in SpecifierSet(PROJECT["requires-python"])


def test_environment_yml_installs_the_package_with_binders_extras():
    deps = environment()["dependencies"]
    pip_sections = [d["pip"] for d in deps if isinstance(d, dict) and "pip" in d]
    assert len(pip_sections) == 1, "environment.yml must have one pip section"
    local = [x for x in pip_sections[0] if x.startswith(("-e", "."))]
    assert len(local) == 1, "environment.yml must install the package itself, once"
    extras = _local_extras(local[0], "environment.yml")
    assert set(binder_extras()) <= set(extras), "the workstation must have what Binder has"
    # Anything else named in environment.yml must be declared in pyproject.toml.
    everything = _declared(EXTRAS)
    others = [d for d in deps if isinstance(d, str)] + [x for x in pip_sections[0]
                                                        if x not in local]
    for d in others:
        name = re.split(r"[=<>!~ \[]", d, maxsplit=1)[0]
        if name in ("python", "pip"):
            continue
        assert canonicalize_name(name) in everything, \
            f"environment.yml installs {name}, which pyproject.toml does not declare"


def _notebook_imports(path):
    """Top-level modules a notebook imports outside try/except (optional imports excepted)."""
    cells = json.loads(path.read_text())["cells"]
    found = set()
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        source = "\n".join(x for x in source.splitlines() if not x.lstrip().startswith(("%", "!")))
        tree = ast.parse(source)
        optional = {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try)
                    for s in t.body for n in ast.walk(s)}
        for node in ast.walk(tree):
            if id(node) in optional:
                continue
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


def _installed_closure(requirements):
    """Canonical names of the distributions pip installs for ``requirements`` (declared ones
    and, through the installed metadata, everything they require, extras included)."""
    seen, todo = set(), list(requirements)
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        extras = set(req.extras)
        key = (name, frozenset(extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            requires = importlib.metadata.requires(req.name) or []
        except importlib.metadata.PackageNotFoundError:
            continue                     # not installed here: nothing more to follow
        for line in requires:
            sub = packaging_requirements.Requirement(line)
            envs = [{"extra": e} for e in extras] or [{"extra": ""}]
            if sub.marker is None or any(sub.marker.evaluate(env) for env in envs):
                todo.append(sub)
    return {name for name, _ in seen}


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")),
                         ids=lambda p: p.name)
def test_notebooks_import_only_what_binder_installs(path):
    installed = _installed_closure(_declared(binder_extras()).values())
    dists = importlib.metadata.packages_distributions()
    for module in sorted(_notebook_imports(path)):
        if module in sys.stdlib_module_names or module == "sphgpu":
            continue
        names = {canonicalize_name(d) for d in dists.get(module, [module])}
        assert names & installed, (
            f"{path.name} imports {module} (from {sorted(names)}), which Binder does not "
            f"install: add it to pyproject.toml's dependencies or the lab extra")


def test_binder_start_pins_the_cpu_backend_and_readme_badge_opens_start_here():
    start = ROOT / "binder" / "start"
    assert os.access(start, os.X_OK) and 'exec "$@"' in start.read_text()
    assert "SPHGPU_BACKEND=cpu" in start.read_text()
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"https://mybinder\.org/v2/gh/[\w.-]+/[\w.-]+/HEAD\?urlpath=lab/tree/(\S+?)\)",
                  readme)
    assert m, "README.md needs the Binder badge"
    assert (ROOT / m.group(1)).is_file(), m.group(1)
