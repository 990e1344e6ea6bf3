"""The trainer's data: the batch stream over the configured shards, the mined hard negatives of the
variant's mode it reads, and the end-of-run line on how many samples had none."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from argent.config import ConfigError, DataConfig, ExperimentConfig
from argent.data.inputs import RunInputs, check_declared_hash, run_input_files
from argent.data.loaders import train_loader
from argent.engine import distributed as dist_utils
from argent.engine.preemption import quiet_worker
from argent.io import ArgentError, read_json
from argent.negatives.io import summary_path

log = logging.getLogger("argent.train")


def train_stream(cfg: ExperimentConfig, per_rank: int, ctx: dist_utils.DistContext, start_batch: int) -> Iterator[dict]:
    """This rank's batches of the configured training shards, from batch ``start_batch`` (a resume's step)."""
    if not cfg.data.train_shards:
        raise ConfigError("data.train_shards: no training shards configured (a glob of .tar files)")
    return iter(train_loader(
        negatives_config(cfg), batch_size=per_rank, image_size=cfg.model.image_size, context_length=cfg.model.context_length,
        use_boxes=cfg.variant.use_boxes, seed=cfg.seed, rank=ctx.rank, world_size=ctx.world_size,
        data_streams=cfg.train.data_streams, num_workers=cfg.train.num_workers, start_batch=start_batch, shuffle_buffer=cfg.train.shuffle_buffer,
        negatives_mode=None if cfg.variant.hard_negatives == "none" else cfg.variant.hard_negatives,
        worker_init_fn=quiet_worker,
    ))


def run_inputs(cfg: ExperimentConfig) -> RunInputs:
    """The files the run reads (its shards; its mode's hard-negatives table), listed when first asked for,
    their data set's declared ``dataset_hash`` checked against the one its manifest records
    (argent/data/inputs.py)."""

    def files() -> dict[str, list[Path]]:
        if not cfg.data.train_shards:
            raise ConfigError("data.train_shards: no training shards configured (a glob of .tar files)")
        found = run_input_files(cfg.data.train_shards, negatives_config(cfg).negatives, cfg.variant.hard_negatives)
        check_declared_hash(found.get("train_shards", []), cfg.data.dataset_hash)
        return found

    return RunInputs(files)


def negatives_config(cfg: ExperimentConfig) -> DataConfig:
    """The data config with ``negatives`` resolved to the parquet of the variant's slot mode.

    ``data.negatives`` may name the parquet itself or the folder ``argent mine`` writes
    (``train-<mode>.parquet`` per mode). A variant without hard negatives trains without them.
    """
    mode = cfg.variant.hard_negatives
    if mode == "none":
        return dataclasses.replace(cfg.data, negatives="")
    path = Path(cfg.data.negatives)
    if not cfg.data.negatives:
        raise ConfigError(f"variant {cfg.variant_name!r} uses hard_negatives: {mode}, but data.negatives is empty; "
                         f"mine them first (argent mine) and point data.negatives at the output folder")
    if path.is_dir():
        path = path / f"train-{mode}.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: hard negatives for mode {mode!r} not found; run argent mine --mode {mode}")
    return dataclasses.replace(cfg.data, negatives=str(path))


def report_negatives_coverage(cfg: ExperimentConfig, data_skips: dict[str, Any], trained: int) -> None:
    """One line when training samples had no hard negative, beside the share the miner itself found
    none for (its summary): a much larger share means the parquet was mined from other shards."""
    missing = (data_skips.get("dropped_samples") or {}).get("no_hard_negative", 0)
    if not missing or cfg.variant.hard_negatives == "none":
        return
    parquet = Path(negatives_config(cfg).negatives)
    mined = "unknown (no miner summary beside it)"
    try:
        record = read_json(summary_path(parquet))
        found = record["modes"][cfg.variant.hard_negatives]["negatives"]
        mined = f"{100 * (1 - found / max(record['captions'] - record['empty_captions'], 1)):.1f} %"
    except (ArgentError, KeyError, TypeError):  # absent or torn summary, or another layout
        pass
    log.warning("%d of the %d samples trained on (%.1f %%) had no hard negative in %s; the miner found none for "
                "%s of the captions it read. A much larger share here means the parquet was mined from other "
                "shards: re-run `argent mine` on data.train_shards", missing, trained,
                100 * missing / max(trained, 1), parquet, mined)
