#!/usr/bin/env python3
"""The web console in a real browser (Debian's chromium, driven by Selenium through
chromium-driver) against a real `hpcplane server` on SQLite, with 10,100 job records shipped
through the agent API. Screenshots of each page go to <build>/console-artifacts.

Usage: console_test.py BUILD_DIR
"""
import json
import random
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
ARTIFACTS = os.path.join(BUILD, "console-artifacts")
FAILURES = []
WEB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "web")
_AXE = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILURES.append(what)


def axe_source():
    """axe-core from web/node_modules (npm ci from web/package-lock.json, as `make lint` does)."""
    if not _AXE:
        path = os.path.join(WEB, "node_modules", "axe-core", "axe.min.js")
        if not os.path.exists(path):
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=WEB, check=True, capture_output=True)
        _AXE.append(open(path).read())
    return _AXE[0]


def check_accessible(driver, page):
    """axe-core over the page as it is now: no serious or critical violation of WCAG 2 A/AA."""
    driver.execute_script(axe_source())
    found = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']})"
        ".then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " where: v.nodes.slice(0, 3).map(n => n.target.join(' '))}))), e => done([{id: 'axe failed', impact: 'critical',"
        " help: String(e), where: []}]))")
    serious = [v for v in found if v["impact"] in ("serious", "critical")]
    check(not serious, f"{page}: axe finds no serious or critical violation ({serious})")
    return found


def browser_errors(driver):
    """The browser log's errors that are the console's. Chromium also aborts a request in flight
    with net::ERR_NETWORK_CHANGED whenever an address of the host changes, which the tests beside
    this one do all the time: that is the host, not the console (a page that lost data shows it,
    and the tests check what pages show). The one 401 expected: the page asking for a session
    before anyone signed in."""
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"
            and "net::ERR_NETWORK_CHANGED" not in e["message"]
            and not ("/api/v1/session" in e["message"] and "status of 401" in e["message"])]


def tear_down_cluster(driver, hpcplane, env, state):
    """Quits the browser, takes the cluster of `state` down with its state (`hpcplane down
    --purge`, saying so when that fails) and removes the state dir."""
    if driver:
        driver.quit()
    down = subprocess.run([hpcplane, "down", "--purge"], env=env, capture_output=True, text=True, timeout=180)
    if down.returncode != 0:
        print(f"hpcplane down failed: {down.stdout}{down.stderr}")
    shutil.rmtree(state, ignore_errors=True)


def finish():
    """Exits non-zero when a check failed."""
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        sys.exit(1)
    print("all checks passed")


def text_of(driver, element_id):
    """An element's text, read again when the page re-rendered it between finding it and reading
    it (the live pages redraw their tables on each report)."""
    for _ in range(20):
        try:
            return driver.find_element(By.ID, element_id).text
        except StaleElementReferenceException:
            time.sleep(0.1)
    return driver.find_element(By.ID, element_id).text


def poll(what, predicate, timeout, interval=0.5):
    """predicate() until it returns something true, or fail naming `what` after `timeout` s."""
    deadline = time.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Api:
    def __init__(self, base, token):
        self.base, self.token = base, token

    def call(self, method, path, body=None):
        req = urllib.request.Request(self.base + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": "Bearer " + self.token,
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")


class LocalCluster:
    """A cluster of its own for one test: state dir, name, control plane port and subnet
    10.`octet`.N.0/24 (each test file its own octet), and `hp(...)` running hpcplane against it."""

    def __init__(self, prefix, octet):
        self.state = tempfile.mkdtemp(prefix=f"hpcplane-{prefix}.")
        self.name = f"{prefix}{os.getpid() % 100000}"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = dict(os.environ, HPCPLANE_STATE_DIR=self.state, HPCPLANE_CLUSTER=self.name)
        self.manifest = os.path.join(self.state, "cluster.yaml")
        with open(self.manifest, "w") as f:
            f.write(f"apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: {self.name}\n"
                    f"spec:\n  network:\n    subnet: 10.{octet}.{random.Random(os.getpid()).randrange(250)}.0/24\n")

    def hp(self, *args, timeout=240):
        return subprocess.run([os.path.join(BUILD, "hpcplane"), *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def up(self):
        """`hpcplane up --control-plane` (real Slurm, the server and the agent); the admin's Api."""
        up = self.hp("up", "-f", self.manifest, "--detach", "--control-plane", f"127.0.0.1:{self.port}")
        if up.returncode != 0:
            raise SystemExit(f"hpcplane up failed ({up.returncode}): {up.stdout}{up.stderr}")
        return Api(self.base, open(os.path.join(self.state, "controlplane", "admin.token")).read().strip())


def chromium(state):
    """Headless chromium at 1280x800 with its profile under `state`, keeping the browser log."""
    opts = Options()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1280,800", f"--user-data-dir={state}/chromium"):
        opts.add_argument(a)
    opts.binary_location = shutil.which("chromium")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)


def shut_down(driver, server, state):
    """Quits the browser, stops the server (SIGTERM, then SIGKILL) and removes the state."""
    if driver:
        driver.quit()
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    shutil.rmtree(state, ignore_errors=True)


def job(i, project, user, now):
    submit = now - 86400 * 3 + i * 20
    start = submit + (i % 7) * 30
    elapsed = 60 + i % 600
    return {"cluster": "c1", "jobId": 1000 + i, "submitTime": submit, "name": f"{project}-sim-{i}",
            "user": user, "project": project, "partition": f"{user}-{project}",
            "state": ["COMPLETED", "FAILED", "CANCELLED", "COMPLETED", "TIMEOUT"][i % 5], "exitCode": "0:0",
            "startTime": start, "endTime": start + elapsed, "elapsedSeconds": elapsed, "cpuSeconds": elapsed * 3 // 2,
            "maxRssKiB": 512 * 1024 + i, "nodes": 1 + i % 2, "nodeList": f"{user}-{project}-0",
            "tres": "cpu=2,mem=1G,node=1", "source": "terminal"}


def live_view(nodes, queued, drained=None):
    """A data plane's live view as its agent posts it: `nodes` workers of nodesets cpu and gpu,
    `queued` jobs (the first 100 running), node number `drained` drained with a reason."""
    view = {"collectedAt": int(time.time()), "partitions": [], "queue": [], "queueTotal": queued, "nodesets": [],
            "nodes": [],
            # The primary hung, its backup took over.
            "controllers": [{"name": "dp1-controller", "role": "primary", "responding": False, "serving": False},
                            {"name": "dp1-controller-backup", "role": "backup", "responding": True,
                             "serving": True}]}
    for i in range(nodes):
        nodeset = "cpu" if i < nodes * 3 // 4 else "gpu"
        busy = i % 3 != 0
        view["nodes"].append({"name": f"dp1-{nodeset}-{i}", "nodeset": nodeset, "state": "mixed" if busy else "idle",
                              "flags": ["DRAIN"] if i == drained else [],
                              "reason": "bad DIMM (console test)" if i == drained else "",
                              "cpus": 64, "cpusAllocated": 32 if busy else 0, "memoryMiB": 256000,
                              "memoryAllocatedMiB": 128000 if busy else 0, "partitions": [nodeset],
                              "gpus": [{"busId": "00000000:3b:00.0", "utilizationPercent": 87, "memoryUsedMiB": 40000,
                                        "memoryTotalMiB": 81559, "temperatureCelsius": 61}] if nodeset == "gpu" else []})
    for ns in ("cpu", "gpu"):
        members = [n for n in view["nodes"] if n["nodeset"] == ns]
        busy = sum(1 for n in members if n["state"] == "mixed")
        view["nodesets"].append({"name": ns, "desired": len(members), "current": len(members), "busy": busy,
                                 "idle": len(members) - busy, "draining": 0})
        view["partitions"].append({"name": ns, "state": "UP", "nodes": len(members), "cpus": 64 * len(members)})
    for j in range(min(queued, 10000)):
        running = j < 100
        view["queue"].append({"jobId": 70000 + j, "name": f"q-{j}", "user": "ann", "account": "astro",
                              "partition": "cpu", "state": "RUNNING" if running else "PENDING",
                              "reason": "None" if running else ("Resources" if j % 2 else "Priority"),
                              "nodes": 1, "cpus": 4, "submitTime": view["collectedAt"] - 600, "startTime": 0})
    return view


def in_a_network_of_its_own():
    """Runs this script again in a network namespace of its own, loopback up and nothing else:
    the server, the browser and the agent's calls all go to 127.0.0.1. Chromium drops every
    request in flight (net::ERR_NETWORK_CHANGED, a page's own modules too) whenever an address
    of its namespace changes, and the cluster tests beside this one add and remove pods' links
    on the host all the time: pages and sign-ins went missing in CI. Needs root (`unshare`);
    elsewhere the script runs where it is."""
    if os.environ.get("CONSOLE_TEST_NETNS") or os.geteuid() != 0 or not shutil.which("ip"):
        return
    if subprocess.run(["unshare", "--net", "true"], capture_output=True).returncode != 0:
        return  # no new network namespace here (no CAP_SYS_ADMIN, no unshare)
    axe_source()  # npm ci, if it is needed, reaches the registry from outside
    env = dict(os.environ, CONSOLE_TEST_NETNS="1")
    os.execvpe("unshare", ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$0" "$@"',
                           sys.executable, *sys.argv], env)


def main():
    state = tempfile.mkdtemp(prefix="hpcplane-console.")
    os.makedirs(ARTIFACTS, exist_ok=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = dict(os.environ, HPCPLANE_STATE_DIR=state)
    server = subprocess.Popen([os.path.join(BUILD, "hpcplane"), "server", "--listen", f"127.0.0.1:{port}"],
                              env=env, stdout=open(os.path.join(state, "server.log"), "w"), stderr=subprocess.STDOUT)
    driver = None
    stop = threading.Event()
    try:
        token_file = os.path.join(state, "controlplane", "admin.token")
        deadline = time.time() + 30
        while time.time() < deadline and not (os.path.exists(token_file) and os.path.getsize(token_file)):
            time.sleep(0.1)
        admin = Api(base, open(token_file).read().strip())
        deadline = time.time() + 30
        while admin.call("GET", "/api/v1/flags")[0] != 200:
            if time.time() > deadline:
                raise SystemExit("the server did not answer")
            time.sleep(0.1)
        tokens = {}
        for subject, role, projects in [("ann", "user", ["astro"]), ("eve", "user", ["bio"]), ("dp1", "agent", [])]:
            code, body = admin.call("POST", "/api/v1/tokens", {"subject": subject, "role": role, "projects": projects})
            assert code == 201, body
            tokens[subject] = body["token"]
        for p in ("astro", "bio"):
            assert admin.call("PUT", f"/api/v1/projects/{p}", {"dataPlane": "dp1"})[0] == 200
        agent = Api(base, tokens["dp1"])
        report = lambda: agent.call("POST", "/api/v1/dataplanes/dp1/report",
                                    {"state": "Healthy", "componentVersions": {"slurm/slurmctld": "22.05.8"}})
        assert report()[0] == 200

        live = {"view": None}  # the live view the agent reports, while there is one

        def keep_reporting():  # as the agent does: a data plane whose reports stop is Unreachable
            while not stop.wait(2):
                report()
                if live["view"]:
                    agent.call("POST", "/api/v1/dataplanes/dp1/live", live["view"])
        reporter = threading.Thread(target=keep_reporting, daemon=True)
        reporter.start()
        now = int(time.time())
        records = [job(i, "astro", "ann" if i % 3 else "bob", now) for i in range(10000)]
        records += [job(i, "bio", "eve", now) for i in range(100)]
        # One job array of 4 tasks (sbatch --array=0-3), older than every other job.
        for task in range(4):
            r = job(task, "astro", "ann", now - 86400 * 2)
            r.update({"jobId": 50000 + task, "name": "astro-sweep", "submitTime": now - 86400 * 6,
                      "arrayJobId": 50000, "arrayTaskId": str(task), "state": ["COMPLETED", "FAILED"][task % 2]})
            records.append(r)
        for k in range(0, len(records), 2000):
            code, body = agent.call("POST", "/api/v1/dataplanes/dp1/jobs", {"jobs": records[k:k + 2000]})
            assert code == 200, body

        driver = chromium(state)
        # Polls: a page drawn at once passes at once; 60 s for a loaded CI machine.
        wait = WebDriverWait(driver, 60, ignored_exceptions=[StaleElementReferenceException])
        shot = lambda name: driver.save_screenshot(os.path.join(ARTIFACTS, name + ".png"))

        # The table is read and clicked in one script each: the page re-renders it (filters,
        # paging, the 15 s refresh), and a row found by one call may be gone at the next.
        def rows():
            return driver.execute_script(
                "return [...document.querySelectorAll('#jobs-body tr.job')].map(r => [...r.cells].map(c => c.textContent))")

        def open_first_row():
            driver.execute_script("document.querySelector('#jobs-body tr.job').click()")

        def sign_in(token):
            driver.get(base + "/")
            wait.until(EC.element_to_be_clickable((By.ID, "token"))).send_keys(token)
            driver.find_element(By.ID, "sign-in").click()
            wait.until(EC.visibility_of_element_located((By.ID, "who-name")))

        def wait_status(text):
            wait.until(EC.text_to_be_present_in_element((By.ID, "jobs-status"), text))

        # Sign-in page, then ann's HPC tab: her project's jobs only, 50 a page.
        driver.get(base + "/")
        wait.until(EC.visibility_of_element_located((By.ID, "token")))
        shot("01-sign-in")
        check_accessible(driver, "sign-in")
        sign_in(tokens["ann"])
        wait_status("Page 1: 50 jobs")
        check(len(rows()) == 50, "the HPC tab lists 50 jobs on its first page")
        names = [r[1] for r in rows()]
        check(all(n.startswith("astro-sim-") for n in names), "only project astro's jobs are listed")
        check(names[0] == "astro-sim-9999", f"newest submission first (got {names[0]})")
        options = [o.text for o in Select(driver.find_element(By.ID, "project-select")).options]
        check(options == ["astro"], f"ann's project selector holds her project only ({options})")
        check(not driver.find_elements(By.ID, "run-button"), "no Run button while EnableHPCJobs is off")
        cookies = {c["name"]: c for c in driver.get_cookies()}
        session = cookies.get("hpcplane_session", {})
        check(session.get("httpOnly") is True and session.get("sameSite") == "Strict",
              "the session cookie is HttpOnly and SameSite=Strict")
        stored = driver.execute_script("return JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + location.href")
        check(tokens["ann"] not in stored, "the token is in neither web storage nor the URL")
        wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#charts figure svg")))
        shot("02-hpc-jobs")
        check_accessible(driver, "HPC jobs")

        # Paging through the cursor, and back.
        driver.find_element(By.ID, "next-page").click()
        wait_status("Page 2: 50 jobs")
        second = rows()[0][1]
        check(second == "astro-sim-9949", f"page 2 continues where page 1 ended (got {second})")
        driver.find_element(By.ID, "prev-page").click()
        wait_status("Page 1: 50 jobs")

        # Sorted by start time: the job that started last comes first (astro-sim-9995 started 100 s
        # after astro-sim-9999 was submitted; 9999 itself 90 s after), then back to submit order.
        Select(driver.find_element(By.ID, "f-sort")).select_by_value("start")
        driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]").click()
        wait.until(lambda d: rows() and rows()[0][1] == "astro-sim-9995")
        check(rows()[1][1] == "astro-sim-9999", f"newest start first (got {[r[1] for r in rows()[:3]]})")
        Select(driver.find_element(By.ID, "f-sort")).select_by_value("")

        # Filters: state and name over the 10,000 records.
        Select(driver.find_element(By.ID, "f-state")).select_by_value("FAILED")
        driver.find_element(By.ID, "f-user").send_keys("bob")
        driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]").click()
        wait.until(lambda d: rows() and all(r[3] == "FAILED" and r[2] == "bob" for r in rows()))
        check(len(rows()) == 50, "state and user filters keep full pages (667 FAILED jobs of bob)")
        driver.find_element(By.ID, "f-name").send_keys("sim-999")
        driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]").click()
        wait_status("Page 1: 1 job")
        check([r[1] for r in rows()] == ["astro-sim-9996"],
              "the name filter finds the one FAILED job of bob named *sim-999*")
        shot("03-filtered")

        # A job's detail: timeline and statistics.
        open_first_row()
        wait.until(EC.visibility_of_element_located((By.ID, "detail-title")))
        detail = driver.find_element(By.ID, "job-detail").text
        check("Job 10996: astro-sim-9996" in detail, "the detail names the job")
        check("CPU efficiency" in detail and "75.0 %" in detail, "CPU efficiency = CPU time / (elapsed x CPUs)")
        check("of 1.0 GiB requested" in detail, "MaxRSS is shown against the requested memory")
        check("submitted" in detail and "started" in detail and "ended" in detail, "the detail has a timeline")
        shot("04-job-detail")
        check_accessible(driver, "job detail")

        # A job array comes as one row with its tasks under it, closed until opened.
        driver.find_element(By.ID, "f-name").clear()
        driver.find_element(By.ID, "f-name").send_keys("sweep")
        Select(driver.find_element(By.ID, "f-state")).select_by_value("")
        driver.find_element(By.ID, "f-user").clear()
        driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]").click()
        wait_status("Page 1: 4 jobs")
        group = driver.find_element(By.CSS_SELECTOR, "#jobs-body tr.array")
        check("4 tasks here: 2 FAILED, 2 COMPLETED" in group.text or "4 tasks here: 2 COMPLETED, 2 FAILED" in group.text,
              f"the array row sums up its tasks ({group.text})")
        visible = lambda: [r.text.split(" ")[0] for r in driver.find_elements(By.CSS_SELECTOR, "#jobs-body tr.task")
                           if r.is_displayed()]
        check(visible() == [], "the tasks are hidden until the array is opened")
        toggle = driver.find_element(By.CSS_SELECTOR, "#jobs-body tr.array .array-toggle")
        toggle.click()
        wait.until(lambda d: len(visible()) == 4)
        check(visible() == ["50000_3", "50000_2", "50000_1", "50000_0"], f"the tasks show as array_task ({visible()})")
        check(toggle.get_attribute("aria-expanded") == "true", "the toggle says it is open")
        shot("04b-job-array")

        # The API refuses another project, to the page's session as to a token.
        status = driver.execute_script(
            "return fetch('/api/v1/projects/bio/jobs', {credentials: 'same-origin'}).then(r => r.status)")
        check(status == 403, f"ann's session gets 403 for project bio's jobs (got {status})")
        # A state-changing request without the CSRF token is refused.
        status = driver.execute_script(
            "return fetch('/api/v1/session', {method: 'DELETE', credentials: 'same-origin'}).then(r => r.status)")
        check(status == 403, f"DELETE without X-CSRF-Token is refused (got {status})")

        # Sign-in takes JSON only: a cross-site form (text/plain) cannot sign a browser in.
        status = driver.execute_script(
            "return fetch('/api/v1/session', {method: 'POST', headers: {'Content-Type': 'text/plain'}, "
            "body: JSON.stringify({token: arguments[0]})}).then(r => r.status)", tokens["eve"])
        check(status == 415, f"a sign-in that is not JSON is refused (got {status})")

        # Phone width.
        driver.set_window_size(390, 844)
        time.sleep(0)  # resize is synchronous; the next screenshot shows the narrow layout
        shot("05-phone")
        driver.set_window_size(1280, 800)

        # Workspaces page (none launched here).
        driver.find_element(By.CSS_SELECTOR, "nav a[data-page=workspaces]").click()
        wait.until(EC.presence_of_element_located((By.ID, "workspaces-table")))
        shot("06-workspaces")
        check_accessible(driver, "workspaces")

        # A sign-out that cannot reach the server says so and stays signed in (the session is
        # still valid there: the next user of this browser would inherit it).
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": True, "latency": 0,
                                                                    "downloadThroughput": -1, "uploadThroughput": -1})
        driver.find_element(By.ID, "sign-out").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "signout-error"), "Signing out failed"))
        check(driver.find_element(By.ID, "who-name").is_displayed(), "an unreachable server leaves her signed in")
        driver.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": False, "latency": 0,
                                                                    "downloadThroughput": -1, "uploadThroughput": -1})
        # Sign out: the cookie session ends.
        driver.find_element(By.ID, "sign-out").click()
        wait.until(EC.visibility_of_element_located((By.ID, "token")))
        status = driver.execute_script("return fetch('/api/v1/session').then(r => r.status)")
        check(status == 401, f"after sign-out the session is gone (got {status})")

        # eve sees bio and nothing of astro; the admin sees data planes.
        sign_in(tokens["eve"])
        wait_status("Page 1: 50 jobs")
        names = [r[1] for r in rows()]
        check(all(n.startswith("bio-sim-") for n in names), "eve sees project bio's jobs only")
        check(driver.find_element(By.CSS_SELECTOR, "nav a[data-page=dataplanes]").is_displayed() is False,
              "a user has no data planes link")
        driver.find_element(By.ID, "sign-out").click()
        wait.until(EC.visibility_of_element_located((By.ID, "token")))
        sign_in(admin.token)
        driver.find_element(By.CSS_SELECTOR, "nav a[data-page=dataplanes]").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "dataplanes-table"), "dp1"))
        check("Slurm 22.05.8" in text_of(driver, "dataplanes-table"),
              "the admin sees the data plane and its Slurm")
        shot("07-data-planes")
        check_accessible(driver, "data planes")

        # Every project at once: the admin's selector offers it, and the list names each job's
        # project (eve's jobs are bio's, which ann could not list).
        Select(driver.find_element(By.ID, "project-select")).select_by_value("*")
        driver.find_element(By.CSS_SELECTOR, "nav a[data-page=jobs]").click()
        wait_status("Page 1: 50 jobs")
        heads = driver.execute_script("return [...document.querySelectorAll('#jobs-table th')].map(h => h.textContent)")
        check(heads[:4] == ["Job", "Name", "User", "Project"], f"every project's list has a Project column ({heads})")
        check("all projects" in driver.find_element(By.TAG_NAME, "h1").text, "the heading says all projects")
        driver.find_element(By.ID, "f-user").send_keys("eve")
        driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]").click()
        wait.until(lambda d: rows() and all(r[2] == "eve" for r in rows()))
        check({r[3] for r in rows()} == {"bio"}, "the admin lists project bio's jobs beside astro's")
        wait.until(EC.text_to_be_present_in_element((By.ID, "charts"), "Node-hours per project per day"))
        legend = driver.execute_script(
            "return [...document.querySelectorAll('#charts figure')].pop().querySelector('.legend').textContent")
        check("astro" in legend and "bio" in legend, f"node-hours are charted per project ({legend})")
        check_accessible(driver, "every project's jobs")
        shot("07b-all-projects")
        Select(driver.find_element(By.ID, "project-select")).select_by_value("astro")

        # The live cluster: 200 nodes and 10,000 queued jobs as the agent reports them; a node the
        # admin drains shows its reason at the next report; a view that stops coming is stale.
        live["view"] = live_view(200, 10000)
        assert agent.call("POST", "/api/v1/dataplanes/dp1/live", live["view"])[0] == 200
        opened = time.time()
        driver.find_element(By.CSS_SELECTOR, "nav a[data-page=cluster]").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "queue-table"), "Queue: 10000 jobs"))
        check(len(driver.find_elements(By.CSS_SELECTOR, "#nodes-table tbody tr")) == 200, "the page lists the 200 nodes")
        check(len(driver.find_elements(By.CSS_SELECTOR, "#queue-table tbody tr")) == 200,
              "and the first 200 of the 10,000 queued jobs")
        print(f"     cluster page: data on screen {time.time() - opened:.2f} s after the click", flush=True)
        queue_text = text_of(driver, "queue-table")
        check("Resources" in queue_text and "Priority" in queue_text, "pending jobs show why they wait")
        controllers = text_of(driver, "controllers-table")
        check("dp1-controller primary no" in controllers and "dp1-controller-backup backup yes serves" in controllers,
              f"the controllers show which one serves ({controllers})")
        nodesets = text_of(driver, "nodesets-table")
        check("cpu 150 150 100 50 0" in nodesets, f"nodesets show desired, current, busy and idle ({nodesets[:80]})")
        wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#nodeset-charts figure[data-nodeset=cpu]")))
        check_accessible(driver, "live cluster")
        shot("07c-cluster")
        live["view"] = live_view(200, 10000, drained=6)
        drained_at = time.time()
        WebDriverWait(driver, 20).until(EC.text_to_be_present_in_element((By.ID, "nodes-table"), "bad DIMM"))
        row = driver.execute_script(
            "return [...document.querySelectorAll('#nodes-table tbody tr')].find(r => r.cells[0].textContent === "
            "'dp1-cpu-6').textContent")
        check("idle+drain" in row and "bad DIMM" in row, f"the drained node shows its state and reason ({row})")
        gpu_row = driver.execute_script(
            "return [...document.querySelectorAll('#nodes-table tbody tr')].find(r => r.cells[1].textContent === "
            "'gpu').cells[6].textContent")
        check(gpu_row == "3b:00.0 87% 39.1/79.6 GiB 61 °C", f"a GPU node shows its GPU's use, memory and temperature ({gpu_row})")
        print(f"     drained node on screen {time.time() - drained_at:.1f} s after its report", flush=True)
        live["view"] = None
        WebDriverWait(driver, 40).until(EC.text_to_be_present_in_element((By.ID, "live-status"), "Stale"))
        check(True, "a view no longer reported is marked stale")
        shot("07d-cluster-stale")

        # Run: no button while EnableHPCJobs is off (checked as ann above: none was shown).
        # The admin turns the flag on in the console; ann launches a workspace and submits.
        driver.find_element(By.CSS_SELECTOR, "nav a[data-page=admin]").click()
        flag = wait.until(EC.element_to_be_clickable((By.ID, "flag-EnableHPCJobs")))
        check(not flag.is_selected(), "EnableHPCJobs starts off")
        flag.click()
        wait.until(lambda d: admin.call("GET", "/api/v1/flags")[1]["flags"]["EnableHPCJobs"] is True)
        check(True, "the admin turned EnableHPCJobs on from the console (PUT with the CSRF token)")
        # Project configuration: a refused value shows next to its field; a good one is stored.
        wait.until(EC.presence_of_element_located((By.ID, "prj-form")))
        workers = driver.find_element(By.ID, "prj-maxWorkers")
        workers.clear()
        workers.send_keys("500")
        driver.find_element(By.ID, "prj-save").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "prj-err-maxWorkers"), "1-128"))
        check(admin.call("GET", "/api/v1/projects/astro")[1]["maxWorkers"] == 2, "a refused configuration changes nothing")
        workers.clear()
        workers.send_keys("3")
        driver.find_element(By.ID, "prj-save").click()
        wait.until(lambda d: admin.call("GET", "/api/v1/projects/astro")[1]["maxWorkers"] == 3)
        check(True, "the admin configured project astro from the console (maxWorkers 3)")
        # A token made in the console is shown once and works.
        driver.find_element(By.ID, "tok-subject").send_keys("zed")
        driver.find_element(By.ID, "tok-projects").send_keys("astro")
        driver.find_element(By.ID, "tok-ttl").send_keys("1h")
        driver.find_element(By.ID, "tok-create").click()
        wait.until(lambda d: d.find_element(By.ID, "new-token").text.strip())
        zed = Api(base, driver.find_element(By.ID, "new-token").text.strip())
        wait.until(EC.text_to_be_present_in_element((By.ID, "tokens-table"), "zed"))
        check(driver.find_element(By.ID, "new-token").text.strip() == zed.token,
              "the new token is listed while its secret stays shown once")
        code, body = zed.call("GET", "/api/v1/session")
        check(code == 200 and body["subject"] == "zed" and body["projects"] == ["astro"],
              f"the token created in the console signs zed in for astro ({code} {body})")
        # A hostile subject is refused with a message whose control characters are escaped.
        driver.execute_script("document.getElementById('tok-subject').value = arguments[0];", "a\x1b]0;pwned\x07b\x00c")
        driver.find_element(By.ID, "tok-create").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "tok-err-subject"), "must be a lowercase name"))
        said = driver.execute_script("return document.getElementById('tok-err-subject').textContent;")
        check(not any(ch in said for ch in "\x1b\x07\x00\n") and "\\x1b" in said,
              f"a subject with ESC, BEL and NUL is refused with them escaped ({said!r})")
        # A job template for project astro, written in the console: a refused option shows its
        # message next to the field and stores nothing; a good one is listed.
        wait.until(EC.presence_of_element_located((By.ID, "tpl-form")))
        driver.find_element(By.ID, "tpl-name").send_keys("two-node-hello")
        driver.find_element(By.ID, "tpl-description").send_keys("hostname on two nodes")
        tpl_script = driver.find_element(By.ID, "tpl-script")
        tpl_script.clear()
        tpl_script.send_keys("#!/bin/bash\n#SBATCH --comment=from-template\nsrun hostname\n")
        driver.find_element(By.ID, "tpl-opt-nodes").send_keys("2")
        driver.find_element(By.ID, "tpl-opt-time").send_keys("10 minutes")
        driver.find_element(By.ID, "tpl-save").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "tpl-err-opt-time"), "must be one token"))
        code, body = admin.call("GET", "/api/v1/projects/astro/templates")
        check(code == 200 and body["templates"] == [], f"a refused template is not stored ({code} {body})")
        t = driver.find_element(By.ID, "tpl-opt-time")
        t.clear()
        t.send_keys("00:10:00")
        driver.find_element(By.ID, "tpl-save").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "templates-table"), "two-node-hello"))
        code, body = admin.call("GET", "/api/v1/projects/astro/templates/two-node-hello")
        check(code == 200 and body["options"] == {"nodes": "2", "time": "00:10:00"} and "--comment=from-template" in body["script"],
              f"the template is stored as written ({code} {body})")
        shot("08-admin")
        check_accessible(driver, "admin")
        driver.find_element(By.ID, "sign-out").click()
        wait.until(EC.visibility_of_element_located((By.ID, "token")))
        sign_in(tokens["ann"])
        wait_status("Page 1: 50 jobs")
        driver.find_element(By.CSS_SELECTOR, "nav a[data-page=workspaces]").click()
        wait.until(EC.element_to_be_clickable((By.ID, "launch-submit"))).click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "workspaces-table"), "ann-astro"))
        check("Pending" in text_of(driver, "workspaces-table"), "the launched workspace is listed, Pending")
        driver.find_element(By.CSS_SELECTOR, "nav a[data-page=jobs]").click()
        wait.until(EC.element_to_be_clickable((By.ID, "run-button"))).click()
        # The admin's template fills the form.
        Select(wait.until(EC.element_to_be_clickable((By.ID, "run-template")))).select_by_value("two-node-hello")
        check("--comment=from-template" in driver.find_element(By.ID, "run-script").get_property("value") and
              driver.find_element(By.ID, "run-opt-nodes").get_property("value") == "2",
              "choosing a template fills the script and its options")
        driver.find_element(By.ID, "run-opt-mem").send_keys("4 G")
        driver.find_element(By.ID, "run-opt-jobName").send_keys("from-console")
        driver.find_element(By.ID, "run-submit").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "err-opt-mem"), "must be one token"))
        check(True, "an option the API refuses shows its message next to the field")
        shot("09-run-form")
        check_accessible(driver, "run form")
        mem = driver.find_element(By.ID, "run-opt-mem")
        mem.clear()
        mem.send_keys("1G")
        driver.find_element(By.ID, "run-submit").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "toast"), "Submitted"))
        # The data plane's agent picks the submission up and reports its job id (done here with
        # the agent's own API calls, as `hpcplane agent` does after sbatch).
        code, body = agent.call("GET", "/api/v1/dataplanes/dp1/submissions")
        subs = body["submissions"] if code == 200 else []
        check(len(subs) == 1 and "--job-name=from-console" in subs[0]["sbatchArgs"] and
              "--mem=1G" in subs[0]["sbatchArgs"] and "--nodes=2" in subs[0]["sbatchArgs"] and
              "--comment=from-template" in subs[0]["script"],
              f"the submission carries the template's and the form's options ({subs})")
        if subs:
            agent.call("POST", f"/api/v1/dataplanes/dp1/submissions/{subs[0]['id']}",
                       {"state": "Submitted", "jobId": 99999, "submitTime": int(time.time()), "cluster": "c1"})
        driver.refresh()
        wait.until(lambda d: rows())
        first = rows()[0]
        check(first[0] == "99999" and first[5] == "api", "the new job heads the list with source api")
        shot("10-submitted")

        # Its detail shows the script it was submitted with; then Cancel from there: the
        # request waits for the data plane's agent.
        open_first_row()
        wait.until(EC.text_to_be_present_in_element((By.ID, "job-script"), "srun hostname"))
        check("--job-name=from-console" in driver.find_element(By.ID, "job-script").text,
              "an API job's detail shows its script and options")
        wait.until(EC.element_to_be_clickable((By.ID, "cancel-job"))).click()
        driver.switch_to.alert.accept()
        wait.until(EC.text_to_be_present_in_element((By.ID, "cancel-note"), "Cancel requested"))
        code, body = agent.call("GET", "/api/v1/dataplanes/dp1/cancellations")
        cancels = body["cancellations"] if code == 200 else []
        check(len(cancels) == 1 and cancels[0]["jobId"] == 99999 and cancels[0]["user"] == "ann",
              f"the cancellation waits for the agent ({cancels})")
        if cancels:
            agent.call("POST", f"/api/v1/dataplanes/dp1/cancellations/{cancels[0]['id']}", {"state": "Done"})
        wait.until(EC.text_to_be_present_in_element((By.ID, "cancel-note"), "Cancelled."))
        shot("11-cancelled")

        # Nothing went wrong in the page itself (a 401/403/415 the test provoked is logged by Chrome
        # as a failed resource load; anything else severe is an error of the console). Outside a
        # network of its own (not root), Chromium also aborts a request in flight with
        # net::ERR_NETWORK_CHANGED whenever an address of the host changes: that is the host.
        isolated = bool(os.environ.get("CONSOLE_TEST_NETNS"))
        logs = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"
                and (isolated or "net::ERR_NETWORK_CHANGED" not in e["message"])
                and "net::ERR_INTERNET_DISCONNECTED" not in e["message"]  # the offline sign-out, above
                and "the server responded with a status of 4" not in e["message"]]
        check(not logs, f"no errors in the browser console ({logs[:3]})")
    finally:
        stop.set()
        shut_down(driver, server, state)
    print(f"screenshots in {ARTIFACTS}")
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        sys.exit(1)


if __name__ == "__main__":
    in_a_network_of_its_own()
    main()
