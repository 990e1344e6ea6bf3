"""GPU check, ready to run (≤ 8 minutes on one GPU): what docs/scaling.md §4 assumes, measured.

    python bench/gpu_check.py                              # on a CUDA machine -> results/bench/gpu_check.json
    python bench/gpu_check.py --device cpu --size tiny --batch 8 --steps 3 --warmup 1 --compile off \\
        --train-steps 3 --train-batch 8 --scenes 40 --precision fp32 --peak-tflops 0.05   # the same code on a CPU

Parts, each time-boxed (``--budget-s`` in all; a part gets what is left, up to its own box) and each
failure written into the JSON instead of stopping the others; the JSON is rewritten after every part:

1. ``steps``: the training step of each family (``--variants``, default clip meru hycoclip argent) at
   ``--size`` (default S, config/paper.yaml's preset) in ``--precision`` (default bf16) at batch
   ``--batch`` (default 256), ``train.compile`` off and on. Each is a real run of the library's
   training loop (``argent.engine.trainer.train`` with a fixed synthetic batch kept on the device, so
   data loading is not timed): samples/s, seconds per step (median after ``--warmup`` steps; the
   first step, compilation included, apart), MFU = the FLOP model's training FLOPs per step
   (argent/models/flops.py) ÷ step time ÷ the device's dense bf16 peak (``PEAKS`` by device name,
   else ``--peak-tflops``), and peak memory (``torch.cuda.max_memory_allocated``; on a CPU the
   process's maximum RSS). Texts fill the whole context, as the FLOP model counts them.
2. ``train``: small grounded webdataset shards made by the hiershapes generator
   (``argent.data.hiershapes``), then ``--train-steps`` (default 100) steps of ``--train-variant``
   (argent) at ``--train-size`` (tiny) through ``train`` on the device, from those shards.
3. ``evaluate``: that run through the evaluation runner (``argent.evaluation.runner.evaluate``) on
   the hiershapes zero-shot benchmark (the ``hs_zeroshot`` entry of config/config.yaml, on the
   generated classification folder).

Without CUDA and without ``--device`` it prints one line and exits 0: nothing to measure. Otherwise
the exit status is 1 when a part failed (the JSON says which and why), else 0.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import logging
import math
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from argent.config import ExperimentConfig, load_config
from argent.data.hiershapes.generate import HiershapesParams, generate
from argent.device import require_device
from argent.engine.trainer import train
from argent.evaluation.benchmarks import parse_benchmark
from argent.evaluation.runner import evaluate
from argent.io import ArgentError, atomic_write_json
from argent.models.flops import step_flops
from argent.models.trained import load_run

ROOT = Path(__file__).resolve().parents[1]
HIERSHAPES_CONFIG = ROOT / "config" / "config.yaml"  # the short run's data, model preset and benchmark entry
FAMILIES = ["clip", "meru", "hycoclip", "argent"]
# Dense (no sparsity) bf16 tensor peak of one device, TFLOP/s, from the vendors' datasheets; the
# first pattern found in torch.cuda.get_device_name() wins.
PEAKS: list[tuple[str, float]] = [
    (r"GH200", 989.0), (r"H200", 989.0), (r"H100 PCIe", 756.0), (r"H100 NVL", 835.0), (r"H100", 989.0),
    (r"H800", 989.0), (r"B200", 2250.0), (r"A100", 312.0), (r"A800", 312.0), (r"L40S", 362.0),
    (r"\bL40\b", 181.0), (r"\bL4\b", 121.0), (r"\bA10\b", 125.0), (r"MI300X", 1307.0),
]
BOXES = {"step_eager": 60.0, "step_compiled": 150.0, "train": 180.0, "evaluate": 90.0}  # seconds per part at most


class PartTimeout(BaseException):
    """A part ran past its time box. Not an ``Exception``, so that ``compile_step``'s eager fallback
    (which catches ``Exception``) cannot swallow it and carry on."""


@contextlib.contextmanager
def time_box(seconds: float) -> Iterator[None]:
    """Raise ``PartTimeout`` in the main thread after ``seconds`` (SIGALRM; POSIX)."""
    def expire(_signum: int, _frame: Any) -> None:
        raise PartTimeout(f"timed out after {seconds:.3g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.01))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def device_peak(name: str, flag: float | None) -> tuple[float | None, str]:
    """(peak TFLOP/s, where it came from): ``--peak-tflops`` first, else the ``PEAKS`` table."""
    if flag:
        return flag, "--peak-tflops"
    for pattern, peak in PEAKS:
        if re.search(pattern, name):
            return peak, f"PEAKS table ({pattern}, dense bf16)"
    return None, "unknown device: pass --peak-tflops (MFU left out)"


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_memory_gib(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux: the process's max RSS


def experiment(args: argparse.Namespace, config: Path, variant: str, size: str, overrides: list[str]) -> ExperimentConfig:
    """One run's config from a workflow config (merged over config/config.yaml, as the workflow reads
    it), with the check's settings on top."""
    common = [f"train.device={args.device}", f"train.precision={args.precision}", "tracking.enabled=false",
              "data.image_cache=''", "data.negatives=''"]
    workflow = load_config(config, [*common, *overrides], base_dir=ROOT)
    return workflow.experiment(variant, size, 0)


def synthetic_batch(cfg: ExperimentConfig, batch: int, device: torch.device) -> dict[str, torch.Tensor]:
    """A fixed batch on the device: random images, random token ids filling the whole context (the
    end-of-text id, the largest, last), and the box items of a box variant."""
    g = torch.Generator().manual_seed(0)
    m = cfg.model

    def texts() -> torch.Tensor:
        tokens = torch.randint(1, m.vocab_size - 1, (batch, m.context_length), generator=g)
        tokens[:, -1] = m.vocab_size - 1
        return tokens.to(device)

    out = {"image": torch.rand(batch, 3, m.image_size, m.image_size, generator=g).to(device), "text": texts()}
    if cfg.variant.use_boxes:
        out.update(crop=torch.rand(batch, 3, m.image_size, m.image_size, generator=g).to(device), phrase=texts())
    return out


class CompileLog(logging.Handler):
    """Keeps the trainer's ``train.compile`` warnings (a fallback to eager is one)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "train.compile" in record.getMessage():
            self.messages.append(record.getMessage())


def step_part(args: argparse.Namespace, variant: str, compiled: bool, peak: float | None, work: Path) -> dict[str, Any]:
    """Time the library's training step for one family: ``train`` over a fixed on-device batch."""
    device = torch.device(args.device)
    total = args.warmup + args.steps + 1  # the last step has no hook after it, so it is not timed
    cfg = experiment(args, args.config, variant, args.size, [
        f"train.batch_size={args.batch}", f"train.steps={total}", f"train.compile={str(compiled).lower()}",
        f"train.log_every={total}", f"train.diagnostics_every={total}", f"train.checkpoint_every={total}",
        "optim.warmup_steps=1"])
    batch = synthetic_batch(cfg, args.batch, device)
    marks: list[float] = []

    def hook(step: int, b: dict[str, Any]) -> dict[str, Any]:
        sync(device)
        marks.append(time.perf_counter())
        return b

    if compiled:
        torch.compiler.reset()  # each family compiles afresh (dynamo's recompile limit is per code object)
    gc.collect()  # the previous part's model and optimiser, before the peak is reset
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    watch = CompileLog()
    logging.getLogger("argent.train").addHandler(watch)
    try:
        train(cfg, work / f"{variant}-{'compiled' if compiled else 'eager'}", batches=lambda _start: _repeat(batch),
              batch_hook=hook)
    finally:
        logging.getLogger("argent.train").removeHandler(watch)
    steps = [b - a for a, b in zip(marks, marks[1:])]
    timed = steps[args.warmup:]
    seconds = statistics.median(timed)
    flops = step_flops(cfg.model, cfg.variant).per_step(args.batch)
    return {"variant": variant, "compile": compiled, "size": args.size, "batch": args.batch,
            "precision": args.precision, "steps_timed": len(timed), "first_step_s": steps[0],
            "step_s_median": seconds, "step_s_min": min(timed), "step_s": [round(x, 6) for x in timed],
            "samples_per_s": args.batch / seconds,
            "tflop_per_step": flops / 1e12, "achieved_tflops": flops / seconds / 1e12,
            "mfu": None if peak is None else flops / seconds / (peak * 1e12),
            "peak_memory_gib": peak_memory_gib(device), "compile_warnings": watch.messages}


def _repeat(batch: dict[str, torch.Tensor]) -> Iterator[dict[str, torch.Tensor]]:
    while True:
        yield batch


def make_shards(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Grounded webdataset shards (and the classification folder) from the hiershapes generator, with
    config/config.yaml's scene parameters and ``--scenes`` training scenes."""
    params = dict(load_config(HIERSHAPES_CONFIG, base_dir=ROOT).raw["hiershapes"]["params"])
    shards = max(8, args.workers)  # every loader worker gets a shard
    params.update(train_scenes=args.scenes, val_scenes=8, test_scenes=8, pep_val_scenes=0, per_class=2,
                  val_per_class=1, shard_size=max(-(-args.scenes // shards), 1))
    manifest = generate(HiershapesParams(**params), out, jobs=args.jobs, overwrite=True)
    return manifest["counts"]


def train_part(args: argparse.Namespace, data: Path, work: Path, result: dict[str, Any]) -> dict[str, Any]:
    """Shards, then ``--train-steps`` steps through ``train`` from them on the device, with
    config/config.yaml's hiershapes settings (model preset, data options) at ``--train-size``."""
    t = time.perf_counter()
    result["data_counts"] = make_shards(args, data)
    result["generate_s"] = time.perf_counter() - t
    steps = args.train_steps
    cfg = experiment(args, HIERSHAPES_CONFIG, args.train_variant, args.train_size, [
        f"data.train_shards={data / 'train' / 'shard-*.tar'}", f"train.batch_size={args.train_batch}",
        f"train.steps={steps}", f"train.num_workers={args.workers}", "train.compile=false",
        f"train.log_every={max(steps // 4, 1)}", f"train.diagnostics_every={max(steps // 4, 1)}",
        f"train.checkpoint_every={steps}", f"optim.warmup_steps={max(steps // 10, 1)}", "train.shuffle_buffer=200"])
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    t = time.perf_counter()
    summary = train(cfg, work / "run")
    result.update(train_s=time.perf_counter() - t, variant=args.train_variant, size=args.train_size, steps=steps,
                  batch=args.train_batch, peak_memory_gib=peak_memory_gib(device),
                  summary={k: v for k, v in summary.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)})
    return result


def evaluate_part(args: argparse.Namespace, data: Path, run: Path) -> dict[str, Any]:
    """The trained run on the hiershapes zero-shot benchmark (config/config.yaml's entry, our data)."""
    raw = dict(load_config(HIERSHAPES_CONFIG, base_dir=ROOT).raw["benchmarks"]["hs_zeroshot"])
    raw.update(root=str(data / "classification"), taxonomy=str(data / "classification" / "taxonomy.txt"))
    model, _cfg, unfinished = load_run(run, device=args.device)
    result = evaluate(model, "hs_zeroshot", parse_benchmark("hs_zeroshot", raw))
    return {"benchmark": "hs_zeroshot", "unfinished": unfinished, "status": result["status"],
            "metrics": {k: v for k, v in result["metrics"].items() if isinstance(v, (int, float))},
            "counts": {k: v for k, v in result["counts"].items() if isinstance(v, int)}}


class Check:
    """The JSON, written after every part; each part time-boxed, its failure recorded."""

    def __init__(self, out: Path, budget_s: float, report: dict[str, Any]) -> None:
        self.out, self.report = out, report
        self.deadline = time.monotonic() + budget_s

    def run(self, name: str, box: float, fn: Callable[[], dict[str, Any]], into: dict[str, Any] | None = None) -> dict[str, Any]:
        result = into if into is not None else {}
        left = self.deadline - time.monotonic()
        t = time.perf_counter()
        if left < 5:
            result.update(ok=False, error=f"skipped: the check's --budget-s was spent ({left:.0f} s left)")
        else:
            try:
                with time_box(min(box, left)):
                    result.update(fn())
                result["ok"] = True
            except (Exception, PartTimeout) as err:  # noqa: BLE001 - any failure of a part is recorded, not raised
                result.update(ok=False, error=f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
            gc.collect()  # a failed part's tensors, held by its traceback, before the next part
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        result["elapsed_s"] = time.perf_counter() - t
        if not result["ok"]:
            self.report["failed"].append(name)
        print(f"gpu_check: {name}: {'ok' if result['ok'] else result['error']} ({result['elapsed_s']:.1f} s)", flush=True)
        self.save()
        return result

    def save(self) -> None:
        self.report["wall_s"] = time.monotonic() - self.report["_start"]
        atomic_write_json(self.out, {k: v for k, v in self.report.items() if not k.startswith("_")})


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default=None, help="cuda, cuda:<i> or cpu (default: cuda when present, else exit 0)")
    p.add_argument("--config", type=Path, default=ROOT / "config" / "paper.yaml",
                   help="workflow config of the sizes (merged over config/config.yaml)")
    p.add_argument("--size", default="S", help="model size of the step timing (default S)")
    p.add_argument("--variants", nargs="+", default=FAMILIES)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    p.add_argument("--steps", type=int, default=20, help="timed steps per family and compile mode")
    p.add_argument("--warmup", type=int, default=3, help="steps before the timed ones (compilation happens here)")
    p.add_argument("--compile", choices=["both", "on", "off"], default="both")
    p.add_argument("--peak-tflops", type=float, default=None, help="the device's dense peak (default: PEAKS table)")
    p.add_argument("--train-size", default="tiny")
    p.add_argument("--train-variant", default="argent")
    p.add_argument("--train-steps", type=int, default=100)
    p.add_argument("--train-batch", type=int, default=256)
    p.add_argument("--scenes", type=int, default=4000, help="training scenes generated for the short run")
    p.add_argument("--workers", type=int, default=min(8, os.cpu_count() or 1), help="data loader workers")
    p.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1), help="hiershapes generator processes")
    p.add_argument("--budget-s", type=float, default=480.0, help="the whole check's time (default 8 min)")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "gpu_check.json")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.device is None:
        if not torch.cuda.is_available():
            print("gpu_check: no CUDA device visible (torch.cuda.is_available() is False); nothing measured "
                  "(pass --device cpu to run the same check on the CPU)")
            return 0
        args.device = "cuda"
    try:
        require_device(args.device)  # `--device tpu`: one line, not torch's traceback
    except ArgentError as err:
        print(f"gpu_check: --device {args.device}: {str(err).split(';')[0]}; pass --device cuda or cuda:<index> "
              f"where CUDA is visible, or --device cpu", file=sys.stderr)
        return 2
    device = torch.device(args.device)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else (platform.processor() or platform.machine())
    peak, peak_source = device_peak(name if device.type == "cuda" else "", args.peak_tflops)
    report: dict[str, Any] = {
        "_start": time.monotonic(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "device": {"type": device.type, "name": name, "peak_tflops": peak, "peak_source": peak_source,
                   "torch": torch.__version__, "cuda": torch.version.cuda, "host": platform.node(),
                   "cpu_threads": torch.get_num_threads(),
                   "capability": list(torch.cuda.get_device_capability(device)) if device.type == "cuda" else None,
                   "memory_gib": torch.cuda.get_device_properties(device).total_memory / 2**30
                   if device.type == "cuda" else None},
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "flop_model": "argent/models/flops.py: transformer layers, 3 × forward, texts at the full context",
        "steps": [], "train": {}, "evaluate": {}, "failed": [], "wall_s": 0.0,
    }
    check = Check(args.out, args.budget_s, report)
    modes = {"both": [False, True], "on": [True], "off": [False]}[args.compile]
    work = Path(tempfile.mkdtemp(prefix="gpu_check-"))

    def steps(compiled: bool) -> None:
        for variant in args.variants:
            folder = work / "steps"
            report["steps"].append(check.run(
                f"step {variant} compile={'on' if compiled else 'off'}", BOXES["step_compiled" if compiled else "step_eager"],
                functools.partial(step_part, args, variant, compiled, peak, folder), {"variant": variant, "compile": compiled}))
            shutil.rmtree(folder, ignore_errors=True)  # a checkpoint of S is ~1 GB

    try:  # eager steps, the short run and its evaluation, then the compiled steps (the slow part)
        if False in modes:
            steps(False)
        data = work / "hiershapes"
        check.run("train", BOXES["train"], lambda: train_part(args, data, work, report["train"]), report["train"])
        if report["train"]["ok"]:
            check.run("evaluate", BOXES["evaluate"], lambda: evaluate_part(args, data, work / "run"), report["evaluate"])
        else:
            report["evaluate"].update(ok=False, error="skipped: the training part failed")
            report["failed"].append("evaluate")
        if True in modes:
            steps(True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        check.save()
    finite = all(math.isfinite(r["samples_per_s"]) for r in report["steps"] if r.get("ok"))
    print(f"gpu_check: wrote {args.out}; failed parts: {report['failed'] or 'none'}"
          f"{'' if finite else '; a step time is not finite'}")
    return 0 if finite and not report["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
