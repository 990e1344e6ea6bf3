# The embedded benchmark. Real data sets are prepared by their owners' tools and pointed at in config.


rule synth_hiershapes:
    output:
        manifest=HIERSHAPES_MANIFEST,
    params:
        out=HIERSHAPES,
        args=lambda wildcards: synth_args(),
        hash=stable_hash(config["hiershapes"]),
    log:
        R("logs", "data", "synth_hiershapes.log"),
    threads: workflow.cores
    resources:
        mem_mb=4000,
    shell:
        "{PY} -m argent synth --out {params.out:q} --workers {threads} {params.args} > {log:q} 2>&1"
