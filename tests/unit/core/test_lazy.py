"""argent/lazy.py: a package names what it re-exports once, as the imports of an ``if TYPE_CHECKING:`` block of its
``__init__``. At run time each name is imported on first use; import-linter (grimp) sees those imports, so a layering
mistake made through a package (``from argent.runs import read_checkpoint`` in argent/config/) is caught as the
same import written directly is (pyproject.toml, [tool.importlinter])."""

from __future__ import annotations

import importlib

import grimp
import pytest

from argent.lazy import declared_exports
from tests.fixtures import ROOT

LAZY_PACKAGES = sorted(
    ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "argent").rglob("__init__.py")
    if "lazy_exports" in p.read_text()
)


def test_the_lazy_packages_are_those_that_re_export():
    assert LAZY_PACKAGES == ["argent.config", "argent.losses", "argent.models", "argent.models.pretrained",
                             "argent.runs", "argent.tracking", "argent.tuning"]


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_declared_name_is_exported_and_is_its_module_s_object(package):
    module = importlib.import_module(package)
    declared = declared_exports(module.__file__)
    assert declared and sorted(module.__all__) == sorted(declared)
    for name, source in declared.items():
        assert getattr(module, name) is getattr(importlib.import_module(source), name), name
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'nope'"):
        _ = module.nope


def test_import_linter_sees_a_package_import_as_an_import_of_what_it_re_exports():
    graph = grimp.build_graph("argent", cache_dir=None)
    for package in LAZY_PACKAGES:
        sources = set(declared_exports(importlib.import_module(package).__file__).values())
        seen = graph.find_modules_directly_imported_by(package)
        assert sources <= seen, (package, sources - seen)


def test_a_block_that_is_not_plain_imports_is_refused(tmp_path):
    init = tmp_path / "__init__.py"
    init.write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from a.b import C as D\n")
    with pytest.raises(ValueError, match=r"__init__.py:4: re-export C under its own name"):
        declared_exports(init)
    init.write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    import a.b\n")
    with pytest.raises(ValueError, match=r"__init__.py:4: the TYPE_CHECKING block .* `from <absolute module> import"):
        declared_exports(init)
