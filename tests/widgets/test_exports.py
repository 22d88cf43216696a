"""``sphgpu.widgets`` offers the names its modules declare (``_PACKAGE_EXPORTS``, read from
their sources), so a new panel module edits no list in the package's ``__init__``."""

import importlib
import subprocess
import sys

import pytest

import sphgpu.widgets as widgets

#: The names the package listed by hand before it discovered them (``_EXPORTS`` in
#: widgets/__init__.py at commit 207c6a1), with the module of each: discovery must offer
#: exactly these until a module declares more.
HAND_LIST = {
    "TransformModel": "transforms", "TransformPanel": "transforms", "transform_panel": "transforms",
    "SortModel": "sort", "SortPanel": "sort", "sort_panel": "sort",
    "KernelSplitModel": "kernel_split", "KernelSplitPanel": "kernel_split",
    "kernel_split_panel": "kernel_split",
    "CorrelationModel": "correlation", "CorrelationPanel": "correlation",
    "correlation_panel": "correlation",
    "MonteCarloModel": "montecarlo", "MonteCarloPanel": "montecarlo",
    "montecarlo_panel": "montecarlo",
    "SpeedupModel": "speedup", "SpeedupPanel": "speedup", "speedup_panel": "speedup",
    "BenchmarkSpec": "speedup", "register_benchmark": "speedup",
    "mollview": "plots", "spectrum_plot": "plots",
}


def test_discovery_offers_what_the_hand_list_offered():
    assert widgets._discover() == HAND_LIST
    assert widgets.__all__ == sorted(HAND_LIST)
    assert set(HAND_LIST) <= set(dir(widgets))


def test_every_offered_name_is_its_module_s_object():
    for name, module in HAND_LIST.items():
        home = importlib.import_module(f"sphgpu.widgets.{module}")
        assert getattr(widgets, name) is getattr(home, name), name
    from sphgpu.widgets import speedup

    assert widgets.register_benchmark is speedup.register


def test_reading_the_names_imports_no_panel():
    code = ("import sys, sphgpu.widgets as w; names = w.__all__; dir(w); "
            "print(len(names), [m for m in ('ipywidgets', 'matplotlib', 'sphgpu.widgets.plots') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == f"{len(HAND_LIST)} []"


def test_a_new_module_in_the_folder_is_discovered_without_importing_it(tmp_path):
    (tmp_path / "newpanel.py").write_text(
        'raise RuntimeError("discovery must not import me")\n'
        '_PACKAGE_EXPORTS = ("NewModel", "new_panel")\n')
    (tmp_path / "annotated.py").write_text('_PACKAGE_EXPORTS: tuple = ("other_panel",)\n')
    (tmp_path / "helpers.py").write_text("x = 1\n")                       # declares nothing
    (tmp_path / "_private.py").write_text('_PACKAGE_EXPORTS = ("hidden",)\n')
    assert widgets._discover(tmp_path) == {"other_panel": "annotated", "NewModel": "newpanel",
                                           "new_panel": "newpanel"}


@pytest.mark.parametrize("source", ['_PACKAGE_EXPORTS = names()\n',
                                    '_PACKAGE_EXPORTS = ("not a name",)\n',
                                    '_PACKAGE_EXPORTS = "single"\n'])
def test_a_declaration_that_is_not_a_tuple_of_names_is_refused(tmp_path, source):
    path = tmp_path / "bad.py"
    path.write_text(source)
    with pytest.raises(ValueError, match="bad.py"):
        widgets._declared_names(path)


def test_two_modules_declaring_one_name_are_refused(tmp_path):
    for stem in ("a", "b"):
        (tmp_path / f"{stem}.py").write_text('_PACKAGE_EXPORTS = ("panel",)\n')
    with pytest.raises(ImportError, match="'panel' is declared by both a.py and b.py"):
        widgets._discover(tmp_path)
