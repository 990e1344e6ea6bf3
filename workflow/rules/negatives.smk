# Concreteness-aware hard negatives for the training captions (Concrete Jungle; our documented design).


rule mine_negatives:
    input:
        data=training_data_inputs_plain,
        wordnet=WORDNET_ZIP,
    output:
        parquet=config["data"]["negatives"],
    params:
        shards=config["data"]["train_shards"],
        nltk=lambda w, input: str(Path(input.wordnet).parent.parent),
        config=EFFECTIVE_CONFIG,  # argent mine reads its options from the negatives: section there
        hash=stable_hash(config["negatives"]),
    benchmark:
        R("benchmarks", "mine_negatives", "mine.tsv"),
    log:
        R("logs", "negatives", "mine.log"),
    threads: 1
    resources:
        mem_mb=4000,
    shell:
        "argent mine {params.shards:q} --config {params.config:q} --format grounded"
        " --nltk-data {params.nltk:q} --out {output.parquet:q} > {log:q} 2>&1"
