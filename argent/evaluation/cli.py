"""``argent evaluate``: score a trained run on benchmarks of the workflow config.

    argent evaluate --run results/runs/argent-tiny/seed0 --benchmark hiershapes_zeroshot \\
        --config config/config.yaml --out results/eval/argent-tiny/seed0/hiershapes_zeroshot.json
    argent evaluate --run ... --benchmark a b c --config ... --out-dir results/eval/argent-tiny/seed0

Several benchmarks in one call load the model once (the workflow does this: one job per run) and
write ``<out-dir>/<benchmark>.json`` each; a benchmark that fails does not stop the others, and the
exit status says whether any failed.

The benchmark is the entry ``benchmarks.<name>`` of the config (see
``argent.evaluation.benchmarks``). The JSON holds: benchmark, protocol, run, config_hash (the
run's ``ExperimentConfig.result_hash``), metrics, counts (items, skipped by reason) and the
resolved entry. It is written atomically (temp file + rename).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import torch

from argent.cli import explain
from argent.config import ConfigError
from argent.data.policy import BadDataError
from argent.data.taxonomy import TaxonomyError
from argent.evaluation.benchmarks import load_benchmark
from argent.evaluation.encoding import reuse_image_embeddings
from argent.evaluation.runner import evaluate
from argent.io import atomic_write_json
from argent.runs import load_model
from argent.tracking import log_evaluation

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="argent evaluate", description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, type=Path, help="run folder (config.yaml + checkpoint.pt)")
    p.add_argument("--benchmark", required=True, nargs="+", help="name(s) of entries under 'benchmarks:' in --config")
    p.add_argument("--config", required=True, type=Path, help="workflow config YAML holding the benchmarks section")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. benchmarks.hs_zeroshot.batch_size=64 (repeatable)")
    out = p.add_mutually_exclusive_group(required=True)
    out.add_argument("--out", type=Path, help="result JSON for a single benchmark (written atomically)")
    out.add_argument("--out-dir", type=Path, help="folder for <benchmark>.json, one per benchmark")
    p.add_argument("--device", default="cpu", help="torch device for encoding and scoring (default: cpu)")
    p.add_argument(
        "--base-dir", type=Path, default=None, help="resolve relative data paths against this folder (default: cwd)"
    )
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch default)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.out and len(args.benchmark) > 1:
        print("argent evaluate: --out takes one benchmark; use --out-dir for several", file=sys.stderr)
        return 2
    try:
        entries = {name: load_benchmark(args.config, name, args.base_dir, args.overrides) for name in args.benchmark}
        model, cfg = load_model(args.run, device=args.device)
    except (ConfigError, FileNotFoundError) as err:
        print(f"argent evaluate: {err}", file=sys.stderr)
        return 2
    failed, written = [], []
    with reuse_image_embeddings():  # one checkpoint: each image set is embedded once, reused by every protocol
        for name, entry in entries.items():
            out_path = args.out or args.out_dir / f"{name}.json"
            try:
                result = evaluate(model, name, entry, out_path=out_path)
            except Exception as err:  # noqa: BLE001 - one benchmark's failure must not stop the others
                expected = isinstance(err, (ConfigError, BadDataError, TaxonomyError, FileNotFoundError)) or explain(err)
                if not expected:
                    logging.exception("%s: unexpected failure", name)
                print(f"argent evaluate: {name}: {explain(err) or err}", file=sys.stderr)
                failed.append(name)
                continue
            head = {"benchmark": result.pop("benchmark"), "protocol": result.pop("protocol"), "run": str(args.run),
                    "config_hash": cfg.result_hash(), "variant": cfg.variant_name, "size": cfg.size, "seed": cfg.seed}
            atomic_write_json(out_path, {**head, **result})  # a reader sees the old file or the new one
            written.append(out_path)
            scalars = [(k, v) for k, v in result["metrics"].items() if isinstance(v, (int, float)) or v is None][:12]
            shown = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in scalars)
            print(f"{head['benchmark']} ({head['protocol']}, {result['status']}): {shown or 'see the JSON'} -> {out_path}")
    log_evaluation(args.run, written)  # onto the training run's MLflow run; best effort, never raises
    if failed:
        print(f"argent evaluate: failed: {failed}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
