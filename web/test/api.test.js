// What the console does with a request the browser dropped (fetch rejects: no answer at all).
import assert from "node:assert/strict";
import { afterEach, test } from "node:test";

import { api } from "../console/api.js";

const realFetch = globalThis.fetch;
afterEach(() => { globalThis.fetch = realFetch; });

/** Answers from `outcomes` in turn (an Error rejects); records each request's method. */
function fakeFetch(/** @type {Array<Error | object>} */ outcomes) {
  const calls = /** @type {string[]} */ ([]);
  globalThis.fetch = /** @type {any} */ (async (/** @type {string} */ _path, /** @type {any} */ init) => {
    calls.push(init.method);
    const next = outcomes.shift();
    if (next instanceof Error) throw next;
    return new Response(JSON.stringify(next), { status: 200 });
  });
  return calls;
}

test("a GET the browser dropped is sent once more", async () => {
  const calls = fakeFetch([new TypeError("Failed to fetch"), { ok: 1 }]);
  assert.deepEqual(await api("GET", "/api/v1/flags"), { ok: 1 });
  assert.deepEqual(calls, ["GET", "GET"]);
});

test("a GET dropped twice fails with the browser's error", async () => {
  const calls = fakeFetch([new TypeError("Failed to fetch"), new TypeError("Failed to fetch again")]);
  await assert.rejects(api("GET", "/api/v1/flags"), /Failed to fetch again/);
  assert.equal(calls.length, 2);
});

test("a request that changes something is never sent twice", async () => {
  const calls = fakeFetch([new TypeError("Failed to fetch"), { ok: 1 }]);
  await assert.rejects(api("POST", "/api/v1/tokens", { subject: "ann" }), /Failed to fetch/);
  assert.deepEqual(calls, ["POST"]);
});
