#include "slurm/config.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "slurm/health_check.h"

namespace hpc::slurm {
namespace {

// The Epilog of a cluster without health checks: in every image (see RenderSlurmConf).
constexpr const char* kNoOpEpilog = "/bin/true";

std::string LowerAscii(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return s;
}

// Whether a slurm.conf line sets `key` (keys are case-insensitive).
bool SetsKey(const std::string& line, const std::string& key) {
  return LowerAscii(line).rfind(LowerAscii(key) + "=", 0) == 0;
}

// Whether the admin's extraConfig sets `key` (slurm.conf keys are case-insensitive): their
// line wins over the one hpcplane would write.
bool AdminSets(const api::SlurmCluster& c, const std::string& key) {
  return std::any_of(c.spec.extra_config.begin(), c.spec.extra_config.end(),
                     [&](const std::string& l) { return SetsKey(l, key); });
}

// SlurmctldParameters: enable_configless where workers fetch their configuration from
// slurmctld, then the admin's own (their extraConfig lines are merged into this one line, so
// neither replaces the other); empty when there is nothing to set.
std::string SlurmctldParameters(const api::SlurmCluster& c, Auth auth) {
  std::string params = auth == Auth::kSlurm ? "enable_configless" : "";
  for (const auto& line : c.spec.extra_config) {
    if (!SetsKey(line, "SlurmctldParameters")) continue;
    const std::string value = line.substr(line.find('=') + 1);
    if (!value.empty()) params += (params.empty() ? "" : ",") + value;
  }
  return params;
}

// How daemons and clients authenticate: Slurm's own auth/slurm where the release has it (the
// key's path in the environment, SLURM_SACK_KEY, so configless daemons find it too), else munge.
// JWTs (workspaces, slurmrestd) either way.
std::string AuthLines(Auth auth) {
  std::string auth_lines =
      auth == Auth::kSlurm ? "AuthType=auth/slurm\n"
                           : fmt::format("AuthType=auth/munge\nAuthInfo=socket={}/munge.socket.2\n", kMungeSocketDir);
  return auth_lines + fmt::format("AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={}\n", kJwtKeyPath);
}

// Worker health (slurm/health_check.h): every interval, and after every job (the Epilog).
std::string HealthCheckLines(const api::SlurmCluster& c, const Release& release) {
  const auto& hc = c.spec.health_checks;
  if (!hc.enabled || AdminSets(c, "HealthCheckProgram")) return "";
  std::string lines = fmt::format("HealthCheckProgram={}\nHealthCheckInterval={}\nHealthCheckNodeState=ANY\n",
                                  kHealthCheckProgram, hc.interval_seconds);
  // 25.11 bounds how long slurmd waits for the program (default 60 s), below the interval.
  // The check detaches from slurmd at once (health_check.h); this only bounds a hung start.
  if (release.AtLeast(25, 11)) {
    lines += fmt::format("HealthCheckTimeout={}\n",
                         std::max<int64_t>(1, std::min(hc.timeout_seconds, hc.interval_seconds - 1)));
  }
  return lines;
}

}  // namespace

bool RunsPeriodicHealthChecks(const api::SlurmCluster& c) {
  return c.spec.health_checks.enabled && !AdminSets(c, "HealthCheckProgram") && !AdminSets(c, "HealthCheckInterval") &&
         !AdminSets(c, "HealthCheckNodeState");
}

std::string SchedulerParameters(const std::vector<std::string>& admin) {
  // slurmctld 22.05 schedules only from its background loop, once a second: a node's registration,
  // an update or a finished job merely flag that loop. Only a submission is placed at once, so a
  // worker that registers for queued work waits for the next tick. The backfill scheduler keeps a
  // timer of its own; at 1 s (default 30) it is a second, independently phased chance, which
  // roughly halves that wait. sched_interval=1: a node registering again under a name Slurm
  // deleted earlier triggers no pass at all, and would wait for the full-queue interval (60 s).
  static const std::vector<std::string> kDefaults = {"batch_sched_delay=0", "sched_min_interval=100000",
                                                     "sched_interval=1", "bf_interval=1"};
  auto key = [](const std::string& token) { return token.substr(0, token.find('=')); };
  std::vector<std::string> out;
  // Slurm reads the first occurrence of a key: a default the admin sets again is left out.
  for (const auto& d : kDefaults) {
    bool overridden = std::any_of(admin.begin(), admin.end(), [&](const std::string& a) { return key(a) == key(d); });
    if (!overridden) out.push_back(d);
  }
  out.insert(out.end(), admin.begin(), admin.end());
  std::string joined;
  for (const auto& t : out) joined += (joined.empty() ? "" : ",") + t;
  return joined;
}

std::string ControllerHost(const api::SlurmCluster& c) { return c.metadata.name + "-controller"; }
std::string BackupControllerHost(const api::SlurmCluster& c) { return c.metadata.name + "-controller-backup"; }
int SlurmctldTimeoutSeconds(const api::SlurmCluster& c) {
  int seconds = c.spec.backup_controller ? kSlurmctldTimeoutWithBackup : 30;
  for (const auto& line : c.spec.extra_config) {
    if (!SetsKey(line, "SlurmctldTimeout")) continue;
    const std::string value = line.substr(line.find('=') + 1);
    // Slurm takes the last line of a key; one it cannot read leaves the default.
    if (!value.empty() && value.size() < 6 && value.find_first_not_of("0123456789") == std::string::npos) {
      seconds = std::stoi(value);
    }
  }
  return seconds;
}

std::string ConfServers(const api::SlurmCluster& c) {
  std::string servers = fmt::format("{}:{}", ControllerHost(c), kSlurmctldPort);
  if (c.spec.backup_controller) servers += fmt::format(",{}:{}", BackupControllerHost(c), kSlurmctldPort);
  return servers;
}
std::string SlurmdbdHost(const api::SlurmCluster& c) { return c.metadata.name + "-slurmdbd"; }
std::string DatabaseHost(const api::SlurmCluster& c) { return c.metadata.name + "-mariadb"; }

std::string RenderCgroupConf(JobCgroups cgroups, bool any_gpu, const Release& release) {
  if (cgroups == JobCgroups::kNone) return "";
  std::ostringstream o;
  o << "# Rendered by hpcplane. Do not edit: hpcplane rewrites it.\n"
    << "CgroupPlugin=" << (cgroups == JobCgroups::kV1 ? "cgroup/v1" : "cgroup/v2")
    << "\n"
    // What the worker pod sees at /sys/fs/cgroup is its own cgroup, delegated to slurmd.
    << "CgroupMountpoint=/sys/fs/cgroup\n";
  // Retired in 23.11 (slurmd no longer mounts anything itself).
  if (cgroups == JobCgroups::kV1 && !release.AtLeast(23, 11)) o << "CgroupAutomount=no\n";
  // slurmd is the pod's own process, not a systemd unit.
  if (cgroups == JobCgroups::kV2) o << "IgnoreSystemd=yes\n";
  // A worker's CPUs are its pod's (a cpuset of its own where the host has CPUs to spare), not
  // the first ones of the machine: slurmd would bind every job of every worker to host CPU 0
  // (abstract CPU i is the machine's i-th; hwloc cannot be shown another order). So the pod's
  // cpuset confines the worker's jobs together, and slurmd binds no job to cores.
  o << "ConstrainCores=no\n"
    << "ConstrainRAMSpace=yes\n";
  if (any_gpu) o << "ConstrainDevices=yes\n";
  return o.str();
}

std::string RenderGresConf(bool any_gpu, const Release& release) {
  if (!any_gpu || !release.AtLeast(24, 11)) return "";
  return "# Rendered by hpcplane. Do not edit: hpcplane rewrites it.\n"
         "AutoDetect=nvidia\n";
}

std::string RenderSlurmConf(const api::SlurmCluster& c, const std::vector<api::NodeSet>& nodesets_in,
                            JobCgroups cgroups, const Release& release, std::optional<Auth> auth_in,
                            std::optional<Release> read_by_in) {
  const Auth auth = auth_in.value_or(DefaultAuth(release));
  const Release read_by = read_by_in.value_or(release);
  std::vector<api::NodeSet> nodesets = nodesets_in;
  std::sort(nodesets.begin(), nodesets.end(),
            [](const auto& a, const auto& b) { return a.metadata.name < b.metadata.name; });
  std::ostringstream o;
  o << "# Rendered by hpcplane for cluster " << c.metadata.name << ". Do not edit: hpcplane rewrites it.\n"
    << "ClusterName=" << c.metadata.name << "\n"
    << "SlurmctldHost=" << ControllerHost(c) << "\n"
    << (c.spec.backup_controller ? fmt::format("SlurmctldHost={}\n", BackupControllerHost(c)) : std::string())
    << "SlurmUser=slurm\n"
    << "SlurmctldPort=" << kSlurmctldPort << "\n"
    << "SlurmdPort=" << kSlurmdPort << "\n"
    << AuthLines(auth)
    // Job credentials (slurmctld signs, slurmd checks): the same key; slurm.conf only.
    << (auth == Auth::kSlurm ? "CredType=cred/slurm\n" : "") << "StateSaveLocation=" << kStateSaveDir << "\n"
    << "SlurmdSpoolDir=" << kSlurmdSpoolDir << "\n"
    << "SlurmctldPidFile=/run/slurmctld.pid\n"
    << "SlurmdPidFile=/run/slurmd.pid\n"
    // Confined (cgroup.conf): each job in a cgroup of its worker pod's delegated subtree, on its
    // pod's CPUs (no task/affinity: see RenderCgroupConf). Otherwise processes are tracked by
    // their parentage and nothing is confined.
    << (cgroups != JobCgroups::kNone ? "ProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup\n"
                                     : "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n")
    << "JobAcctGatherType=jobacct_gather/linux\n"
    << "SelectType=select/cons_tres\n"
    << "SelectTypeParameters=CR_Core_Memory\n"
    // Only dynamic nodes: without a bound slurmctld refuses to start ("no nodes configured").
    << "MaxNodeCount=" << c.spec.max_node_count
    << "\n"
    // Workers declare their shape with --conf; a pod is not expected to match host hardware.
    << "SlurmdParameters=config_overrides\n"
    << "ReturnToService=2\n"
    << (AdminSets(c, "SlurmctldTimeout") ? std::string()
                                         : fmt::format("SlurmctldTimeout={}\n", SlurmctldTimeoutSeconds(c)))
    << "SlurmdTimeout=60\n"
    << "MessageTimeout=10\n"
    << "KillWait=10\n"
    << "MailProg=/bin/true\n"
    // Drops the submitter's token from every task's environment: sbatch copies the caller's
    // environment into the job, and srun inside a job must use Slurm's own authentication
    // (munge or auth/slurm: slurmd has no auth/jwt).
    << "TaskProlog=" << kScriptsDir
    << "/task_prolog\n"
    // Daemons log to stderr; the runtime keeps it as the pod's log.
    << "SlurmctldDebug=info\n"
    << "SlurmdDebug=info\n";
  o << "SchedulerParameters=" << SchedulerParameters(c.spec.scheduler_parameters) << "\n";
  if (!AdminSets(c, "MpiDefault")) o << "MpiDefault=" << DefaultMpi(release) << "\n";
  if (!c.spec.priority_type.empty()) o << "PriorityType=" << c.spec.priority_type << "\n";
  if (c.spec.accounting.enabled) {
    // slurmctld queues records while slurmdbd is away and sends them once it answers, so a
    // late database delays history but never blocks scheduling.
    o << "AccountingStorageType=accounting_storage/slurmdbd\n"
      << "AccountingStorageHost=" << SlurmdbdHost(c) << "\n"
      << "AccountingStoragePort=" << kSlurmdbdPort << "\n"
      << "JobAcctGatherFrequency=task=5\n"
      // Keeps --comment in slurmdbd: the agent finds API submissions by it after a crash.
      << "AccountingStoreFlags=job_comment\n";
    if (!c.spec.accounting.enforce.empty()) o << "AccountingStorageEnforce=" << c.spec.accounting.enforce << "\n";
  } else {
    o << "AccountingStorageType=accounting_storage/none\n";
  }
  bool any_gpu = std::any_of(nodesets.begin(), nodesets.end(), [](const auto& n) { return n.spec.resources.gpus > 0; });
  if (any_gpu) o << "GresTypes=gpu\n";
  // The operator's change probe (pass_schedule.h). An admin's own JobSubmitPlugins in
  // extraConfig wins; the operator then learns of work on its periodic passes only.
  if (!AdminSets(c, "JobSubmitPlugins")) o << "JobSubmitPlugins=lua\n";
  o << HealthCheckLines(c, read_by);
  const auto& hc = c.spec.health_checks;
  // An Epilog always, a no-op without health checks: slurmctld places queued work at once when a
  // node reports its epilog done, while a job that ends on a node without one frees it for the
  // next periodic pass only (sched_interval, bf_interval: up to a second). 200 one-second-or-less
  // jobs on two workers took 37-40 s without an Epilog and 11 s with /bin/true (bench/README.md).
  if (!AdminSets(c, "Epilog")) o << "Epilog=" << (hc.enabled ? kHealthCheckProgram : kNoOpEpilog) << "\n";
  // 25.11 on, slurmctld serves OpenMetrics on its own port (/metrics/jobs, nodes, partitions,
  // scheduler): Prometheus scrapes Slurm itself, no exporter polling the CLI.
  if (read_by.ControllerServesHttp() && !AdminSets(c, "MetricsType")) o << "MetricsType=metrics/openmetrics\n";
  if (const std::string p = SlurmctldParameters(c, auth); !p.empty()) o << "SlurmctldParameters=" << p << "\n";
  for (const auto& line : c.spec.extra_config) {
    if (!SetsKey(line, "SlurmctldParameters")) o << line << "\n";
  }
  o << "# One nodeset and one partition per NodeSet; workers join as dynamic nodes.\n";
  for (const auto& ns : nodesets) {
    o << "NodeSet=" << ns.metadata.name << " Feature=" << ns.metadata.name << "\n";
  }
  // slurmctld refuses to start without a partition; a cluster may have none until its first
  // workspace. This one holds no node and accepts no job.
  o << "PartitionName=" << kPlaceholderPartition << " State=INACTIVE Hidden=YES Default=NO\n";
  for (const auto& ns : nodesets) {
    o << "PartitionName=" << ns.PartitionName() << " Nodes=" << ns.metadata.name;
    for (const auto& opt : PartitionOptions(ns, ClusterSetsDefaultMemory(c))) o << " " << opt;
    o << "\n";
  }
  return o.str();
}

std::string JobSubmitLuaScript() {
  return fmt::format(
      "-- hpcplane: tells the autoscaler that work arrived or changed, at once. It watches this\n"
      "-- file instead of listing the queue while the cluster is idle.\n"
      "local marker = \"{}/{}\"\n"
      "-- The time and a count, so that two submissions in one second differ in content too (the\n"
      "-- operator on Kubernetes reads the file; the local daemon watches its modification).\n"
      "local submissions = 0\n"
      "local function touch()\n"
      "  submissions = submissions + 1\n"
      "  local f = io.open(marker, \"w\")\n"
      "  if f then f:write(os.time(), \" \", submissions, \"\\n\") f:close() end\n"
      "end\n"
      "-- Refuses, at submission, a partition the user may not use (part_list holds only those they\n"
      "-- may): Slurm 23.11 on would queue such a job for ever, and start no worker for it.\n"
      "local function allowed(job_desc, part_list)\n"
      "  if job_desc.partition == nil then return true end\n"
      "  for name in string.gmatch(job_desc.partition, \"[^,]+\") do\n"
      "    if part_list[name] == nil then\n"
      "      slurm.log_user(\"partition \" .. name .. \": User's group not permitted to use this partition \" ..\n"
      "                     \"(or no such partition)\")\n"
      "      return false\n"
      "    end\n"
      "  end\n"
      "  return true\n"
      "end\n"
      "function slurm_job_submit(job_desc, part_list, submit_uid)\n"
      "  touch()\n"
      "  if not allowed(job_desc, part_list) then return slurm.ESLURM_ACCESS_DENIED or slurm.ERROR end\n"
      "  return slurm.SUCCESS\n"
      "end\n"
      "function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)\n"
      "  touch()\n"
      "  if not allowed(job_desc, part_list) then return slurm.ESLURM_ACCESS_DENIED or slurm.ERROR end\n"
      "  return slurm.SUCCESS\n"
      "end\n",
      kStateSaveDir, kSubmitMarkerFile);
}

bool ClusterSetsDefaultMemory(const api::SlurmCluster& c) {
  return AdminSets(c, "DefMemPerCPU") || AdminSets(c, "DefMemPerNode");
}

std::vector<std::string> PartitionOptions(const api::NodeSet& ns, bool cluster_sets_default_memory) {
  std::vector<std::string> o = {std::string("Default=") + (ns.spec.partition.is_default ? "YES" : "NO"),
                                "MaxTime=" + ns.spec.partition.max_time, "State=" + ns.spec.partition.state};
  const auto& admin = ns.spec.partition.options;
  const bool partition_sets = std::any_of(admin.begin(), admin.end(), [](const auto& kv) {
    return LowerAscii(kv.first).rfind("defmemper", 0) == 0;  // DefMemPerCPU, DefMemPerNode, DefMemPerGPU
  });
  const auto& r = ns.spec.resources;
  if (!partition_sets && !cluster_sets_default_memory && r.cpus > 0 && r.memory_mib > 0) {
    o.push_back(fmt::format("DefMemPerCPU={}", std::max<int64_t>(1, r.memory_mib / r.cpus)));
  }
  for (const auto& [k, v] : ns.spec.partition.options) o.push_back(k + "=" + v);
  return o;
}

bool NeedsReconfigure(const std::string& old_conf, const std::string& new_conf) {
  auto strip = [](const std::string& conf) {
    std::vector<std::string> out;
    std::istringstream in(conf);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("NodeSet=", 0) == 0 || line.rfind("PartitionName=", 0) == 0 || line == "JobSubmitPlugins=lua") {
        continue;
      }
      // hpcplane's health check lines: a cluster made before them gets them without a
      // reconfigure, at slurmctld's and each worker's next start (the checks' thresholds live
      // in the slurm-health config map and apply at once).
      if (line == std::string("HealthCheckProgram=") + kHealthCheckProgram ||
          line.rfind("HealthCheckInterval=", 0) == 0 || line == "HealthCheckNodeState=ANY" ||
          line == std::string("Epilog=") + kHealthCheckProgram || line == std::string("Epilog=") + kNoOpEpilog) {
        continue;
      }
      // MpiDefault as hpcplane sets it (DefaultMpi): a cluster made when it was "none" gets it
      // at slurmctld's next start; a reconfigure with jobs running on 22.05 leaves their nodes
      // ALLOCATED (cluster_reconciler.cc).
      if (line == "MpiDefault=none" || line == "MpiDefault=pmix" || line == "MpiDefault=pmi2") continue;
      out.push_back(line);
    }
    return out;
  };
  return strip(old_conf) != strip(new_conf);
}

std::string TaskPrologScript() {
  return "#!/bin/sh\n"
         "# hpcplane TaskProlog: lines on stdout edit the task's environment.\n"
         "echo unset SLURM_JWT\n";
}

std::string RenderSlurmdbdConf(const api::SlurmCluster& c, const std::string& db_password, Auth auth) {
  std::ostringstream o;
  o << "# Rendered by hpcplane for cluster " << c.metadata.name << ". Holds the database password: 0600.\n"
    << AuthLines(auth) << "DbdHost=" << SlurmdbdHost(c) << "\n"
    << "DbdPort=" << kSlurmdbdPort << "\n"
    << "SlurmUser=slurm\n"
    << "PidFile=/tmp/slurmdbd.pid\n"  // slurmdbd runs as SlurmUser, which cannot write /run
    << "DebugLevel=info\n"
    << "StorageType=accounting_storage/mysql\n"
    << "StorageHost=" << DatabaseHost(c) << "\n"
    << "StoragePort=" << kMariaDbPort << "\n"
    << "StorageUser=slurm\n"
    << "StoragePass=" << db_password << "\n"
    << "StorageLoc=" << kAccountingDatabase << "\n";
  return o.str();
}

std::string DynamicNodeConf(const api::NodeSet& ns) {
  std::string features = ns.metadata.name;
  for (const auto& f : ns.spec.features) features += "," + f;
  std::string conf =
      fmt::format("CPUs={} Boards=1 SocketsPerBoard=1 CoresPerSocket={} ThreadsPerCore=1 RealMemory={} Feature={}",
                  ns.spec.resources.cpus, ns.spec.resources.cpus, ns.spec.resources.memory_mib, features);
  if (ns.spec.resources.gpus > 0) conf += fmt::format(" Gres=gpu:{}", ns.spec.resources.gpus);
  return conf;
}

}  // namespace hpc::slurm
