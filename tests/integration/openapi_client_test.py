#!/usr/bin/env python3
"""A client generated from the OpenAPI document works: a real `hpcplane server` serves
/api/v1/openapi.json, PyPI's openapi-python-client (scripts/python-tools.txt) generates a Python
client from it, and that client alone runs a user's scenario against the same server: the admin
creates tokens and configures a project, the data plane's agent reports itself healthy, a user
launches a workspace and submits a batch job, the agent settles the submission with its job id,
and the user reads the job's record. Every request goes through the generated functions and
models; nothing is sent by hand.

Run with the tools' own Python (it has the generated client's httpx and attrs):
  /opt/hpcplane/python-tools/bin/python tests/integration/openapi_client_test.py BUILD_DIR
"""
import importlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

TOOLS = os.path.dirname(sys.executable)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAIL: {what}")
    print(f"ok: {what}", flush=True)


def body_of(response):
    """The JSON of an answer the document gives no schema for (the generated client keeps bytes)."""
    return json.loads(response.content) if response.content else None


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    generator = os.path.join(TOOLS, "openapi-python-client")
    if not os.access(generator, os.X_OK):
        raise SystemExit(f"FAIL: no {generator} (scripts/install-deps.sh test installs it)")
    work = tempfile.mkdtemp(prefix="hpcplane-openapi-client.")
    state = os.path.join(work, "state")
    port = free_port()
    server = subprocess.Popen([os.path.join(build, "hpcplane"), "server", "--listen", f"127.0.0.1:{port}"],
                              env=dict(os.environ, HPCPLANE_STATE_DIR=state),
                              stdout=open(os.path.join(work, "server.log"), "w"), stderr=subprocess.STDOUT)
    try:
        run(work, state, port, generator, server)
    except BaseException:
        print(open(os.path.join(work, "server.log")).read()[-3000:], flush=True)
        raise
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


def run(work, state, port, generator, server):
    token_file = os.path.join(state, "controlplane", "admin.token")
    deadline = time.time() + 30
    while not (os.path.exists(token_file) and os.path.getsize(token_file)):
        if server.poll() is not None:
            raise SystemExit(f"FAIL: the server exited ({server.returncode}) before it wrote its admin token")
        if time.time() > deadline:
            raise SystemExit("FAIL: the server wrote no admin token in 30 s")
        time.sleep(0.1)
    admin_token = open(token_file).read().strip()
    import httpx  # the generated client's own dependency; here only to fetch the document
    base = f"http://127.0.0.1:{port}/api/v1"
    while True:
        try:
            doc = httpx.get(base + "/openapi.json", headers={"Authorization": "Bearer " + admin_token})
            if doc.status_code == 200:
                break
        except httpx.TransportError:
            if server.poll() is not None:
                raise SystemExit(f"FAIL: the server exited ({server.returncode})") from None
            # else not listening yet
        if time.time() > deadline:
            raise SystemExit("FAIL: the server did not serve its document")
        time.sleep(0.1)
    spec = os.path.join(work, "openapi.json")
    open(spec, "w").write(doc.text)
    out = os.path.join(work, "client")
    gen = subprocess.run([generator, "generate", "--path", spec, "--meta", "none", "--output-path", out],
                         env=dict(os.environ, PATH=TOOLS + os.pathsep + os.environ.get("PATH", "")),
                         capture_output=True, text=True, timeout=300)
    print(gen.stdout + gen.stderr, flush=True)
    check(gen.returncode == 0 and "Warning" not in gen.stdout + gen.stderr,
          "openapi-python-client generates a client from the served document without a warning")
    sys.path.insert(0, work)
    pkg = importlib.import_module("client")
    api = lambda name: importlib.import_module(f"client.api.default.{name}")  # noqa: E731
    models = importlib.import_module("client.models")

    def client(token):
        return pkg.AuthenticatedClient(base_url=base, token=token, raise_on_unexpected_status=False)

    admin = client(admin_token)
    tokens = {}
    for subject, role, projects in [("ann", "user", ["astro"]), ("dp1", "agent", [])]:
        r = api("post_tokens").sync_detailed(client=admin, body=models.PostTokensBody(
            subject=subject, role=models.PostTokensBodyRole(role), projects=projects))
        check(r.status_code == 201, f"the admin creates {subject}'s token ({r.status_code})")  # its secret unprinted
        tokens[subject] = body_of(r)["token"]
    ann, agent = client(tokens["ann"]), client(tokens["dp1"])

    r = api("put_flags_name").sync_detailed(name="EnableHPCJobs", client=admin, body=models.PutFlagsNameBody(value=True))
    check(r.status_code == 200, f"the admin turns on submissions through the API ({r.status_code})")
    r = api("put_projects_project").sync_detailed(project="astro", client=admin,
                                                   body=models.Project(data_plane="dp1"))
    check(r.status_code == 200, f"the admin configures project astro on data plane dp1 ({r.status_code})")

    versions = models.PostDataplanesNameReportBodyComponentVersions.from_dict({"slurm/slurmctld": "26.05.0"})
    r = api("post_dataplanes_name_report").sync_detailed(name="dp1", client=agent, body=models.PostDataplanesNameReportBody(
        state=models.PostDataplanesNameReportBodyState("Healthy"), component_versions=versions))
    check(r.status_code == 200, f"the data plane's agent reports Healthy with Slurm ({r.status_code} {r.content[:200]})")

    r = api("post_projects_project_workspaces").sync_detailed(project="astro", client=ann,
                                                               body=models.PostProjectsProjectWorkspacesBody())
    check(r.status_code == 202, f"ann launches a workspace ({r.status_code} {r.content[:200]})")
    workspace = body_of(r)["id"]

    script = "#!/bin/bash\nhostname\n"
    r = api("post_projects_project_jobs").sync_detailed(project="astro", client=ann, body=models.PostProjectsProjectJobsBody(
        workspace=workspace, script=script))
    check(r.status_code == 202, f"ann submits a batch job in {workspace} ({r.status_code} {r.content[:200]})")
    submission = body_of(r)["id"]

    r = api("get_dataplanes_name_submissions").sync_detailed(name="dp1", client=agent)
    pending = body_of(r)["submissions"] if r.status_code == 200 else []
    check([s["id"] for s in pending] == [submission] and pending[0]["script"] == script,
          "the agent is given the submission with its script")
    submitted_at = int(time.time())
    r = api("post_dataplanes_name_submissions_id").sync_detailed(
        name="dp1", id=submission, client=agent, body=models.PostDataplanesNameSubmissionsIdBody(
            state=models.PostDataplanesNameSubmissionsIdBodyState("Submitted"), job_id=4242,
            submit_time=submitted_at, cluster="c1"))
    check(r.status_code == 200, f"the agent settles it as job 4242 ({r.status_code} {r.content[:200]})")

    r = api("get_projects_project_jobs_data_plane_cluster_job_id").sync_detailed(
        project="astro", data_plane="dp1", cluster="c1", job_id=4242, client=ann)
    record = body_of(r) if r.status_code == 200 else {}
    check(record.get("jobId") == 4242 and record.get("user") == "ann" and record.get("source") == "api" and
          record.get("submitTime") == submitted_at, f"ann reads job 4242's record ({r.status_code} {record})")
    r = api("get_projects_project_jobs").sync_detailed(project="astro", client=ann)
    check(r.status_code == 200 and [j["jobId"] for j in body_of(r)["jobs"]] == [4242], "and finds it in her project's list")

    # What the document says the server answers, the generated client sees: a path value that
    # does not match its pattern is 404 with the JSON error body.
    r = api("get_projects_project").sync_detailed(project="Not_A_Name", client=admin)
    check(r.status_code == 404 and "error" in body_of(r), "a path value outside its pattern is a 404 with an error body")
    print("openapi client: passed", flush=True)


if __name__ == "__main__":
    main()
