#include "api/crd.h"

#include <stdexcept>

#include "api/codec.h"
#include "api/spec_fields.h"

namespace hpc::api {
namespace {

using nlohmann::json;

// Writes the structural schema (Kubernetes' rules: every field typed, no unknown fields kept)
// of whatever a spec walk visits. The value pointers are ignored.
class SchemaWriter {
 public:
  json schema = {{"type", "object"}, {"properties", json::object()}};

  void String(const std::string& key, std::string*) { Set(key, {{"type", "string"}}); }
  template <typename Int>
  void Integer(const std::string& key, Int*) {
    Set(key, {{"type", "integer"}, {"format", sizeof(Int) == 8 ? "int64" : "int32"}});
  }
  void OptionalInt(const std::string& key, std::optional<int>*) {
    Set(key, {{"type", "integer"}, {"format", "int32"}});
  }
  void Bool(const std::string& key, bool*) { Set(key, {{"type", "boolean"}}); }
  // "90s", "5m", "1h", "1d" or a plain number of seconds.
  void Duration(const std::string& key, int64_t*) { Set(key, IntOrString()); }
  // A count like 2 or a share like "20%", as Kubernetes' IntOrString.
  void IntOrPercent(const std::string& key, std::string*) { Set(key, IntOrString()); }
  void StringList(const std::string& key, std::vector<std::string>*) {
    Set(key, {{"type", "array"}, {"items", {{"type", "string"}}}});
  }
  void StringMap(const std::string& key, std::map<std::string, std::string>*) {
    Set(key, {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}});
  }
  void IntegerMap(const std::string& key, std::map<std::string, int64_t>*) {
    Set(key, {{"type", "object"}, {"additionalProperties", {{"type", "integer"}, {"format", "int64"}}}});
  }
  template <typename Fn>
  void Object(const std::string& key, Fn fn) {
    SchemaWriter child;
    fn(child);
    Set(key, child.schema);
  }
  template <typename T, typename Fn>
  void ObjectList(const std::string& key, std::vector<T>*, Fn fn) {
    SchemaWriter child;
    T unused{};
    fn(child, &unused);
    Set(key, {{"type", "array"}, {"items", child.schema}});
  }

 private:
  static json IntOrString() {
    return {{"x-kubernetes-int-or-string", true},
            {"anyOf", json::array({{{"type", "integer"}}, {{"type", "string"}}})}};
  }
  void Set(const std::string& key, json s) {
    if (schema["properties"].contains(key)) throw std::logic_error("spec field walked twice: " + key);
    schema["properties"][key] = std::move(s);
  }
};

json Column(const std::string& name, const std::string& type, const std::string& path, const std::string& what,
            int priority = 0) {
  json c = {{"name", name}, {"type", type}, {"jsonPath", path}, {"description", what}};
  if (priority > 0) c["priority"] = priority;
  return c;
}

const json kAge = Column("Age", "date", ".metadata.creationTimestamp", "Time since the object was created");
const json kReady =
    Column("Ready", "string", ".status.conditions[?(@.type==\"Ready\")].status", "The Ready condition's status");

json Crd(const std::string& kind, const std::string& plural, const std::vector<std::string>& short_names,
         const json& spec, const json& columns, const json& subresources, const std::string& what) {
  json schema = {{"type", "object"},
                 {"description", what},
                 {"properties",
                  {{"apiVersion", {{"type", "string"}}},
                   {"kind", {{"type", "string"}}},
                   {"metadata", {{"type", "object"}}},
                   {"spec", spec},
                   // Written by the operator only (the status subresource); its shape is the one
                   // `hpcplane get -o yaml` shows.
                   {"status", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}}}}};
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata", {{"name", plural + "." + kGroup}, {"labels", {{"app.kubernetes.io/part-of", "hpcplane"}}}}},
          {"spec",
           {{"group", kGroup},
            {"scope", "Namespaced"},
            {"names",
             {{"kind", kind},
              {"listKind", kind + "List"},
              {"plural", plural},
              {"singular",
               [&] {
                 std::string s = kind;
                 for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
                 return s;
               }()},
              {"shortNames", short_names},
              {"categories", json::array({"hpcplane"})}}},
            {"versions", json::array({{{"name", kVersion},
                                       {"served", true},
                                       {"storage", true},
                                       {"schema", {{"openAPIV3Schema", schema}}},
                                       {"subresources", subresources},
                                       {"additionalPrinterColumns", columns}}})}}}};
}

}  // namespace

json SpecSchema(const std::string& kind) {
  SchemaWriter w;
  if (kind == kKindSlurmCluster) {
    SlurmClusterSpec s;
    WalkClusterSpec(w, &s);
  } else if (kind == kKindNodeSet) {
    NodeSetSpec s;
    WalkNodeSetSpec(w, &s);
  } else if (kind == kKindWorkspace) {
    WorkspaceSpec s;
    WalkWorkspaceSpec(w, &s);
  } else {
    throw std::invalid_argument("no such kind: " + kind);
  }
  return w.schema;
}

json CustomResourceDefinitions() {
  const json status_only = {{"status", json::object()}};
  json cluster =
      Crd(kKindSlurmCluster, "slurmclusters", {"slurm"}, SpecSchema(kKindSlurmCluster),
          json::array({kReady,
                       Column("Controller", "string", ".status.leadingController",
                              "The controller pod whose slurmctld serves (the backup's while it has taken over)", 1),
                       kAge}),
          status_only, "A Slurm cluster: controller, REST API, accounting, login; its workers come from NodeSets.");
  json nodeset =
      Crd(kKindNodeSet, "nodesets", {"nss"}, SpecSchema(kKindNodeSet),
          json::array({kReady, Column("Replicas", "integer", ".status.replicas", "Worker pods that exist"),
                       Column("Desired", "integer", ".status.desired", "Workers the autoscaler wants"),
                       Column("Busy", "integer", ".status.busy", "Workers running jobs"),
                       Column("Idle", "integer", ".status.idle", "Workers idle in Slurm"),
                       Column("Last Decision", "string", ".status.lastDecision", "The autoscaler's last decision", 1),
                       kAge}),
          // The scale subresource lets `kubectl scale` pin a count, and HPA or KEDA drive one.
          {{"status", json::object()},
           {"scale",
            {{"specReplicasPath", ".spec.replicas"},
             {"statusReplicasPath", ".status.replicas"},
             {"labelSelectorPath", ".status.selector"}}}},
          "A set of identical Slurm workers, one pod each, autoscaled from pending jobs (down to zero).");
  json workspace =
      Crd(kKindWorkspace, "workspaces", {"ws"}, SpecSchema(kKindWorkspace),
          json::array({Column("Phase", "string", ".status.phase", "Pending, Ready or Stopping"),
                       Column("User", "string", ".spec.user.name", "Whose workspace it is"),
                       Column("Project", "string", ".spec.project", "The project it belongs to"), kAge}),
          status_only, "A practitioner's login pod with the Slurm CLI, a private autoscaled partition and token.");
  return json::array({cluster, nodeset, workspace});
}

std::string CustomResourceDefinitionsYaml() {
  std::string out = "# Generated by `hpcplane crds`; do not edit (a test checks it is up to date).\n";
  for (const auto& crd : CustomResourceDefinitions()) out += "---\n" + JsonToYaml(crd);
  return out;
}

}  // namespace hpc::api
