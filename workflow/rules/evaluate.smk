# One job per (run, benchmark). A benchmark is a config entry naming a protocol and its data.


rule evaluate:
    input:
        benchmark_inputs,
    output:
        R("eval", "{variant}-{size}", "seed{seed}", "{benchmark}.json"),
    params:
        run_dir=lambda w: run_dir(w.variant, w.size, w.seed),
        hash=lambda w: stable_hash(config["benchmarks"][w.benchmark]),
        config=EFFECTIVE_CONFIG,
    log:
        R("logs", "evaluate", "{variant}-{size}-seed{seed}-{benchmark}.log"),
    threads: 1
    resources:
        mem_mb=4000,
    shell:
        "argent evaluate --run {params.run_dir:q} --benchmark {wildcards.benchmark:q}"
        " --config {params.config:q} --out {output:q} > {log:q} 2>&1"
