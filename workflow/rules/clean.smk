# HierarCaps cleaning (ARGENT §5): unambiguous samples, the rarely-retrieved negative pool and the
# Table 1 false-negative analysis, per HierarCaps-format data set (the real one, the embedded one).
CLEAN_FOLDER = Results(RESULTS).clean("{dataset}")


rule clean_hierarcaps:
    input:
        data=lambda w: ARGENT_DAG.clean_inputs(w.dataset),
    output:
        clean=str(CLEAN_FOLDER.clean_csv),
        pool=str(CLEAN_FOLDER.negative_pool),
        scores=str(CLEAN_FOLDER.scores),
        table1=report(str(CLEAN_FOLDER.table1_md), caption="../report/table1.rst", category=REPORT_CATEGORY["table1"],
                      labels={"data set": "{dataset}"}),
    params:
        csv=lambda w: ARGENT_DAG.clean_source(w.dataset),
        images=lambda w: ARGENT_DAG.setting("clean", "datasets")[w.dataset]["images"],
        out_dir=lambda w: str(Results(RESULTS).clean(w.dataset).root),
        config=EFFECTIVE_CONFIG,  # argent clean reads its options from the clean: section there
        hash=lambda w: ARGENT_DAG.clean_hash(w.dataset),  # options + this data set: editing another data set reruns nothing here
    benchmark:
        job_record("clean_hierarcaps", "{dataset}"),
    log:
        R("logs", "clean", "{dataset}.log"),
    threads: 1
    resources:
        mem_mb=4000,
    shell:
        "argent clean --config {params.config:q} --csv {params.csv:q} --images {params.images:q}"
        " --out-dir {params.out_dir:q} > {log:q} 2>&1"
