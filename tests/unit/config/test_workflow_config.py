"""argent/config/workflow.py: the one door to the workflow config. Every verb reads its sections from
one ``WorkflowConfig``; a typo in any typed section names the file, the full key path and the allowed
keys; a section is parsed once per command. And two ownership rules, checked on the source: no module
but the door reads the workflow config file, and no module but argent/runs/layout.py spells a file name of
a run folder, a study folder, a cleaning folder, the effective config, a results folder's locks or its figures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from argent.config import SECTIONS, ConfigError, load_config, section_type, setting
from tests.fixtures import ROOT

# A misspelt key in each typed section, and the allowed key its message must list.
TYPOS = {
    "clean": ({"clean": {"kep": 3}}, r"clean: unknown key\(s\) \['kep'\]; allowed: \[.*'keep'"),
    "negatives": ({"negatives": {"top_kk": 3}}, r"negatives: unknown key\(s\) \['top_kk'\]; allowed: \[.*'top_k'"),
    "probe": ({"probe": {"seed": [0]}}, r"probe: unknown key\(s\) \['seed'\]; allowed: \[.*'seeds'"),
    "tune": ({"tune": {"study": "s", "n_trial": 3}}, r"tune: unknown key\(s\) \['n_trial'\]; allowed: \[.*'n_trials'"),
    "benchmarks": ({"benchmarks": {"b": {"protocol": "zeroshot", "root": "x", "template": "default"}}},
                   r"benchmarks\.b\.template: unknown key for protocol 'zeroshot'; allowed: \[.*'templates'"),
    "pretrained": ({"pretrained": {"meru-S": {"layout": "meru", "arch": "x", "path": "y", "famly": "meru"}}},
                   r"pretrained\.meru-S: unknown key\(s\) \['famly'\]"),
    "results": ({"results": 3}, r"results: expected a string, got 3"),
    "variants_file": ({"variants_file": ["a"]}, r"variants_file: expected a string"),
    "hiershapes_templates": ({"hiershapes_templates": "a {}"}, r"hiershapes_templates: expected a list"),
    "hiershapes": ({"hiershapes": {"outt": "x"}}, r"hiershapes: unknown key\(s\) \['outt'\]; allowed: \['out', 'params'\]"),
    "runs": ({"runs": {"gpu": 1}}, r"runs: unknown key\(s\) \['gpu'\]; allowed: \['gpus'"),
    "groups": ({"groups": {"main": {"variants": ["clip"], "seed": [0]}}},
               r"groups\.main: unknown key\(s\) \['seed'\]; allowed: \[.*'seeds'"),
    "cost": ({"cost": {"step_second": {}}}, r"cost: unknown key\(s\) \['step_second'\]; allowed: \['step_seconds'"),
    "model": ({"model": {"tiny": {"widht": 3}}}, r"model\.tiny: unknown key\(s\) \['widht'\]; allowed: \["),
    "train": ({"train": {"stepz": 3}}, r"train: unknown key\(s\) \['stepz'\]; allowed: \[.*'steps'"),
    "train_by_size": ({"train_by_size": {"S": {"batch": 3}}}, r"train_by_size\.S: unknown key\(s\) \['batch'\]"),
    "optim": ({"optim": {"l_r": 1.0}}, r"optim: unknown key\(s\) \['l_r'\]; allowed: \['lr'"),
    "data": ({"data": {"shards": "x"}}, r"data: unknown key\(s\) \['shards'\]; allowed: \['train_shards'"),
    "tracking": ({"tracking": {"url": ""}}, r"tracking: unknown key\(s\) \['url'\]; allowed: \[.*'uri'"),
    "variant": ({"variant": {"huber": 1.0}}, r"variant: unknown key\(s\) \['huber'\]; allowed: \[.*'huber_beta'"),
    "variant_overrides": ({"variant_overrides": {"meru": {"cone": 1}}},
                          r"variant_overrides\.meru: unknown key\(s\) \['cone'\]; allowed: \[.*'cone_k'"),
    "evaluate": ({"evaluate": {"thread": 2}}, r"evaluate: unknown key\(s\) \['thread'\]; allowed: \['benchmarks', 'threads'\]"),
    "tables": ({"tables": {"main": {"variants": ["a"], "columns": [{"label": "x", "benchmark": "b", "metrc": "m"}]},
                           "ablations": {"columns": [{"label": "x", "benchmark": "b", "metric": "m"}],
                                         "groups": [{"name": "(a)", "rows": [{"label": "A", "variant": "a"}]}]}}},
               r"tables\.main\.columns\[0\]: unknown key\(s\) \['metrc'\]; allowed: \[.*'metric'"),
}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "workflow.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_a_typo_in_any_typed_section_names_file_key_and_allowed_keys(section, tmp_path):
    raw, message = TYPOS[section]
    path = _write(tmp_path, yaml.safe_dump(raw))
    workflow = load_config(path, merge_default=False)
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}: {message}"):
        workflow.check_all()


def test_every_typed_section_has_a_typo_case():
    assert set(TYPOS) == set(SECTIONS)


def test_a_section_is_parsed_once_and_the_defaults_need_no_file():
    workflow = load_config(ROOT / "config" / "smoke.yaml", base_dir=ROOT)
    assert workflow.tune is workflow.tune and workflow.probe is workflow.probe
    assert workflow.benchmark("hs_zeroshot").protocol == "zeroshot"
    with pytest.raises(ConfigError, match=r"benchmarks\.nope not found; known: \[.*'hs_zeroshot'"):
        workflow.benchmark("nope")
    defaults = load_config(None)
    assert defaults.clean.keep is not None and defaults.raw == {}


def test_a_single_stage_verb_refuses_an_override_of_another_section(tmp_path):
    path = _write(tmp_path, "clean: {keep: 3}\n")
    assert load_config(path, ["clean.keep=5"], merge_default=False, only="clean").clean.keep == 5
    with pytest.raises(ConfigError, match=r"--set train.steps=5: this verb reads only the clean: section"):
        load_config(path, ["train.steps=5"], merge_default=False, only="clean")
    with pytest.raises(ConfigError, match=r"^--set: clean: unknown key\(s\) \['kep'\]"):
        _ = load_config(None, ["clean.kep=1"], only="clean").clean  # a section is parsed when first read


def test_the_merged_config_is_what_snakemake_reads(tmp_path):
    workflow = load_config(ROOT / "config" / "quick.yaml", ["train.steps=7"], base_dir=ROOT)
    assert workflow.raw["train"]["steps"] == 7
    assert "groups" in workflow.raw  # from config/config.yaml, merged under quick.yaml
    assert workflow.where == f"{ROOT / 'config' / 'quick.yaml'} with --set"


def test_setting_reads_the_value_else_the_types_default():
    assert setting({}, "tune", "study") == section_type("tune")().study
    assert setting({"probe": {"seeds": [3]}}, "probe", "seeds") == [3]
    assert setting({"probe": None}, "probe", "seeds") == [0]
    assert setting({}, "runs", "runtime_min") == 60 and setting({}, "evaluate", "threads") == 1
    assert setting({}, "results") == "results" and setting({"results": "r2"}, "results") == "r2"
    with pytest.raises(KeyError, match="tune.sutdy: not a key"):
        setting({}, "tune", "sutdy")
    with pytest.raises(KeyError, match="groups.main: setting\\(\\) reads one key of a section; groups is of shape 'entries'"):
        setting({}, "groups", "main")
    with pytest.raises(KeyError, match="tunee: not a section"):
        setting({}, "tunee", "study")


def test_the_dag_build_finds_a_typo_in_a_typed_section(tmp_path):
    from argent.plan.dag import build_dag

    cfg = load_config(ROOT / "config" / "smoke.yaml", base_dir=ROOT).raw
    cfg["negatives"]["wordnet_zip"] = str(ROOT / "pyproject.toml")
    cfg["probe"]["seed"] = [0]
    with pytest.raises(ConfigError, match=r"^config: probe: unknown key\(s\) \['seed'\]; allowed: \[.*'seeds'"):
        build_dag(cfg, ROOT)


# ---- ownership, on the source --------------------------------------------------------------------

SOURCES = [*sorted((ROOT / "argent").rglob("*.py")), *sorted((ROOT / "workflow" / "rules").glob("*.smk")),
           ROOT / "Snakefile", ROOT / "workflow" / "Snakefile"]


def _offenders(pattern: str, allowed: set[str]) -> list[str]:
    found = []
    for path in SOURCES:
        rel = path.relative_to(ROOT).as_posix()
        if rel in allowed:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(pattern, line) and not line.lstrip().startswith("#"):
                found.append(f"{rel}:{number}: {line.strip()}")
    return found


def test_only_the_door_reads_the_workflow_config_file():
    offenders = _offenders(r"\b(load_workflow_config|load_merged_config)\(", {"argent/config/loading.py",
                                                                               "argent/config/workflow.py"})
    assert not offenders, "read the workflow config through argent.config.load_config:\n" + "\n".join(offenders)


def test_only_the_layout_spells_the_file_names_of_results_folders():
    names = ["config.yaml", "metrics.jsonl", "checkpoint.pt", "summary.json", "provenance.json", "curves.png",
             "mlflow_run.json", "best.yaml", "trials.csv", "workflow_config.yaml", "hierarcaps_clean.csv",
             "negative_pool.csv", "clean_scores.csv", "preflight.json",
             # the locks and staging folders of a results and a run folder, the workflow's planned identities, the
             # cleaning's other files, the figures the rules name, the measured step times, the image cache's marker
             ".workflow.lock", ".writer.lock", ".staging", ".replacing", ".replaced", "planned_runs.json", "mlflow.db",
             "caption_degrees.csv", "table1.csv", "table1.md", "training_curves.png", "probe_exposure.png",
             "step_times.json", "bench/step_times.json", "cache.json"]
    pattern = r"[\"'](" + "|".join(re.escape(n) for n in names) + r")[\"']"
    offenders = [o for o in _offenders(pattern, {"argent/runs/layout.py"})
                 if 'Path("config") / "config.yaml"' not in o]  # the project's config/config.yaml, not a results file
    assert not offenders, "spell results file names through argent.runs.layout:\n" + "\n".join(offenders)
