# Helpers only: paths, the run matrix, per-job config hashes. No rules here.
import hashlib
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

import yaml

from argent.check import BENCHMARK_PATH_KEYS, benchmark_findings, missing_required, produced_prefixes
from argent.config import ConfigError, check_name, experiment_from_dict

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


def enabled(section):
    """An optional stage (tune, probe) runs when its section says ``enabled: true``."""
    return bool((config.get(section) or {}).get("enabled", False))


# ---- the run matrix -------------------------------------------------------------------------

TUNED_VARIANT = "argent-tuned"


def variants():
    names = [v for v in config["runs"]["variants"] if negatives_available() or not uses_negatives(v)]
    if enabled("tune") and config["tune"].get("train_best", True):
        names.append(TUNED_VARIANT)
    return [check_name(v, "runs.variants") for v in names]


def seeds_of(variant):
    """runs.seeds, or the variant's own list in runs.seeds_by_variant (e.g. fewer for ablations)."""
    return (config["runs"].get("seeds_by_variant") or {}).get(variant, config["runs"]["seeds"])


def run_keys():
    return [
        (v, check_name(s, "runs.size"), int(k))
        for v in variants()
        for s in config["runs"]["sizes"]
        for k in seeds_of(v)
    ]


def run_dir(variant, size, seed):
    return R("runs", f"{variant}-{size}", f"seed{seed}")


def base_variant(variant):
    """The tuned variant is the tuned study's base variant plus best.yaml on top."""
    return config["tune"]["base_variant"] if variant == TUNED_VARIANT else variant


def run_hash(wildcards):
    """Hash of the resolved experiment config: changes iff the run's result can change."""
    try:
        exp = experiment_from_dict(config, base_variant(wildcards.variant), wildcards.size,
                                   int(wildcards.seed), base_dir=ROOT)
    except ConfigError as err:
        raise ValueError(f"config for run {wildcards.variant}-{wildcards.size}/seed{wildcards.seed}: {err}")
    return exp.result_hash()


def summaries():
    return [str(Path(run_dir(*key)) / "summary.json") for key in run_keys()]


# ---- data -------------------------------------------------------------------------------------

HIERSHAPES = str(Path(config["hiershapes"]["out"]))
HIERSHAPES_MANIFEST = str(Path(HIERSHAPES) / "manifest.json")
HIERSHAPES_PARAMS = R("params", "hiershapes.yaml")
_write_if_changed(HIERSHAPES_PARAMS, yaml.safe_dump(config["hiershapes"].get("params", {}), sort_keys=True))
NLTK_DATA = R("nltk_data")
WORDNET_ZIP = R("nltk_data", "corpora", "wordnet.zip")


def training_data_inputs_plain(wildcards=None):
    """The generated training data, when training reads the embedded benchmark."""
    return [HIERSHAPES_MANIFEST] if config["data"].get("train_shards", "").startswith(HIERSHAPES) else []


def training_data_inputs(wildcards):
    """Files the training job needs built first (generated data, mined negatives)."""
    inputs = training_data_inputs_plain()
    if uses_negatives(base_variant(wildcards.variant)):
        inputs.append(config["data"]["negatives"])
    return inputs


def clean_source(dataset):
    return config["clean"]["datasets"][dataset]["csv"]


# ---- benchmarks ---------------------------------------------------------------------------------


def _paths_of(entry):
    return [v for k, v in entry.items() if isinstance(v, str) and k in BENCHMARK_PATH_KEYS]


_REPORTED = set()


def benchmark_available(name):
    """A benchmark runs when its data is made by this DAG or present on disk. Absent data stops the
    DAG here (a required benchmark, the default) or skips it with one line (``optional: true``)."""
    findings = benchmark_findings(name, config["benchmarks"][name], produced_prefixes(config), ROOT)
    problem = missing_required(findings)
    if problem:
        raise ValueError(f"required benchmark data missing:\n  {problem}")
    absent = [f for f in findings if f.status == "missing-optional"]
    if absent and name not in _REPORTED:
        _REPORTED.add(name)
        print(f"skipping optional benchmark {name}: {absent[0].key}: {absent[0].path} not found", file=sys.stderr)
    return not absent


def benchmarks():
    names = [check_name(b, "benchmarks") for b in config["evaluate"]["benchmarks"]]
    unknown = [b for b in names if b not in config["benchmarks"]]
    if unknown:
        raise ValueError(f"evaluate.benchmarks: {unknown} not defined under benchmarks:")
    return [b for b in names if benchmark_available(b)]


def skipped_benchmarks():
    return [b for b in config["evaluate"]["benchmarks"] if not benchmark_available(b)]


def benchmark_inputs(wildcards):
    """The run, and whatever this DAG makes that the run's benchmarks read."""
    inputs = [str(Path(run_dir(wildcards.variant, wildcards.size, wildcards.seed)) / "summary.json")]
    for name in benchmarks():
        entry = config["benchmarks"][name]
        if any(p.startswith(HIERSHAPES) for p in _paths_of(entry)):
            inputs.append(HIERSHAPES_MANIFEST)
        for key in ("clean_csv", "negative_pool"):
            if entry.get(key, "").startswith(str(RESULTS)):
                inputs.append(entry[key])
    return sorted(set(inputs))


def eval_targets():
    return [
        str(Path(R("eval", f"{v}-{s}", f"seed{k}")) / f"{b}.json")
        for v, s, k in run_keys()
        for b in benchmarks()
    ]


# ---- negatives ----------------------------------------------------------------------------------


def _variant_field(variant, field):
    from argent.config import load_variants

    catalogue = load_variants(ROOT / config.get("variants_file", "config/variants.yaml"))
    if variant not in catalogue:
        raise ValueError(f"runs.variants: {variant!r} is not in the variant catalogue; known: {sorted(catalogue)}")
    entry = dict(catalogue[variant], **(config.get("variant_overrides") or {}).get(variant, {}))
    return entry.get(field)


def uses_negatives(variant):
    return (_variant_field(variant, "hard_negatives") or "none") != "none"


def negatives_available():
    """Mining needs WordNet (NLTK's wordnet.zip); without it the negatives variants are left out."""
    zip_path = config["negatives"].get("wordnet_zip", "")
    return bool(zip_path) and Path(zip_path).is_file()


# ---- launching ------------------------------------------------------------------------------------


def train_launcher(wildcards, threads):
    """``python -m argent`` on one process; ``torchrun`` (free rendezvous port) for several GPUs."""
    gpus = int(config["runs"].get("gpus", 0))
    if gpus > 1:
        return ["torchrun", "--standalone", "--nproc_per_node", str(gpus), "-m", "argent"]
    return ["argent"]


# ---- probe and tables ---------------------------------------------------------------------------------

def probe_targets():
    if not config["probe"].get("enabled"):
        return []
    sizes = config["probe"].get("sizes") or config["runs"]["sizes"]
    return [
        R("probe", f"{v}-{s}", f"seed{k}.json")
        for v in config["probe"]["variants"] if v in variants()
        for s in sizes
        for k in config["probe"]["seeds"]
    ]


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


def tune_inputs(wildcards):
    """What a worker reads that this DAG makes: training data, and the validation benchmarks'
    generated data and cleaned split (PEP pairs and negative pool, as the test split gets them)."""
    inputs = set(training_data_inputs_plain())
    if uses_negatives(config["tune"]["base_variant"]):
        inputs.add(config["data"]["negatives"])
    for entry in tune_objective_entries().values():
        if any(p.startswith(HIERSHAPES) for p in _paths_of(entry)):
            inputs.add(HIERSHAPES_MANIFEST)
        for key in ("clean_csv", "negative_pool"):
            if entry.get(key, "").startswith(str(RESULTS)):
                inputs.add(entry[key])
    return sorted(inputs)
