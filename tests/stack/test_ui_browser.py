"""The UIs a person looks at, in a real headless Chromium (Debian's chromium + chromium-driver, driven
by Selenium): the MLflow UI of the tracking server, the Snakemake HTML report, optuna-dashboard."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml
from stackutil import ROOT, argent, child_env, free_port, workflow_config

from argent.runs import eval_dir_of, run_dir

pytestmark = pytest.mark.stack

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
# Where a copy of each screenshot goes for people to look at (CI keeps the tmp folder copies too).
SHOTS = Path(os.environ.get("ARGENT_SCREENSHOTS", ROOT / "results" / "screenshots"))


@pytest.fixture
def browser(tmp_path: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert CHROMIUM.is_file() and CHROMEDRIVER.is_file(), "apt-get install chromium chromium-driver (.ci/run does)"
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must not look for a browser download
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    # The flags this machine needs: root (no sandbox), no GPU, and no background connections that a
    # closed network refuses.
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'chromium'}", "--window-size=2200,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for_text(driver, texts: list[str], timeout: float = 120) -> str:
    """The page's visible text once every one of ``texts`` shows (the page's scripts have run)."""
    from selenium.webdriver.common.by import By

    deadline, body = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        body = driver.find_element(By.TAG_NAME, "body").text
        if all(t in body for t in texts):
            return body
        time.sleep(1)
    raise AssertionError(f"never saw {texts} on {driver.current_url}; the page shows:\n{body[:3000]}")


def screenshot(driver, tmp_path: Path, name: str) -> Path:
    shot = tmp_path / f"{name}.png"
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000, "an empty screenshot"
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, SHOTS / shot.name)
    print(f"screenshot: {shot} (copy: {SHOTS / shot.name})")
    return shot


# The paper's comparison in the runs table: these evaluation columns, sorted by one of them.
EVAL_COLUMNS = ["eval/hs_zeroshot/top1", "eval/hs_zeroshot/tie", "eval/hs_zeroshot/lca", "eval/hs_zeroshot/jaccard"]
SORT_BY = "eval/hs_zeroshot/tie"
HIDDEN = ["Dataset", "Source", "Models"]  # default columns that say nothing about these runs
TAG_COLUMNS = ["family", "variant", "seed"]


def trained_and_evaluated(stack, shapes: Path, tmp_path: Path, experiment: str) -> dict[str, dict[str, float]]:
    """clip and argent trained (4 steps) and evaluated on the zero-shot benchmark, both logging to the
    stack's MLflow server as the workflow's jobs do: {variant: the evaluation JSON's metrics}."""
    config = workflow_config(tmp_path, shapes, stack["mlflow"], experiment)
    cfg = yaml.safe_load(config.read_text())
    test_split = shapes / "train" / "classification"
    cfg["benchmarks"]["hs_zeroshot"] = {"protocol": "zeroshot", "root": str(test_split),
                                        "taxonomy": str(test_split / "taxonomy.txt"), "templates": ["a {}"]}
    config.write_text(yaml.safe_dump(cfg))
    expected = {}
    for variant in ("clip", "argent"):
        out = run_dir(tmp_path / "results", "main", variant, "tiny", 0)
        proc = argent("train", "--config", str(config), "--variant", variant, "--size", "tiny", "--seed", "0",
                      "--out", str(out), "--threads", "1", "--set", "train.steps=4")
        assert proc.returncode == 0, proc.stderr[-3000:]
        proc = argent("evaluate", "--run", str(out), "--benchmark", "hs_zeroshot", "--config", str(config),
                      "--out-dir", str(eval_dir_of(out)), "--threads", "1")
        assert proc.returncode == 0 and "not sent to MLflow" not in proc.stderr, proc.stderr[-3000:]
        expected[variant] = json.loads((eval_dir_of(out) / "hs_zeroshot.json").read_text())["metrics"]
    return expected


def toggle_columns(driver, names: list[str]) -> None:
    """Tick (or untick) columns in the runs table's *Columns* menu, as a person does."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver.find_element(By.XPATH, "//button[normalize-space(.)='Columns']").click()
    for name in names:  # the menu draws only the entries in view: scroll each one in
        title = f"//span[contains(@class, 'tree-title') and normalize-space(text())='{name}']"
        deadline = time.monotonic() + 30
        while not driver.find_elements(By.XPATH, title):
            assert time.monotonic() < deadline, f"no column {name!r} in the Columns menu"
            time.sleep(0.5)
        item = driver.find_element(By.XPATH, title)
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", item)
        item.click()
    driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)


def runs_table(driver) -> list[dict[str, str]]:
    """The runs table as shown, top to bottom: {column id: cell text} per row (the grid draws the
    pinned run-name column and the rest as separate row elements; row-index joins them)."""
    from selenium.webdriver.common.by import By

    rows: dict[int, dict[str, str]] = {}
    for row in driver.find_elements(By.CSS_SELECTOR, "[role=row][row-index]"):
        cells = rows.setdefault(int(row.get_attribute("row-index")), {})
        for cell in row.find_elements(By.CSS_SELECTOR, "[role=gridcell]"):
            cells[cell.get_attribute("col-id")] = cell.text
    return [rows[i] for i in sorted(rows)]


def test_mlflow_ui_runs_table_shows_the_evaluation_metrics(stack, shapes, browser, tmp_path):
    import mlflow
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    experiment = f"stack-ui-{tmp_path.name}"
    expected = trained_and_evaluated(stack, shapes, tmp_path, experiment)
    client = mlflow.MlflowClient(tracking_uri=stack["mlflow"])
    exp_id = client.get_experiment_by_name(experiment).experiment_id

    # The landing page a run's summary links (argent.tables.summary.RUNS_PAGE): MLflow 3.17 opens every
    # experiment on its GenAI overview of traces unless the link names the model-training workflow;
    # with it, the two runs are there without a click.
    from argent.tables.summary import RUNS_PAGE

    browser.get(RUNS_PAGE.format(id=exp_id).replace("http://127.0.0.1:5000", stack["mlflow"]))
    wait_for_text(browser, ["clip-tiny-seed0", "argent-tiny-seed0", "Runs"])
    screenshot(browser, tmp_path, "mlflow_landing")

    # Sorted by an evaluation metric, highest first: the sort the UI's "Sort" menu writes into the URL.
    order = urllib.parse.quote(f"metrics.`{SORT_BY}`", safe="")
    browser.get(f"{stack['mlflow']}/#/experiments/{exp_id}/runs?orderByKey={order}&orderByAsc=false")
    wait_for_text(browser, ["clip-tiny-seed0", "argent-tiny-seed0", "2 matching runs", f"Sort: {SORT_BY}"])
    for close in browser.find_elements(By.CSS_SELECTOR, "button[aria-label='Close']"):
        if close.is_displayed():
            close.click()  # the assistant panel, which would hide half the table
    toggle_columns(browser, HIDDEN + EVAL_COLUMNS + TAG_COLUMNS)
    wait_for_text(browser, EVAL_COLUMNS)
    for column in EVAL_COLUMNS:  # double-click on a header's edge fits the column to its full name
        edge = browser.find_element(By.CSS_SELECTOR, f"[role=columnheader][col-id='metrics.`{column}`'] .ag-header-cell-resize")
        ActionChains(browser).double_click(edge).perform()
    browser.set_window_size(1900, 560)  # the table, not the empty page below it

    deadline = time.monotonic() + 60
    while True:  # the grid fills its cells after the columns appear
        table = runs_table(browser)
        shown = {row.get("attributes.`Run Name`", "").split("\n")[-1]: row for row in table}
        if all(row.get(f"metrics.`{m}`") for row in table for m in EVAL_COLUMNS) and len(table) == 2:
            break
        assert time.monotonic() < deadline, f"the evaluation columns never filled: {table}"
        time.sleep(1)
    screenshot(browser, tmp_path, "mlflow_ui_eval_columns")
    for variant, metrics in expected.items():
        row = shown[f"{variant}-tiny-seed0"]
        for column in EVAL_COLUMNS:
            value = metrics[column.rsplit("/", 1)[1]]
            assert float(row[f"metrics.`{column}`"]) == pytest.approx(value, rel=1e-9), (variant, column, row)
        assert row["tags.`variant`"] == variant and row["tags.`family`"] == variant, row
    key = SORT_BY.rsplit("/", 1)[1]
    names = [name for name in shown]
    assert names == sorted(names, key=lambda n: -expected[n.split("-")[0]][key]), f"not sorted by {SORT_BY}: {names}"
    hidden = {column for row in table for column in row}
    assert not {f"attributes.`{name}`" for name in HIDDEN} & hidden, hidden

    # A run's page: its evaluation metric beside the training ones.
    run_id = client.search_runs([exp_id], filter_string="attributes.run_name = 'argent-tiny-seed0'")[0].info.run_id
    browser.get(f"{stack['mlflow']}/#/experiments/{exp_id}/runs/{run_id}")
    wait_for_text(browser, ["argent-tiny-seed0", "Finished", "loss", EVAL_COLUMNS[0], "train.steps"])
    screenshot(browser, tmp_path, "mlflow_ui_run")


def snakemake_report(workdir: Path, out: Path) -> None:
    cmd = [sys.executable, "-m", "snakemake", "--configfile", "config/smoke.yaml", "--report", str(out)]
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=600, env=child_env())
    assert proc.returncode == 0 and out.is_file(), proc.stderr[-3000:]


def finished_smoke_workdir() -> Path:
    """A folder holding a finished smoke run: the Slurm test's, or the README test run's."""
    for candidate in (os.environ.get("ARGENT_SMOKE_WORKDIR", ""), str(ROOT)):
        if candidate and (Path(candidate) / "results" / "smoke" / "tables" / "main.md").is_file():
            return Path(candidate)
    pytest.fail("no finished smoke run to report on: run the README test command (tests/test_workflow_smoke.py) first")


def show_page(driver, file_name: str) -> str:
    """Click a result's eye: the report shows an HTML result in a frame of its main panel. The frame's
    HTML once its text has rendered (the driver is back on the report afterwards)."""
    from selenium.webdriver.common.by import By

    driver.find_element(By.XPATH, f"//td[contains(text(), '{file_name}')]/following-sibling::td//a[@iconname='eye']").click()
    deadline = time.monotonic() + 60
    while True:
        frames = driver.find_elements(By.TAG_NAME, "iframe")
        if frames:
            driver.switch_to.frame(frames[0])
            try:
                text, html = driver.find_element(By.TAG_NAME, "body").text, driver.page_source
            finally:
                driver.switch_to.default_content()
            if text.strip():
                return f"{text}\n{html}"
        assert time.monotonic() < deadline, f"{file_name}: the report never showed it"
        time.sleep(0.5)


def test_snakemake_report_shows_tables_and_figures(browser, tmp_path):
    from selenium.webdriver.common.by import By

    report = tmp_path / "report.html"
    snakemake_report(finished_smoke_workdir(), report)
    browser.get(report.as_uri())
    # the menu lists one category per table, claims first (workflow/rules/common.smk, REPORT_CATEGORY)
    wait_for_text(browser, ["Workflow", "1. Claims", "2. Main results (Table 2)", "8. Figures"])
    graph = [e for e in browser.find_elements(By.CSS_SELECTOR, "canvas") if e.size["height"] > 300]
    assert graph, "the rule graph was not drawn"  # Vega draws it on a canvas
    screenshot(browser, tmp_path, "snakemake_report")

    browser.find_element(By.XPATH, "//*[normalize-space(text())='1. Claims']").click()
    wait_for_text(browser, ["tables/claims.html"])
    claims = show_page(browser, "tables/claims.html")  # the README shows this screenshot
    assert "Claims of the papers" in claims and "Holm" in claims and "<table>" in claims, claims[:500]
    screenshot(browser, tmp_path, "snakemake_report_claims")

    browser.get(report.as_uri())
    wait_for_text(browser, ["2. Main results (Table 2)"])
    browser.find_element(By.XPATH, "//*[normalize-space(text())='2. Main results (Table 2)']").click()
    wait_for_text(browser, ["tables/main.html"])
    table = show_page(browser, "tables/main.html")
    assert "<th>row</th>" in table and "argent-tuned" in table, table[:500]  # the table as HTML, not markdown
    screenshot(browser, tmp_path, "snakemake_report_tables")

    browser.get(report.as_uri())
    wait_for_text(browser, ["8. Figures"])
    browser.find_element(By.XPATH, "//*[normalize-space(text())='8. Figures']").click()
    wait_for_text(browser, ["training_curves.png", "probe_exposure.png"])
    screenshot(browser, tmp_path, "snakemake_report_figures")
    xpath = "//td[contains(text(), 'training_curves.png')]/following-sibling::td//a[@iconname='eye']"
    browser.find_element(By.XPATH, xpath).click()  # the report shows the figure in its main panel
    deadline = time.monotonic() + 60
    drawn = "return Array.from(document.images).some(i => i.complete && i.naturalWidth > 200)"
    while not browser.execute_script(drawn):
        assert time.monotonic() < deadline, "the training-curves figure did not render"
        time.sleep(0.5)
    screenshot(browser, tmp_path, "snakemake_report_training_curves")


def test_optuna_dashboard_serves_a_study(stack, browser, tmp_path):
    import optuna

    study = optuna.create_study(study_name=f"dashboard-{tmp_path.name}", storage=stack["optuna"], direction="maximize")
    for value in (0.25, 0.5, 0.75):  # a study as argent tune leaves it: params, values, user attrs
        trial = study.ask()
        trial.suggest_float("entailment_weight", 0.0, 1.0)
        trial.set_user_attr("scores", {"hs_zeroshot_val/top1": value})
        study.tell(trial, value)
    port = free_port()
    log = (tmp_path / "dashboard.log").open("w")
    server = subprocess.Popen([str(Path(sys.executable).parent / "optuna-dashboard"), stack["optuna"], "--host", "127.0.0.1",
                               "--port", str(port)], env=child_env(), stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, (tmp_path / "dashboard.log").read_text()[-2000:]
            try:
                studies = json.load(urllib.request.urlopen(f"{base}/api/studies", timeout=5))
                break
            except OSError:
                assert time.monotonic() < deadline, "optuna-dashboard never answered"
                time.sleep(1)
        mine = [s for s in studies["study_summaries"] if s["study_name"] == study.study_name]
        assert len(mine) == 1
        browser.get(f"{base}/dashboard/studies/{mine[0]['study_id']}")
        wait_for_text(browser, [study.study_name, "entailment_weight"])
        screenshot(browser, tmp_path, "optuna_dashboard")
    finally:
        server.terminate()
        server.wait(timeout=30)
