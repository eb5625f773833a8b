#include "operator/cluster_reconciler.h"

#include "operator/dataset_volume.h"

#include <spdlog/spdlog.h>

#include "common/jwt.h"
#include "common/subprocess.h"
#include "operator/conditions.h"
#include "operator/network_flows.h"
#include "slurm/config.h"
#include "slurm/controllers.h"

namespace hpc::op {

Status ClusterReconciler::EnsureSecrets(const api::SlurmCluster& c) {
  // Generated once and kept: a new munge, Slurm or JWT key would invalidate every credential in
  // use. Each authentication's key where the release uses it (a cluster upgraded past 23.11
  // keeps its munge key, unused).
  if (UsesMunge(in_)) {
    ASSIGN_OR_RETURN(auto munge, rt_->GetSecret(kSecretMunge));
    if (!munge) {
      ASSIGN_OR_RETURN(std::string key, jwt::RandomBytes(128));
      RETURN_IF_ERROR(rt_->ApplySecret({kSecretMunge, {{"munge.key", key}}, in_.munge.uid, in_.munge.gid}));
    }
  } else {
    ASSIGN_OR_RETURN(auto slurm_key, rt_->GetSecret(kSecretSlurmKey));
    if (!slurm_key) {
      // auth/slurm signs with HMAC-SHA256 under it: Slurm asks for at least 16 bytes; as many as munge's.
      ASSIGN_OR_RETURN(std::string key, jwt::RandomBytes(128));
      RETURN_IF_ERROR(rt_->ApplySecret({kSecretSlurmKey, {{"slurm.key", key}}, in_.slurm.uid, in_.slurm.gid}));
    }
  }
  ASSIGN_OR_RETURN(auto jwt_key, rt_->GetSecret(kSecretJwt));
  if (!jwt_key) {
    ASSIGN_OR_RETURN(std::string key, jwt::RandomBytes(32));
    RETURN_IF_ERROR(rt_->ApplySecret({kSecretJwt, {{"jwt_hs256.key", key}}, in_.slurm.uid, in_.slurm.gid}));
  }
  if (c.spec.accounting.enabled) {
    if (in_.mysql.uid < 0)
      return Status::Error("accounting needs MariaDB: install mariadb-server (scripts/install-deps.sh)");
    ASSIGN_OR_RETURN(auto db, rt_->GetSecret(kSecretDatabase));
    std::string password;
    if (db && db->data.count("password")) {
      password = db->data.at("password");
    } else {
      ASSIGN_OR_RETURN(password, jwt::RandomHex(24));
      RETURN_IF_ERROR(rt_->ApplySecret({kSecretDatabase,
                                        {{"password", password}, {"init.sql", DatabaseInitSql(password)}},
                                        in_.mysql.uid,
                                        in_.mysql.gid}));
    }
    RETURN_IF_ERROR(rt_->ApplySecret({kSecretSlurmdbd,
                                      {{"slurmdbd.conf", slurm::RenderSlurmdbdConf(c, password, AuthOf(in_))}},
                                      in_.slurm.uid,
                                      in_.slurm.gid}));
  }
  return Status::Ok();
}

Status ClusterReconciler::EnsureNetworkPolicies(const api::SlurmCluster& c) {
  for (const auto& wanted : BuildNetworkPolicies(c)) {
    ASSIGN_OR_RETURN(auto have, rt_->GetNetworkPolicy(wanted.name));
    if (!have || *have != wanted) RETURN_IF_ERROR(rt_->ApplyNetworkPolicy(wanted));
  }
  return Status::Ok();
}

Status ClusterReconciler::EnsureVolumes(const api::SlurmCluster& c) {
  const bool retain = c.spec.retain_volumes_on_delete;
  // Both controllers' state, where there is a backup (Kubernetes: a ReadWriteMany claim, made so
  // when the cluster is first created with one).
  RETURN_IF_ERROR(rt_->EnsureVolume(
      {kVolumeControllerState, in_.slurm.uid, in_.slurm.gid, 0700, /*shared=*/c.spec.backup_controller, retain}));
  // With sidecars each pod serves its own socket; there is nothing to share.
  if (!in_.auth_sidecars) {
    RETURN_IF_ERROR(rt_->EnsureVolume(UsesMunge(in_)
                                          ? runtime::Volume{kVolumeMungeSocket, in_.munge.uid, in_.munge.gid, 0755}
                                          : runtime::Volume{kVolumeSackSocket, in_.slurm.uid, in_.slurm.gid, 0755}));
  }
  if (c.spec.accounting.enabled)
    RETURN_IF_ERROR(rt_->EnsureVolume({kVolumeDatabase, in_.mysql.uid, in_.mysql.gid, 0700, false, retain}));
  // The shared root's copy of the image is made in it by the first pod that mounts it (a
  // runtime's business); here only the volume, shared by pods on every node.
  if (c.spec.shared_root && !in_.images.empty()) {
    RETURN_IF_ERROR(rt_->EnsureVolume({kVolumeSharedRoot, 0, 0, 0755, /*shared=*/true, retain}));
  }
  for (const auto& d : c.spec.datasets) {
    // Shared by the cluster's users like /tmp: anyone may create, only owners may delete.
    RETURN_IF_ERROR(EnsureDatasetVolume(rt_, c, d));
  }
  return Status::Ok();
}

bool ClusterReconciler::UsersFileCurrent() {
  if (!users_file_stale_) return true;
  runtime::ExecOptions o;
  o.argv = {"cmp", "-s", "-", "/etc/group"};
  o.stdin_data = users_group_;
  o.timeout = std::chrono::seconds(10);
  auto r = rt_->Exec(controller_pod_, o);
  if (!r.ok() || r->exit_code != 0) return false;  // not seen yet, or not known: ask again next pass
  users_file_stale_ = false;
  return true;
}

bool ClusterReconciler::TakeUsersChanged() {
  if (!users_changed_ || !UsersFileCurrent()) return false;
  users_changed_ = false;
  return true;
}

Status ClusterReconciler::EnsureConfig(const api::SlurmCluster& c, const std::vector<api::NodeSet>& nodesets,
                                       const std::vector<api::ClusterUser>& extra_users,
                                       const std::vector<DatasetGroup>& dataset_groups) {
  runtime::ConfigMap users = BuildUsersConfigMap(c, extra_users, in_, dataset_groups);
  ASSIGN_OR_RETURN(auto existing_users, rt_->GetConfigMap(kConfigMapUsers));
  runtime::ConfigMap cm = BuildSlurmConfigMap(c, nodesets, in_);
  ASSIGN_OR_RETURN(auto existing, rt_->GetConfigMap(kConfigMapSlurm));
  // Users first: partitions resolve AllowGroups against them when created or updated.
  bool changed = !existing || existing->data != cm.data || !existing_users || existing_users->data != users.data;
  if (!existing_users || existing_users->data != users.data) users_changed_ = users_file_stale_ = true;
  users_group_ = users.data.count("group") ? users.data.at("group") : "";
  controller_pod_ = ControllerPodName(c);
  RETURN_IF_ERROR(rt_->ApplyConfigMap(users));
  RETURN_IF_ERROR(rt_->ApplyConfigMap(BuildScriptsConfigMap()));
  RETURN_IF_ERROR(rt_->ApplyConfigMap(BuildHealthConfigMap(c, nodesets, in_)));
  RETURN_IF_ERROR(rt_->ApplyConfigMap(cm));
  // A reconfigure that another operator process promised (the leader failed over or restarted
  // while the kubelet had not yet updated the file) is in the status it wrote: taken up once.
  if (!status_read_) {
    status_read_ = true;
    const api::Condition* pending = FindCondition(c.status.conditions, kConditionReconfiguring);
    if (pending && pending->status == "True" && reconfigure_wanted_.empty()) {
      spdlog::info("cluster {}: a slurm.conf change is still to be reconfigured (status {})", c.metadata.name,
                   kConditionReconfiguring);
      reconfigure_wanted_ = cm.data.at("slurm.conf");
    }
  }
  bool controller_running = false;
  ASSIGN_OR_RETURN(auto pods, rt_->ListPods({{kLabelComponent, "controller"}}));
  // The primary's: the backup (a controller too) reads the mounted file, not the operator's copy.
  for (const auto& p : pods) controller_running = controller_running || (p.ready && p.name == controller_pod_);
  if (!controller_running) {
    reconfigure_wanted_.clear();  // it reads the file as it is when it starts
    return Status::Ok();
  }
  // Not a reason to stop the pass: the next one writes it again (nothing recorded as written).
  if (PushesControllerConfig(in_)) {
    if (Status s = PushControllerConfig(cm); !s.ok()) spdlog::warn("pod {}: {}", controller_pod_, s.message());
  }
  // Nodesets, partitions and users are applied in place by SyncPartitions: `scontrol
  // reconfigure` in Slurm 22.05 leaves dynamic nodes that run a job ALLOCATED forever, drops
  // them from their partitions, and can hand out a job id twice. Only other changes need it.
  if (changed && existing && slurm::NeedsReconfigure(existing->data.at("slurm.conf"), cm.data.at("slurm.conf"))) {
    spdlog::info("slurm.conf changed beyond nodesets and partitions; slurmctld reconfigures once its pod has it");
    reconfigure_wanted_ = cm.data.at("slurm.conf");
  }
  if (reconfigure_wanted_.empty()) return Status::Ok();
  return ReconfigureOnceMounted();
}

Status ClusterReconciler::PushControllerConfig(const runtime::ConfigMap& cm) {
  if (cm.data == pushed_config_ && controller_started_at_ == pushed_to_controller_started_at_) return Status::Ok();
  // What slurmctld runs now (its start copied the mount, or an earlier push): a change beyond
  // nodesets and partitions made while it was away, or by another operator process, still needs
  // the reconfigure once written.
  runtime::ExecOptions read;
  read.argv = {"cat", ControllerSlurmConf(in_)};
  read.timeout = std::chrono::seconds(15);
  ASSIGN_OR_RETURN(ProcessResult live, rt_->Exec(controller_pod_, read));
  // slurm.conf last: a reconfigure that follows finds the files it names in place.
  std::vector<std::string> order;
  for (const auto& [file, content] : cm.data) {
    if (file != "slurm.conf") order.push_back(file);
  }
  order.push_back("slurm.conf");
  for (const auto& file : order) {
    runtime::ExecOptions write;
    write.argv = {"/bin/sh", "-c", "cat > \"$1.new\" && mv -f \"$1.new\" \"$1\"", "push",
                  std::string(kControllerConfigDir) + "/" + file};
    write.stdin_data = cm.data.at(file);
    write.timeout = std::chrono::seconds(15);
    ASSIGN_OR_RETURN(ProcessResult r, rt_->Exec(controller_pod_, write));
    if (!r.ok()) {
      return Status::Errorf("writing {} into pod {}: exit {}: {}", file, controller_pod_, r.exit_code,
                            r.err.substr(0, 200));
    }
  }
  spdlog::info("pod {}: slurm-config written where slurmctld reads it", controller_pod_);
  if (!live.ok() || slurm::NeedsReconfigure(live.out, cm.data.at("slurm.conf"))) {
    reconfigure_wanted_ = cm.data.at("slurm.conf");
  }
  pushed_config_ = cm.data;
  pushed_to_controller_started_at_ = controller_started_at_;
  return Status::Ok();
}

Status ClusterReconciler::ReconfigureOnceMounted() {
  // Written into the pod by this process (PushControllerConfig) it is there already; a mounted
  // file is there once the kubelet refreshed it.
  const auto pushed = pushed_config_.find("slurm.conf");
  if (!PushesControllerConfig(in_) || pushed == pushed_config_.end() || pushed->second != reconfigure_wanted_) {
    runtime::ExecOptions read;
    read.argv = {"cat", ControllerSlurmConf(in_)};
    read.timeout = std::chrono::seconds(15);
    ASSIGN_OR_RETURN(ProcessResult mounted, rt_->Exec(controller_pod_, read));
    if (!mounted.ok() || mounted.out != reconfigure_wanted_) {
      // Not yet: the next pass looks again (the kubelet's sync period, about a minute at most).
      spdlog::debug("pod {}: slurm.conf not updated yet; reconfiguring later", controller_pod_);
      return Status::Ok();
    }
  }
  spdlog::info("pod {} has the new slurm.conf; reconfiguring slurmctld", controller_pod_);
  RETURN_IF_ERROR(control_->Reconfigure());
  reconfigure_wanted_.clear();
  return Status::Ok();
}

std::string ClusterReconciler::ReleaseChangeWaitsFor(const std::string& component) const {
  if (component == "controller" || component == "controller-backup") {
    return slurmdbd_current_ ? "" : "slurmdbd to run the new release first";
  }
  if (component == "sackd") return controller_current_ ? "" : "slurmctld to run the new release first";
  // Their clients authenticate through sackd's socket: a slurmrestd started while sackd is
  // replaced waited some 40 s before it listened.
  if (component == "restapi" || component == "login") {
    return !controller_current_ ? "slurmctld to run the new release first"
           : !auth_pod_current_ ? "sackd to run the new release first"
                                : "";
  }
  return "";
}

Status ClusterReconciler::EnsurePod(const runtime::PodSpec& spec, const std::string& component,
                                    api::SlurmClusterStatus* st, int64_t* started_at, bool* current) {
  if (current) *current = false;
  ASSIGN_OR_RETURN(auto existing, rt_->GetPodSpec(spec.name));
  std::string kept;  // why the pod runs its older spec a while longer
  if (existing && !(*existing == spec)) {
    const auto from = ReleaseOfImage(in_, existing->image), to = ReleaseOfImage(in_, spec.image);
    if (from && to && from->Series() != to->Series()) kept = ReleaseChangeWaitsFor(component);
    if (kept.empty()) {
      spdlog::info("pod {} spec changed; replacing it", spec.name);
      RETURN_IF_ERROR(rt_->DeletePod(spec.name));
    } else {
      kept = fmt::format("on Slurm {} until {}", from->Series(), kept);
    }
  }
  if (kept.empty()) RETURN_IF_ERROR(rt_->CreatePod(spec));
  ASSIGN_OR_RETURN(auto pods, rt_->ListPods({}));
  for (const auto& p : pods) {
    if (p.name != spec.name) continue;
    if (started_at) *started_at = p.phase == runtime::PodPhase::kRunning ? p.started_at : 0;
    if (p.ready) {
      st->components[component] = kept.empty() ? "Ready" : "Ready, " + kept;
      if (current) *current = kept.empty();
      return Status::Ok();
    }
    std::string why = p.phase == runtime::PodPhase::kRunning ? "starting" : std::string(runtime::PodPhaseName(p.phase));
    if (!p.message.empty()) why += " (" + p.message + ")";
    if (p.restarts > 0) {
      degraded_ = true;
      why += fmt::format(", {} restarts", p.restarts);
    }
    st->components[component] = "Waiting: " + why;
    return Status::FailedPrecondition(fmt::format("waiting for {} pod {}: {}", component, spec.name, why));
  }
  st->components[component] = "Waiting: pod not found";
  return Status::FailedPrecondition(fmt::format("waiting for {} pod {}", component, spec.name));
}

Status ClusterReconciler::EnsureBackupController(const api::SlurmCluster& c, api::SlurmClusterStatus* st) {
  const std::string name = BackupControllerPodName(c);
  if (!c.spec.backup_controller) {
    // Turned off: its pod goes (looked for first, not deleted blindly every pass), but not while
    // it is the controller that serves: the primary takes back over first.
    ASSIGN_OR_RETURN(auto spec, rt_->GetPodSpec(name));
    if (!spec) return Status::Ok();
    if (c.status.leading_controller == name) {
      backup_ready_ = true;
      return Status::FailedPrecondition(
          fmt::format("backup controller {} serves: it is removed once the primary serves again", name));
    }
    return rt_->DeletePod(name);
  }
  Status s = EnsurePod(BuildBackupControllerPod(c, in_), "controller-backup", st);
  backup_ready_ = s.ok();
  return s;
}

Status ClusterReconciler::EnsureAuthPod(const api::SlurmCluster& c, api::SlurmClusterStatus* st) {
  auth_pod_current_ = in_.auth_sidecars;
  if (in_.auth_sidecars) return Status::Ok();
  // The other authentication's pod goes (a cluster upgraded across 23.11); both are hpcplane's.
  // Looked for once: the authentication is fixed for this reconciler's life.
  if (!other_auth_pod_gone_) {
    const std::string other = UsesMunge(in_) ? SackdPodName(c) : MungePodName(c);
    ASSIGN_OR_RETURN(auto spec, rt_->GetPodSpec(other));
    if (spec) RETURN_IF_ERROR(rt_->DeletePod(other));
    other_auth_pod_gone_ = true;
  }
  if (UsesMunge(in_)) return EnsurePod(BuildMungePod(c, in_), "munge", st, nullptr, &auth_pod_current_);
  return EnsurePod(BuildSackdPod(c, in_), "sackd", st, nullptr, &auth_pod_current_);
}

std::vector<Step> ClusterReconciler::ComponentSteps(const api::SlurmCluster& c,
                                                    const std::vector<api::NodeSet>& nodesets,
                                                    const std::vector<api::ClusterUser>& extra_users,
                                                    const std::vector<DatasetGroup>& dataset_groups,
                                                    api::SlurmClusterStatus* st) {
  // The steps run after this returns: they hold the caller's objects (which outlive the run) by
  // reference and `st` by value.
  return {
      {"secrets", [this, &c] { return EnsureSecrets(c); }, true},
      {"volumes", [this, &c] { return EnsureVolumes(c); }, true},
      // Before any pod: a pod's first packet meets the policy that selects it.
      {"network", [this, &c] { return EnsureNetworkPolicies(c); }, true},
      {"config",
       [this, &c, &nodesets, &extra_users, &dataset_groups] {
         return EnsureConfig(c, nodesets, extra_users, dataset_groups);
       },
       true},
      // Every Slurm daemon and client authenticates with munge before 23.11, so munged comes
      // first; with auth/slurm the daemons hold the key and only clients need sackd, which
      // starts beside them. The rest start side by side: slurmrestd and the login pod's clients
      // only reach slurmctld when asked something, so none waits for another to be ready
      // (bring-up is the slowest pod, not the sum of them); Ready still needs them all and
      // Slurm answering.
      {UsesMunge(in_) ? "munge" : "sackd", [this, &c, st] { return EnsureAuthPod(c, st); }, UsesMunge(in_)},
      // Accounting starts beside the controller. Inside their pods slurmdbd waits for MariaDB
      // and slurmctld for slurmdbd (on a first boot until it answers, later at most 5 s).
      {"mariadb",
       [this, &c, st] {
         if (!c.spec.accounting.enabled) return Status::Ok();
         Status s = EnsurePod(BuildMariaDbPod(c, in_), "mariadb", st);
         database_ready_ = s.ok();
         return s;
       },
       false},
      {"slurmdbd",
       [this, &c, st] {
         slurmdbd_current_ = !c.spec.accounting.enabled;
         if (!c.spec.accounting.enabled) return Status::Ok();
         // Started beside MariaDB; inside its pod, slurmdbd waits for the database to answer.
         Status s = EnsurePod(BuildSlurmdbdPod(c, in_), "slurmdbd", st, nullptr, &slurmdbd_current_);
         slurmdbd_ready_ = s.ok();
         if (!s.ok() && !database_ready_) st->components["slurmdbd"] = "Waiting: for mariadb";
         return s;
       },
       false},
      {"controller",
       [this, &c, st] {
         Status s =
             EnsurePod(BuildControllerPod(c, in_), "controller", st, &controller_started_at_, &controller_current_);
         controller_ready_ = s.ok();
         return s;
       },
       false},
      {"controller-backup", [this, &c, st] { return EnsureBackupController(c, st); }, false},
      {"restapi",
       [this, &c, st] {
         Status s = EnsurePod(BuildRestApiPod(c, in_), "restapi", st);
         rest_ready_ = s.ok();
         return s;
       },
       false},
      {"login",
       [this, &c, st] {
         if (!c.spec.login_enabled) {
           (void)rt_->DeletePod(LoginPodName(c));
           return Status::Ok();
         }
         return EnsurePod(BuildLoginPod(c, in_), "login", st);
       },
       false},
  };
}

bool ClusterReconciler::ObserveSlurm(const api::SlurmCluster& c, api::SlurmClusterStatus* st,
                                     std::string* slurm_error) {
  auto pods = rt_->ListPods({{kLabelCluster, c.metadata.name}});
  if (pods.ok()) {
    for (const auto& p : *pods) {
      if (p.ip.empty()) continue;  // not placed yet: no endpoint to show
      std::string comp = p.labels.count(kLabelComponent) ? p.labels.at(kLabelComponent) : "";
      if (comp == "controller") {
        const bool backup = p.labels.count(kLabelControllerRole) != 0;
        st->endpoints[backup ? "slurmctld-backup" : "slurmctld"] = fmt::format("{}:{}", p.ip, slurm::kSlurmctldPort);
      }
      if (comp == "restapi") {
        st->endpoints["slurmrestd"] = fmt::format("http://{}:{}", p.ip, c.spec.rest_port);
        std::string ep = p.ip + ":" + std::to_string(c.spec.rest_port);
        if (rest_ready_ && (ep != reader_endpoint_ || !reader_)) {
          reader_ = readers_(p.ip, c.spec.rest_port);
          reader_endpoint_ = ep;
        }
      }
    }
  }
  if (!rest_ready_) reader_.reset(), reader_endpoint_.clear();
  // Asked only once slurmctld listens: slurmrestd starts beside it and would hold the pass
  // (and every pod's readiness probe) on a request slurmctld cannot answer yet.
  if (!reader_ || !controller_ready_) return false;
  auto version = reader_->Ping();
  if (!version.ok()) {
    *slurm_error = version.status().message();
    return false;
  }
  st->component_versions["slurm/slurmctld"] = *version;
  st->component_versions["slurm/slurmrestd"] = *version;
  // One Slurm installation serves every daemon of a local cluster.
  if (slurmdbd_ready_) st->component_versions["slurm/slurmdbd"] = *version;
  // Slurm answering means munge authenticates between its daemons.
  if (UsesMunge(in_) && !in_.munge_version.empty()) st->component_versions["munge"] = in_.munge_version;
  return true;
}

void ClusterReconciler::ObserveLeader(const api::SlurmCluster& c, api::SlurmClusterStatus* st) {
  const std::string primary = ControllerPodName(c), backup = BackupControllerPodName(c);
  if (!c.spec.backup_controller && !backup_ready_) {
    st->leading_controller = controller_ready_ ? primary : "";
    if (command_pod_) command_pod_->Set(primary);
    return;
  }
  // Slurm's heartbeat, read in either pod (both mount the state): the primary's first, as long
  // as it runs; the backup's where the primary's machine is gone.
  std::optional<slurm::Heartbeat> beat;
  runtime::ExecOptions read;
  read.argv = slurm::ReadHeartbeatCommand();
  read.timeout = std::chrono::seconds(10);
  for (const auto& pod : {primary, backup}) {
    auto r = rt_->Exec(pod, read);
    if (r.ok() && r->ok()) {
      beat = slurm::ParseHeartbeat(r->out);
      break;
    }
  }
  const bool serving = beat && beat->controller <= 1 &&
                       slurm::HeartbeatCurrent(*beat, jwt::UnixNow(), slurm::SlurmctldTimeoutSeconds(c));
  st->leading_controller = !serving ? "" : beat->controller == 0 ? primary : backup;
  // Commands go where Slurm serves; while none does (a takeover under way), where they went.
  if (command_pod_ && serving) command_pod_->Set(st->leading_controller);
  // Slurm is there while the primary's pod is ready or the backup serves: the passes' commands
  // find whichever serves (slurm.conf names both). A backup standing by is no controller.
  controller_ready_ = controller_ready_ || (backup_ready_ && st->leading_controller == backup);
}

Status ClusterReconciler::ObserveReleases(const api::SlurmCluster& c, api::SlurmClusterStatus* st) {
  in_.config_release.reset();
  ASSIGN_OR_RETURN(auto pods, rt_->ListPods({{kLabelCluster, c.metadata.name}}));
  std::map<std::string, std::vector<std::string>> behind;  // release -> its pods, where not in_.release's
  for (const auto& p : pods) {
    auto r = ReleaseOfImage(in_, p.image);
    if (!r || r->Series() == in_.release.Series()) continue;
    behind[r->Series()].push_back(p.name);
    const bool older = !r->AtLeast(in_.release.major, in_.release.minor);
    if (older && (!in_.config_release || !r->AtLeast(in_.config_release->major, in_.config_release->minor))) {
      in_.config_release = r;
    }
  }
  std::string message;
  for (const auto& [series, names] : behind) {
    std::string list;
    for (size_t i = 0; i < names.size() && i < 5; ++i) list += (i ? ", " : "") + names[i];
    if (names.size() > 5) list += fmt::format(" and {} more", names.size() - 5);
    message += fmt::format("{}{} pod(s) on Slurm {} ({})", message.empty() ? "" : "; ", names.size(), series, list);
  }
  if (!message.empty()) {
    message += fmt::format(
        " move to Slurm {}: slurmdbd first, then slurmctld, then slurmrestd and login pods; workers are drained and "
        "replaced as their jobs end. slurm.conf is written for Slurm {} until the last one is gone",
        in_.release.Series(), in_.config_release ? in_.config_release->Series() : in_.release.Series());
  }
  SetCondition(&st->conditions, "Upgrading", !behind.empty(), behind.empty() ? "OneRelease" : "RollingUpgrade",
               message);
  return Status::Ok();
}

void ClusterReconciler::SetConditions(api::SlurmClusterStatus* st, const StepsOutcome& outcome, bool slurm_ok,
                                      const std::string& slurm_error) {
  const std::string& waiting = outcome.waiting;
  const std::vector<std::string>& failures = outcome.failures;
  bool ready = waiting.empty() && failures.empty() && slurm_ok;
  SetCondition(&st->conditions, "Ready", ready, ready ? "AllComponentsReady" : "NotReady",
               ready ? "every component is ready; Slurm answers"
                     : (!failures.empty()  ? failures.front()
                        : !waiting.empty() ? waiting
                                           : "Slurm does not answer: " + slurm_error));
  SetCondition(&st->conditions, "Progressing", !waiting.empty(), waiting.empty() ? "Converged" : "Waiting", waiting);
  // slurmrestd up before slurmctld is bring-up, not a fault.
  const bool rest_failing = rest_ready_ && controller_ready_ && !slurm_ok;
  bool degraded = degraded_ || !failures.empty() || rest_failing;
  std::string degraded_msg = !failures.empty() ? failures.front()
                             : rest_failing    ? "slurmrestd does not answer: " + slurm_error
                             : degraded_       ? waiting
                                               : "";
  SetCondition(&st->conditions, "Degraded", degraded, degraded ? "ComponentFailing" : "Healthy", degraded_msg);
}

api::SlurmClusterStatus ClusterReconciler::Reconcile(const api::SlurmCluster& c,
                                                     const std::vector<api::NodeSet>& nodesets,
                                                     const std::vector<api::ClusterUser>& extra_users,
                                                     const std::vector<DatasetGroup>& dataset_groups) {
  api::SlurmClusterStatus st = c.status;
  st.components.clear();
  degraded_ = false;
  controller_ready_ = false;
  backup_ready_ = false;
  slurmdbd_ready_ = false;
  rest_ready_ = false;
  database_ready_ = false;
  if (Status s = ObserveReleases(c, &st); !s.ok()) spdlog::warn("cluster {}: {}", c.metadata.name, s.message());
  const StepsOutcome outcome = RunSteps(fmt::format("cluster {}", c.metadata.name),
                                        ComponentSteps(c, nodesets, extra_users, dataset_groups, &st));
  ObserveLeader(c, &st);
  // Endpoints and Slurm's own view, through slurmrestd.
  std::string slurm_error;
  const bool slurm_ok = ObserveSlurm(c, &st, &slurm_error);
  st.component_versions["hpcplane"] = HPCPLANE_VERSION;
  slurm_answered_ = slurm_ok;
  last_errors_ = static_cast<int>(outcome.failures.size());
  SetConditions(&st, outcome, slurm_ok, slurm_error);
  const bool pending = !reconfigure_wanted_.empty();
  SetCondition(&st.conditions, kConditionReconfiguring, pending, pending ? "WaitingForMountedFile" : "Applied",
               pending ? "slurm.conf changed beyond nodesets and partitions; slurmctld is told to reconfigure once the "
                         "controller pod reads the new file (a kubelet updates it within about a minute)"
                       : "");
  st.observed_generation = c.metadata.generation;
  return st;
}

}  // namespace hpc::op
