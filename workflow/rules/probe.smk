# TaxGen probe: frozen towers, a projector trained on leaf questions, hypernym questions held out.


rule probe:
    input:
        run=RUN_SUMMARY,
        data=HIERSHAPES_MANIFEST if ARGENT_DAG.setting("probe", "data").startswith(HIERSHAPES) else [],
    output:
        PROBE_RESULT,
    params:
        run_dir=run_dir,
        config=EFFECTIVE_CONFIG,  # the probe reads its probe: section (data, options) from here
        hash=stable_hash(config.get("probe", {})),
    benchmark:
        R("benchmarks", "probe", "{group}", "{variant}-{size}-seed{seed}.tsv"),
    log:
        R("logs", "probe", "{group}", "{variant}-{size}-seed{seed}.log"),
    threads: 1
    resources:
        mem_mb=3000,
    shell:
        "argent probe --config {params.config:q} --run {params.run_dir:q}"
        " --out {output:q} --threads {threads:q} --quiet > {log:q} 2>&1"


rule probe_figure:
    input:
        list(ARGENT_DAG.probe),
    output:
        report(R("figures", "probe_exposure.png"), caption="../report/probe.rst", category="Figures"),
    benchmark:
        R("benchmarks", "probe_figure", "figure.tsv"),
    log:
        R("logs", "probe", "figure.log"),
    threads: 1
    shell:
        "argent probe --figure {input:q} --out {output:q} > {log:q} 2>&1"
