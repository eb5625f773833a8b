#!/usr/bin/env python3
"""First use, as the README tells a new user: `make demo` (scripts/demo.sh) brings up the embedded
cluster with its control plane, runs alice's job and prints the console's address and sign-ins.
In headless chromium, alice's sign-in lands on project demo's HPC tab with that job first; the
admin's offers "All projects", where the job is listed under project demo, and the live cluster
of the demo's data plane; a node the admin drains shows its reason within seconds. Every page
passes axe. Here the demo's state and console port are a temp dir and a free port.

Usage: demo_test.py BUILD_DIR
"""
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_test import (ARTIFACTS, BUILD, browser_errors, check, check_accessible, chromium, finish,  # noqa: E402
                          free_port, tear_down_cluster)

from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

HPCPLANE = os.path.join(BUILD, "hpcplane")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def rows(driver):
    return driver.execute_script(
        "return [...document.querySelectorAll('#jobs-body tr.job')].map(r => [...r.cells].map(c => c.textContent))")


def sign_in(driver, wait, url, token):
    driver.get(url)
    wait.until(EC.element_to_be_clickable((By.ID, "token"))).send_keys(token)
    driver.find_element(By.ID, "sign-in").click()
    wait.until(EC.visibility_of_element_located((By.ID, "who-name")))


def main():
    state = tempfile.mkdtemp(prefix="hpcplane-demo.")
    os.makedirs(ARTIFACTS, exist_ok=True)
    console = f"127.0.0.1:{free_port()}"
    env = dict(os.environ, HPCPLANE_STATE_DIR=state, HPCPLANE_CONSOLE=console)
    env.pop("HPCPLANE_CLUSTER", None)
    driver = None
    try:
        demo = subprocess.run(["bash", os.path.join(ROOT, "scripts", "demo.sh"), HPCPLANE], env=env,
                              capture_output=True, text=True, timeout=420)
        print(demo.stdout[-3000:])
        if demo.returncode != 0:
            raise SystemExit(f"make demo failed ({demo.returncode}): {demo.stderr[-3000:]}")
        out = demo.stdout
        job = re.search(r"Submitted batch job (\d+)", out).group(1)
        url = re.findall(r"Web console: (\S+)", out)[-1]
        alice = re.search(r"sign in as alice \(project demo, expires in 12 h\): (\S+)", out)
        admin = re.search(r"or as an admin \(every project, the live cluster\): (\S+)", out)
        check(url == f"http://{console}/#/projects/demo/jobs", f"the demo prints the project's HPC tab ({url})")
        check(alice is not None and admin is not None, "the demo prints a sign-in for alice and for an admin")
        if not (alice and admin):
            return

        driver = chromium(state)
        # Polls: a page drawn at once passes at once; 60 s for a loaded CI machine.
        wait = WebDriverWait(driver, 60, ignored_exceptions=[StaleElementReferenceException])
        shot = lambda n: driver.save_screenshot(os.path.join(ARTIFACTS, f"demo-{n}.png"))

        # alice: the link opens project demo's HPC tab, the demo's job first.
        sign_in(driver, wait, url, alice.group(1))
        wait.until(lambda d: rows(d))
        first = rows(driver)[0]
        check(first[0] == job and first[1] == "hello" and first[2] == "alice" and first[3] == "COMPLETED",
              f"alice's first screen lists the demo's job {job} first, COMPLETED ({first})")
        check("HPC jobs — demo" in driver.find_element(By.TAG_NAME, "h1").text, "on project demo's HPC tab")
        check(Select(driver.find_element(By.ID, "project-select")).first_selected_option.text == "demo",
              "the selector shows project demo")
        check(not driver.find_elements(By.XPATH, "//h1[text()='No project']"), "no 'No project' page")
        check_accessible(driver, "demo HPC tab")
        shot("01-alice-first-screen")

        # The admin: All projects lists the same job under project demo.
        driver.find_element(By.ID, "sign-out").click()
        wait.until(EC.visibility_of_element_located((By.ID, "token")))
        sign_in(driver, wait, f"http://{console}/", admin.group(1))
        options = [o.get_attribute("value") for o in Select(driver.find_element(By.ID, "project-select")).options]
        check(options[:2] == ["*", "demo"], f"the admin's selector offers All projects, then demo ({options})")
        Select(driver.find_element(By.ID, "project-select")).select_by_value("*")
        wait.until(lambda d: rows(d) and "all projects" in d.find_element(By.TAG_NAME, "h1").text)
        mine = [r for r in rows(driver) if r[0] == job]
        check(mine and mine[0][3] == "demo", f"every project's list has the job under project demo ({mine})")
        shot("02-admin-all-projects")

        # The live cluster of the demo's data plane: its nodeset and both workers.
        driver.find_element(By.CSS_SELECTOR, "nav a[data-page=cluster]").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "nodesets-table"), "cpu"))
        nodes = lambda: driver.execute_script(
            "return [...document.querySelectorAll('#nodes-table tbody tr')].map(r => [...r.cells].map(c => c.textContent))")
        WebDriverWait(driver, 60).until(lambda d: len([n for n in nodes() if n[1] == "cpu"]) == 2)
        worker = sorted(n[0] for n in nodes() if n[1] == "cpu")[0]
        check(True, f"the live cluster lists the demo's 2 workers of nodeset cpu ({worker} first)")
        check_accessible(driver, "demo live cluster")
        shot("03-live-cluster")

        # The admin drains a worker in Slurm; its reason is on the page within seconds.
        drain = subprocess.run([HPCPLANE, "exec", "demo-controller", "--", "scontrol", "update", f"NodeName={worker}",
                                "State=DRAIN", "Reason=demo maintenance"], env=env, capture_output=True, text=True,
                               timeout=60)
        check(drain.returncode == 0, f"scontrol drained {worker} ({drain.stderr.strip()})")
        drained_at = time.time()
        WebDriverWait(driver, 30).until(
            lambda d: any(n[0] == worker and "demo maintenance" in n[3] for n in nodes()))
        took = time.time() - drained_at
        check(took < 20, f"the drained worker's reason is on screen {took:.1f} s after the drain")
        check_accessible(driver, "demo live cluster, drained")
        shot("04-drained")
        logs = browser_errors(driver)
        check(not logs, f"no errors in the browser console ({logs[:3]})")
    finally:
        tear_down_cluster(driver, HPCPLANE, env, state)
    finish()


if __name__ == "__main__":
    main()
