"""Checks of the package's shape that anyone can run (DESIGN.md, "Backends" and the layout).

* no import circle among sphgpu's modules, counting every import statement (those inside
  functions too: a circle held together by late imports is still a circle);
* no module but ``sphgpu/backends.py`` compares backend names as strings: callers ask the
  registry (:func:`sphgpu.backends.load`, :func:`sphgpu.backends.info`) instead;
* every backend a capability declares (``sphgpu/<cap>/_declare.py``, read through
  :func:`sphgpu.backends.declaration`) has a module that provides what the capability's
  Protocol declares;
* no module imports a private name (``_name``, not a dunder) from a module outside its own
  package, nor anything from a private module of a package that is not its own or above it
  (``sphgpu.sht._cuda`` from ``sphgpu.sims``): the capabilities reach each other, and the shared
  modules at the bottom of the import graph (``sphgpu._validate``, ``sphgpu._device``...),
  through public names; inside a package, the private names one module takes from another are
  listed in :data:`PRIVATE_NAMES_ALLOWED`, which can only shrink;
* the array kinds and argument checks (``sphgpu._device``, ``sphgpu._validate``) sit at the
  bottom of the import graph and import no kernel code;
* only the transform plan (``sphgpu.sht.plan``) and its staged steps call the SHT backend
  module; elsewhere a backend module is read for its flags alone;
* each capability folder has the same shape (DESIGN.md): the module of each backend it declares
  (``reference.py``, ``_cpu.py``, ``_cuda.py`` with its kernels in ``_cuda_kernels.py``) and
  its public functions in public modules.
"""

from __future__ import annotations

import ast
import importlib
import pathlib

import pytest

from sphgpu import backends

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: source folders and the package name each is installed as (widgets/ is sphgpu.widgets)
PACKAGES = {ROOT / "sphgpu": "sphgpu", ROOT / "widgets": "sphgpu.widgets"}
NAMES = set(backends.BACKENDS)


def _modules():
    """{module name: path} of every .py file of sphgpu/ and widgets/."""
    out = {}
    for folder, package in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([package] + parts)] = path
    return out


MODULES = _modules()


def _imports(name, path, known):
    """The sphgpu modules that module ``name`` imports anywhere in its source ("from pkg
    import mod" imports the module pkg.mod; "from mod import f" the module mod)."""
    return {target for target, _, _ in _imported_names(name, path, known)
            if target in known and target != name}


def _cycle(graph):
    """One import circle of ``graph`` as a list of modules (first == last), or None."""
    state = {}
    stack = []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_cycle_finder_finds_a_circle():
    # the check can fail: a -> b -> c -> a is reported as that path
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_relative_imports_resolve_to_modules():
    graph = {m: _imports(m, p, MODULES) for m, p in MODULES.items()}
    # "from .. import backends" in a subpackage and "from . import x" in a package
    assert "sphgpu.backends" in graph["sphgpu.sort.api"]
    assert "sphgpu.sht.transforms" in graph["sphgpu.sht"]


def test_no_import_circle():
    graph = {m: _imports(m, p, MODULES) for m, p in MODULES.items()}
    cycle = _cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


# ----------------------------------------------------------------------------- backend names
#: Known comparisons of backend names outside backends.py, to be removed: {path: count}.
#: sphgpu/tpacf is being rewritten on another branch; it compares none today, and whatever its
#: rewrite brings goes here until it asks the registry instead.
ALLOWED: dict[str, int] = {}


def _is_name(node):
    return isinstance(node, ast.Constant) and node.value in NAMES


def _holds_name(node):
    """A backend-name constant, or a literal tuple/list/set holding one."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_name(e) for e in node.elts)
    return _is_name(node)


def _mentions_backend(node):
    return "backend" in ast.unparse(node).lower()


def _string_parsing(tree):
    """Line numbers where backend names are compared as strings: ``x == "cuda"``,
    ``b in ("cpu", "reference")``, ``backend == "auto"``, ``case "cuda":`` and lookups in a
    literal dict keyed by backend names (``{"cpu": ...}[backend]``)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left] + node.comparators
            # "auto" is also a method name (convolve's method="auto"): count it only where
            # the other side names a backend
            auto = any(isinstance(o, ast.Constant) and o.value == "auto" for o in operands) \
                and any(_mentions_backend(o) for o in operands)
            if auto or any(_holds_name(o) for o in operands):
                lines.append(node.lineno)
        elif isinstance(node, ast.match_case):
            values = [p for p in ast.walk(node.pattern) if isinstance(p, ast.MatchValue)]
            if any(_is_name(p.value) for p in values):
                lines.append(node.pattern.lineno)
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Dict):
            if any(k is not None and _is_name(k) for k in node.value.keys):
                lines.append(node.lineno)
    return sorted(lines)


def test_string_check_sees_each_form():
    src = ("a = b == 'cuda'\nc = x in ('cpu', 'q')\nd = backend != 'auto'\n"
           "e = {'cpu': 1}[k]\nmatch k:\n    case 'reference':\n        pass\n"
           "f = method == 'auto'\ng = {'cpu': 1}\n")
    assert _string_parsing(ast.parse(src)) == [1, 2, 3, 4, 6]


def test_backend_names_are_parsed_only_in_backends_py():
    found = {}
    for name, path in MODULES.items():
        if name == "sphgpu.backends":
            continue
        lines = _string_parsing(ast.parse(path.read_text(), str(path)))
        key = str(path.relative_to(ROOT))
        if lines and len(lines) != ALLOWED.get(key):
            found[key] = lines
    assert not found, ("backend names compared as strings (ask sphgpu.backends instead): "
                       + "; ".join(f"{p} lines {ls}" for p, ls in sorted(found.items())))


# ----------------------------------------------------------------------------- protocols
#: (capability, backend) of every backend a capability declares (sphgpu/<cap>/_declare.py): a
#: capability without a CUDA backend has no CUDA module to check
DECLARED = [(c, b) for c in backends.CAPABILITIES for b in backends.declaration(c).backends]


def protocol_problems(declared, backend):
    """How the module of ``backend`` of capability ``declared`` (a
    :class:`~sphgpu.backends.Capability`) departs from its protocol: the members it lacks."""
    protocol = declared.protocol
    module = importlib.import_module(declared.module(backend))
    missing = [m for m in backends.protocol_members(protocol) if not hasattr(module, m)]
    if missing or not isinstance(module, protocol):
        return [f"{module.__name__} lacks {missing} of {protocol.__name__}"]
    return []


@pytest.mark.parametrize("capability, name", DECLARED)
def test_backend_modules_implement_their_protocol(capability, name):
    # CUDA modules import under Numba's simulator (tests/conftest.py), so all are checked
    problems = protocol_problems(backends.declaration(capability), name)
    assert not problems, "; ".join(problems)


def test_protocol_check_can_fail():
    import types

    members = backends.protocol_members(backends.PROTOCOLS["sort"])
    assert "sort_pairs" in members
    assert not isinstance(types.ModuleType("empty"), backends.PROTOCOLS["sort"])


# ----------------------------------------------------------------------------- private names
#: the capability packages: a module of one reaches another only through its public names
CAPABILITIES = ("sht", "convolve", "sort", "tpacf", "sims", "master", "io", "pixelfunc",
                "distributed", "widgets")

def _is_private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _capability(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in CAPABILITIES else None


def _imported_names(name, path, known):
    """(target module, imported name or None, line) of every import of a sphgpu module in
    ``name``'s source, functions included: ``from m import x`` gives (m, "x"), or (m.x, None)
    where m.x is a module; ``import m`` gives (m, None)."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names
                    if a.name.split(".")[0] == "sphgpu"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "sphgpu":
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.append((sub, None, node.lineno) if sub in known
                           else (target, a.name, node.lineno))
    return out


def _package_of(module, path):
    """The package a module belongs to: itself for a package's __init__.py, else its parent."""
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _inside(package, owner):
    """Whether ``package`` is ``owner`` or one of its subpackages."""
    return package == owner or package.startswith(owner + ".")


def private_imports(modules=None):
    """Every import of something private between sphgpu's modules, as (importer, target
    module, imported name or None, line, crosses): ``from m import _x`` (a private name), or any
    import of or from a private module (``sphgpu.sht._cuda``).

    ``crosses``: the import reaches past its package. A private name belongs to its module's
    package, so only that package's modules may import it; a private module belongs to the
    package that holds it, whose modules and subpackages may import it (``sphgpu._validate``
    serves every subpackage of ``sphgpu``; ``sphgpu.sht._cuda`` serves ``sphgpu.sht`` only).
    """
    modules = MODULES if modules is None else modules
    rows = []
    for importer, path in sorted(modules.items()):
        home = _package_of(importer, path)
        for target, item, line in _imported_names(importer, path, modules):
            parts = target.split(".")
            owners = [".".join(parts[:k]) for k in range(1, len(parts)) if _is_private(parts[k])]
            name = item is not None and _is_private(item)
            if not owners and not name:
                continue
            target_package = _package_of(target, modules[target]) if target in modules \
                else target.rpartition(".")[0]
            crosses = any(not _inside(home, o) for o in owners) \
                or (name and home != target_package)
            rows.append((importer, target, item, line, crosses))
    return rows


def private_names(rows):
    """``"importer: module._name"`` of the rows of :func:`private_imports` that import a private
    name (not a private module) from another module."""
    return {f"{i}: {t}.{n}" for i, t, n, _, _ in rows if n is not None and _is_private(n)}


def _package_files(root, files):
    """Write ``files`` ({relative path: source}) under ``root``/sphgpu and return {module name:
    path}, as :data:`MODULES` holds them."""
    pkg = root / "sphgpu"
    for rel, src in files.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(src)
    modules = {}
    for path in pkg.rglob("*.py"):
        parts = list(path.relative_to(pkg).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(["sphgpu"] + parts)] = path
    return modules


def test_private_import_finder_sees_each_form(tmp_path):
    modules = _package_files(tmp_path, {
        "__init__.py": "", "_validate.py": "", "sht/__init__.py": "", "sht/_cuda.py": "",
        "sht/spectra.py": "", "sims/__init__.py": "",
        "sims/run.py": "from ..sht.spectra import _field, alm2cl, __version__\n"
                       "from .._validate import _array_module, check_int\n"
                       "from ..sht import _cuda\n"
                       "def f():\n    from sphgpu.sht._cuda import plan\n"
                       "import sphgpu.sht._cuda\n",
        "sht/transforms.py": "from . import _cuda\nfrom .spectra import _x\n",
        "sht/inner/__init__.py": "from .._cuda import plan\nfrom ..spectra import _y\n"})
    found = {(i, t, n, c) for i, t, n, _, c in private_imports(modules)}
    assert found == {("sphgpu.sims.run", "sphgpu.sht.spectra", "_field", True),
                     ("sphgpu.sims.run", "sphgpu._validate", "_array_module", True),
                     ("sphgpu.sims.run", "sphgpu._validate", "check_int", False),
                     ("sphgpu.sims.run", "sphgpu.sht._cuda", None, True),
                     ("sphgpu.sims.run", "sphgpu.sht._cuda", "plan", True),
                     ("sphgpu.sht.transforms", "sphgpu.sht._cuda", None, False),
                     ("sphgpu.sht.transforms", "sphgpu.sht.spectra", "_x", False),
                     # a subpackage may use its parent's private modules, not its private names
                     ("sphgpu.sht.inner", "sphgpu.sht._cuda", "plan", False),
                     ("sphgpu.sht.inner", "sphgpu.sht.spectra", "_y", True)}
    assert private_names(private_imports(modules)) == {
        "sphgpu.sims.run: sphgpu.sht.spectra._field",
        "sphgpu.sims.run: sphgpu._validate._array_module",
        "sphgpu.sht.transforms: sphgpu.sht.spectra._x",
        "sphgpu.sht.inner: sphgpu.sht.spectra._y"}


def test_no_private_name_crosses_packages():
    # capabilities reach each other, and the shared modules at the bottom, through public names
    crossing = [f"{i} line {line}: {t}" + (f".{n}" if n else "")
                for i, t, n, line, crosses in private_imports() if crosses]
    assert not crossing, ("private names imported from outside the importer's package (make "
                          "them public in their module): " + "; ".join(crossing))


#: Private names a module imports from another module of its own package (a package's own
#: helpers), as "importer: module.name". The list can only shrink: a new one fails the test (make
#: the name public where others need it), and so does an entry that no longer occurs, so that it
#: is deleted with the import it allowed.
PRIVATE_NAMES_ALLOWED = {
    # convolve's argument checks of angles and kernels, shared by its modules
    "sphgpu.convolve.api: sphgpu.convolve.kernels._check_angle",
    "sphgpu.convolve.api: sphgpu.convolve.split._check_kernel",
    "sphgpu.convolve.calibrate: sphgpu.convolve.split._check_kernel",
    "sphgpu.convolve.optimize: sphgpu.convolve.split._check_kernel",
    "sphgpu.convolve.split: sphgpu.convolve.kernels._check_angle",
    "sphgpu.convolve.split: sphgpu.convolve.kernels._legendre_transform_pieces",
    "sphgpu.io.harmonic: sphgpu.io.maps._add_cards",
    # master's mask and spin helpers, defined with the coupling matrices
    "sphgpu.master.apodize: sphgpu.master.coupling._mask_map",
    "sphgpu.master.bandpowers: sphgpu.master.coupling._nside_of",
    "sphgpu.master.bandpowers: sphgpu.master.coupling._spins",
    "sphgpu.master.purify: sphgpu.master.coupling._mask_map",
}


def test_private_names_imported_between_modules_only_shrink():
    found = private_names(private_imports())
    new = sorted(found - PRIVATE_NAMES_ALLOWED)
    assert not new, ("private names imported from another module (make them public there, as "
                     "the module's documented helpers): " + "; ".join(new))
    gone = sorted(PRIVATE_NAMES_ALLOWED - found)
    assert not gone, "PRIVATE_NAMES_ALLOWED lists imports that are gone: delete " + "; ".join(gone)


# ----------------------------------------------------------------------------- the bottom
#: The array kinds and argument checks, which every capability imports, and all they may import
#: of sphgpu: the host's thread pool and whether kernels run in Numba's simulator. No kernel
#: launcher (``_fast_launch``), kernel module or Numba under them: the device count of the
#: checks is the CUDA backend's kernel, looked up by name (``sphgpu._validate.DEVICE_CHECKS``).
BOTTOM = {"sphgpu._device", "sphgpu._validate", "sphgpu._host_threads", "sphgpu._cuda_launch"}


def _reachable(graph, start):
    """Every module that ``start`` imports, directly or through others (``start`` excluded)."""
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen and nxt != start:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _imports_numba(path):
    """Lines of ``path`` at module level that import Numba (a kernel module's first need)."""
    tree = ast.parse(path.read_text(), str(path))
    return [n.lineno for n in tree.body
            if isinstance(n, ast.Import) and any(a.name.split(".")[0] == "numba" for a in n.names)
            or isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "numba"]


def bottom_problems(graph, paths, bottom):
    """What lifts the modules of ``bottom`` off the bottom of the import graph: a sphgpu module
    outside ``bottom`` that one of them reaches, or Numba imported at module level."""
    found = [f"{m} imports {x}" for m in sorted(bottom)
             for x in sorted(_reachable(graph, m) - bottom)]
    found += [f"{m} imports numba (line {line})" for m in sorted(bottom)
              for line in _imports_numba(paths[m])]
    return found


def test_bottom_check_can_fail(tmp_path):
    modules = _package_files(tmp_path, {
        "__init__.py": "", "_validate.py": "import numpy\nfrom . import _device\n",
        "_device.py": "def f():\n    from ._fast_launch import launch\n",
        "_fast_launch.py": "from numba import cuda\n", "_host_threads.py": "import numba\n"})
    graph = {m: _imports(m, p, modules) for m, p in modules.items()}
    bottom = {"sphgpu._validate", "sphgpu._device", "sphgpu._host_threads"}
    assert bottom_problems(graph, modules, bottom) == [
        "sphgpu._device imports sphgpu._fast_launch",
        "sphgpu._validate imports sphgpu._fast_launch",
        "sphgpu._host_threads imports numba (line 1)"]
    assert bottom_problems(graph, modules, {"sphgpu"}) == []


def test_array_kinds_and_checks_sit_at_the_bottom():
    graph = {m: _imports(m, p, MODULES) for m, p in MODULES.items()}
    problems = bottom_problems(graph, MODULES, BOTTOM)
    assert not problems, "; ".join(problems)


def test_the_device_count_is_a_kernel_module_that_closes_no_circle():
    # the checks import it by name: the graph above cannot see a circle through that lookup
    from sphgpu import _validate

    graph = {m: _imports(m, p, MODULES) for m, p in MODULES.items()}
    kernels = _validate.DEVICE_CHECKS
    assert kernels in MODULES and _imports_numba(MODULES[kernels]), f"{kernels}: no kernel module"
    assert "sphgpu._validate" not in _reachable(graph, kernels)
    defined = {n.name for n in ast.parse(MODULES[kernels].read_text()).body
               if isinstance(n, ast.FunctionDef)}
    assert "count_outside" in defined


#: The array kinds, whose home is sphgpu._device (sphgpu._validate uses them but does not
#: offer them: no module imports them from there).
KINDS = {"is_device_array", "array_module_of", "as_contiguous"}


def kinds_via_validate(modules):
    """"module: name" of every import of an array kind from sphgpu._validate."""
    return {f"{m}: {n}" for m, p in modules.items()
            for t, n, _ in _imported_names(m, p, modules)
            if t == "sphgpu._validate" and n in KINDS}


def test_kinds_check_can_fail(tmp_path):
    modules = _package_files(tmp_path, {
        "__init__.py": "", "_validate.py": "", "_device.py": "",
        "sht/__init__.py": "from .._validate import check_int, is_device_array\n",
        "sht/plan.py": "from .._device import array_module_of\n"
                       "def f():\n    from sphgpu._validate import as_contiguous\n"})
    assert kinds_via_validate(modules) == {"sphgpu.sht: is_device_array",
                                           "sphgpu.sht.plan: as_contiguous"}


def test_array_kinds_are_imported_from_their_home():
    found = sorted(kinds_via_validate(MODULES))
    assert not found, "import array kinds from sphgpu._device: " + "; ".join(found)


# ----------------------------------------------------------------------------- capability shape
#: file: what it holds, in every capability folder
SHAPE = {"__init__.py": "the public names, in __all__"}
#: what each backend's module holds; a GPU backend's kernels sit apart, in "<module>_kernels.py"
HOLDS = {"reference": "the plain NumPy specification", "cpu": "the CPU path",
         "cuda": "the host side of the kernels"}


def shape_of(declared_backends):
    """{file: what it holds} of a capability folder whose capability declares
    ``declared_backends`` (DESIGN.md, "Backends"): :data:`SHAPE`, each backend's module (named
    by :func:`sphgpu.backends.info`) and a GPU backend's kernel module."""
    files = dict(SHAPE)
    for b in declared_backends:
        module = backends.info(b).module
        files[f"{module}.py"] = HOLDS[b]
        if backends.info(b).gpu:
            files[f"{module}_kernels.py"] = "the @cuda.jit kernels"
    return files


def _top_imports(path):
    """(module or None for "from . import", level, names) of every import in ``path``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, 0, ()) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append((node.module, node.level, tuple(a.name for a in node.names)))
    return out


def shape_problems(folder, declared_backends):
    """How capability folder ``folder``, whose capability declares ``declared_backends``,
    departs from :func:`shape_of`: a missing file; kernels that import CuPy, Dask, widgets or
    their host side; a reference that imports kernel code or a backend; public names exported
    from a private module (the public functions live in modules named for what they do)."""
    name = folder.name
    missing = [f"{name}/{f} is missing ({what})"
               for f, what in shape_of(declared_backends).items() if not (folder / f).is_file()]
    if missing:
        return missing
    found = []
    kernels = folder / "_cuda_kernels.py"
    for mod, level, names in _top_imports(kernels) if kernels.is_file() else ():
        root = (mod or "").split(".")[0]
        if (not level and root in ("cupy", "dask", "distributed")) or "widgets" in (mod or "") \
                or (level == 1 and (mod == "_cuda" or (mod is None and "_cuda" in names))):
            found.append(f"{name}/_cuda_kernels.py imports {mod or names}")
    reference = folder / "reference.py"
    for mod, level, names in _top_imports(reference) if reference.is_file() else ():
        own = {mod} if mod else set(names)
        if (not level and (mod or "").startswith("numba")) \
                or (level == 1 and own & {"_cpu", "_cuda", "_cuda_kernels"}):
            found.append(f"{name}/reference.py imports {mod or names}")
    init = ast.parse((folder / "__init__.py").read_text())
    exported = set()
    for node in init.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                for t in node.targets):
            exported = {e.value for e in node.value.elts}
    for node in init.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module \
                and _is_private(node.module.split(".")[0]):
            shown = sorted({a.asname or a.name for a in node.names} & exported)
            if shown:
                found.append(f"{name}/__init__.py exports {shown} from {node.module}")
    return found


def test_shape_check_can_fail(tmp_path):
    good = {"__init__.py": "from .api import run\n__all__ = ['run']\n",
            "api.py": "def run(): pass\n", "reference.py": "import numpy as np\n",
            "_cpu.py": "", "_cuda.py": "from . import _cuda_kernels\n",
            "_cuda_kernels.py": "from numba import cuda\nfrom . import reference\n"}
    folder = tmp_path / "cap"
    folder.mkdir()
    for f, src in good.items():
        (folder / f).write_text(src)
    every = backends.BACKENDS
    assert shape_problems(folder, every) == []
    (folder / "_cuda_kernels.py").write_text("import cupy\nfrom . import _cuda\n"
                                             "from ._cuda import buffers\n")
    (folder / "reference.py").write_text("from numba import cuda\nfrom ._cpu import twin\n")
    (folder / "__init__.py").write_text("from ._cpu import run, helper\n__all__ = ['run']\n")
    assert shape_problems(folder, every) == [
        "cap/_cuda_kernels.py imports cupy", "cap/_cuda_kernels.py imports ('_cuda',)",
        "cap/_cuda_kernels.py imports _cuda", "cap/reference.py imports numba",
        "cap/reference.py imports _cpu", "cap/__init__.py exports ['run'] from _cpu"]
    (folder / "__init__.py").write_text(good["__init__.py"])
    (folder / "reference.py").write_text(good["reference.py"])
    (folder / "_cuda.py").unlink()
    (folder / "_cuda_kernels.py").unlink()
    assert shape_problems(folder, every) == [
        "cap/_cuda.py is missing (the host side of the kernels)",
        "cap/_cuda_kernels.py is missing (the @cuda.jit kernels)"]
    # a capability that declares no CUDA backend needs no CUDA files; one declared is needed
    assert shape_problems(folder, ("cpu", "reference")) == []
    (folder / "_cpu.py").unlink()
    assert shape_problems(folder, ("cpu", "reference")) == ["cap/_cpu.py is missing (the CPU path)"]
    assert shape_problems(folder, ("reference",)) == []


_TOY_DECLARE = """
from typing import Protocol, runtime_checkable
from ..backends import Capability

@runtime_checkable
class ToyBackend(Protocol):
    def double(self, x): ...

CAPABILITY = Capability(ToyBackend, backends=("cpu", "reference"))
"""


def test_a_capability_without_cuda_passes_the_checks_of_what_it_declares(tmp_path,
                                                                          monkeypatch):
    # the checks above, through the registry, for a capability in a folder on sphgpu's path
    # that declares a CPU and a reference backend only
    import sys

    import sphgpu

    folder = tmp_path / "toyarch"
    folder.mkdir()
    files = {"__init__.py": "from .api import double\n__all__ = ['double']\n",
             "api.py": "def double(x):\n    return 2 * x\n", "_declare.py": _TOY_DECLARE,
             "_cpu.py": "def double(x):\n    return 2 * x\n",
             "reference.py": "def triple(x):\n    return 3 * x\n"}      # not the protocol
    for f, src in files.items():
        (folder / f).write_text(src)
    monkeypatch.setattr(sphgpu, "__path__", list(sphgpu.__path__) + [str(tmp_path)])
    try:
        declared = backends.declaration("toyarch")
        assert declared.backends == ("cpu", "reference")
        assert shape_problems(folder, declared.backends) == []
        assert protocol_problems(declared, "cpu") == []
        assert protocol_problems(declared, "reference") == [
            "sphgpu.toyarch.reference lacks ['double'] of ToyBackend"]
    finally:
        for name in [m for m in sys.modules if m.startswith("sphgpu.toyarch")]:
            sys.modules.pop(name)


@pytest.mark.parametrize("capability", backends.CAPABILITIES)
def test_capability_folders_have_the_shape(capability):
    declared = backends.declaration(capability).backends
    problems = shape_problems(ROOT / "sphgpu" / capability, declared)
    assert not problems, "; ".join(problems)


# ------------------------------------------------------------------------------ no central list
#: files every capability and panel passes through (the build, the docs build, the panels'
#: package): none names one, so a new ``sphgpu/<name>/`` or ``widgets/<name>.py`` edits none
CENTRAL = ("pyproject.toml", "setup.py", "docs/conf.py", "docs/make_api.py",
           "widgets/__init__.py")


def _strings(path):
    """Every string a file holds as data: a TOML file's keys and values, a Python file's string
    constants (prose that mentions a name in passing is longer than the name)."""
    if path.suffix == ".toml":
        import tomllib

        out, todo = [], [tomllib.loads(path.read_text())]
        while todo:
            item = todo.pop()
            if isinstance(item, dict):
                out += list(item)
                todo += list(item.values())
            elif isinstance(item, list):
                todo += item
            elif isinstance(item, str):
                out.append(item)
        return out
    return [node.value for node in ast.walk(ast.parse(path.read_text(), str(path)))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def listed_names(paths, capabilities, panels):
    """The strings in ``paths`` that name a capability (``"<name>"``, ``"sphgpu.<name>"`` and
    below) or a panel module (``"<name>"``, ``".<name>"``); returns ["file: string", ...]."""
    names = {*capabilities, *(f"sphgpu.{c}" for c in capabilities), *panels,
             *(f".{p}" for p in panels), *(f"sphgpu.widgets.{p}" for p in panels)}
    found = []
    for path in paths:
        for s in _strings(path):
            if s in names or any(s.startswith(f"sphgpu.{c}.") for c in capabilities):
                shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                found.append(f"{shown}: {s!r}")
    return found


def test_listed_names_can_fail(tmp_path):
    (tmp_path / "x.toml").write_text('[a]\nb = ["sphgpu.sort", "other"]\n"sphgpu.tpacf.x" = 1\n')
    (tmp_path / "x.py").write_text('"""About sphgpu.sort."""\nLAZY = ("sims", ".plots")\n')
    found = listed_names([tmp_path / "x.toml", tmp_path / "x.py"], ["sort", "sims", "tpacf"],
                         ["plots"])
    assert sorted(found) == ["x.py: '.plots'", "x.py: 'sims'", "x.toml: 'sphgpu.sort'",
                             "x.toml: 'sphgpu.tpacf.x'"]


def test_no_central_file_lists_a_capability_or_a_panel():
    capabilities = sorted(p.name for p in (ROOT / "sphgpu").iterdir()
                          if (p / "__init__.py").is_file())
    panels = sorted(p.stem for p in (ROOT / "widgets").glob("*.py")
                    if not p.stem.startswith("_"))
    found = listed_names([ROOT / f for f in CENTRAL], capabilities, panels)
    assert capabilities and panels and not found, "; ".join(found)


# ----------------------------------------------------------------------------- the transform plan
#: the modules of sphgpu.sht that run a transform's steps through the backend module: the plan
#: (sphgpu.SHT) and the staged steps it and the Dask forms share (a part of the orders)
SHT_RUNNERS = {"sphgpu.sht.plan", "sphgpu.sht.stages"}


def sht_backend_uses(name, path):
    """Where module ``name`` takes the SHT backend module (``backends.load("sht", ...)``) for
    more than a flag (an UPPER_CASE attribute such as ``ACCEPTS_DEVICE_ARRAYS``): lines."""
    tree = ast.parse(path.read_text())
    flags = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.isupper():
            flags.add(id(node.value))
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "load" and node.args
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == "sht"
                and id(node) not in flags and name not in SHT_RUNNERS):
            found.append(f"{name}:{node.lineno}")
    return found


def test_sht_backend_use_finder_can_fail(tmp_path):
    path = tmp_path / "x.py"
    path.write_text("from sphgpu import backends\n"
                    "ok = backends.load('sht', 'cpu').ACCEPTS_DEVICE_ARRAYS\n"
                    "impl = backends.load('sht', 'cpu')\n"
                    "other = backends.load('sort', 'cpu')\n")
    assert sht_backend_uses("sphgpu.x", path) == ["sphgpu.x:3"]
    assert sht_backend_uses("sphgpu.sht.plan", path) == []


def test_transforms_are_reached_through_the_plan_only():
    """Only the plan and its staged steps call the SHT backend module; every other module
    (sims, convolve's harmonic part, distributed, master, widgets) holds an sphgpu.SHT or calls
    the public functions, and reads no more than a backend's flags."""
    found = [use for name, path in sorted(MODULES.items())
             for use in sht_backend_uses(name, path)]
    assert not found, found
