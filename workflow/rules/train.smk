# One job per (variant, size, seed). summary.json is written last, so it marks a finished run;
# the checkpoint is deliberately not an output: Snakemake deletes the outputs of an incomplete job,
# and a re-run (--rerun-incomplete) must find the checkpoint to resume from.


wildcard_constraints:
    variant=r"[A-Za-z0-9][A-Za-z0-9_.+\-]*",
    size=r"[A-Za-z0-9]+",
    seed=r"\d+",
    benchmark=r"[A-Za-z0-9][A-Za-z0-9_.+\-]*",


rule train:
    input:
        data=training_data_inputs,
        image_cache=IMAGE_CACHE_MARKER or [],
        best=lambda w: [R("tune", config["tune"]["study"], "best.yaml")] if w.variant == TUNED_VARIANT else [],
    output:
        summary=R("runs", "{variant}-{size}", "seed{seed}", "summary.json"),
    params:
        run_dir=lambda w: run_dir(w.variant, w.size, w.seed),
        base=lambda w: base_variant(w.variant),
        variant_file=lambda w, input: ["--variant-file", input.best[0]] if input.best else [],
        launcher=train_launcher,
        hash=run_hash,
        config=EFFECTIVE_CONFIG,
    benchmark:
        R("benchmarks", "train", "{variant}-{size}-seed{seed}.tsv"),
    log:
        R("logs", "train", "{variant}-{size}-seed{seed}.log"),
    threads: config["runs"].get("threads_per_run", 1)
    resources:
        gpu=lambda w: int(config["runs"].get("gpus", 0)),
        mem_mb=config["runs"].get("mem_mb", 4000),
        runtime=config["runs"].get("runtime_min", 60),
    shell:
        "{params.launcher:q} train --config {params.config:q} --variant {params.base:q} --size {wildcards.size:q}"
        " --seed {wildcards.seed:q} --out {params.run_dir:q} --resume auto --threads {threads:q}"
        " --name {wildcards.variant:q} {params.variant_file:q} > {log:q} 2>&1"
