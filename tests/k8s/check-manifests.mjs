#!/usr/bin/env node
// Offline checks of static pod manifests and of the self-hosted assets (TESTING.md, "Kubernetes manifests";
// docs/self-hosted.md). The kubelet and the API silently drop unknown fields, so each file is checked three
// ways:
//   1. yaml@2 in strict mode with unique keys (no duplicate keys, no YAML warnings);
//   2. kubernetes-models' validate() for the document's kind (types, required fields, enums, quantities):
//      Pod, DaemonSet, Deployment, Secret, ConfigMap, ServiceAccount, ClusterRole, ClusterRoleBinding;
//   3. a walk over @kubernetes/client-node's generated models (attributeTypeMap) that reports every field the
//      API does not know, and every scalar of the wrong type, with its path.
// Usage: node check-manifests.mjs FILE...  (a file may hold several documents separated by ---)
// Exit status 0 when every document of every file passes, 1 otherwise, 2 on usage errors.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { Pod } from "kubernetes-models/v1/Pod";
import { Secret } from "kubernetes-models/v1/Secret";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { DaemonSet } from "kubernetes-models/apps/v1/DaemonSet";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { ClusterRole } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole";
import { ClusterRoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding";
// On Node 20 the package root crashes on import; the generated models alone are plain classes.
import * as models from "@kubernetes/client-node/dist/gen/models/all.js";

const problems = [];

// apiVersion/kind -> the validating class and the client-node model the unknown-field walk starts from.
const KINDS = {
  "v1/Pod": [Pod, "V1Pod"],
  "v1/Secret": [Secret, "V1Secret"],
  "v1/ConfigMap": [ConfigMap, "V1ConfigMap"],
  "v1/ServiceAccount": [ServiceAccount, "V1ServiceAccount"],
  "apps/v1/DaemonSet": [DaemonSet, "V1DaemonSet"],
  "apps/v1/Deployment": [Deployment, "V1Deployment"],
  "rbac.authorization.k8s.io/v1/ClusterRole": [ClusterRole, "V1ClusterRole"],
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": [ClusterRoleBinding, "V1ClusterRoleBinding"],
};

function typeOf(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

function walk(value, type, path, report) {
  const want = (ok, what) => {
    if (!ok) report(`${path}: expected ${what}, got ${typeOf(value)} ${JSON.stringify(value)}`);
  };
  if (type === "any") return;
  if (type === "string" || type === "Date") return want(typeof value === "string", "a string");
  if (type === "number") return want(typeof value === "number" && Number.isFinite(value), "a number");
  if (type === "boolean") return want(typeof value === "boolean", "a boolean");
  if (type === "IntOrString")
    return want(typeof value === "string" || Number.isInteger(value), "an integer or a string");
  let m = /^Array<(.+)>$/.exec(type);
  if (m) {
    if (!Array.isArray(value)) return want(false, "a list");
    value.forEach((v, i) => walk(v, m[1], `${path}[${i}]`, report));
    return;
  }
  m = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (m) {
    if (typeOf(value) !== "object") return want(false, "a mapping");
    for (const [k, v] of Object.entries(value)) walk(v, m[1], `${path}.${k}`, report);
    return;
  }
  const cls = models[type];
  if (!cls || !Array.isArray(cls.attributeTypeMap)) {
    report(`${path}: no model for type ${type} (checker bug or newer API)`);
    return;
  }
  if (typeOf(value) !== "object") return want(false, `a mapping (${type})`);
  for (const [k, v] of Object.entries(value)) {
    const attr = cls.attributeTypeMap.find((a) => a.baseName === k);
    if (!attr) {
      report(`${path}.${k}: unknown field (not in ${type})`);
      continue;
    }
    walk(v, attr.type, `${path}.${k}`, report);
  }
}

function checkDocument(obj, where) {
  const report = (msg) => problems.push(`${where}: ${msg}`);
  if (typeOf(obj) !== "object") {
    report(`document is ${typeOf(obj)}, not a mapping`);
    return;
  }
  const kind = KINDS[`${obj.apiVersion}/${obj.kind}`];
  if (!kind) {
    report(`unexpected apiVersion ${obj.apiVersion}, kind ${obj.kind} (known: ${Object.keys(KINDS).join(", ")})`);
    return;
  }
  const [cls, model] = kind;
  try {
    new cls(obj).validate();
  } catch (e) {
    report(`kubernetes-models: ${e.message ?? e}`);
  }
  walk(obj, model, "$", report);
}

function checkFile(file) {
  let text;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    problems.push(`${file}: ${e.message}`);
    return 0;
  }
  const docs = parseAllDocuments(text, { strict: true, uniqueKeys: true, prettyErrors: true });
  const list = Array.isArray(docs) ? docs : [docs];
  let n = 0;
  list.forEach((doc, i) => {
    const where = list.length > 1 ? `${file}#${i + 1}` : file;
    for (const e of [...doc.errors, ...doc.warnings]) problems.push(`${where}: yaml: ${e.message}`);
    if (doc.errors.length > 0) return;
    checkDocument(doc.toJS(), where);
    n++;
  });
  if (n === 0 && problems.length === 0) problems.push(`${file}: no YAML document`);
  return n;
}

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: check-manifests.mjs FILE...");
  process.exit(2);
}
let documents = 0;
for (const f of files) documents += checkFile(f);
for (const p of problems) console.error(p);
console.log(`check-manifests: ${files.length} files, ${documents} documents, ${problems.length} problems`);
process.exit(problems.length === 0 ? 0 : 1);
