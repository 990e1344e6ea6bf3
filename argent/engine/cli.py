"""`argent train`: one (variant, size, seed) run into one folder."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from argent.config import threads


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="argent train", description=__doc__)
    p.add_argument("--config", type=Path, required=True, help="workflow config (e.g. config/config.yaml)")
    p.add_argument("--variant", required=True, help="variant name from the catalogue (config/variants.yaml)")
    p.add_argument("--size", required=True, help="model size preset: tiny, S, B, L")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True, help="run folder")
    p.add_argument("--resume", nargs="?", const="strict", default="no", choices=["no", "strict", "auto"],
                   help="continue from the run folder's checkpoint (strict: refuse a different config; "
                        "auto: start fresh when the config changed)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set train.steps=100 (repeatable)")
    p.add_argument("--name", default=None, help="record the run under this variant name (default: --variant)")
    p.add_argument("--threads", type=threads, default=0, help="CPU threads for torch (0: torch's default)")
    p.add_argument("--variant-file", type=Path, default=None,
                   help="YAML of variant fields applied on top of the variant (e.g. a tuned best.yaml)")
    p.add_argument("--no-default", action="store_true", help="do not merge the file over config/config.yaml")
    return p


def refuse_what_cannot_fit(cfg: Any) -> None:
    """The refusal ``argent check`` makes of a CPU run whose memory need exceeds the machine's (the lower
    bound of argent/models/memory.py), made by the verb too, before the model is built: by hand it ended in
    an out-of-memory traceback (or the kernel's OOM killer)."""
    from argent.io import ArgentError
    from argent.models.memory import cpu_shortfall

    problem = cpu_shortfall(cfg, f"{cfg.variant_name}-{cfg.size}")
    if problem:
        raise ArgentError(problem)


def main(argv: list[str] | None = None) -> int:
    """Expected failures propagate as ``ArgentError``/``OSError``: ``argent``'s one error boundary
    (argent/cli.py) prints them without a traceback and exits 2."""
    args = parser().parse_args(argv)
    # Heavy imports after parsing: --help and usage errors answer without torch.
    import torch
    import yaml

    from argent.config import ConfigError, check_name, load_config, strict_yaml
    from argent.engine.trainer import configure_logging, train
    from argent.tracking import catalogue_tags

    configure_logging()
    extra = None
    if args.variant_file:
        try:
            extra = (strict_yaml(args.variant_file.read_text(), args.variant_file) or {}).get("variant", {})
        except (yaml.YAMLError, AttributeError) as err:
            raise ConfigError(f"{args.variant_file} (--variant-file): not a YAML mapping with a 'variant' "
                              f"section ({err})") from None
    # merged over config/config.yaml as Snakemake merges --configfile (docs/reliability.md §6), so a run
    # trained by hand with the workflow's config and key has the workflow's identity. The workflow passes
    # its group's file, already merged over it: merging again changes nothing (deep_merge(D, deep_merge(D,
    # U)) == deep_merge(D, U); lists and scalars replace, the group file holds every key of D but
    # `groups`, which training does not read). cwd-relative paths.
    workflow = load_config(args.config, args.overrides, merge_default=not args.no_default)
    cfg = workflow.experiment(args.variant, args.size, args.seed, extra)
    if args.name:
        cfg.variant_name = check_name(args.name, "--name")
    # MLflow tags from the catalogue (family, Table 3 group); tracking is outside the config hash.
    variants_file = workflow.setting("variants_file")
    cfg.tracking.tags = {**catalogue_tags(variants_file, args.variant), **cfg.tracking.tags}
    refuse_what_cannot_fit(cfg)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    summary = train(cfg, args.out, resume=args.resume)
    if summary:  # the file fingerprints (summary.json: inputs) counted, not listed: a shard list may be long
        shown = {k: v for k, v in summary.items() if k != "inputs"}
        if isinstance(summary.get("inputs"), dict):
            shown["inputs"] = {kind: f"{len(files)} file(s) fingerprinted" for kind, files in summary["inputs"].items()}
        print(json.dumps(shown, indent=2))
    return 0
