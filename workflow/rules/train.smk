# One job per (group, variant, size, seed); a group trains with its own config file (base + overrides). summary.json is written last, so it marks a finished run;
# the checkpoint is deliberately not an output: Snakemake deletes the outputs of an incomplete job,
# and a re-run (--rerun-incomplete) must find the checkpoint to resume from.
from argent.config.groups import base_variant

GROUP_CONFIG = {name: ARGENT_DAG.group_config(name) for name in PLAN.configs}


wildcard_constraints:
    group=r"[A-Za-z0-9][A-Za-z0-9_.+\-]*",
    variant=r"[A-Za-z0-9][A-Za-z0-9_.+\-]*",
    size=r"[A-Za-z0-9]+",
    seed=r"\d+",
    benchmark=r"[A-Za-z0-9][A-Za-z0-9_.+\-]*",


rule train:
    input:
        data=lambda w: ARGENT_DAG.training_inputs(w.group, w.variant),
        image_cache=IMAGE_CACHE_MARKER or [],
        best=lambda w: ARGENT_DAG.tuned_inputs(w.group, w.variant),  # a tuned variant's study best.yaml, else none
        # A finished folder whose summary.json carries another identity hash than the plan's (trained by
        # hand with another config, variant or --name; Snakemake has no record of such a run): a marker
        # newer than that summary, written at DAG build (common.smk), so the run is retrained.
        identity=lambda w: ARGENT_DAG.identity_inputs(key_of(w)),
    output:
        summary=RUN_SUMMARY,
    params:
        run_dir=run_dir,
        base=lambda w: base_variant(config, w.variant),
        variant_file=lambda w, input: ["--variant-file", input.best[0]] if input.best else [],
        launcher=lambda w, threads: ARGENT_DAG.launcher(w.group),
        hash=run_hash,
        config=lambda w: GROUP_CONFIG[w.group],
    benchmark:
        run_job_record_of("train"),
    log:
        R("logs", "train", "{group}", "{variant}-{size}-seed{seed}.log"),
    threads: lambda w: run_resource(w, "threads_per_run")
    resources:
        gpu=lambda w: int(run_resource(w, "gpus")),
        mem_mb=lambda w: run_resource(w, "mem_mb"),
        runtime=lambda w: run_resource(w, "runtime_min"),
    # exec: the trainer replaces the job's shell, so a scheduler's SIGTERM reaches it with no shell to die
    # in between; it checkpoints the step it reaches and exits 75, and the retry resumes there
    # (argent/engine/preemption.py).
    shell:
        "exec {params.launcher:q} train --config {params.config:q} --variant {params.base:q} --size {wildcards.size:q}"
        " --seed {wildcards.seed:q} --out {params.run_dir:q} --resume auto --threads {threads:q}"
        " --name {wildcards.variant:q} {params.variant_file:q} > {log:q} 2>&1"
