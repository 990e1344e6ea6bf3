"""`argent restamp (--run DIR | --results DIR) [--config FILE] [--set key=value ...]`: carry finished
runs over a change of the run identity's encoding, without retraining.

A run stamped before run identity v1 (argent/identity.py) carries the *legacy* hash of its config.
Re-stamping one run folder:

1. its checkpoint must carry the legacy hash of the folder's own ``config.yaml`` (the weights belong
   to that config) or already the current identity (nothing to do);
2. that stored config must be *equivalent* to the config the workflow would now train for the
   folder's group, variant, size and seed (same identity: same values wherever one differs from
   its pinned default); else it is refused naming the first differing key;
3. then the checkpoint's hash is rewritten (atomically; weights untouched; the summary's data counts
   copied into it, so a later resume keeps them), and then summary.json's. A checkpoint already
   current beside a summary.json of the old hash (a re-stamp whose summary write failed) gets the
   summary re-stamped alone. The folder's writer lock is held throughout (argent.runs.hold_writer):
   a folder a trainer is writing is refused, naming it.

A run stamped under an older identity *version* is refused: a version bump means a value's meaning
changed, so only a retrain makes the run match its config. Snakemake keeps the old hash as the train
job's ``hash`` param; the verb prints the ``snakemake --cleanup-metadata`` line that drops it.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from argent.config import IDENTITY_VERSION, ConfigError, ExperimentConfig
from argent.identity import first_difference
from argent.io import ArgentError, atomic_write_json, read_json
from argent.layout import RUNS_DIR, Results, RunFolder, run_parts
from argent.plan.cli import merged_config
from argent.plan.groups import TUNED_VARIANT, Plan, RunKey, build_plan, run_experiment
from argent.typed import strict_yaml
from argent.workflow_config import setting


@dataclass
class Outcome:
    run: Path
    status: str   # restamped | current | refused
    message: str


def _tuned_overrides(cfg: dict[str, Any], results: Path) -> dict[str, Any] | None:
    """The study's best.yaml variant fields (what the train rule passes with --variant-file)."""
    study = setting(cfg, "tune", "study")
    path = Results(results).study_best(study)
    if not study or not path.is_file():
        raise ArgentError(f"{path}: the tuned variant's best.yaml is missing, so the config the workflow "
                          f"trains for {TUNED_VARIANT} is unknown; run the study first or retrain the run")
    try:
        data = strict_yaml(path.read_text(errors="replace"), path)  # a repeated key names file and line
    except yaml.YAMLError as err:
        raise ArgentError(f"{path}: not valid YAML ({str(err).splitlines()[0]}); expected the 'variant:' mapping "
                          f"argent tune writes; re-run the study (argent tune) or restore the file") from None
    variant = data.get("variant", {}) if isinstance(data, dict) else None
    if not isinstance(variant, dict):
        found = type(data).__name__ if not isinstance(data, dict) else f"variant: {type(variant).__name__}"
        raise ArgentError(f"{path}: expected a mapping with a 'variant:' mapping of variant fields (what argent tune "
                          f"writes), found {found}; re-run the study (argent tune) or restore the file")
    return variant


def _value_at(identity: dict[str, Any], path: str) -> Any:
    node: Any = identity
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return "(its default)"
        node = node[part]
    return node


def expected_config(folder: RunFolder, cfg: dict[str, Any], plan: Plan, base_dir: Path) -> ExperimentConfig:
    """The config the workflow would now train into ``folder`` (an error when it trains none there)."""
    try:
        group, variant, size, seed = run_parts(folder.root)
    except ValueError:
        raise ArgentError(f"{folder.root}: not a run folder of a results layout (expected "
                          f"<results>/runs/<group>/<variant>-<size>/seed<k>, a folder named seed<k>); "
                          f"pass --run with such a folder, or --results") from None
    key = RunKey(group, variant, size, seed)
    if group not in plan.configs:
        raise ArgentError(f"{folder.root}: group {group!r} is not an active group of the config "
                          f"(active: {sorted(plan.configs)}); pass the config the run was trained with (--config)")
    if plan.home.get(key) != key:
        raise ArgentError(f"{folder.root}: the config does not train {key} into this folder "
                          f"(not listed, or borrowed from another group); pass the config the run was trained with")
    extra = _tuned_overrides(cfg, folder.results_root()) if variant == TUNED_VARIANT else None
    try:
        return run_experiment(plan.configs[group], key, base_dir, extra)
    except ConfigError as err:
        raise ArgentError(f"{folder.root}: the config for {key} does not resolve: {err}") from None


def restamp_run(run_dir: Path, cfg: dict[str, Any], plan: Plan, base_dir: Path, dry_run: bool = False) -> Outcome:
    """Check one run folder and re-stamp it (see the module doc); never raises for a refusal."""
    from argent.runs import hold_writer, read_run_config  # torch: imported for a run, not for --help

    folder = RunFolder(Path(run_dir))
    try:
        read_run_config(folder.root)  # not a run folder: refused before the lock would create anything
        if dry_run:
            return _restamp(folder, cfg, plan, base_dir, dry_run)
        with hold_writer(folder, "argent restamp"):  # no trainer writes the folder meanwhile
            return _restamp(folder, cfg, plan, base_dir, dry_run)
    except ArgentError as err:
        return Outcome(folder.root, "refused", str(err))


def _read_summary(folder: RunFolder) -> dict[str, Any] | None:
    if not folder.summary.is_file():
        return None
    summary = read_json(folder.summary)
    if not isinstance(summary, dict):
        raise ArgentError(f"{folder.summary}: expected a JSON object (a run summary), found "
                          f"{type(summary).__name__}; retrain the run")
    return summary


def _restamp(folder: RunFolder, cfg: dict[str, Any], plan: Plan, base_dir: Path, dry_run: bool) -> Outcome:
    from argent.engine.checkpoint import atomic_torch_save  # torch: imported for a run, not for --help
    from argent.engine.summary import COUNT_KEYS
    from argent.runs import CheckpointError, read_checkpoint, read_run_config, stamped_version

    if folder.staging.summary.is_file() or folder.replacing.root.exists() or folder.replaced.root.exists():
        raise ArgentError(f"{folder.root}: a finished re-run waits to be moved in ({folder.staging.root}); the next "
                          f"`argent train --out {folder.root}` moves it in first; re-stamp after that")
    stored = read_run_config(folder.root)
    state = read_checkpoint(folder.checkpoint)
    summary = _read_summary(folder)
    now = stored.result_hash()
    version = stamped_version(state, folder.config)
    if state.get("config_hash") == now and version == IDENTITY_VERSION:
        if summary is None or summary.get("config_hash") == now:
            return Outcome(folder.root, "current", f"{folder.root}: already stamped with identity v{IDENTITY_VERSION}")
        # A re-stamp whose summary write failed: the checkpoint is current, the summary not yet.
        if not dry_run:
            _write_summary(folder, summary, now, "the checkpoint was already re-stamped")
        verb = "would re-stamp" if dry_run else "re-stamped"
        return Outcome(folder.root, "restamped", f"{folder.root}: {verb} {folder.summary.name} {summary.get('config_hash')} "
                                                 f"-> {now} (the checkpoint already carried it)")
    if version is None or version == IDENTITY_VERSION:
        raise CheckpointError(f"{folder.root}: the checkpoint's hash {state.get('config_hash')} is not the one "
                              f"of its {folder.config.name}: the weights belong to another config; retrain the run")
    if version != 0:
        raise CheckpointError(f"{folder.root}: stamped under identity v{version}; v{IDENTITY_VERSION} changed what "
                              f"a config value means (argent/config.py IDENTITY_VERSION): retrain the run")
    expected = expected_config(folder, cfg, plan, base_dir)
    diff = first_difference(stored.identity(), expected.identity())
    if diff is not None:
        raise ArgentError(
            f"{folder.root}: its config differs from what the workflow now trains there, first at {diff} "
            f"(run: {_value_at(stored.identity(), diff)!r}, config: {_value_at(expected.identity(), diff)!r}); "
            f"not re-stamped. Retrain it, or pass the config it was trained with (--config/--set)")
    if not dry_run:
        restamped = {**state, "config_hash": now, "identity_version": IDENTITY_VERSION}
        if "data_counts" not in state and summary is not None:  # kept for a resume (argent.engine.trainer)
            restamped["data_counts"] = {key: summary[key] for key in COUNT_KEYS if key in summary}
        try:
            atomic_torch_save(restamped, folder.checkpoint)
        except (ArgentError, OSError) as err:
            raise ArgentError(f"{folder.checkpoint}: re-stamp failed ({err}); nothing in {folder.root} was changed "
                              f"(the write is atomic); fix the cause and run argent restamp again") from None
        if summary is not None:
            _write_summary(folder, summary, now, "the checkpoint was re-stamped")
    verb = "would re-stamp" if dry_run else "re-stamped"
    return Outcome(folder.root, "restamped", f"{folder.root}: {verb} {state.get('config_hash')} -> {now}")


def _write_summary(folder: RunFolder, summary: dict[str, Any], now: str, done: str) -> None:
    try:
        atomic_write_json(folder.summary, {**summary, "config_hash": now, "identity_version": IDENTITY_VERSION})
    except (ArgentError, OSError) as err:
        raise ArgentError(f"{folder.summary}: re-stamp failed ({err}); {done} (its data counts kept in it), "
                          f"{folder.summary.name} was not changed (it still carries {summary.get('config_hash')}). "
                          f"Fix the cause and run argent restamp again: it re-stamps the summary alone") from None


def run_folders(results: Path) -> list[Path]:
    return sorted(p.parent for p in (results / RUNS_DIR).glob("*/*/seed*/config.yaml"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="argent restamp", description=__doc__.split("\n\n")[0])
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--run", type=Path, help="one run folder: <results>/runs/<group>/<variant>-<size>/seed<k>")
    where.add_argument("--results", type=Path, help="every run folder under <results>/runs")
    p.add_argument("--config", type=Path, default=Path("config") / "config.yaml",
                   help="the workflow config the workflow now trains with (merged over config/config.yaml)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, as given to snakemake --config (repeatable)")
    p.add_argument("--base-dir", type=Path, default=Path.cwd(), help="project root (relative paths; default: cwd)")
    p.add_argument("--dry-run", action="store_true", help="check and report; write nothing")
    args = p.parse_args(argv)
    cfg = merged_config(args.config, args.overrides, args.base_dir)
    plan = build_plan(cfg, args.base_dir)
    folders = [args.run] if args.run else run_folders(args.results)
    if not folders:
        raise ArgentError(f"{args.results / RUNS_DIR}: no run folder (runs/<group>/<variant>-<size>/seed<k>/config.yaml)")
    outcomes = [restamp_run(folder, cfg, plan, args.base_dir, args.dry_run) for folder in folders]
    for outcome in outcomes:
        print(f"argent restamp: {outcome.message}", file=sys.stderr if outcome.status == "refused" else sys.stdout)
    done = [o for o in outcomes if o.status == "restamped"]
    if done and not args.dry_run:
        summaries = " ".join(str(RunFolder(o.run).summary) for o in done if RunFolder(o.run).summary.is_file())
        print("argent restamp: Snakemake still records the old hash as these train jobs' `hash` param; drop it "
              f"(nothing is deleted but that record): snakemake --cleanup-metadata {summaries}")
    refused = [o for o in outcomes if o.status == "refused"]
    if refused:
        rest = "; the others are done" if len(refused) < len(outcomes) else ""
        raise ArgentError(f"{len(refused)} of {len(outcomes)} run folder(s) not re-stamped (reasons above){rest}")
    return 0
