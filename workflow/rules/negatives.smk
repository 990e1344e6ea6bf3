# Concreteness-aware hard negatives for the training captions (Concrete Jungle; our documented design).


import re

# One job per negatives parquet that an active group trains on: {parquet: the training shards it is mined from}.
MINING_JOBS = ARGENT_DAG.mining



rule mine_negatives:
    input:
        data=lambda w: ARGENT_DAG.synth_inputs(MINING_JOBS[w.parquet]),
        wordnet=WORDNET_ZIP,
    output:
        parquet="{parquet}",
    wildcard_constraints:
        parquet="|".join(re.escape(p) for p in MINING_JOBS) or r"(?!)",
    params:
        shards=lambda w: MINING_JOBS[w.parquet],
        nltk=lambda w, input: str(Path(input.wordnet).parent.parent),
        config=EFFECTIVE_CONFIG,  # argent mine reads its options from the negatives: section there
        hash=stable_hash(config.get("negatives", {})),
    benchmark:
        job_record("mine_negatives", "{parquet}"),
    log:
        R("logs", "negatives", "{parquet}.log"),
    threads: 1
    resources:
        mem_mb=4000,
    shell:
        "argent mine {params.shards:q} --config {params.config:q} --format grounded"
        " --nltk-data {params.nltk:q} --out {output.parquet:q} > {log:q} 2>&1"
