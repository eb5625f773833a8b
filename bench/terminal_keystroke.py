#!/usr/bin/env python3
"""Terminal in the browser: keystroke round trip against `hpcplane workspace exec`, in one run.

Brings up real Slurm with the control plane (`hpcplane up --control-plane`), launches ann's
workspace through the API and opens a terminal in it as the console does, over both of its
transports. Over the WebSocket (the console's): each keystroke is timed from its send until its
echo comes back (the server, the tunnel to the agent's socket, the shell on its pseudo-terminal
in the login pod, back). Over long polls (where the server terminates TLS itself): from its POST
.../input until its echo comes back on GET .../output (the agent's input poll and output post),
over keep-alive connections as a browser's. The peer, on the same cluster: one command run with
`hpcplane workspace exec ann-astro -- true` (the CLI's way into the same login pod), start to exit.

Usage: terminal_keystroke.py BUILD_DIR   (env KEYS=200 EXECS=20)
Prints p50/p99 of each and the ratios exec/keystroke.
"""
import base64
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import websocket  # python3-websocket (websocket-client)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "browser"))
from console_test import Api, free_port, poll, tear_down_cluster  # noqa: E402  (the browser test's helpers)

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
HPCPLANE = os.path.join(BUILD, "hpcplane")
KEYS = int(os.environ.get("KEYS", "200"))
EXECS = int(os.environ.get("EXECS", "20"))


class Terminal:
    """One terminal session over two keep-alive connections: one types, one reads."""

    def __init__(self, port, token, session):
        self.headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
        self.path = f"/api/v1/terminals/{session}"
        self.typing = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.reading = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.offset = 0
        self.screen = b""

    def type(self, keys):
        self.typing.request("POST", self.path + "/input", json.dumps({"data": keys}), self.headers)
        r = self.typing.getresponse()
        body = r.read()
        assert r.status == 200, body

    def read_until(self, expect, timeout=10):
        """Reads output until `expect` (bytes) is in what came since this call began."""
        seen = b""
        deadline = time.time() + timeout
        while expect not in seen:
            if time.time() > deadline:
                raise SystemExit(f"the terminal never showed {expect!r}; it shows {self.screen[-300:]!r}")
            self.reading.request("GET", f"{self.path}/output?offset={self.offset}&wait=5", headers=self.headers)
            r = self.reading.getresponse()
            o = json.loads(r.read())
            assert r.status == 200, o
            data = base64.b64decode(o["data"])
            seen += data
            self.screen += data
            self.offset = o["next"]
            if o["closed"]:
                raise SystemExit(f"the terminal closed: {o['reason']}")


class SocketTerminal:
    """One terminal over the console's WebSocket."""

    def __init__(self, port, token, cols=120, rows=40):
        self.ws = websocket.create_connection(
            f"ws://127.0.0.1:{port}/api/v1/projects/astro/workspaces/ann-astro/terminal?cols={cols}&rows={rows}",
            header=["Authorization: Bearer " + token], timeout=30)
        self.screen = b""

    def type(self, keys):
        self.ws.send_binary(keys.encode())

    def read_until(self, expect, timeout=10):
        seen = b""
        deadline = time.time() + timeout
        while expect not in seen:
            if time.time() > deadline:
                raise SystemExit(f"the terminal never showed {expect!r}; it shows {self.screen[-300:]!r}")
            op, data = self.ws.recv_data()
            if op == websocket.ABNF.OPCODE_CLOSE:
                raise SystemExit(f"the terminal closed: {data[2:]!r}")
            seen += data
            self.screen += data


def keystrokes(term):
    """Round trips of KEYS single keystrokes (ms), each from its send until its echo."""
    term.type("echo ready-$((40+2))\n")
    term.read_until(b"ready-42")
    times = []
    for i in range(KEYS):
        key = "abcdefghij"[i % 10]
        start = time.perf_counter()
        term.type(key)
        term.read_until(key.encode())
        times.append((time.perf_counter() - start) * 1000)
        if i % 50 == 49:
            term.type("\x15")  # Ctrl-U: a fresh line
            time.sleep(0.05)
    term.type("\x15exit\n")
    return times


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main():
    state = tempfile.mkdtemp(prefix="hpcplane-bench-terminal.")
    name = f"bterm{os.getpid() % 100000}"
    port = free_port()
    env = dict(os.environ, HPCPLANE_STATE_DIR=state, HPCPLANE_CLUSTER=name)
    manifest = os.path.join(state, "cluster.yaml")
    # 10.242/16: no other test or benchmark takes addresses there.
    with open(manifest, "w") as f:
        f.write(f"apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: {name}\nspec:\n"
                f"  network:\n    subnet: 10.242.{random.Random(os.getpid()).randrange(250)}.0/24\n")
    try:
        up = subprocess.run([HPCPLANE, "up", "-f", manifest, "--detach", "--control-plane", f"127.0.0.1:{port}"],
                            env=env, capture_output=True, text=True, timeout=300)
        if up.returncode != 0:
            raise SystemExit(f"hpcplane up failed ({up.returncode}): {up.stdout}{up.stderr}")
        base = f"http://127.0.0.1:{port}"
        admin = Api(base, open(os.path.join(state, "controlplane", "admin.token")).read().strip())
        code, body = admin.call("POST", "/api/v1/tokens", {"subject": "ann", "role": "user", "projects": ["astro"]})
        assert code == 201, body
        ann = Api(base, body["token"])
        code, body = admin.call("PUT", "/api/v1/projects/astro", {"dataPlane": name, "maxWorkers": 1})
        assert code == 200, body

        def offered():
            code, body = admin.call("GET", "/api/v1/dataplanes")
            return code == 200 and any(d["name"] == name and d["slurm"]["offered"] for d in body["dataPlanes"])
        poll("the data plane to report Slurm", offered, 90)
        code, body = ann.call("POST", "/api/v1/projects/astro/workspaces", {})
        assert code == 202, body
        poll("ann's workspace to be Ready",
             lambda: ann.call("GET", "/api/v1/projects/astro/workspaces/ann-astro")[1].get("phase") == "Ready", 180)

        socket_keys = keystrokes(SocketTerminal(port, ann.token))
        code, body = ann.call("POST", "/api/v1/projects/astro/workspaces/ann-astro/terminals", {"cols": 120, "rows": 40})
        assert code == 201, body
        poll_keys = keystrokes(Terminal(port, ann.token, body["id"]))

        execs = []
        for _ in range(EXECS):
            start = time.perf_counter()
            r = subprocess.run([HPCPLANE, "workspace", "exec", "ann-astro", "--", "true"], env=env,
                               capture_output=True, text=True, timeout=60)
            execs.append((time.perf_counter() - start) * 1000)
            assert r.returncode == 0, r.stderr

        e50, e99 = statistics.median(execs), percentile(execs, 99)
        for transport, times in (("WebSocket", socket_keys), ("long polls", poll_keys)):
            k50, k99 = statistics.median(times), percentile(times, 99)
            print(f"terminal keystroke round trip over {transport} ({KEYS} keys): p50 {k50:.2f} ms, p99 {k99:.2f} ms"
                  f"; ratio exec/keystroke p50 {e50 / k50:.1f}, p99 {e99 / k99:.1f}")
        print(f"hpcplane workspace exec -- true ({EXECS} runs): p50 {e50:.1f} ms, p99 {e99:.1f} ms")
    finally:
        tear_down_cluster(None, HPCPLANE, env, state)


if __name__ == "__main__":
    main()
