"""``argent check --config FILE``: fail fast, before the expensive part (the verb: ``cli``).

Validates the whole workflow config (every run's resolved config), every data path of what the
config enables (training shards, evaluated benchmarks), reads a few records of each data set
through its real reader, checks the device and the free disk. The workflow runs it as its first job.
It refuses what a job would refuse (or skip without a word): a device the machine lacks (``train.device``,
a group's override, ``clean.device``), a CPU run whose memory need exceeds the machine's
(argent/models/memory.py, a lower bound), a folder where ``data.train_shards`` wants shard files, and a
``tune.objective`` metric its validation benchmark does not write (when the study runs).

A benchmark is required unless its entry says ``optional: true``: a missing required one is an
error naming the key and the path; a missing optional one is one printed line. Paths under the
results folder or the embedded benchmark's folder are made by the workflow itself and not checked.

Modules: ``runs`` (each run as its job would start it: its config, memory, data streams, devices; the study's
objective; the claims' runs), ``data`` (the data a job reads, through its real readers), ``preflight`` (every
check, the one refusal listing every problem), ``cli`` (the verb). A verb over every stage, on top
(docs/architecture.md, "Layers"). Import each name from its module: the package re-exports nothing.
"""
