# Optuna over γ₁, γ₂, β: one study per base of tune.base_variants (tune.study the first's, <study>-<base> the
# others'); a study's parallel workers share it (SQLite under results/ by default, any SQLAlchemy URL for
# clusters); the export writes best.yaml, which trains as the variant <base>-tuned (argent-tuned, ...).
# Trials are scored on the validation benchmarks of tune.objective only (docs/tuning.md).
STUDY_BEST, STUDY_TRIALS = (str(Results(RESULTS).study_best("{study}")), str(Results(RESULTS).study_trials("{study}")))


rule tune_worker:
    input:
        lambda w: ARGENT_DAG.tune_inputs(w.study),
    output:
        touch(R("tune", "{study}", "workers", "{worker}.done")),
    params:
        out=lambda w, output: str(Path(output[0]).parent.parent),
        config=ARGENT_DAG.tune_config(),  # the tuning group's config: the study trains on its budget
        hash=lambda w: ARGENT_DAG.tune_hash(w.study),
    benchmark:
        job_record("tune_worker", "{study}-worker{worker}"),
    log:
        R("logs", "tune", "{study}-worker{worker}.log"),
    threads: 1
    resources:
        mem_mb=lambda w: tuning_resource("mem_mb", 3000),
        gpu=lambda w: min(1, int(tuning_resource("gpus", 0))),  # a trial trains in one process
    shell:
        "argent tune --config {params.config:q} --study {wildcards.study:q} --out {params.out:q}"
        " --no-export --threads {threads:q} > {log:q} 2>&1"


rule tune_export:
    input:
        lambda w: expand(R("tune", "{study}", "workers", "{worker}.done"), study=w.study,
                         worker=range(ARGENT_DAG.setting("tune", "workers"))),
    output:
        best=STUDY_BEST,
        trials=STUDY_TRIALS,
    params:
        out=lambda w, output: str(Path(output.best).parent),
        config=ARGENT_DAG.tune_config(),
    benchmark:
        job_record("tune_export", "{study}-export"),
    log:
        R("logs", "tune", "{study}-export.log"),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
        cpus_per_task=lambda w, threads: threads,  # Slurm: what the job uses, not the profile's default
    shell:
        "argent tune --config {params.config:q} --study {wildcards.study:q} --out {params.out:q}"
        " --export-only > {log:q} 2>&1"
