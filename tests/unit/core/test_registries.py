"""The two extension points are registries (docs/architecture.md, "How to add"): an evaluation
protocol is its module (an entry dataclass, a run function, its metric) and one record in
``argent.protocols.registry.PROTOCOLS``; an entailment loss kind is a loss function and one line in
``ENTAILMENT_KINDS``. Each test registers a new one the way the guide says, touching two files (this one, the
protocol's module; the registry), and checks that every reader (parser, preflight, DAG inputs, data domains,
runner, the tables' metric kinds, the results layout's embedded paths, objective) follows without further edits;
and that a variant field its kind does not read is refused."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from argent.config import (
    ENTAILMENT_KINDS,
    PAIR_FIELDS,
    ConfigError,
    EntailmentKind,
    VariantConfig,
    WorkflowConfig,
    derive_paths,
    experiment_from_dict,
    load_config,
    load_variants,
)
from argent.data.policy import BadDataPolicy
from argent.evaluation.benchmarks import ITEMS, SIDE, CommonOptions, data_path, parse_benchmark
from argent.evaluation.runner import evaluate
from argent.losses.entailment import pair_losses
from argent.plan.groups import check_trial_config
from argent.plan.preflight import benchmark_findings, produced_prefixes
from argent.plan.targets import benchmark_data_inputs, choose_benchmarks
from argent.protocols.kinds import COUNT, FRACTION
from argent.protocols.registry import PROTOCOLS, Protocol, metric_kind
from argent.runs import HiershapesFolder
from argent.tables.domains import benchmark_domain
from tests.fixtures import ROOT

# ---- a new evaluation protocol -------------------------------------------------------------------


@dataclass
class CountEntry(CommonOptions):
    """A toy protocol: one item per line of ``lines``; the metric is the share of non-empty lines."""

    lines: str = data_path(ITEMS, required=True)
    notes: str = data_path(SIDE)


def run_count(model, entry: CountEntry, policy: BadDataPolicy, out_path):
    rows = Path(entry.lines).read_text().splitlines()
    values = np.array([1.0 if r.strip() else 0.0 for r in rows])
    return {"metrics": {"filled": float(values.mean())}, "counts": {"lines": len(rows)},
            "items": {"filled": ([f"line{i}" for i in range(len(rows))], values)}}


@pytest.fixture
def count_protocol(monkeypatch):
    """The toy protocol's record: the one line a new protocol adds to argent/protocols/registry.py."""
    monkeypatch.setitem(PROTOCOLS, "count", Protocol(
        f"{__name__}:CountEntry", f"{__name__}:run_count", ((r"filled", FRACTION), (r"n_lines", COUNT)),
        "filled is a fraction in [0, 1]", required=("filled",), embedded={"lines": "{hierarcaps}/lines.txt"},
        splits=("test", "val")))


def test_a_registered_protocol_is_parsed_checked_planned_and_run(count_protocol, tmp_path):
    lines = tmp_path / "lines.txt"
    lines.write_text("a\n\nb\nc\n")
    entry = parse_benchmark("toy", {"protocol": "count", "lines": "lines.txt"}, tmp_path)
    assert entry.lines == str(lines)  # a declared path is made absolute
    with pytest.raises(ConfigError, match=r"benchmarks\.toy\.lines: required for protocol 'count'"):
        parse_benchmark("toy", {"protocol": "count"}, tmp_path)
    with pytest.raises(ConfigError, match=r"benchmarks\.toy\.root: unknown key for protocol 'count'"):
        parse_benchmark("toy", {"protocol": "count", "lines": "x", "root": "y"}, tmp_path)

    # preflight: the declared items and side files, by key path
    found = benchmark_findings("toy", {"protocol": "count", "lines": "lines.txt", "notes": "absent.txt"}, (), tmp_path)
    assert [(f.key, f.status) for f in found] == [("benchmarks.toy.lines", "ok"), ("benchmarks.toy.notes", "missing")]

    # the DAG: data under the embedded benchmark's folder waits for its manifest; the tables' domain
    cfg = load_config(ROOT / "config" / "smoke.yaml", base_dir=ROOT).raw
    hs = cfg["hiershapes"]["out"]
    cfg["benchmarks"]["toy"] = {"protocol": "count", "lines": f"{hs}/val/lines.txt"}
    cfg["evaluate"]["benchmarks"] = ["toy"]
    assert choose_benchmarks(WorkflowConfig(cfg), ROOT).run == ["toy"]
    assert benchmark_data_inputs(WorkflowConfig(cfg), ["toy"], hs, "MANIFEST") == ["MANIFEST"]
    assert produced_prefixes(WorkflowConfig(cfg))[1] == hs
    assert benchmark_domain(WorkflowConfig(cfg), "toy", ROOT) == "synthetic"
    cfg["benchmarks"]["toy"]["lines"] = str(lines)
    assert benchmark_domain(WorkflowConfig(cfg), "toy", ROOT) == "real"

    # the runner dispatches to the registered function, checks its item vector against the metric, writes its units
    result = evaluate(_geometry_module(), "toy", entry)
    assert result["protocol"] == "count" and result["metrics"] == {"filled": 0.75}
    assert result["items"]["filled"]["values"] == [1.0, 0.0, 1.0, 1.0]
    assert result["units"] == "filled is a fraction in [0, 1]"

    # the tables read its metrics with the record's kinds (a key it does not declare is no metric of it)
    assert metric_kind("count", "filled") is FRACTION and metric_kind("count", "n_lines") is COUNT
    assert metric_kind("count", "top1") is None

    # the results layout fills a `dataset: hiershapes` entry from the record's embedded files, in both splits
    folder = HiershapesFolder(tmp_path / "hs")
    assert folder.benchmark_paths("count") == {"lines": str(tmp_path / "hs" / "hierarcaps" / "lines.txt")}
    assert folder.benchmark_paths("count", "val") == {"lines": str(tmp_path / "hs" / "hierarcaps_val" / "lines.txt")}
    derived = derive_paths({"hiershapes": {"out": str(tmp_path / "hs")},
                            "benchmarks": {"toy_val": {"protocol": "count", "dataset": "hiershapes", "split": "val"}}})
    assert derived["benchmarks"]["toy_val"]["lines"] == str(tmp_path / "hs" / "hierarcaps_val" / "lines.txt")


def _geometry_module() -> torch.nn.Module:
    """The runner reads only ``geometry`` and the train/eval switch; the toy protocol ignores the model."""
    module = torch.nn.Linear(1, 1)
    module.geometry = "euclidean"
    return module


def test_an_unknown_protocol_is_refused_at_dag_build_with_the_registry_names():
    cfg = load_config(ROOT / "config" / "smoke.yaml", base_dir=ROOT).raw
    cfg["benchmarks"]["typo"] = {"protocol": "zero_shot", "root": "x"}
    with pytest.raises(ConfigError, match=r"benchmarks\.typo\.protocol: 'zero_shot' is not allowed; allowed: .*'zeroshot'"):
        choose_benchmarks(WorkflowConfig(cfg), ROOT)


def test_every_registered_protocol_resolves_its_run_function():
    for name, protocol in PROTOCOLS.items():
        assert callable(protocol.runner()), name


# ---- a new entailment loss kind ------------------------------------------------------------------


def gap_pair_loss(parent, child, curv, variant, pair):
    """A toy kind: the squared norm gap, weighted by the variant's cone_k (a field it declares)."""
    return variant.cone_k * (child.norm(dim=-1) - parent.norm(dim=-1)).pow(2)


def test_a_registered_loss_kind_trains_through_the_objective(monkeypatch):
    monkeypatch.setitem(ENTAILMENT_KINDS, "gap", EntailmentKind(PAIR_FIELDS + ("cone_k",), f"{__name__}:gap_pair_loss"))
    variant = VariantConfig(entailment="gap", cone_k=2.0)
    emb = {"text": torch.tensor([[1.0, 0.0]]), "image": torch.tensor([[3.0, 0.0]])}
    assert pair_losses(emb, 1.0, variant)["text_image"].item() == pytest.approx(2.0 * 4.0)
    # the field check follows the registry: the new kind's own fields pass, the others are refused
    exp = experiment_from_dict({"variant": {"entailment": "gap", "cone_k": 2.0}}, "meru", "tiny", 0, base_dir=ROOT)
    assert exp.variant.entailment == "gap"
    with pytest.raises(ConfigError, match=r"huber_beta: does nothing for entailment: gap"):
        experiment_from_dict({"variant": {"entailment": "gap", "huber_beta": 0.5}}, "meru", "tiny", 0, base_dir=ROOT)


def test_an_unknown_loss_kind_names_the_registered_ones():
    with pytest.raises(ConfigError, match=r"entailment: 'hinge' is not a loss kind; allowed: \['adaptive', 'cone', 'none'\]"):
        experiment_from_dict({"variant": {"entailment": "hinge"}}, "meru", "tiny", 0, base_dir=ROOT)


@pytest.mark.parametrize("override, message", [
    ({"huber_beta": 0.5}, r"huber_beta: does nothing for entailment: cone .* use a kind that reads it: \['adaptive'\]"),
    ({"cone_k": 0.2, "entailment": "adaptive"}, r"cone_k: does nothing for entailment: adaptive"),
    ({"cement": {"margin_max": 0.2}}, r"cement: the Cement margin acts on hard negatives"),
])
def test_a_field_that_does_nothing_for_its_variant_is_refused(override, message):
    with pytest.raises(ConfigError, match=message):
        experiment_from_dict({"variant_overrides": {"meru": override}}, "meru", "tiny", 0, base_dir=ROOT)


def test_the_catalogue_checks_each_entry_but_carries_inherited_values(tmp_path):
    catalogue = (ROOT / "config" / "variants.yaml").read_text()
    variants = load_variants(ROOT / "config" / "variants.yaml")
    assert variants["argent"]["entailment"] == "adaptive" and variants["argent"]["cone_eta"]  # from hycoclip, unused
    bad = tmp_path / "variants.yaml"
    bad.write_text(catalogue + "\nmeru_beta:\n  extends: meru\n  huber_beta: 0.5\n")
    with pytest.raises(ConfigError, match=r"variants.yaml: meru_beta\.huber_beta: does nothing for entailment: cone"):
        load_variants(bad)


def test_a_study_tuning_a_field_its_base_variant_does_not_read_is_refused_at_plan_build():
    cfg = load_config(ROOT / "config" / "smoke.yaml", base_dir=ROOT).raw
    cfg["variants_file"] = str(ROOT / "config" / "variants.yaml")
    cfg["tune"]["base_variant"] = "meru"
    cfg["tune"]["train_overrides"] = ["variant.huber_beta=0.3"]
    with pytest.raises(ConfigError, match=r"tune: a study trial's config is invalid .*huber_beta: does nothing"):
        check_trial_config(WorkflowConfig(cfg), ROOT)
