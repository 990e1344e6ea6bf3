"""The configuration, every stage's config API: the workflow config read through one door, its sections
typed, and one run's ``ExperimentConfig``.

Modules, bottom up (each imports only those before it, and from argent.runs only the paths of
``layout`` and the hashing of ``identity``):

- ``convert``: ``ConfigError``; the strict dict -> dataclass conversion (``from_dict``, ``check_partial``,
  ``check_range``); ``named`` (the ``"module:attribute"`` strings registries hold) is ``argent.lazy``'s;
- ``registry``: ``SECTIONS``, the one registry of the workflow config's top-level sections, and
  ``setting`` (one value, else its type's default);
- ``loading``: strict YAML and the merge layers (``config/config.yaml``, the file, ``--set``);
- ``limits``: range checks the types cannot express (head arithmetic, devices, seeds, warm-up);
- ``loss_kinds``: the registry of entailment loss kinds and the variant fields each reads;
- ``variant``: a variant, a model family or ablation as data (``VariantConfig``);
- ``experiment``: the run-level sections (model, optim, train, data, tracking) and ``ExperimentConfig``,
  ``IDENTITY_VERSION``;
- ``derived_paths``: the paths derived from ``results:`` and ``hiershapes.out``, filled in once;
- ``workflow``: ``load_config``, the one door to the workflow config, and ``WorkflowConfig``;
- ``group_entries``: the ``runs:`` and ``groups:`` sections as written, typed;
- ``groups``: the experiment groups resolved, the config each group's jobs read and the identity of each of its
  runs (read by the plan and by ``argent evaluate``; import its names from it: ``run_identity`` there is a
  group's run, ``argent.runs.run_identity`` the identity's values).

Torch-free: the Snakefile and the DAG build read all of it while they parse. Names are imported on
first use (``argent.lazy``); inside the package a module imports its siblings by their own path.
docs/config.md: the sections, the merge layers, how to add a key or a section.
"""

from typing import TYPE_CHECKING

from argent.lazy import lazy_exports

if TYPE_CHECKING:  # the public names, imported on first use (argent.lazy); import-linter sees them
    from argent.config.convert import ConfigError, check_partial, check_range, config_keys, from_dict
    from argent.config.derived_paths import derive_paths
    from argent.config.experiment import (
        CARRIED_VERSIONS,
        IDENTITY_VERSION,
        MODEL_SIZES,
        BatchingConfig,
        DataConfig,
        ExperimentConfig,
        ModelConfig,
        OptimConfig,
        TrackingConfig,
        TrainConfig,
        check_name,
        experiment_from_dict,
        experiment_from_resolved,
        load_variants,
        model_from,
        variant_from,
        variant_layers,
    )
    from argent.config.limits import check_device, check_model_arithmetic, check_schedule, check_seed, threads
    from argent.config.loading import (
        DEFAULT_CONFIG,
        check_duplicate_keys,
        deep_merge,
        load_merged_config,
        load_workflow_config,
        load_yaml,
        parse_override,
        strict_yaml,
    )
    from argent.config.loss_kinds import ENTAILMENT_KINDS, KIND_FIELDS, PAIR_FIELDS, EntailmentKind, readers_of
    from argent.config.registry import (
        SECTIONS,
        WORKFLOW_SECTIONS,
        Section,
        check_sections,
        field_default,
        section_of,
        section_type,
        setting,
    )
    from argent.config.variant import INTRA_PAIRS, PAIR_TYPES, CementConfig, VariantConfig, check_variant_keys
    from argent.config.workflow import TopLevel, WorkflowConfig, check_snakemake_config, load_config, parse_section
    from argent.lazy import named

__all__ = [
    "BatchingConfig", "CARRIED_VERSIONS", "CementConfig", "ConfigError", "DEFAULT_CONFIG", "DataConfig",
    "ENTAILMENT_KINDS", "EntailmentKind", "ExperimentConfig", "IDENTITY_VERSION", "INTRA_PAIRS", "KIND_FIELDS",
    "MODEL_SIZES", "ModelConfig", "OptimConfig", "PAIR_FIELDS", "PAIR_TYPES", "SECTIONS", "Section", "TopLevel",
    "TrackingConfig", "TrainConfig", "VariantConfig", "WORKFLOW_SECTIONS", "WorkflowConfig", "check_device",
    "check_duplicate_keys", "check_model_arithmetic", "check_name", "check_partial", "check_range",
    "check_schedule", "check_sections", "check_seed", "check_snakemake_config", "check_variant_keys", "config_keys",
    "deep_merge", "derive_paths", "experiment_from_dict", "experiment_from_resolved", "field_default", "from_dict",
    "load_config", "load_merged_config", "load_variants", "load_workflow_config", "load_yaml", "model_from",
    "named", "parse_override", "parse_section", "readers_of", "section_of", "section_type", "setting",
    "strict_yaml", "threads", "variant_from", "variant_layers",
]
__getattr__, __dir__ = lazy_exports(__name__)
