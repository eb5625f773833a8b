#include "runtime/local/local_runtime.h"
#include "runtime/local/local_runtime_internal.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "runtime/local/hosts_file.h"
#include "runtime/local/image_store.h"
#include "runtime/local/pod_firewall.h"
#include "runtime/local/pod_init.h"
#include "runtime/local/shared_root.h"

namespace hpc::runtime::local {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

bool IsValidName(const std::string& n) {
  if (n.empty() || n.size() > 63 || n[0] == '.') return false;
  for (char c : n) {
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  }
  return true;
}

Status WriteDataDir(const std::string& dir, const std::map<std::string, std::string>& data, mode_t dir_mode,
                    mode_t file_mode, uid_t uid, gid_t gid) {
  RETURN_IF_ERROR(files::MakeDirs(dir, dir_mode));
  ::chown(dir.c_str(), uid, gid);
  for (const auto& [key, value] : data) {
    if (!IsValidName(key)) return Status::Errorf("{}: invalid key \"{}\"", dir, key);
    std::string path = dir + "/" + key;
    // Rewritten in place when it exists: pods bind-mount single files of config maps.
    if (files::Exists(path)) {
      auto old = files::Read(path);
      if (old.ok() && *old == value) continue;
      RETURN_IF_ERROR(files::WriteInPlace(path, value, file_mode));
      ::chown(path.c_str(), uid, gid);
    } else {
      RETURN_IF_ERROR(files::WriteAtomic(path, value, file_mode, uid, gid));
    }
  }
  for (const auto& existing : files::ListDir(dir)) {
    if (!data.count(existing)) ::unlink((dir + "/" + existing).c_str());
  }
  return Status::Ok();
}

Result<std::map<std::string, std::string>> ReadDataDir(const std::string& dir) {
  std::map<std::string, std::string> data;
  for (const auto& key : files::ListDir(dir)) {
    ASSIGN_OR_RETURN(data[key], files::Read(dir + "/" + key));
  }
  return data;
}

}  // namespace

Result<std::unique_ptr<LocalRuntime>> LocalRuntime::Create(Options options) {
  ASSIGN_OR_RETURN(Subnet subnet, ParseSubnet(options.subnet));
  for (const char* sub : {"/configmaps", "/secrets", "/volumes", "/pods", "/networkpolicies"}) {
    RETURN_IF_ERROR(files::MakeDirs(options.dir + sub, std::string(sub) == "/secrets" ? 0700 : 0755));
  }
  Network net(NamesFor(options.cluster_key), subnet);
  PodCgroups cgroups(DetectCgroupHierarchy(), "/sys/fs/cgroup", net.names().key);
  std::unique_ptr<LocalRuntime> rt(new LocalRuntime(std::move(options), std::move(net), std::move(cgroups)));
  RETURN_IF_ERROR(rt->UpdateHosts());
  RETURN_IF_ERROR(files::WriteAtomic(rt->opts_.dir + "/resolv.conf",
                                     "# pods resolve names from /etc/hosts only\noptions timeout:1 attempts:1\n"));
  // The supervisor (re)loads the policies, e.g. after the host restarted and lost its rules.
  if (rt->opts_.supervise) RETURN_IF_ERROR(rt->SyncFirewall());
  // ... and holds its pods' images, those started by an hpcplane that did not hold them too.
  if (rt->opts_.supervise && !rt->opts_.image_store.empty()) rt->HoldPodImages();
  return rt;
}

// ---- network policies ----

Status LocalRuntime::ApplyNetworkPolicy(const NetworkPolicy& policy) {
  if (!IsValidName(policy.name)) return Status::Errorf("network policy name \"{}\" is invalid", policy.name);
  RETURN_IF_ERROR(
      files::WriteAtomic(opts_.dir + "/networkpolicies/" + policy.name + ".json", NetworkPolicyJson(policy).dump(2)));
  return SyncFirewall();
}

Result<std::optional<NetworkPolicy>> LocalRuntime::GetNetworkPolicy(const std::string& name) {
  const std::string path = opts_.dir + "/networkpolicies/" + name + ".json";
  if (!IsValidName(name) || !files::Exists(path)) return std::optional<NetworkPolicy>();
  ASSIGN_OR_RETURN(std::string text, files::Read(path));
  json j = json::parse(text, nullptr, false);
  ASSIGN_OR_RETURN(NetworkPolicy p, NetworkPolicyFromJson(j));
  return std::optional<NetworkPolicy>(std::move(p));
}

Status LocalRuntime::DeleteNetworkPolicy(const std::string& name) {
  if (!IsValidName(name)) return Status::Errorf("network policy name \"{}\" is invalid", name);
  ::unlink((opts_.dir + "/networkpolicies/" + name + ".json").c_str());
  return SyncFirewall();
}

Status LocalRuntime::SyncFirewall() {
  std::vector<NetworkPolicy> policies;
  for (const auto& file : files::ListDir(opts_.dir + "/networkpolicies")) {
    if (file.size() < 6 || file.substr(file.size() - 5) != ".json") continue;
    ASSIGN_OR_RETURN(auto p, GetNetworkPolicy(file.substr(0, file.size() - 5)));
    if (p) policies.push_back(std::move(*p));
  }
  if (policies.empty()) {
    // No policy, no table: nothing is filtered (and nftables is not needed).
    if (!firewall_loaded_ || !firewall_loaded_->empty()) RETURN_IF_ERROR(DeleteNftablesTable(FirewallTable()));
    firewall_loaded_ = "";
    return Status::Ok();
  }
  std::vector<FirewalledPod> pods;
  for (const auto& name : files::ListDir(opts_.dir + "/pods")) {
    auto spec = GetPodSpec(name);
    if (spec.ok() && *spec) pods.push_back({name, (*spec)->labels, network_.names().HostVeth(name)});
  }
  const std::string script = RenderPodFirewall(FirewallTable(), network_.names().HostVethPrefix(), policies, pods);
  if (script == firewall_loaded_) return Status::Ok();
  RETURN_IF_ERROR(LoadNftables(script));
  firewall_loaded_ = script;
  return Status::Ok();
}

// ---- config maps, secrets, volumes ----

Status LocalRuntime::ApplyConfigMap(const ConfigMap& cm) {
  if (!IsValidName(cm.name)) return Status::Errorf("config map name \"{}\" is invalid", cm.name);
  return WriteDataDir(opts_.dir + "/configmaps/" + cm.name, cm.data, 0755, cm.default_mode, 0, 0);
}

Result<std::optional<ConfigMap>> LocalRuntime::GetConfigMap(const std::string& name) {
  std::string dir = opts_.dir + "/configmaps/" + name;
  if (!files::Exists(dir)) return std::optional<ConfigMap>();
  ASSIGN_OR_RETURN(auto data, ReadDataDir(dir));
  return std::optional<ConfigMap>(ConfigMap{name, std::move(data)});
}

Status LocalRuntime::DeleteConfigMap(const std::string& name) {
  return files::RemoveAll(opts_.dir + "/configmaps/" + name);
}

Status LocalRuntime::ApplySecret(const Secret& s) {
  if (!IsValidName(s.name)) return Status::Errorf("secret name \"{}\" is invalid", s.name);
  return WriteDataDir(opts_.dir + "/secrets/" + s.name, s.data, 0700, 0600, static_cast<uid_t>(s.owner_uid),
                      static_cast<gid_t>(s.owner_gid));
}

Result<std::optional<Secret>> LocalRuntime::GetSecret(const std::string& name) {
  std::string dir = opts_.dir + "/secrets/" + name;
  if (!files::Exists(dir)) return std::optional<Secret>();
  ASSIGN_OR_RETURN(auto data, ReadDataDir(dir));
  struct stat st {};
  ::stat(dir.c_str(), &st);
  return std::optional<Secret>(Secret{name, std::move(data), st.st_uid, st.st_gid});
}

Status LocalRuntime::DeleteSecret(const std::string& name) { return files::RemoveAll(opts_.dir + "/secrets/" + name); }

Status LocalRuntime::EnsureVolume(const Volume& volume) {
  const std::string& name = volume.name;
  const int64_t uid = volume.owner_uid;
  const int64_t gid = volume.owner_gid;
  const uint32_t mode = volume.mode;
  if (!IsValidName(name)) return Status::Errorf("volume name \"{}\" is invalid", name);
  std::string dir = VolumePath(name);
  RETURN_IF_ERROR(files::MakeDirs(dir, mode));
  // Owner and mode are the caller's every time: a volume made under an older rule, or changed
  // by hand, is brought back to it (data inside is never touched).
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return Status::Errorf("volume {}: {}", name, std::strerror(errno));
  if (st.st_uid != static_cast<uid_t>(uid) || st.st_gid != static_cast<gid_t>(gid)) {
    if (::chown(dir.c_str(), static_cast<uid_t>(uid), static_cast<gid_t>(gid)) != 0) {
      return Status::Errorf("volume {}: chown: {}", name, std::strerror(errno));
    }
  }
  if ((st.st_mode & 07777) != mode && ::chmod(dir.c_str(), mode) != 0) {
    return Status::Errorf("volume {}: chmod: {}", name, std::strerror(errno));
  }
  return Status::Ok();
}

// ---- pod state ----

Result<LocalRuntime::PodState> LocalRuntime::LoadState(const std::string& pod) const {
  ASSIGN_OR_RETURN(std::string text, files::Read(PodDir(pod) + "/state.json"));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::Errorf("pod {}: corrupt state.json", pod);
  PodState st;
  st.pid = j.value("pid", 0);
  st.pid_start = j.value("pidStart", uint64_t{0});
  st.ip = j.value("ip", "");
  st.restarts = j.value("restarts", 0);
  st.consecutive_failures = j.value("consecutiveFailures", 0);
  st.ready = j.value("ready", false);
  st.stopped = j.value("stopped", false);
  st.last_exit = j.value("lastExit", -1);
  st.started_at = j.value("startedAt", int64_t{0});
  st.message = j.value("message", "");
  st.announces_start = j.value("announcesStart", false);
  return st;
}

bool LocalRuntime::Started(const std::string& pod, const PodState& st) const {
  return st.Alive() && (!st.announces_start || files::Exists(StartedFile(pod)));
}

Status LocalRuntime::SaveState(const std::string& pod, const PodState& st) const {
  json j = {{"pid", st.pid},
            {"pidStart", st.pid_start},
            {"ip", st.ip},
            {"restarts", st.restarts},
            {"consecutiveFailures", st.consecutive_failures},
            {"ready", st.ready},
            {"stopped", st.stopped},
            {"lastExit", st.last_exit},
            {"startedAt", st.started_at},
            {"message", st.message},
            {"announcesStart", st.announces_start}};
  return files::WriteAtomic(PodDir(pod) + "/state.json", j.dump());
}

Result<std::optional<PodSpec>> LocalRuntime::GetPodSpec(const std::string& name) {
  std::string path = PodDir(name) + "/spec.json";
  if (!files::Exists(path)) return std::optional<PodSpec>();
  ASSIGN_OR_RETURN(std::string text, files::Read(path));
  ASSIGN_OR_RETURN(PodSpec spec, SpecFromJson(json::parse(text, nullptr, false)));
  return std::optional<PodSpec>(std::move(spec));
}

Result<std::string> LocalRuntime::ResolveMountSource(const PodSpec& spec, const Mount& m) {
  std::string base;
  switch (m.source) {
    case MountSource::kConfigMap:
      base = opts_.dir + "/configmaps/" + m.name;
      break;
    case MountSource::kSecret:
      base = opts_.dir + "/secrets/" + m.name;
      break;
    case MountSource::kVolume:
      base = VolumePath(m.name);
      break;
    case MountSource::kEmptyDir: {
      base = PodDir(spec.name) + "/empty/" + m.name;
      if (!files::Exists(base)) {
        RETURN_IF_ERROR(files::MakeDirs(base, 0755));
        ::chown(base.c_str(), static_cast<uid_t>(spec.uid), static_cast<gid_t>(spec.gid));
      }
      break;
    }
    case MountSource::kHostPath:
      base = m.name;
      break;
  }
  std::string path = m.sub_path.empty() ? base : base + "/" + m.sub_path;
  if (!files::Exists(path)) {
    return Status::Errorf("pod {}: mount {}: source {} does not exist", spec.name, m.mount_path, path);
  }
  return path;
}

// ---- pods ----

Status LocalRuntime::CreatePod(const PodSpec& spec) {
  if (!IsValidName(spec.name)) return Status::Errorf("pod name \"{}\" is invalid", spec.name);
  if (spec.command.empty()) return Status::Errorf("pod {}: command is empty", spec.name);
  if (!spec.sidecars.empty()) {
    return Status::Errorf(
        "pod {}: sidecars are not supported by the local runtime (its pods share one sackd or munge pod)", spec.name);
  }
  ASSIGN_OR_RETURN(auto existing, GetPodSpec(spec.name));
  if (existing) {
    if (SpecJson(*existing) != SpecJson(spec)) {
      return Status::Errorf("pod {} exists with a different spec; delete it first", spec.name);
    }
    return Status::Ok();
  }
  if (!opts_.supervise) return Status::Errorf("pod {}: only the hpcplane daemon starts pods", spec.name);
  RETURN_IF_ERROR(files::MakeDirs(PodDir(spec.name)));
  // Allocate an address not held by any other pod of this cluster.
  std::vector<int> taken;
  for (const auto& other : files::ListDir(opts_.dir + "/pods")) {
    auto st = LoadState(other);
    if (st.ok() && !st->ip.empty()) taken.push_back(std::stoi(st->ip.substr(st->ip.rfind('.') + 1)));
  }
  ASSIGN_OR_RETURN(int host, AllocateHost(taken));
  PodState st;
  st.ip = network_.subnet().Address(host);
  RETURN_IF_ERROR(SaveState(spec.name, st));
  RETURN_IF_ERROR(files::WriteAtomic(PodDir(spec.name) + "/spec.json", SpecJson(spec).dump(2)));
  // The pod's first packet already meets the policies that select it.
  RETURN_IF_ERROR(SyncFirewall().WithContext("pod " + spec.name));
  Status started = StartPod(spec, &st);
  RETURN_IF_ERROR(SaveState(spec.name, st));
  return started;
}

void LocalRuntime::HoldPodImages() {
  for (const auto& name : files::ListDir(opts_.dir + "/pods")) {
    auto spec = GetPodSpec(name);
    if (!spec.ok() || !*spec || (*spec)->image.empty()) continue;
    if (auto held = ImageStore(opts_.image_store).Hold((*spec)->image, PodDir(name)); !held.ok()) {
      spdlog::warn("pod {}: {}", name, held.status().message());
    }
  }
}

Result<std::string> LocalRuntime::PodImageRoot(const PodSpec& spec, bool* writable) {
  if (opts_.image_store.empty()) return Status::Errorf("image \"{}\": this runtime has no image store", spec.image);
  // Held while the pod exists: a rebuild of its environment leaves its image in place.
  ASSIGN_OR_RETURN(std::string root, ImageStore(opts_.image_store).Hold(spec.image, PodDir(spec.name)));
  if (spec.shared_root.empty()) return root;
  *writable = spec.shared_root_writable;
  return EnsureSharedRoot(VolumePath(spec.shared_root), root, spec.image);
}

Result<LaunchPlan> LocalRuntime::PlanLaunch(const PodSpec& spec) {
  LaunchPlan plan;
  plan.hostname = spec.name;
  // The pod's root is assembled on this empty directory inside the pod's mount namespace only.
  plan.root_dir = PodDir(spec.name) + "/rootfs";
  RETURN_IF_ERROR(files::MakeDirs(plan.root_dir, 0700));
  plan.tmp_mib = spec.tmp_mib > 0 ? spec.tmp_mib : kDefaultPodTmpMiB;
  if (!spec.image.empty()) {
    ASSIGN_OR_RETURN(plan.image_root, PodImageRoot(spec, &plan.image_writable));
  }
  plan.netns_path = Network::NetnsPath(network_.names().Netns(spec.name));
  for (const auto& m : spec.mounts) {
    ASSIGN_OR_RETURN(std::string src, ResolveMountSource(spec, m));
    plan.mounts.push_back({src, m.mount_path, m.read_only});
  }
  // Name resolution between pods, as cluster DNS gives on Kubernetes.
  plan.mounts.push_back({opts_.dir + "/hosts", "/etc/hosts", true});
  // Pods have no route to the host's name servers; an empty resolver config makes lookups of
  // unknown names fail at once instead of after DNS timeouts (slurmrestd resolves every peer).
  plan.mounts.push_back({opts_.dir + "/resolv.conf", "/etc/resolv.conf", true});
  plan.command = spec.command;
  plan.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=" + spec.name,
              "HOME=/tmp"};
  for (const auto& [k, v] : spec.env) plan.env.push_back(k + "=" + v);
  plan.uid = spec.uid;
  plan.gid = spec.gid;
  plan.working_dir = spec.working_dir;
  plan.started_file = StartedFile(spec.name);
  RETURN_IF_ERROR(cgroups_.Create(spec.name, spec.resources.limits, spec.resources.requests.cpus));
  for (const auto& dir : cgroups_.Dirs(spec.name)) {
    plan.cgroups.push_back({dir.host_dir, dir.pod_path, !spec.delegate_cgroups});
  }
  RETURN_IF_ERROR(PlanGpus(spec, &plan));
  return plan;
}

Status LocalRuntime::PlanGpus(const PodSpec& spec, LaunchPlan* plan) {
  const int wanted = std::max(spec.resources.limits.gpus, spec.resources.requests.gpus);
  if (wanted <= 0) return Status::Ok();
  // A worker never starts with fewer GPUs than it declares: it waits (the supervisor retries)
  // with the reason in its status.
  ASSIGN_OR_RETURN(std::vector<HostGpu> host_gpus, ListHostGpus(opts_.gpus));
  ASSIGN_OR_RETURN(std::vector<HostGpu> mine,
                   GpuClaims(opts_.gpu_claims_dir).Claim(PodDir(spec.name), wanted, host_gpus));
  for (const auto& gpu : mine) {
    plan->devices.push_back({gpu.device, fmt::format("nvidia{}", gpu.minor), false});
    plan->gpu_entries.push_back({gpu.info_dir, "/proc/driver/nvidia/gpus/" + gpu.bus_id, true});
  }
  for (const auto& control : GpuControlDevices(opts_.gpus)) {
    plan->devices.push_back({control, control.substr(control.rfind('/') + 1), false});
  }
  // The driver's tools and libraries, copied afresh at each start (the host's driver may have
  // been upgraded since). Not over a shared root: an overlay's lower layer must not change while
  // mounted, and a shared root's admin installs into it while workers run.
  const std::vector<DriverFile> driver_files = ListDriverFiles(opts_.gpus.driver_root);
  if (!spec.shared_root.empty()) {
    if (!driver_files.empty())
      spdlog::warn("pod {}: on a shared root: the GPU driver's files are not given", spec.name);
  } else if (driver_files.empty()) {
    spdlog::warn("pod {}: no NVIDIA driver files under {} (HPCPLANE_GPU_DRIVER_ROOT): no nvidia-smi, no GPU checks",
                 spec.name, opts_.gpus.driver_root);
  } else {
    const std::string layer = PodDir(spec.name) + "/gpu-driver";
    // Overlay options separate layers with ':' and options with ','.
    if ((layer + plan->image_root).find_first_of(":,") != std::string::npos) {
      return Status::Errorf("pod {}: the GPU driver's files cannot be laid over /usr: a ':' or ',' in {} or {}",
                            spec.name, layer, plan->image_root);
    }
    RETURN_IF_ERROR(StageDriverFiles(driver_files, layer));
    plan->usr_layer = layer;
  }
  return Status::Ok();
}

namespace {

// Clones `hpcplane __pod-init PLAN` (the program `exe`) into new PID, mount and UTS namespaces,
// its output appended to `log`. Only async-signal-safe calls happen between clone and exec.
Result<pid_t> CloneInit(const std::string& exe, const std::string& plan_path, const std::string& log) {
  int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (log_fd < 0) return Status::Errorf("open log: {}", std::strerror(errno));
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  struct Args {
    int log_fd, null_fd;
    const char* exe;
    const char* plan;
  } args{log_fd, null_fd, exe.c_str(), plan_path.c_str()};
  auto child_fn = [](void* p) -> int {
    auto* a = static_cast<Args*>(p);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(a->null_fd, 0);
    ::dup2(a->log_fd, 1);
    ::dup2(a->log_fd, 2);
    char* const argv[] = {const_cast<char*>("hpcplane"), const_cast<char*>("__pod-init"), const_cast<char*>(a->plan),
                          nullptr};
    ::execv(a->exe, argv);
    _exit(127);
  };
  constexpr size_t kStack = 64 * 1024;
  std::vector<char> stack(kStack);
  pid_t pid = ::clone(+child_fn, stack.data() + kStack, CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | SIGCHLD, &args);
  int err = errno;
  ::close(log_fd);
  ::close(null_fd);
  if (pid < 0) return Status::Errorf("clone: {}", std::strerror(err));
  return pid;
}

}  // namespace

Status LocalRuntime::StartPod(const PodSpec& spec, PodState* st) {
  RETURN_IF_ERROR(network_.EnsureBridge());
  RETURN_IF_ERROR(network_.EnsurePod(spec.name, st->ip));
  // The pod's name resolves from here on, once its address answers (a refused connection, not
  // an unanswered ARP), and before its own process looks itself up.
  RETURN_IF_ERROR(UpdateHosts());
  auto plan = PlanLaunch(spec);
  if (!plan.ok()) {
    st->message = plan.status().message();
    return plan.status().WithContext("pod " + spec.name);
  }
  oom_kills_at_start_[spec.name] = cgroups_.OomKills(spec.name);
  const std::string plan_path = PodDir(spec.name) + "/launch.json";
  RETURN_IF_ERROR(files::WriteAtomic(plan_path, ToJson(*plan).dump(2), 0600));
  // A file of the previous run would say this one started before its init built anything.
  if (::unlink(plan->started_file.c_str()) != 0 && errno != ENOENT) {
    return Status::Errorf("pod {}: remove {}: {}", spec.name, plan->started_file, std::strerror(errno));
  }
  auto pid = CloneInit(opts_.self_exe, plan_path, PodDir(spec.name) + "/log");
  if (!pid.ok()) {
    st->message = pid.status().message();
    return pid.status().WithContext("pod " + spec.name);
  }
  st->pid = *pid;
  st->pid_start = hpc::ProcessStartTime(*pid);
  st->started_at = UnixNow();
  st->ready = false;
  st->stopped = false;
  st->message.clear();
  st->announces_start = true;
  next_probe_ms_[spec.name] = 0;
  spdlog::info("pod {} started (pid {}, ip {})", spec.name, *pid, st->ip);
  return Status::Ok();
}

Status LocalRuntime::StopProcess(PodState* st) {
  if (!st->Alive()) return Status::Ok();
  ::kill(st->pid, SIGTERM);
  auto deadline = Clock::now() + opts_.stop_grace;
  while (Clock::now() < deadline) {
    int status;
    if (::waitpid(st->pid, &status, WNOHANG) == st->pid || !st->Alive()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (st->Alive()) {
    ::kill(st->pid, SIGKILL);  // as PID 1 of the pod, its death ends every process in it
    for (int i = 0; i < 250 && st->Alive(); ++i) {
      int status;
      ::waitpid(st->pid, &status, WNOHANG);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  int status;
  ::waitpid(st->pid, &status, WNOHANG);
  if (st->Alive()) return Status::Errorf("process {} did not stop", st->pid);
  return Status::Ok();
}

Status LocalRuntime::DeletePod(const std::string& name) {
  if (!files::Exists(PodDir(name))) {
    RETURN_IF_ERROR(cgroups_.Remove(name));
    return network_.DeletePod(name);
  }
  auto st = LoadState(name);
  if (st.ok()) RETURN_IF_ERROR(StopProcess(&*st).WithContext("pod " + name));
  RETURN_IF_ERROR(network_.DeletePod(name));
  RETURN_IF_ERROR(cgroups_.Remove(name).WithContext("pod " + name));
  RETURN_IF_ERROR(GpuClaims(opts_.gpu_claims_dir).Release(PodDir(name)).WithContext("pod " + name));
  if (!opts_.image_store.empty()) {
    RETURN_IF_ERROR(ImageStore(opts_.image_store).Release(PodDir(name)).WithContext("pod " + name));
  }
  spdlog::info("pod {} deleted", name);
  RETURN_IF_ERROR(files::RemoveAll(PodDir(name)));
  RETURN_IF_ERROR(SyncFirewall());
  return UpdateHosts();
}

Status LocalRuntime::UpdateHosts() {
  std::vector<std::string> lines = {"127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback",
                                    network_.subnet().Gateway() + "\thpcplane-host"};
  for (const auto& name : files::ListDir(opts_.dir + "/pods")) {
    auto st = LoadState(name);
    // A pod holds its address from its creation but is named only once its network exists.
    if (st.ok() && !st->ip.empty() && files::Exists(Network::NetnsPath(network_.names().Netns(name)))) {
      lines.push_back(st->ip + "\t" + name);
    }
  }
  const std::string path = opts_.dir + "/hosts";
  const std::string old = files::Read(path).value_or("");
  const std::string text = NextHostsContent(old, lines);
  if (text == old) return Status::Ok();
  return files::WriteInPlace(path, text, 0644);
}

Result<std::vector<PodStatus>> LocalRuntime::ListPods(const std::map<std::string, std::string>& selector) {
  std::vector<PodStatus> out;
  for (const auto& name : files::ListDir(opts_.dir + "/pods")) {
    auto spec = GetPodSpec(name);
    if (!spec.ok() || !*spec) continue;
    bool match = true;
    for (const auto& [k, v] : selector) {
      auto it = (*spec)->labels.find(k);
      if (it == (*spec)->labels.end() || it->second != v) match = false;
    }
    if (!match) continue;
    auto st = LoadState(name);
    if (!st.ok()) continue;
    PodStatus ps;
    ps.name = name;
    ps.labels = (*spec)->labels;
    ps.ip = st->ip;
    ps.restarts = st->restarts;
    ps.started_at = st->started_at;
    ps.message = st->message;
    ps.resources = (*spec)->resources;
    ps.image = (*spec)->image;
    ps.not_enforced = NotEnforced(ps.resources, cgroups_.hierarchy() != CgroupHierarchy::kNone);
    if (Started(name, *st)) {
      ps.phase = PodPhase::kRunning;
      ps.ready = st->ready;
    } else if (st->stopped) {
      ps.phase = st->last_exit == 0 ? PodPhase::kSucceeded : PodPhase::kFailed;
    } else {
      ps.phase = PodPhase::kPending;
    }
    out.push_back(std::move(ps));
  }
  return out;
}

// ---- exec and logs ----

}  // namespace hpc::runtime::local
