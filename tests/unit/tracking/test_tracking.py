"""MLflow mirror: evaluation results on the training run, tags, the tables run, best effort.

Fast: hand-made run folders and evaluation JSON against a temporary SQLite store (no training).
"""

import json
import logging
import os
from pathlib import Path

import pytest
import yaml

from argent.config import experiment_from_dict, load_variants
from argent.tracking import (
    RUN_RECORD,
    log_evaluation,
    log_tables_run,
    metric_key,
    mirror_training,
    open_run,
    variant_tags,
)
from argent.tracking.cli import main as track_main
from tests.fixtures import ROOT

CATALOGUE = ROOT / "config" / "variants.yaml"
mlflow = pytest.importorskip("mlflow")


def make_run(results: Path, uri: str, variant: str = "argent", lr: float = 1e-3) -> Path:
    """A finished run folder as ``argent train`` leaves it (no checkpoint needed here)."""
    cfg = experiment_from_dict({"optim": {"lr": lr}, "tracking": {"uri": uri, "experiment": "t"}},
                               variant, "tiny", 0, base_dir=ROOT)
    cfg.tracking.tags = variant_tags(CATALOGUE, variant)
    run_dir = results / "runs" / "main" / f"{variant}-tiny" / "seed0"
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "loss": 1.0 / s}) + "\n" for s in (2, 4)))
    (run_dir / "summary.json").write_text(json.dumps({"steps": 4}))
    return run_dir


def write_result(results: Path, run_dir: Path, benchmark: str, metrics: dict, counts: dict | None = None,
                 figures: bool = False, mtime: float | None = None, extra: dict | None = None) -> Path:
    out = results / "eval" / run_dir.parent.parent.name / run_dir.parent.name / run_dir.name / f"{benchmark}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    data = {"benchmark": benchmark, "protocol": "zeroshot", "run": str(run_dir), "config_hash": "abc",
            "status": "ok", "metrics": metrics, "entry_hash": "e" * 16,
            "counts": counts or {"n_items": 60, "skipped": {"unreadable_image": 2}, "dropped": []}}
    if figures:
        png = out.with_name(f"{benchmark}_norms.png")
        png.write_bytes(b"\x89PNG fake")
        data["figures"] = {"norms": str(png)}
    out.write_text(json.dumps({**data, **(extra or {})}))
    if mtime is not None:
        os.utime(out, (mtime, mtime))
    return out


@pytest.fixture
def store(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    return uri, mlflow.MlflowClient(tracking_uri=uri)


def runs_of(client, experiment="t"):
    exp = client.get_experiment_by_name(experiment)
    return client.search_runs([exp.experiment_id]) if exp else []


def test_catalogue_tags_family_and_table3_group():
    expect = {"clip": ("clip", "main"), "meru": ("meru", "main"), "hycoclip": ("hycoclip", "main"),
              "argent": ("argent", "main"), "meru_adaent": ("meru", "3a"), "hycoclip_adaent_none": ("argent", "3b"),
              "hycoclip_adaent_any": ("argent", "3b"), "meru_adaent_any": ("meru", "3b"),
              "argent_noreg": ("argent", "3c"), "meru_adaent_noreg": ("meru", "3c"),
              "argent_negs_random": ("argent", "negatives"), "argent_negs_cement": ("argent", "negatives")}
    for name, (family, group) in expect.items():
        assert variant_tags(CATALOGUE, name) == {"family": family, "group": group}, name
    every = load_variants(CATALOGUE)
    assert all(variant_tags(CATALOGUE, name).get("family") for name in every), "a variant without a family"
    assert variant_tags(CATALOGUE, "not-a-variant") == {}


def test_tags_never_change_the_config_hash(tmp_path):
    raw = yaml.safe_load(CATALOGUE.read_text())
    stripped = {name: {k: v for k, v in (entry or {}).items() if k != "tags"} for name, entry in raw.items()}
    bare = tmp_path / "variants.yaml"
    bare.write_text(yaml.safe_dump(stripped))
    for variant in ("argent", "meru_adaent", "argent_negs_cement"):
        with_tags = experiment_from_dict({}, variant, "tiny", 0, base_dir=ROOT)
        without = experiment_from_dict({"variants_file": str(bare)}, variant, "tiny", 0, base_dir=ROOT)
        assert with_tags.result_hash() == without.result_hash()
        assert "tags" not in with_tags.to_dict()["variant"]
        before = with_tags.result_hash()
        with_tags.tracking.tags = {"family": "x", "group": "y"}
        assert with_tags.result_hash() == before


def test_evaluation_metrics_land_on_the_training_run(tmp_path, store):
    uri, client = store
    run_dir = make_run(tmp_path / "results", uri)
    trainer = open_run(run_dir)  # what training leaves: the run, its record in the run folder
    mirror_training(trainer, run_dir)
    record = json.loads((run_dir / RUN_RECORD).read_text())
    assert record["run_id"] == trainer.run_id and record["tracking_uri"] == uri

    client.set_tag(trainer.run_id, "git_commit", "commit-it-was-trained-at")
    zs = write_result(tmp_path / "results", run_dir, "hs_zeroshot", {"top1": 0.25, "tie": 1.5, "pep": None,
                                                                      "per_level": {"L1": 0.5}})
    ret = write_result(tmp_path / "results", run_dir, "hs_retrieval", {"t2i_R@5": 0.4}, figures=True)
    pep = write_result(tmp_path / "results", run_dir, "hs_pep", {"auc": 0.5}, extra={
        "partial": True, "partial_reason": "run unfinished: no summary.json (step 20 of 40)",
        "degraded": ["every pair's entailment probability is 0 (all ties)"]})
    assert log_evaluation(run_dir, [zs, ret, pep]) is True

    [run] = runs_of(client)
    assert run.info.run_id == trainer.run_id
    m, tags = run.data.metrics, run.data.tags
    assert m["eval/hs_zeroshot/top1"] == 0.25 and m["eval/hs_zeroshot/tie"] == 1.5
    assert m["eval/hs_zeroshot/per_level/L1"] == 0.5 and m["eval/hs_retrieval/t2i_R_at_5"] == 0.4
    assert "eval/hs_zeroshot/pep" not in m  # null (n/a) is not a number
    assert m["loss"] == 0.25  # training metrics untouched
    assert tags["eval/hs_zeroshot/n_items"] == "60" and tags["eval/hs_zeroshot/skipped"] == "2"
    assert json.loads(tags["eval/hs_zeroshot/skipped_by_reason"]) == {"unreadable_image": 2}
    assert tags["eval/hs_zeroshot/entry_hash"] == "e" * 16
    # the tables' dagger, in the UI too: which evaluation is partial, and why
    assert tags["eval/hs_zeroshot/partial"] == "false" and tags["eval/hs_zeroshot/partial_reason"] == ""
    assert tags["eval/hs_pep/partial"] == "true"
    assert tags["eval/hs_pep/partial_reason"] == ("run unfinished: no summary.json (step 20 of 40); "
                                                  "every pair's entailment probability is 0 (all ties)")
    assert tags["family"] == "argent" and tags["group"] == "main" and tags["variant"] == "argent"
    assert tags["git_commit"] == "commit-it-was-trained-at"  # an evaluation does not re-date the run
    assert "tracking.tags.family" not in run.data.params and run.data.params["variant.entailment"] == "adaptive"
    arts = {a.path for a in client.list_artifacts(run.info.run_id, "eval/hs_retrieval")}
    assert arts == {"eval/hs_retrieval/hs_retrieval.json", "eval/hs_retrieval/hs_retrieval_norms.png"}


def test_reevaluating_replaces_and_resending_never_duplicates(tmp_path, store):
    uri, client = store
    results = tmp_path / "results"
    run_dir = make_run(results, uri)
    path = write_result(results, run_dir, "hs_zeroshot", {"top1": 0.25}, mtime=1_700_000_000)
    assert log_evaluation(run_dir, [path]) and log_evaluation(run_dir, [path])
    [run] = runs_of(client)
    assert len(client.get_metric_history(run.info.run_id, "eval/hs_zeroshot/top1")) == 1

    path = write_result(results, run_dir, "hs_zeroshot", {"top1": 0.3}, counts={"n_items": 50, "skipped": {}},
                        mtime=1_700_000_100)
    assert log_evaluation(run_dir)  # default: every JSON of the run's eval folder
    [run] = runs_of(client)
    assert run.data.metrics["eval/hs_zeroshot/top1"] == 0.3
    assert run.data.tags["eval/hs_zeroshot/n_items"] == "50" and run.data.tags["eval/hs_zeroshot/skipped"] == "0"
    assert track_main(["--run", str(run_dir)]) == 0  # re-send: same run, nothing new
    [run] = runs_of(client)
    assert run.data.metrics["eval/hs_zeroshot/top1"] == 0.3
    assert [h.value for h in client.get_metric_history(run.info.run_id, "eval/hs_zeroshot/top1")] == [0.25, 0.3]


def test_track_resends_a_run_that_was_never_tracked_with_its_evaluations(tmp_path, store):
    uri, client = store
    results = tmp_path / "results"
    run_dir = make_run(results, "")  # default URI: sqlite under results/
    write_result(results, run_dir, "hs_zeroshot", {"top1": 0.125})
    assert track_main(["--run", str(run_dir), "--uri", uri]) == 0
    assert track_main(["--run", str(run_dir), "--uri", uri]) == 0
    [run] = runs_of(client)
    assert run.data.metrics["eval/hs_zeroshot/top1"] == 0.125
    assert [m.step for m in client.get_metric_history(run.info.run_id, "loss")] == [2, 4]
    assert run.info.status == "FINISHED"


def test_evaluation_of_an_untracked_run_sends_the_training_too(tmp_path):
    results = tmp_path / "results"
    run_dir = make_run(results, "")
    path = write_result(results, run_dir, "hs_zeroshot", {"top1": 0.5})
    assert log_evaluation(run_dir, [path])
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{results / 'mlflow.db'}")
    [run] = runs_of(client)
    assert run.data.metrics["eval/hs_zeroshot/top1"] == 0.5 and run.data.metrics["loss"] == 0.25
    assert run.data.params["variant.entailment"] == "adaptive"
    assert (results / "mlartifacts").is_dir()  # a SQLite store keeps its artifacts beside it


def test_a_retrained_config_supersedes_the_old_mlflow_run(tmp_path, store):
    uri, client = store
    results = tmp_path / "results"
    run_dir = make_run(results, uri, lr=1e-3)
    first = open_run(run_dir)
    (run_dir / "config.yaml").unlink()
    other = make_run(tmp_path / "other", uri, lr=5e-4)
    (run_dir / "config.yaml").write_text((other / "config.yaml").read_text())
    second = open_run(run_dir)
    assert second.created and second.run_id != first.run_id
    assert [r.info.run_id for r in runs_of(client)] == [second.run_id]
    assert client.get_run(first.run_id).info.lifecycle_stage == "deleted"


def test_an_unreachable_store_never_fails_the_job(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    results = tmp_path / "results"
    run_dir = make_run(results, "http://127.0.0.1:9")  # discard port: nothing listens
    path = write_result(results, run_dir, "hs_zeroshot", {"top1": 0.5})
    before = path.read_text()
    with caplog.at_level(logging.WARNING, logger="argent"):
        assert log_evaluation(run_dir, [path]) is False
    assert "re-send it later with `argent track" in caplog.text  # a job's advice: the folder is complete
    assert path.read_text() == before and not (run_dir / RUN_RECORD).exists()
    assert log_tables_run(results, None, {"tracking": {"uri": "http://127.0.0.1:9"}}, results) is False
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="argent"):
        assert track_main(["--run", str(run_dir)]) == 1
    # the re-send itself failed: its advice is to bring the store up, not to re-send later
    assert "http://127.0.0.1:9 is reachable" in caplog.text and "re-send it later" not in caplog.text


def test_disabled_tracking_sends_nothing(tmp_path):
    results = tmp_path / "results"
    run_dir = make_run(results, "")
    cfg = yaml.safe_load((run_dir / "config.yaml").read_text())
    cfg["tracking"]["enabled"] = False
    (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg))
    assert log_evaluation(run_dir, [write_result(results, run_dir, "hs_zeroshot", {"top1": 0.5})]) is False
    assert not (results / "mlflow.db").exists()


def test_one_tables_run_per_invocation(tmp_path, store):
    uri, client = store
    tables, figures = tmp_path / "tables", tmp_path / "figures"
    (figures / "runs").mkdir(parents=True)
    tables.mkdir()
    for name in ("main.md", "main.csv", "ablations.md", "ablations.csv"):
        (tables / name).write_text(name)
    (figures / "training_curves.png").write_bytes(b"png")
    (figures / "runs" / "argent-tiny-seed0-hs_analysis_norms.png").write_bytes(b"png")
    cfg = {"tracking": {"uri": uri, "experiment": "t"}, "runs": {"seeds": [0]}}
    for _ in range(2):  # the same invocation re-sent: one run
        assert log_tables_run(tables, figures / "runs", cfg, tmp_path, [figures / "training_curves.png"])
    [run] = runs_of(client)
    assert run.data.tags["kind"] == "tables" and len(run.data.tags["config_hash"]) == 16
    assert run.data.tags["git_commit"] and "family" not in run.data.tags
    listed = {a.path for d in ("tables", "figures", "figures/runs") for a in client.list_artifacts(run.info.run_id, d)}
    assert {"tables/main.md", "tables/main.csv", "tables/ablations.md", "tables/ablations.csv",
            "figures/training_curves.png", "figures/runs/argent-tiny-seed0-hs_analysis_norms.png"} <= listed
    cfg["runs"]["seeds"] = [0, 1]  # another workflow config: another tables run
    assert log_tables_run(tables, None, cfg, tmp_path)
    assert len(runs_of(client)) == 2


def test_metric_keys_are_legal_for_mlflow():
    assert metric_key("eval", "hs_retrieval", "t2i_R@5") == "eval/hs_retrieval/t2i_R_at_5"
    assert metric_key("eval", "b", "kendall τ") == "eval/b/kendall τ"  # \w covers unicode letters
    assert metric_key("eval", "b", "a:b(c)") == "eval/b/a_b_c_"
