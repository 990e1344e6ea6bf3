# TaxGen probe: frozen towers, a projector trained on leaf questions, hypernym questions held out.
from argent.runs import probe_result

PROBE_RESULT = str(probe_result(RESULTS, "{group}", "{variant}", "{size}", "{seed}"))


rule probe:
    input:
        run=RUN_SUMMARY,
        data=ARGENT_DAG.synth_inputs(ARGENT_DAG.setting("probe", "data")),
    output:
        PROBE_RESULT,
    params:
        run_dir=run_dir,
        config=EFFECTIVE_CONFIG,  # the probe reads its probe: section (data, options) from here
        hash=stable_hash(config.get("probe", {})),
    benchmark:
        run_job_record_of("probe"),
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
        report(str(Results(RESULTS).probe_figure), caption="../report/probe.rst", category=REPORT_CATEGORY["figures"]),
    benchmark:
        job_record("probe_figure", "figure"),
    log:
        R("logs", "probe", "figure.log"),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
        cpus_per_task=lambda w, threads: threads,  # Slurm: what the job uses, not the profile's default
    shell:
        "argent probe --figure {input:q} --out {output:q} > {log:q} 2>&1"
