"""Lazy package exports (PEP 562), the one way argent's packages name their public API; and ``named``, the one way
a registry names what it imports on first use (``"module:attribute"``).

A package's ``__init__`` imports nothing of its own at run time: its public names are imported from
their submodules on first use. So a torch-free module of a package (``argent.runs.layout``,
``argent.models.pretrained.section``, ...) can be imported without the package's torch-heavy rest,
which the Snakefile, parsing on every job, must never pay for. The names are written once, as the
imports of an ``if TYPE_CHECKING:`` block, which Python skips at run time and every static reader sees:
import-linter counts them (an import of the package is an import of every module it re-exports, so a
layering mistake made through the package is caught as it is made directly), and so do type checkers.
Usage::

    from typing import TYPE_CHECKING

    from argent.lazy import lazy_exports

    if TYPE_CHECKING:
        from argent.losses.objective import LossOutput, Objective, diagnostics

    __all__ = ["LossOutput", "Objective", "diagnostics"]  # ruff (F401, F822) keeps it equal to the block
    __getattr__, __dir__ = lazy_exports(__name__)

A name that is also a submodule's (``argent.tables.run``) cannot be exported this way: once the
submodule is imported, the import system binds the module to it. Import such a function from its module.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def named(spec: str) -> Any:
    """The object a ``"module:attribute"`` string names, imported now. Registries name their functions
    and types this way, so that reading a registry (the workflow's parse) imports nothing heavy."""
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module), attribute)


def declared_exports(init_file: str | Path) -> dict[str, str]:
    """{name: defining module} of the ``from <module> import <names>`` lines inside the ``if TYPE_CHECKING:``
    blocks at the top level of a package's ``__init__`` (the names it re-exports)."""
    tree = ast.parse(Path(init_file).read_text(encoding="utf-8"))
    exports: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for line in node.body:
                if not isinstance(line, ast.ImportFrom) or line.level or line.module is None:
                    raise ValueError(f"{init_file}:{line.lineno}: the TYPE_CHECKING block of a lazy package holds "
                                     f"`from <absolute module> import <names>` lines only")
                for alias in line.names:
                    if alias.asname not in (None, alias.name):
                        raise ValueError(f"{init_file}:{line.lineno}: re-export {alias.name} under its own name")
                    exports[alias.name] = line.module
    return exports


def lazy_exports(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(``__getattr__``, ``__dir__``) for ``package``, whose public names are the imports of its
    ``__init__``'s ``if TYPE_CHECKING:`` block (``declared_exports``), each imported on first use."""
    exports = declared_exports(sys.modules[package].__file__)

    def __getattr__(name: str) -> Any:  # noqa: N807 - PEP 562's name
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(sys.modules[package], name, value)  # imported once: later reads skip __getattr__
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
