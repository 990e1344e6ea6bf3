"""The UIs a person looks at, in a real headless Chromium (Debian's chromium + chromium-driver, driven
by Selenium): the MLflow UI of the tracking server, the Snakemake HTML report, optuna-dashboard."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from stackutil import ROOT, child_env, free_port

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


def test_mlflow_ui_shows_the_runs_and_a_metric_column(stack, browser, tmp_path):
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=stack["mlflow"])
    exp_id = client.create_experiment(f"stack-ui-{tmp_path.name}")
    for name, curve in (("clip-tiny-seed0", (3.0, 2.5, 2.25)), ("argent-tiny-seed0", (2.5, 1.75, 1.125))):
        run = client.create_run(exp_id, run_name=name, tags={"variant": name.split("-")[0]})
        client.log_param(run.info.run_id, "train.steps", "4")
        for step, loss in enumerate(curve):
            client.log_metric(run.info.run_id, "loss", loss, step=step)
        client.set_terminated(run.info.run_id)

    browser.get(f"{stack['mlflow']}/#/experiments/{exp_id}/runs")
    wait_for_text(browser, ["clip-tiny-seed0", "argent-tiny-seed0", "2 matching runs"])
    screenshot(browser, tmp_path, "mlflow_ui_runs")
    # A run's page: its metric (name and last value) and its parameter, as a person reads them.
    run_id = client.search_runs([exp_id], filter_string="attributes.run_name = 'argent-tiny-seed0'")[0].info.run_id
    browser.get(f"{stack['mlflow']}/#/experiments/{exp_id}/runs/{run_id}")
    wait_for_text(browser, ["argent-tiny-seed0", "Finished", "loss", "1.125", "train.steps"])
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


def eye_link(driver, file_name: str) -> str:
    """The report's "view" link of one result file (a data: URL holding the file)."""
    from selenium.webdriver.common.by import By

    xpath = f"//td[contains(text(), '{file_name}')]/following-sibling::td//a[@iconname='eye']"
    return driver.find_element(By.XPATH, xpath).get_attribute("href")


def test_snakemake_report_shows_tables_and_figures(browser, tmp_path):
    from selenium.webdriver.common.by import By

    report = tmp_path / "report.html"
    snakemake_report(finished_smoke_workdir(), report)
    browser.get(report.as_uri())
    wait_for_text(browser, ["Workflow", "Tables", "Figures"])
    graph = [e for e in browser.find_elements(By.CSS_SELECTOR, "canvas") if e.size["height"] > 300]
    assert graph, "the rule graph was not drawn"  # Vega draws it on a canvas
    screenshot(browser, tmp_path, "snakemake_report")

    browser.find_element(By.XPATH, "//*[normalize-space(text())='Tables']").click()
    wait_for_text(browser, ["tables/main.md", "tables/ablations.md"])
    screenshot(browser, tmp_path, "snakemake_report_tables")
    table = base64.b64decode(eye_link(browser, "tables/main.md").split("base64,", 1)[1]).decode()
    assert "| row |" in table and "argent-tuned" in table, table[:500]

    browser.get(report.as_uri())
    wait_for_text(browser, ["Figures"])
    browser.find_element(By.XPATH, "//*[normalize-space(text())='Figures']").click()
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
