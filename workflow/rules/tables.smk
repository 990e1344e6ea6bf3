# The paper's tables and figures from every evaluation JSON and run folder.


rule tables:
    input:
        evals=eval_targets(),
        runs=summaries(),
        extra=table_extras(),
    output:
        main_md=report(R("tables", "main.md"), caption="../report/main_table.rst", category="Tables"),
        main_csv=R("tables", "main.csv"),
        ablations_md=report(R("tables", "ablations.md"), caption="../report/ablations_table.rst", category="Tables"),
        ablations_csv=R("tables", "ablations.csv"),
        figures=report(
            directory(R("figures")),
            patterns=["{name}.png"],
            caption="../report/figures.rst",
            category="Figures",
        ),
    params:
        config=EFFECTIVE_CONFIG,
        skipped=skipped_benchmarks(),
        hash=stable_hash([config.get("tables", {}), config["runs"]]),
    log:
        R("logs", "tables.log"),
    threads: 1
    shell:
        "{PY} -m argent tables --config {params.config:q} --results {RESULTS:q} --out {R('tables')} "
        "--figures {output.figures:q} > {log:q} 2>&1"
