"""A run's folder and its records: where every output of a workflow lives, how a run folder is read and
written, a run's identity, and Snakemake's job records.

Modules:

- ``layout``: the results layout, paths only (``Results``, ``RunFolder``, ``run_dir``, ``eval_dir``,
  ``CleanFolder``, ``is_under``, the names that become path components); no other module spells one of its file
  names; ``embedded``: the embedded data set's (``HiershapesFolder``: what ``argent synth`` writes, what each
  protocol reads of it);
- ``workflow_lock``: one Snakemake per results folder;
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

from typing import TYPE_CHECKING

from argent.lazy import lazy_exports

if TYPE_CHECKING:  # the public names, imported on first use (argent.lazy); import-linter sees them
    from argent.runs.embedded import DEFAULT_HIERSHAPES, EMBEDDED, VAL, HiershapesFolder
    from argent.runs.folder import (
        CheckpointError,
        ResumeMismatch,
        RunFolderBusy,
        RunNotFound,
        check_hash,
        hardware_class,
        hardware_classes,
        hold_writer,
        read_checkpoint,
        read_metrics,
        read_provenance,
        read_run_config,
        stamped_version,
        write_provenance,
    )
    from argent.runs.identity import (
        ABSENT,
        EXCLUDED,
        EXCLUDED_V1,
        PINNED_FILE,
        canonical_json,
        content_digest,
        current_defaults,
        first_difference,
        identity_hash,
        identity_of,
        legacy_hash,
        load_pinned,
        missing_pins,
        pin_new,
        run_identity,
        v1_hash,
    )
    from argent.runs.job_records import (
        LARGEST,
        NOT_MEASURED,
        WALL,
        JobRecord,
        JobRecordError,
        RunJob,
        job_record_files,
        job_record_path,
        parse_run_job,
        read_job_record,
        read_job_records,
        run_job,
        run_job_record,
    )
    from argent.runs.layout import (
        CHECKPOINT,
        CONFIG,
        CURVES,
        DEFAULT_RESULTS,
        EFFECTIVE_CONFIG,
        EVAL_DIR,
        IMAGE_CACHE_DIR,
        METRICS,
        MLFLOW_RECORD,
        NAME_RE,
        NEGATIVES_DIR,
        PRETRAINED_GROUP,
        PROVENANCE,
        REPLACED,
        REPLACING,
        RESERVED_DATA_NAMES,
        RUNS_DIR,
        SIZE_RE,
        STAGING,
        STUDY_BEST,
        STUDY_SUMMARY,
        STUDY_TRIALS,
        SUMMARY,
        WORKFLOW_LOCK,
        WRITER_LOCK,
        CleanFolder,
        Results,
        RunFolder,
        default_tracking_uri,
        eval_dir,
        eval_dir_of,
        is_under,
        pretrained_eval_dir,
        probe_result,
        results_tracking_uri,
        run_dir,
        run_name,
        run_parts,
        split_run,
    )
    from argent.runs.staging import (
        PROMOTED,
        clean_stale,
        finish_promotion,
        finished,
        holds_a_run,
        promote,
        resume_state,
    )

__all__ = [
    "ABSENT", "CHECKPOINT", "CONFIG", "CURVES", "CheckpointError", "CleanFolder", "DEFAULT_HIERSHAPES",
    "DEFAULT_RESULTS", "EFFECTIVE_CONFIG", "EMBEDDED", "EVAL_DIR", "EXCLUDED", "EXCLUDED_V1", "HiershapesFolder",
    "IMAGE_CACHE_DIR", "JobRecord", "JobRecordError", "LARGEST", "METRICS", "MLFLOW_RECORD", "NAME_RE",
    "NEGATIVES_DIR", "NOT_MEASURED", "PINNED_FILE", "PRETRAINED_GROUP", "PROMOTED", "PROVENANCE", "REPLACED",
    "REPLACING", "RESERVED_DATA_NAMES", "RUNS_DIR", "Results", "ResumeMismatch", "RunFolder", "RunFolderBusy",
    "RunJob", "RunNotFound", "SIZE_RE", "STAGING", "STUDY_BEST", "STUDY_SUMMARY", "STUDY_TRIALS", "SUMMARY", "VAL",
    "WALL", "WORKFLOW_LOCK", "WRITER_LOCK", "canonical_json", "check_hash", "clean_stale", "content_digest", "current_defaults",
    "default_tracking_uri", "eval_dir", "eval_dir_of", "finish_promotion", "finished", "first_difference",
    "hardware_class", "hardware_classes", "hold_writer", "holds_a_run", "identity_hash", "identity_of", "is_under",
    "job_record_files", "job_record_path", "legacy_hash", "load_pinned", "missing_pins", "parse_run_job", "pin_new",
    "pretrained_eval_dir", "probe_result", "promote", "read_checkpoint", "read_job_record", "read_job_records",
    "read_metrics", "read_provenance", "read_run_config", "results_tracking_uri", "resume_state", "run_dir",
    "run_identity", "run_job", "run_job_record", "run_name", "run_parts", "split_run", "stamped_version", "v1_hash",
    "write_provenance",
]
__getattr__, __dir__ = lazy_exports(__name__)
