// The CRDs come from the decoder's own field walks, so what Kubernetes admits and what
// `hpcplane up -f` accepts agree; these tests hold them to it.
#include "api/crd.h"

#include <gtest/gtest.h>

#include "api/codec.h"
#include "common/files.h"
#include "operator/workspace.h"

namespace hpc::api {
namespace {

using nlohmann::json;

const std::string kSource = HPCPLANE_SOURCE_DIR;

// Whether `value` has the shape `schema` describes (types, known keys, items), as a structural
// schema with strict field validation checks it. Returns the first mismatch's path, or "".
std::string Mismatch(const json& schema, const json& value, const std::string& path) {
  if (schema.value("x-kubernetes-int-or-string", false)) {
    return value.is_number_integer() || value.is_string() ? "" : path + ": not an integer or string";
  }
  const std::string type = schema.value("type", "");
  if (type == "string") return value.is_string() ? "" : path + ": not a string";
  if (type == "integer") return value.is_number_integer() ? "" : path + ": not an integer";
  if (type == "boolean") return value.is_boolean() ? "" : path + ": not a boolean";
  if (type == "array") {
    if (!value.is_array()) return path + ": not an array";
    for (size_t i = 0; i < value.size(); ++i) {
      if (auto m = Mismatch(schema["items"], value[i], path + "[" + std::to_string(i) + "]"); !m.empty()) return m;
    }
    return "";
  }
  if (type == "object") {
    if (!value.is_object()) return path + ": not an object";
    for (const auto& [k, v] : value.items()) {
      const json* sub = schema.contains("properties") && schema["properties"].contains(k) ? &schema["properties"][k]
                        : schema.contains("additionalProperties") ? &schema["additionalProperties"]
                                                                  : nullptr;
      if (!sub) return path + "." + k + ": unknown field";
      if (auto m = Mismatch(*sub, v, path + "." + k); !m.empty()) return m;
    }
    return "";
  }
  return path + ": schema without a type";
}

// Every property the schema names, as dotted paths (list items as "[]").
void Paths(const json& schema, const std::string& prefix, std::set<std::string>* out) {
  if (schema.contains("properties")) {
    for (const auto& [k, sub] : schema["properties"].items()) {
      out->insert(prefix + k);
      Paths(sub, prefix + k + ".", out);
    }
  }
  if (schema.contains("items")) Paths(schema["items"], prefix + "[].", out);
}
void Paths(const json& value, const std::string& prefix, std::set<std::string>* out, bool) {
  if (value.is_object()) {
    for (const auto& [k, v] : value.items()) {
      out->insert(prefix + k);
      Paths(v, prefix + k + ".", out, true);
    }
  } else if (value.is_array() && !value.empty() && value[0].is_object()) {
    Paths(value[0], prefix + "[].", out, true);
  }
}

TEST(Crds, TheCommittedCopyIsUpToDate) {
  auto committed = files::Read(kSource + "/deploy/kubernetes/base/crds.yaml");
  ASSERT_TRUE(committed.ok()) << committed.status().message();
  EXPECT_EQ(*committed, CustomResourceDefinitionsYaml())
      << "regenerate it: build/hpcplane crds > deploy/kubernetes/base/crds.yaml";
}

TEST(Crds, EveryKindHasStatusAndNodeSetsScale) {
  json crds = CustomResourceDefinitions();
  ASSERT_EQ(crds.size(), 3u);
  for (const auto& crd : crds) {
    const json& v = crd["spec"]["versions"][0];
    EXPECT_TRUE(v["subresources"].contains("status")) << crd["metadata"]["name"];
    EXPECT_EQ(v["schema"]["openAPIV3Schema"]["properties"]["spec"]["type"], "object");
  }
  const json& scale = crds[1]["spec"]["versions"][0]["subresources"]["scale"];
  EXPECT_EQ(crds[1]["spec"]["names"]["kind"], "NodeSet");
  EXPECT_EQ(scale["specReplicasPath"], ".spec.replicas");
  EXPECT_EQ(scale["statusReplicasPath"], ".status.replicas");
}

// What hpcplane writes back (`get -o json`, the state files) fits the schema it publishes: a
// cluster and a nodeset with every field set round-trip through the schema.
TEST(Crds, EncodedSpecsFitTheSchema) {
  auto full = files::Read(kSource + "/tests/kubernetes/samples/valid-full-cluster.yaml");
  auto nodeset = files::Read(kSource + "/tests/kubernetes/samples/valid-nodeset.yaml");
  ASSERT_TRUE(full.ok() && nodeset.ok());
  auto m = DecodeManifest(*full + "---\n" + *nodeset, "samples");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(Mismatch(SpecSchema(kKindSlurmCluster), ToJson(m->clusters[0])["spec"], "spec"), "");
  EXPECT_EQ(Mismatch(SpecSchema(kKindNodeSet), ToJson(m->nodesets[0])["spec"], "spec"), "");
  // And the schema names nothing the encoder does not write (no dead fields).
  std::set<std::string> schema_paths, written;
  Paths(SpecSchema(kKindNodeSet), "", &schema_paths);
  Paths(ToJson(m->nodesets[0])["spec"], "", &written, true);
  // Written only when set: a pinned count, and a dataset's host path (the sample autoscales and
  // uses the cluster's default place for datasets).
  const std::set<std::string> optional = {"replicas", "datasets.[].hostPath"};
  for (const auto& p : schema_paths) {
    if (optional.count(p)) continue;
    EXPECT_TRUE(written.count(p)) << "schema field never written: " << p;
  }
}

// The workspace record the agent writes (operator/workspace.cc) and the Workspace schema name
// the same fields with the same types.
TEST(Crds, WorkspaceRecordsAndTheSchemaAgree) {
  Workspace w;
  w.metadata.name = "ws-1";
  w.spec.cluster = "research";
  w.spec.user = {"alice", 2001, 2001, false, ""};
  w.spec.project = "astro";
  w.spec.tier = "small";
  w.spec.datasets = {"sky"};
  w.spec.dataset_gids = {{"sky", 3001}};
  const json spec = op::WorkspaceSpecJson(w)["spec"];
  EXPECT_EQ(Mismatch(SpecSchema(kKindWorkspace), spec, "spec"), "");
  std::set<std::string> schema_paths, written;
  Paths(SpecSchema(kKindWorkspace), "", &schema_paths);
  Paths(spec, "", &written, true);
  written.erase("datasetGroups.sky");
  EXPECT_EQ(schema_paths, written);
}

// Each sample says what the CRD schema does with it (tests/kubernetes/validate.mjs checks that
// with the schema itself) and what hpcplane's decoder and validation say: a document the schema
// refuses never reaches hpcplane on Kubernetes, and hpcplane refuses it too, for the same field;
// one the schema admits but validation refuses becomes the condition Invalid.
TEST(Crds, SamplesAreJudgedAsTheySay) {
  const std::string dir = kSource + "/tests/kubernetes/samples";
  int count = 0;
  for (const auto& name : files::ListDir(dir)) {
    auto text = files::Read(dir + "/" + name);
    ASSERT_TRUE(text.ok());
    const std::string marker = "# hpcplane: ";
    auto at = text->find(marker);
    ASSERT_NE(at, std::string::npos) << name << " says nothing of hpcplane";
    const std::string expected = text->substr(at + marker.size(), text->find('\n', at) - at - marker.size());
    const bool schema_rejects = text->find("# schema: reject") != std::string::npos;
    auto decoded = DecodeManifest(*text, name);
    if (expected == "accept") {
      EXPECT_TRUE(decoded.ok()) << name << ": " << decoded.status().message();
      EXPECT_FALSE(schema_rejects) << name << ": hpcplane accepts what the schema refuses";
    } else {
      ASSERT_FALSE(decoded.ok()) << name;
      EXPECT_NE(decoded.status().message().find(expected), std::string::npos)
          << name << ": " << decoded.status().message();
    }
    ++count;
  }
  EXPECT_GE(count, 10);
}

}  // namespace
}  // namespace hpc::api
