// Which project a link opens, and where each scope's jobs are listed.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ALL_PROJECTS, jobsBase, projectFromHash } from "../console/state.js";

test("a link opens the project it names when the caller may open it", () => {
  assert.equal(projectFromHash("#/projects/demo/jobs", ["astro", "demo"], false), "demo");
  assert.equal(projectFromHash("#/projects/secret/jobs", ["astro"], false), "astro", "not a member: their first");
  assert.equal(projectFromHash("#/jobs", [], false), "", "no project at all");
});

test("admins may open every project at once, and land there when no project is configured", () => {
  assert.equal(projectFromHash("#/projects/*/jobs", ["astro"], true), ALL_PROJECTS);
  assert.equal(projectFromHash("#/projects/*/jobs", ["astro"], false), "astro", "users may not");
  assert.equal(projectFromHash("#/jobs", [], true), ALL_PROJECTS);
  assert.equal(projectFromHash("#/jobs", ["astro"], true), "astro");
});

test("every project's jobs are listed under /jobs, a project's under its own path", () => {
  assert.equal(jobsBase(ALL_PROJECTS), "/api/v1/jobs");
  assert.equal(jobsBase("astro"), "/api/v1/projects/astro/jobs");
});
