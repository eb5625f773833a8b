#include "operator/builders.h"

#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/codec.h"
#include "api/environments.h"
#include "common/subprocess.h"
#include "operator/workspace.h"
#include "slurm/config.h"
#include "slurm/health_check.h"

namespace hpc::op {
using runtime::Mount;
using runtime::MountSource;
using runtime::PodSpec;

std::string MungePodName(const api::SlurmCluster& c) { return c.metadata.name + "-munge"; }
std::string SackdPodName(const api::SlurmCluster& c) { return c.metadata.name + "-sackd"; }
slurm::Auth AuthOf(const BuildInputs& in) {
  return in.keep_munge ? slurm::Auth::kMunge : slurm::DefaultAuth(in.release);
}
bool UsesMunge(const BuildInputs& in) { return AuthOf(in) == slurm::Auth::kMunge; }
std::string ControllerPodName(const api::SlurmCluster& c) { return slurm::ControllerHost(c); }
std::string BackupControllerPodName(const api::SlurmCluster& c) { return slurm::BackupControllerHost(c); }
std::string RestApiPodName(const api::SlurmCluster& c) { return c.metadata.name + "-restapi"; }
std::string LoginPodName(const api::SlurmCluster& c) { return c.metadata.name + "-login"; }
std::string WorkerPodName(const api::NodeSet& ns, int ordinal) {
  return ns.metadata.name + "-" + std::to_string(ordinal);
}
int WorkerOrdinal(const api::NodeSet& ns, const std::string& pod) {
  const std::string prefix = ns.metadata.name + "-";
  if (pod.rfind(prefix, 0) != 0 || pod.size() == prefix.size()) return -1;
  std::string rest = pod.substr(prefix.size());
  for (char ch : rest) {
    if (!isdigit(static_cast<unsigned char>(ch))) return -1;
  }
  return rest.size() > 6 ? -1 : std::stoi(rest);
}
std::string DatasetVolumeName(const api::Dataset& d) { return "dataset-" + d.name; }
std::string DatasetGroupName(const std::string& dataset) { return "proj-" + dataset; }
std::string MariaDbPodName(const api::SlurmCluster& c) { return slurm::DatabaseHost(c); }
std::string SlurmdbdPodName(const api::SlurmCluster& c) { return slurm::SlurmdbdHost(c); }
std::string WorkspaceLoginPodName(const api::Workspace& w) { return w.metadata.name + "-login"; }
std::string WorkspaceTokenSecretName(const api::Workspace& w) { return w.metadata.name + "-token"; }

namespace {

// The main process of a pod that only hosts `exec` sessions (login pods). `sleep infinity` alone
// ignores SIGTERM as a container's PID 1 (the kernel drops signals PID 1 has no handler for), so
// Kubernetes waited out the whole grace period (30 s) before a stopped workspace's login pod went.
std::vector<std::string> IdleUntilStopped() {
  return {"/bin/sh", "-c", "trap 'exit 0' TERM INT; sleep infinity & wait"};
}

// The image pinned for the environment; one the inputs do not list goes by its name, which the
// runtime resolves (local: an environment built after the daemon started) or refuses (local: not
// built; Kubernetes: no image on this data plane): never silently another image. Without images
// at all pods run the runtime's own (the host's system).
std::string ImageFor(const BuildInputs& in, const std::string& environment) {
  if (in.images.empty()) return "";
  auto it = in.images.find(environment);
  return it == in.images.end() ? environment : it->second;
}

}  // namespace

std::optional<slurm::Release> ReleaseOfImage(const BuildInputs& in, const std::string& image) {
  if (image.empty()) return std::nullopt;
  std::string environment = image.substr(0, image.find('@'));
  for (const auto& [name, reference] : in.images) {
    if (reference == image) environment = name;
  }
  for (const std::string& key : {image, environment}) {
    if (auto it = in.environment_releases.find(key); it != in.environment_releases.end()) return it->second;
  }
  return std::nullopt;
}

namespace {

// Worker and login pods run the cluster's shared root when it has one (and an image to make it
// from); its daemons keep the plain image.
void UseSharedRoot(const api::SlurmCluster& c, bool writable, PodSpec* p) {
  if (!c.spec.shared_root || p->image.empty()) return;
  p->shared_root = kVolumeSharedRoot;
  p->shared_root_writable = writable;
}

std::map<std::string, std::string> Labels(const api::SlurmCluster& c, const std::string& component) {
  return {{kLabelCluster, c.metadata.name}, {kLabelComponent, component}};
}

// /etc/passwd and /etc/group from slurm-users: every user resolves the same in every pod.
std::vector<Mount> UserMounts(const BuildInputs& in, std::vector<Mount> more = {}) {
  std::vector<Mount> m;
  if (in.users_from_directory) {
    m = {{MountSource::kConfigMap, kConfigMapUsers, kUsersDir, "", true}};
  } else {
    m = {{MountSource::kConfigMap, kConfigMapUsers, "/etc/passwd", "passwd", true},
         {MountSource::kConfigMap, kConfigMapUsers, "/etc/group", "group", true}};
  }
  m.insert(m.end(), more.begin(), more.end());
  return m;
}

const std::string& MungeSocket() {
  static const std::string socket = std::string(slurm::kMungeSocketDir) + "/munge.socket.2";
  return socket;
}

std::vector<std::string> MungedCommand() {
  return {"munged",
          "--foreground",
          "--key-file=/run/secrets/munge/munge.key",
          "--socket=" + MungeSocket(),
          "--pid-file=/run/munge-state/munged.pid",
          "--seed-file=/run/munge-state/munged.seed",
          "--log-file=/run/munge-state/munged.log",
          "--force"};
}

// A bash command that runs `exec_line` once host:port accepts a connection, trying every 50 ms;
// `give_up`, a shell condition evaluated before each wait, ends the waiting early.
std::vector<std::string> ExecOnceConnects(const std::string& host, int port, const std::string& give_up,
                                          const std::string& exec_line) {
  return {"/bin/bash", "-c",
          fmt::format("until (exec 3<>/dev/tcp/{}/{}) 2>/dev/null; do\n"
                      "{}"
                      "  sleep 0.05\n"
                      "done\n"
                      "{}",
                      host, port, give_up.empty() ? "" : "  " + give_up + " && break\n", exec_line)};
}

std::vector<std::string> MungeProbeCommand() {
  return {"munge", "--no-input", "--socket=" + MungeSocket(), "--output=/dev/null"};
}

// Where a Slurm pod finds munged's socket: the munge pod's shared volume, or (sidecars) the
// pod's own directory that its munged sidecar serves.
Mount MungeSocketMount(const BuildInputs& in) {
  if (in.auth_sidecars) return {MountSource::kEmptyDir, kVolumeMungeSocket, slurm::kMungeSocketDir, "", false};
  return {MountSource::kVolume, kVolumeMungeSocket, slurm::kMungeSocketDir, "", false};
}

// auth/slurm: where the pod of a client finds sackd's socket (Slurm's clients look in
// /run/slurm first): the sackd pod's shared volume, or (sidecars) the pod's own sackd's.
Mount SackSocketMount(const BuildInputs& in) {
  if (in.auth_sidecars) return {MountSource::kEmptyDir, kVolumeSackSocket, slurm::kSackSocketDir, "", false};
  return {MountSource::kVolume, kVolumeSackSocket, slurm::kSackSocketDir, "", false};
}

Mount SlurmKeyMount() { return {MountSource::kSecret, kSecretSlurmKey, slurm::kSlurmKeyDir, "", true}; }

const std::string& SackSocket() {
  static const std::string socket = std::string(slurm::kSackSocketDir) + "/sack.socket";
  return socket;
}

// sackd in the foreground: it daemonizes unless told -D (26.05). Before -D existed (24.11) only
// --systemd keeps it there, and that sackd exits without a NOTIFY_SOCKET: it gets a path nobody
// listens on, logs once that it could not notify, and serves.
std::vector<std::string> SackdCommand(const BuildInputs& in) {
  std::vector<std::string> argv = {"env", std::string("SLURM_SACK_KEY=") + slurm::kSlurmKeyPath};
  if (in.release.AtLeast(25, 5)) {
    argv.insert(argv.end(), {"sackd", "-D"});
  } else {
    argv.insert(argv.end(),
                {std::string("NOTIFY_SOCKET=") + slurm::kSackSocketDir + "/no-systemd", "sackd", "--systemd"});
  }
  return argv;
}

// sackd in the foreground, logging to stderr; it reads slurm.conf where clients do and serves
// /run/slurm/sack.socket. Ready once the socket is there (it binds it before it serves).
runtime::Sidecar SackdProcess(const BuildInputs& in) {
  runtime::Sidecar sackd;
  sackd.name = "sackd";
  sackd.command = SackdCommand(in);
  sackd.uid = in.slurm.uid;
  sackd.gid = in.slurm.gid;
  sackd.mounts = UserMounts(in, {
                                    {MountSource::kConfigMap, kConfigMapSlurm, slurm::kConfigDir, "", true},
                                    SlurmKeyMount(),
                                    SackSocketMount(in),
                                });
  sackd.readiness.command = {"test", "-S", SackSocket()};
  return sackd;
}

// The pod's own authentication daemon, when each pod runs one (Kubernetes): munged in every
// Slurm pod before 23.11; with auth/slurm sackd in the pods of clients only (Slurm's daemons
// hold the key and serve their own socket).
void AddAuthSidecar(const BuildInputs& in, bool client, PodSpec* p) {
  if (!in.auth_sidecars) return;
  if (!UsesMunge(in)) {
    if (client) p->sidecars.push_back(SackdProcess(in));
    return;
  }
  runtime::Sidecar munged;
  munged.name = "munged";
  munged.command = MungedCommand();
  munged.uid = in.munge.uid;
  munged.gid = in.munge.gid;
  munged.mounts = UserMounts(in, {
                                     {MountSource::kSecret, kSecretMunge, "/run/secrets/munge", "", true},
                                     MungeSocketMount(in),
                                     {MountSource::kEmptyDir, "munge-state", "/run/munge-state", "", false},
                                 });
  munged.readiness.command = MungeProbeCommand();
  p->sidecars.push_back(std::move(munged));
}

// How a Slurm pod authenticates: munged's socket (before 23.11); with auth/slurm, Slurm's
// daemons hold the key (its path in SLURM_SACK_KEY, which configless daemons read too) and
// clients reach sackd's socket.
void AddAuth(const BuildInputs& in, bool client, PodSpec* p) {
  if (UsesMunge(in)) {
    p->mounts.push_back(MungeSocketMount(in));
  } else if (client) {
    p->mounts.push_back(SackSocketMount(in));
  } else {
    p->mounts.push_back(SlurmKeyMount());
    p->env["SLURM_SACK_KEY"] = slurm::kSlurmKeyPath;
  }
  AddAuthSidecar(in, client, p);
}

// What every Slurm pod mounts: users and config (and, with AddAuth, how it authenticates).
std::vector<Mount> CommonMounts(const BuildInputs& in) {
  return UserMounts(in, {
                            {MountSource::kConfigMap, kConfigMapSlurm, slurm::kConfigDir, "", true},
                        });
}

void AddDatasets(const std::vector<api::Dataset>& datasets, PodSpec* p) {
  for (const auto& d : datasets) {
    if (d.host_path.empty()) {
      p->mounts.push_back({MountSource::kVolume, DatasetVolumeName(d), d.mount_path, "", false});
    } else {
      p->mounts.push_back({MountSource::kHostPath, d.host_path, d.mount_path, "", false});
    }
  }
}

}  // namespace

runtime::ConfigMap BuildSlurmConfigMap(const api::SlurmCluster& c, const std::vector<api::NodeSet>& nodesets,
                                       const BuildInputs& in) {
  const slurm::JobCgroups cgroups = in.job_cgroups;
  // Every daemon reads these files: written for the oldest one still running.
  const slurm::Release read_by = in.config_release.value_or(in.release);
  runtime::ConfigMap cm{kConfigMapSlurm,
                        {{"slurm.conf", slurm::RenderSlurmConf(c, nodesets, cgroups, in.release, AuthOf(in), read_by)},
                         {"job_submit.lua", slurm::JobSubmitLuaScript()}}};
  const bool any_gpu =
      std::any_of(nodesets.begin(), nodesets.end(), [](const auto& n) { return n.spec.resources.gpus > 0; });
  if (cgroups != slurm::JobCgroups::kNone) cm.data["cgroup.conf"] = slurm::RenderCgroupConf(cgroups, any_gpu, read_by);
  if (const std::string gres = slurm::RenderGresConf(any_gpu, read_by); !gres.empty()) cm.data["gres.conf"] = gres;
  return cm;
}

runtime::ConfigMap BuildScriptsConfigMap() {
  runtime::ConfigMap cm{kConfigMapScripts,
                        {{"task_prolog", slurm::TaskPrologScript()}, {"health_check", slurm::HealthCheckScript()}}};
  cm.default_mode = 0755;
  return cm;
}

runtime::ConfigMap BuildHealthConfigMap(const api::SlurmCluster& c, const std::vector<api::NodeSet>& nodesets,
                                        const BuildInputs& in) {
  runtime::ConfigMap cm;
  cm.name = kConfigMapHealth;
  cm.default_mode = 0755;  // the admins' scripts run from here
  for (const auto& ns : nodesets) {
    std::vector<api::Dataset> datasets = c.spec.datasets;
    datasets.insert(datasets.end(), ns.spec.datasets.begin(), ns.spec.datasets.end());
    cm.data[ns.metadata.name + ".conf"] =
        slurm::HealthCheckConfig(c.spec.health_checks, datasets, UsesMunge(in), ns.spec.resources.gpus);
    for (const auto& [check, script] : ns.spec.health_check_scripts) {
      cm.data[slurm::HealthCheckScriptKey(ns.metadata.name, check)] = script;
    }
  }
  return cm;
}

runtime::ConfigMap BuildUsersConfigMap(const api::SlurmCluster& c, const std::vector<api::ClusterUser>& extra_users,
                                       const BuildInputs& in, const std::vector<DatasetGroup>& dataset_groups) {
  std::ostringstream passwd, group;
  passwd << in.host_passwd;
  group << in.host_group;
  if (!in.host_passwd.empty() && in.host_passwd.back() != '\n') passwd << "\n";
  if (!in.host_group.empty() && in.host_group.back() != '\n') group << "\n";
  std::vector<api::ClusterUser> all = c.spec.users;
  std::set<std::string> seen;
  for (const auto& u : all) seen.insert(u.name);
  for (const auto& u : extra_users) {
    if (seen.insert(u.name).second) all.push_back(u);
  }
  nlohmann::json users = nlohmann::json::array();
  std::string admins;
  for (const auto& u : all) {
    passwd << u.name << ":x:" << u.uid << ":" << u.gid << ":" << u.name << ":/tmp:/bin/bash\n";
    // A private group with the user as its only member (listed too: Slurm's AllowGroups reads members).
    group << u.name << ":x:" << u.gid << ":" << u.name << "\n";
    users.push_back({{"name", u.name}, {"uid", u.uid}, {"gid", u.gid}, {"admin", u.admin}});
    if (u.admin) admins += (admins.empty() ? "" : ",") + u.name;
  }
  group << kAdminGroup << ":x:" << kAdminGroupGid << ":" << admins << "\n";
  for (const auto& g : dataset_groups) {
    std::set<std::string> members(g.members.begin(), g.members.end());
    for (const auto& u : all) {
      if (u.admin) members.insert(u.name);
    }
    std::string list;
    for (const auto& m : members) list += (list.empty() ? "" : ",") + m;
    group << g.name << ":x:" << g.gid << ":" << list << "\n";
  }
  return {kConfigMapUsers, {{"passwd", passwd.str()}, {"group", group.str()}, {"users.json", users.dump(2) + "\n"}}};
}

PodSpec BuildMungePod(const api::SlurmCluster& c, const BuildInputs& in) {
  PodSpec p;
  p.image = ImageFor(in, api::ClusterEnvironment(c));
  p.name = MungePodName(c);
  p.labels = Labels(c, "munge");
  p.uid = in.munge.uid;
  p.gid = in.munge.gid;
  p.command = MungedCommand();
  p.mounts = UserMounts(in, {
                                {MountSource::kSecret, kSecretMunge, "/run/secrets/munge", "", true},
                                MungeSocketMount(in),
                                {MountSource::kEmptyDir, "munge-state", "/run/munge-state", "", false},
                            });
  p.readiness.command = MungeProbeCommand();
  p.liveness.command = p.readiness.command;
  p.liveness.period_seconds = 15;
  return p;
}

PodSpec BuildSackdPod(const api::SlurmCluster& c, const BuildInputs& in) {
  runtime::Sidecar sackd = SackdProcess(in);
  PodSpec p;
  p.image = ImageFor(in, api::ClusterEnvironment(c));
  p.name = SackdPodName(c);
  p.labels = Labels(c, "sackd");
  p.uid = sackd.uid;
  p.gid = sackd.gid;
  p.command = sackd.command;
  p.mounts = sackd.mounts;
  p.readiness = sackd.readiness;
  return p;
}

bool PushesControllerConfig(const BuildInputs& in) { return in.controller_config_pushed && !UsesMunge(in); }

std::string ControllerSlurmConf(const BuildInputs& in) {
  return std::string(PushesControllerConfig(in) ? kControllerConfigDir : slurm::kConfigDir) + "/slurm.conf";
}

namespace {

// Runs `command` once kControllerConfigDir holds the configuration: the operator's copy when
// there is one (a container restarted in its pod keeps the directory; the kubelet may not have
// refreshed the mount yet), else the mounted config map's.
std::vector<std::string> WithPushedConfig(const std::vector<std::string>& command) {
  std::vector<std::string> argv = {"/bin/sh", "-ec",
                                   fmt::format("live={0}\n"
                                               "[ -e \"$live/slurm.conf\" ] || cp -L {1}/* \"$live\"/\n"
                                               "exec \"$@\"\n",
                                               kControllerConfigDir, slurm::kConfigDir),
                                   "slurmctld"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

}  // namespace

PodSpec BuildControllerPod(const api::SlurmCluster& c, const BuildInputs& in) {
  PodSpec p;
  p.image = ImageFor(in, api::ClusterEnvironment(c));
  p.name = ControllerPodName(c);
  p.labels = Labels(c, "controller");
  // Started as root; slurmctld drops to SlurmUser itself. From 23.11 on it exits at start when
  // one of its state files is missing (a kill -9 before it first wrote assoc_usage); -i keeps
  // 22.05's behaviour: it recovers what the files it has hold.
  p.command = {"slurmctld", "-D"};
  if (in.release.AtLeast(23, 11)) p.command.push_back("-i");
  if (c.spec.accounting.enabled) {
    // slurmctld starts once slurmdbd answers, so that its first connection to it succeeds.
    // Without saved state it takes its TRES list from slurmdbd and exits when it cannot (first
    // boot), so it waits as long as it takes. Later starts could run from the saved state: they
    // wait at most 5 s (slurmdbd answers well within a second of MariaDB), so a broken database
    // never keeps slurmctld down.
    const std::string saved_state_and_5s =
        fmt::format("[ -e {}/last_tres ] && [ $((tries += 1)) -gt 100 ]", slurm::kStateSaveDir);
    p.command = ExecOnceConnects(slurm::SlurmdbdHost(c), slurm::kSlurmdbdPort, saved_state_and_5s,
                                 "exec " + JoinArgs(p.command));
  }
  p.mounts = CommonMounts(in);
  if (PushesControllerConfig(in)) {
    p.command = WithPushedConfig(p.command);
    // The daemon and every command run in the pod read the operator's copy.
    p.env["SLURM_CONF"] = ControllerSlurmConf(in);
    p.mounts.push_back({MountSource::kEmptyDir, "slurm-config-live", kControllerConfigDir, "", false});
  }
  AddAuth(in, /*client=*/false, &p);
  p.mounts.push_back({MountSource::kSecret, kSecretJwt, "/run/secrets/jwt", "", true});
  p.mounts.push_back({MountSource::kVolume, kVolumeControllerState, slurm::kStateSaveDir, "", false});
  p.readiness.tcp_port = slurm::kSlurmctldPort;
  p.liveness.period_seconds = 15;
  if (in.release.ControllerServesHttp()) {
    // slurmctld's own probes: ready once it has recovered its state and schedules, alive while
    // it answers; no process started in the pod for either.
    p.readiness.http_path = "/readyz";
    p.liveness.http_port = slurm::kSlurmctldPort;
    p.liveness.http_path = "/livez";
  } else if (c.spec.backup_controller) {
    // `scontrol ping` succeeds while any controller answers: this pod's own line must be UP.
    p.liveness.command = {"/bin/sh", "-c", "scontrol ping | grep -q \"at $(hostname) is UP\""};
  } else {
    // A hung slurmctld still accepts connections; `scontrol ping` needs it to answer an RPC.
    p.liveness.command = {"scontrol", "ping"};
  }
  // The controllers slurmctld reads at its start only: a backup turned on or off starts it again.
  if (c.spec.backup_controller) p.env["HPCPLANE_CONTROLLERS"] = slurm::ConfServers(c);
  return p;
}

PodSpec BuildBackupControllerPod(const api::SlurmCluster& c, const BuildInputs& in) {
  // It reads the mounted configuration: the operator writes its own copy into the primary's pod
  // only. A backup reads slurm.conf as it takes over, and a kubelet's refresh (within a minute)
  // is soon enough for one standing by.
  BuildInputs mounted = in;
  mounted.controller_config_pushed = false;
  PodSpec p = BuildControllerPod(c, mounted);
  p.name = BackupControllerPodName(c);
  // The primary's label too: every flow to and from slurmctld (network_flows.cc) is the backup's.
  p.labels[kLabelControllerRole] = "backup";
  // Ready once it listens: standing by, it answers Slurm's pings and no HTTP (25.11's /readyz and
  // /livez are a serving controller's), and `scontrol ping` asks every controller. Which one
  // serves is Slurm's heartbeat's to say (slurm/controllers.h); only the backup's death is
  // noticed, and the primary takes back over as it starts.
  p.readiness = {};
  p.readiness.tcp_port = slurm::kSlurmctldPort;
  p.liveness = {};
  // Kubernetes: on another machine than the primary where there is one (a machine lost takes
  // one controller, not both).
  p.placement.affinity = {
      {"podAntiAffinity",
       {{"preferredDuringSchedulingIgnoredDuringExecution",
         nlohmann::json::array({{{"weight", 100},
                                 {"podAffinityTerm",
                                  {{"topologyKey", "kubernetes.io/hostname"},
                                   {"labelSelector", {{"matchLabels", Labels(c, "controller")}}}}}}})}}}};
  return p;
}

PodSpec BuildRestApiPod(const api::SlurmCluster& c, const BuildInputs& in) {
  PodSpec p;
  p.image = ImageFor(in, api::ClusterEnvironment(c));
  p.name = RestApiPodName(c);
  p.labels = Labels(c, "restapi");
  // slurmrestd refuses to run as root or SlurmUser.
  p.uid = in.nobody.uid;
  p.gid = in.nobody.gid;
  // SLURM_JWT=daemon makes slurmrestd pass each request's token on to slurmctld (auth/jwt)
  // instead of authenticating everything as its own user with munge.
  // Errors only: at info it logs two lines per request, and the operator asks every second.
  p.env = {{"SLURM_JWT", "daemon"}, {"SLURMRESTD_DEBUG", "2"}};
  if (!in.pods_may_unshare) p.env["SLURMRESTD_SECURITY"] = "disable_unshare_sysv,disable_unshare_files";
  // 23.11 on: plugins by component, every data parser loaded; before, one versioned plugin.
  p.command = {"slurmrestd",
               "-a",
               "rest_auth/jwt",
               "-s",
               in.release.RestPluginsByComponent() ? "openapi/slurmctld" : "openapi/v0.0.38",
               "0.0.0.0:" + std::to_string(c.spec.rest_port)};
  p.mounts = CommonMounts(in);
  AddAuth(in, /*client=*/true, &p);
  p.readiness.tcp_port = c.spec.rest_port;
  // A stopped or hung slurmrestd still accepts connections; an HTTP request must be answered.
  p.liveness.http_port = c.spec.rest_port;
  // Restarting it is harmless (it keeps no state) and bounds what its leak can take.
  p.resources.limits.memory_mib = c.spec.rest_memory_limit_mib;
  return p;
}

PodSpec BuildLoginPod(const api::SlurmCluster& c, const BuildInputs& in) {
  PodSpec p;
  p.image = ImageFor(in, api::ClusterEnvironment(c));
  // The admin installs software into the shared root here (as root); workers see it at once.
  UseSharedRoot(c, /*writable=*/true, &p);
  p.name = LoginPodName(c);
  p.labels = Labels(c, "login");
  // The login pod only hosts users' `exec` sessions; its own process holds no privilege, unless
  // sessions can only leave the container's user, not enter any (see exec_as_container_user).
  p.uid = in.exec_as_container_user ? 0 : in.nobody.uid;
  p.gid = in.exec_as_container_user ? 0 : in.nobody.gid;
  p.command = IdleUntilStopped();
  p.mounts = CommonMounts(in);
  AddAuth(in, /*client=*/true, &p);
  AddDatasets(c.spec.datasets, &p);
  return p;
}

std::string WorkerImage(const api::SlurmCluster& c, const api::NodeSet& ns, const BuildInputs& in) {
  return ImageFor(in, api::WorkerEnvironment(ns, c));
}

PodSpec BuildWorkerPod(const api::SlurmCluster& c, const api::NodeSet& ns, int ordinal, const BuildInputs& in) {
  PodSpec p;
  p.image = WorkerImage(c, ns, in);
  if (api::WorkerEnvironment(ns, c) == api::ClusterEnvironment(c)) UseSharedRoot(c, /*writable=*/false, &p);
  p.name = WorkerPodName(ns, ordinal);
  p.labels = Labels(c, "worker");
  p.labels[kLabelNodeSet] = ns.metadata.name;
  // slurmd runs as root: it starts each job step as the job's user. Configless, it fetches
  // slurm.conf and cgroup.conf from slurmctld as it starts and takes every reconfigure from it
  // at once (no ConfigMap to wait for; its jobs' commands find the copy through SLURM_CONF).
  if (!UsesMunge(in)) {
    p.command = {"slurmd", "-D", "-Z", "--conf-server", slurm::ConfServers(c), "--conf", slurm::DynamicNodeConf(ns)};
    p.mounts = UserMounts(in);
  } else {
    p.command = {"slurmd", "-D", "-Z", "--conf", slurm::DynamicNodeConf(ns)};
    p.mounts = CommonMounts(in);
  }
  AddAuth(in, /*client=*/false, &p);
  p.mounts.push_back({MountSource::kEmptyDir, "slurmd-spool", slurm::kSlurmdSpoolDir, "", false});
  p.mounts.push_back({MountSource::kConfigMap, kConfigMapScripts, slurm::kScriptsDir, "", true});
  p.mounts.push_back({MountSource::kConfigMap, kConfigMapHealth, slurm::kHealthConfigDir, "", true});
  AddDatasets(c.spec.datasets, &p);
  AddDatasets(ns.spec.datasets, &p);
  p.readiness.tcp_port = slurm::kSlurmdPort;
  p.tmp_mib = ns.spec.resources.tmp_mib;
  // slurmd creates a cgroup per job below the pod's own (RenderCgroupConf).
  p.delegate_cgroups = in.job_cgroups != slurm::JobCgroups::kNone;
  // The worker's shape, as slurmd advertises it (DynamicNodeConf): what the pod must be placed
  // with. Devices cannot be overcommitted, so GPUs are a limit too (as Kubernetes requires).
  p.resources.requests = {ns.spec.resources.cpus, ns.spec.resources.memory_mib, ns.spec.resources.gpus};
  p.resources.limits.gpus = ns.spec.resources.gpus;
  // Where the workers may run (Kubernetes): the nodes of the hardware tier, their taints.
  p.placement.node_selector = ns.spec.pod.node_selector;
  for (const auto& t : ns.spec.pod.tolerations) {
    p.placement.tolerations.push_back({t.key, t.op, t.value, t.effect, t.seconds ? *t.seconds : -1});
  }
  p.placement.priority_class = ns.spec.pod.priority_class_name;
  p.placement.image_pull_secrets = ns.spec.pod.image_pull_secrets;
  p.placement.affinity = api::AffinityJson(ns.spec.pod);
  p.placement.security_context = api::PodSecurityContextJson(ns.spec.pod);
  return p;
}

PodSpec BuildMariaDbPod(const api::SlurmCluster& c, const BuildInputs& in) {
  PodSpec p;
  p.image = ImageFor(in, api::ClusterEnvironment(c));
  p.name = MariaDbPodName(c);
  p.labels = Labels(c, "mariadb");
  p.uid = in.mysql.uid;
  p.gid = in.mysql.gid;
  // The data directory is initialised once; the marker makes an interrupted first start retry
  // from scratch instead of serving a half-written system schema. It is a directory of the
  // volume, not its root: a file system's root holds what MariaDB must not take for a database
  // and its user cannot delete (ext4's lost+found, root's). A volume initialised at its root by
  // an earlier version keeps its data there.
  // Slurm's settings: its lock wait, and (MariaDB 11.6 on, "loose" where older ones lack it) no
  // snapshot isolation, with which slurmdbd exits on a write conflict.
  const std::string opts =
      "--no-defaults --datadir=\"$data\" --innodb-buffer-pool-size=32M --innodb-log-file-size=16M "
      "--innodb-lock-wait-timeout=900 --loose-innodb-snapshot-isolation=OFF";
  p.command = {
      "/bin/sh", "-ec",
      "data=/var/lib/mysql/data\n"
      "if [ -e /var/lib/mysql/.hpcplane-initialized ]; then\n"
      "  data=/var/lib/mysql\n"
      "elif [ ! -e \"$data/.hpcplane-initialized\" ]; then\n"
      "  rm -rf \"$data\"\n"
      "  mkdir -m 0700 \"$data\"\n"
      "  mariadb-install-db " +
          opts +
          " --auth-root-authentication-method=socket --skip-test-db >/dev/null\n"
          "  touch \"$data/.hpcplane-initialized\"\n"
          "fi\n"
          "exec mariadbd " +
          opts + " --socket=/tmp/mysqld.sock --pid-file=/tmp/mysqld.pid --port=" + std::to_string(slurm::kMariaDbPort) +
          " --bind-address=0.0.0.0 --skip-name-resolve --init-file=/run/secrets/db/init.sql"};
  p.mounts = UserMounts(in, {
                                {MountSource::kSecret, kSecretDatabase, "/run/secrets/db", "", true},
                                {MountSource::kVolume, kVolumeDatabase, "/var/lib/mysql", "", false},
                            });
  p.readiness.tcp_port = slurm::kMariaDbPort;
  // A hung server still accepts connections; `ping` needs it to answer (and exits 0 even when
  // refused access, so only a dead or hung server fails it).
  p.liveness.command = {"mariadb-admin", "--socket=/tmp/mysqld.sock", "--connect-timeout=4", "ping"};
  // Less often than the scheduling daemons: a hung database delays history, not jobs
  // (slurmctld queues the records), and every probe is a process started in the pod.
  p.liveness.period_seconds = 30;
  return p;
}

std::string DatabaseInitSql(const std::string& password) {
  return "CREATE USER IF NOT EXISTS 'slurm'@'%' IDENTIFIED BY '" + password + "';\n" +
         "ALTER USER 'slurm'@'%' IDENTIFIED BY '" + password + "';\n" + "GRANT ALL PRIVILEGES ON " +
         slurm::kAccountingDatabase + ".* TO 'slurm'@'%';\n";
}

PodSpec BuildSlurmdbdPod(const api::SlurmCluster& c, const BuildInputs& in) {
  PodSpec p;
  p.image = ImageFor(in, api::ClusterEnvironment(c));
  p.name = SlurmdbdPodName(c);
  p.labels = Labels(c, "slurmdbd");
  // slurmdbd.conf must be owned by SlurmUser and 0600: the pod runs as SlurmUser from the start.
  p.uid = in.slurm.uid;
  p.gid = in.slurm.gid;
  p.env = {{"SLURM_CONF", std::string(slurm::kSlurmdbdConfigDir) + "/slurm.conf"}};
  // slurmdbd exits or sleeps 5 s when it cannot reach its database, so it starts once MariaDB
  // answers. Its pod starts beside MariaDB's all the same: its name must resolve from the
  // start, because Debian's slurmctld sleeps a second after each failed lookup of it (ten in a
  // row per connection attempt), where a refused connection costs nothing.
  p.command = ExecOnceConnects(slurm::DatabaseHost(c), slurm::kMariaDbPort, "", "exec slurmdbd -D");
  p.mounts = UserMounts(in);
  if (UsesMunge(in)) {
    p.mounts.push_back(MungeSocketMount(in));
  } else {
    // slurmdbd serves its clients' socket in /run/slurmdbd, which SlurmUser cannot create.
    p.mounts.push_back(SlurmKeyMount());
    p.mounts.push_back({MountSource::kEmptyDir, "slurmdbd-run", slurm::kSlurmdbdRunDir, "", false});
    p.env["SLURM_SACK_KEY"] = slurm::kSlurmKeyPath;
  }
  p.mounts.insert(p.mounts.end(), {
                                      {MountSource::kSecret, kSecretJwt, "/run/secrets/jwt", "", true},
                                      {MountSource::kSecret, kSecretSlurmdbd, slurm::kSlurmdbdConfigDir, "", true},
                                      // For the liveness probe's sacctmgr only (slurmdbd itself reads the secret).
                                      {MountSource::kConfigMap, kConfigMapSlurm, slurm::kConfigDir, "", true},
                                  });
  p.readiness.tcp_port = slurm::kSlurmdbdPort;
  // A hung slurmdbd still accepts connections; a query must be answered.
  p.liveness.command = {"env",      std::string("SLURM_CONF=") + slurm::kConfigDir + "/slurm.conf",
                        "sacctmgr", "-n",
                        "-P",       "list",
                        "cluster",  "format=cluster"};
  p.liveness.period_seconds = 30;  // as MariaDB's: a hung slurmdbd delays history, not jobs
  AddAuthSidecar(in, /*client=*/false, &p);
  return p;
}

runtime::ConfigMap BuildWorkspaceToolsConfigMap() {
  runtime::ConfigMap cm;
  cm.name = kConfigMapWorkspaceTools;
  cm.default_mode = 0755;
  for (const char* cmd : {"sbatch", "squeue", "scancel", "sacct", "sinfo", "scontrol", "sacctmgr", "sprio", "sshare",
                          "sstat", "sreport", "sdiag", "strigger"}) {
    cm.data[cmd] = fmt::format(
        "#!/bin/sh\n"
        "# hpcplane: authenticate with this workspace's token, read afresh on every call.\n"
        "SLURM_JWT=$(cat {}/token) || exit 1\n"
        "export SLURM_JWT\n"
        "exec /usr/bin/{} \"$@\"\n",
        kTokenDir, cmd);
  }
  return cm;
}

std::map<std::string, std::string> WorkspaceShellEnv(const api::Workspace& w) {
  std::string home = w.spec.datasets.empty() ? "/tmp" : "/datasets/" + w.spec.datasets.front();
  return {{"SLURM_CONF", std::string(slurm::kConfigDir) + "/slurm.conf"},
          {"PATH", std::string(kWorkspaceToolsDir) + ":/usr/local/bin:/usr/bin:/bin"},
          {"USER", w.spec.user.name},
          {"LOGNAME", w.spec.user.name},
          {"HOME", "/tmp"},
          {"HPCPLANE_WORKSPACE", w.metadata.name},
          {"SLURM_PARTITION", w.metadata.name},
          {"SBATCH_PARTITION", w.metadata.name},
          {"SALLOC_PARTITION", w.metadata.name},
          {"HPCPLANE_DATASET", home}};
}

PodSpec BuildWorkspaceLoginPod(const api::SlurmCluster& c, const api::Workspace& w, const BuildInputs& in) {
  PodSpec p;
  // The project's workspace environment when it names one; the shared root is a copy of the
  // cluster's environment, so only a login pod of that environment runs it.
  p.image = ImageFor(in, api::WorkspaceEnvironment(w, c));
  if (api::WorkspaceEnvironment(w, c) == api::ClusterEnvironment(c)) UseSharedRoot(c, /*writable=*/false, &p);
  p.name = WorkspaceLoginPodName(w);
  p.labels = Labels(c, "workspace-login");
  p.labels[kLabelWorkspace] = w.metadata.name;
  p.uid = w.spec.user.uid;
  p.gid = w.spec.user.gid;
  // Its datasets' groups, where commands run as the pod's user with its groups: they may enter
  // the datasets' directories (2770, the dataset's group).
  if (in.exec_as_container_user) {
    for (const auto& [dataset, gid] : w.spec.dataset_gids) p.supplemental_groups.push_back(gid);
  }
  // The shell's environment is the pod's too: a session opened without hpcplane (kubectl exec
  // on Kubernetes) has the workspace's partition, Slurm's config and the token wrappers.
  p.env = WorkspaceShellEnv(w);
  p.command = IdleUntilStopped();
  p.mounts = CommonMounts(in);
  AddAuth(in, /*client=*/true, &p);
  p.mounts.push_back({MountSource::kSecret, WorkspaceTokenSecretName(w), kTokenDir, "", true});
  p.mounts.push_back({MountSource::kConfigMap, kConfigMapWorkspaceTools, kWorkspaceToolsDir, "", true});
  AddDatasets(c.spec.datasets, &p);
  std::vector<api::Dataset> project;
  for (const auto& d : w.spec.datasets) project.push_back(WorkspaceDataset(w, d));
  AddDatasets(project, &p);
  return p;
}

}  // namespace hpc::op
