"""What a training run ran on: recorded beside its identity, never in it.

The same commit on the same data bytes trains bit for bit the same on one machine; another CPU
(AVX2 against AVX-512 kernels), GPU, BLAS or torch version moves the numbers within seed noise.
``provenance()`` is the record one training process writes (``argent.runs.write_provenance``);
``merge_segments`` keeps the records of earlier segments of a resumed run that ran elsewhere.
"""

from __future__ import annotations

import platform
import re
from typing import Any

import torch

from argent.runs import hardware_class


def blas_info() -> str:
    """Short BLAS/LAPACK line from ``torch.__config__.show()`` (e.g. ``BLAS mkl 2024.2, LAPACK mkl``)."""
    text = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=([^,\s]+)", text)
    lapack = re.search(r"LAPACK_INFO=([^,\s]+)", text)
    mkl = re.search(r"Math Kernel Library Version ([\d.]+)", text)
    name = blas.group(1) if blas else "unknown"
    if mkl and name == "mkl":
        name = f"mkl {mkl.group(1)}"
    return f"BLAS {name}, LAPACK {lapack.group(1) if lapack else 'unknown'}"


def provenance(device: str | torch.device = "cpu") -> dict[str, Any]:
    """This process's hardware and numerical settings (cheap: no kernel is run)."""
    dev = torch.device(device)
    on_cuda = dev.type == "cuda" and torch.cuda.is_available()
    record: dict[str, Any] = {
        "torch": str(torch.__version__),  # a str subclass, which weights_only loading refuses
        "cpu_capability": str(torch.backends.cpu.get_cpu_capability()),
        "gpu": torch.cuda.get_device_name(dev) if on_cuda else "",
        "cuda": str(torch.version.cuda or "") if on_cuda else "",
        "blas": blas_info(),
        "threads": torch.get_num_threads(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "python": platform.python_version(),
    }
    record["hardware_class"] = hardware_class(record)
    return record


def merge_segments(earlier: list[dict[str, Any]], current: dict[str, Any]) -> list[dict[str, Any]]:
    """The distinct records of a run's training segments (a resume on another machine adds one)."""
    return [r for r in earlier if r != current] + [current]


def run_record(segments: list[dict[str, Any]]) -> dict[str, Any]:
    """``provenance.json``: the finishing segment's record, plus ``earlier`` segments that differ."""
    *earlier, current = segments
    return {**current, "earlier": earlier} if earlier else dict(current)
