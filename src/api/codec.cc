#include "api/codec.h"

#include <regex>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "api/defaults.h"
#include "api/spec_fields.h"
#include "api/validation.h"
#include "common/files.h"
#include "common/printable.h"

namespace hpc::api {
namespace {

// The first line of the document being decoded: marks in a document's nodes count from its
// own start (see SplitDocuments), error messages from the file's.
thread_local int g_document_first_line = 0;

// Walks one YAML mapping, remembering which keys were read so that anything left over is
// reported as an unknown field. The first error wins; later reads become no-ops.
class FieldReader {
 public:
  FieldReader(const YAML::Node& node, std::string path, Status* error)
      : node_(node), path_(std::move(path)), error_(error) {
    if (!node_.IsMap() && !node_.IsNull()) Fail(path_, "must be a mapping");
    // yaml-cpp keeps a repeated key and lookups see only the first: the second would be
    // silently ignored.
    std::set<std::string> keys;
    for (const auto& kv : node_.IsMap() ? node_ : YAML::Node()) {
      if (!keys.insert(kv.first.Scalar()).second) {
        Fail(Path(kv.first.Scalar()), "is given twice", kv.first);
        break;
      }
    }
  }

  bool Has(const std::string& key) {
    seen_.insert(key);
    return node_.IsMap() && node_[key] && !node_[key].IsNull();
  }
  YAML::Node Get(const std::string& key) { return Has(key) ? node_[key] : YAML::Node(); }
  std::string Path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  // Strings, numbers and booleans are told apart as Kubernetes' schema does: `name: 123` or
  // `cpus: "4"` is refused, not coerced, so that what is applied is what was meant.
  void String(const std::string& key, std::string* out) {
    if (!Has(key)) return;
    YAML::Node n = node_[key];
    if (!IsString(n)) return Fail(Path(key), fmt::format("must be a string (got {})", Describe(n)), n);
    *out = n.Scalar();
  }
  template <typename Int>
  void Integer(const std::string& key, Int* out) {
    if (!Has(key)) return;
    YAML::Node n = node_[key];
    Int v{};
    if (!n.IsScalar() || Quoted(n) || !YAML::convert<Int>::decode(n, v)) {
      bool out_of_range = n.IsScalar() && LooksTyped(n);
      return Fail(Path(key),
                  out_of_range ? fmt::format("must be an integer in range (got {})", n.Scalar())
                               : fmt::format("must be an integer (got {})", DescribeValue(n)),
                  n);
    }
    *out = v;
  }
  void OptionalInt(const std::string& key, std::optional<int>* out) {
    if (!Has(key)) return;
    int v = 0;
    Integer(key, &v);
    *out = v;
  }
  void Bool(const std::string& key, bool* out) {
    if (!Has(key)) return;
    YAML::Node n = node_[key];
    bool v = false;
    static const std::regex boolean("^(true|false|True|False|TRUE|FALSE)$");
    if (!n.IsScalar() || Quoted(n) || !std::regex_match(n.Scalar(), boolean) || !YAML::convert<bool>::decode(n, v)) {
      return Fail(Path(key), fmt::format("must be true or false (got {})", DescribeValue(n)), n);
    }
    *out = v;
  }
  void Duration(const std::string& key, int64_t* seconds) {
    if (!Has(key)) return;
    YAML::Node n = node_[key];
    if (!n.IsScalar()) return Fail(Path(key), "must be a duration like 90s, 5m or 1h", n);
    auto r = ParseDurationSeconds(n.Scalar());
    if (!r.ok()) return Fail(Path(key), r.status().message(), n);
    *seconds = *r;
  }
  // Kubernetes' IntOrString for counts: `2` or `"20%"`; kept as written, checked by validation.
  void IntOrPercent(const std::string& key, std::string* out) {
    if (!Has(key)) return;
    YAML::Node n = node_[key];
    static const std::regex count_or_share("^[0-9]{1,9}%?$");
    if (!n.IsScalar() || !std::regex_match(n.Scalar(), count_or_share)) {
      return Fail(Path(key), fmt::format("must be a count like 2 or a share like \"20%\" (got {})", DescribeValue(n)),
                  n);
    }
    *out = n.Scalar();
  }
  void StringList(const std::string& key, std::vector<std::string>* out) {
    if (!Has(key)) return;
    YAML::Node n = node_[key];
    if (!n.IsSequence()) return Fail(Path(key), "must be a list of strings", n);
    for (size_t i = 0; i < n.size(); ++i) {
      if (!IsString(n[i])) {
        return Fail(fmt::format("{}[{}]", Path(key), i), fmt::format("must be a string (got {})", Describe(n[i])),
                    n[i]);
      }
      out->push_back(n[i].Scalar());
    }
  }
  void StringMap(const std::string& key, std::map<std::string, std::string>* out) {
    if (!Has(key)) return;
    YAML::Node n = node_[key];
    if (!n.IsMap()) return Fail(Path(key), "must be a mapping of strings", n);
    for (const auto& kv : n) {
      if (!IsString(kv.second)) {
        return Fail(Path(key) + "." + kv.first.Scalar(), fmt::format("must be a string (got {})", Describe(kv.second)),
                    kv.second);
      }
      (*out)[kv.first.Scalar()] = kv.second.Scalar();
    }
  }
  void IntegerMap(const std::string& key, std::map<std::string, int64_t>* out) {
    if (!Has(key)) return;
    YAML::Node n = node_[key];
    if (!n.IsMap()) return Fail(Path(key), "must be a mapping of integers", n);
    for (const auto& kv : n) {
      int64_t v = 0;
      if (!kv.second.IsScalar() || Quoted(kv.second) || !YAML::convert<int64_t>::decode(kv.second, v)) {
        return Fail(Path(key) + "." + kv.first.Scalar(),
                    fmt::format("must be an integer (got {})", DescribeValue(kv.second)), kv.second);
      }
      (*out)[kv.first.Scalar()] = v;
    }
  }
  // A nested mapping, walked by `fn(FieldReader&)`; its unknown keys are reported after it.
  template <typename Fn>
  void Object(const std::string& key, Fn fn) {
    FieldReader child(Get(key), Path(key), error_);
    fn(child);
    child.Finish();
  }
  // A list of mappings, each read into a new T by `fn(FieldReader&, T*)`.
  template <typename T, typename Fn>
  void ObjectList(const std::string& key, std::vector<T>* out, Fn fn) {
    if (!Has(key)) return;
    YAML::Node list = node_[key];
    if (!list.IsSequence()) return Fail(Path(key), "must be a list", list);
    for (size_t i = 0; i < list.size(); ++i) {
      T item{};
      FieldReader child(list[i], fmt::format("{}[{}]", Path(key), i), error_);
      fn(child, &item);
      child.Finish();
      out->push_back(std::move(item));
    }
  }
  // Reports the first key that no reader asked for.
  void Finish() {
    if (!node_.IsMap()) return;
    for (const auto& kv : node_) {
      std::string k = kv.first.Scalar();
      if (!seen_.count(k)) return Fail(Path(k), "unknown field", kv.first);
    }
  }

  void Fail(const std::string& path, const std::string& why, const YAML::Node& at = YAML::Node()) {
    if (!error_->ok()) return;
    std::string where;
    if (at.IsDefined() && at.Mark().line >= 0) {
      where = fmt::format(" (line {})", g_document_first_line + at.Mark().line + 1);
    }
    *error_ = Status::Errorf("{}: {}{}", Printable(path), Printable(why), where);
  }
  bool ok() const { return error_->ok(); }

 private:
  static bool Quoted(const YAML::Node& n) { return n.Tag() == "!"; }
  // A plain scalar that YAML's core schema reads as a number, boolean or null is not a string.
  static bool LooksTyped(const YAML::Node& n) {
    static const std::regex typed(
        R"(^(true|false|True|False|TRUE|FALSE|null|Null|NULL|~|[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|)"
        R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))$)");
    return !Quoted(n) && std::regex_match(n.Scalar(), typed);
  }
  static bool IsString(const YAML::Node& n) { return n.IsScalar() && !LooksTyped(n); }
  // What a number or boolean field got, without the hint about quoting.
  static std::string DescribeValue(const YAML::Node& n) {
    if (n.IsScalar()) return "\"" + n.Scalar() + "\"";
    return Describe(n);
  }
  static std::string Describe(const YAML::Node& n) {
    if (n.IsScalar() && LooksTyped(n)) return "the plain value " + n.Scalar() + "; quote it if a string is meant";
    if (n.IsScalar()) return "\"" + n.Scalar() + "\"";
    if (n.IsSequence()) return "a list";
    if (n.IsMap()) return "a mapping";
    return "nothing";
  }

  YAML::Node node_;
  std::string path_;
  Status* error_;
  std::set<std::string> seen_;
};

void DecodeMeta(FieldReader& top, ObjectMeta* meta, Status* err) {
  FieldReader m(top.Get("metadata"), "metadata", err);
  m.String("name", &meta->name);
  m.String("namespace", &meta->namespace_);
  m.StringMap("labels", &meta->labels);
  m.Integer("generation", &meta->generation);
  m.Finish();
}

void DecodeClusterSpec(const YAML::Node& node, SlurmClusterSpec* s, Status* err) {
  FieldReader r(node, "spec", err);
  WalkClusterSpec(r, s);
  r.Finish();
}

void DecodeNodeSetSpec(const YAML::Node& node, NodeSetSpec* s, Status* err) {
  FieldReader r(node, "spec", err);
  WalkNodeSetSpec(r, s);
  r.Finish();
}

std::string Subject(const std::string& kind, const std::string& name) {
  std::string k = kind == kKindNodeSet ? "nodeset" : kind == kKindSlurmCluster ? "cluster" : kind;
  return fmt::format("{} \"{}\"", Printable(k), name.empty() ? "<unnamed>" : Printable(name));
}

}  // namespace

Result<int64_t> ParseDurationSeconds(const std::string& text) {
  static const std::regex re(R"(^\s*(\d{1,9})\s*(s|m|h|d)?\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, re)) {
    return Status::Errorf("must be a duration like 90s, 5m or 1h (got \"{}\")", text);
  }
  int64_t v = std::stoll(m[1]);
  std::string unit = m[2];
  if (unit == "m")
    v *= 60;
  else if (unit == "h")
    v *= 3600;
  else if (unit == "d")
    v *= 86400;
  return v;
}

std::string FormatDuration(int64_t s) {
  if (s > 0 && s % 3600 == 0) return fmt::format("{}h", s / 3600);
  if (s > 0 && s % 60 == 0) return fmt::format("{}m", s / 60);
  return fmt::format("{}s", s);
}

namespace {

struct DocumentText {
  int first_line = 0;  // 0-based line of the file where it starts
  std::string text;
};

// The documents of a multi-document YAML stream, split at its "---" and "..." marker lines
// (which the YAML spec forbids anywhere else at the start of a line). yaml-cpp's own LoadAll
// loops forever on a document that starts with ',' (found by fuzzing: `up -f` of a one-byte
// file hung), so each document is loaded on its own with YAML::Load.
std::vector<DocumentText> SplitDocuments(const std::string& text) {
  std::vector<DocumentText> docs(1);
  size_t pos = 0;
  int line = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    std::string l = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    auto marker = [&](const char* m) {
      return l.rfind(m, 0) == 0 && (l.size() == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r');
    };
    if (end == std::string::npos && l.empty()) break;  // after the final newline
    if (marker("---")) {
      docs.push_back({line, "   " + l.substr(3) + "\n"});  // what follows the marker on its line is content
    } else if (marker("...")) {
      docs.push_back({line + 1, ""});
    } else {
      docs.back().text += l + "\n";
    }
    if (end == std::string::npos) break;
    pos = end + 1;
    ++line;
  }
  return docs;
}

// YAML's character set: printable Unicode in UTF-8, tab, LF and CR. The position of the first
// byte outside it, if any (yaml-cpp itself lets NULs and invalid UTF-8 through into strings).
std::optional<std::pair<int, int>> FirstBadByte(const std::string& text, unsigned char* bad) {
  int line = 1, column = 1;
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len != 0 && i + len <= text.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
    if (ok && len == 2) ok = c >= 0xC2;  // no overlong forms
    if (ok && len == 1) ok = c >= 0x20 ? c != 0x7F : (c == '\t' || c == '\n' || c == '\r');
    if (!ok) {
      *bad = c;
      return std::make_pair(line, column);
    }
    if (c == '\n') {
      ++line;
      column = 0;
    }
    ++column;
    i += len;
  }
  return std::nullopt;
}

// Whether a document holds anything but blanks and comments.
bool HasContent(const std::string& doc) {
  std::istringstream in(doc);
  std::string l;
  while (std::getline(in, l)) {
    size_t first = l.find_first_not_of(" \t\r");
    if (first != std::string::npos && l[first] != '#') return true;
  }
  return false;
}

}  // namespace

Result<Manifest> DecodeManifest(const std::string& text, const std::string& source) {
  if (text.size() > kMaxManifestBytes) {
    return Status::Errorf("{}: is {} bytes; the limit is {} bytes", source, text.size(), kMaxManifestBytes);
  }
  unsigned char bad = 0;
  if (auto at = FirstBadByte(text, &bad)) {
    return Status::Errorf("{}: line {}, column {}: byte 0x{:02X} is not allowed (YAML is printable UTF-8 text)", source,
                          at->first, at->second, bad);
  }
  std::vector<std::pair<int, YAML::Node>> docs;
  for (const auto& d : SplitDocuments(text)) {
    if (!HasContent(d.text)) continue;
    YAML::Node node;
    try {
      node = YAML::Load(d.text);
    } catch (const YAML::Exception& e) {
      return Status::Errorf("{}: line {}, column {}: malformed YAML/JSON: {}", source, d.first_line + e.mark.line + 1,
                            e.mark.column + 1, e.msg);
    }
    // yaml-cpp reads some malformed documents (one starting with ',') as nothing at all.
    static const std::regex explicit_null(R"(^\s*(null|Null|NULL|~)\s*$)");
    if (node.IsNull() && !std::regex_match(d.text, explicit_null)) {
      return Status::Errorf("{}: line {}: malformed YAML/JSON: the document cannot be read", source, d.first_line + 1);
    }
    docs.emplace_back(d.first_line, node);
  }
  Manifest out;
  int index = 0;
  struct ResetFirstLine {
    ~ResetFirstLine() { g_document_first_line = 0; }
  } reset;
  for (const auto& [first_line, doc] : docs) {
    ++index;
    if (doc.IsNull()) continue;
    g_document_first_line = first_line;
    Status err;
    FieldReader top(doc, "", &err);
    if (!err.ok()) return err.WithContext(fmt::format("{}: document {}", source, index));
    std::string api_version, kind;
    top.String("apiVersion", &api_version);
    top.String("kind", &kind);
    ObjectMeta meta;
    DecodeMeta(top, &meta, &err);
    std::string subject = Subject(kind, meta.name);
    if (!err.ok()) return err.WithContext(fmt::format("{}: {}", source, subject));
    if (api_version != kApiVersion) {
      return Status::Errorf("{}: {}: apiVersion: must be {} (got \"{}\")", source, subject, kApiVersion,
                            Printable(api_version));
    }
    top.Has("status");  // accepted and ignored, as Kubernetes does on apply
    if (kind == kKindSlurmCluster) {
      SlurmCluster c;
      c.metadata = meta;
      DecodeClusterSpec(top.Get("spec"), &c.spec, &err);
      top.Finish();
      if (!err.ok()) return err.WithContext(fmt::format("{}: {}", source, subject));
      ApplyDefaults(&c);
      RETURN_IF_ERROR(Validate(c).WithContext(source));
      out.clusters.push_back(std::move(c));
    } else if (kind == kKindNodeSet) {
      NodeSet n;
      n.metadata = meta;
      DecodeNodeSetSpec(top.Get("spec"), &n.spec, &err);
      top.Finish();
      if (!err.ok()) return err.WithContext(fmt::format("{}: {}", source, subject));
      RETURN_IF_ERROR(ValidateShape(n).WithContext(source));
      out.nodesets.push_back(std::move(n));
    } else {
      return Status::Errorf("{}: document {}: kind: must be {} or {} (got \"{}\")", source, index, kKindSlurmCluster,
                            kKindNodeSet, Printable(kind));
    }
  }
  if (out.clusters.empty() && out.nodesets.empty()) {
    return Status::Errorf("{}: no resources found", source);
  }
  return out;
}

namespace {

// One resource of `kind` (Workspace, Environment) from one document: metadata, then the spec
// walked by `walk_spec(FieldReader&, T*)`, unknown fields refused with their path. `status`
// (the operator's to write) is allowed and ignored when `status_allowed`.
template <typename T, typename WalkSpec>
Result<T> DecodeOne(const std::string& text, const std::string& source, const char* expected_kind,
                    const std::string& subject_kind, bool status_allowed, WalkSpec walk_spec) {
  if (text.size() > kMaxManifestBytes) return Status::Errorf("{}: larger than {} bytes", source, kMaxManifestBytes);
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::Errorf("{}: not YAML or JSON: {}", source, e.msg);
  }
  Status err;
  FieldReader top(doc, "", &err);
  if (!err.ok()) return err.WithContext(source);
  std::string api_version, kind;
  top.String("apiVersion", &api_version);
  top.String("kind", &kind);
  T out;
  DecodeMeta(top, &out.metadata, &err);
  const std::string subject = Subject(subject_kind, out.metadata.name);
  if (!err.ok()) return err.WithContext(fmt::format("{}: {}", source, subject));
  if (api_version != kApiVersion || kind != expected_kind) {
    return Status::Errorf("{}: {}: must be apiVersion {}, kind {} (got {}, {})", source, subject, kApiVersion,
                          expected_kind, Printable(api_version), Printable(kind));
  }
  if (status_allowed) top.Has("status");
  FieldReader spec(top.Get("spec"), "spec", &err);
  walk_spec(spec, &out.spec);
  spec.Finish();
  top.Finish();
  if (!err.ok()) return err.WithContext(fmt::format("{}: {}", source, subject));
  return out;
}

}  // namespace

Result<Workspace> DecodeWorkspace(const std::string& text, const std::string& source) {
  return DecodeOne<Workspace>(text, source, kKindWorkspace, "workspace", /*status_allowed=*/true,
                              [](FieldReader& r, WorkspaceSpec* s) { WalkWorkspaceSpec(r, s); });
}

Result<Environment> DecodeEnvironment(const std::string& text, const std::string& source) {
  return DecodeOne<Environment>(text, source, kKindEnvironment, "environment", /*status_allowed=*/false,
                                [](FieldReader& r, EnvironmentSpec* s) { WalkEnvironmentSpec(r, s); });
}

Result<Manifest> DecodeManifestFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, files::ReadAtMost(path, kMaxManifestBytes));
  return DecodeManifest(text, path);
}

static nlohmann::json ConditionsJson(const std::vector<Condition>& cs) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& c : cs) {
    arr.push_back({{"type", c.type},
                   {"status", c.status},
                   {"reason", c.reason},
                   {"message", c.message},
                   {"lastTransitionTime", c.last_transition_time}});
  }
  return arr;
}

nlohmann::json EventsJson(const std::vector<Event>& events) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& e : events) {
    arr.push_back({{"time", e.time}, {"type", e.type}, {"reason", e.reason}, {"message", e.message}});
  }
  return arr;
}

static nlohmann::json MetaJson(const ObjectMeta& m) {
  nlohmann::json j = {{"name", m.name}, {"generation", m.generation}};
  if (!m.namespace_.empty()) j["namespace"] = m.namespace_;
  if (!m.labels.empty()) j["labels"] = m.labels;
  return j;
}

static nlohmann::json DatasetsJson(const std::vector<Dataset>& ds) {
  nlohmann::json datasets = nlohmann::json::array();
  for (const auto& d : ds) {
    nlohmann::json dj = {{"name", d.name}, {"mountPath", d.mount_path}};
    if (!d.host_path.empty()) dj["hostPath"] = d.host_path;
    datasets.push_back(dj);
  }
  return datasets;
}

nlohmann::json ToJson(const SlurmCluster& c) {
  const auto& s = c.spec;
  nlohmann::json datasets = DatasetsJson(s.datasets);
  nlohmann::json users = nlohmann::json::array();
  for (const auto& u : s.users) {
    nlohmann::json user = {{"name", u.name}, {"uid", u.uid}, {"gid", u.gid}, {"admin", u.admin}};
    if (!u.account.empty()) user["account"] = u.account;
    users.push_back(std::move(user));
  }
  nlohmann::json sched = {{"schedulerParameters", s.scheduler_parameters},
                          {"extraConfig", s.extra_config},
                          {"maxNodeCount", s.max_node_count}};
  if (!s.priority_type.empty()) sched["priorityType"] = s.priority_type;
  return {
      {"apiVersion", kApiVersion},
      {"kind", kKindSlurmCluster},
      {"metadata", MetaJson(c.metadata)},
      {"spec",
       {{"environment", s.environment},
        {"sharedRoot", {{"enabled", s.shared_root}}},
        {"network", {{"subnet", s.subnet}}},
        {"restApi", {{"port", s.rest_port}, {"memoryLimitMiB", s.rest_memory_limit_mib}}},
        {"login", {{"enabled", s.login_enabled}}},
        {"backupController", {{"enabled", s.backup_controller}}},
        {"storage", {{"retainOnDelete", s.retain_volumes_on_delete}}},
        {"nodeSetDefaults", {{"minReplicaCount", s.min_replica_count}}},
        {"scheduling", sched},
        {"datasets", datasets},
        {"users", users},
        {"accounting", {{"enabled", s.accounting.enabled}, {"enforce", s.accounting.enforce}}},
        {"healthChecks",
         {{"enabled", s.health_checks.enabled},
          {"interval", FormatDuration(s.health_checks.interval_seconds)},
          {"timeout", FormatDuration(s.health_checks.timeout_seconds)},
          {"minFreePercent", s.health_checks.min_free_percent},
          {"maxClockSkew", FormatDuration(s.health_checks.max_clock_skew_seconds)},
          {"maxUnhealthy", s.health_checks.max_unhealthy},
          {"replaceAfter", FormatDuration(s.health_checks.replace_after_seconds)},
          {"maxReplacementsPerHour", s.health_checks.max_replacements_per_hour}}},
        {"upgrade",
         {{"drainDeadline", FormatDuration(s.upgrade.drain_deadline_seconds)},
          {"afterDeadline", s.upgrade.after_deadline}}}}},
      {"status", StatusToJson(c.status)},
  };
}

nlohmann::json AffinityJson(const PodPlacementSpec& pod) {
  if (pod.required_node_terms.empty() && pod.preferred_node_terms.empty()) return nullptr;
  auto term_json = [](const NodeSelectorTerm& t) {
    nlohmann::json expressions = nlohmann::json::array();
    for (const auto& e : t.match_expressions) {
      nlohmann::json j = {{"key", e.key}, {"operator", e.op}};
      if (!e.values.empty()) j["values"] = e.values;
      expressions.push_back(j);
    }
    return nlohmann::json{{"matchExpressions", expressions}};
  };
  nlohmann::json node = nlohmann::json::object();
  if (!pod.required_node_terms.empty()) {
    nlohmann::json terms = nlohmann::json::array();
    for (const auto& t : pod.required_node_terms) terms.push_back(term_json(t));
    node["requiredDuringSchedulingIgnoredDuringExecution"] = {{"nodeSelectorTerms", terms}};
  }
  if (!pod.preferred_node_terms.empty()) {
    nlohmann::json preferred = nlohmann::json::array();
    for (const auto& t : pod.preferred_node_terms) {
      preferred.push_back({{"weight", t.weight}, {"preference", term_json(t.preference)}});
    }
    node["preferredDuringSchedulingIgnoredDuringExecution"] = preferred;
  }
  return {{"nodeAffinity", node}};
}

nlohmann::json PodSecurityContextJson(const PodPlacementSpec& pod) {
  if (pod.seccomp_type.empty()) return nullptr;
  nlohmann::json seccomp = {{"type", pod.seccomp_type}};
  if (!pod.seccomp_localhost_profile.empty()) seccomp["localhostProfile"] = pod.seccomp_localhost_profile;
  return {{"seccompProfile", seccomp}};
}

nlohmann::json ToJson(const NodeSet& n) {
  const auto& s = n.spec;
  nlohmann::json spec = {
      {"cluster", s.cluster},
      {"environment", s.environment},
      {"maxReplicas", s.max_replicas},
      {"idleTimeout", FormatDuration(s.idle_timeout_seconds)},
      {"resources",
       {{"cpus", s.resources.cpus},
        {"memoryMiB", s.resources.memory_mib},
        {"gpus", s.resources.gpus},
        {"tmpMiB", s.resources.tmp_mib}}},
      {"partition",
       {{"name", n.PartitionName()},
        {"default", s.partition.is_default},
        {"maxTime", s.partition.max_time},
        {"options", s.partition.options},
        {"state", s.partition.state}}},
      {"features", s.features},
      {"datasets", DatasetsJson(s.datasets)},
      {"scaling", {{"scaleUpPerMinute", s.scale_up_per_minute}, {"scaleDownPerMinute", s.scale_down_per_minute}}},
  };
  if (!s.health_check_scripts.empty()) spec["healthChecks"] = {{"scripts", s.health_check_scripts}};
  if (!s.pod.empty()) {
    nlohmann::json tolerations = nlohmann::json::array();
    for (const auto& t : s.pod.tolerations) {
      nlohmann::json j = {{"key", t.key}, {"operator", t.op}, {"value", t.value}, {"effect", t.effect}};
      if (t.seconds) j["tolerationSeconds"] = *t.seconds;
      tolerations.push_back(j);
    }
    spec["pod"] = {{"nodeSelector", s.pod.node_selector},
                   {"tolerations", tolerations},
                   {"priorityClassName", s.pod.priority_class_name},
                   {"imagePullSecrets", s.pod.image_pull_secrets}};
    if (auto affinity = AffinityJson(s.pod); !affinity.is_null()) spec["pod"]["affinity"] = affinity;
    if (auto sc = PodSecurityContextJson(s.pod); !sc.is_null()) spec["pod"]["securityContext"] = sc;
  }
  if (s.replicas) spec["replicas"] = *s.replicas;
  if (s.min_replicas) spec["minReplicas"] = *s.min_replicas;
  return {
      {"apiVersion", kApiVersion},        {"kind", kKindNodeSet}, {"metadata", MetaJson(n.metadata)}, {"spec", spec},
      {"status", StatusToJson(n.status)},
  };
}

// Whether a multi-line string (a script, a config file) can be written as a `|` block and read
// back unchanged: a block keeps exactly one final newline, takes its indentation from the first
// line, and holds printable text only. Anything else stays a quoted string.
static bool ReadsBackAsLiteralBlock(const std::string& v) {
  if (v.size() < 2 || v.back() != '\n' || v[v.size() - 2] == '\n') return false;
  if (v.front() == ' ' || v.front() == '\n' || v.front() == '\t') return false;
  for (size_t i = 0; i < v.size(); ++i) {
    const unsigned char ch = static_cast<unsigned char>(v[i]);
    if (ch < 0x20 && ch != '\n' && ch != '\t') return false;
    if (ch == 0x7f) return false;
    // Trailing blanks before a line break are kept by a block but easily lost by editors; quote.
    if (ch == '\n' && i > 0 && (v[i - 1] == ' ' || v[i - 1] == '\t')) return false;
  }
  return v.find('\n') != v.size() - 1;
}

static void EmitJson(YAML::Emitter& e, const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object:
      if (j.empty()) e << YAML::Flow;  // `{}` on the key's line
      e << YAML::BeginMap;
      for (auto it = j.begin(); it != j.end(); ++it) {
        e << YAML::Key << it.key() << YAML::Value;
        EmitJson(e, it.value());
      }
      e << YAML::EndMap;
      break;
    case nlohmann::json::value_t::array:
      if (j.empty()) e << YAML::Flow;
      e << YAML::BeginSeq;
      for (const auto& v : j) EmitJson(e, v);
      e << YAML::EndSeq;
      break;
    case nlohmann::json::value_t::string: {
      // A string that would read back as a number, boolean or null is quoted, so that the
      // strict decoder takes it back as the string it is.
      static const std::regex typed(
          R"(^(true|false|True|False|TRUE|FALSE|null|Null|NULL|~|[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|)"
          R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)|)$)");
      const std::string v = j.get<std::string>();
      if (std::regex_match(v, typed))
        e << YAML::DoubleQuoted;
      else if (ReadsBackAsLiteralBlock(v))
        e << YAML::Literal;
      e << v;
      break;
    }
    case nlohmann::json::value_t::null:
      e << YAML::Null;
      break;
    default:
      e << j.dump();
  }
}

std::string JsonToYaml(const nlohmann::json& j) {
  YAML::Emitter e;
  EmitJson(e, j);
  return std::string(e.c_str()) + "\n";
}

namespace {

std::vector<Condition> ConditionsFromJson(const nlohmann::json& arr) {
  std::vector<Condition> out;
  if (!arr.is_array()) return out;
  for (const auto& c : arr) {
    out.push_back({c.value("type", ""), c.value("status", ""), c.value("reason", ""), c.value("message", ""),
                   c.value("lastTransitionTime", "")});
  }
  return out;
}

}  // namespace

nlohmann::json StatusToJson(const SlurmClusterStatus& s) {
  return {{"observedGeneration", s.observed_generation},
          {"conditions", ConditionsJson(s.conditions)},
          {"endpoints", s.endpoints},
          {"componentVersions", s.component_versions},
          {"components", s.components},
          {"leadingController", s.leading_controller}};
}

nlohmann::json StatusToJson(const NodeSetStatus& s) {
  return {{"observedGeneration", s.observed_generation},
          {"desired", s.desired},
          {"replicas", s.replicas},
          {"ready", s.ready},
          {"busy", s.busy},
          {"idle", s.idle},
          {"draining", s.draining},
          {"unhealthy", s.unhealthy},
          {"outdated", s.outdated},
          {"healthDrains", s.health_drains},
          {"replacements", s.replacements},
          {"lastDecision", s.last_decision},
          {"conditions", ConditionsJson(s.conditions)},
          {"events", EventsJson(s.events)}};
}

SlurmClusterStatus ClusterStatusFromJson(const nlohmann::json& j) {
  SlurmClusterStatus s;
  if (!j.is_object()) return s;
  using Map = std::map<std::string, std::string>;
  s.observed_generation = j.value("observedGeneration", int64_t{0});
  s.conditions = ConditionsFromJson(j.value("conditions", nlohmann::json::array()));
  s.endpoints = j.value("endpoints", Map{});
  s.component_versions = j.value("componentVersions", Map{});
  s.components = j.value("components", Map{});
  s.leading_controller = j.value("leadingController", std::string());
  return s;
}

NodeSetStatus NodeSetStatusFromJson(const nlohmann::json& j) {
  NodeSetStatus s;
  if (!j.is_object()) return s;
  s.observed_generation = j.value("observedGeneration", int64_t{0});
  s.desired = j.value("desired", 0);
  s.replicas = j.value("replicas", 0);
  s.ready = j.value("ready", 0);
  s.busy = j.value("busy", 0);
  s.idle = j.value("idle", 0);
  s.draining = j.value("draining", 0);
  s.unhealthy = j.value("unhealthy", 0);
  s.outdated = j.value("outdated", 0);
  s.health_drains = j.value("healthDrains", int64_t{0});
  s.replacements = j.value("replacements", int64_t{0});
  s.last_decision = j.value("lastDecision", "");
  s.conditions = ConditionsFromJson(j.value("conditions", nlohmann::json::array()));
  for (const auto& e : j.value("events", nlohmann::json::array())) {
    s.events.push_back({e.value("time", ""), e.value("type", ""), e.value("reason", ""), e.value("message", "")});
  }
  return s;
}

nlohmann::json ToJson(const Environment& e) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : e.spec.files) files.push_back({{"path", f.path}, {"content", f.content}, {"mode", f.mode}});
  return {{"apiVersion", kApiVersion},
          {"kind", kKindEnvironment},
          {"metadata", MetaJson(e.metadata)},
          {"spec",
           {{"suite", e.spec.suite},
            {"purpose", e.spec.purpose},
            {"packages", e.spec.packages},
            {"files", files},
            {"postInstall", e.spec.post_install}}}};
}

}  // namespace hpc::api
