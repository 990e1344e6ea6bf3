# The embedded benchmark. Real data sets are prepared by their owners' tools and pointed at in config.
from argent.plan.dag import file_digest
from argent.runs.layout import IMAGE_CACHE_MARKER as IMAGE_CACHE_FILE

HIERSHAPES_MANIFEST = ARGENT_DAG.hiershapes_manifest  # written last by argent synth: the data set is complete
HIERSHAPES_PARAMS = R("params", "hiershapes.yaml")  # the generator's parameters (ARGENT_DAG.files())
WORDNET_SOURCE = ARGENT_DAG.setting("negatives", "wordnet_zip")  # the configured zip, staged at WORDNET_ZIP


rule synth_hiershapes:
    output:
        manifest=HIERSHAPES_MANIFEST,
    params:
        out=lambda w, output: str(Path(output.manifest).parent),
        # The parameters file under results: is named in the shell command, not as a param: a param
        # holding a results path would re-run this job (outside results:) when results: moves.
        hash=stable_hash(config["hiershapes"]["params"]),
    benchmark:
        job_record("synth_hiershapes", "synth_hiershapes"),
    log:
        R("logs", "data", "synth_hiershapes.log"),
    threads: workflow.cores
    resources:
        mem_mb=4000,
    shell:
        "argent synth --out {params.out:q} --params {HIERSHAPES_PARAMS:q} --jobs {threads:q}"
        " --overwrite > {log:q} 2>&1"


rule stage_wordnet:
    """NLTK reads WordNet only from <dir>/corpora/wordnet.zip on its search path, and not through a
    symbolic link: copy the configured zip there. Its bytes, not its timestamp, decide a re-run (the
    mining and every negatives training hang on it)."""
    input:
        ancient(WORDNET_SOURCE) if WORDNET_SOURCE else [],
    output:
        WORDNET_ZIP,
    params:
        digest=file_digest(WORDNET_SOURCE),
    benchmark:
        job_record("stage_wordnet", "stage_wordnet"),
    log:
        R("logs", "data", "stage_wordnet.log"),
    threads: 1
    resources:
        mem_mb=100,
        runtime=5,
        cpus_per_task=lambda w, threads: threads,  # Slurm: what the job uses, not the profile's default
    shell:
        "cp {input:q} {output:q} > {log:q} 2>&1"


# The decoded-image cache (argent/data/image_cache.py) when data.image_cache names a folder. Training
# reads it when it was built from the current shards (content-hashed) and decodes otherwise: the
# same batches either way, so runs do not depend on it (it is not in their config hash).
IMAGE_CACHE = config["data"].get("image_cache") or ""
IMAGE_CACHE_MARKER = str(Path(IMAGE_CACHE) / IMAGE_CACHE_FILE) if IMAGE_CACHE else ""

if IMAGE_CACHE:

    rule image_cache:
        input:
            ARGENT_DAG.synth_inputs(config["data"]["train_shards"]),
        output:
            marker=IMAGE_CACHE_MARKER,
        params:
            shards=config["data"]["train_shards"],
            out=lambda w, output: str(Path(output.marker).parent),
        benchmark:
            job_record("image_cache", "image_cache"),
        log:
            R("logs", "data", "image_cache.log"),
        threads: 1
        resources:
            mem_mb=2000,
        shell:
            "python -m argent.data.image_cache --shards {params.shards:q} --out {params.out:q} > {log:q} 2>&1"
