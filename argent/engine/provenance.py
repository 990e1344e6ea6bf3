"""What a training run ran on: recorded beside its identity, never in it.

Measured (docs/reliability.md §12): two runs of one commit, config and seed on one machine are bit for
bit equal; across machines they are not, even where torch reports the same capability (CLIP seed 0:
83.04 % zero-shot on an Intel Xeon, 84.83 % on an AMD Zen 4, both "AVX512"; issue 53). So the record
names the machine, not only its kernel class: the CPU's vendor, model and family/model/stepping and the
instruction-set extensions the kernels may use, the GPU and its driver, and the library builds that
compute the numbers (torch, its BLAS, oneDNN and OpenMP, numpy). ``provenance()`` is the record one
training process writes (``argent.runs.write_provenance``); ``merge_segments`` keeps the records of
earlier segments of a resumed run that ran elsewhere.
"""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy
import torch

from argent.runs import hardware_class

# The x86 and Arm extensions torch's and oneDNN's kernels dispatch on (the kernel reports them in
# /proc/cpuinfo): two CPUs of one "capability" may still differ here (AVX512-BF16, AMX, VNNI).
ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
             "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "asimd", "asimddp", "sve", "sve2", "bf16", "i8mm")
CPUINFO = Path("/proc/cpuinfo")


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


def torch_build() -> dict[str, str]:
    """The oneDNN and OpenMP builds torch computes with ("" where its build lists none)."""
    text = torch.__config__.show()
    onednn = re.search(r"MKL-DNN v([\d.]+)", text) or re.search(r"oneDNN v([\d.]+)", text)
    openmp = re.search(r"OpenMP (\d+)", text)
    return {"onednn": onednn.group(1) if onednn else "", "openmp": openmp.group(1) if openmp else ""}


def cpu_identity(cpuinfo: str | None = None) -> dict[str, str]:
    """The CPU's vendor, model name, family/model/stepping and kernel-relevant extensions, from
    /proc/cpuinfo (Linux; elsewhere ``platform.processor()`` and no extensions)."""
    if cpuinfo is None:
        try:
            cpuinfo = CPUINFO.read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    first = cpuinfo.split("\n\n", 1)[0]
    fields = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in first.splitlines()) if k.strip()}
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    ident = [f"{name} {fields[key]}" for key, name in (("cpu family", "family"), ("model", "model"),
                                                         ("stepping", "stepping"), ("CPU implementer", "implementer"),
                                                         ("CPU part", "part")) if fields.get(key)]
    return {
        "cpu_vendor": fields.get("vendor_id") or fields.get("CPU implementer") or "",
        "cpu_model": fields.get("model name") or platform.processor() or platform.machine(),
        "cpu_id": ", ".join(ident),
        "cpu_isa": " ".join(f for f in ISA_FLAGS if f in flags),
    }


def gpu_driver(index: int) -> str:
    """The NVIDIA driver of GPU ``index`` (``nvidia-smi``; "" without it)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return ""
    try:
        out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader", "-i", str(index)],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def provenance(device: str | torch.device = "cpu") -> dict[str, Any]:
    """This process's hardware, library builds and numerical settings (cheap: no kernel is run)."""
    dev = torch.device(device)
    on_cuda = dev.type == "cuda" and torch.cuda.is_available()
    index = (dev.index if dev.index is not None else torch.cuda.current_device()) if on_cuda else 0
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
        **cpu_identity(),
        **torch_build(),
        "numpy": str(numpy.__version__),
        "gpu_capability": ".".join(map(str, torch.cuda.get_device_capability(dev))) if on_cuda else "",
        "gpu_driver": gpu_driver(index) if on_cuda else "",
        "cudnn": str(torch.backends.cudnn.version() or "") if on_cuda else "",
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
