# Preflight: the DAG's first job. Validates the config, the data paths, a few records of each data
# set, the device and the free disk before any data generation or training starts.


rule preflight:
    output:
        PREFLIGHT,
    params:
        config=EFFECTIVE_CONFIG,
        root=str(ROOT),
        hash=stable_hash(config),
    benchmark:
        R("benchmarks", "preflight", "preflight.tsv"),
    log:
        R("logs", "preflight.log"),
    threads: 1
    shell:
        "argent check --config {params.config:q} --base-dir {params.root:q} --out {output:q} > {log:q} 2>&1"
