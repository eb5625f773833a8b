#include "api/validation.h"

#include <arpa/inet.h>

#include <algorithm>
#include <regex>
#include <set>

#include "api/environments.h"
#include "common/printable.h"

namespace hpc::api {
namespace {

constexpr int kMaxReplicas = 240;

// Control characters a refused value carried are shown escaped (common/printable.h), in the
// subject (the resource's own name) as in the reason: the message stays one line.
Status FieldError(const std::string& subject, const std::string& path, const std::string& why) {
  return Status::Errorf("{}: {}: {}", Printable(subject), path, Printable(why));
}

// Values that end up inside slurm.conf must not be able to add lines or options of their own.
bool IsSafeConfigValue(const std::string& v) {
  static const std::regex re(R"(^[A-Za-z0-9_.,:=/@%+*-]+$)");
  return std::regex_match(v, re);
}

}  // namespace

std::string DefaultWorkspaceName(const std::string& slurm_user, const std::string& project) {
  std::string n = slurm_user + "-" + project;
  std::replace(n.begin(), n.end(), '_', '-');
  return n;
}

bool IsReservedUserName(const std::string& name) {
  static const std::set<std::string> reserved = {"root",
                                                 "daemon",
                                                 "bin",
                                                 "sys",
                                                 "sync",
                                                 "games",
                                                 "man",
                                                 "lp",
                                                 "mail",
                                                 "news",
                                                 "uucp",
                                                 "proxy",
                                                 "www-data",
                                                 "backup",
                                                 "list",
                                                 "irc",
                                                 "gnats",
                                                 "nobody",
                                                 "nogroup",
                                                 "systemd-network",
                                                 "systemd-resolve",
                                                 "systemd-timesync",
                                                 "messagebus",
                                                 "sshd",
                                                 "_apt",
                                                 "slurm",
                                                 "munge",
                                                 "mysql",
                                                 "postgres",
                                                 "admin",
                                                 "operator",
                                                 "halt",
                                                 "shutdown",
                                                 "adm",
                                                 "tty",
                                                 "disk",
                                                 "kmem",
                                                 "dialout",
                                                 "staff",
                                                 "users",
                                                 "sudo",
                                                 "wheel",
                                                 "shadow",
                                                 "utmp",
                                                 "hpcplane"};
  return reserved.count(name) > 0;
}

Status ValidateUserName(const std::string& name) {
  static const std::regex re("^[a-z_][a-z0-9_-]{0,31}$");
  if (!std::regex_match(name, re)) {
    return Status::Errorf(
        "user name \"{}\" is not a valid Linux user name: it must match ^[a-z_][a-z0-9_-]{{0,31}}$ "
        "(a lowercase letter or underscore, then up to 31 lowercase letters, digits, '_' or '-')",
        name);
  }
  if (IsReservedUserName(name)) {
    return Status::Errorf("user name \"{}\" is a reserved system name and cannot be a Slurm user", name);
  }
  return Status::Ok();
}

Status ValidateResourceName(const std::string& name) {
  static const std::regex re("^[a-z]([a-z0-9-]{0,18}[a-z0-9])?$");
  if (name.empty()) return Status::Error("must not be empty");
  if (!std::regex_match(name, re)) {
    return Status::Errorf(
        "must be 1-20 lowercase letters, digits or '-', start with a letter and not end with '-' "
        "(got \"{}\")",
        name);
  }
  return Status::Ok();
}

// Labels as Kubernetes has them: keys an optional DNS-subdomain prefix and '/' and a name of
// at most 63 alphanumerics, '-', '_' or '.' (alphanumeric at both ends); values the same
// characters, at most 63, or empty.
Status ValidateLabels(const std::string& subject, const std::map<std::string, std::string>& labels,
                      const std::string& field = "metadata.labels") {
  static const std::regex name("^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$");
  static const std::regex prefix("^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$");
  for (const auto& [k, v] : labels) {
    auto slash = k.find('/');
    std::string key_name = slash == std::string::npos ? k : k.substr(slash + 1);
    bool key_ok = std::regex_match(key_name, name) &&
                  (slash == std::string::npos || std::regex_match(k.substr(0, slash), prefix));
    // The key as the error shows it: only what was valid UTF-8 text is quoted back.
    std::string shown = key_ok || std::regex_match(k, std::regex("^[ -~]{0,80}$")) ? k : "(unprintable)";
    if (!key_ok) {
      return FieldError(subject, field,
                        fmt::format("key \"{}\" must be [prefix/]name, name at most 63 letters, digits, '-', '_' "
                                    "or '.', starting and ending with a letter or digit",
                                    shown));
    }
    if (!v.empty() && !std::regex_match(v, name)) {
      return FieldError(subject, field + "." + k,
                        "must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or "
                        "digit");
    }
  }
  return Status::Ok();
}

// A Kubernetes object name (a DNS subdomain), as priority classes and secrets are named.
bool IsDnsSubdomain(const std::string& name) {
  static const std::regex re("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$");
  return name.size() <= 253 && std::regex_match(name, re);
}

// One toleration at `at` (spec.pod.tolerations[i]).
Status ValidateToleration(const std::string& subject, const Toleration& t, const std::string& at) {
  if (!t.key.empty()) {
    if (Status s = ValidateLabels(subject, {{t.key, ""}}, at + ".key"); !s.ok()) return s;
  }
  if (t.op != "" && t.op != "Equal" && t.op != "Exists") {
    return FieldError(subject, at + ".operator", fmt::format("must be Equal or Exists (got \"{}\")", Printable(t.op)));
  }
  if (t.op == "Exists" && !t.value.empty()) return FieldError(subject, at + ".value", "must be empty with Exists");
  if (t.key.empty() && t.op != "Exists")
    return FieldError(subject, at + ".operator", "must be Exists when key is empty");
  if (!t.value.empty()) {
    if (Status s = ValidateLabels(subject, {{"v", t.value}}, at); !s.ok()) {
      return FieldError(subject, at + ".value", "must be a label value: at most 63 letters, digits, '-', '_' or '.'");
    }
  }
  if (t.effect != "" && t.effect != "NoSchedule" && t.effect != "PreferNoSchedule" && t.effect != "NoExecute") {
    return FieldError(
        subject, at + ".effect",
        fmt::format("must be NoSchedule, PreferNoSchedule or NoExecute (got \"{}\")", Printable(t.effect)));
  }
  if (t.seconds && (t.effect != "NoExecute" || *t.seconds < 0)) {
    return FieldError(subject, at + ".tolerationSeconds", "is for NoExecute only, and >= 0");
  }
  return Status::Ok();
}

// One node selector term of a node affinity, at `at`.
Status ValidateNodeSelectorTerm(const std::string& subject, const NodeSelectorTerm& term, const std::string& at) {
  if (term.match_expressions.empty())
    return FieldError(subject, at + ".matchExpressions", "must hold at least one expression");
  for (size_t i = 0; i < term.match_expressions.size(); ++i) {
    const NodeSelectorRequirement& e = term.match_expressions[i];
    const std::string here = fmt::format("{}.matchExpressions[{}]", at, i);
    if (Status s = ValidateLabels(subject, {{e.key, ""}}, here + ".key"); !s.ok() || e.key.empty()) {
      return FieldError(subject, here + ".key", "must be a label key");
    }
    static const std::set<std::string> kOps = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
    if (!kOps.count(e.op)) {
      return FieldError(subject, here + ".operator",
                        fmt::format("must be In, NotIn, Exists, DoesNotExist, Gt or Lt (got \"{}\")", Printable(e.op)));
    }
    if ((e.op == "In" || e.op == "NotIn") && e.values.empty()) {
      return FieldError(subject, here + ".values", fmt::format("must hold at least one value with {}", e.op));
    }
    if ((e.op == "Exists" || e.op == "DoesNotExist") && !e.values.empty()) {
      return FieldError(subject, here + ".values", fmt::format("must be empty with {}", e.op));
    }
    if (e.op == "Gt" || e.op == "Lt") {
      static const std::regex integer("^-?[0-9]{1,18}$");
      if (e.values.size() != 1 || !std::regex_match(e.values[0], integer)) {
        return FieldError(subject, here + ".values", fmt::format("must be one integer with {}", e.op));
      }
    }
    for (size_t v = 0; v < e.values.size(); ++v) {
      if (Status s = ValidateLabels(subject, {{"v", e.values[v]}}, here); !s.ok()) {
        return FieldError(subject, fmt::format("{}.values[{}]", here, v),
                          "must be a label value: at most 63 letters, digits, '-', '_' or '.'");
      }
    }
  }
  return Status::Ok();
}

// The pod's seccomp profile: a type, and a relative path for Localhost only.
Status ValidateSeccomp(const std::string& subject, const PodPlacementSpec& pod) {
  const std::string seccomp = "spec.pod.securityContext.seccompProfile";
  if (pod.seccomp_type.empty() && pod.seccomp_localhost_profile.empty()) return Status::Ok();
  if (pod.seccomp_type != "RuntimeDefault" && pod.seccomp_type != "Localhost" && pod.seccomp_type != "Unconfined") {
    return FieldError(
        subject, seccomp + ".type",
        fmt::format("must be RuntimeDefault, Localhost or Unconfined (got \"{}\")", Printable(pod.seccomp_type)));
  }
  static const std::regex relative("^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$");
  const std::string& profile = pod.seccomp_localhost_profile;
  if (pod.seccomp_type == "Localhost" && (!std::regex_match(profile, relative) || profile.size() > 255 ||
                                          ("/" + profile + "/").find("/../") != std::string::npos)) {
    return FieldError(subject, seccomp + ".localhostProfile",
                      "must be a relative path under the kubelet's seccomp directory, without '..'");
  }
  if (pod.seccomp_type != "Localhost" && !profile.empty()) {
    return FieldError(subject, seccomp + ".localhostProfile", "is for type Localhost only");
  }
  return Status::Ok();
}

Status ValidatePodPlacement(const std::string& subject, const PodPlacementSpec& pod) {
  RETURN_IF_ERROR(ValidateLabels(subject, pod.node_selector, "spec.pod.nodeSelector"));
  for (size_t i = 0; i < pod.tolerations.size(); ++i) {
    RETURN_IF_ERROR(ValidateToleration(subject, pod.tolerations[i], fmt::format("spec.pod.tolerations[{}]", i)));
  }
  const std::string node_affinity = "spec.pod.affinity.nodeAffinity";
  for (size_t i = 0; i < pod.required_node_terms.size(); ++i) {
    RETURN_IF_ERROR(ValidateNodeSelectorTerm(
        subject, pod.required_node_terms[i],
        fmt::format("{}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{}]", node_affinity, i)));
  }
  for (size_t i = 0; i < pod.preferred_node_terms.size(); ++i) {
    const std::string at = fmt::format("{}.preferredDuringSchedulingIgnoredDuringExecution[{}]", node_affinity, i);
    if (pod.preferred_node_terms[i].weight < 1 || pod.preferred_node_terms[i].weight > 100) {
      return FieldError(subject, at + ".weight",
                        fmt::format("must be 1-100 (got {})", pod.preferred_node_terms[i].weight));
    }
    RETURN_IF_ERROR(ValidateNodeSelectorTerm(subject, pod.preferred_node_terms[i].preference, at + ".preference"));
  }
  RETURN_IF_ERROR(ValidateSeccomp(subject, pod));
  if (!pod.priority_class_name.empty() && !IsDnsSubdomain(pod.priority_class_name)) {
    return FieldError(subject, "spec.pod.priorityClassName",
                      "must be a Kubernetes object name (lowercase DNS subdomain)");
  }
  for (size_t i = 0; i < pod.image_pull_secrets.size(); ++i) {
    if (!IsDnsSubdomain(pod.image_pull_secrets[i])) {
      return FieldError(subject, fmt::format("spec.pod.imagePullSecrets[{}]", i),
                        "must be a Secret's name (lowercase DNS subdomain)");
    }
  }
  return Status::Ok();
}

Status ValidateDatasets(const std::string& subject, const std::string& field, const std::vector<Dataset>& datasets) {
  std::set<std::string> dataset_names, mount_paths;
  static const std::regex abs_path(R"(^(/[A-Za-z0-9._-]+)+$)");
  static const std::set<std::string> forbidden_mounts = {"/",     "/etc", "/usr", "/bin", "/sbin", "/lib",
                                                         "/proc", "/sys", "/dev", "/run", "/var",  "/tmp"};
  for (size_t i = 0; i < datasets.size(); ++i) {
    const auto& d = datasets[i];
    std::string p = fmt::format("{}[{}]", field, i);
    if (Status st = ValidateResourceName(d.name); !st.ok()) return FieldError(subject, p + ".name", st.message());
    if (!dataset_names.insert(d.name).second) {
      return FieldError(subject, p + ".name", "duplicate dataset name \"" + d.name + "\"");
    }
    // Pods see the system directories read-only (the pod file-system contract): nothing can be
    // mounted inside them.
    static const std::vector<std::string> read_only_trees = {"/etc/",   "/usr/",   "/bin/",  "/sbin/", "/lib/",
                                                             "/lib32/", "/lib64/", "/proc/", "/sys/",  "/dev/"};
    bool under_system = std::any_of(read_only_trees.begin(), read_only_trees.end(),
                                    [&](const std::string& t) { return d.mount_path.rfind(t, 0) == 0; });
    if (!std::regex_match(d.mount_path, abs_path) || forbidden_mounts.count(d.mount_path) || under_system ||
        d.mount_path.find("/..") != std::string::npos) {
      return FieldError(subject, p + ".mountPath",
                        "must be an absolute path outside the system directories (got \"" + d.mount_path + "\")");
    }
    if (!mount_paths.insert(d.mount_path).second) {
      return FieldError(subject, p + ".mountPath", "duplicate mount path \"" + d.mount_path + "\"");
    }
    if (!d.host_path.empty() && !std::regex_match(d.host_path, abs_path)) {
      return FieldError(subject, p + ".hostPath", "must be an absolute path (got \"" + d.host_path + "\")");
    }
  }
  return Status::Ok();
}

static Status ValidateHealthChecks(const std::string& subject, const HealthChecksSpec& h) {
  auto bounded = [&](const char* field, int64_t v, int64_t lo, int64_t hi, const char* range) -> Status {
    if (v >= lo && v <= hi) return Status::Ok();
    return FieldError(subject, std::string("spec.healthChecks.") + field, fmt::format("must be {} (got {})", range, v));
  };
  RETURN_IF_ERROR(bounded("interval", h.interval_seconds, 1, 3600, "1s-1h"));
  // slurmd kills a HealthCheckProgram after 60 s; the checks run one after another.
  RETURN_IF_ERROR(bounded("timeout", h.timeout_seconds, 1, 20, "1s-20s"));
  RETURN_IF_ERROR(bounded("minFreePercent", h.min_free_percent, 0, 99, "0-99"));
  RETURN_IF_ERROR(bounded("maxClockSkew", h.max_clock_skew_seconds, 1, 3600, "1s-1h"));
  RETURN_IF_ERROR(bounded("replaceAfter", h.replace_after_seconds, 0, 30 * 86400, "0s-30d"));
  RETURN_IF_ERROR(bounded("maxReplacementsPerHour", h.max_replacements_per_hour, 0, 1000, "0-1000"));
  static const std::regex count_or_share("^([0-9]{1,4})(%?)$");
  std::smatch m;
  if (!std::regex_match(h.max_unhealthy, m, count_or_share) || (!m[2].str().empty() && std::stoi(m[1]) > 100)) {
    return FieldError(subject, "spec.healthChecks.maxUnhealthy",
                      "must be a count 0-9999 or a share 0%-100% (got \"" + h.max_unhealthy + "\")");
  }
  return Status::Ok();
}

static Status ValidateUpgrade(const std::string& subject, const UpgradeSpec& u) {
  if (u.drain_deadline_seconds < 0 || u.drain_deadline_seconds > 365 * 86400) {
    return FieldError(subject, "spec.upgrade.drainDeadline",
                      fmt::format("must be 0s-365d (got {}s)", u.drain_deadline_seconds));
  }
  if (u.after_deadline != kAfterDeadlineWait && u.after_deadline != kAfterDeadlineRequeue &&
      u.after_deadline != kAfterDeadlineCancel) {
    return FieldError(subject, "spec.upgrade.afterDeadline",
                      fmt::format("must be {}, {} or {} (got \"{}\")", kAfterDeadlineWait, kAfterDeadlineRequeue,
                                  kAfterDeadlineCancel, Printable(u.after_deadline)));
  }
  return Status::Ok();
}

static Status ValidateHealthCheckScripts(const std::string& subject,
                                         const std::map<std::string, std::string>& scripts) {
  static const std::set<std::string> builtin = {"tmp", "spool", "datasets", "munge", "processes", "clock"};
  static const std::regex name("^[a-z0-9][a-z0-9-]{0,31}$");
  if (scripts.size() > 16) {
    return FieldError(subject, "spec.healthChecks.scripts", fmt::format("at most 16 scripts (got {})", scripts.size()));
  }
  for (const auto& [n, script] : scripts) {
    std::string p = "spec.healthChecks.scripts." + n;
    if (!std::regex_match(n, name)) {
      return FieldError(subject, p,
                        "names are 1-32 lower-case letters, digits or '-', starting with a letter or digit");
    }
    if (builtin.count(n)) return FieldError(subject, p, "is the name of a built-in check");
    if (script.rfind("#!", 0) != 0) return FieldError(subject, p, "must start with an interpreter line like #!/bin/sh");
    if (script.size() > 65536)
      return FieldError(subject, p, fmt::format("must be at most 64 KiB (got {} bytes)", script.size()));
    if (script.find('\0') != std::string::npos) return FieldError(subject, p, "must not contain NUL bytes");
  }
  return Status::Ok();
}

Status Validate(const SlurmCluster& c) {
  std::string subject = fmt::format("cluster \"{}\"", c.metadata.name);
  const auto& s = c.spec;
  if (Status st = ValidateResourceName(c.metadata.name); !st.ok()) {
    return FieldError(subject, "metadata.name", st.message());
  }
  RETURN_IF_ERROR(ValidateLabels(subject, c.metadata.labels));
  if (!s.environment.empty()) {
    if (Status st = ValidateEnvironmentName(s.environment); !st.ok()) {
      return FieldError(subject, "spec.environment", st.message());
    }
  }
  static const std::regex cidr(R"(^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.0/24$)");
  std::smatch m;
  in_addr addr{};
  if (!std::regex_match(s.subnet, m, cidr) ||
      inet_pton(AF_INET, s.subnet.substr(0, s.subnet.find('/')).c_str(), &addr) != 1) {
    return FieldError(subject, "spec.network.subnet",
                      fmt::format("must be an IPv4 /24 like 10.200.1.0/24 (got \"{}\")", s.subnet));
  }
  int a = std::stoi(m[1]), b = std::stoi(m[2]);
  bool is_private = a == 10 || (a == 172 && b >= 16 && b <= 31) || (a == 192 && b == 168);
  if (!is_private) {
    return FieldError(subject, "spec.network.subnet",
                      fmt::format("must be in a private range (10/8, 172.16/12, 192.168/16) (got \"{}\")", s.subnet));
  }
  if (s.rest_port < 1 || s.rest_port > 65535) {
    return FieldError(subject, "spec.restApi.port", fmt::format("must be 1-65535 (got {})", s.rest_port));
  }
  if (s.rest_memory_limit_mib != 0 && (s.rest_memory_limit_mib < 64 || s.rest_memory_limit_mib > 1048576)) {
    return FieldError(subject, "spec.restApi.memoryLimitMiB",
                      fmt::format("must be 0 (no limit) or 64-1048576 (got {})", s.rest_memory_limit_mib));
  }
  if (s.min_replica_count < 0 || s.min_replica_count > 128) {
    return FieldError(subject, "spec.nodeSetDefaults.minReplicaCount",
                      fmt::format("must be 0-128 (got {})", s.min_replica_count));
  }
  // Slurm's MaxNodeCount: the dynamic nodes it may hold at once, over every nodeset.
  if (s.max_node_count < 1 || s.max_node_count > 1000) {
    return FieldError(subject, "spec.scheduling.maxNodeCount",
                      fmt::format("must be 1-1000 (got {})", s.max_node_count));
  }
  for (size_t i = 0; i < s.scheduler_parameters.size(); ++i) {
    if (!IsSafeConfigValue(s.scheduler_parameters[i])) {
      return FieldError(
          subject, fmt::format("spec.scheduling.schedulerParameters[{}]", i),
          "must be one SchedulerParameters token without spaces (got \"" + s.scheduler_parameters[i] + "\")");
    }
  }
  if (!s.priority_type.empty() && !IsSafeConfigValue(s.priority_type)) {
    return FieldError(subject, "spec.scheduling.priorityType", "must be a plugin name like priority/multifactor");
  }
  static const std::regex config_line(R"(^[A-Za-z][A-Za-z0-9]*=[^\n\r]*$)");
  for (size_t i = 0; i < s.extra_config.size(); ++i) {
    if (!std::regex_match(s.extra_config[i], config_line)) {
      return FieldError(subject, fmt::format("spec.scheduling.extraConfig[{}]", i),
                        "must be one slurm.conf line of the form Key=Value (got \"" + s.extra_config[i] + "\")");
    }
  }
  RETURN_IF_ERROR(ValidateDatasets(subject, "spec.datasets", s.datasets));
  if (!s.accounting.enforce.empty() && !IsSafeConfigValue(s.accounting.enforce)) {
    return FieldError(
        subject, "spec.accounting.enforce",
        "must be an AccountingStorageEnforce list like associations,limits (got \"" + s.accounting.enforce + "\")");
  }
  RETURN_IF_ERROR(ValidateHealthChecks(subject, s.health_checks));
  RETURN_IF_ERROR(ValidateUpgrade(subject, s.upgrade));
  std::set<std::string> user_names;
  std::set<int64_t> uids;
  for (size_t i = 0; i < s.users.size(); ++i) {
    const auto& u = s.users[i];
    std::string p = fmt::format("spec.users[{}]", i);
    if (Status st = ValidateUserName(u.name); !st.ok()) return FieldError(subject, p + ".name", st.message());
    if (u.uid < 1000 || u.uid > 60000) {
      return FieldError(subject, p + ".uid", fmt::format("must be 1000-60000, outside system ids (got {})", u.uid));
    }
    if (u.gid < 1000 || u.gid > 60000) {
      return FieldError(subject, p + ".gid", fmt::format("must be 1000-60000, outside system ids (got {})", u.gid));
    }
    if (!u.account.empty()) {
      if (Status st = ValidateResourceName(u.account); !st.ok())
        return FieldError(subject, p + ".account", st.message());
    }
    if (!user_names.insert(u.name).second) return FieldError(subject, p + ".name", "duplicate user \"" + u.name + "\"");
    if (!uids.insert(u.uid).second) return FieldError(subject, p + ".uid", fmt::format("duplicate uid {}", u.uid));
  }
  return Status::Ok();
}

Status ValidateShape(const NodeSet& n) {
  std::string subject = fmt::format("nodeset \"{}\"", n.metadata.name);
  const auto& s = n.spec;
  if (Status st = ValidateResourceName(n.metadata.name); !st.ok()) {
    return FieldError(subject, "metadata.name", st.message());
  }
  RETURN_IF_ERROR(ValidateLabels(subject, n.metadata.labels));
  if (!s.environment.empty()) {
    if (Status st = ValidateEnvironmentName(s.environment); !st.ok()) {
      return FieldError(subject, "spec.environment", st.message());
    }
  }
  if (!s.cluster.empty()) {
    if (Status st = ValidateResourceName(s.cluster); !st.ok()) return FieldError(subject, "spec.cluster", st.message());
  }
  // A local cluster's pods share one /24: 240 workers leave room for its other pods.
  if (s.max_replicas < 0 || s.max_replicas > kMaxReplicas) {
    return FieldError(subject, "spec.maxReplicas", fmt::format("must be 0-{} (got {})", kMaxReplicas, s.max_replicas));
  }
  if (s.min_replicas && *s.min_replicas < 0) {
    return FieldError(subject, "spec.minReplicas", fmt::format("must be >= 0 (got {})", *s.min_replicas));
  }
  if (s.min_replicas && s.max_replicas < *s.min_replicas) {
    return FieldError(subject, "spec.maxReplicas",
                      fmt::format("must be >= minReplicas (got {} < {})", s.max_replicas, *s.min_replicas));
  }
  if (s.replicas && (*s.replicas < 0 || *s.replicas > s.max_replicas)) {
    return FieldError(
        subject, "spec.replicas",
        fmt::format("must be between minReplicas and maxReplicas (got {}, max {})", *s.replicas, s.max_replicas));
  }
  if (s.replicas && s.min_replicas && *s.replicas < *s.min_replicas) {
    return FieldError(subject, "spec.replicas",
                      fmt::format("must be >= minReplicas (got {} < {})", *s.replicas, *s.min_replicas));
  }
  if (s.idle_timeout_seconds < 0 || s.idle_timeout_seconds > 30 * 86400) {
    return FieldError(subject, "spec.idleTimeout", fmt::format("must be 0s-30d (got {}s)", s.idle_timeout_seconds));
  }
  if (s.scale_up_per_minute < 0 || s.scale_up_per_minute > 10000) {
    return FieldError(subject, "spec.scaling.scaleUpPerMinute",
                      fmt::format("must be 0-10000 (got {})", s.scale_up_per_minute));
  }
  if (s.scale_down_per_minute < 0 || s.scale_down_per_minute > 10000) {
    return FieldError(subject, "spec.scaling.scaleDownPerMinute",
                      fmt::format("must be 0-10000 (got {})", s.scale_down_per_minute));
  }
  if (s.resources.cpus < 1 || s.resources.cpus > 1024) {
    return FieldError(subject, "spec.resources.cpus", fmt::format("must be 1-1024 (got {})", s.resources.cpus));
  }
  if (s.resources.memory_mib < 64 || s.resources.memory_mib > 16 * 1024 * 1024) {
    return FieldError(subject, "spec.resources.memoryMiB",
                      fmt::format("must be 64-16777216 (16 TiB) (got {})", s.resources.memory_mib));
  }
  if (s.resources.gpus < 0 || s.resources.gpus > 64) {
    return FieldError(subject, "spec.resources.gpus", fmt::format("must be 0-64 (got {})", s.resources.gpus));
  }
  if (s.resources.tmp_mib < 16 || s.resources.tmp_mib > 1048576) {
    return FieldError(subject, "spec.resources.tmpMiB",
                      fmt::format("must be 16-1048576 (1 TiB) (got {})", s.resources.tmp_mib));
  }
  RETURN_IF_ERROR(ValidateHealthCheckScripts(subject, s.health_check_scripts));
  RETURN_IF_ERROR(ValidatePodPlacement(subject, s.pod));
  if (!s.partition.name.empty()) {
    if (Status st = ValidateResourceName(s.partition.name); !st.ok()) {
      return FieldError(subject, "spec.partition.name", st.message());
    }
  }
  if (!IsSafeConfigValue(s.partition.max_time)) {
    return FieldError(subject, "spec.partition.maxTime", "must be a Slurm time like INFINITE or 1-00:00:00");
  }
  static const std::regex option_key("^[A-Za-z]+$");
  static const std::set<std::string> owned = {"Nodes", "Default", "MaxTime", "State", "PartitionName"};
  for (const auto& [k, v] : s.partition.options) {
    std::string p = "spec.partition.options." + k;
    if (!std::regex_match(k, option_key)) return FieldError(subject, p, "option names are letters only");
    if (owned.count(k)) return FieldError(subject, p, "is set by hpcplane and cannot be overridden");
    if (!IsSafeConfigValue(v)) {
      return FieldError(subject, p, "value must be one token without spaces (got \"" + v + "\")");
    }
  }
  static const std::set<std::string> partition_states = {"UP", "DRAIN", "DOWN", "INACTIVE"};
  if (!partition_states.count(s.partition.state)) {
    return FieldError(subject, "spec.partition.state",
                      "must be UP, DRAIN, DOWN or INACTIVE (got \"" + s.partition.state + "\")");
  }
  RETURN_IF_ERROR(ValidateDatasets(subject, "spec.datasets", s.datasets));
  for (size_t i = 0; i < s.features.size(); ++i) {
    static const std::regex feature("^[A-Za-z0-9_.-]{1,64}$");
    if (!std::regex_match(s.features[i], feature)) {
      return FieldError(subject, fmt::format("spec.features[{}]", i),
                        "must be letters, digits, '_', '.' or '-' (got \"" + s.features[i] + "\")");
    }
  }
  return Status::Ok();
}

Status ValidateAgainstCluster(const NodeSet& n, const SlurmCluster& c) {
  std::string subject = fmt::format("nodeset \"{}\"", n.metadata.name);
  int min = n.MinReplicas(c.spec.min_replica_count);
  if (n.spec.max_replicas < min) {
    return FieldError(subject, "spec.maxReplicas",
                      fmt::format("must be >= minReplicas (got {} < {})", n.spec.max_replicas, min));
  }
  if (n.spec.replicas && *n.spec.replicas < min) {
    return FieldError(subject, "spec.replicas",
                      fmt::format("must be >= minReplicas (got {} < {})", *n.spec.replicas, min));
  }
  // A partition the admin declared is theirs: a nodeset must not take it over (and would
  // otherwise be deleted with the nodeset).
  for (size_t i = 0; i < c.spec.extra_config.size(); ++i) {
    static const std::regex partition_line(R"(^[Pp][Aa][Rr][Tt][Ii][Tt][Ii][Oo][Nn][Nn][Aa][Mm][Ee]=([^ \t]+))");
    std::smatch m;
    if (std::regex_search(c.spec.extra_config[i], m, partition_line) && m[1] == n.PartitionName()) {
      return FieldError(subject, n.spec.partition.name.empty() ? "metadata.name" : "spec.partition.name",
                        fmt::format("partition \"{}\" is declared by the cluster's spec.scheduling.extraConfig[{}] "
                                    "and belongs to its admin; choose another name",
                                    n.PartitionName(), i));
    }
  }
  if (n.spec.max_replicas > c.spec.max_node_count) {
    return FieldError(subject, "spec.maxReplicas",
                      fmt::format("must be <= the cluster's spec.scheduling.maxNodeCount (got {} > {})",
                                  n.spec.max_replicas, c.spec.max_node_count));
  }
  return Status::Ok();
}

}  // namespace hpc::api
