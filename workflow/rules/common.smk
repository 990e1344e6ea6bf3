# Helpers only: paths, the run matrix, per-job config hashes. No rules here.
import hashlib
import json
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

import yaml

from argent.config import ConfigError, check_name
from argent.io import file_sha256
from argent.plan.cost import cost_line
from argent.plan.groups import (TUNED_VARIANT, RunKey, base_variant, build_plan, left_out_lines, run_identity,
                                 uses_negatives)
from argent.plan.pretrained import available_entries, parse_pretrained_section
from argent.plan.targets import benchmark_data_inputs as benchmark_data_inputs_of, choose_benchmarks, mining_jobs, probe_runs
from argent.layout import (EVAL_DIR, PRETRAINED_GROUP, SUMMARY, eval_dir as runs_eval_dir, pretrained_eval_dir,
                           probe_result, run_dir as runs_run_dir)

ROOT = Path(workflow.basedir)
RESULTS = Path(config["results"])

# Rules call the `argent` CLI of the environment Snakemake runs in, whatever the caller's PATH.
shell.prefix(f"export PATH={shlex.quote(str(Path(sys.executable).parent))}:$PATH; ")


def R(*parts):
    """A path under the results folder."""
    return str(RESULTS.joinpath(*parts))


# The preflight (argent check) is the DAG's first job; the data and training rules take its marker
# as an ancient() input, so a re-check never re-runs them.
PREFLIGHT = R("preflight.json")


def _write_if_changed(path, text):
    path = Path(path)
    if path.exists() and path.read_text() == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


# The CLI reads the merged workflow config (config files + --config) from this file. It is not an
# input of any rule: each job carries the hash of the part of the config it depends on instead, so
# a change re-runs exactly the jobs it affects.
EFFECTIVE_CONFIG = R("workflow_config.yaml")
_write_if_changed(
    EFFECTIVE_CONFIG,
    yaml.safe_dump({**config, "variants_file": str(ROOT / config["variants_file"])}, sort_keys=True),
)


def stable_hash(obj):
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def file_digest(path):
    """Content hash of an external input (empty for none): with the input ancient(), a copy with new
    timestamps and the same bytes (re-provisioned shared data) re-runs nothing; new bytes do."""
    return file_sha256(path)[:16] if path and Path(path).is_file() else ""


def enabled(section):
    """An optional stage (tune, probe) runs when its section says ``enabled: true``."""
    return bool((config.get(section) or {}).get("enabled", False))


# ---- the run matrix: experiment groups (argent/plan/groups.py) ------------------------------------

# Resolved once: which runs each group lists, which of them it borrows from another group (same
# training config hash: trained once), which groups are left out and why (one line each).
try:
    PLAN = build_plan(config, ROOT)
except ConfigError as err:
    raise ValueError(f"experiment groups: {err}") from None
for _line in left_out_lines(PLAN):
    print(_line, file=sys.stderr)
GROUP_CONFIG = {name: R("groups", f"{name}.yaml") for name in PLAN.configs}
for _name, _path in GROUP_CONFIG.items():
    _write_if_changed(
        _path,
        yaml.safe_dump({**PLAN.configs[_name], "variants_file": str(ROOT / config["variants_file"])}, sort_keys=True),
    )
print(cost_line(config, PLAN, ROOT), file=sys.stderr)

# Released checkpoints evaluated like runs (``pretrained:``, docs/pretrained.md); an optional entry
# whose file is absent is skipped with one line.
try:
    PRETRAINED, _skipped_pretrained = available_entries(
        parse_pretrained_section(config.get("pretrained"), ROOT), list(PLAN.groups))
except ConfigError as err:
    raise ValueError(str(err)) from None
PRETRAINED = {e.name: e for e in PRETRAINED}
for _line in _skipped_pretrained:
    print(_line, file=sys.stderr)


def group_cfg(group):
    return PLAN.configs[group]


def run_keys():
    """The runs this DAG trains (a borrowed run appears once, under the group that trains it)."""
    return PLAN.trained


def run_dir(group, variant, size, seed):
    return str(runs_run_dir(RESULTS, group, variant, size, seed))


# Output patterns from the one layout (argent/layout.py): a run's summary.json (the train rule's
# output, written last: it marks a finished run), its evaluation folder, a released model's, a probe result.
RUN_SUMMARY = str(runs_run_dir(RESULTS, "{group}", "{variant}", "{size}", "{seed}") / SUMMARY)
RUN_EVAL_DIR = runs_eval_dir(RESULTS, "{group}", "{variant}", "{size}", "{seed}")
PRETRAINED_EVAL_DIR = RESULTS / EVAL_DIR / PRETRAINED_GROUP / "{name}" / "seed0"
PROBE_RESULT = str(probe_result(RESULTS, "{group}", "{variant}", "{size}", "{seed}"))


def key_of(wildcards):
    return RunKey(wildcards.group, wildcards.variant, wildcards.size, int(wildcards.seed))


def run_resource(wildcards, key, default):
    return (group_cfg(wildcards.group).get("runs") or {}).get(key, default)


def run_hash(wildcards):
    """The run's identity (argent/identity.py): changes iff the run's result can change."""
    try:
        return run_identity(group_cfg(wildcards.group), key_of(wildcards), ROOT)
    except ConfigError as err:
        raise ValueError(f"config for run {key_of(wildcards)}: {err}")


def summaries():
    return [str(Path(run_dir(k.group, k.variant, k.size, k.seed)) / SUMMARY) for k in run_keys()]


# ---- data -------------------------------------------------------------------------------------

HIERSHAPES = str(Path(config["hiershapes"]["out"]))
HIERSHAPES_MANIFEST = str(Path(HIERSHAPES) / "manifest.json")
HIERSHAPES_PARAMS = R("params", "hiershapes.yaml")
_write_if_changed(HIERSHAPES_PARAMS, yaml.safe_dump(config["hiershapes"].get("params", {}), sort_keys=True))
NLTK_DATA = R("nltk_data")
WORDNET_ZIP = R("nltk_data", "corpora", "wordnet.zip")


def shards_inputs(shards):
    """The generated training data, when training reads the embedded benchmark."""
    return [HIERSHAPES_MANIFEST] if shards.startswith(HIERSHAPES) else []


def training_data_inputs(wildcards):
    """Files the training job needs built first (generated data, mined negatives)."""
    gcfg = group_cfg(wildcards.group)
    inputs = shards_inputs(gcfg["data"].get("train_shards", ""))
    if uses_negatives(gcfg, wildcards.variant, ROOT):
        inputs.append(gcfg["data"]["negatives"])
    return inputs


def clean_source(dataset):
    return config["clean"]["datasets"][dataset]["csv"]


# ---- benchmarks ---------------------------------------------------------------------------------


def _benchmark_choice():
    try:
        return choose_benchmarks(config, ROOT)
    except ConfigError as err:
        raise ValueError(str(err)) from None


BENCHMARKS = _benchmark_choice()  # argent/plan/targets.py: which run, which optional ones are skipped
for _line in BENCHMARKS.skipped.values():
    print(_line, file=sys.stderr)


def benchmarks():
    return BENCHMARKS.run


def skipped_benchmarks():
    return list(BENCHMARKS.skipped)


def benchmark_inputs(wildcards):
    """The run, and whatever this DAG makes that the run's benchmarks read."""
    run = str(Path(run_dir(wildcards.group, wildcards.variant, wildcards.size, wildcards.seed)) / SUMMARY)
    return sorted({run, *benchmark_data_inputs()})


def pretrained_inputs(wildcards):
    """A released model's file and whatever this DAG makes that the benchmarks read."""
    return [PRETRAINED[wildcards.name].path, *benchmark_data_inputs()]


def benchmark_data_inputs():
    """Whatever this DAG makes that the configured benchmarks read."""
    return benchmark_data_inputs_of(config, benchmarks(), HIERSHAPES, HIERSHAPES_MANIFEST)


def eval_targets():
    return [
        str(runs_eval_dir(RESULTS, k.group, k.variant, k.size, k.seed) / f"{b}.json")
        for k in run_keys()
        for b in benchmarks()
    ]


def pretrained_eval_targets():
    return [str(pretrained_eval_dir(RESULTS, name) / f"{b}.json") for name in PRETRAINED for b in benchmarks()]


# ---- negatives ----------------------------------------------------------------------------------


def _mining_jobs():
    try:
        return mining_jobs(PLAN, ROOT)  # {negatives parquet: the training shards it is mined from}
    except ConfigError as err:
        raise ValueError(str(err)) from None


MINING_JOBS = _mining_jobs()


# ---- launching ------------------------------------------------------------------------------------


def train_launcher(wildcards, threads):
    """``python -m argent`` on one process; ``torchrun`` (free rendezvous port) for several GPUs."""
    gpus = int(run_resource(wildcards, "gpus", 0))
    if gpus > 1:
        return ["torchrun", "--standalone", "--nproc_per_node", str(gpus), "-m", "argent"]
    return ["argent"]


# ---- probe and tables ---------------------------------------------------------------------------------

def _probe_runs():
    try:
        return probe_runs(config, PLAN)  # {probe result: the run it reads (a borrowed run: its lender's)}
    except ConfigError as err:
        raise ValueError(str(err)) from None


PROBE_RUNS = _probe_runs()


def probe_targets():
    return list(PROBE_RUNS)


def table_extras():
    """Outputs of the optional stages that the tables and the report include."""
    extras = probe_targets()
    if extras:
        extras.append(R("figures", "probe_exposure.png"))
    if enabled("tune"):
        extras.append(R("tune", config["tune"]["study"], "trials.csv"))
    for dataset in config["clean"].get("datasets", {}):
        if clean_source(dataset).startswith(HIERSHAPES) or Path(clean_source(dataset)).exists():
            extras.append(R("data", dataset, "table1.md"))
    return extras


# ---- clean and tune helpers ------------------------------------------------------------------


def clean_hash(dataset):
    """The clean: options that shape one data set's outputs (every key but the other data sets)."""
    options = {k: v for k, v in config["clean"].items() if k != "datasets"}
    return stable_hash({**options, "dataset": config["clean"]["datasets"][dataset]})


def tune_objective_entries():
    """The benchmarks entries the study's objective reads (validation splits)."""
    names = [term.get("benchmark", "") for term in config["tune"].get("objective") or []]
    return {name: config["benchmarks"].get(name) or {} for name in names}


def tuning_group():
    """The group that trains the tuned variant (its budget is the study's), or None."""
    return next((g.name for g in PLAN.active() if TUNED_VARIANT in g.variants), None)


def tune_config():
    """The config file a study worker reads: the tuning group's, else the base one."""
    group = tuning_group()
    return GROUP_CONFIG[group] if group else EFFECTIVE_CONFIG


def tune_inputs(wildcards):
    """What a worker reads that this DAG makes: training data, and the validation benchmarks'
    generated data and cleaned split (PEP pairs and negative pool, as the test split gets them)."""
    gcfg = group_cfg(tuning_group()) if tuning_group() else config
    inputs = set(shards_inputs(gcfg["data"].get("train_shards", "")))
    if uses_negatives(gcfg, config["tune"]["base_variant"], ROOT):
        inputs.add(gcfg["data"]["negatives"])
    inputs.update(benchmark_data_inputs_of(config, list(tune_objective_entries()), HIERSHAPES, HIERSHAPES_MANIFEST))
    return sorted(inputs)
