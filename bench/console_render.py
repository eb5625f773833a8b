#!/usr/bin/env python3
"""The web console's first HPC-tab render with JOBS (1,000,000) records stored, in a real
browser (chromium, headless), REPEATS (20) times: from navigation until the first page of jobs
is on screen, p50/p95, and until its dashboards (the charts over 7 days) are drawn. Beside it,
in the same run: the API request that page makes, alone (the floor the console stands on:
render/API is what the browser adds), and the statistics query the charts make (7 days of the
project's jobs in 6-hour buckets, aggregated by the store). Then the live cluster page with a
data plane of NODES (200) nodes and QUEUED (10,000) queued jobs, from navigation until its
tables are on screen, against its REST call alone.

The records are shipped through the agent API into a real `hpcplane server` on SQLite. The peer,
run after it in the same invocation (SACCT_PEER=1, the default): listing the same number of jobs
with `sacct -a -P` on a real data plane, through bench/history_query.sh: SEED_JOBS (2000) real
jobs run, then slurmdbd's job table copied up to JOBS records in MariaDB, then sacct timed
PEER_REPEATS (3) times. It prints the ratios sacct/render and sacct/statistics.

Usage: /usr/bin/python3 bench/console_render.py [build-dir]
       (env JOBS, REPEATS, SACCT_PEER, SEED_JOBS, PEER_REPEATS)
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "browser"))
from console_test import Api, chromium, free_port, job, live_view, shut_down  # noqa: E402  (the browser test's helpers)

from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
JOBS = int(os.environ.get("JOBS", "1000000"))
REPEATS = int(os.environ.get("REPEATS", "20"))
SACCT_PEER = os.environ.get("SACCT_PEER", "1") == "1"
SEED_JOBS = int(os.environ.get("SEED_JOBS", "2000"))
PEER_REPEATS = os.environ.get("PEER_REPEATS", "3")
NODES = int(os.environ.get("NODES", "200"))
QUEUED = int(os.environ.get("QUEUED", "10000"))


def sacct_peer():
    """history_query.sh with its job table copied up to JOBS; (jobs listed, p50 ms, p95 ms)."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, JOBS=str(min(SEED_JOBS, JOBS)), REPEATS="2", CLONE_TO=str(JOBS), CLONE_REPEATS=PEER_REPEATS)
    run = subprocess.run(["bash", os.path.join(here, "history_query.sh"), BUILD], env=env, capture_output=True,
                         text=True, timeout=7200)
    print("--- peer (bench/history_query.sh):\n" + run.stdout + run.stderr, flush=True)
    if run.returncode != 0:
        raise SystemExit(f"the sacct peer failed ({run.returncode})")
    found = re.findall(r"sacct -a -P \((\d+) lines\)\s+p50\s+(\d+) ms\s+p95\s+(\d+) ms", run.stdout)
    if not found:
        raise SystemExit("the sacct peer printed no timing")
    lines, p50, p95 = (int(x) for x in found[-1])
    return lines - 1, p50, p95  # less sacct's header line


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def timed_get(url, token):
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=120) as r:
        r.read()
    return (time.perf_counter() - t0) * 1000


def shown(driver, selector, text):
    """Whether the element `selector` holds `text`, read in the page (one WebDriver call)."""
    return text in driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent : ''", selector)


def timed_load(driver, url, ready, what):
    """Milliseconds from loading `url` (a new page load) until `ready(driver)`. A load that shows
    nothing in 30 s is tried again, at most twice, and said: Chromium drops a request in flight
    (a module of the page too, which leaves it blank) whenever an address of the host changes,
    as the cluster tests beside this one do all the time (net::ERR_NETWORK_CHANGED)."""
    for attempt in range(3):
        t0 = time.perf_counter()
        driver.get(url)
        driver.refresh()
        try:
            WebDriverWait(driver, 30, poll_frequency=0.05).until(ready)
            return (time.perf_counter() - t0) * 1000
        except TimeoutException:
            errors = [e["message"][:200] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            print(f"{what}: not on screen in 30 s (try {attempt + 1}); the browser's errors: {errors[:3]}", flush=True)
    raise SystemExit(f"{what}: not on screen in three tries")


def charts_drawn(driver):
    """True once the charts are drawn; raises with the page's message when they could not be."""
    found = driver.execute_script(
        "const f = document.querySelector('#chart-figures');"
        "if (!f) return '';"
        "if (f.querySelector('figure svg')) return 'drawn';"
        "const e = f.querySelector('.error'); return e ? e.textContent : ''")
    if found and found != "drawn":
        raise ChartsFailed(found)
    return found == "drawn"


class ChartsFailed(Exception):
    pass


def hpc_tab(driver, base):
    """(ms to the first page of jobs on screen, ms to the charts drawn), from one new load of the
    HPC tab. A load whose charts say they could not be drawn (a request the browser dropped, as in
    timed_load) is tried again, at most twice, and said."""
    for attempt in range(3):
        first_page = timed_load(driver, base + "/#/jobs", lambda d: shown(d, "#jobs-status", "Page 1: 50 jobs"),
                                "HPC tab")
        t0 = time.perf_counter() - first_page / 1000  # the successful load's start
        try:
            WebDriverWait(driver, 60, poll_frequency=0.05).until(charts_drawn)
            return first_page, (time.perf_counter() - t0) * 1000
        except (ChartsFailed, TimeoutException) as e:
            print(f"charts: not drawn (try {attempt + 1}): {str(e).strip() or 'nothing in 60 s'}", flush=True)
    raise SystemExit("charts: not drawn in three tries")


def live_cluster_page(driver, wait, base, admin, agent):
    """The admin's live cluster page with the agent's view of NODES nodes and QUEUED queued jobs:
    (render times, REST call times) in ms, REPEATS each."""
    code, body = agent.call("POST", "/api/v1/dataplanes/dp1/report", {"state": "Healthy"})
    assert code == 200, body
    code, body = agent.call("POST", "/api/v1/dataplanes/dp1/live", live_view(NODES, QUEUED))
    assert code == 200, body
    driver.find_element(By.ID, "sign-out").click()
    wait.until(EC.element_to_be_clickable((By.ID, "token"))).send_keys(admin.token)
    driver.find_element(By.ID, "sign-in").click()
    wait.until(EC.visibility_of_element_located((By.ID, "who-name")))
    render, rest = [], []
    for _ in range(REPEATS):
        # The caption, read in the page: WebDriver's text of the whole table takes longer than the page.
        render.append(timed_load(driver, base + "/#/cluster",
                                 lambda d: shown(d, "#queue-table caption", f"Queue: {QUEUED} job"), "live cluster page"))
        rest.append(timed_get(f"{base}/api/v1/dataplanes/dp1/live", admin.token))
    return render, rest


def main():
    state = tempfile.mkdtemp(prefix="hpcplane-bench-console.")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([os.path.join(BUILD, "hpcplane"), "server", "--listen", f"127.0.0.1:{port}"],
                              env=dict(os.environ, HPCPLANE_STATE_DIR=state),
                              stdout=open(os.path.join(state, "server.log"), "w"), stderr=subprocess.STDOUT)
    driver = None
    try:
        token_file = os.path.join(state, "controlplane", "admin.token")
        deadline = time.time() + 30
        while not (os.path.exists(token_file) and os.path.getsize(token_file)):
            if time.time() > deadline:
                raise SystemExit("the server wrote no admin token")
            time.sleep(0.1)
        admin = Api(base, open(token_file).read().strip())
        while True:
            try:
                if admin.call("GET", "/api/v1/flags")[0] == 200:
                    break
            except urllib.error.URLError:
                pass  # not listening yet
            if time.time() > deadline:
                raise SystemExit("the server did not answer")
            time.sleep(0.1)
        tokens = {}
        for subject, role, projects in [("ann", "user", ["astro"]), ("dp1", "agent", [])]:
            code, body = admin.call("POST", "/api/v1/tokens", {"subject": subject, "role": role, "projects": projects})
            assert code == 201, body
            tokens[subject] = body["token"]
        agent = Api(base, tokens["dp1"])
        now = int(time.time())
        t0 = time.time()
        batch = 2000
        for k in range(0, JOBS, batch):
            # Spread over the last 7 days, so the charts' range holds every record.
            recs = []
            for i in range(k, min(JOBS, k + batch)):
                r = job(i, "astro", "ann" if i % 3 else "bob", now)
                shift = now - 7 * 86400 + (7 * 86400 - 60) * i // JOBS - r["submitTime"]
                for key in ("submitTime", "startTime", "endTime"):
                    r[key] += shift
                recs.append(r)
            code, body = agent.call("POST", "/api/v1/dataplanes/dp1/jobs", {"jobs": recs})
            assert code == 200, body
        print(f"stored {JOBS} records in {time.time() - t0:.1f} s", flush=True)

        driver = chromium(state)
        # Polled every 50 ms (the default, 500 ms, would round every time up to it).
        wait = WebDriverWait(driver, 120, poll_frequency=0.05)
        driver.get(base + "/")
        wait.until(EC.element_to_be_clickable((By.ID, "token"))).send_keys(tokens["ann"])
        driver.find_element(By.ID, "sign-in").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "jobs-status"), "Page 1: 50 jobs"))

        render, charts, api, stats = [], [], [], []
        for _ in range(REPEATS):
            # A new page load each time: the modules, the session check, the first page.
            first_page, drawn = hpc_tab(driver, base)
            render.append(first_page)
            charts.append(drawn)
            api.append(timed_get(f"{base}/api/v1/projects/astro/jobs?limit=50", tokens["ann"]))
            to = int(time.time()) + 1
            stats.append(timed_get(f"{base}/api/v1/projects/astro/jobs/stats?from={to - 7 * 86400}&to={to}&bucket=21600",
                                   tokens["ann"]))
        live, live_api = live_cluster_page(driver, wait, base, admin, agent)
        rss_kib = int(open(f"/proc/{server.pid}/status").read().split("VmHWM:")[1].split()[0])
        print(f"records: {JOBS}; repeats: {REPEATS}")
        print(f"first HPC-tab render (navigation to 50 rows on screen): p50 {pct(render, 50):.0f} ms, p95 {pct(render, 95):.0f} ms")
        print(f"its API request alone (GET /projects/astro/jobs?limit=50): p50 {pct(api, 50):.1f} ms, p95 {pct(api, 95):.1f} ms")
        print(f"dashboards drawn (navigation to the 7-day charts on screen): p50 {pct(charts, 50):.0f} ms, "
              f"p95 {pct(charts, 95):.0f} ms")
        print(f"charts' statistics query (7 days, 6 h buckets): p50 {pct(stats, 50):.0f} ms, p95 {pct(stats, 95):.0f} ms")
        print(f"live cluster page ({NODES} nodes, {QUEUED} queued jobs; navigation to its tables on screen): "
              f"p50 {pct(live, 50):.0f} ms, p95 {pct(live, 95):.0f} ms")
        print(f"its REST call alone (GET /dataplanes/dp1/live): p50 {pct(live_api, 50):.1f} ms, "
              f"p95 {pct(live_api, 95):.1f} ms")
        print(f"ratio live page/REST p50: {pct(live, 50) / max(0.001, pct(live_api, 50)):.1f}; "
              f"dashboards/statistics query p50: {pct(charts, 50) / max(0.001, pct(stats, 50)):.1f}")
        print(f"server peak RSS: {rss_kib / 1024:.0f} MiB")
        print(f"ratio render/API p50: {statistics.median(render) / max(0.001, statistics.median(api)):.1f}", flush=True)
    finally:
        shut_down(driver, server, state)
    if SACCT_PEER:  # after the server is gone: the two never share the machine's cores
        jobs, p50, p95 = sacct_peer()
        print(f"peer: sacct -a -P over {jobs} jobs on the data plane: p50 {p50} ms, p95 {p95} ms")
        print(f"ratio sacct/console render p50: {p50 / max(1.0, pct(render, 50)):.1f}; "
              f"sacct/statistics query p50: {p50 / max(1.0, pct(stats, 50)):.1f}")


if __name__ == "__main__":
    main()
