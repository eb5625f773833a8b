// The OpenAPI 3.0 description of /api/v1, served at /api/v1/openapi.json.
#pragma once

namespace hpc::cp {

inline constexpr const char* kOpenApiDocument = R"json({
  "openapi": "3.0.3",
  "info": {"title": "hpcplane control plane", "version": "v1"},
  "servers": [{"url": "/api/v1"}],
  "components": {
    "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"},
      "session": {"type": "apiKey", "in": "cookie", "name": "hpcplane_session",
        "description": "the web console's session (POST /session); state-changing requests also need X-CSRF-Token"}},
    "schemas": {
      "Error": {"type": "object", "properties": {"error": {"type": "object", "properties": {
        "code": {"type": "integer"}, "message": {"type": "string"}, "field": {"type": "string"}}}}},
      "Job": {"type": "object", "properties": {
        "dataPlane": {"type": "string"}, "cluster": {"type": "string"}, "jobId": {"type": "integer"},
        "submitTime": {"type": "integer"}, "name": {"type": "string"}, "user": {"type": "string"},
        "project": {"type": "string"}, "partition": {"type": "string"}, "state": {"type": "string"},
        "exitCode": {"type": "string"}, "startTime": {"type": "integer"}, "endTime": {"type": "integer"},
        "elapsedSeconds": {"type": "integer"}, "cpuSeconds": {"type": "integer"}, "maxRssKiB": {"type": "integer"},
        "nodes": {"type": "integer"}, "nodeList": {"type": "string"}, "tres": {"type": "string"},
        "source": {"type": "string", "enum": ["terminal", "api"]}},
        "required": ["cluster", "jobId", "submitTime", "user", "state"]},
      "DataPlane": {"type": "object", "properties": {
        "name": {"type": "string"}, "state": {"type": "string", "enum": ["Healthy", "Degraded", "Unreachable"]},
        "reasons": {"type": "array", "items": {"type": "string"}},
        "componentVersions": {"type": "object", "additionalProperties": {"type": "string"}},
        "lastReport": {"type": "integer"},
        "slurm": {"type": "object", "properties": {"offered": {"type": "boolean"}, "version": {"type": "string"}}}}},
      "Project": {"type": "object", "properties": {
        "dataPlane": {"type": "string"}, "defaultTier": {"type": "string"},
        "tiers": {"type": "array", "items": {"type": "string"}}, "maxWorkers": {"type": "integer"},
        "idleTimeout": {"type": "string", "description": "e.g. 5m (answers: idleTimeoutSeconds)"},
        "tokenLifetime": {"type": "string", "description": "e.g. 8h (answers: tokenLifetimeSeconds)"},
        "datasets": {"type": "array", "items": {"type": "string"}},
        "sysAdmins": {"type": "array", "items": {"type": "string"}}},
        "required": ["dataPlane"]},
      "Workspace": {"type": "object", "properties": {
        "id": {"type": "string"}, "project": {"type": "string"}, "dataPlane": {"type": "string"},
        "user": {"type": "string"}, "uid": {"type": "integer"}, "admin": {"type": "boolean"},
        "tier": {"type": "string"}, "maxWorkers": {"type": "integer"},
        "idleTimeoutSeconds": {"type": "integer"}, "tokenLifetimeSeconds": {"type": "integer"},
        "datasets": {"type": "array", "items": {"type": "string"}},
        "desired": {"type": "string", "enum": ["Running", "Stopped"]}, "cancelJobs": {"type": "boolean"},
        "phase": {"type": "string", "enum": ["Pending", "Ready", "Stopping", "Stopped", "Failed"]},
        "message": {"type": "string"}, "createdAt": {"type": "integer"}, "updatedAt": {"type": "integer"}}}
    }
  },
  "security": [{"bearer": []}, {"session": []}],
  "paths": {
    "/dataplanes": {"get": {"summary": "Data planes with their reported state and components",
      "responses": {"200": {"description": "dataPlanes: [DataPlane]"}}}},
    "/dataplanes/{name}/report": {"post": {"summary": "Agent: report state and componentVersions",
      "responses": {"200": {"description": "accepted"}, "400": {"description": "malformed"}, "403": {"description": "not this data plane's agent"}}}},
    "/dataplanes/{name}/jobs": {"post": {"summary": "Agent: upsert a batch of job records {jobs: [Job]}",
      "responses": {"200": {"description": "upserted"}, "400": {"description": "malformed, names the field"}}}},
    "/projects/{project}/jobs": {
      "get": {"summary": "A project's HPC jobs, newest first",
        "parameters": [{"name": "sort", "in": "query", "description": "submit (default), start or end: the time jobs are ordered by, newest first; not yet started or ended jobs last", "schema": {"enum": ["submit", "start", "end"]}},
          {"name": "user", "in": "query"}, {"name": "state", "in": "query"},
          {"name": "workspace", "in": "query"}, {"name": "name", "in": "query", "description": "part of the job name"},
          {"name": "from", "in": "query", "description": "submit time >= (unix s)"},
          {"name": "to", "in": "query", "description": "submit time < (unix s)"},
          {"name": "limit", "in": "query", "description": "1-1000, default 100"},
          {"name": "cursor", "in": "query", "description": "nextCursor of the previous page"}],
        "responses": {"200": {"description": "jobs: [Job], nextCursor"}, "403": {"description": "not a member"}}},
      "post": {"summary": "Submit a batch script (flag EnableHPCJobs): {workspace, script, options?, dataPlane? (required unless the control plane launched the workspace)}",
        "responses": {"202": {"description": "submission, Pending until the agent runs sbatch"},
          "403": {"description": "flag off or not a member"}, "400": {"description": "malformed, names the field"},
          "409": {"description": "not the caller's running workspace, or data plane not Healthy with Slurm"}}}},
    "/projects/{project}/jobs/export": {"get": {"summary": "All matching jobs, streamed",
      "parameters": [{"name": "format", "in": "query", "schema": {"enum": ["ndjson", "csv"]}}],
      "responses": {"200": {"description": "application/x-ndjson or text/csv"}}}},
    "/projects/{project}/jobs/{dataPlane}/{cluster}/{jobId}": {"get": {"summary": "One job with its runtime statistics",
      "parameters": [{"name": "submitTime", "in": "query", "description": "which run of a reused id (default: latest)"}],
      "responses": {"200": {"description": "Job"}, "404": {"description": "unknown"}}}},
    "/projects/{project}": {
      "put": {"summary": "Admin: configure a project (Project): where and how its workspaces run",
        "responses": {"200": {"description": "Project"}, "400": {"description": "malformed, names the field"}}},
      "get": {"summary": "A project's configuration", "responses": {"200": {"description": "Project"},
        "404": {"description": "not configured"}}}},
    "/projects/{project}/workspaces": {
      "get": {"summary": "The project's workspaces", "responses": {"200": {"description": "workspaces: [Workspace]"}}},
      "post": {"summary": "Launch a workspace {tier?, maxWorkers?, name?, user? (admins)}, built from the project's configuration",
        "responses": {"202": {"description": "Workspace (phase Pending until its data plane applies it)"},
          "400": {"description": "malformed, names the field"}, "403": {"description": "not a member, or another user"},
          "404": {"description": "project not configured"},
          "409": {"description": "data plane not Healthy with Slurm, or the id is taken"}}}},
    "/projects/{project}/workspaces/{id}": {
      "get": {"summary": "One workspace", "responses": {"200": {"description": "Workspace"}}},
      "delete": {"summary": "Stop a workspace (its user or an admin)",
        "parameters": [{"name": "cancelJobs", "in": "query", "description": "true: cancel its jobs instead of waiting"}],
        "responses": {"202": {"description": "Workspace with desired Stopped"}}}},
    "/dataplanes/{name}/workspaces": {"get": {"summary": "Agent: the workspaces wanted on this data plane",
      "responses": {"200": {"description": "workspaces: [Workspace]"}}}},
    "/dataplanes/{name}/workspaces/{id}/status": {"post": {"summary": "Agent: report a workspace's {phase, message}",
      "responses": {"200": {"description": "accepted"}, "400": {"description": "unknown phase"}}}},
    "/flags": {"get": {"summary": "Feature flags", "responses": {"200": {"description": "flags"}}}},
    "/flags/{name}": {"put": {"summary": "Admin: set a flag {value: bool}", "responses": {"200": {"description": "set"}}}},
    "/tokens": {"post": {"summary": "Admin: create an API token {subject, role, projects}",
      "responses": {"201": {"description": "token (shown once)"}}}},
    "/projects/{project}/jobs/{dataPlane}/{cluster}/{jobId}/cancel": {"post": {
      "summary": "Cancel a queued or running job (its user or an admin); its data plane's agent runs scancel",
      "parameters": [{"name": "submitTime", "in": "query", "description": "which run of a reused id (default: latest)"}],
      "responses": {"202": {"description": "Cancellation {id, state: Pending, ...}"},
        "403": {"description": "another user's job"}, "404": {"description": "unknown job"},
        "409": {"description": "the job has ended, or its data plane is not Healthy with Slurm"}}}},
    "/projects/{project}/jobs/{dataPlane}/{cluster}/{jobId}/script": {"get": {
      "summary": "The batch script and options of a job submitted through the API (its user or an admin)",
      "parameters": [{"name": "submitTime", "in": "query"}],
      "responses": {"200": {"description": "script, sbatchArgs, submission"}, "403": {"description": "another user's job"},
        "404": {"description": "unknown job, or not submitted through the API"}}}},
    "/projects/{project}/cancellations/{id}": {"get": {"summary": "A cancellation: Pending, Done or Failed (with why)",
      "responses": {"200": {"description": "Cancellation"}}}},
    "/dataplanes/{name}/cancellations": {"get": {"summary": "Agent: pending cancellations of this data plane",
      "responses": {"200": {"description": "cancellations: [Cancellation]"}}}},
    "/dataplanes/{name}/cancellations/{id}": {"post": {"summary": "Agent: settle a cancellation {state: Done|Failed, error}",
      "responses": {"200": {"description": "Cancellation"}}}},
    "/projects": {"get": {"summary": "The projects the caller may open (admins: every configured one)",
      "responses": {"200": {"description": "projects: [string]"}}}},
    "/projects/{project}/jobs/stats": {"get": {"summary": "Aggregates for charts, computed by the store",
      "parameters": [{"name": "from", "in": "query", "description": "submit time >= (unix s; default 7 days ago)"},
        {"name": "to", "in": "query", "description": "submit time < (unix s; default now)"},
        {"name": "bucket", "in": "query", "description": "seconds, 60 to 366 days (default 3600); at most 1000 buckets"},
        {"name": "user", "in": "query"}, {"name": "workspace", "in": "query"}],
      "responses": {"200": {"description": "states: [{start, states: {STATE: jobs}}], queueWait: [{range, jobs}], nodeHours: [{user, day, nodeHours}]"},
        "400": {"description": "bad range or too many buckets, names the field"}}}},
    "/session": {
      "post": {"summary": "Console sign-in {token}: sets an HttpOnly SameSite=Strict session cookie; no bearer needed",
        "security": [],
        "responses": {"201": {"description": "subject, role, projects, csrfToken (send as X-CSRF-Token on POST/PUT/DELETE), expiresAt"},
          "401": {"description": "unknown, expired or revoked token"}, "403": {"description": "agent or metrics token"},
          "415": {"description": "not a JSON body"}, "429": {"description": "too many failed sign-ins from the address"}}},
      "get": {"summary": "The signed-in caller (cookie or bearer), with the session's csrfToken",
        "responses": {"200": {"description": "subject, role, projects, csrfToken?"}}},
      "delete": {"summary": "Sign out: ends the session, clears the cookie",
        "responses": {"200": {"description": "signedOut"}}}}
  }
})json";

}  // namespace hpc::cp
