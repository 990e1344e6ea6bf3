# Preflight: validates the config, the data paths, a few records of each data set, the device and
# the free disk. Only `all` depends on it: a job whose direct input is re-made by a job that runs
# (even an ancient() input) is not checked for changed params by Snakemake 9, so making every rule
# depend on preflight hid every edited variant from the re-run. Missing required data still stops
# the DAG at build time (common.smk); run `argent check --config FILE` by hand before a long run.


# The preflight checks train.device where the jobs run: on Slurm it asks for a GPU when a group trains on GPUs.
PREFLIGHT_GPUS = min(1, max((int(ARGENT_DAG.run_resource(g.name, "gpus")) for g in PLAN.active()), default=0))


rule preflight:
    output:
        PREFLIGHT,
    params:
        config=EFFECTIVE_CONFIG,
        root=str(ROOT),
        hash=stable_hash(config),
    benchmark:
        job_record("preflight", "preflight"),
    log:
        R("logs", "preflight.log"),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
        cpus_per_task=lambda w, threads: threads,  # Slurm: what the job uses, not the profile's default
        gpu=PREFLIGHT_GPUS,
    shell:
        "argent check --config {params.config:q} --base-dir {params.root:q} --out {output:q} > {log:q} 2>&1"
