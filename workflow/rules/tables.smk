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
        curves=report(R("figures", "training_curves.png"), caption="../report/curves.rst", category="Figures"),
        figures=report(
            directory(R("figures", "runs")),
            patterns=["{name}.png"],
            caption="../report/figures.rst",
            category="Figures",
        ),
    params:
        out=lambda w, output: str(Path(output.main_md).parent),
        config=EFFECTIVE_CONFIG,
        results=lambda w: str(RESULTS),
        skipped=skipped_benchmarks(),
        hash=stable_hash([config.get("tables", {}), config["runs"]]),
    benchmark:
        R("benchmarks", "tables", "tables.tsv"),
    log:
        R("logs", "tables.log"),
    threads: 1
    shell:
        "argent tables --config {params.config:q} --results {params.results:q} --out {params.out:q}"
        " --figures {output.figures:q} --curves {output.curves:q} > {log:q} 2>&1"
