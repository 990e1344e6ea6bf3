"""``argent track --run DIR ...``: re-send run folders (config, metrics, evaluation results) to MLflow."""

from __future__ import annotations

import argparse
from pathlib import Path

from argent.runs import eval_dir_of

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="argent track", description="re-send run folders (config, metrics, evaluation results) to MLflow; idempotent")
    parser.add_argument("--run", type=Path, required=True, nargs="+", help="run folder(s)")
    parser.add_argument("--uri", default=None, help="tracking URI (default: the run's config, else sqlite under results/)")
    args = parser.parse_args(argv)
    from argent.tracking.mirror import resend  # torch (the run folder's reader): after the parse

    ok = True
    for run_dir in args.run:
        sent = resend(run_dir, args.uri)
        ok &= sent
        evals = eval_dir_of(run_dir)
        print(f"{run_dir}: {'tracked' if sent else 'tracking failed (see warning)'}"
              f" (evaluation results from {evals}: {len(list(evals.glob('*.json')))})")
    return 0 if ok else 1
