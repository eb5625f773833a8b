// Checks hpcplane's Kubernetes manifests without an API server:
//  1. every object `kubectl kustomize` renders (base and overlays) against the official
//     Kubernetes OpenAPI schemas (kubernetes-models' validators are generated from them);
//  2. every CRD's openAPIV3Schema against Kubernetes' structural-schema rules;
//  3. the examples and samples against the CRD schemas with ajv, as the API server's strict
//     field validation would: each sample says whether the schema admits it ("# schema:");
//  4. with HPCPLANE, what `hpcplane render` prints for each cluster manifest: the official
//     schemas again, plus the API server's own checks the schemas do not carry (DNS names,
//     every mount's volume defined once, every referenced ConfigMap, Secret and claim rendered).
// Every object is also checked for fields its kind does not have (strict field validation).
// Usage: node validate.mjs SOURCE_DIR [HPCPLANE]   (exits 1 after listing every failure)
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv from "ajv";
import { parseAllDocuments } from "yaml";

const source = process.argv[2];
const hpcplane = process.argv[3];
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
  strictFields(obj, join(modelsDir, path + ".d.ts"), "", `${where}: ${obj.kind}/${obj.metadata?.name}`);
}

// kubernetes-models' validators admit fields the schema does not name; the API server's strict
// field validation refuses them. Its type declarations list every field, so walk them.
const modelsDir = join(dirname(fileURLToPath(import.meta.url)), "node_modules");
const declarations = new Map();
function declaration(file) {
  if (declarations.has(file)) return declarations.get(file);
  const text = readFileSync(file, "utf8");
  const imports = new Map();
  for (const m of text.matchAll(/^import \{ (\w+) \} from "([^"]+)";$/gm)) {
    const target = m[2].startsWith(".") ? join(dirname(file), m[2]) : join(modelsDir, m[2]);
    imports.set(m[1], `${target}.d.ts`);
  }
  const body = /^export interface \w+[^{]*\{\n([\s\S]*?)^\}/m.exec(text)?.[1] ?? "";
  const fields = new Map();
  for (const m of body.matchAll(/^ {4}"([^"]+)"\??: (.*)$/gm)) {
    const type = m[2].replace(/;$/, "");
    const element = /^Array<(\w+)>$/.exec(type)?.[1] ?? type;
    fields.set(m[1], { file: imports.get(element), array: type.startsWith("Array<") });
  }
  const decl = { fields };
  declarations.set(file, decl);
  return decl;
}
function strictFields(value, file, path, where) {
  if (!existsSync(file)) return fail(`${where}: no type declaration ${file}`);
  const { fields } = declaration(file);
  for (const [key, v] of Object.entries(value ?? {})) {
    const field = fields.get(key);
    if (!field) {
      fail(`${where}: ${path}${key}: unknown field`);
      continue;
    }
    if (!field.file) continue;  // a scalar, an enum or a map with free keys
    for (const [i, item] of (field.array ? v : [v]).entries()) {
      if (typeof item !== "object" || item === null) continue;  // a quantity or int-or-string alias
      strictFields(item, field.file, `${path}${key}${field.array ? `[${i}]` : ""}.`, where);
    }
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

// 4. `hpcplane render` output.
const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
function label(value, what, where) {
  if (typeof value !== "string" || value.length > 63 || !dnsLabel.test(value)) fail(`${where}: ${what} "${value}" is not a DNS label`);
}
function checkPod(pod, rendered, where) {
  const s = pod.spec;
  label(s.hostname, "hostname", where);
  label(s.subdomain, "subdomain", where);
  if (!rendered.has(`Service/${s.subdomain}`)) fail(`${where}: subdomain ${s.subdomain} has no Service`);
  const volumes = new Map();
  for (const v of s.volumes ?? []) {
    label(v.name, "volume name", where);
    if (volumes.has(v.name)) fail(`${where}: volume ${v.name} defined twice`);
    volumes.set(v.name, v);
    const ref = v.configMap ? `ConfigMap/${v.configMap.name}` : v.secret ? `Secret/${v.secret.secretName}`
      : v.persistentVolumeClaim ? `PersistentVolumeClaim/${v.persistentVolumeClaim.claimName}` : null;
    if (ref && !rendered.has(ref)) fail(`${where}: volume ${v.name} refers to ${ref}, which is not rendered`);
  }
  const containers = [...(s.initContainers ?? []), ...s.containers];
  const names = new Set();
  for (const c of containers) {
    label(c.name, "container name", where);
    if (names.has(c.name)) fail(`${where}: container ${c.name} twice`);
    names.add(c.name);
    const paths = new Set();
    for (const m of c.volumeMounts ?? []) {
      if (!volumes.has(m.name)) fail(`${where}: ${c.name} mounts ${m.name}, which is not a volume of the pod`);
      if (paths.has(m.mountPath)) fail(`${where}: ${c.name} mounts ${m.mountPath} twice`);
      paths.add(m.mountPath);
    }
    const gpuRequest = c.resources?.requests?.["nvidia.com/gpu"];
    const gpuLimit = c.resources?.limits?.["nvidia.com/gpu"];
    if (gpuRequest !== undefined && gpuRequest !== gpuLimit) fail(`${where}: ${c.name}: GPU requests must equal limits`);
    if (c.restartPolicy && c.restartPolicy !== "Always") fail(`${where}: ${c.name}: sidecar restartPolicy ${c.restartPolicy}`);
  }
  for (const [name] of volumes) {
    if (!containers.some((c) => (c.volumeMounts ?? []).some((m) => m.name === name))) fail(`${where}: volume ${name} is not mounted`);
  }
}
if (hpcplane) {
  const inputs = ["deploy/kubernetes/examples/cluster.yaml", "examples/cluster.yaml",
    "tests/kubernetes/samples/valid-full-cluster.yaml", "tests/kubernetes/render/gpu-tier.yaml"];
  for (const input of inputs) {
    const out = execFileSync(hpcplane, ["render", "-f", join(source, input)], { encoding: "utf8" });
    const again = execFileSync(hpcplane, ["render", "-f", join(source, input)], { encoding: "utf8" });
    if (out !== again) fail(`render ${input}: two runs differ`);
    const objs = documents(out, `render ${input}`);
    const rendered = new Set(objs.map((o) => `${o.kind}/${o.metadata.name}`));
    if (rendered.size !== objs.length) fail(`render ${input}: an object is rendered twice`);
    for (const obj of objs) {
      const where = `render ${input}: ${obj.kind}/${obj.metadata.name}`;
      await validateOfficial(obj, `render ${input}`);
      if (!dnsSubdomain.test(obj.metadata.name) || obj.metadata.name.length > 253) fail(`${where}: name is not a DNS subdomain`);
      if (obj.metadata.labels?.["app.kubernetes.io/managed-by"] !== "hpcplane") fail(`${where}: not labelled managed-by hpcplane`);
      if (obj.kind === "Secret" && obj.data) fail(`${where}: render printed secret data`);
      if (obj.kind === "Pod") checkPod(obj, rendered, where);
    }
    if (!objs.some((o) => o.kind === "Pod")) fail(`render ${input}: no pods`);
    // The checks themselves can fail: each broken copy of a rendered pod must be refused.
    const pod = objs.find((o) => o.kind === "Pod");
    const broken = {
      "a misspelt field": (p) => { p.spec.containers[0].volumeMount = []; },
      "a mount of no volume": (p) => { p.spec.containers[0].volumeMounts.push({ name: "nothing", mountPath: "/x" }); },
      "a ConfigMap not rendered": (p) => { p.spec.volumes.push({ name: "ghost", configMap: { name: "ghost" } }); },
      "a bad host name": (p) => { p.spec.hostname = "Not_A_Label"; },
      "a string for a port": (p) => { p.spec.containers[0].ports = [{ containerPort: "x" }]; },
    };
    for (const [what, breakIt] of Object.entries(broken)) {
      const before = failures.length;
      const copy = structuredClone(pod);
      breakIt(copy);
      await validateOfficial(copy, "self-check");
      checkPod(copy, rendered, "self-check");
      const caught = failures.length > before;
      failures.length = before;
      if (!caught) fail(`render ${input}: a pod with ${what} passes the checks`);
    }
    console.log(`render ${input}: ${objs.length} objects checked`);
  }
}

if (failures.length) {
  for (const f of failures) console.error("FAIL " + f);
  process.exit(1);
}
console.log("kubernetes manifests: all valid");
