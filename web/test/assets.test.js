// Every file of web/console is embedded in the binary (CONSOLE_ASSETS in
// src/server/CMakeLists.txt) and nothing else is listed there: a module left out would
// fail to load in the browser only.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import test from "node:test";

const root = new URL("../../", import.meta.url);

test("the embedded console assets are exactly web/console's files", () => {
  const cmake = readFileSync(new URL("src/server/CMakeLists.txt", root), "utf8");
  const listed = /set\(CONSOLE_ASSETS([^)]*)\)/.exec(cmake)[1].trim().split(/\s+/).sort();
  const present = readdirSync(new URL("web/console/", root)).sort();
  assert.deepEqual(listed, present);
  for (const name of present) assert.match(name, /^[a-z][a-z_]*\.(js|css|html)$/, "the server serves only such names");
});
