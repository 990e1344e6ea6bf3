"""The progress lines (argent/plan/progress.py): one per job start and end, jobs done / total, and the time
left priced from the results folder's job records, this run's finished jobs and the plan's step time."""

import io
import logging

from argent.plan.progress import JobCosts, Progress, ProgressHandler, duration, job_label


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _records(results, rows: dict[str, float]) -> None:
    """Job records as Snakemake's benchmark: directive writes them (wall s, ..., cpu_time last)."""
    for name, cpu in rows.items():
        path = results / "benchmarks" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
                        f"{cpu}\t0:01:00\t100\t100\t100\t100\t0\t0\t100\t{cpu}\n")


def _job(jobid: int, rule: str, **wildcards) -> dict:
    return {"jobid": jobid, "rule_name": rule, "wildcards": wildcards, "threads": 1}


def test_each_start_and_end_is_one_line_with_the_count_and_the_time_left(tmp_path):
    results = tmp_path / "results"
    _records(results, {"train/main/clip-tiny-seed0.tsv": 100.0, "evaluate/main/clip-tiny-seed0.tsv": 20.0})
    clock = Clock()
    p = Progress(JobCosts(results / "benchmarks"), cores=2, clock=clock)
    p.event("run_info", {"stats": {"train": 2, "evaluate": 2, "tables": 1, "total": 5}})
    (line,) = p.event("job_info", _job(1, "train", group="main", variant="clip", size="tiny", seed=1))
    # 2 trainings × 100 s + 2 evaluations × 20 s on 2 cores; the tables never ran here
    assert line == "argent: [0/5] start  train main/clip-tiny/seed1 · about 2 min left (+1 job(s) of a kind not yet timed)"
    clock.now = 60.0
    assert p.event("job_finished", {"job_id": 1}) == []  # the line waits for Snakemake's count
    (line,) = p.event("progress", {"done": 1, "total": 5})
    # this run's training took 60 s: the mean of 100 and 60 prices the other one
    assert line.startswith("argent: [1/5] done   train main/clip-tiny/seed1 in 60 s · about 60 s left")


def test_a_training_with_no_record_is_priced_by_the_plan_and_an_unknown_kind_is_said(tmp_path):
    p = Progress(JobCosts(tmp_path / "none", train_seconds=600.0), cores=1, clock=Clock())
    p.event("run_info", {"stats": {"train": 3, "total": 3}})
    (line,) = p.event("job_info", _job(7, "train", group="main", variant="meru", size="tiny", seed=0))
    assert line.endswith("· about 30 min left")
    p = Progress(JobCosts(tmp_path / "none"), cores=1, clock=Clock())
    p.event("run_info", {"stats": {"synth_hiershapes": 1, "total": 1}})
    (line,) = p.event("job_info", _job(0, "synth_hiershapes"))
    assert line == "argent: [0/1] start  synth_hiershapes · time left unknown until a job of each kind has run here"


def test_a_failed_job_is_said_and_not_counted_as_a_measurement(tmp_path):
    clock = Clock()
    p = Progress(JobCosts(tmp_path), cores=None, clock=clock)
    p.event("job_info", _job(3, "evaluate", group="main", variant="clip", size="tiny", seed=0))
    clock.now = 5.0
    p.event("job_error", {"jobid": 3})
    assert p.event("progress", {"done": 0, "total": 4}) == ["argent: [0/4] failed evaluate main/clip-tiny/seed0 after 5 s"]
    assert p.costs.of("evaluate") is None


def test_the_handler_reads_snakemakes_records_and_ignores_the_rest(tmp_path):
    out = io.StringIO()
    handler = ProgressHandler(tmp_path / "results", cores=2, stream=out)
    logger = logging.getLogger("argent-test-progress")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.info("plain text, no event")
    logger.info(" Rule: probe", extra={"event": "job_info", **_job(2, "probe", group="main", variant="clip",
                                                                            size="tiny", seed="0")})
    logger.info(None, extra={"event": "progress", "done": "x", "total": 2})  # a malformed record: no line, no error
    logger.removeHandler(handler)
    assert out.getvalue().splitlines() == [
        "argent: [0/0] start  probe main/clip-tiny/seed0 · time left unknown until a job of each kind has run here"]


def test_durations_and_labels_read_as_a_person_writes_them():
    assert (duration(44.6), duration(600), duration(3900)) == ("45 s", "10 min", "1 h 05 min")
    assert job_label("mine_negatives", {"parquet": "/r/data/negatives/hs_train.parquet"}) == "mine_negatives hs_train"
    assert job_label("tune_worker", {"study": "s", "worker": 1}) == "tune_worker study=s worker=1"


def test_the_target_rule_gets_no_line(tmp_path):
    p = Progress(JobCosts(tmp_path), cores=1, clock=Clock())
    assert p.event("job_info", _job(0, "all")) == []
    p.event("job_finished", {"job_id": 0})
    assert p.event("progress", {"done": 1, "total": 1}) == []
