"""Lazy package exports (PEP 562), the one way argent's packages name their public API.

A package's ``__init__`` imports nothing of its own: its public names are imported from their
submodules on first use. So a torch-free module of a package (``argent.runs.layout``,
``argent.models.pretrained.section``, ...) can be imported without the package's torch-heavy rest,
which the Snakefile, parsing on every job, must never pay for. Usage::

    _EXPORTS = {"Objective": "argent.losses.objective", ...}
    __all__ = sorted(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

A name that is also a submodule's (``argent.tables.run``) cannot be exported this way: once the
submodule is imported, the import system binds the module to it. Import such a function from its module.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(``__getattr__``, ``__dir__``) for ``package``, whose public names map to the modules defining them."""

    def __getattr__(name: str) -> Any:  # noqa: N807 - PEP 562's name
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(sys.modules[package], name, value)  # imported once: later reads skip __getattr__
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
