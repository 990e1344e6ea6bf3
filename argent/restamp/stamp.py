"""One run folder checked and re-stamped (the verb: argent/restamp/__init__.py and cli.py): its checkpoint
must carry the legacy or v1 hash of its own ``config.yaml``, that config read in v2's terms
(``upgrade_stored``) must be the one the workflow now trains there (``expected_config``, from the
plan), then the checkpoint, the config, the summary and the run's evaluation and probe results are
re-stamped, each keeping its time. Never raises for a refusal: ``restamp_run`` returns its ``Outcome``.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from argent.config import CARRIED_VERSIONS, IDENTITY_VERSION, ConfigError, ExperimentConfig, strict_yaml
from argent.config.groups import RunKey, run_experiment, tuned_study
from argent.io import ArgentError, atomic_write_json, atomic_write_text, read_json
from argent.plan.groups import Plan
from argent.runs import Results, RunFolder, eval_dir_of, first_difference, probe_result, run_parts, v1_hash


@dataclass
class Outcome:
    run: Path
    status: str   # restamped | current | refused
    message: str


def _tuned_overrides(cfg: dict[str, Any], results: Path, variant: str) -> dict[str, Any] | None:
    """The best.yaml variant fields of the study that tunes ``variant`` (what the train rule passes with
    --variant-file)."""
    study = tuned_study(cfg, variant)
    path = Results(results).study_best(study or "")
    if not study or not path.is_file():
        raise ArgentError(f"{path}: the tuned variant's best.yaml is missing, so the config the workflow "
                          f"trains for {variant} is unknown; run the study first or retrain the run")
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
    extra = _tuned_overrides(cfg, folder.results_root(), variant) if tuned_study(cfg, variant) else None
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
    except OSError as err:  # a file of the folder the system will not read (permissions, a damaged disk)
        return Outcome(folder.root, "refused", f"{folder.root}: cannot be read ({err}); not re-stamped")


def _read_summary(folder: RunFolder) -> dict[str, Any] | None:
    if not folder.summary.is_file():
        return None
    summary = read_json(folder.summary)
    if not isinstance(summary, dict):
        raise ArgentError(f"{folder.summary}: expected a JSON object (a run summary), found "
                          f"{type(summary).__name__}; retrain the run")
    return summary


def _restamp(folder: RunFolder, cfg: dict[str, Any], plan: Plan, base_dir: Path, dry_run: bool) -> Outcome:
    from argent.runs import CheckpointError, read_checkpoint, read_run_config, stamped_version

    if folder.staging.summary.is_file() or folder.replacing.root.exists() or folder.replaced.root.exists():
        raise ArgentError(f"{folder.root}: a finished re-run waits to be moved in ({folder.staging.root}); the next "
                          f"`argent train --out {folder.root}` moves it in first; re-stamp after that")
    stored = read_run_config(folder.root)
    state = read_checkpoint(folder.checkpoint)
    summary = _read_summary(folder)
    found, version = state.get("config_hash"), stamped_version(state, folder.config)
    if found == stored.result_hash() and version == IDENTITY_VERSION:
        return _current(folder, summary, found, dry_run)
    if version == IDENTITY_VERSION:
        # A re-stamp cut after the checkpoint write: its stored config not yet upgraded.
        upgraded = upgrade_stored(stored, expected_config(folder, cfg, plan, base_dir), base_dir)
        if upgraded.result_hash() != found:
            raise CheckpointError(f"{folder.root}: the checkpoint's hash {found} is not the one of its "
                                  f"{folder.config.name}: the weights belong to another config; retrain the run")
        if not dry_run:
            _write_config(folder, upgraded)
            if summary is not None:
                _write_summary(folder, summary, found, "the checkpoint was already re-stamped")
        verb = "would finish" if dry_run else "finished"
        return Outcome(folder.root, "restamped", f"{folder.root}: {verb} an interrupted re-stamp to {found}")
    if version is None:
        raise CheckpointError(f"{folder.root}: the checkpoint's hash {found} is not the one of its "
                              f"{folder.config.name}: the weights belong to another config; retrain the run")
    if version not in CARRIED_VERSIONS:
        raise CheckpointError(f"{folder.root}: stamped under identity v{version}; v{IDENTITY_VERSION} changed what "
                              f"a config value means (argent/config/experiment.py IDENTITY_VERSION): retrain the run")
    if version == 1 and found != v1_hash(stored):  # version 0 was matched against the legacy hash already
        raise CheckpointError(f"{folder.root}: the checkpoint's hash {found} is not the v1 hash of its "
                              f"{folder.config.name}: the weights belong to another config; retrain the run")
    expected = expected_config(folder, cfg, plan, base_dir)
    upgraded = upgrade_stored(stored, expected, base_dir)
    diff = first_difference(upgraded.identity(), expected.identity())
    if diff is not None:
        raise ArgentError(
            f"{folder.root}: its config differs from what the workflow now trains there, first at {diff} "
            f"(run: {_value_at(upgraded.identity(), diff)!r}, config: {_value_at(expected.identity(), diff)!r}); "
            f"not re-stamped. Retrain it, or pass the config it was trained with (--config/--set)")
    now = expected.result_hash()
    carried = _carry_results(folder, found, now, dry_run)
    if not dry_run:
        _write_restamp(folder, state, summary, upgraded, now)
    verb = "would re-stamp" if dry_run else "re-stamped"
    return Outcome(folder.root, "restamped", f"{folder.root}: {verb} {found} (v{version}) -> {now}, and {carried} "
                                             f"evaluation/probe result(s) of these weights")


def _current(folder: RunFolder, summary: dict[str, Any] | None, found: str, dry_run: bool) -> Outcome:
    """A folder whose checkpoint already carries the current identity: nothing to do, or the summary a re-stamp
    whose summary write failed left behind."""
    if summary is None or summary.get("config_hash") == found:
        return Outcome(folder.root, "current", f"{folder.root}: already stamped with identity v{IDENTITY_VERSION}")
    if not dry_run:
        _write_summary(folder, summary, found, "the checkpoint was already re-stamped")
    verb = "would re-stamp" if dry_run else "re-stamped"
    return Outcome(folder.root, "restamped", f"{folder.root}: {verb} {folder.summary.name} {summary.get('config_hash')} "
                                             f"-> {found} (the checkpoint already carried it)")


def _write_restamp(folder: RunFolder, state: dict[str, Any], summary: dict[str, Any] | None, upgraded: Any,
                   now: str) -> None:
    """The checkpoint with the new hash (weights untouched; the summary's data counts kept for a resume), then the
    config in the current terms, then the summary."""
    from argent.engine.checkpoint import atomic_torch_save  # torch: imported for a run, not for --help
    from argent.engine.summary import COUNT_KEYS

    restamped = {**state, "config_hash": now, "identity_version": IDENTITY_VERSION}
    if "data_counts" not in state and summary is not None:  # kept for a resume (argent.engine.trainer)
        restamped["data_counts"] = {key: summary[key] for key in COUNT_KEYS if key in summary}
    try:
        atomic_torch_save(restamped, folder.checkpoint)
    except (ArgentError, OSError) as err:
        raise ArgentError(f"{folder.checkpoint}: re-stamp failed ({err}); nothing in {folder.root} was changed "
                          f"(the write is atomic); fix the cause and run argent restamp again") from None
    _write_config(folder, upgraded)
    if summary is not None:
        _write_summary(folder, summary, now, "the checkpoint was re-stamped")


def _carry_results(folder: RunFolder, old: str, now: str, dry_run: bool) -> int:
    """The run's evaluation and probe JSONs carry its hash; those of these weights (the old hash) are
    re-stamped first (a cut re-stamp leaves the run on its old hash, and the next finishes), each
    keeping its time, so Snakemake re-evaluates nothing. Returns how many."""
    group, variant, size, seed = run_parts(folder.root)
    paths = [*sorted(eval_dir_of(folder.root).glob("*.json")),
             probe_result(folder.results_root(), group, variant, size, seed)]
    stamped = []
    for path in paths:
        data = read_json(path) if path.is_file() else None
        if isinstance(data, dict) and data.get("config_hash") == old:
            stamped.append((path, data))
    for path, data in stamped if not dry_run else ():
        _rewrite_keeping_time(path, lambda p, d=data: atomic_write_json(p, {**d, "config_hash": now}))
    return len(stamped)


def _rewrite_keeping_time(path: Path, write: Any) -> None:
    """Rewrite ``path`` with ``write(path)`` and give it back its modification time: a re-stamp changes
    no number, so nothing downstream of it is out of date."""
    before = path.stat()
    write(path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def upgrade_stored(stored: ExperimentConfig, expected: ExperimentConfig, base_dir: Path) -> ExperimentConfig:
    """What a config stored by identity v0/v1 code says in v2's terms: the loader's data streams were
    its workers (``max(1, num_workers)``), and a data path that is the workflow's own (the same file as
    ``expected``'s) takes the identity the workflow now gives it. Nothing else is filled in."""
    def same(a: str, b: str) -> bool:
        return bool(a) and os.path.abspath(base_dir / a) == os.path.abspath(base_dir / b)

    data = stored.data
    if not data.dataset_hash and same(data.train_shards, expected.data.train_shards):
        data = dataclasses.replace(data, dataset_hash=expected.data.dataset_hash)
    if not data.negatives_id and same(data.negatives, expected.data.negatives):
        data = dataclasses.replace(data, negatives_id=expected.data.negatives_id)
    train = stored.train
    if train.data_streams == 1 and train.num_workers > 1:
        train = dataclasses.replace(train, data_streams=train.num_workers)
    return dataclasses.replace(stored, data=data, train=train)


def _write_config(folder: RunFolder, cfg: ExperimentConfig) -> None:
    """The stored config in v2's terms (``upgrade_stored``), as the trainer writes it."""
    try:
        atomic_write_text(folder.config, yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    except (ArgentError, OSError) as err:
        raise ArgentError(f"{folder.config}: re-stamp failed ({err}); the checkpoint was re-stamped, "
                          f"{folder.config.name} was not changed. Fix the cause and run argent restamp again: "
                          f"it finishes the re-stamp") from None


def _write_summary(folder: RunFolder, summary: dict[str, Any], now: str, done: str) -> None:
    try:
        _rewrite_keeping_time(folder.summary, lambda p: atomic_write_json(
            p, {**summary, "config_hash": now, "identity_version": IDENTITY_VERSION}))
    except (ArgentError, OSError) as err:
        raise ArgentError(f"{folder.summary}: re-stamp failed ({err}); {done} (its data counts kept in it), "
                          f"{folder.summary.name} was not changed (it still carries {summary.get('config_hash')}). "
                          f"Fix the cause and run argent restamp again: it re-stamps the summary alone") from None
