"""Starts and stops tests/kubernetes/apiserver.py for a test: its own directory, TLS certificate
(a throwaway CA, 127.0.0.1 only), bearer token (0600), state file and kubeconfig.

    with TestApiServer() as api:
        api.kubectl("get", "ns")

As a command, runs another command against a fresh server and stops it after, passing
KUBECONFIG, HPCPLANE_TEST_APISERVER (its URL) and HPCPLANE_TEST_APISERVER_TOKEN_FILE:

    python3 testcluster.py run [--crds] -- COMMAND [ARG...]
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
import ssl

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from realcluster import wait_for  # noqa: E402,F401  (the tests import it from here)
SOURCE = os.path.dirname(os.path.dirname(HERE))


def terminate(proc, timeout=10.0):
    """Stops a process this test started: SIGTERM, then SIGKILL after `timeout` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class TestApiServer:
    def __init__(self, bookmark_interval=0.5, history=1000, crds=False):
        self.dir = tempfile.mkdtemp(prefix="hpcplane-apiserver.")
        self.bookmark_interval, self.history = bookmark_interval, history
        self.crds = crds
        self.proc = None
        self.port = 0
        self.token = os.urandom(24).hex()
        self.token_file = os.path.join(self.dir, "token")
        fd = os.open(self.token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, self.token.encode())
        os.close(fd)
        self.state = os.path.join(self.dir, "state.json")
        self.ca, self.cert, self.key = (os.path.join(self.dir, n) for n in ("ca.crt", "server.crt", "server.key"))
        self._make_certificates()
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")

    def _make_certificates(self):
        def openssl(*args):
            subprocess.run(["openssl", *args], check=True, capture_output=True)
        ca_key = os.path.join(self.dir, "ca.key")
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", ca_key, "-out", self.ca, "-days", "1", "-subj", "/CN=hpcplane-test-ca")
        csr = os.path.join(self.dir, "server.csr")
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", self.key, "-out", csr, "-subj", "/CN=127.0.0.1")
        ext = os.path.join(self.dir, "ext.cnf")
        with open(ext, "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        openssl("x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", ca_key, "-CAcreateserial",
                "-out", self.cert, "-days", "1", "-extfile", ext)
        os.chmod(self.key, 0o600)
        os.unlink(ca_key)

    @property
    def url(self):
        return f"https://127.0.0.1:{self.port}"

    def start(self):
        cmd = [sys.executable, os.path.join(HERE, "apiserver.py"), "--port", str(self.port), "--token-file",
               self.token_file, "--tls-cert", self.cert, "--tls-key", self.key, "--state", self.state,
               "--history", str(self.history), "--bookmark-interval", str(self.bookmark_interval)]
        if self.crds:
            cmd += ["--crds", os.path.join(SOURCE, "deploy/kubernetes/base/crds.yaml")]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            raise RuntimeError(f"apiserver did not start: {line}{self.proc.stdout.read()}")
        self.port = int(line.rsplit(":", 1)[1])
        with open(self.kubeconfig, "w") as f:
            f.write(f"""apiVersion: v1
kind: Config
clusters: [{{name: test, cluster: {{server: "{self.url}", certificate-authority: "{self.ca}"}}}}]
users: [{{name: test, user: {{tokenFile: "{self.token_file}"}}}}]
contexts: [{{name: test, context: {{cluster: test, user: test, namespace: default}}}}]
current-context: test
""")
        os.chmod(self.kubeconfig, 0o600)
        return self

    def stop(self):
        if self.proc:
            terminate(self.proc)
            self.proc.stdout.close()
        self.proc = None

    def restart(self):
        """Stops and starts on the same port with the same objects: open watches break and every
        earlier resourceVersion is expired, as after a real API server's restart."""
        self.stop()
        return self.start()

    def debug(self, what, **params):
        query = "&".join(f"{k}={v}" for k, v in params.items())
        req = urllib.request.Request(f"{self.url}/debug/{what}?{query}", method="POST",
                                     headers={"Authorization": f"Bearer {self.token}"})
        ctx = ssl.create_default_context(cafile=self.ca)
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return r.status

    def requests(self, agent):
        """How many requests clients whose User-Agent starts with `agent` sent, by "verb resource"."""
        req = urllib.request.Request(f"{self.url}/debug/requests?agent={agent}",
                                     headers={"Authorization": f"Bearer {self.token}"})
        ctx = ssl.create_default_context(cafile=self.ca)
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return json.loads(r.read())

    def kubectl(self, *args, check=True, input=None, timeout=60):
        env = dict(os.environ, KUBECONFIG=self.kubeconfig, HOME=self.dir)
        r = subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, input=input,
                           timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({r.returncode}): {r.stderr}")
        return r

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def main(argv):
    if len(argv) < 3 or argv[0] != "run" or "--" not in argv:
        sys.exit("usage: testcluster.py run [--crds] -- COMMAND [ARG...]")
    sep = argv.index("--")
    with TestApiServer(crds="--crds" in argv[1:sep]) as api:
        env = dict(os.environ, KUBECONFIG=api.kubeconfig, HPCPLANE_TEST_APISERVER=api.url,
                   HPCPLANE_TEST_APISERVER_TOKEN_FILE=api.token_file)
        return subprocess.run(argv[sep + 1:], env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
