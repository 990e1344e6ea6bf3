"""A run's folder and its records: where every output of a workflow lives, how a run folder is read and
written, a run's identity, and Snakemake's job records.

Modules:

- ``layout``: the results layout, paths only (``Results``, ``RunFolder``, ``run_dir``, ``eval_dir``,
  ``CleanFolder``, ``HiershapesFolder``, ``is_under``, the names that become path components); no other
  module spells one of its file names;
- ``identity``: a run's identity, the values off their pinned defaults, and its hash (docs/reliability.md §11);
- ``folder``: reading and writing a run folder's files (config, metrics, checkpoint, provenance; the
  one-writer lock; the checkpoint's stamp checked against the config);
- ``staging``: starting, resuming and promoting a run in its folder (``.staging/``, ``resume_state``);
- ``job_records``: the one reader of Snakemake's job records and the one spelling of a run's job name.

``layout``, ``identity`` and ``job_records`` are torch-free (the Snakefile imports them while it parses)
and sit below argent.config; ``folder`` and ``staging`` read the typed config and torch checkpoints and
sit above it (pyproject.toml, [tool.importlinter]). The trained model of a folder is
``argent.models.trained.load_model``; re-stamping a folder of an older identity is the verb
``argent restamp`` (argent/restamp/). Names are imported on first use (``argent.lazy``).
"""

from argent.lazy import lazy_exports

_MODULES = {
    "argent.runs.layout": (
        "CHECKPOINT", "CONFIG", "CURVES", "DEFAULT_HIERSHAPES", "DEFAULT_RESULTS", "EFFECTIVE_CONFIG", "EMBEDDED",
        "EVAL_DIR", "IMAGE_CACHE_DIR", "METRICS", "MLFLOW_RECORD", "NAME_RE", "NEGATIVES_DIR", "PRETRAINED_GROUP",
        "PROVENANCE", "REPLACED", "REPLACING", "RESERVED_DATA_NAMES", "RUNS_DIR", "SIZE_RE", "STAGING", "STUDY_BEST",
        "STUDY_SUMMARY", "STUDY_TRIALS", "SUMMARY", "VAL", "WRITER_LOCK", "CleanFolder", "HiershapesFolder", "Results",
        "RunFolder", "default_tracking_uri", "eval_dir", "eval_dir_of", "is_under", "pretrained_eval_dir",
        "probe_result", "results_tracking_uri", "run_dir", "run_name", "run_parts", "split_run"),
    "argent.runs.identity": (
        "ABSENT", "EXCLUDED", "EXCLUDED_V1", "PINNED_FILE", "canonical_json", "content_digest", "current_defaults",
        "first_difference", "identity_hash", "identity_of", "legacy_hash", "load_pinned", "missing_pins", "pin_new",
        "run_identity", "v1_hash"),
    "argent.runs.job_records": (
        "LARGEST", "NOT_MEASURED", "WALL", "JobRecord", "JobRecordError", "RunJob", "job_record_files",
        "job_record_path", "parse_run_job", "read_job_record", "read_job_records", "run_job", "run_job_record"),
    "argent.runs.folder": (
        "CheckpointError", "ResumeMismatch", "RunFolderBusy", "RunNotFound", "check_hash", "hardware_class",
        "hardware_classes", "hold_writer", "read_checkpoint", "read_metrics", "read_provenance", "read_run_config",
        "stamped_version", "write_provenance"),
    "argent.runs.staging": (
        "PROMOTED", "clean_stale", "finish_promotion", "finished", "holds_a_run", "promote", "resume_state"),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
