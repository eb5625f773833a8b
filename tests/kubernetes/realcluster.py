"""A real Kubernetes cluster on this machine, for hpcplane's tests: Kubernetes' and etcd's own
code built here from the Go modules tests/kubernetes/cluster/go.mod pins (one binary, `kube`), and
kubectl, CoreDNS and Helm from the same module, and Debian's containerd, runc and CNI plugins.

    with RealCluster(BUILD_DIR, tag="rk1", octet=246) as k:
        k.import_image(layout_dir, "hpcplane.test/slurm", "26.05")
        k.kubectl("get", "nodes")

The control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, CoreDNS) runs
here on a bridge of the cluster's own; each node is a network namespace with its own containerd,
kubelet and kube-proxy (nftables), its own cgroup root and directories, its pods on a subnet of
its own routed between the nodes. Certificates and kubeconfigs are made for each run. Nothing is
pulled: the sandbox image (tests/kubernetes/cluster/pause) and the images a test imports are
built here.

Addresses (second octet `octet`): bridge 10.O.0.1 (API server :6443, etcd, CoreDNS :53), node i
10.O.0.(10+i) with pods on 10.O.(8+i).0/24, Services on 10.O.16.0/22.

As a command: `realcluster.py up BUILD_DIR` starts one and waits for Ctrl-C (KUBECONFIG printed);
`realcluster.py binaries BUILD_DIR` only builds the binaries; `realcluster.py clean TAG` removes what a
run of cluster TAG left when it was killed before its stop (the tests use TAG rk, the benchmark rb).
"""
import concurrent.futures
import fcntl
import glob
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
CLUSTER_MODULE = os.path.join(HERE, "cluster")
PAUSE_IMAGE = "hpcplane.test/pause:1"
# Host settings the kubelet sets at its start (its kernel tunables, not per network namespace):
# restored when the cluster stops.
KUBELET_SYSCTLS = ["vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
                   "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"]


def proc_cpu_rss(pid):
    """CPU seconds a process used so far, and its resident MiB (the benchmarks' cost of a process)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
    return cpu, rss


def wait_for(what, predicate, timeout=20.0, interval=0.05, max_interval=None):
    """Polls `predicate` until it returns something true (returned), or fails naming `what`. The
    interval doubles after each poll up to `max_interval` (default: it stays `interval`): a
    predicate that runs kubectl costs a tenth of a second of CPU, which a minute's wait at a
    fixed half second took from the tests beside it."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(max(0.0, min(interval, deadline - time.monotonic())))
        interval = min(interval * 2, max_interval or interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def run(*argv, check=True, **kw):
    r = subprocess.run(list(argv), capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _digest(paths, extra=""):
    h = hashlib.sha256(extra.encode())
    for p in sorted(paths):
        h.update(p.encode())
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def go_sources(module):
    return [p for p in glob.glob(os.path.join(module, "**"), recursive=True)
            if os.path.isfile(p) and (p.endswith(".go") or os.path.basename(p) in ("go.mod", "go.sum"))]


def version_flags(module):
    """What Kubernetes' own build stamps in (its version, from go.mod's pin): the kubelet reports
    it to the API and clients check it (without, every component says v0.0.0-master)."""
    with open(os.path.join(module, "go.mod")) as f:
        version = next(line.split()[-1] for line in f if line.strip().startswith("k8s.io/kubernetes v"))
    major, minor = version[1:].split(".")[:2]
    pkg = "k8s.io/component-base/version"
    return " ".join(f"-X {pkg}.{k}={v}" for k, v in
                    (("gitVersion", version), ("gitMajor", major), ("gitMinor", minor),
                     ("gitTreeState", "clean"), ("buildDate", "1970-01-01T00:00:00Z")))


def _version_tuple(text):
    return tuple(int(x) for x in text.split(".") if x.isdigit())


def go_wanted():
    """The `go` line of the module: the least Go that builds it."""
    with open(os.path.join(CLUSTER_MODULE, "go.mod")) as f:
        return next(line.split()[1] for line in f if line.startswith("go "))


def find_go():
    """The first Go new enough for the modules: on PATH, Go's usual place, or where
    scripts/install-deps.sh puts one (never one a go.mod's toolchain line would fetch)."""
    wanted = go_wanted()
    candidates = [shutil.which("go"), "/usr/local/go/bin/go", *sorted(glob.glob("/opt/hpcplane/go-*/bin/go"))]
    for go in filter(None, candidates):
        if not os.access(go, os.X_OK):
            continue
        r = run(go, "env", "GOVERSION", check=False, env=dict(os.environ, GOTOOLCHAIN="local"))
        have = r.stdout.strip().removeprefix("go")
        if r.returncode == 0 and _version_tuple(have) >= _version_tuple(wanted):
            return go
    raise RuntimeError(f"no Go {wanted} or newer (scripts/install-deps.sh test installs one)")


def binaries_dir(build_dir):
    return os.path.join(os.path.abspath(build_dir), "kubernetes-real", "bin")


def binaries_cache():
    """Where built binaries are kept for every checkout on this machine, by the digest of their
    inputs: a fresh clone (or a `make clean`) finds them there instead of building for minutes."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "hpcplane", "kubernetes-binaries")


def build_binaries(build_dir, log=print):
    """Builds kube, kubectl, coredns, pause and helm into
    BUILD_DIR/kubernetes-real/bin, again only when their sources or the Go version changed: the
    binaries are kept in binaries_cache() by the digest of go.mod, go.sum, the sources and the Go
    version, and Go's own build cache makes a rebuild after a change quick. Concurrent callers
    (make test starts one early, the tests' fixture another) take turns under a lock, and the
    second finds the work done."""
    out = binaries_dir(build_dir)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _build_binaries_locked(out, log)
    return out


# What build_binaries makes: its name in bin/ and its package in the module. One module, so that
# the packages they share (client-go, apimachinery, the API types: most of the work) are compiled
# once, in one `go build` that keeps both cores busy; Helm and CoreDNS at the releases made for this
# Kubernetes (Helm 3.19 is Helm's release for Kubernetes 1.34).
BINARIES = [("kube", "."), ("pause", "./pause"), ("coredns", "./coredns"), ("helm", "helm.sh/helm/v3/cmd/helm"),
            ("kubectl", "k8s.io/kubernetes/cmd/kubectl")]


def _build_binaries_locked(out, log):
    go = find_go()
    go_version = run(go, "version").stdout
    want = _digest(go_sources(CLUSTER_MODULE), go_version + version_flags(CLUSTER_MODULE))
    names = [name for name, _ in BINARIES]
    if not all(read_text(os.path.join(out, name + ".inputs")) == want and os.path.exists(os.path.join(out, name))
               for name in names):
        _build_or_take_from_cache(go, want, out, log)


def _build_or_take_from_cache(go, want, out, log):
    names = [name for name, _ in BINARIES]
    cached = os.path.join(binaries_cache(), want)
    if not all(os.path.exists(os.path.join(cached, name)) for name in names):
        log(f"building {', '.join(names)} (go build in {os.path.relpath(CLUSTER_MODULE, SOURCE)}; "
            "the first build takes minutes)")
        t = time.monotonic()
        work = cached + ".new"
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        # The Go this machine has, never one fetched for a go.mod's toolchain line.
        env = dict(os.environ, GOFLAGS="-buildvcs=false -trimpath", CGO_ENABLED="0", GOTOOLCHAIN="local")
        run(go, "build", f"-ldflags=-s -w {version_flags(CLUSTER_MODULE)}", "-o", work + "/",
            *[package for _, package in BINARIES], cwd=CLUSTER_MODULE, env=env)
        # `go build -o DIR/` names a binary after its package's directory: the module's own is
        # named after the module path.
        os.rename(os.path.join(work, os.path.basename(module_path(CLUSTER_MODULE))), os.path.join(work, "kube"))
        shutil.rmtree(cached, ignore_errors=True)
        os.replace(work, cached)
        log(f"built {', '.join(names)} in {time.monotonic() - t:.0f} s")
    else:
        log(f"{', '.join(names)}: built before with the same inputs ({cached})")
    os.utime(cached)  # used now: the pruning below keeps it
    for name in names:
        shutil.copy2(os.path.join(cached, name), os.path.join(out, name + ".new"))
        os.replace(os.path.join(out, name + ".new"), os.path.join(out, name))
        with open(os.path.join(out, name + ".inputs"), "w") as f:
            f.write(want)
    # The cache keeps the inputs used last (a few checkouts or branches), not every one ever built.
    kept = sorted(glob.glob(os.path.join(binaries_cache(), "*")), key=os.path.getmtime, reverse=True)
    for old in kept[3:]:
        shutil.rmtree(old, ignore_errors=True)


def module_path(module):
    with open(os.path.join(module, "go.mod")) as f:
        return next(line.split()[1] for line in f if line.startswith("module "))


def kubectl_path(build_dir):
    """The kubectl built with the cluster (build_binaries), never whatever kubectl is on PATH."""
    path = os.path.join(binaries_dir(build_dir), "kubectl")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{path} is not built: run `make kubernetes-binaries`")
    return path


def pack_image(rootfs, layout, tag, entrypoint=None, cmd=None, user=None):
    """An OCI image layout of one layer from a directory (Debian's umoci)."""
    if not os.path.exists(os.path.join(layout, "oci-layout")):
        run("umoci", "init", "--layout", layout)
    ref = f"{layout}:{tag}"
    run("umoci", "new", "--image", ref)
    run("umoci", "insert", "--image", ref, rootfs, "/")
    config = ["umoci", "config", "--image", ref, "--author=hpcplane tests"]
    if entrypoint:
        config += [f"--config.entrypoint={a}" for a in entrypoint]
    if cmd:
        config += [f"--config.cmd={a}" for a in cmd]
    if user:
        config += [f"--config.user={user}"]
    run(*config)


def layout_tar(layout, out):
    """`ctr images import` takes an image layout as a tar."""
    run("tar", "-C", layout, "-cf", out, ".")
    return out


class Process:
    """A process this cluster started, its output in a log file; stopped by its PID."""

    def __init__(self, name, argv, log_dir, netns=None, env=None):
        self.name = name
        self.log_path = os.path.join(log_dir, f"{name}.log")
        self.log = open(self.log_path, "a")
        if netns:
            # Only the network namespace: kubelet and containerd must share the mount namespace
            # (the kubelet's volumes are what the containers mount).
            argv = ["nsenter", f"--net=/run/netns/{netns}", "--", *argv]
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env)

    def running(self):
        return self.proc.poll() is None

    def stop(self, timeout=20.0, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def tail(self, n=4000):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-n:]
        except OSError:
            return ""


class Pki:
    """A throwaway CA and the certificates of one cluster (EC P-256, valid one day)."""

    def __init__(self, directory):
        self.dir = directory
        os.makedirs(directory, mode=0o700, exist_ok=True)
        self.ca = self.path("ca.crt")
        self.ca_key = self.path("ca.key")
        run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", self.ca_key, "-out", self.ca, "-days", "1", "-subj", "/CN=hpcplane-test-kubernetes-ca")
        # The service accounts' token signing key.
        self.sa_key, self.sa_pub = self.path("sa.key"), self.path("sa.pub")
        run("openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", self.sa_key)
        run("openssl", "ec", "-in", self.sa_key, "-pubout", "-out", self.sa_pub)
        for p in (self.ca_key, self.sa_key):
            os.chmod(p, 0o600)

    def path(self, name):
        return os.path.join(self.dir, name)

    def issue(self, name, cn, org=None, ips=(), dns=(), server=False):
        key, csr, crt, ext = (self.path(f"{name}.{x}") for x in ("key", "csr", "crt", "ext"))
        subject = f"/CN={cn}" + (f"/O={org}" if org else "")
        run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
            "-out", csr, "-subj", subject)
        sans = [f"IP:{i}" for i in ips] + [f"DNS:{d}" for d in dns]
        with open(ext, "w") as f:
            f.write(f"extendedKeyUsage={'serverAuth' if server else 'clientAuth'}\n")
            f.write("keyUsage=critical,digitalSignature,keyEncipherment\n")
            if sans:
                f.write(f"subjectAltName={','.join(sans)}\n")
        run("openssl", "x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self.ca_key, "-CAcreateserial",
            "-out", crt, "-days", "1", "-extfile", ext)
        os.chmod(key, 0o600)
        os.unlink(csr)
        os.unlink(ext)
        return crt, key

    def kubeconfig(self, name, server, cn, org=None):
        crt, key = self.issue(name, cn, org)
        path = self.path(f"{name}.kubeconfig")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps({
                "apiVersion": "v1", "kind": "Config",
                "clusters": [{"name": "test", "cluster": {"server": server, "certificate-authority": self.ca}}],
                "users": [{"name": name, "user": {"client-certificate": crt, "client-key": key}}],
                "contexts": [{"name": "test", "context": {"cluster": "test", "user": name}}],
                "current-context": "test"}, indent=1))
        return path


class Node:
    def __init__(self, cluster, index):
        self.index = index
        self.name = f"{cluster.tag}-n{index}"
        self.netns = f"hpk{cluster.tag}n{index}"
        self.veth = f"hpk{cluster.tag}v{index}"
        self.ip = f"10.{cluster.octet}.0.{10 + index}"
        self.pod_cidr = f"10.{cluster.octet}.{8 + index}.0/24"
        self.dir = os.path.join(cluster.dir, "nodes", self.name)
        self.cgroup_root = f"hpcplane-kube-{cluster.tag}-n{index}"
        self.socket = os.path.join(self.dir, "containerd", "containerd.sock")
        self.containerd = self.kubelet = self.proxy = None
        self.powered_off = False

    def ctr(self, *args, check=True, timeout=600):
        return run("ctr", "--address", self.socket, "--namespace", "k8s.io", *args, check=check, timeout=timeout)


class RealCluster:
    def __init__(self, build_dir, tag="rk", octet=246, nodes=2, log=None, audit_users=()):
        if not (1 <= len(tag) <= 6 and tag.isalnum()):
            raise ValueError("tag: 1-6 letters or digits (it names network namespaces and links)")
        self.build_dir = os.path.abspath(build_dir)
        self.tag, self.octet = tag, octet
        self.log = log or (lambda line: print(f"[realcluster] {line}", file=sys.stderr, flush=True))
        self.dir = tempfile.mkdtemp(prefix=f"hpcplane-kube-{tag}.")
        os.chmod(self.dir, 0o755)  # pods run as other users and read their volumes under it
        self.logs = os.path.join(self.dir, "logs")
        os.makedirs(self.logs)
        self.bridge = f"hpk{tag}br"
        self.host_ip = f"10.{octet}.0.1"
        self.service_cidr = f"10.{octet}.16.0/22"
        self.cluster_cidr = f"10.{octet}.8.0/21"
        self.api_url = f"https://{self.host_ip}:6443"
        self.nodes = [Node(self, i) for i in range(1, nodes + 1)]
        self.control = {}
        self.sysctls = {}
        self.netns_before = set()
        self.bin = None
        self.kubectl_binary = None
        self.kubeconfig = None
        # Requests of these users the API server logs (metadata only) to audit_log, one JSON
        # event a line: what a benchmark counts a client's requests by.
        self.audit_users = list(audit_users)
        self.audit_log = os.path.join(self.dir, "audit.log")

    # --- public -------------------------------------------------------------------------------
    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        t0 = time.monotonic()
        self.bin = build_binaries(self.build_dir, self.log)
        self.kubectl_binary = kubectl_path(self.build_dir)
        self.kube = os.path.join(self.bin, "kube")
        self.netns_before = set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()
        # Kubelets set these; a cluster without any (an API server alone) must not restore them
        # under another cluster's live kubelets when it stops.
        for s in KUBELET_SYSCTLS if self.nodes else []:
            with open(f"/proc/sys/{s}") as f:
                self.sysctls[s] = f.read().strip()
        with open(os.path.join(self.dir, "sysctls.json"), "w") as f:  # for clean_leftovers
            json.dump(self.sysctls, f)
        self.pki = Pki(os.path.join(self.dir, "pki"))
        self._network()
        self._control_plane()
        pause = self._pause_image()
        for n in self.nodes:
            self._start_node(n, pause)
        wait_for("every node to be Ready", self._nodes_ready, timeout=120)
        self.log(f"cluster {self.tag} up in {time.monotonic() - t0:.1f} s: {len(self.nodes)} nodes, "
                 f"KUBECONFIG={self.kubeconfig}")
        return self

    def kubectl(self, *args, check=True, input=None, timeout=120, kubeconfig=None):
        env = dict(os.environ, KUBECONFIG=kubeconfig or self.kubeconfig, HOME=self.dir)
        r = subprocess.run([self.kubectl_binary, *args], env=env, capture_output=True, text=True, input=input,
                           timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({r.returncode}): {r.stderr}")
        return r

    def import_image(self, layout, name, tag):
        """An OCI image layout's `tag` into every node's containerd as NAME:TAG."""
        tar = os.path.join(self.dir, f"import-{os.path.basename(name)}-{tag}.tar")
        layout_tar(layout, tar)
        t = time.monotonic()
        # Every node at once: each import is mostly one containerd unpacking layers (a core's
        # worth at most), one after another they took 11 s a node for the Slurm image.
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(self.nodes)) as pool:
            for f in [pool.submit(n.ctr, "images", "import", "--base-name", name, tar) for n in self.nodes]:
                f.result()
        self.log(f"{name}:{tag} imported into {len(self.nodes)} nodes' containerd in {time.monotonic() - t:.1f} s")
        os.unlink(tar)

    def stop_kubelet(self, node):
        node.kubelet.stop(sig=signal.SIGKILL)

    def power_off(self, node):
        """The node's machine is gone at once, as in a power loss: its kubelet, kube-proxy,
        containers and containerd are killed and nothing is told to the API server."""
        for p in (node.kubelet, node.proxy):
            p.stop(sig=signal.SIGKILL)
        self._kill_cgroup_processes(node)
        node.containerd.stop(sig=signal.SIGKILL)
        self._kill_shims(node)
        self._kill_cgroup_processes(node)
        node.powered_off = True

    def start_kubelet(self, node):
        node.kubelet = Process(f"kubelet-{node.name}", self._kubelet_argv(node), self.logs, netns=node.netns)

    def component_logs(self, n=3000):
        out = []
        for name, p in self.control.items():
            out.append(f"--- {name}\n{p.tail(n)}")
        for node in self.nodes:
            for p in (node.containerd, node.kubelet, node.proxy):
                if p:
                    out.append(f"--- {p.name}\n{p.tail(n)}")
        return "\n".join(out)

    def stop(self):
        """Everything goes: pods first (through the API, so the kubelets stop their sandboxes
        and networks), then the kubelets, proxies, containerds, control plane, then what is left
        of mounts, cgroups, network namespaces and links."""
        volumes = []
        try:
            if self.kubeconfig and all(n.kubelet and n.kubelet.running() for n in self.nodes if not n.powered_off):
                self._delete_every_pod()
            if self.kubeconfig and "kube-apiserver" in self.control and self.control["kube-apiserver"].running():
                volumes = self._provisioned_volumes()
        except Exception as e:  # noqa: BLE001 - the rest of the cleanup still runs
            self.log(f"stop: deleting the pods through the API failed: {e}")
        for n in self.nodes:
            for p in (n.kubelet, n.proxy):
                if p:
                    p.stop()
            if n.containerd and n.containerd.running():
                self._kill_tasks(n)
            if n.containerd:
                n.containerd.stop()
            self._kill_shims(n)
            self._kill_cgroup_processes(n)
        for name in reversed(list(self.control)):
            self.control[name].stop()
        self._unmount_under(self.dir)
        for v in volumes:
            shutil.rmtree(v, ignore_errors=True)
        try:
            os.rmdir("/tmp/hostpath_pv")  # the provisioner's, made for this cluster's claims
        except OSError:
            pass
        for n in self.nodes:
            self._remove_cgroups(n)
        self._remove_network()
        for s, v in self.sysctls.items():
            try:
                with open(f"/proc/sys/{s}", "w") as f:
                    f.write(v)
            except OSError:
                pass
        for link in glob.glob("/var/log/containers/*.log"):
            if os.path.realpath(link).startswith(self.dir + "/"):
                os.unlink(link)
        if os.environ.get("KEEP_LOGS"):
            kept = tempfile.mkdtemp(prefix=f"hpcplane-kube-logs-{self.tag}.")
            shutil.copytree(self.logs, kept, dirs_exist_ok=True)
            self.log(f"logs kept in {kept}")
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- network ------------------------------------------------------------------------------
    def _network(self):
        ip = lambda *a: run("ip", *a)  # noqa: E731
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{self.host_ip}/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        for n in self.nodes:
            ip("netns", "add", n.netns)
            ip("link", "add", n.veth, "type", "veth", "peer", "name", "eth0", "netns", n.netns)
            ip("link", "set", n.veth, "master", self.bridge, "up")
            ip("-n", n.netns, "addr", "add", f"{n.ip}/24", "dev", "eth0")
            ip("-n", n.netns, "link", "set", "eth0", "up")
            ip("-n", n.netns, "link", "set", "lo", "up")
            ip("-n", n.netns, "route", "add", "default", "via", self.host_ip)
            run("ip", "netns", "exec", n.netns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
            ip("route", "add", n.pod_cidr, "via", n.ip)
            for other in self.nodes:
                if other is not n:
                    ip("-n", n.netns, "route", "add", other.pod_cidr, "via", other.ip)

    def _remove_network(self):
        for n in self.nodes:
            run("ip", "route", "del", n.pod_cidr, check=False)
            run("ip", "link", "del", n.veth, check=False)
            run("ip", "netns", "del", n.netns, check=False)
        run("ip", "link", "del", self.bridge, check=False)
        # The pods' network namespaces the containerds made (cni-<uuid>) and did not remove.
        if os.path.isdir("/run/netns"):
            for ns in set(os.listdir("/run/netns")) - self.netns_before:
                if ns.startswith("cni-"):
                    run("umount", f"/run/netns/{ns}", check=False)
                    try:
                        os.unlink(f"/run/netns/{ns}")
                    except OSError:
                        pass

    # --- control plane ------------------------------------------------------------------------
    def _control_plane(self):
        pki, host = self.pki, self.host_ip
        service_ip = f"10.{self.octet}.16.1"
        api_crt, api_key = pki.issue("apiserver", "kube-apiserver", ips=[host, service_ip, "127.0.0.1"],
                                     dns=["kubernetes", "kubernetes.default", "kubernetes.default.svc",
                                          "kubernetes.default.svc.cluster.local"], server=True)
        kubelet_client = pki.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client", org="system:masters")
        self.kubeconfig = pki.kubeconfig("admin", self.api_url, "hpcplane-test-admin", org="system:masters")
        etcd_dir = os.path.join(self.dir, "etcd")
        self.control["etcd"] = Process("etcd", [
            self.kube, "etcd", "--name", "default", "--data-dir", etcd_dir,
            "--listen-client-urls", f"http://{host}:2379", "--advertise-client-urls", f"http://{host}:2379",
            "--listen-peer-urls", f"http://{host}:2380", "--initial-advertise-peer-urls", f"http://{host}:2380",
            "--initial-cluster", f"default=http://{host}:2380", "--unsafe-no-fsync",
            "--listen-metrics-urls", f"http://{host}:2381", "--log-level", "warn"], self.logs)
        self.control["kube-apiserver"] = Process("kube-apiserver", [
            self.kube, "kube-apiserver", "--etcd-servers", f"http://{host}:2379",
            "--bind-address", host, "--advertise-address", host, "--secure-port", "6443",
            "--tls-cert-file", api_crt, "--tls-private-key-file", api_key, "--client-ca-file", pki.ca,
            "--service-cluster-ip-range", self.service_cidr,
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file", pki.sa_pub, "--service-account-signing-key-file", pki.sa_key,
            "--authorization-mode", "Node,RBAC", "--enable-admission-plugins", "NodeRestriction",
            "--kubelet-client-certificate", kubelet_client[0], "--kubelet-client-key", kubelet_client[1],
            "--kubelet-certificate-authority", pki.ca, "--kubelet-preferred-address-types", "InternalIP",
            "--allow-privileged=true", "--cert-dir", os.path.join(self.dir, "apiserver-certs"),
            "--profiling=false", "--v=1", *self._audit_flags()], self.logs)
        wait_for("the API server to be ready",
                 lambda: self._control_alive() and self.kubectl("get", "--raw", "/readyz", check=False,
                                                                timeout=10).returncode == 0, timeout=90)
        kcm = pki.kubeconfig("kube-controller-manager", self.api_url, "system:kube-controller-manager")
        self.control["kube-controller-manager"] = Process("kube-controller-manager", [
            self.kube, "kube-controller-manager", "--kubeconfig", kcm, "--authentication-kubeconfig", kcm,
            "--authorization-kubeconfig", kcm, "--bind-address", host, "--leader-elect=false",
            "--use-service-account-credentials=true", "--root-ca-file", pki.ca,
            "--service-account-private-key-file", pki.sa_key, "--cluster-signing-cert-file", pki.ca,
            "--cluster-signing-key-file", pki.ca_key, "--profiling=false", "--v=1",
            # Kubernetes' own host-path provisioner makes each claim's volume a directory under
            # /tmp/hostpath_pv; every node of this cluster is this machine, so a volume is shared
            # by the pods of both nodes as a network file system's would be.
            "--enable-hostpath-provisioner=true",
            # A node that stops reporting is NotReady after 20 s (Kubernetes' default: 50 s), so
            # a test of a lost node waits less; still more than the kubelets' 10 s reports.
            "--node-monitor-grace-period=20s"], self.logs)
        self._storage()
        scheduler = pki.kubeconfig("kube-scheduler", self.api_url, "system:kube-scheduler")
        self.control["kube-scheduler"] = Process("kube-scheduler", [
            self.kube, "kube-scheduler", "--kubeconfig", scheduler, "--authentication-kubeconfig", scheduler,
            "--authorization-kubeconfig", scheduler, "--bind-address", host, "--leader-elect=false",
            "--profiling=false", "--v=1"], self.logs)
        # CoreDNS reads Services and EndpointSlices as its own user, with the role clusters give it.
        self.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "system:coredns"},
             "rules": [{"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
                        "verbs": ["list", "watch"]},
                       {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                        "verbs": ["list", "watch"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "system:coredns"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:coredns"},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:coredns"}]}]}))
        coredns_kubeconfig = pki.kubeconfig("coredns", self.api_url, "system:coredns")
        corefile = os.path.join(self.dir, "Corefile")
        with open(corefile, "w") as f:
            f.write(f""".:53 {{
    bind {host}
    errors
    ready {host}:8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        kubeconfig {coredns_kubeconfig} test
        pods insecure
        ttl 5
    }}
    cache 5
}}
""")
        self.control["coredns"] = Process("coredns", [os.path.join(self.bin, "coredns"), "-conf", corefile],
                                          self.logs)
        wait_for("CoreDNS to be ready", lambda: self._control_alive() and run(
            "curl", "-sf", "-m", "2", f"http://{host}:8181/ready", check=False).returncode == 0, timeout=30)

    def _storage(self, volumes=12):
        """Two StorageClasses, as a real cluster has them: `standard` (the default, ReadWriteOnce)
        is local volumes on a node's disk, a pool of directories bound as claims come (the kubelet
        gives them the pod's fsGroup, as block storage's CSI drivers do); `shared` (ReadWriteMany)
        is provisioned per claim by the controller manager's host-path provisioner, whose
        directories the kubelet hands over as they are (root's, as a network file system's)."""
        items = [
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
             "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
             "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer",
             "reclaimPolicy": "Retain"},
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "shared"},
             "provisioner": "kubernetes.io/host-path", "reclaimPolicy": "Delete"}]
        for i in range(volumes if self.nodes else 0):  # local volumes are on a node (kwok's have no disk)
            path = os.path.join(self.dir, "volumes", f"local-{i}")
            os.makedirs(path)
            items.append({
                "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"local-{i}"},
                "spec": {"capacity": {"storage": "20Gi"}, "accessModes": ["ReadWriteOnce"],
                         "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "standard",
                         "local": {"path": path},
                         # Every node is this machine: the directory is there for each of them.
                         "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                             {"key": "kubernetes.io/hostname", "operator": "In",
                              "values": [n.name for n in self.nodes]}]}]}}}})
        self.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))

    def _audit_flags(self):
        if not self.audit_users:
            return []
        policy = os.path.join(self.dir, "audit-policy.json")
        with open(policy, "w") as f:
            json.dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
                       "rules": [{"level": "Metadata", "users": self.audit_users}, {"level": "None"}]}, f)
        return ["--audit-policy-file", policy, "--audit-log-path", self.audit_log, "--audit-log-format", "json"]

    def _control_alive(self):
        dead = [n for n, p in self.control.items() if not p.running()]
        if dead:
            raise RuntimeError(f"{', '.join(dead)} exited:\n" + "\n".join(self.control[n].tail() for n in dead))
        return True

    # --- nodes --------------------------------------------------------------------------------
    def _pause_image(self):
        layout = os.path.join(self.build_dir, "kubernetes-real", "pause-layout")
        stamp = os.path.join(self.build_dir, "kubernetes-real", "pause-layout.inputs")
        want = _digest([os.path.join(self.bin, "pause")])
        if read_text(stamp) != want:
            shutil.rmtree(layout, ignore_errors=True)
            rootfs = tempfile.mkdtemp(prefix="hpcplane-pause-rootfs.")
            try:
                shutil.copy2(os.path.join(self.bin, "pause"), os.path.join(rootfs, "pause"))
                pack_image(rootfs, layout, "1", entrypoint=["/pause"], user="65535:65535")
            finally:
                shutil.rmtree(rootfs)
            with open(stamp, "w") as f:
                f.write(want)
        return layout

    def _start_node(self, n, pause_layout):
        pki = self.pki
        for d in ("containerd/root", "containerd/state", "cni/conf", "cni/ipam", "kubelet", "pod-logs"):
            os.makedirs(os.path.join(n.dir, d), exist_ok=True)
        with open(os.path.join(n.dir, "cni/conf/10-pods.conflist"), "w") as f:
            json.dump({"cniVersion": "0.4.0", "name": "pods", "plugins": [
                {"type": "bridge", "bridge": "cni0", "isGateway": True, "ipMasq": False, "hairpinMode": True,
                 "ipam": {"type": "host-local", "ranges": [[{"subnet": n.pod_cidr}]],
                          "routes": [{"dst": "0.0.0.0/0"}], "dataDir": os.path.join(n.dir, "cni/ipam")}}]}, f)
        config = os.path.join(n.dir, "containerd/config.toml")
        with open(config, "w") as f:
            f.write(f"""version = 2
root = "{n.dir}/containerd/root"
state = "{n.dir}/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
                    "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "{n.socket}"
[plugins."io.containerd.internal.v1.opt"]
  path = "{n.dir}/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  enable_selinux = false
  disable_apparmor = true
  # This machine refuses a lower oom_score_adj than containerd's own (the kubelet's -998 for
  # sandboxes would fail every pod's start).
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{n.dir}/cni/conf"
""")
        n.containerd = Process(f"containerd-{n.name}", ["containerd", "--config", config], self.logs, netns=n.netns)
        wait_for(f"{n.name}'s containerd", lambda: self._alive(n.containerd) and os.path.exists(n.socket)
                 and n.ctr("version", check=False).returncode == 0, timeout=30)
        n.ctr("images", "import", "--base-name", PAUSE_IMAGE.split(":")[0],
              layout_tar(pause_layout, os.path.join(n.dir, "pause.tar")))
        # The node's own cgroup root in every hierarchy (cgroup v1; the kubelet makes kubepods
        # under it): the two kubelets on this machine never see each other's pods.
        for hierarchy in self._cgroup_hierarchies():
            path = os.path.join(hierarchy, n.cgroup_root)
            os.makedirs(path, exist_ok=True)
            if os.path.basename(hierarchy) == "cpuset":
                for knob in ("cpuset.cpus", "cpuset.mems"):
                    with open(os.path.join(hierarchy, knob)) as src, open(os.path.join(path, knob), "w") as dst:
                        dst.write(src.read())
        serving = pki.issue(f"kubelet-{n.name}", n.name, ips=[n.ip], dns=[n.name], server=True)
        n.kubeconfig = pki.kubeconfig(f"node-{n.name}", self.api_url, f"system:node:{n.name}", org="system:nodes")
        with open(os.path.join(n.dir, "kubelet/config.json"), "w") as f:
            json.dump({
                "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
                "address": n.ip, "port": 10250, "readOnlyPort": 0, "healthzBindAddress": n.ip,
                "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                                   "x509": {"clientCAFile": pki.ca}},
                "authorization": {"mode": "Webhook"},
                "tlsCertFile": serving[0], "tlsPrivateKeyFile": serving[1],
                "clusterDomain": "cluster.local", "clusterDNS": [self.host_ip], "resolvConf": "",
                "cgroupDriver": "cgroupfs", "cgroupRoot": f"/{n.cgroup_root}", "cgroupsPerQOS": True,
                "failSwapOn": False, "containerRuntimeEndpoint": f"unix://{n.socket}",
                "podLogsDir": os.path.join(n.dir, "pod-logs"),
                # Nothing can be pulled again: images are never collected; eviction only when
                # really short (the machine's disk is shared by everything on it).
                "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
                "evictionHard": {"memory.available": "100Mi", "nodefs.available": "2%", "imagefs.available": "2%"},
                "serializeImagePulls": False, "registerNode": True, "maxPods": 110,
                "nodeStatusUpdateFrequency": "4s", "syncFrequency": "10s"}, f)
        self.start_kubelet(n)
        proxy_kubeconfig = pki.kubeconfig(f"kube-proxy-{n.name}", self.api_url, "system:kube-proxy")
        proxy_config = os.path.join(n.dir, "kube-proxy.json")
        with open(proxy_config, "w") as f:
            json.dump({
                "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
                "clientConnection": {"kubeconfig": proxy_kubeconfig}, "hostnameOverride": n.name,
                "bindAddress": n.ip, "mode": "nftables", "clusterCIDR": self.cluster_cidr,
                "healthzBindAddress": f"{n.ip}:10256", "metricsBindAddress": f"{n.ip}:10249",
                # The conntrack limits are the machine's, not this node's: left alone.
                "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
                # Replies from a pod on the same bridge go back through the node, un-NATed.
                "nftables": {"masqueradeAll": True}}, f)
        n.proxy = Process(f"kube-proxy-{n.name}", [self.kube, "kube-proxy", "--config", proxy_config], self.logs,
                          netns=n.netns)

    def _kubelet_argv(self, n):
        return [self.kube, "kubelet", "--config", os.path.join(n.dir, "kubelet/config.json"),
                "--kubeconfig", n.kubeconfig, "--root-dir", os.path.join(n.dir, "kubelet"),
                "--cert-dir", os.path.join(n.dir, "kubelet/pki"), "--hostname-override", n.name,
                "--node-ip", n.ip, "--v=1"]

    def _alive(self, proc):
        if not proc.running():
            raise RuntimeError(f"{proc.name} exited:\n{proc.tail()}")
        return True

    def _nodes_ready(self):
        for n in self.nodes:
            self._alive(n.kubelet)
            self._alive(n.proxy)
        r = self.kubectl("get", "nodes", "-o", "json", check=False, timeout=20)
        if r.returncode != 0:
            return False
        ready = {i["metadata"]["name"] for i in json.loads(r.stdout)["items"]
                 if any(c["type"] == "Ready" and c["status"] == "True" for c in i["status"].get("conditions", []))}
        return ready == {n.name for n in self.nodes}

    @staticmethod
    def _cgroup_hierarchies():
        out = []
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                sep = fields.index("-")
                if fields[sep + 1] == "cgroup" and fields[4].startswith("/sys/fs/cgroup/"):
                    out.append(fields[4])
        return out

    # --- teardown -----------------------------------------------------------------------------
    def _delete_every_pod(self):
        # What makes pods again goes first (controllers, an operator in a Deployment).
        self.kubectl("delete", "deployments,statefulsets,daemonsets,replicasets,jobs", "--all", "--all-namespaces",
                     "--wait=false", check=False, timeout=60)
        self.kubectl("delete", "pods", "--all", "--all-namespaces", "--grace-period=1", "--wait=false",
                     check=False, timeout=60)
        for n in self.nodes:
            if n.powered_off:  # no kubelet there to confirm: its pods are only records
                self.kubectl("delete", "pods", "--all-namespaces", "--field-selector", f"spec.nodeName={n.name}",
                             "--force", "--grace-period=0", check=False, timeout=60)
        try:
            wait_for("every pod to be gone", lambda: not json.loads(
                self.kubectl("get", "pods", "-A", "-o", "json", timeout=20).stdout)["items"], timeout=60)
        except AssertionError as e:
            self.log(f"stop: {e}")

    def _provisioned_volumes(self):
        """The directories the host-path provisioner made for this cluster's claims."""
        r = self.kubectl("get", "pv", "-o", "json", check=False, timeout=20)
        if r.returncode != 0:
            return []
        paths = [((pv["spec"].get("hostPath") or {}).get("path") or "") for pv in json.loads(r.stdout)["items"]]
        return [p for p in paths if p.startswith("/tmp/hostpath_pv/")]

    def _kill_tasks(self, n):
        tasks = n.ctr("tasks", "ls", "-q", check=False).stdout.split()
        for t in tasks:
            n.ctr("tasks", "kill", "-s", "SIGKILL", t, check=False)
        for t in tasks:
            n.ctr("tasks", "delete", "-f", t, check=False)

    def _kill_shims(self, n):
        """Shims of this node's containerd that outlived it (started by it: they name its socket)."""
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"containerd-shim-runc-v2") and n.socket.encode() in argv:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass

    def _kill_cgroup_processes(self, n):
        """What still runs in the node's cgroups (containers whose shim went without stopping
        them): every process there is one of this node's containers."""
        if not kill_cgroup_processes(n.cgroup_root):
            self.log(f"stop: processes left in the cgroup {n.cgroup_root}")

    def _unmount_under(self, root):
        with open("/proc/self/mountinfo") as f:
            points = [line.split()[4] for line in f]
        for p in sorted((p for p in points if p.startswith(root + "/")), key=len, reverse=True):
            run("umount", "-l", p, check=False)

    def _remove_cgroups(self, n):
        for hierarchy in self._cgroup_hierarchies():
            top = os.path.join(hierarchy, n.cgroup_root)
            if not os.path.isdir(top):
                continue
            for d in sorted((d for d, _, _ in os.walk(top)), key=len, reverse=True):
                try:
                    os.rmdir(d)
                except OSError:
                    pass


def kill_cgroup_processes(cgroup_root):
    """Kills every process in the pids cgroup `cgroup_root` (and below) until none is left;
    False when some are still there after five seconds."""
    pids_root = os.path.join("/sys/fs/cgroup/pids", cgroup_root)
    for _ in range(50):
        pids = set()
        for d, _, files in os.walk(pids_root):
            if "cgroup.procs" in files:
                pids.update(int(p) for p in (read_text(os.path.join(d, "cgroup.procs")) or "").split())
        if not pids:
            return True
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.1)
    return False


def clean_leftovers(tag, log=print):
    """What a run of the cluster `tag` left when it was killed before its stop (its processes,
    its pods' processes, mounts, cgroups, network namespaces and links, its directory): removed.
    Only what names this tag: another tag's cluster is not touched."""
    dirs = glob.glob(f"/tmp/hpcplane-kube-{tag}.*")
    marks = [d.encode() for d in dirs]
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if any(m in cmdline for m in marks):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
    roots = sorted({os.path.basename(p) for h in RealCluster._cgroup_hierarchies()
                    for p in glob.glob(os.path.join(h, f"hpcplane-kube-{tag}-n*"))})
    for root in roots:
        kill_cgroup_processes(root)
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    for p in sorted((p for p in points if any(p.startswith(d + "/") for d in dirs)), key=len, reverse=True):
        run("umount", "-l", p, check=False)
    for root in roots:
        for h in RealCluster._cgroup_hierarchies():
            top = os.path.join(h, root)
            for d in sorted((d for d, _, _ in os.walk(top)), key=len, reverse=True):
                try:
                    os.rmdir(d)
                except OSError:
                    pass
    netns = os.listdir("/run/netns") if os.path.isdir("/run/netns") else []
    for ns in netns:
        if ns.startswith(f"hpk{tag}n"):
            run("ip", "netns", "del", ns, check=False)
    links = run("ip", "-o", "link", "show", check=False).stdout
    for name in {line.split(":")[1].strip().split("@")[0] for line in links.splitlines() if ":" in line}:
        if name.startswith(f"hpk{tag}"):
            run("ip", "link", "del", name, check=False)
    # Pods' network namespaces (cni-<uuid>) name no cluster: whose an empty one is cannot be
    # told, so they are named for the admin, not removed.
    empty = [ns for ns in netns if ns.startswith("cni-") and not run("ip", "netns", "pids", ns, check=False).stdout.strip()]
    if empty:
        log(f"empty pod network namespaces, perhaps this cluster's (ip netns del NAME): {' '.join(sorted(empty))}")
    for link in glob.glob("/var/log/containers/*.log"):
        if any(os.path.realpath(link).startswith(d + "/") for d in dirs):
            os.unlink(link)
    for d in dirs:
        try:
            with open(os.path.join(d, "sysctls.json")) as f:
                for name, value in json.load(f).items():
                    with open(f"/proc/sys/{name}", "w") as out:
                        out.write(value)
        except (OSError, ValueError):
            pass
        shutil.rmtree(d, ignore_errors=True)
    log(f"cleaned what cluster {tag} left: {len(dirs)} directories, {len(roots)} cgroup roots")


def main(argv):
    if len(argv) != 2 or argv[0] not in ("up", "binaries", "clean"):
        sys.exit(__doc__)
    if argv[0] == "binaries":
        build_binaries(argv[1])
        return 0
    if argv[0] == "clean":
        clean_leftovers(argv[1])
        return 0
    def interrupted(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)  # a background job starts with SIGINT ignored
    with RealCluster(argv[1]) as k:
        print(f"KUBECONFIG={k.kubeconfig}", flush=True)
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
