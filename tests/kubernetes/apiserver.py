#!/usr/bin/env python3
"""A Kubernetes API server stand-in for hpcplane's tests: loopback only, one process, no etcd.

No kube-apiserver can be installed on these machines, so the operator is tested against this.
It keeps the parts of the API's contract a controller depends on, and tests/kubernetes/
apiserver_test.py checks them with the official clients (kubectl and the Python client):

- typed REST paths (/api/v1, /apis/GROUP/VERSION, namespaced and cluster-scoped), discovery,
  bearer-token authentication on every path;
- resourceVersion: one counter over every write; PUT with a stale resourceVersion is 409
  Conflict; create of an existing name is 409 AlreadyExists; uid and creationTimestamp are kept;
  metadata.generation counts spec changes;
- list and watch (ADDED, MODIFIED, DELETED, BOOKMARK with allowWatchBookmarks), labelSelector
  and fieldSelector=metadata.name; a watch from a resourceVersion older than the history kept
  gets an ERROR event with a 410 Expired Status; a restart (--state FILE keeps the objects, not
  the history) makes every older resourceVersion expired, as a new watch cache does;
- CustomResourceDefinitions created through the API are served at once, with their status and
  scale subresources and their printer columns (Table output for kubectl get);
- merge patch, strategic merge patch (as a merge patch: enough for maps and labels), JSON patch;
- garbage collection: deleting an owner deletes its dependents (ownerReferences by uid), in the
  background, as Kubernetes' garbage collector does;
- finalizers: deleting an object that has some marks it (deletionTimestamp) and keeps it until
  a write leaves it none; the garbage collector does the same to a dependent that has some;
- graceful pod deletion: a pod bound to a node gets a deletionTimestamp and is removed when its
  kubelet deletes it with gracePeriodSeconds=0;
- pods/binding (the scheduler's write of spec.nodeName, once) and Nodes;
- pods/exec over WebSocket (v5.channel.k8s.io, v4 without stdin), proxied to the kubelet named
  by the pod's Node (status.daemonEndpoints.kubeletEndpoint.Port on loopback), which answers
  POST /exec/NAMESPACE/POD/CONTAINER {command, stdin} with {exitCode, stdout, stderr}; stdout,
  stderr and the Status (exit code) are sent back on their channels; SPDY is not served;
- fault injection for tests (POST /debug/throttle, /debug/fail, /debug/conflict,
  /debug/compact, /debug/drop-watches): 429 with Retry-After, 5xx, a concurrent writer's 409
  on the next PUTs, history compaction, broken watches;
- request counts for tests (GET /debug/requests?agent=PREFIX): by verb (get, list, watch,
  create, update, patch, delete, as the API's audit log names them) and resource, of the
  clients whose User-Agent starts with PREFIX.

Not modelled: admission, schema validation of custom resources, server-side apply, field
managers, quotas, RBAC (every authenticated client may do everything).

Serves HTTPS only, as a real API server does (clients send bearer tokens over TLS only).

Usage: apiserver.py --port PORT --token-file FILE --tls-cert FILE --tls-key FILE [--state FILE]
       [--history N] [--bookmark-interval SECONDS] [--crds FILE ...]
Prints "listening on 127.0.0.1:PORT" once it serves (PORT 0: a free port, printed).
"""
import argparse
import base64
import copy
import datetime
import hashlib
import http.client
import json
import os
import random
import re
import ssl
import string
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import yaml

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def parse_bool(value):
    """Go's strconv.ParseBool, as the API server reads boolean query parameters."""
    return value in ("1", "t", "T", "true", "TRUE", "True")


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Resource:
    def __init__(self, group, version, plural, kind, namespaced, status=False, scale=None, columns=None,
                 short_names=None):
        self.group, self.version, self.plural, self.kind = group, version, plural, kind
        self.namespaced, self.status, self.scale = namespaced, status, scale
        self.columns = columns or []
        self.short_names = short_names or []

    @property
    def api_version(self):
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self):
        return self.kind.lower()


BUILTIN = [
    Resource("", "v1", "namespaces", "Namespace", False, status=True, short_names=["ns"]),
    Resource("", "v1", "pods", "Pod", True, status=True, short_names=["po"]),
    Resource("", "v1", "nodes", "Node", False, status=True, short_names=["no"]),
    Resource("", "v1", "configmaps", "ConfigMap", True, short_names=["cm"]),
    Resource("", "v1", "secrets", "Secret", True),
    Resource("", "v1", "services", "Service", True, status=True, short_names=["svc"]),
    Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, status=True, short_names=["pvc"]),
    Resource("", "v1", "events", "Event", True, short_names=["ev"]),
    Resource("", "v1", "serviceaccounts", "ServiceAccount", True, short_names=["sa"]),
    Resource("coordination.k8s.io", "v1", "leases", "Lease", True),
    Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, short_names=["netpol"]),
    Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
             status=True, short_names=["crd", "crds"]),
]


class ApiError(Exception):
    def __init__(self, code, reason, message, headers=None):
        super().__init__(message)
        self.code, self.reason, self.message, self.headers = code, reason, message, headers or {}


def status_body(code, reason, message, details=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    if details:
        body["details"] = details
    return body


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def json_pointer_parts(path):
    if not path.startswith("/"):
        raise ApiError(422, "Invalid", f"json patch path {path!r} must start with /")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(doc, ops):
    """RFC 6902: add, remove, replace, test."""
    doc = copy.deepcopy(doc)
    for op in ops:
        parts = json_pointer_parts(op.get("path", ""))
        parent = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent.setdefault(p, {})
        last = parts[-1]
        kind = op.get("op")
        if kind in ("add", "replace"):
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op["value"])
                elif kind == "add":
                    parent.insert(int(last), op["value"])
                else:
                    parent[int(last)] = op["value"]
            else:
                if kind == "replace" and last not in parent:
                    raise ApiError(422, "Invalid", f"json patch replace: {op['path']} does not exist")
                parent[last] = op["value"]
        elif kind == "remove":
            try:
                del parent[int(last) if isinstance(parent, list) else last]
            except (KeyError, IndexError) as e:
                raise ApiError(422, "Invalid", f"json patch remove: {op['path']} does not exist") from e
        elif kind == "test":
            value = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if value != op.get("value"):
                raise ApiError(422, "Invalid", f"json patch test failed at {op['path']}")
        else:
            raise ApiError(422, "Invalid", f"json patch op {kind!r} is not supported")
    return doc


def parse_label_selector(text):
    """Equality and existence requirements: a=b, a==b, a!=b, a, !a, a in (x,y), a notin (x,y)."""
    reqs = []
    if not text:
        return reqs
    for part in re.findall(r"[^,(]+(?:\([^)]*\))?", text):
        part = part.strip()
        if not part:
            continue
        m = re.match(r"^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$", part)
        if m:
            reqs.append((m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",")}))
        elif "!=" in part:
            k, v = part.split("!=", 1)
            reqs.append((k.strip(), "!=", v.strip()))
        elif "=" in part:
            k, v = re.split("==?", part, maxsplit=1)
            reqs.append((k.strip(), "=", v.strip()))
        elif part.startswith("!"):
            reqs.append((part[1:].strip(), "!exists", None))
        else:
            reqs.append((part, "exists", None))
    return reqs


def labels_match(labels, reqs):
    for key, op, value in reqs:
        have = labels.get(key)
        if op == "=" and have != value:
            return False
        if op == "!=" and have == value:
            return False
        if op == "exists" and have is None:
            return False
        if op == "!exists" and have is not None:
            return False
        if op == "in" and have not in value:
            return False
        if op == "notin" and have in value:
            return False
    return True


def fields_match(obj, selector):
    for part in filter(None, (selector or "").split(",")):
        m = re.match(r"^([\w.]+)(==|=|!=)(.*)$", part)
        if not m:
            raise ApiError(400, "BadRequest", f"invalid field selector {part!r}")
        field, op, value = m.groups()
        node = obj
        for p in field.split("."):
            node = node.get(p) if isinstance(node, dict) else None
        have = "" if node is None else str(node)
        if (op == "!=") == (have == value):
            return False
    return True


def json_path(obj, path):
    """The printer columns' JSONPath subset: .a.b, and .a[?(@.k=="v")].b."""
    node = [obj]
    for step in re.findall(r'\.([\w-]+)|\[\?\(@\.([\w-]+)=="([^"]*)"\)\]', path):
        name, key, value = step
        out = []
        for n in node:
            if name and isinstance(n, dict) and name in n:
                v = n[name]
                out.extend(v if isinstance(v, list) and not key else [v])
            elif key and isinstance(n, list):
                out.extend(x for x in n if isinstance(x, dict) and x.get(key) == value)
            elif key and isinstance(n, dict) and n.get(key) == value:
                out.append(n)
        node = out
    return node[0] if node else None


def age(timestamp):
    try:
        then = datetime.datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    except (TypeError, ValueError):
        return "<unknown>"
    s = int((datetime.datetime.now(datetime.timezone.utc) - then).total_seconds())
    return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h"


class Store:
    """Objects, the resourceVersion counter and the event history, under one lock."""

    def __init__(self, state_file, history):
        self.cond = threading.Condition()
        self.state_file = state_file
        self.history = history
        self.objects = {}  # (group, plural, namespace, name) -> object
        self.events = []  # (rv, group, plural, namespace, type, object)
        self.rv = 0
        self.oldest_rv = 0  # a watch from a resourceVersion below this is expired (410)
        self.resources = {(r.group, r.version, r.plural): r for r in BUILTIN}
        self.generation = 0  # bumped to end every open watch (/debug/drop-watches)
        if state_file and os.path.exists(state_file):
            with open(state_file) as f:
                saved = json.load(f)
            self.rv = saved["rv"]
            for o in saved["objects"]:
                self.objects[tuple(o["key"])] = o["object"]
            for key, o in self.objects.items():
                if key[1] == "customresourcedefinitions":
                    self.register_crd(o)
        # A new watch cache: nothing before now can be resumed.
        self.oldest_rv = self.rv + 1

    def save(self):
        if not self.state_file:
            return
        tmp = self.state_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"rv": self.rv, "objects": [{"key": list(k), "object": o} for k, o in self.objects.items()]}, f)
        os.replace(tmp, self.state_file)

    def register_crd(self, crd):
        spec = crd.get("spec", {})
        names = spec.get("names", {})
        for v in spec.get("versions", []):
            if not v.get("served", True):
                continue
            sub = v.get("subresources", {})
            self.resources[(spec["group"], v["name"], names["plural"])] = Resource(
                spec["group"], v["name"], names["plural"], names["kind"], spec.get("scope") == "Namespaced",
                status="status" in sub, scale=sub.get("scale"), columns=v.get("additionalPrinterColumns", []),
                short_names=names.get("shortNames", []))

    def unregister_crd(self, crd):
        spec = crd.get("spec", {})
        for v in spec.get("versions", []):
            self.resources.pop((spec["group"], v["name"], spec["names"]["plural"]), None)
        for key in [k for k in self.objects if k[0] == spec["group"] and k[1] == spec["names"]["plural"]]:
            self.record("DELETED", key, self.objects.pop(key))

    def record(self, kind, key, obj):
        """Bumps the resourceVersion, stamps it on obj, appends the event; caller holds the lock."""
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        self.events.append((self.rv, key[0], key[1], key[2], kind, copy.deepcopy(obj)))
        if len(self.events) > self.history:
            dropped = self.events[: len(self.events) - self.history]
            del self.events[: len(dropped)]
            self.oldest_rv = max(self.oldest_rv, dropped[-1][0] + 1)
        self.save()
        self.cond.notify_all()

    def compact(self):
        with self.cond:
            self.events.clear()
            self.oldest_rv = self.rv + 1


class Faults:
    def __init__(self):
        self.lock = threading.Lock()
        self.throttle = 0
        self.retry_after = 1
        self.fail = 0
        self.fail_code = 500
        self.conflicts = 0

    def take_conflict(self):
        with self.lock:
            if self.conflicts > 0:
                self.conflicts -= 1
                return True
            return False

    def take(self):
        with self.lock:
            if self.throttle > 0:
                self.throttle -= 1
                raise ApiError(429, "TooManyRequests", "Too many requests, please try again later.",
                               {"Retry-After": str(self.retry_after)})
            if self.fail > 0:
                self.fail -= 1
                raise ApiError(self.fail_code, "InternalError" if self.fail_code == 500 else "ServiceUnavailable",
                               "injected fault")


WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def ws_read_frame(stream):
    """One WebSocket frame from a client (masked, RFC 6455): (opcode, payload), or (None, b"")
    when the connection ends. Fragments are not reassembled: clients send small whole frames."""
    head = stream.read(2)
    if len(head) < 2:
        return None, b""
    opcode, masked, length = head[0] & 0x0F, head[1] & 0x80, head[1] & 0x7F
    if length == 126:
        length = int.from_bytes(stream.read(2), "big")
    elif length == 127:
        length = int.from_bytes(stream.read(8), "big")
    if length > 16 * 1024 * 1024:
        return None, b""
    mask = stream.read(4) if masked else b"\0\0\0\0"
    data = bytearray(stream.read(length))
    for i in range(len(data)):
        data[i] ^= mask[i % 4]
    return opcode, bytes(data)


def ws_write_frame(stream, opcode, payload):
    """One unmasked, final WebSocket frame from the server."""
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([n])
    elif n < 65536:
        head += bytes([126]) + n.to_bytes(2, "big")
    else:
        head += bytes([127]) + n.to_bytes(8, "big")
    stream.write(head + payload)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes
    server_version = "hpcplane-test-apiserver"

    def log_message(self, fmt, *args):  # quiet: tests read failures from responses
        if self.server.verbose:
            sys.stderr.write("apiserver: " + fmt % args + "\n")

    # --- plumbing -------------------------------------------------------------------------
    def send_json(self, code, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def consume_body(self):
        """Reads the whole body first, whatever the answer: on a kept-alive connection, unread
        bytes would be taken for the next request."""
        n = int(self.headers.get("Content-Length") or 0)
        if n > 3 * 1024 * 1024:
            self.close_connection = True
            raise ApiError(413, "RequestEntityTooLarge", "request is too large")
        self.raw_body = self.rfile.read(n) if n else b""

    def read_body(self):
        raw = self.raw_body
        ctype = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip()
        if ctype in ("application/vnd.kubernetes.protobuf", "application/cbor"):
            raise ApiError(415, "UnsupportedMediaType", f"{ctype} is not supported by this test server: send JSON")
        try:
            if ctype in ("application/yaml", "application/apply-patch+yaml"):
                return ctype, yaml.safe_load(raw)
            return ctype, json.loads(raw or b"null")
        except (ValueError, yaml.YAMLError) as e:
            raise ApiError(400, "BadRequest", f"the request body is not valid: {e}") from e

    def count_request(self, method, path, query):
        """Counts the request as the audit log would name it: verb and resource[/subresource]."""
        parts = [p for p in path.split("/") if p]
        if parts[:1] == ["api"]:
            rest = parts[2:]
        elif parts[:1] == ["apis"]:
            rest = parts[3:]
        else:
            return
        if rest[:1] == ["namespaces"] and len(rest) >= 3:
            rest = rest[2:]
        if not rest:
            return
        resource = "/".join([rest[0]] + rest[2:3])
        named = len(rest) >= 2
        verb = {"GET": "get" if named else ("watch" if parse_bool(query.get("watch")) else "list"),
                "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
        key = (self.headers.get("User-Agent") or "", f"{verb} {resource}")
        with self.server.requests_lock:
            self.server.requests[key] = self.server.requests.get(key, 0) + 1

    def handle_any(self, method):
        url = urlparse(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            self.consume_body()
            if self.headers.get("Authorization") != f"Bearer {self.server.token}":
                raise ApiError(401, "Unauthorized", "Unauthorized")
            if url.path.startswith("/debug/"):
                return self.debug(method, url.path, query)
            self.count_request(method, url.path, query)
            self.server.faults.take()
            self.route(method, url.path, query)
        except ApiError as e:
            body = status_body(e.code, e.reason, e.message)
            if e.code == 429:
                body["details"] = {"retryAfterSeconds": int(e.headers.get("Retry-After", "1"))}
            self.send_json(e.code, body, e.headers)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_DELETE(self):
        self.handle_any("DELETE")

    # --- test controls --------------------------------------------------------------------
    def debug(self, method, path, query):
        faults, store = self.server.faults, self.server.store
        if path == "/debug/requests" and method == "GET":
            agent = query.get("agent", "")
            counts = {}
            with self.server.requests_lock:
                for (ua, what), n in self.server.requests.items():
                    if ua.startswith(agent):
                        counts[what] = counts.get(what, 0) + n
            return self.send_json(200, counts)
        if method != "POST":
            raise ApiError(405, "MethodNotAllowed", "debug endpoints take POST")
        if path == "/debug/throttle":
            with faults.lock:
                faults.throttle = int(query.get("count", "1"))
                faults.retry_after = int(query.get("retryAfter", "1"))
        elif path == "/debug/fail":
            with faults.lock:
                faults.fail = int(query.get("count", "1"))
                faults.fail_code = int(query.get("code", "500"))
        elif path == "/debug/conflict":
            with faults.lock:
                faults.conflicts = int(query.get("count", "1"))
        elif path == "/debug/compact":
            store.compact()
        elif path == "/debug/drop-watches":
            with store.cond:
                store.generation += 1
                store.cond.notify_all()
        else:
            raise ApiError(404, "NotFound", f"no debug endpoint {path}")
        self.send_json(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})

    # --- routing ----------------------------------------------------------------------------
    def route(self, method, path, query):
        parts = [p for p in path.split("/") if p]
        if path in ("/healthz", "/readyz", "/livez"):
            data = b"ok"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if path == "/version":
            return self.send_json(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0-hpcplane-test",
                                        "platform": "linux/amd64"})
        if parts[:1] == ["openapi"]:
            raise ApiError(404, "NotFound", "this test server publishes no OpenAPI document")
        if path == "/api":
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": []})
        if path == "/apis":
            return self.send_json(200, self.group_list())
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        elif parts[:1] == ["apis"] and len(parts) == 2:
            return self.send_json(200, self.group(parts[1]))
        else:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({path})")
        if not rest:
            return self.send_json(200, self.resource_list(group, version))
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3 and (group, version, rest[2]) in self.server.store.resources:
            namespace, rest = rest[1], rest[2:]
        plural, name, sub = rest[0], (rest[1] if len(rest) > 1 else None), (rest[2] if len(rest) > 2 else None)
        res = self.server.store.resources.get((group, version, plural))
        if res is None or len(rest) > 3:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({path})")
        if namespace is not None and not res.namespaced:
            raise ApiError(404, "NotFound", f"{plural} is not namespaced")
        if plural == "pods" and sub == "exec" and name and method in ("GET", "POST"):
            return self.exec(namespace, name)
        if plural == "pods" and sub == "binding" and name and method == "POST":
            return self.bind(namespace, name)
        if sub and not ((sub == "status" and res.status) or (sub == "scale" and res.scale)):
            raise ApiError(404, "NotFound", f"{plural} has no subresource {sub}")
        if name is None:
            if method == "GET":
                if parse_bool(query.get("watch")):
                    return self.watch(res, namespace, query)
                return self.list(res, namespace, query)
            if method == "POST":
                return self.create(res, namespace, query)
            raise ApiError(405, "MethodNotAllowed", f"{method} on a collection is not supported")
        if res.namespaced and namespace is None:
            raise ApiError(404, "NotFound", f"{plural} is namespaced: use /namespaces/NAMESPACE/{plural}/{name}")
        if method == "GET":
            return self.get(res, namespace, name, sub)
        if method in ("PUT", "PATCH"):
            return self.write(res, namespace, name, sub, method)
        if method == "DELETE":
            return self.delete(res, namespace, name, query)
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported")

    # --- pods/binding and pods/exec ------------------------------------------------------------
    def bind(self, namespace, name):
        """The scheduler's write: spec.nodeName is set once, from a Binding."""
        _, body = self.read_body()
        target = (body or {}).get("target") or {}
        if target.get("kind") != "Node" or not target.get("name"):
            raise ApiError(400, "BadRequest", "a Binding's target must name a Node")
        store = self.server.store
        with store.cond:
            key = ("", "pods", namespace, name)
            pod = store.objects.get(key)
            if pod is None:
                raise ApiError(404, "NotFound", f'pods "{name}" not found')
            if (pod.get("spec") or {}).get("nodeName"):
                raise ApiError(409, "Conflict", f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"')
            pod.setdefault("spec", {})["nodeName"] = target["name"]
            store.record("MODIFIED", key, pod)
        self.send_json(201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})

    def exec(self, namespace, name):
        """pods/exec over WebSocket (v5.channel.k8s.io, or v4 without stdin), proxied to the
        kubelet of the pod's node: the API server's part of `kubectl exec`. SPDY is not served."""
        lists = parse_qs(urlparse(self.path).query)
        command = lists.get("command", [])
        container = (lists.get("container") or [""])[-1]
        want_stdin = parse_bool((lists.get("stdin") or ["false"])[-1])
        if not command:
            raise ApiError(400, "BadRequest", "you must specify at least 1 command")
        store = self.server.store
        with store.cond:
            pod = copy.deepcopy(store.objects.get(("", "pods", namespace, name)))
            node = copy.deepcopy(store.objects.get(("", "nodes", "", ((pod or {}).get("spec") or {}).get("nodeName"))))
        if pod is None:
            raise ApiError(404, "NotFound", f'pods "{name}" not found')
        containers = [c["name"] for c in pod["spec"].get("containers", [])]
        sidecars = [c["name"] for c in pod["spec"].get("initContainers", []) if c.get("restartPolicy") == "Always"]
        container = container or (containers[0] if containers else "")
        if container not in containers + sidecars:
            raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {name}")
        if (pod.get("status") or {}).get("phase") != "Running" or node is None:
            raise ApiError(400, "BadRequest", f"pod {name} is not running")
        if (self.headers.get("Upgrade") or "").lower() != "websocket":
            raise ApiError(400, "BadRequest", "this test server serves exec over WebSocket only (no SPDY)")
        offered = [p.strip() for p in (self.headers.get("Sec-WebSocket-Protocol") or "").split(",") if p.strip()]
        protocol = next((p for p in ("v5.channel.k8s.io", "v4.channel.k8s.io") if p in offered), None)
        if protocol is None:
            raise ApiError(400, "BadRequest", f"no supported channel protocol in {offered}")
        if want_stdin and protocol != "v5.channel.k8s.io":
            raise ApiError(400, "BadRequest", "stdin needs v5.channel.k8s.io (v4 cannot close it)")
        port = (((node.get("status") or {}).get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
        key = self.headers.get("Sec-WebSocket-Key") or ""
        accept = base64.b64encode(hashlib.sha1((key + WEBSOCKET_GUID).encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.send_header("Sec-WebSocket-Protocol", protocol)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        stdin = b""
        if want_stdin:
            while True:
                opcode, data = ws_read_frame(self.rfile)
                if opcode is None or opcode == 8:
                    return
                if opcode == 9:
                    ws_write_frame(self.wfile, 10, data)
                    continue
                if opcode not in (1, 2) or not data:
                    continue
                if data[0] == 255 and data[1:2] == b"\x00":
                    break  # v5: stdin closed
                if data[0] == 0:
                    stdin += data[1:]
        request = json.dumps({"command": command, "stdin": base64.b64encode(stdin).decode()}).encode()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=900)
            conn.request("POST", f"/exec/{namespace}/{name}/{container}", body=request,
                         headers={"Authorization": f"Bearer {self.server.token}", "Content-Type": "application/json"})
            reply = conn.getresponse()
            answer = json.loads(reply.read() or b"{}")
            conn.close()
        except (OSError, ValueError, TypeError) as e:
            reply, answer = None, {"message": f"error dialing backend: {e}"}
        if reply is None or reply.status != 200:
            status = {"metadata": {}, "status": "Failure", "reason": "InternalError",
                      "message": answer.get("message", "the kubelet failed")}
        else:
            for channel, field in ((1, "stdout"), (2, "stderr")):
                data = base64.b64decode(answer.get(field, ""))
                for i in range(0, len(data), 32768):
                    ws_write_frame(self.wfile, 2, bytes([channel]) + data[i:i + 32768])
            code = int(answer.get("exitCode", -1))
            if code == 0:
                status = {"metadata": {}, "status": "Success"}
            else:
                status = {"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
                          "message": f"command terminated with non-zero exit code: exit status {code}",
                          "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}
        ws_write_frame(self.wfile, 2, b"\x03" + json.dumps(status).encode())
        ws_write_frame(self.wfile, 8, (1000).to_bytes(2, "big"))
        self.wfile.flush()

    # --- discovery --------------------------------------------------------------------------
    def group_list(self):
        groups = {}
        for (g, v, _) in self.server.store.resources:
            if g:
                groups.setdefault(g, set()).add(v)
        return {"kind": "APIGroupList", "apiVersion": "v1",
                "groups": [self.group(g) for g in sorted(groups)]}

    def group(self, g):
        versions = sorted({v for (gg, v, _) in self.server.store.resources if gg == g})
        if not versions:
            raise ApiError(404, "NotFound", f"no group {g}")
        vs = [{"groupVersion": f"{g}/{v}", "version": v} for v in versions]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": g, "versions": vs, "preferredVersion": vs[0]}

    def resource_list(self, group, version):
        found = [r for (g, v, _), r in sorted(self.server.store.resources.items()) if g == group and v == version]
        if not found:
            raise ApiError(404, "NotFound", f"no API version {group}/{version}")
        verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
        out = []
        for r in found:
            out.append({"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced, "kind": r.kind,
                        "verbs": verbs, "shortNames": r.short_names})
            if r.status:
                out.append({"name": f"{r.plural}/status", "singularName": "", "namespaced": r.namespaced,
                            "kind": r.kind, "verbs": ["get", "patch", "update"]})
            if r.scale:
                out.append({"name": f"{r.plural}/scale", "singularName": "", "namespaced": r.namespaced,
                            "group": "autoscaling", "version": "v1", "kind": "Scale",
                            "verbs": ["get", "patch", "update"]})
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version, "resources": out}

    # --- reads ------------------------------------------------------------------------------
    def key(self, res, namespace, name):
        return (res.group, res.plural, namespace if res.namespaced else "", name)

    def visible(self, res, namespace, query):
        labels = parse_label_selector(query.get("labelSelector"))
        fields = query.get("fieldSelector")

        def match(key, obj):
            if key[0] != res.group or key[1] != res.plural:
                return False
            if namespace is not None and key[2] != namespace:
                return False
            return labels_match(obj.get("metadata", {}).get("labels") or {}, labels) and fields_match(obj, fields)
        return match

    def list(self, res, namespace, query):
        store = self.server.store
        with store.cond:
            match = self.visible(res, namespace, query)
            items = [copy.deepcopy(o) for k, o in sorted(store.objects.items()) if match(k, o)]
            rv = str(store.rv)
        if "as=Table" in (self.headers.get("Accept") or ""):
            return self.send_json(200, self.table(res, items, rv))
        self.send_json(200, {"kind": f"{res.kind}List", "apiVersion": res.api_version,
                             "metadata": {"resourceVersion": rv}, "items": items})

    def table(self, res, items, rv):
        columns = [{"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}]
        custom = res.columns or [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
        for c in custom:
            columns.append({"name": c["name"], "type": "string" if c.get("type") == "date" else c.get("type", "string"),
                            "format": "", "description": c.get("description", ""), "priority": c.get("priority", 0)})
        rows = []
        for o in items:
            cells = [o["metadata"]["name"]]
            for c in custom:
                v = json_path(o, c["jsonPath"])
                cells.append(age(v) if c.get("type") == "date" else ("<none>" if v is None else v))
            rows.append({"cells": cells, "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                                     "metadata": o["metadata"]}})
        return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv},
                "columnDefinitions": columns, "rows": rows}

    def get(self, res, namespace, name, sub):
        store = self.server.store
        with store.cond:
            obj = store.objects.get(self.key(res, namespace, name))
            obj = copy.deepcopy(obj)
        if obj is None:
            raise ApiError(404, "NotFound", f'{res.plural}{"." + res.group if res.group else ""} "{name}" not found')
        if sub == "scale":
            return self.send_json(200, self.scale_of(res, obj))
        if "as=Table" in (self.headers.get("Accept") or ""):
            return self.send_json(200, self.table(res, [obj], obj["metadata"]["resourceVersion"]))
        self.send_json(200, obj)

    def scale_of(self, res, obj):
        spec = json_path(obj, res.scale["specReplicasPath"])
        status = json_path(obj, res.scale["statusReplicasPath"])
        scale = {"kind": "Scale", "apiVersion": "autoscaling/v1",
                 "metadata": {k: obj["metadata"][k] for k in ("name", "namespace", "uid", "resourceVersion",
                                                               "creationTimestamp") if k in obj["metadata"]},
                 "spec": {"replicas": spec or 0}, "status": {"replicas": status or 0}}
        if res.scale.get("labelSelectorPath"):
            selector = json_path(obj, res.scale["labelSelectorPath"])
            if selector:
                scale["status"]["selector"] = selector
        return scale

    # --- watch ------------------------------------------------------------------------------
    def write_chunk(self, event):
        data = (json.dumps(event) + "\n").encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def watch(self, res, namespace, query):
        store = self.server.store
        match = self.visible(res, namespace, query)
        bookmarks = parse_bool(query.get("allowWatchBookmarks"))
        timeout = min(int(query.get("timeoutSeconds", "1800")), 1800)
        deadline = time.monotonic() + timeout
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        since = query.get("resourceVersion", "")
        with store.cond:
            generation = store.generation
            if since in ("", "0"):
                # Start at the most recent state: the objects that exist, as ADDED.
                initial = [{"type": "ADDED", "object": copy.deepcopy(o)} for k, o in sorted(store.objects.items())
                           if match(k, o)]
                last = store.rv
            else:
                try:
                    last = int(since)
                except ValueError:
                    last = -1
                initial = []
                if last < store.oldest_rv - 1 or last < 0:
                    expired = status_body(410, "Expired", f"too old resource version: {since} ({store.oldest_rv - 1})")
                    initial = [{"type": "ERROR", "object": expired}]
                    last = None
        try:
            for e in initial:
                self.write_chunk(e)
            next_bookmark = time.monotonic() + self.server.bookmark_interval
            while last is not None and time.monotonic() < deadline:
                with store.cond:
                    pending = [e for e in store.events if e[0] > last]
                    if not pending and store.generation == generation:
                        store.cond.wait(timeout=max(0.0, min(deadline, next_bookmark) - time.monotonic()))
                        pending = [e for e in store.events if e[0] > last]
                    if store.generation != generation:
                        break
                    current = store.rv
                for rv, g, p, ns, kind, obj in pending:
                    last = rv
                    if match((g, p, ns, obj["metadata"]["name"]), obj):
                        self.write_chunk({"type": kind, "object": obj})
                if bookmarks and time.monotonic() >= next_bookmark:
                    last = max(last, current)
                    self.write_chunk({"type": "BOOKMARK", "object": {
                        "kind": res.kind, "apiVersion": res.api_version,
                        "metadata": {"resourceVersion": str(last)}}})
                if time.monotonic() >= next_bookmark:
                    next_bookmark = time.monotonic() + self.server.bookmark_interval
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    # --- writes -----------------------------------------------------------------------------
    def check_object(self, res, namespace, obj, name=None):
        if not isinstance(obj, dict):
            raise ApiError(400, "BadRequest", "the request body must be an object")
        if obj.get("kind") not in (None, res.kind) or obj.get("apiVersion") not in (None, res.api_version):
            raise ApiError(400, "BadRequest",
                           f"the body is {obj.get('apiVersion')} {obj.get('kind')}, the path {res.api_version} {res.kind}")
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            if meta.get("namespace") not in (None, namespace):
                raise ApiError(400, "BadRequest", "the namespace of the object does not match the namespace on the request")
            meta["namespace"] = namespace
        if name is not None and meta.get("name") not in (None, name):
            raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
        obj["kind"], obj["apiVersion"] = res.kind, res.api_version

    def create(self, res, namespace, query):
        store = self.server.store
        _, obj = self.read_body()
        self.check_object(res, namespace, obj)
        meta = obj["metadata"]
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(random.choice(string.ascii_lowercase + string.digits)
                                                          for _ in range(5))
        name = meta.get("name") or ""
        valid = DNS_LABEL if res.plural in ("namespaces", "services") else DNS_SUBDOMAIN
        if not valid.match(name) or len(name) > 253:
            raise ApiError(422, "Invalid", f'{res.kind} "{name}" is invalid: metadata.name: Invalid value: "{name}"')
        if res.plural == "pods":
            spec = obj.get("spec") or {}
            if not spec.get("containers"):
                raise ApiError(422, "Invalid", f'Pod "{name}" is invalid: spec.containers: Required value')
            if spec.get("hostname") and not DNS_LABEL.match(spec["hostname"]):
                raise ApiError(422, "Invalid", f'Pod "{name}" is invalid: spec.hostname: Invalid value')
        with store.cond:
            if res.namespaced and ("", "namespaces", "", namespace) not in store.objects:
                raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found')
            key = self.key(res, namespace, name)
            if key in store.objects:
                raise ApiError(409, "AlreadyExists",
                               f'{res.plural}{"." + res.group if res.group else ""} "{name}" already exists')
            if query.get("dryRun") == "All":
                return self.send_json(201, obj)
            for k in ("resourceVersion", "deletionTimestamp"):
                meta.pop(k, None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            meta["generation"] = 1
            if res.status:
                obj.pop("status", None)
            if res.plural == "pods":
                obj["status"] = {"phase": "Pending"}
            if res.plural == "namespaces":
                obj["status"] = {"phase": "Active"}
            store.objects[key] = obj
            store.record("ADDED", key, obj)
            if res.plural == "customresourcedefinitions":
                store.register_crd(obj)
                obj["status"] = {"conditions": [{"type": "Established", "status": "True",
                                                 "lastTransitionTime": now_rfc3339()}],
                                 "acceptedNames": obj["spec"]["names"]}
                store.record("MODIFIED", key, obj)
            out = copy.deepcopy(obj)
        self.send_json(201, out)

    def write(self, res, namespace, name, sub, method):
        store = self.server.store
        ctype, body = self.read_body()
        with store.cond:
            key = self.key(res, namespace, name)
            current = store.objects.get(key)
            if current is None:
                raise ApiError(404, "NotFound", f'{res.plural}{"." + res.group if res.group else ""} "{name}" not found')
            base = self.scale_of(res, current) if sub == "scale" else current
            if method == "PUT":
                new = body
            elif ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
                new = merge_patch(base, body)
            elif ctype == "application/json-patch+json":
                new = json_patch(base, body if isinstance(body, list) else [])
            else:
                raise ApiError(415, "UnsupportedMediaType", f"the patch type {ctype} is not supported")
            if not isinstance(new, dict):
                raise ApiError(400, "BadRequest", "the request body must be an object")
            want_rv = (new.get("metadata") or {}).get("resourceVersion")
            if method == "PUT" and self.server.faults.take_conflict():
                # As if another writer had updated the object between the client's read and write.
                want_rv = "0"
            if want_rv and want_rv != current["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict",
                               f'Operation cannot be fulfilled on {res.plural}{"." + res.group if res.group else ""} '
                               f'"{name}": the object has been modified; please apply your changes to the latest '
                               f'version and try again')
            if sub == "scale":
                replicas = (new.get("spec") or {}).get("replicas")
                if not isinstance(replicas, int) or replicas < 0:
                    raise ApiError(422, "Invalid", "Scale.spec.replicas: must be a non-negative integer")
                updated = copy.deepcopy(current)
                path = [p for p in res.scale["specReplicasPath"].split(".") if p]
                node = updated
                for p in path[:-1]:
                    node = node.setdefault(p, {})
                node[path[-1]] = replicas
            else:
                self.check_object(res, namespace, new, name)
                updated = copy.deepcopy(new)
                meta = updated["metadata"]
                for k in ("uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds"):
                    if k in current["metadata"]:
                        meta[k] = current["metadata"][k]
                    else:
                        meta.pop(k, None)
                if sub == "status":
                    # Only status changes through /status.
                    status = updated.get("status")
                    updated = copy.deepcopy(current)
                    if status is None:
                        updated.pop("status", None)
                    else:
                        updated["status"] = status
                elif res.status:
                    # Status changes only through /status.
                    if "status" in current:
                        updated["status"] = current["status"]
                    else:
                        updated.pop("status", None)
            strip = lambda o: {k: v for k, v in o.items() if k not in ("metadata", "status")}
            if strip(updated) != strip(current):
                updated["metadata"]["generation"] = current["metadata"].get("generation", 1) + 1
            released = None
            if updated == current:
                out = copy.deepcopy(current)  # a no-op write does not bump the resourceVersion
            elif (updated["metadata"].get("deletionTimestamp") and not updated["metadata"].get("finalizers")
                  and current["metadata"].get("finalizers")):
                # The last finalizer is gone from an object being deleted: now it is.
                del store.objects[key]
                store.record("DELETED", key, updated)
                released = updated["metadata"].get("uid")
                out = copy.deepcopy(updated)
            else:
                store.objects[key] = updated
                store.record("MODIFIED", key, updated)
                out = copy.deepcopy(updated)
        if released:
            threading.Thread(target=self.server.collect_garbage, args=(released,), daemon=True).start()
        self.send_json(200, self.scale_of(res, out) if sub == "scale" else out)

    def delete(self, res, namespace, name, query):
        store = self.server.store
        grace = query.get("gracePeriodSeconds")
        if grace is None and self.raw_body:
            _, body = self.read_body()
            if isinstance(body, dict) and body.get("gracePeriodSeconds") is not None:
                grace = str(body["gracePeriodSeconds"])
        with store.cond:
            key = self.key(res, namespace, name)
            obj = store.objects.get(key)
            if obj is None:
                raise ApiError(404, "NotFound", f'{res.plural}{"." + res.group if res.group else ""} "{name}" not found')
            if res.plural == "pods" and (obj.get("spec") or {}).get("nodeName") and grace != "0":
                # A running pod: its kubelet stops it and then deletes it with gracePeriodSeconds=0.
                if not obj["metadata"].get("deletionTimestamp"):
                    obj["metadata"]["deletionTimestamp"] = now_rfc3339()
                    obj["metadata"]["deletionGracePeriodSeconds"] = int(grace or 30)
                    store.record("MODIFIED", key, obj)
                return self.send_json(202, copy.deepcopy(obj))
            if obj["metadata"].get("finalizers"):
                # Kept until its finalizers are removed by whoever put them there.
                if not obj["metadata"].get("deletionTimestamp"):
                    obj["metadata"]["deletionTimestamp"] = now_rfc3339()
                    obj["metadata"]["deletionGracePeriodSeconds"] = 0
                    store.record("MODIFIED", key, obj)
                return self.send_json(200, copy.deepcopy(obj))
            del store.objects[key]
            store.record("DELETED", key, obj)
            if res.plural == "customresourcedefinitions":
                store.unregister_crd(obj)
            if res.plural == "namespaces":
                for k in [k for k in store.objects if k[2] == name]:
                    store.record("DELETED", k, store.objects.pop(k))
            uid = obj["metadata"].get("uid")
            out = copy.deepcopy(obj)
        threading.Thread(target=self.server.collect_garbage, args=(uid,), daemon=True).start()
        self.send_json(200, out)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port, token, store, bookmark_interval, verbose):
        super().__init__(("127.0.0.1", port), Handler)
        self.token, self.store, self.bookmark_interval, self.verbose = token, store, bookmark_interval, verbose
        self.faults = Faults()
        self.requests_lock = threading.Lock()
        self.requests = {}  # (User-Agent, "verb resource") -> count

    def collect_garbage(self, uid):
        """Deletes every object owned by uid, then theirs (Kubernetes' background propagation)."""
        time.sleep(0.05)  # the collector runs after the owner is gone, never in the same request
        pending = [uid]
        while pending:
            owner = pending.pop()
            with self.store.cond:
                for key in [k for k, o in self.store.objects.items()
                            if any(r.get("uid") == owner for r in o["metadata"].get("ownerReferences") or [])]:
                    obj = self.store.objects[key]
                    if obj["metadata"].get("finalizers"):
                        if not obj["metadata"].get("deletionTimestamp"):
                            obj["metadata"]["deletionTimestamp"] = now_rfc3339()
                            self.store.record("MODIFIED", key, obj)
                        continue
                    del self.store.objects[key]
                    self.store.record("DELETED", key, obj)
                    pending.append(obj["metadata"].get("uid"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--tls-cert", required=True)
    ap.add_argument("--tls-key", required=True)
    ap.add_argument("--state", help="keep objects in this file across restarts")
    ap.add_argument("--history", type=int, default=1000, help="watch events kept for resuming")
    ap.add_argument("--bookmark-interval", type=float, default=1.0)
    ap.add_argument("--crds", nargs="*", default=[], help="CRD manifests served from the start")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    with open(args.token_file) as f:
        token = f.read().strip()
    if len(token) < 16:
        sys.exit("apiserver: the token must be at least 16 characters")
    store = Store(args.state, args.history)
    with store.cond:
        if ("", "namespaces", "", "default") not in store.objects:
            key = ("", "namespaces", "", "default")
            store.objects[key] = {"apiVersion": "v1", "kind": "Namespace",
                                  "metadata": {"name": "default", "uid": str(uuid.uuid4()),
                                               "creationTimestamp": now_rfc3339()},
                                  "status": {"phase": "Active"}}
            store.record("ADDED", key, store.objects[key])
        for path in args.crds:
            with open(path) as f:
                for crd in yaml.safe_load_all(f):
                    if crd and crd.get("kind") == "CustomResourceDefinition":
                        store.register_crd(crd)
    server = Server(args.port, token, store, args.bookmark_interval, args.verbose)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.minimum_version = ssl.TLSVersion.TLSv1_2
    tls.load_cert_chain(args.tls_cert, args.tls_key)
    # The handshake runs in the request's thread, so a client that stalls it holds only itself.
    server.socket = tls.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
