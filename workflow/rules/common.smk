# Glue only: the workflow's decisions live in argent.plan.dag (tested without Snakemake); here they
# are resolved once and adapted to Snakemake's wildcards.
import atexit
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from argent.config import ConfigError, setting
from argent.config.groups import RunKey
from argent.io import ArgentError, write_text_if_changed
from argent.plan.dag import build_dag, stable_hash
from argent.runs import SUMMARY, Results, job_record_path, run_job_record
from argent.runs import run_dir as layout_run_dir
from argent.runs.workflow_lock import hold_workflow
from argent.tablespec.outputs import report_categories
from snakemake.exceptions import WorkflowError

# Relative paths in the config (variants, claims, data) are the working directory's, as `configfile:` is:
# the repository root, or the folder a module deployment runs in (config/README.md); not workflow.basedir.
ROOT = Path.cwd()
RESULTS = Path(setting(config, "results"))  # as written, else its one default (argent.config.SECTIONS)

# `snakemake -n` plans and writes nothing. Snakemake parses this file before it picks the executor, so
# `workflow.dryrun` is still False here; the command line's -n is in the output settings it was built with.
DRY_RUN = bool(getattr(workflow.output_settings, "dryrun", False))

# One Snakemake per results folder (argent.runs.workflow_lock): a second one (another clone's, on the same
# results:) stops here, naming the first, before the DAG build writes a file or a job of it replaces the
# first's logs. Only the process the user started holds it: the jobs that parse this file again (Slurm's
# remote jobs, group jobs) are the holder's own. A dry run takes nothing; it only warns when it is busy.
if workflow.is_main_process:
    try:
        _note = hold_workflow(RESULTS, f"snakemake in {ROOT}", dry_run=DRY_RUN)
    except ArgentError as err:
        raise WorkflowError(str(err)) from None  # one message, no Python frames
    if _note:
        print(_note, file=sys.stderr)

# Rules call the `argent` CLI of the environment Snakemake runs in, whatever the caller's PATH.
shell.prefix(f"export PATH={shlex.quote(str(Path(sys.executable).parent))}:$PATH; ")

try:
    ARGENT_DAG = build_dag(config, ROOT)
except ConfigError as err:
    raise ValueError(str(err)) from None
for _line in ARGENT_DAG.notes:  # groups left out, the cost, optional data skipped: one line each
    print(_line, file=sys.stderr)
if not DRY_RUN:
    for _path, _text in ARGENT_DAG.files().items():  # the config files the verbs read (params, not inputs)
        write_text_if_changed(_path, _text)
elif ARGENT_DAG.stale:
    # Snakemake has no record of a run trained by hand: only an input newer than its summary plans the
    # retraining. A dry run puts those markers in a temporary folder, removed at exit, not in results.
    ARGENT_DAG.markers = Path(tempfile.mkdtemp(prefix="argent-dry-run-identity-"))
    atexit.register(shutil.rmtree, ARGENT_DAG.markers, True)
# A finished run of another identity than the plan's (its summary's hash): a marker newer than its
# summary, an input of its train job (argent.plan.targets.identity_mismatches); no run folder is touched.
ARGENT_DAG.write_identity_markers()

PLAN = ARGENT_DAG.plan  # the runs to train (argent/plan/groups.py)

# One line per job start and end, with jobs done / total and the time left (argent/plan/progress.py): a
# handler on Snakemake's logger, which gets the events a logger plugin gets (Snakemake finds a plugin
# package only in a non-editable install). Only in the process the user started, not on a dry run.
if workflow.is_main_process and not DRY_RUN:
    from argent.plan.cost import train_job_seconds
    from argent.plan.progress import ProgressHandler
    from snakemake.logging import logger as _snakemake_logger

    _snakemake_logger.addHandler(ProgressHandler(RESULTS, workflow.resource_settings.cores,
                                                 train_job_seconds(ARGENT_DAG.workflow, PLAN, ROOT)))
R = ARGENT_DAG.r
EFFECTIVE_CONFIG = ARGENT_DAG.effective_config
# The preflight (argent check) is the DAG's first job (check.smk says why only `all` depends on it).
PREFLIGHT = str(Results(RESULTS).preflight)
WORDNET_ZIP = R("nltk_data", "corpora", "wordnet.zip")

# A run's summary.json (the train rule's output, written last: it marks a finished run), from the one layout
# (argent/runs/layout.py); each rule file spells its other outputs' patterns through it.
RUN_SUMMARY = str(layout_run_dir(RESULTS, "{group}", "{variant}", "{size}", "{seed}") / SUMMARY)

# The report's menu: one category per table, numbered among those this config makes (argent/tablespec/outputs.py).
REPORT_CATEGORY = report_categories(ARGENT_DAG.tables.written, bool(ARGENT_DAG.cleaned_datasets()))


def job_record(stage, *parts):
    """A job's record, the file of Snakemake's `benchmark:` (argent/runs/job_records.py); the last part names the job."""
    return str(job_record_path(RESULTS, stage, *parts))


def run_job_record_of(stage):
    """The job record of a run's job of `stage`, on the rule's wildcards (the job name's one spelling)."""
    return str(run_job_record(RESULTS, stage, "{group}", "{variant}", "{size}", "{seed}"))


def key_of(wildcards):
    return RunKey(wildcards.group, wildcards.variant, wildcards.size, int(wildcards.seed))


def run_dir(wildcards):
    return ARGENT_DAG.run_dir(key_of(wildcards))


def run_resource(wildcards, key):
    """The group's runs.<key>, else its one default (argent.config.group_entries.RunResources)."""
    return ARGENT_DAG.run_resource(wildcards.group, key)


def run_hash(wildcards):
    """The run's identity hash (the train rule's param): a config that does not resolve is one message."""
    try:
        return ARGENT_DAG.run_hash(key_of(wildcards))
    except ConfigError as err:
        raise ValueError(str(err)) from None


def tuning_resource(key, default):
    """The tuning group's runs.<key>: a worker trains the study's trials on that group's budget."""
    group = ARGENT_DAG.tuning_group()
    return ARGENT_DAG.run_resource(group, key) if group else default
