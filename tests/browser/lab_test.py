#!/usr/bin/env python3
"""JupyterLab in a workspace, in a real browser against real Slurm. The project's workspace
environment is examples/jupyterlab-environment.yaml (Debian's jupyterlab; built into the shared
image store on first use). ann launches a workspace, opens JupyterLab from the Workspaces page
(the server's proxy; the agent starts it in her login pod as her), and a Python kernel run over
JupyterLab's WebSocket (through the agent's tunnel) says it is ann in /datasets/astro and submits
a Slurm job as her. Another member, no credentials and an expired token are refused; stopping
the workspace closes the kernel's socket. Screenshots go to <build>/console-artifacts (lab-*.png).

Usage: lab_test.py BUILD_DIR
"""
import base64
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_test import (ARTIFACTS, BUILD, Api, LocalCluster, browser_errors, check, check_accessible,  # noqa: E402
                          chromium, finish, poll, tear_down_cluster)

from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

HPCPLANE = os.path.join(BUILD, "hpcplane")
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENVIRONMENT = os.path.join(SOURCE, "examples", "jupyterlab-environment.yaml")

# Runs `code` in a new kernel of the page's JupyterLab over its channels WebSocket; resolves to
# {out} (the stream output) or {error}.
RUN_IN_KERNEL = """
const [base, code, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
(async () => {
  const r = await fetch(base + 'api/kernels', {method: 'POST', headers: {'Content-Type': 'application/json'},
                                               body: JSON.stringify({name: 'python3'})});
  if (!r.ok) return done({error: 'kernel: ' + r.status + ' ' + await r.text()});
  const kernel = await r.json();
  const sock = new WebSocket('ws://' + location.host + base + 'api/kernels/' + kernel.id + '/channels');
  window.labSocket = sock;
  const id = 'm' + Date.now();
  let out = '';
  const send = (msg_id, msg_type, content) => sock.send(JSON.stringify({
    header: {msg_id, username: '', session: 'lab-test', msg_type, version: '5.3', date: new Date().toISOString()},
    parent_header: {}, metadata: {}, channel: 'shell', buffers: [], content}));
  // As JupyterLab does: ask for the kernel's info until it answers (a kernel's first start may
  // take a while, and what comes before it is connected may be lost), then run the code.
  let ready = false;
  const ask = () => { if (!ready) { send('info' + Date.now(), 'kernel_info_request', {}); setTimeout(ask, 2000); } };
  sock.onopen = ask;
  sock.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    if (!ready && m.msg_type === 'kernel_info_reply') {
      ready = true;
      send(id, 'execute_request', {code, silent: false, store_history: false, user_expressions: {},
                                   allow_stdin: false, stop_on_error: true});
      return;
    }
    if (!m.parent_header || m.parent_header.msg_id !== id) return;
    if (m.msg_type === 'stream') out += m.content.text;
    if (m.msg_type === 'error') out += 'ERROR ' + m.content.ename + ': ' + m.content.evalue;
    if (m.msg_type === 'status' && m.content.execution_state === 'idle') done({out, kernel: kernel.id});
  };
  sock.onclose = (e) => { window.labClosed = {code: e.code, reason: e.reason}; done({error: 'closed ' + e.code + ' ' + e.reason}); };
})().catch((e) => done({error: String(e)}));
"""


def status_of(base, path, token=None, headers=None):
    req = urllib.request.Request(base + path, headers=dict(headers or {}))
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def upgrade_status(port, path, token):
    """The status line's code of a WebSocket upgrade request (raw: urllib cannot send one)."""
    key = base64.b64encode(os.urandom(16)).decode()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                   f"Authorization: Bearer {token}\r\n\r\n").encode())
        return int(s.recv(4096).split(b" ", 2)[1])


def main():
    cluster = LocalCluster("lab", 243)
    os.makedirs(ARTIFACTS, exist_ok=True)
    name, port, base, state, hp = cluster.name, cluster.port, cluster.base, cluster.state, cluster.hp
    driver = None
    try:
        started = time.time()
        built = hp("environments", "build", "-f", ENVIRONMENT, timeout=900)
        if built.returncode != 0:
            raise SystemExit(f"building the JupyterLab environment failed: {built.stdout}{built.stderr}")
        print(f"jupyterlab-26.05 ready in {time.time() - started:.0f} s")
        admin = cluster.up()
        tokens = {}
        for user in ("ann", "bob"):
            code, body = admin.call("POST", "/api/v1/tokens", {"subject": user, "role": "user", "projects": ["astro"]})
            assert code == 201, body
            tokens[user] = body["token"]
        ann = Api(base, tokens["ann"])
        code, body = admin.call("PUT", "/api/v1/projects/astro", {
            "dataPlane": name, "maxWorkers": 2, "idleTimeout": "20s", "workspaceEnvironment": "jupyterlab-26.05"})
        assert code == 200, body

        def slurm_offered():
            code, body = admin.call("GET", "/api/v1/dataplanes")
            return code == 200 and any(d["name"] == name and d["slurm"]["offered"] for d in body["dataPlanes"])
        poll("the data plane to report Slurm", slurm_offered, 60)
        code, body = ann.call("POST", "/api/v1/projects/astro/workspaces", {"maxWorkers": 2})
        assert code in (200, 201, 202), (code, body)
        workspace = body["id"]

        def ready():
            code, body = ann.call("GET", f"/api/v1/projects/astro/workspaces/{workspace}")
            return code == 200 and body["phase"] in ("Ready", "Failed") and body
        w = poll("ann's workspace to turn Ready", ready, 240)
        check(w["phase"] == "Ready", f"ann's workspace on the JupyterLab environment is Ready ({w.get('message')})")
        lab = f"/projects/astro/workspaces/{workspace}/lab/"

        # Refused before anything starts: no credentials, another member, an expired token.
        check(status_of(base, lab + "api/status") == 401, "JupyterLab without credentials: 401")
        check(status_of(base, lab + "api/status", tokens["bob"]) == 403, "JupyterLab for another member: 403")
        check(upgrade_status(port, lab + "api/events/subscribe", tokens["bob"]) == 403,
              "another member's WebSocket upgrade to it: 403")
        code, body = admin.call("POST", "/api/v1/tokens", {"subject": "ann", "role": "user", "projects": ["astro"],
                                                           "ttl": "1s"})
        assert code == 201, body
        time.sleep(2)  # past the token's expiry: nothing to poll, the clock is what is tested
        check(status_of(base, lab + "api/status", body["token"]) == 401, "JupyterLab with ann's expired token: 401")

        driver = chromium(state)
        wait = WebDriverWait(driver, 30, ignored_exceptions=[StaleElementReferenceException])
        shot = lambda n: driver.save_screenshot(os.path.join(ARTIFACTS, f"lab-{n}.png"))
        driver.get(base + "/")
        wait.until(EC.element_to_be_clickable((By.ID, "token"))).send_keys(tokens["ann"])
        driver.find_element(By.ID, "sign-in").click()
        wait.until(EC.visibility_of_element_located((By.ID, "who-name")))
        driver.find_element(By.CSS_SELECTOR, "nav a[data-page=workspaces]").click()
        link = wait.until(EC.element_to_be_clickable((By.ID, f"lab-{workspace}")))
        check_accessible(driver, "workspaces with JupyterLab")
        console = driver.current_window_handle
        opened = time.time()
        link.click()
        wait.until(lambda d: len(d.window_handles) == 2)
        driver.switch_to.window([h for h in driver.window_handles if h != console][0])
        WebDriverWait(driver, 150).until(EC.presence_of_element_located((By.CSS_SELECTOR, ".jp-Launcher")))
        print(f"JupyterLab on screen {time.time() - opened:.1f} s after the click (its first start included)")
        check(driver.current_url.startswith(base + lab), f"JupyterLab is served under the workspace's path "
              f"({driver.current_url})")
        shot("01-launcher")

        driver.set_script_timeout(120)
        code = ("import getpass, os, subprocess\n"
                "print(getpass.getuser(), os.getcwd())\n"
                "r = subprocess.run(['sbatch', '--parsable', '--hold', '--wrap', 'hostname'], capture_output=True,"
                " text=True)\n"
                "print('job', r.stdout.strip() or r.stderr.strip())\n")
        result = driver.execute_async_script(RUN_IN_KERNEL, lab, code)
        out = result.get("out", "")
        print(f"kernel: {result}")
        check(out.startswith("ann /datasets/astro"), f"the kernel runs as ann in her dataset directory ({out!r})")
        job = out.split("job ", 1)[1].strip() if "job " in out else ""
        check(job.isdigit(), f"sbatch from the kernel submits a job ({job!r})")
        if job.isdigit():
            squeue = hp("workspace", "exec", workspace, "--", "squeue", "-h", "-j", job, "-o", "%u %T")
            check(squeue.stdout.strip().startswith("ann "), f"the kernel's job is ann's in Slurm ({squeue.stdout!r})")
            hp("workspace", "exec", workspace, "--", "scancel", job)
        code, body = admin.call("GET", "/api/v1/audit?limit=100")
        check(code == 200 and any(e["action"] == "lab.open" and e["actor"] == "ann" for e in body.get("entries", [])),
              f"opening JupyterLab is audited ({code})")
        errors = [e for e in browser_errors(driver) if "favicon" not in e]
        print(f"browser log (JupyterLab's own): {errors[:5]}")

        # Stopping the workspace ends its JupyterLab: the kernel's socket closes, the path answers 409.
        code, body = ann.call("DELETE", f"/api/v1/projects/astro/workspaces/{workspace}")
        check(code in (200, 202), f"ann stops her workspace ({code} {body})")
        closed = poll("the kernel's socket to close", lambda: driver.execute_script("return window.labClosed"), 120)
        check(bool(closed), f"the kernel's socket closed when the workspace stopped ({closed})")
        check(status_of(base, lab + "api/status", tokens["ann"]) in (404, 409),
              "JupyterLab of a stopped workspace is refused")
    finally:
        tear_down_cluster(driver, HPCPLANE, cluster.env, state)
    finish()


if __name__ == "__main__":
    main()
