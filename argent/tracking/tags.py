"""What identifies a run in MLflow: metric keys, the tags of a training run, of a catalogue
variant and of an evaluation result. Plain functions of config and result dicts; no MLflow calls.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
from pathlib import Path
from typing import Any

from argent.config import ConfigError, load_yaml

__all__ = ["EVAL_PREFIX", "EXPERIMENT_KIND", "KEEP_TAGS", "catalogue_tags", "git_commit", "metric_key", "result_tags",
           "run_tags", "variant_tags"]

log = logging.getLogger("argent.tracking")

EVAL_PREFIX = "eval"
# MLflow 3 opens an experiment without this tag on its GenAI overview (traces); this kind, the one its UI
# names CUSTOM_MODEL_DEVELOPMENT, opens it on the runs table, where training runs are compared.
EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}
KEEP_TAGS = ("git_commit",)  # set when a run is created, never overwritten


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                              cwd=Path(__file__).parent).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def metric_key(*parts: str) -> str:
    """An MLflow-legal key: '@' reads as '_at_' (t2i_R@5 -> t2i_R_at_5), other illegal characters as '_'."""
    key = "/".join(parts).replace("@", "_at_")
    return re.sub(r"[^/\w.\- ]", "_", key)


def variant_tags(variants_file: str | Path, variant: str) -> dict[str, str]:
    """The ``tags:`` of a catalogue entry, inherited along its ``extends:`` chain (the entry wins).

    In config/variants.yaml each family entry says ``tags: {family: ..., group: ...}`` and an
    ablation overrides ``group`` (3a, 3b, 3c, negatives). ``tags`` is not a training field: the
    catalogue loader drops it, so it never reaches a run's config hash. {} for an unknown variant.
    """
    raw = load_yaml(variants_file)
    chain: list[dict[str, Any]] = []
    name: Any = variant
    while isinstance(name, str) and name in raw and len(chain) <= len(raw):
        entry = raw[name] or {}
        chain.append(entry.get("tags") or {})
        name = entry.get("extends")
    out: dict[str, str] = {}
    for tags in reversed(chain):
        out.update({str(k): str(v) for k, v in tags.items()})
    return out


def catalogue_tags(variants_file: str | Path, variant: str) -> dict[str, str]:
    """``variant_tags`` of ``variant`` in the catalogue ``variants_file``, plus ``base_variant``.
    Never raises: {} on failure."""
    try:
        return {**variant_tags(Path(variants_file), variant), "base_variant": variant}
    except (ConfigError, OSError, AttributeError) as err:
        log.warning("no catalogue tags for %s (%s)", variant, err)
        return {}


def run_tags(cfg_dict: dict[str, Any], run_dir: Path, config_hash: str) -> dict[str, str]:
    """Tags of a training run. ``tracking.tags`` (set by ``argent train`` from the catalogue, never
    hashed) come first; the run's own identity cannot be overridden by them."""
    extra = {str(k): str(v) for k, v in ((cfg_dict.get("tracking") or {}).get("tags") or {}).items()}
    return {
        **extra,
        "argent_run_id": str(run_dir.resolve()),
        "variant": cfg_dict["variant_name"],
        "size": cfg_dict["size"],
        "seed": str(cfg_dict["seed"]),
        "config_hash": config_hash,
        "dataset_hash": cfg_dict["data"].get("dataset_hash", ""),
        "git_commit": git_commit(),
    }


def result_tags(name: str, result: dict[str, Any]) -> dict[str, str]:
    """Counts, status and hashes of one evaluation, as tags (they change when it is re-run)."""
    counts = result.get("counts") or {}
    skipped = counts.get("skipped") or {}
    tags = {"status": result.get("status", ""), "protocol": result.get("protocol", ""),
            "entry_hash": result.get("entry_hash", ""), "config_hash": result.get("config_hash", ""),
            "skipped": sum(v for v in skipped.values() if isinstance(v, int)) if isinstance(skipped, dict) else skipped,
            "skipped_by_reason": json.dumps(skipped, sort_keys=True),
            # partial: an unfinished run, skipped items or a degraded score (the tables' dagger), and why
            "partial": "true" if result.get("partial") is True else "false",
            "partial_reason": "; ".join(filter(None, [result.get("partial_reason"), *(result.get("degraded") or [])]))}
    tags.update({k: v for k, v in counts.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
    return {metric_key(EVAL_PREFIX, name, k): str(v) for k, v in tags.items()}
