# Every benchmark of a run in one job: the model is loaded once and each benchmark's JSON is
# written on its own (atomically). A benchmark is a config entry naming a protocol and its data.
from argent.runs import EVAL_DIR, PRETRAINED_GROUP, eval_dir

# A run's evaluation folder and a released model's, from the one layout (argent/runs/layout.py).
PRETRAINED = ARGENT_DAG.pretrained  # {name: the config's pretrained: entry}
RUN_EVAL_DIR = eval_dir(RESULTS, "{group}", "{variant}", "{size}", "{seed}")
PRETRAINED_EVAL_DIR = RESULTS / EVAL_DIR / PRETRAINED_GROUP / "{name}" / "seed0"


BENCHMARKS = ARGENT_DAG.benchmarks.run  # the benchmarks every run's evaluation job writes


rule evaluate:
    input:
        lambda w: ARGENT_DAG.evaluation_inputs(key_of(w)),
    output:
        [str(RUN_EVAL_DIR / f"{b}.json") for b in BENCHMARKS],
    params:
        run_dir=run_dir,
        names=BENCHMARKS,
        out_dir=lambda w, output: str(Path(output[0]).parent),
        hash=ARGENT_DAG.evaluation_hash(),
        config=EFFECTIVE_CONFIG,
    benchmark:
        run_job_record_of("evaluate"),
    log:
        R("logs", "evaluate", "{group}", "{variant}-{size}-seed{seed}.log"),
    threads: ARGENT_DAG.setting("evaluate", "threads")
    resources:
        mem_mb=4000,
    shell:
        "argent evaluate --run {params.run_dir:q} --benchmark {params.names:q} --config {params.config:q}"
        " --out-dir {params.out_dir:q} --threads {threads:q} > {log:q} 2>&1"


# A released checkpoint (the config's ``pretrained:`` entries, docs/pretrained.md): the same benchmarks,
# its own preprocessing and tokenizer, into eval/pretrained/<name>/seed0. The name is the row.
rule evaluate_pretrained:
    input:
        lambda w: ARGENT_DAG.pretrained_inputs(w.name),
    output:
        [str(PRETRAINED_EVAL_DIR / f"{b}.json") for b in BENCHMARKS],
    params:
        spec=lambda w: PRETRAINED[w.name].spec,
        arch=lambda w: PRETRAINED[w.name].arch,
        names=BENCHMARKS,
        out_dir=lambda w, output: str(Path(output[0]).parent),
        hash=ARGENT_DAG.evaluation_hash(),
        entry=lambda w: stable_hash(PRETRAINED[w.name]),
        results=lambda w, output: str(Path(output[0]).parents[4]),  # <results>/eval/pretrained/<name>/seed0/
        config=EFFECTIVE_CONFIG,
    benchmark:
        job_record("evaluate", PRETRAINED_GROUP, "{name}"),
    log:
        R("logs", "evaluate", "pretrained", "{name}.log"),
    threads: ARGENT_DAG.setting("evaluate", "threads")
    resources:
        mem_mb=8000,
    shell:
        "argent evaluate --pretrained {params.spec:q} --arch {params.arch:q} --name {wildcards.name:q}"
        " --benchmark {params.names:q} --config {params.config:q} --out-dir {params.out_dir:q}"
        " --results {params.results:q}"
        " --threads {threads:q} > {log:q} 2>&1"


# eval/pretrained/<name>/seed0 also fits the run pattern (group "pretrained", a reserved group name).
ruleorder: evaluate_pretrained > evaluate
