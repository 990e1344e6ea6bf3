"""``argent evaluate``: score a trained run, or a released checkpoint, on benchmarks of the workflow config.

    argent evaluate --run results/runs/argent-tiny/seed0 --benchmark hiershapes_zeroshot \\
        --config config/config.yaml --out results/eval/argent-tiny/seed0/hiershapes_zeroshot.json
    argent evaluate --run ... --benchmark a b c --config ... --out-dir results/eval/argent-tiny/seed0
    argent evaluate --pretrained meru:ckpt/hycoclip_vit_s.pth --arch vit_s --name hycoclip-S \\
        --benchmark a b c --config ...      # -> results/eval/pretrained/hycoclip-S/seed0/<benchmark>.json

A released checkpoint (``--pretrained <layout>:<path>``, docs/pretrained.md) is read from the local
file only, strictly and weights-only, and evaluated with its own preprocessing and tokenizer; its
JSON carries ``pretrained`` (layout, arch, path, sha256) and ``config_hash`` ``sha256:<file hash>``.

Several benchmarks in one call load the model once (the workflow does this: one job per run) and
write ``<out-dir>/<benchmark>.json`` each; a benchmark that fails does not stop the others, and the
exit status says whether any failed.

The benchmark is the entry ``benchmarks.<name>`` of the config (see
``argent.evaluation.benchmarks``). The JSON holds: benchmark, protocol, run, config_hash (the
run's ``ExperimentConfig.result_hash``), metrics, counts (items, skipped by reason) and the
resolved entry. It is written atomically (temp file + rename). A run folder without its
``summary.json`` (a run killed before its last step) is evaluated, but every result JSON says
``"partial": true`` with ``partial_reason`` (``run unfinished: no summary.json (step N of M)``).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from argent.config import threads

if TYPE_CHECKING:
    import torch

    from argent.config.groups import RunKey

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="argent evaluate", description=__doc__.split("\n\n")[0])
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--run", type=Path, help="run folder (config.yaml + checkpoint.pt)")
    source.add_argument("--pretrained", metavar="LAYOUT:PATH",
                        help="a released checkpoint: meru:<file> (MERU, HyCoCLIP), meru_clip:<file> (their CLIP "
                             "baselines) or open_clip:<file> (docs/pretrained.md)")
    p.add_argument("--arch", help="with --pretrained: vit_s | vit_b | vit_l (meru layouts), an open_clip model name")
    p.add_argument("--name", help="with --pretrained: the row name <family>-<size>, e.g. hycoclip-S "
                                  "(default: <file stem>-<arch>, letters and digits only)")
    p.add_argument("--results", type=Path, default=Path("results"),
                   help="with --pretrained and no --out/--out-dir: write to <results>/eval/pretrained/<name>/seed0")
    p.add_argument("--benchmark", required=True, nargs="+", help="name(s) of entries under 'benchmarks:' in --config")
    p.add_argument("--config", required=True, type=Path,
                   help="workflow config YAML, merged over config/config.yaml as Snakemake merges --configfile")
    p.add_argument("--no-default", action="store_true", help="read --config alone, not merged over config/config.yaml")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. benchmarks.hs_zeroshot.batch_size=64 (repeatable)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--out", type=Path, help="result JSON for a single benchmark (written atomically)")
    out.add_argument("--out-dir", type=Path, help="folder for <benchmark>.json, one per benchmark")
    p.add_argument("--device", default="cpu", help="torch device for encoding and scoring (default: cpu)")
    p.add_argument(
        "--base-dir", type=Path, default=None, help="resolve relative data paths against this folder (default: cwd)"
    )
    p.add_argument("--threads", type=threads, default=0, help="torch CPU threads (0 = torch default)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # Heavy imports after parsing: --help and usage errors answer without torch.
    import torch

    from argent.config import ConfigError, load_config
    from argent.models.pretrained import PretrainedError
    from argent.tracking import log_evaluation, log_pretrained

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.out and len(args.benchmark) > 1:
        print("argent evaluate: --out takes one benchmark; use --out-dir for several", file=sys.stderr)
        return 2
    try:
        # Merged over config/config.yaml as every verb and Snakemake merge (docs/reliability.md §6); the
        # workflow passes its effective config, merged already, which a second merge leaves as it is.
        workflow = load_config(args.config, args.overrides, base_dir=args.base_dir,
                               merge_default=not args.no_default)  # read once
        entries = {name: workflow.benchmark(name) for name in args.benchmark}
        model, head_base, out_dir = _load(args)
        if args.run:  # the JSON is filed under the folder's name: the run must be the one the folder names
            check_attribution(args.run, head_base, workflow.raw,
                              Path.cwd() if args.base_dir is None else args.base_dir, args.config)
    except (ConfigError, FileNotFoundError, PretrainedError, ValueError) as err:
        print(f"argent evaluate: {err}", file=sys.stderr)
        return 2
    failed, written = _evaluate_all(model, entries, head_base, args.out or None, out_dir)
    # Onto the training run's MLflow run, or a pretrained model's own; best effort, never raises.
    if args.run:
        log_evaluation(args.run, written)
    elif written:
        log_pretrained(written, head_base, workflow.raw, args.results)
    if failed:
        print(f"argent evaluate: failed: {failed}", file=sys.stderr)
        return 2
    return 0


def _evaluate_all(model: Any, entries: dict[str, Any], head_base: dict, out: Path | None,
                  out_dir: Path | None) -> tuple[list[str], list[Path]]:
    """Each benchmark on the model, its JSON written on its own (atomically); a benchmark that fails does not stop
    the others. Returns (the benchmarks that failed, the files written)."""
    from argent.cli import explain
    from argent.config import ConfigError
    from argent.data.policy import BadDataError
    from argent.data.taxonomy import TaxonomyError
    from argent.evaluation.encoding import reuse_image_embeddings
    from argent.evaluation.runner import evaluate
    from argent.io import atomic_write_json

    failed, written = [], []
    with reuse_image_embeddings():  # one checkpoint: each image set is embedded once, reused by every protocol
        for name, entry in entries.items():
            out_path = out or out_dir / f"{name}.json"
            try:
                result = evaluate(model, name, entry, out_path=out_path)
            except Exception as err:  # noqa: BLE001 - one benchmark's failure must not stop the others
                expected = isinstance(err, (ConfigError, BadDataError, TaxonomyError, FileNotFoundError)) or explain(err)
                if not expected:
                    logging.exception("%s: unexpected failure", name)
                print(f"argent evaluate: {name}: {explain(err) or err}", file=sys.stderr)
                failed.append(name)
                continue
            head = {"benchmark": result.pop("benchmark"), "protocol": result.pop("protocol"), **head_base}
            if "partial_reason" in head:
                result["partial"] = True
            atomic_write_json(out_path, {**head, **result})  # a reader sees the old file or the new one
            written.append(out_path)
            scalars = [(k, v) for k, v in result["metrics"].items() if isinstance(v, (int, float)) or v is None][:12]
            shown = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in scalars)
            print(f"{head['benchmark']} ({head['protocol']}, {result['status']}): {shown or 'see the JSON'} -> {out_path}")
    return failed, written


def _load(args: argparse.Namespace) -> tuple[torch.nn.Module, dict, Path | None]:
    """(model, the JSON head fields of its source, the output folder) for --run or --pretrained."""
    from argent.io import file_sha256
    from argent.models.pretrained import load_pretrained, parse_spec
    from argent.models.trained import load_run
    from argent.runs import pretrained_eval_dir

    if args.run:
        if args.arch or args.name:
            raise ValueError("--arch and --name go with --pretrained, not --run")
        if not (args.out or args.out_dir):
            raise ValueError("--run needs --out or --out-dir")
        model, cfg, unfinished = load_run(args.run, device=args.device)
        head = {"run": str(args.run), "config_hash": cfg.result_hash(), "variant": cfg.variant_name,
                "size": cfg.size, "seed": cfg.seed}
        if unfinished:  # finished means finished: every result of this call says partial, and why
            logging.warning("%s: PARTIAL result, %s", args.run, unfinished)
            head["partial_reason"] = unfinished
        return model, head, args.out_dir
    layout, path = parse_spec(args.pretrained)
    name = args.name or f"{_alnum(path.stem)}-{_alnum(args.arch or '')}"
    default_dir = pretrained_eval_dir(args.results, name)  # checks the name, before the (slow) load
    out_dir = args.out_dir or (None if args.out else default_dir)
    model = load_pretrained(args.pretrained, args.arch, device=args.device)
    sha = file_sha256(path)
    variant, _, size = name.rpartition("-")
    head = {"run": args.pretrained, "config_hash": f"sha256:{sha}", "variant": variant, "size": size, "seed": 0,
            "pretrained": {"layout": layout, "arch": args.arch, "path": str(path), "sha256": sha,
                           "note": "released checkpoint, not trained here", **model.scalars()}}
    return model, head, out_dir


def check_attribution(run: Path, head: dict, raw: dict, base_dir: Path, config: Path) -> None:
    """Refuse to evaluate a run folder of the results layout (``<results>/runs/<group>/<variant>-<size>/
    seed<k>``) that holds another run than the folder names: a run that records another variant, size
    or seed, or, when the folder is where the workflow trains that key, one whose identity hash (the
    checkpoint's, ``head['config_hash']``) is not the planned one (``argent train --name`` can give a
    folder's name to any variant; ``planned_identity_of``). A folder outside the layout is evaluated as it is."""
    from argent.config.groups import IdentityError, RunKey, refuse_other_identity
    from argent.runs import RUNS_DIR, RunFolder, run_dir, run_parts

    root = Path(run).resolve()
    if len(root.parents) < 4 or root.parents[2].name != RUNS_DIR or "-" not in root.parent.name:
        return
    try:
        group, variant, size, seed = run_parts(root)
    except ValueError:  # not seed<k>: not a folder of the layout
        return
    recorded = (head.get("variant"), head.get("size"), head.get("seed"))
    if recorded != (variant, size, seed):
        raise IdentityError(
            f"{run}: the run records {recorded[0]}-{recorded[1]} seed {recorded[2]}, but its folder names "
            f"{variant}-{size} seed {seed}; its evaluation would be filed under the folder's name. Move the "
            f"folder to the name of the run it holds, or train the run the folder names into it")
    results = raw.get("results")
    if not results or not raw.get("groups"):
        return
    if root != run_dir(Path(results), group, variant, size, seed).resolve():
        return  # a run of another results folder than the config's: the config says nothing of it
    key = RunKey(group, variant, size, seed)
    expected = planned_identity_of(key, raw, Path(base_dir), Path(results), config)
    refuse_other_identity(RunFolder(Path(run)).checkpoint, head.get("config_hash"), key, expected, Path(results))


def planned_identity_of(key: RunKey, raw: dict, base_dir: Path, results: Path, config: Path) -> str | None:
    """The identity hash the workflow stamps ``key``'s run with, None when it trains none there. The workflow's
    own answer when this is its call (``config`` is the effective config its DAG build wrote, and the planned
    runs it wrote beside it, ``Results.planned_runs``, list the run); by hand, the config's own groups
    (``argent.config.groups.planned_identity``: the group's config, a tuned variant's best.yaml), the plan not
    built. A run the plan borrows from another group is listed under that group only."""
    from argent.config.groups import group_config, groups_section, planned_identity, read_planned_runs
    from argent.runs import Results

    layout = Results(results)
    if layout.planned_runs.is_file() and Path(config).resolve() == layout.effective_config.resolve():
        planned = read_planned_runs(layout.planned_runs)
        if str(key) not in planned:
            return None  # the plan trains it in another group's folder (borrowed), or not at all
        if planned[str(key)] is not None:
            return planned[str(key)]
        # a tuned run planned before its study wrote best.yaml: from the config, as by hand
    group = groups_section(raw).get(key.group)
    if group is None or not group.enabled or key not in group.run_keys():
        return None
    return planned_identity(group_config(raw, group), key, base_dir, results)


def _alnum(text: str) -> str:
    return "".join(ch for ch in text if ch.isalnum())


if __name__ == "__main__":
    raise SystemExit(main())
