# The workflow is workflow/Snakefile (the Snakemake catalog layout). `include:` would not carry its default
# target (rule all) into this file, so the include is spelt out with it: `snakemake` here runs the same DAG.
workflow.include("workflow/Snakefile", overwrite_default_target=True)
