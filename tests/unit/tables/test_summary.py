"""The end of a workflow run (argent/tables/summary.py, called by workflow/rules/summary.smk): the tables
written, the primary claims decided, this run's `mlflow ui` and report commands; and the estimate of
the time left printed at its start, from the job records of earlier runs."""

from __future__ import annotations

from pathlib import Path

from argent.tables.summary import RunInfo, count_claims, eta_line, mlflow_command, print_summary, summary_lines

CLAIMS_CSV = ("id,family,verdict\n"
              "a,primary,reproduced\nb,primary,inconclusive\nc,primary,equivalent\nd,primary,inconclusive\n"
              "e,exploratory,reproduced\nf,,not run\n")
TSV = ("s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
       "{wall}\t0:00:01\t100\t1\t1\t1\t0\t0\t50\t{cpu}\n")  # a Snakemake job record


def _results(tmp_path: Path) -> Path:
    """A fake results folder: three tables (claims only as .md and .csv), a job record per kind."""
    results = tmp_path / "results"
    tables = results / "tables"
    tables.mkdir(parents=True)
    for name in ("main", "cost", "claims"):
        (tables / f"{name}.md").write_text(f"# {name}\n")
    for name in ("main", "cost"):
        (tables / f"{name}.html").write_text("<html></html>")
    (tables / "claims.csv").write_text(CLAIMS_CSV)
    for path, wall, cpu in (("train/main/clip-tiny-seed0.tsv", 100, 180),
                            ("train/main/argent-tiny-seed0.tsv", 300, 600),
                            ("evaluate/main/clip-tiny-seed0.tsv", 30, 60)):
        record = results / "benchmarks" / path
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(TSV.format(wall=wall, cpu=cpu))
    return results


def test_the_summary_names_the_tables_the_claims_and_both_commands(tmp_path, monkeypatch):
    results = _results(tmp_path)
    monkeypatch.chdir(tmp_path)
    lines = summary_lines(RunInfo(results, "", [str(tmp_path / "config" / "quick.yaml"), "/elsewhere/mine.yaml"], []))
    tables = results / "tables"
    assert lines[:4] == ["tables: 3 written", f"  {tables / 'claims.md'}", f"  {tables / 'main.html'}",
                         f"  {tables / 'cost.html'}"]  # claims first, the HTML page where there is one
    assert lines[4] == "claims: 2 of 4 primary rows decided (2 inconclusive, 1 reproduced, 1 equivalent)"
    assert lines[5] == (f"MLflow: mlflow ui --backend-store-uri sqlite:///{(results / 'mlflow.db').resolve()} "
                        f"--host 127.0.0.1")
    # one --configfile flag for both files (a second flag would replace the first's list)
    assert lines[6] == ("report: snakemake --cores all --report report.html --configfile config/quick.yaml "
                        "/elsewhere/mine.yaml")


def test_no_claims_table_says_why_and_the_store_follows_tracking_uri(tmp_path, monkeypatch):
    results = _results(tmp_path)
    (results / "tables" / "claims.csv").unlink()
    monkeypatch.chdir(tmp_path)
    run = RunInfo(results, "sqlite:///store/m.db", [], ["train.steps=5"], left_out={"claims": "one seed"})
    lines = summary_lines(run)
    assert "claims: no claims table: one seed" in lines
    assert f"MLflow: mlflow ui --backend-store-uri sqlite:///{tmp_path / 'store' / 'm.db'} --host 127.0.0.1" in lines
    assert "report: snakemake --cores all --report report.html --config train.steps=5" in lines
    assert mlflow_command(results, None).startswith("off (tracking.enabled: false)")
    assert mlflow_command(results, "http://host:5000") == "open http://host:5000 (this run's MLflow tracking server)"
    assert count_claims(results / "tables" / "claims.csv") is None


def test_the_summary_prints_in_a_panel(tmp_path, capsys):
    print_summary(RunInfo(_results(tmp_path)))
    err = capsys.readouterr().err
    assert "what this run wrote" in err and "2 of 4 primary rows decided" in err


def test_the_estimate_of_the_time_left_from_the_job_records(tmp_path):
    records = _results(tmp_path) / "benchmarks"
    # a clip and an argent training (their own records), a meru one (its rule's mean), an evaluation, and a
    # tables job no earlier run recorded: (180 + 600 + 390 + 60) CPU s over 2 cores
    jobs = [("train", "clip"), ("train", "argent"), ("train", "meru"), ("evaluate", "clip"), ("tables", "")]
    line = eta_line(records, jobs, cores=2)
    assert line == (f"argent: about 10 min of work left for 4 of 5 jobs (their kind's mean CPU seconds in {records} "
                    f"÷ 2 cores); 1 job(s) of a kind never recorded here not counted")
    assert eta_line(records, [("tables", "")], cores=2) == ""  # nothing known: no line
    assert eta_line(tmp_path / "none", jobs, cores=2) == ""


def test_the_summary_links_the_runs_page_of_this_runs_experiment(tmp_path, monkeypatch):
    # MLflow 3.17 opens an experiment on its GenAI view unless the link says model training
    results = _results(tmp_path)
    monkeypatch.chdir(tmp_path)
    record = results / "runs" / "main" / "clip-tiny" / "seed0" / "mlflow_run.json"
    record.parent.mkdir(parents=True)
    record.write_text('{"run_id": "abc", "experiment_id": "3"}')
    lines = summary_lines(RunInfo(results, "", [], []))
    assert "  then open http://127.0.0.1:5000/#/experiments/3/runs?workflowType=machine_learning" in lines
    assert not any("then open" in line for line in summary_lines(RunInfo(results, "http://host:5000", [], [])))
