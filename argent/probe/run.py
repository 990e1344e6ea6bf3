"""The probe on a trained model: read the labelled image folder and its taxonomy, name the
concepts, encode images and questions once with the frozen towers, run every condition, and write
the result JSON (its layout: docs/probe.md). ``run(job)`` is ``argent probe`` without the parsing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from argent.data.formats.imagefolder import ClassificationSet, read_image_folder
from argent.data.hiershapes.wordnet_subtree import SHIPPED_TAXONOMY
from argent.data.policy import BadDataPolicy, mark_partial
from argent.data.taxonomy import Taxonomy
from argent.evaluation.encoding import encode_images, encode_texts, image_transform
from argent.io import atomic_write_json
from argent.models.trained import load_model
from argent.probe.conditions import ProbeEmbeddings, run_probe
from argent.probe.config import ProbeOptions, ProbeSection
from argent.probe.metrics import CI_METHOD
from argent.probe.projector import SCORING, model_text_space

log = logging.getLogger(__name__)
from argent.probe.protocol import PROTOCOL, SCHEMA_VERSION, Hierarchy, hierarchy_from_taxonomy, question_text


def read_concept_names(path: str | Path) -> dict[str, str]:
    """Names from ``<id>\\t<name>`` lines, or from a table with a header holding ``wnid``/``id`` and ``name``
    columns (e.g. argent/resources/hiershapes_taxonomy.tsv). ``#`` lines are comments."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: names file not found (expected '<id>\\t<name>' lines)")
    lines = [(n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if line.strip() and not line.startswith("#")]
    if not lines:
        raise ValueError(f"{path}: no names")
    head = lines[0][1].split("\t")
    id_col = next((head.index(k) for k in ("wnid", "id") if k in head), None)
    name_col = head.index("name") if "name" in head else None
    if id_col is not None and name_col is not None:
        body, cols = lines[1:], (id_col, name_col)
    else:
        body, cols = lines, (0, 1)
    names: dict[str, str] = {}
    for number, line in body:
        parts = line.split("\t")
        if len(parts) <= max(cols) or not parts[cols[0]].strip() or not parts[cols[1]].strip():
            raise ValueError(f"{path}:{number}: expected an id and a name (tab-separated), got {line!r}")
        names.setdefault(parts[cols[0]].strip(), parts[cols[1]].strip())
    return names


def _resolve_names(
    hierarchy: Hierarchy, class_names: Mapping[str, str], name_files: Sequence[str | Path]
) -> dict[str, str]:
    """Concept names: class_names.tsv, then each ``--names`` file, then the shipped hiershapes table."""
    names = {k: v for k, v in class_names.items() if v != k}
    for path in name_files:
        for k, v in read_concept_names(path).items():
            names.setdefault(k, v)
    missing = [c for c in hierarchy.concepts if c not in names]
    if missing and SHIPPED_TAXONOMY.is_file():
        shipped = read_concept_names(SHIPPED_TAXONOMY)
        names.update({c: shipped[c] for c in missing if c in shipped})
        missing = [c for c in hierarchy.concepts if c not in names]
    if missing:
        raise ValueError(
            f"probe: no name for concept id(s) {missing[:5]}{' ...' if len(missing) > 5 else ''}; "
            "pass --names FILE with '<id>\\t<name>' lines (the questions need words, not ids)"
        )
    return {c: names[c] for c in hierarchy.concepts}


@contextlib.contextmanager
def _frozen(model: nn.Module) -> Iterator[None]:
    """Eval mode and no parameter gradients while the probe runs; the caller's flags come back after."""
    flags = [(p, p.requires_grad) for p in model.parameters()]
    was_training = model.training
    model.eval()
    for p, _ in flags:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p, flag in flags:
            p.requires_grad_(flag)
        model.train(was_training)


def probe_model(
    model: Any,
    data_root: str | Path,
    taxonomy: str | Path | None = None,
    names: Sequence[str | Path] = (),
    cfg: ProbeOptions | None = None,
    policy: Any = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The probe for a model object on a labelled image folder; returns the result dict (docs/probe.md)."""
    cfg = cfg or ProbeOptions()
    start = time.perf_counter()
    policy = policy or BadDataPolicy("skip")
    data_root = Path(data_root)
    taxonomy_path = Path(taxonomy) if taxonomy else data_root / "taxonomy.txt"
    if not taxonomy_path.is_file():
        raise FileNotFoundError(f"{taxonomy_path}: no taxonomy; pass --taxonomy FILE ('parent child' id lines)")
    data = _first_per_class(read_image_folder(data_root, policy=policy), cfg.per_class)
    tree = Taxonomy.from_edges_file(taxonomy_path)
    hierarchy = hierarchy_from_taxonomy(tree, data.class_ids, where=str(taxonomy_path))
    if not hierarchy.hypernyms:
        raise ValueError(f"{taxonomy_path}: no hypernym below the common ancestors of the classes; nothing to ask")
    concept_names = _resolve_names(hierarchy, dict(zip(data.class_ids, data.class_names)), names)
    texts = [question_text(concept_names[c]) for c in hierarchy.concepts]
    with _frozen(model):
        emb = _embeddings(model, data, concept_names, texts, cfg, policy, data_root)
        result = run_probe(emb, hierarchy, cfg, model_text_space(model), progress=progress)
    out = {
        "protocol": PROTOCOL,
        "schema_version": SCHEMA_VERSION,
        "model": {"geometry": model.geometry, "embed_dim": int(emb.concept_emb.shape[1]),
                  "feature_dim": int(emb.features.shape[1])},
        "data": {
            "root": str(data_root),
            "taxonomy": str(taxonomy_path),
            "n_images": len(emb.keys),
            "skipped": dict(policy.counts),
            "leaves": {c: concept_names[c] for c in hierarchy.leaves},
            "hypernyms": {
                h: {"name": concept_names[h], "leaves": list(hierarchy.members[h])} for h in hierarchy.hypernyms
            },
            "trivial_hypernyms": list(hierarchy.trivial),
            "questions": dict(zip(hierarchy.concepts, texts)),
        },
        "options": dataclasses.asdict(cfg),
        "method": _method(cfg),
        **result,
        "seconds": round(time.perf_counter() - start, 2),
    }
    return mark_partial(out, policy, f"probe on {data_root}", log)  # fewer images than the folder holds (skip mode)



def _embeddings(model: Any, data: Any, concept_names: dict[str, str], texts: list[str], cfg: ProbeOptions,
                policy: Any, data_root: Path) -> ProbeEmbeddings:
    """The images' features (those the policy kept) and the questions' embeddings, on the model's device."""
    features, kept = encode_images(
        model, data.paths, image_transform(model), cfg.encode_batch_size, policy,
        project=cfg.image_features == "lifted",
    )
    policy.require_usable(len(kept), str(data_root))
    concept_emb = encode_texts(model, texts, cfg.encode_batch_size, project=True)
    device = next(model.parameters()).device
    return ProbeEmbeddings(
        features=features.to(device),
        image_leaf=[data.class_ids[data.samples[i][1]] for i in kept],
        keys=[data.samples[i][0].name for i in kept],
        concept_emb=concept_emb.to(device),
        names=concept_names,
    )


def _method(cfg: ProbeOptions) -> dict[str, str]:
    """How the result was computed, in words (the result's ``method``)."""
    return {
        "scoring": SCORING,
        "image_features": "encode_image(project=False) (W f), standardised with the training images' mean/std"
        if cfg.image_features == "tangent" else "encode_image(project=True), standardised",
        "question_embedding": "encode_text(project=True) of 'Is there a(n) <name> in the image?'",
        "ci": CI_METHOD,
        "macro_f1": "sklearn f1_score(labels=[0, 1], average='macro', zero_division=0); category_mean = mean over "
        "hypernym categories with questions in the split",
        "majority_baseline": "always_no (TaxGen's majority baseline); always_yes and coin (large-sample "
        "macro-F1 of a fair coin) are reported beside it",
    }


def write_json(path: str | Path, data: Mapping[str, Any]) -> None:
    """Indented JSON, atomically; NaN is refused."""
    atomic_write_json(path, data, indent=1)


@dataclass
class ProbeJob:
    """One ``argent probe`` call: the run folder to probe, the checked ``probe:`` section, the output."""

    run_dir: Path
    out: Path
    config: ProbeSection = field(default_factory=ProbeSection)
    taxonomy: Path | None = None  # None: <data>/taxonomy.txt
    names: list[Path] = field(default_factory=list)  # extra '<id>\t<name>' files
    device: str = "cpu"
    threads: int = 0  # torch CPU threads; 0 = torch's default
    policy: str = "skip"  # bad images: skip and count, or fail


def _first_per_class(data: ClassificationSet, per_class: int) -> ClassificationSet:
    """The first ``per_class`` images of each class in the folder's order (0: all): the probe's cost
    stays put when the zero-shot folder it reads grows (docs/probe.md)."""
    if not per_class:
        return data
    seen: dict[int, int] = {}
    samples = []
    for path, label in data.samples:
        seen[label] = seen.get(label, 0) + 1
        if seen[label] <= per_class:
            samples.append((path, label))
    return dataclasses.replace(data, samples=samples)


def run(job: ProbeJob, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Probe the run folder's model on ``probe.data`` and write the result JSON to ``job.out``."""
    if job.threads:
        torch.set_num_threads(job.threads)
    model, exp = load_model(job.run_dir, device=job.device)
    result = probe_model(model, job.config.data, job.taxonomy, job.names, job.config.options,
                         BadDataPolicy(job.policy), progress=progress)
    result["run"] = str(job.run_dir)
    result["config_hash"] = exp.result_hash()
    # "family" names the line (the variant); its colour is the catalogue family's (argent/colours.py).
    result["model"].update({"family": exp.variant_name, "size": exp.size, "run_seed": exp.seed,
                            "catalogue_family": exp.tracking.tags.get("family", exp.variant_name)})
    write_json(job.out, result)
    return result
