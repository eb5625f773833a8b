#include "operator/builders.h"

#include <sstream>

#include <nlohmann/json.hpp>

#include "slurm/config.h"

namespace hpc::op {
using runtime::Mount;
using runtime::MountSource;
using runtime::PodSpec;

std::string MungePodName(const api::SlurmCluster& c) { return c.metadata.name + "-munge"; }
std::string ControllerPodName(const api::SlurmCluster& c) { return slurm::ControllerHost(c); }
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

namespace {

std::map<std::string, std::string> Labels(const api::SlurmCluster& c, const std::string& component) {
  return {{kLabelCluster, c.metadata.name}, {kLabelComponent, component}};
}

// What every Slurm pod mounts: users, config, and the munge socket.
std::vector<Mount> CommonMounts() {
  return {
      {MountSource::kConfigMap, kConfigMapUsers, "/etc/passwd", "passwd", true},
      {MountSource::kConfigMap, kConfigMapUsers, "/etc/group", "group", true},
      {MountSource::kConfigMap, kConfigMapSlurm, slurm::kConfigDir, "", true},
      {MountSource::kVolume, kVolumeMungeSocket, slurm::kMungeSocketDir, "", false},
  };
}

void AddDatasets(const api::SlurmCluster& c, PodSpec* p) {
  for (const auto& d : c.spec.datasets) {
    if (d.host_path.empty()) {
      p->mounts.push_back({MountSource::kVolume, DatasetVolumeName(d), d.mount_path, "", false});
    } else {
      p->mounts.push_back({MountSource::kHostPath, d.host_path, d.mount_path, "", false});
    }
  }
}

}  // namespace

runtime::ConfigMap BuildSlurmConfigMap(const api::SlurmCluster& c, const std::vector<api::NodeSet>& nodesets) {
  return {kConfigMapSlurm, {{"slurm.conf", slurm::RenderSlurmConf(c, nodesets)}}};
}

runtime::ConfigMap BuildUsersConfigMap(const api::SlurmCluster& c, const BuildInputs& in) {
  std::ostringstream passwd, group;
  passwd << in.host_passwd;
  group << in.host_group;
  if (!in.host_passwd.empty() && in.host_passwd.back() != '\n') passwd << "\n";
  if (!in.host_group.empty() && in.host_group.back() != '\n') group << "\n";
  nlohmann::json users = nlohmann::json::array();
  for (const auto& u : c.spec.users) {
    passwd << u.name << ":x:" << u.uid << ":" << u.gid << ":" << u.name << ":/tmp:/bin/bash\n";
    group << u.name << ":x:" << u.gid << ":\n";
    users.push_back({{"name", u.name}, {"uid", u.uid}, {"gid", u.gid}, {"admin", u.admin}});
  }
  return {kConfigMapUsers, {{"passwd", passwd.str()}, {"group", group.str()}, {"users.json", users.dump(2) + "\n"}}};
}

PodSpec BuildMungePod(const api::SlurmCluster& c, const BuildInputs& in) {
  PodSpec p;
  p.name = MungePodName(c);
  p.labels = Labels(c, "munge");
  p.uid = in.munge.uid;
  p.gid = in.munge.gid;
  const std::string socket = std::string(slurm::kMungeSocketDir) + "/munge.socket.2";
  p.command = {"munged", "--foreground", "--key-file=/run/secrets/munge/munge.key", "--socket=" + socket,
               "--pid-file=/run/munge-state/munged.pid", "--seed-file=/run/munge-state/munged.seed",
               "--log-file=/run/munge-state/munged.log", "--force"};
  p.mounts = {
      {MountSource::kConfigMap, kConfigMapUsers, "/etc/passwd", "passwd", true},
      {MountSource::kConfigMap, kConfigMapUsers, "/etc/group", "group", true},
      {MountSource::kSecret, kSecretMunge, "/run/secrets/munge", "", true},
      {MountSource::kVolume, kVolumeMungeSocket, slurm::kMungeSocketDir, "", false},
      {MountSource::kEmptyDir, "munge-state", "/run/munge-state", "", false},
  };
  p.readiness.command = {"munge", "--no-input", "--socket=" + socket, "--output=/dev/null"};
  return p;
}

PodSpec BuildControllerPod(const api::SlurmCluster& c, const BuildInputs& in) {
  PodSpec p;
  p.name = ControllerPodName(c);
  p.labels = Labels(c, "controller");
  // Started as root; slurmctld drops to SlurmUser itself.
  p.command = {"slurmctld", "-D"};
  p.mounts = CommonMounts();
  p.mounts.push_back({MountSource::kSecret, kSecretJwt, "/run/secrets/jwt", "", true});
  p.mounts.push_back({MountSource::kVolume, kVolumeControllerState, slurm::kStateSaveDir, "", false});
  p.readiness.tcp_port = slurm::kSlurmctldPort;
  return p;
}

PodSpec BuildRestApiPod(const api::SlurmCluster& c, const BuildInputs& in) {
  PodSpec p;
  p.name = RestApiPodName(c);
  p.labels = Labels(c, "restapi");
  // slurmrestd refuses to run as root or SlurmUser.
  p.uid = in.nobody.uid;
  p.gid = in.nobody.gid;
  // SLURM_JWT=daemon makes slurmrestd pass each request's token on to slurmctld (auth/jwt)
  // instead of authenticating everything as its own user with munge.
  // Errors only: at info it logs two lines per request, and the operator asks every second.
  p.env = {{"SLURM_JWT", "daemon"}, {"SLURMRESTD_DEBUG", "2"}};
  p.command = {"slurmrestd", "-a", "rest_auth/jwt", "-s", "openapi/v0.0.38",
               "0.0.0.0:" + std::to_string(c.spec.rest_port)};
  p.mounts = CommonMounts();
  p.readiness.tcp_port = c.spec.rest_port;
  return p;
}

PodSpec BuildLoginPod(const api::SlurmCluster& c, const BuildInputs& in) {
  PodSpec p;
  p.name = LoginPodName(c);
  p.labels = Labels(c, "login");
  // The login pod only hosts users' `exec` sessions; its own process holds no privilege.
  p.uid = in.nobody.uid;
  p.gid = in.nobody.gid;
  p.command = {"sleep", "infinity"};
  p.mounts = CommonMounts();
  AddDatasets(c, &p);
  return p;
}

PodSpec BuildWorkerPod(const api::SlurmCluster& c, const api::NodeSet& ns, int ordinal, const BuildInputs& in) {
  PodSpec p;
  p.name = WorkerPodName(ns, ordinal);
  p.labels = Labels(c, "worker");
  p.labels[kLabelNodeSet] = ns.metadata.name;
  // slurmd runs as root: it starts each job step as the job's user.
  p.command = {"slurmd", "-D", "-Z", "--conf", slurm::DynamicNodeConf(ns)};
  p.mounts = CommonMounts();
  p.mounts.push_back({MountSource::kEmptyDir, "slurmd-spool", slurm::kSlurmdSpoolDir, "", false});
  AddDatasets(c, &p);
  p.readiness.tcp_port = slurm::kSlurmdPort;
  return p;
}

}  // namespace hpc::op
