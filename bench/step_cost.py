"""CPU seconds per training step of the *default run*, end to end (loader included), per variant.

    python bench/step_cost.py --variants clip argent --steps 60 --skip 10
    python bench/step_cost.py --variants argent --profile cprofile      # where the time goes
    python bench/step_cost.py --variants argent --profile torch

Runs the real trainer (``argent.engine.trainer.train``) on the workflow config (default
``config/config.yaml``: model, batch, loader, data exactly as the workflow's train rule), with
tracking off and one torch thread. The clock is the process's user + system CPU time between the
``--skip``-th and the last step (``resource.getrusage``), read from the trainer's ``batch_hook``,
so start-up (imports, model build, the shuffle buffer's first fill) and the end (summary, plot)
are not counted; data loading, tokenisation, forward, backward and the optimiser are. CPU time,
not wall time: on a shared machine it is what the job itself spent.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from argent.config import load_config
from argent.engine.trainer import train

ROOT = Path(__file__).resolve().parents[1]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(config: Path, variant: str, steps: int, skip: int, overrides: list[str], profile: str) -> dict[str, Any]:
    cfg = load_config(config, [f"train.steps={steps}", "tracking.enabled=false", *overrides],
                      merge_default=False).experiment(variant, "tiny", 0)
    marks: dict[int, tuple[float, float]] = {}
    prof: Any = None

    def hook(step: int, batch: dict[str, Any]) -> dict[str, Any]:
        nonlocal prof
        if step in (skip, steps - 1):
            marks[step] = (cpu_seconds(), time.perf_counter())
        if step == skip and profile == "cprofile":
            prof = cProfile.Profile()
            prof.enable()
        elif step == skip and profile == "torch":
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
            prof.__enter__()
        if step == steps - 1 and prof is not None:
            if profile == "cprofile":
                prof.disable()
            else:
                prof.__exit__(None, None, None)
        return batch

    with tempfile.TemporaryDirectory() as tmp:
        train(cfg, Path(tmp) / "run", batch_hook=hook)
    n = steps - 1 - skip
    (c0, w0), (c1, w1) = marks[skip], marks[steps - 1]
    result = {"variant": variant, "steps_timed": n, "cpu_s_per_step": (c1 - c0) / n, "wall_s_per_step": (w1 - w0) / n}
    if profile == "cprofile":
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(45)
        result["profile"] = out.getvalue()
    elif profile == "torch":
        result["profile"] = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30)
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    p.add_argument("--variants", nargs="+", default=["clip", "argent"])
    p.add_argument("--steps", type=int, default=60, help="training steps per run")
    p.add_argument("--skip", type=int, default=10, help="warm-up steps not timed")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--profile", choices=["none", "cprofile", "torch"], default="none")
    p.add_argument("--out", type=Path, default=None, help="also write the results as JSON")
    args = p.parse_args()
    torch.set_num_threads(1)
    results = []
    for variant in args.variants:
        r = measure(args.config, variant, args.steps, args.skip, args.overrides, args.profile)
        results.append(r)
        print(f"{variant:>10}: {r['cpu_s_per_step']:.3f} CPU s/step, {r['wall_s_per_step']:.3f} wall s/step "
              f"({r['steps_timed']} steps)", flush=True)
        if "profile" in r:
            print(r["profile"], flush=True)
    if len(results) > 1:
        base = results[0]["cpu_s_per_step"]
        for r in results[1:]:
            print(f"{r['variant']} / {results[0]['variant']}: {r['cpu_s_per_step'] / base:.2f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps([{k: v for k, v in r.items() if k != "profile"} for r in results], indent=2))


if __name__ == "__main__":
    main()
