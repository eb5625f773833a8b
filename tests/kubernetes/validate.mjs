// Checks hpcplane's Kubernetes manifests without an API server:
//  1. every object `kubectl kustomize` renders (base and overlays) against the official
//     Kubernetes OpenAPI schemas (kubernetes-models' validators are generated from them);
//  2. every CRD's openAPIV3Schema against Kubernetes' structural-schema rules;
//  3. the examples and samples against the CRD schemas with ajv, as the API server's strict
//     field validation would: each sample says whether the schema admits it ("# schema:").
// Usage: node validate.mjs SOURCE_DIR   (exits 1 on the first kind of failure, listing all)
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import Ajv from "ajv";
import { parseAllDocuments } from "yaml";

const source = process.argv[2];
if (!source) {
  console.error("usage: node validate.mjs SOURCE_DIR");
  process.exit(2);
}
const failures = [];
const fail = (what) => failures.push(what);

function documents(text, where) {
  return parseAllDocuments(text).flatMap((d) => {
    if (d.errors.length) fail(`${where}: ${d.errors[0].message}`);
    const o = d.toJS();
    return o ? [o] : [];
  });
}

// 1. Rendered objects against the official schemas.
async function validateOfficial(obj, where) {
  const [group, version] = obj.apiVersion.includes("/") ? obj.apiVersion.split("/") : [null, obj.apiVersion];
  const path = group ? `kubernetes-models/${group}/${version}/${obj.kind}` : `kubernetes-models/${version}/${obj.kind}`;
  let model;
  try {
    model = await import(path);
  } catch {
    fail(`${where}: no official schema for ${obj.apiVersion} ${obj.kind}`);
    return;
  }
  try {
    new model[obj.kind](obj).validate();
  } catch (e) {
    fail(`${where}: ${obj.kind}/${obj.metadata?.name}: ${e.message}`);
  }
}

const kustomizations = ["deploy/kubernetes", "deploy/kubernetes/overlays/postgres"];
const crds = [];
for (const dir of kustomizations) {
  const out = execFileSync("kubectl", ["kustomize", join(source, dir)], { encoding: "utf8" });
  const objs = documents(out, dir);
  if (objs.length === 0) fail(`${dir}: renders nothing`);
  for (const obj of objs) {
    await validateOfficial(obj, dir);
    if (obj.kind === "CustomResourceDefinition" && dir === kustomizations[0]) crds.push(obj);
  }
  console.log(`${dir}: ${objs.length} objects checked against the Kubernetes schemas`);
}

// 2. Structural schemas: every node typed (or int-or-string), no type in anyOf branches'
// siblings beyond int-or-string, properties and additionalProperties not both.
function structural(schema, path, where) {
  if (schema["x-kubernetes-int-or-string"]) {
    if (schema.type) fail(`${where}: ${path}: int-or-string with a type`);
    return;
  }
  if (!schema.type && !schema["x-kubernetes-preserve-unknown-fields"]) fail(`${where}: ${path}: no type`);
  if (schema.properties && schema.additionalProperties) fail(`${where}: ${path}: properties and additionalProperties`);
  for (const [k, sub] of Object.entries(schema.properties ?? {})) structural(sub, `${path}.${k}`, where);
  if (schema.items) structural(schema.items, `${path}[]`, where);
  if (typeof schema.additionalProperties === "object") structural(schema.additionalProperties, `${path}.*`, where);
}
if (crds.length !== 3) fail(`expected 3 CRDs in deploy/kubernetes, found ${crds.length}`);
for (const crd of crds) structural(crd.spec.versions[0].schema.openAPIV3Schema, "", crd.metadata.name);

// 3. Custom resources against the CRD schemas. Strict field validation: a field the schema does
// not name is an error, as `kubectl apply` (validate=strict) reports it.
function strict(schema) {
  const s = structuredClone(schema);
  (function walk(n) {
    if (n.properties && n.additionalProperties === undefined && !n["x-kubernetes-preserve-unknown-fields"]) {
      n.additionalProperties = false;
    }
    Object.values(n.properties ?? {}).forEach(walk);
    if (n.items) walk(n.items);
    if (typeof n.additionalProperties === "object") walk(n.additionalProperties);
  })(s);
  return s;
}
const ajv = new Ajv({ strict: false, allErrors: false });
ajv.addFormat("int32", { type: "number", validate: (n) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 });
ajv.addFormat("int64", { type: "number", validate: (n) => Number.isSafeInteger(n) });
const validators = Object.fromEntries(
  crds.map((c) => [c.spec.names.kind, ajv.compile(strict(c.spec.versions[0].schema.openAPIV3Schema))]),
);
function admits(obj) {
  const v = validators[obj.kind];
  if (!v) return `no CRD for kind ${obj.kind}`;
  return v(obj) ? "" : `${v.errors[0].instancePath} ${v.errors[0].message}`;
}

for (const name of readdirSync(join(source, "deploy/kubernetes/examples"))) {
  for (const obj of documents(readFileSync(join(source, "deploy/kubernetes/examples", name), "utf8"), name)) {
    const why = admits(obj);
    if (why) fail(`example ${name}: ${obj.kind}/${obj.metadata.name}: ${why}`);
  }
}
let samples = 0;
const samplesDir = join(source, "tests/kubernetes/samples");
for (const name of readdirSync(samplesDir)) {
  const text = readFileSync(join(samplesDir, name), "utf8");
  const expect = /^# schema: (accept|reject)$/m.exec(text)?.[1];
  if (!expect) {
    fail(`sample ${name}: no "# schema: accept|reject" line`);
    continue;
  }
  for (const obj of documents(text, name)) {
    const why = admits(obj);
    if (expect === "accept" && why) fail(`sample ${name}: the schema refuses it: ${why}`);
    if (expect === "reject" && !why) fail(`sample ${name}: the schema admits it`);
  }
  ++samples;
}
console.log(`CRDs: ${crds.length} structural; ${samples} samples and the examples judged as they say`);

if (failures.length) {
  for (const f of failures) console.error("FAIL " + f);
  process.exit(1);
}
console.log("kubernetes manifests: all valid");
