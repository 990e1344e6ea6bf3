# The start of a run estimates the work left from the job records of earlier runs; its end says what
# it wrote (the tables, the claims decided, the MLflow and report commands). The logic is
# argent/tables/summary.py's; these handlers only hand it Snakemake's values. Neither runs on a dry run.
from argent.tables.summary import RunInfo, eta_line, print_summary


onstart:
    try:  # each job this run executes as (rule, variant); variant "" for a job of no run
        _jobs = [(job.rule.name, str(getattr(job.wildcards, "variant", "") or ""))
                 for job in workflow.dag.needrun_jobs()]
        _cores = workflow.resource_settings.cores  # None on a cluster: its jobs' cores are not this machine's
        _eta = eta_line(Results(RESULTS).job_records, _jobs, _cores) if _cores else ""
    except Exception as err:  # Snakemake's DAG interface may change; an estimate must never stop a run
        _eta = f"argent: no estimate of the time left ({type(err).__name__}: {err})"
    if _eta:
        print(_eta, file=sys.stderr)


onsuccess:
    print_summary(
        RunInfo(
            results=RESULTS,
            tracking_uri=ARGENT_DAG.setting("tracking", "uri") if ARGENT_DAG.setting("tracking", "enabled") else None,
            configfiles=[str(f) for f in workflow.config_settings.configfiles],
            config_args=list(workflow.config_settings.config_args or []),
            left_out=ARGENT_DAG.tables.left_out,
        )
    )
