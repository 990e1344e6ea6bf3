"""The verb ``argent restamp (--run DIR | --results DIR) [--config FILE] [--set key=value ...]``: carry
finished runs over a change of the run identity's encoding, without retraining.

Two earlier stamps are carried over (``CARRIED_VERSIONS``): the *legacy* hash of a run stamped before
run identity v1, and a v1 hash, which hashed the data's paths (a moved results folder lost its runs).
Re-stamping one run folder:

1. its checkpoint must carry the legacy or v1 hash of the folder's own ``config.yaml`` (the weights
   belong to that config) or already the current identity (nothing to do);
2. that stored config, read in v2's terms (``upgrade_stored``: v1's loader split the data by worker,
   and a data file that is the workflow's own takes the identity the workflow now gives it), must be
   *equivalent* to the config the workflow would now train for the folder's group, variant, size
   and seed (same identity); else it is refused naming the first differing key;
3. then the checkpoint's hash is rewritten (atomically; weights untouched; the summary's data counts
   copied into it, so a later resume keeps them), then ``config.yaml`` in v2's terms, then
   summary.json's hash. A re-stamp cut between those writes is finished by the next one. The
   folder's writer lock is held throughout (argent.runs.hold_writer): a folder a trainer is writing
   is refused, naming it.

A run stamped under any other older identity *version* is refused: that bump meant a value's meaning
changed, so only a retrain makes the run match its config. Snakemake keeps the old hash as the train
job's ``hash`` param; the verb prints the ``snakemake --cleanup-metadata`` line that drops it.

Modules: ``stamp`` (one folder checked and re-stamped: ``restamp_run``, ``upgrade_stored``), ``cli`` (the
verb); import each name from its module (the package re-exports nothing). A verb above the plan and the
engine (docs/architecture.md, "Layers"): it asks the plan which config the workflow now trains into a
folder, and writes the checkpoint as the trainer does.
"""
