# The embedded benchmark. Real data sets are prepared by their owners' tools and pointed at in config.


rule synth_hiershapes:
    output:
        manifest=HIERSHAPES_MANIFEST,
    params:
        out=lambda w, output: str(Path(output.manifest).parent),
        params_file=HIERSHAPES_PARAMS,
        hash=stable_hash(config["hiershapes"]),
    benchmark:
        R("benchmarks", "synth_hiershapes", "synth_hiershapes.tsv"),
    log:
        R("logs", "data", "synth_hiershapes.log"),
    threads: workflow.cores
    resources:
        mem_mb=4000,
    shell:
        "argent synth --out {params.out:q} --params {params.params_file:q} --jobs {threads:q}"
        " --overwrite > {log:q} 2>&1"


rule stage_wordnet:
    """NLTK reads WordNet only from <dir>/corpora/wordnet.zip on its search path, and not through a
    symbolic link: copy the configured zip there."""
    input:
        config["negatives"].get("wordnet_zip") or [],
    output:
        WORDNET_ZIP,
    benchmark:
        R("benchmarks", "stage_wordnet", "stage_wordnet.tsv"),
    log:
        R("logs", "data", "stage_wordnet.log"),
    threads: 1
    shell:
        "cp {input:q} {output:q} > {log:q} 2>&1"
