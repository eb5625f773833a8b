#!/usr/bin/env python3
"""The console's Run against a real data plane, in a real browser. `hpcplane up --control-plane`
brings up real Slurm (sackd, slurmctld, slurmdbd with MariaDB, slurmrestd) whose daemon also
serves the control plane and runs this data plane's agent. In headless chromium, ann launches a
workspace, picks the admin's job template in Run and submits it; the agent runs sbatch as her in
her login pod, the job runs on two workers scaled up from zero, and sacct's record reaches the
HPC tab with `source: api`, COMPLETED, with its statistics and script; she then stops the
workspace. Screenshots go to <build>/console-artifacts (run-*.png).

Usage: console_run_test.py BUILD_DIR
"""
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_test import (ARTIFACTS, BUILD, Api, LocalCluster, browser_errors, check, check_accessible,  # noqa: E402
                          chromium, finish, poll, tear_down_cluster)

import websocket  # noqa: E402  (python3-websocket)
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

HPCPLANE = os.path.join(BUILD, "hpcplane")


def terminal_checks(driver, wait, admin, base, shot):
    """ann's terminal: her shell in her login pod; sbatch --wait and squeue as her; Ctrl-C; refused
    to another member of the project; closed by its button."""
    main_window = driver.current_window_handle
    driver.find_element(By.CSS_SELECTOR, "nav a[data-page=workspaces]").click()
    wait.until(EC.element_to_be_clickable((By.ID, "terminal-ann-astro"))).click()
    WebDriverWait(driver, 10).until(lambda d: len(d.window_handles) == 2)
    driver.switch_to.window([h for h in driver.window_handles if h != main_window][0])
    wait.until(EC.text_to_be_present_in_element((By.ID, "terminal-status"), "ann in workspace ann-astro"))
    screen = lambda: driver.execute_script(
        "const r = document.querySelector('.xterm-rows'); return r ? r.textContent : ''")
    keys = driver.find_element(By.CSS_SELECTOR, ".xterm-helper-textarea")

    def run(command, expect, timeout=30):
        keys.send_keys(command + "\n")
        try:
            WebDriverWait(driver, timeout).until(lambda d: expect in screen())
        except Exception:
            status = driver.find_element(By.ID, "terminal-status").text
            raise AssertionError(f"the terminal never showed {expect!r} after {command!r}; it shows "
                                 f"{screen()[-400:]!r} (status: {status!r})")
    run("echo user=$(id -un) home=$PWD", "user=ann home=/datasets/astro")
    check(True, "the terminal's shell runs as ann in her dataset directory")
    # The job's state and sbatch's exit status are printed too: what a failure shows says why.
    run("j=$(sbatch --parsable --wait -o term-%j.out --wrap 'echo from-terminal-$((20+1))'); echo \"rc=$? job=$j\"; "
        "cat term-$j.out; sacct -X -n -j \"$j\" -o State,ExitCode,Reason%40; echo sbatch-$((6*7))", "sbatch-42",
        timeout=180)
    check("from-terminal-21" in screen() and "rc=0" in screen(),
          f"sbatch --wait from the terminal ran a job on her workers (scaled from zero), its output is there "
          f"({screen()[-400:]!r})")
    run("sbatch -H -J held --wrap true >/dev/null && squeue -u ann -h -o queued-by=%u:%j:%T", "queued-by=ann:held")
    run("scancel -u ann -n held && echo cancelled-$((1+1))", "cancelled-2")
    check(True, "squeue in the terminal lists her held job as hers")
    run("sleep 300", "sleep 300")
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("c").key_up(Keys.CONTROL).perform()
    run("echo after-$((2+2))", "after-4", timeout=10)
    check(True, "Ctrl-C interrupts what runs in the terminal")
    shot("03-terminal")
    check_accessible(driver, "terminal")
    code, body = admin.call("POST", "/api/v1/tokens", {"subject": "dan", "role": "user", "projects": ["astro"]})
    assert code == 201, body
    code, body = Api(base, body["token"]).call("POST", "/api/v1/projects/astro/workspaces/ann-astro/terminals", {})
    check(code == 403, f"another member of the project may not open a terminal in ann's workspace ({code} {body})")
    driver.find_element(By.ID, "terminal-close").click()
    wait.until(EC.text_to_be_present_in_element((By.ID, "terminal-status"), "Closed"))
    code, body = admin.call("GET", "/api/v1/audit?limit=100")
    entries = [e for e in body.get("entries", []) if e["action"].startswith("terminal.")]
    check(any(e["action"] == "terminal.open" and e.get("detail") == "websocket" for e in entries) and
          any(e["action"] == "terminal.close" for e in entries),
          f"the session, over a WebSocket, is audited as it opens and closes ({entries})")
    driver.close()


def main():
    cluster = LocalCluster("crun", 238)
    os.makedirs(ARTIFACTS, exist_ok=True)
    name, base, state, env = cluster.name, cluster.base, cluster.state, cluster.env
    driver = None
    try:
        admin = cluster.up()
        code, body = admin.call("POST", "/api/v1/tokens", {"subject": "ann", "role": "user", "projects": ["astro"]})
        assert code == 201, body
        ann = Api(base, body["token"])
        # The project runs on this data plane (it reports under the cluster's name); an admin's
        # template for it; the flag on (turning it on in the console is console_test.py's).
        code, body = admin.call("PUT", "/api/v1/projects/astro", {"dataPlane": name, "maxWorkers": 2, "idleTimeout": "20s"})
        assert code == 200, body
        code, body = admin.call("PUT", "/api/v1/projects/astro/templates/two-node-hello", {
            "description": "hostname on two nodes",
            "script": "#!/bin/bash\n#SBATCH --comment=from-template\nsrun hostname\n"
                      "for i in $(seq 1 20); do echo tick-$i; sleep 1; done\n",
            "options": {"nodes": 2, "time": "00:05:00"}})
        assert code == 201, body
        assert admin.call("PUT", "/api/v1/flags/EnableHPCJobs", {"value": True})[0] == 200

        def slurm_offered():
            code, body = admin.call("GET", "/api/v1/dataplanes")
            return code == 200 and any(d["name"] == name and d["slurm"]["offered"] for d in body["dataPlanes"])
        poll("the data plane to report Slurm", slurm_offered, 60)

        driver = chromium(state)
        # Polls: a page drawn at once passes at once; 60 s for a loaded CI machine.
        wait = WebDriverWait(driver, 60, ignored_exceptions=[StaleElementReferenceException])
        shot = lambda n: driver.save_screenshot(os.path.join(ARTIFACTS, f"run-{n}.png"))
        driver.get(base + "/")
        wait.until(EC.element_to_be_clickable((By.ID, "token"))).send_keys(ann.token)
        driver.find_element(By.ID, "sign-in").click()
        wait.until(EC.visibility_of_element_located((By.ID, "who-name")))

        # Launch: the row follows the workspace from Pending to Ready without a reload.
        driver.find_element(By.CSS_SELECTOR, "nav a[data-page=workspaces]").click()
        wait.until(EC.element_to_be_clickable((By.ID, "launch-submit"))).click()
        phase = lambda: driver.execute_script(
            "const c = document.querySelector('#workspaces-table tr[data-workspace=ann-astro] td.phase');"
            "return c ? c.textContent : ''")
        WebDriverWait(driver, 180, ignored_exceptions=[StaleElementReferenceException]).until(
            lambda d: phase() in ("Ready", "Failed"))
        check(phase() == "Ready", f"the workspace launched from the console turns Ready on the page ({phase()})")
        shot("01-workspace-ready")

        # The live cluster's history of ann's nodeset (the agent's reports): at 0 workers before her job.
        def history():
            code, body = admin.call("GET", f"/api/v1/dataplanes/{name}/nodesets/history")
            return [s["current"] for s in body["nodesets"].get("ann-astro", [])] if code == 200 else []
        # A sample stands for its 15 s (the last report in them wins): the first is settled once
        # a second one exists.
        poll("a settled sample of ann's nodeset at 0 workers", lambda: history()[:1] == [0] and len(history()) >= 2, 90)

        # A terminal in the browser into her login pod, from the Workspaces page (a tab of its own).
        terminal_checks(driver, wait, admin, base, shot)
        driver.switch_to.window(driver.window_handles[0])

        rows = lambda: driver.execute_script(
            "return [...document.querySelectorAll('#jobs-body tr.job')].map(r => [...r.cells].map(c => c.textContent))")

        # Run from the template; the form shows what is submitted.
        driver.find_element(By.CSS_SELECTOR, "nav a[data-page=jobs]").click()
        wait.until(EC.element_to_be_clickable((By.ID, "run-button"))).click()
        Select(wait.until(EC.element_to_be_clickable((By.ID, "run-template")))).select_by_value("two-node-hello")
        check(driver.find_element(By.ID, "run-opt-nodes").get_property("value") == "2",
              "the template fills the form (2 nodes)")
        driver.find_element(By.ID, "run-opt-jobName").send_keys("console-run")
        shot("02-run-form")
        driver.find_element(By.ID, "run-submit").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "toast"), "Submitted"))

        # While it runs, its output grows on screen: read by the agent on the job's worker as ann.
        def live_record():
            code, body = ann.call("GET", "/api/v1/projects/astro/jobs?limit=10")
            jobs = [j for j in body.get("jobs", []) if j["name"] == "console-run"] if code == 200 else []
            return jobs[0] if jobs and jobs[0]["state"] in ("PENDING", "CONFIGURING", "RUNNING") else None
        running = poll("the console's job in the history while it is queued or runs", live_record, 120, interval=1)
        driver.refresh()
        WebDriverWait(driver, 90).until(lambda d: rows() and rows()[0][1] == "console-run")
        driver.execute_script("document.querySelector('#jobs-body tr.job').click()")
        ticks = lambda: [int(t) for t in re.findall(r"tick-(\d+)", driver.execute_script(
            "const p = document.getElementById('output-text'); return p ? p.textContent : ''"))]
        WebDriverWait(driver, 120).until(lambda d: ticks())
        first = max(ticks())
        check(True, f"the running job's output is on screen (up to tick-{first})")
        WebDriverWait(driver, 30).until(lambda d: max(ticks()) >= first + 3)
        check(ticks() == list(range(1, max(ticks()) + 1)),
              f"it grows in order, nothing lost or repeated (tick-{first} then up to tick-{max(ticks())})")
        note = driver.find_element(By.ID, "output-note").text
        check("/slurm-" in note and "following" in note, f"the note names the file and that it follows ({note})")
        driver.execute_script("document.getElementById('job-output').scrollIntoView()")
        shot("04-job-output")
        driver.find_element(By.ID, "output-stderr").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "output-note"), "same file as stdout"))
        check_accessible(driver, "job output")
        code, body = admin.call("POST", "/api/v1/tokens", {"subject": "cid", "role": "user", "projects": ["astro"]})
        assert code == 201, body
        output = (f"/api/v1/projects/astro/jobs/{running['dataPlane']}/{running['cluster']}/{running['jobId']}"
                  f"/output?submitTime={running['submitTime']}")
        code, body = Api(base, body["token"]).call("GET", output)
        check(code == 403, f"another member of the project may not read it ({code} {body})")

        # The agent runs sbatch in ann's login pod; workers come from zero; sacct's record comes
        # back through the agent.
        def completed():
            code, body = ann.call("GET", "/api/v1/projects/astro/jobs?limit=10")
            jobs = [j for j in body.get("jobs", []) if j["name"] == "console-run"] if code == 200 else []
            return jobs[0] if jobs and jobs[0]["state"] in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT") else None
        record = poll("the console's job to end in the history", completed, 240, interval=1)
        check(record["state"] == "COMPLETED", f"the job ran to completion ({record['state']})")
        check(record["source"] == "api" and record["user"] == "ann" and record["partition"] == "ann-astro",
              f"it ran as ann on her partition, source api ({record})")
        check(record["nodes"] == 2, f"on the template's 2 nodes ({record['nodes']})")
        check(record["elapsedSeconds"] >= 1, f"with its elapsed time ({record['elapsedSeconds']} s)")

        # The HPC tab shows it; its detail has the statistics and the script.
        driver.refresh()
        WebDriverWait(driver, 90).until(lambda d: rows() and rows()[0][1] == "console-run")
        first = rows()[0]
        check(first[0] == str(record["jobId"]) and first[3] == "COMPLETED" and first[5] == "api",
              f"the HPC tab lists the job first, COMPLETED, source api ({first})")
        shot("05-hpc-tab")
        driver.execute_script("document.querySelector('#jobs-body tr.job').click()")
        wait.until(EC.text_to_be_present_in_element((By.ID, "job-script"), "--comment=from-template"))
        detail = driver.find_element(By.ID, "job-detail").text
        check(f"Job {record['jobId']}: console-run" in detail and "CPU efficiency" in detail and "ann-astro" in detail,
              "the detail names the job, its statistics and its workspace")
        check("--nodes=2" in driver.find_element(By.ID, "job-script").text, "the detail shows the options it ran with")
        check(not driver.find_elements(By.ID, "cancel-job"), "an ended job offers no Cancel")
        shot("06-job-detail")

        # Her workers go once idle (the project's idleTimeout, 20 s): the nodeset went 0 -> 2 -> 0.
        def up_and_down(seq):
            up = [k for k, v in enumerate(seq) if v == 2]
            return bool(up) and 0 in seq[:up[0]] and 0 in seq[up[-1] + 1:]
        try:
            poll("ann's nodeset to go 0 -> 2 -> 0 in the live cluster's history", lambda: up_and_down(history()), 180)
        except AssertionError as e:
            raise AssertionError(f"{e}; its samples: {history()}") from None
        check(True, f"the nodeset's history went 0 -> 2 -> 0 ({history()})")
        # The job wrote to the project's dataset: with its workers gone, ann's login pod still has it.
        code, body = ann.call("GET", output + "&offset=0")
        text = body.get("text", "") if code == 200 else ""
        check(re.findall(r"tick-(\d+)", text) == [str(i) for i in range(1, 21)],
              f"after its workers went, the whole output is read from her login pod ({code} {text[-80:]!r})")
        code, body = ann.call("GET", output + "&stream=stdin")
        check(code == 400 and body["error"]["field"] == "stream", f"a bad stream is refused by name ({code} {body})")

        # A terminal left open ends with the workspace: over a WebSocket (the console's), and over
        # long polls (read all along, as an open tab does).
        sock = websocket.create_connection(f"ws://{base[len('http://'):]}/api/v1/projects/astro/workspaces/ann-astro/"
                                           "terminal", header=["Authorization: Bearer " + ann.token], timeout=240)
        socket_ended = {}

        def follow_socket():
            try:
                while True:
                    op, data = sock.recv_data()
                    if op == websocket.ABNF.OPCODE_CLOSE:
                        socket_ended.update(code=int.from_bytes(data[:2], "big"), reason=data[2:].decode())
                        return
            except Exception as e:  # noqa: BLE001 (what broke is the check's message)
                socket_ended.update(error=repr(e))
        socket_follower = threading.Thread(target=follow_socket, daemon=True)
        socket_follower.start()
        code, body = ann.call("POST", "/api/v1/projects/astro/workspaces/ann-astro/terminals", {})
        assert code == 201, body
        ended = {}

        def follow(session):
            offset, deadline = 0, time.time() + 240
            while time.time() < deadline:
                code, o = ann.call("GET", f"/api/v1/terminals/{session}/output?offset={offset}&wait=5")
                if code != 200 or o["closed"]:
                    ended.update(code=code, reason=o.get("reason") if code == 200 else o)
                    return
                offset = o["next"]
        follower = threading.Thread(target=follow, args=(body["id"],), daemon=True)
        follower.start()

        # Stop from the console: the row follows it to Stopped.
        driver.find_element(By.CSS_SELECTOR, "nav a[data-page=workspaces]").click()
        wait.until(EC.element_to_be_clickable((By.ID, "stop-ann-astro"))).click()
        driver.switch_to.alert.accept()
        WebDriverWait(driver, 180, ignored_exceptions=[StaleElementReferenceException]).until(
            lambda d: phase() in ("Stopped", "Failed"))
        check(phase() == "Stopped", f"the workspace stopped from the console is Stopped ({phase()})")
        follower.join(timeout=60)
        socket_follower.join(timeout=60)
        check(socket_ended.get("code") == 1000 and socket_ended.get("reason", "").startswith("the shell"),
              f"the terminal's WebSocket still open closed as its login pod went, saying why ({socket_ended})")
        check(ended.get("reason", "").startswith("the shell"),
              f"the terminal still open over long polls closed as its login pod went, its shell ended ({ended})")
        shot("07-workspace-stopped")
        code, body = ann.call("GET", "/api/v1/projects/astro/jobs?limit=10")
        check(code == 200 and any(j["jobId"] == record["jobId"] for j in body["jobs"]),
              "the job's record outlives the workspace")
        check_accessible(driver, "workspaces (stopped)")

        # The admin's Cluster page charts the same: ann's nodeset's workers went 0 -> 2 -> 0.
        driver.find_element(By.ID, "sign-out").click()
        wait.until(EC.element_to_be_clickable((By.ID, "token"))).send_keys(admin.token)
        driver.find_element(By.ID, "sign-in").click()
        wait.until(EC.visibility_of_element_located((By.ID, "who-name")))
        driver.find_element(By.CSS_SELECTOR, "nav a[data-page=cluster]").click()
        chart = "#nodeset-charts figure[data-nodeset=ann-astro]"
        totals = lambda: [int(float(v)) for v in driver.execute_script(
            f"const f = document.querySelector('{chart}'); return f ? f.dataset.totals : ''").split(",") if v]
        WebDriverWait(driver, 30).until(lambda d: up_and_down(totals()))
        check(True, "the chart of ann's nodeset shows 0 -> 2 -> 0 workers")
        check_accessible(driver, "live cluster after the run")
        shot("08-nodeset-chart")

        logs = browser_errors(driver)
        check(not logs, f"no errors in the browser console ({logs[:3]})")
    except Exception:
        log = os.path.join(state, "clusters", name, "daemon.log")
        if os.path.exists(log):
            print("--- daemon log (last 60 lines)")
            print("".join(open(log, errors="replace").readlines()[-60:]))
        # What Slurm itself says: a job that never ran shows why here (held after a failed
        # launch, a reason, its node's state).
        for what, argv in (("squeue", ["exec", f"{name}-controller", "--", "squeue", "-a", "-o", "%i %u %P %T %r %N"]),
                           ("sinfo", ["exec", f"{name}-controller", "--", "sinfo", "-N", "-o", "%N %P %T %E"]),
                           ("processes in ann's login pod", ["exec", "ann-astro-login", "--", "ps", "-eo",
                                                              "pid,user,etime,stat,args"]),
                           ("slurmctld log (last 40 lines)", ["logs", "--tail", "40", f"{name}-controller"])):
            try:
                out = subprocess.run([HPCPLANE, *argv], env=env, capture_output=True, text=True, timeout=30)
                print(f"--- {what}\n{out.stdout}{out.stderr}")
            except subprocess.TimeoutExpired:
                print(f"--- {what}: no answer in 30 s")
        raise
    finally:
        tear_down_cluster(driver, HPCPLANE, env, state)
    finish()


if __name__ == "__main__":
    main()
