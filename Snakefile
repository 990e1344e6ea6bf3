# argent: data -> (clean, negatives) -> train -> evaluate -> tables. Every arrow is a file.
# `snakemake --cores all` runs config/config.yaml (the embedded CPU default);
# `snakemake --cores all --configfile config/smoke.yaml` is the CI-size run.
# The runs come from the config's experiment groups (argent/plan/groups.py); every DAG build prints
# the groups left out (one line each) and the one-line cost (`argent plan` gives the table).
from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

from argent.typed import ConfigError, check_duplicate_keys

min_version("9.0")


configfile: "config/config.yaml"


# Snakemake's own YAML reader keeps the last of a repeated key silently: refuse it, naming file and line.
try:
    check_duplicate_keys(workflow.configfiles)
except ConfigError as err:
    raise WorkflowError(str(err)) from None  # one message, no Python frames
validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/check.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/clean.smk"
include: "workflow/rules/negatives.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/tune.smk"
include: "workflow/rules/probe.smk"
include: "workflow/rules/tables.smk"


rule all:
    input:
        preflight=PREFLIGHT,
        tables=rules.tables.output,
    default_target: True
