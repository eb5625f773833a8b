#include "runtime/local/local_runtime.h"

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

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/files.h"
#include "runtime/local/pod_init.h"


namespace hpc::runtime::local {

using nlohmann::json;
using Clock = std::chrono::steady_clock;



int64_t DescendantsRssKiB(pid_t pid) {
  int64_t total = 0;
  std::vector<pid_t> todo = {pid};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    std::ifstream status("/proc/" + std::to_string(p) + "/status");
    std::string line;
    while (p != pid && std::getline(status, line)) {
      if (line.rfind("VmRSS:", 0) == 0) total += std::atoll(line.c_str() + 6);
    }
    for (const auto& task : files::ListDir("/proc/" + std::to_string(p) + "/task")) {
      std::ifstream children("/proc/" + std::to_string(p) + "/task/" + task + "/children");
      pid_t child = 0;
      while (children >> child) todo.push_back(child);
    }
  }
  return total;
}

struct LocalRuntime::PodState {
  pid_t pid = 0;
  uint64_t pid_start = 0;
  std::string ip;
  int restarts = 0;
  int consecutive_failures = 0;
  bool ready = false;
  bool stopped = false;  // finished and not to be restarted (policy)
  int last_exit = -1;
  int64_t started_at = 0;
  std::string message;

  bool Alive() const { return pid > 0 && hpc::ProcessStartTime(pid) == pid_start && pid_start != 0; }
};

namespace {

// Size of each pod's private /tmp (and /dev/shm): a job's scratch cannot fill the host's disk.
constexpr int64_t kPodTmpMiB = 1024;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
}
int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

json MountJson(const Mount& m) {
  return {{"source", static_cast<int>(m.source)}, {"name", m.name}, {"mountPath", m.mount_path},
          {"subPath", m.sub_path}, {"readOnly", m.read_only}};
}

json ResourceListJson(const ResourceList& r) {
  return {{"cpus", r.cpus}, {"memoryMiB", r.memory_mib}, {"gpus", r.gpus}};
}

ResourceList ResourceListFromJson(const json& j) {
  return {j.at("cpus").get<int>(), j.at("memoryMiB").get<int64_t>(), j.at("gpus").get<int>()};
}

// What this runtime does not enforce of a pod's resources. Memory limits are enforced by the
// supervisor (resident memory checked every second; the pod is killed and restarted); nothing
// here confines CPU time or devices, and every pod runs on this one machine, so requests
// reserve nothing either (Slurm's node definitions are what divides the machine).
std::vector<std::string> NotEnforced(const Resources& r) {
  std::vector<std::string> out;
  if (r.limits.cpus > 0) out.push_back("limits.cpus: not enforced: the local runtime does not confine CPU time");
  if (r.limits.gpus > 0 || r.requests.gpus > 0) {
    out.push_back("gpus: not isolated: the local runtime does not confine devices; Slurm's GRES divides them");
  }
  if (r.requests.cpus > 0 || r.requests.memory_mib > 0) {
    out.push_back("requests: not reserved: every local pod runs on this machine");
  }
  return out;
}

json SpecJson(const PodSpec& s) {
  json mounts = json::array();
  for (const auto& m : s.mounts) mounts.push_back(MountJson(m));
  return {{"name", s.name},           {"labels", s.labels},
          {"command", s.command},     {"env", s.env},
          {"uid", s.uid},             {"gid", s.gid},
          {"workingDir", s.working_dir}, {"mounts", mounts},
          {"readiness", {{"tcpPort", s.readiness.tcp_port}, {"command", s.readiness.command}}},
          {"liveness",
           {{"httpPort", s.liveness.http_port},
            {"command", s.liveness.command},
            {"periodSeconds", s.liveness.period_seconds},
            {"timeoutSeconds", s.liveness.timeout_seconds},
            {"failureThreshold", s.liveness.failure_threshold}}},
          {"restartPolicy", static_cast<int>(s.restart_policy)},
          {"resources", {{"requests", ResourceListJson(s.resources.requests)}, {"limits", ResourceListJson(s.resources.limits)}}},
          {"tmpMiB", s.tmp_mib}};
}

Result<PodSpec> SpecFromJson(const json& j) {
  try {
    PodSpec s;
    s.name = j.at("name");
    s.labels = j.at("labels").get<std::map<std::string, std::string>>();
    s.command = j.at("command").get<std::vector<std::string>>();
    s.env = j.at("env").get<std::map<std::string, std::string>>();
    s.uid = j.at("uid");
    s.gid = j.at("gid");
    s.working_dir = j.at("workingDir");
    for (const auto& m : j.at("mounts")) {
      s.mounts.push_back({static_cast<MountSource>(m.at("source").get<int>()), m.at("name"), m.at("mountPath"),
                          m.at("subPath"), m.at("readOnly")});
    }
    s.readiness.tcp_port = j.at("readiness").at("tcpPort");
    s.readiness.command = j.at("readiness").at("command").get<std::vector<std::string>>();
    s.restart_policy = static_cast<RestartPolicy>(j.at("restartPolicy").get<int>());
    if (j.contains("resources")) {
      s.resources.requests = ResourceListFromJson(j.at("resources").at("requests"));
      s.resources.limits = ResourceListFromJson(j.at("resources").at("limits"));
    } else {  // specs written before resources had a memory limit only
      s.resources.limits.memory_mib = j.value("memoryLimitMiB", int64_t{0});
    }
    s.tmp_mib = j.value("tmpMiB", int64_t{0});
    if (j.contains("liveness")) {  // specs written before liveness probes have none
      const json& l = j.at("liveness");
      s.liveness.http_port = l.at("httpPort");
      s.liveness.command = l.at("command").get<std::vector<std::string>>();
      s.liveness.period_seconds = l.at("periodSeconds");
      s.liveness.timeout_seconds = l.at("timeoutSeconds");
      s.liveness.failure_threshold = l.at("failureThreshold");
    }
    return s;
  } catch (const json::exception& e) {
    return Status::Errorf("pod spec: {}", e.what());
  }
}

// A non-blocking TCP connection to ip:port established within `timeout_ms`: its descriptor, or
// -1. The caller closes it.
int ConnectWithin(const std::string& ip, int port, int timeout_ms) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (!ok && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    ok = ::poll(&p, 1, timeout_ms) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
  }
  if (!ok) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool TcpConnects(const std::string& ip, int port, int timeout_ms) {
  int fd = ConnectWithin(ip, port, timeout_ms);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// Whether an HTTP server on ip:port answers a request within the timeout: any status line will
// do. A stopped (SIGSTOP) or hung server still accepts the connection in the kernel, so a TCP
// connect alone cannot tell.
bool HttpAnswers(const std::string& ip, int port, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int fd = ConnectWithin(ip, port, timeout_ms);
  if (fd < 0) return false;
  static const char kRequest[] = "GET / HTTP/1.0\r\nUser-Agent: hpcplane-liveness\r\n\r\n";
  bool ok = false;
  if (::send(fd, kRequest, sizeof kRequest - 1, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof kRequest - 1)) {
    const auto left = std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    pollfd r{fd, POLLIN, 0};
    char buf[8];
    ok = ::poll(&r, 1, static_cast<int>(left)) == 1 && ::recv(fd, buf, sizeof buf, 0) >= 5 &&
         std::string(buf, 5) == "HTTP/";
  }
  ::close(fd);
  return ok;
}

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
  for (const char* sub : {"/configmaps", "/secrets", "/volumes", "/pods"}) {
    RETURN_IF_ERROR(files::MakeDirs(options.dir + sub, std::string(sub) == "/secrets" ? 0700 : 0755));
  }
  Network net(NamesFor(options.cluster_key), subnet);
  std::unique_ptr<LocalRuntime> rt(new LocalRuntime(std::move(options), std::move(net)));
  RETURN_IF_ERROR(rt->UpdateHosts());
  RETURN_IF_ERROR(files::WriteAtomic(rt->opts_.dir + "/resolv.conf", "# pods resolve names from /etc/hosts only\noptions timeout:1 attempts:1\n"));
  return rt;
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

Status LocalRuntime::EnsureVolume(const std::string& name, int64_t uid, int64_t gid, uint32_t mode) {
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
  return st;
}

Status LocalRuntime::SaveState(const std::string& pod, const PodState& st) const {
  json j = {{"pid", st.pid},         {"pidStart", st.pid_start}, {"ip", st.ip},
            {"restarts", st.restarts}, {"consecutiveFailures", st.consecutive_failures},
            {"ready", st.ready},     {"stopped", st.stopped},   {"lastExit", st.last_exit},
            {"startedAt", st.started_at}, {"message", st.message}};
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
    case MountSource::kConfigMap: base = opts_.dir + "/configmaps/" + m.name; break;
    case MountSource::kSecret: base = opts_.dir + "/secrets/" + m.name; break;
    case MountSource::kVolume: base = VolumePath(m.name); break;
    case MountSource::kEmptyDir: {
      base = PodDir(spec.name) + "/empty/" + m.name;
      if (!files::Exists(base)) {
        RETURN_IF_ERROR(files::MakeDirs(base, 0755));
        ::chown(base.c_str(), static_cast<uid_t>(spec.uid), static_cast<gid_t>(spec.gid));
      }
      break;
    }
    case MountSource::kHostPath: base = m.name; break;
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
  RETURN_IF_ERROR(UpdateHosts());
  Status started = StartPod(spec, &st);
  RETURN_IF_ERROR(SaveState(spec.name, st));
  return started;
}

Status LocalRuntime::StartPod(const PodSpec& spec, PodState* st) {
  RETURN_IF_ERROR(network_.EnsureBridge());
  RETURN_IF_ERROR(network_.EnsurePod(spec.name, st->ip));
  LaunchPlan plan;
  plan.hostname = spec.name;
  // The pod's root is assembled on this empty directory inside the pod's mount namespace only.
  plan.root_dir = PodDir(spec.name) + "/rootfs";
  RETURN_IF_ERROR(files::MakeDirs(plan.root_dir, 0700));
  plan.tmp_mib = spec.tmp_mib > 0 ? spec.tmp_mib : kPodTmpMiB;
  plan.netns_path = Network::NetnsPath(network_.names().Netns(spec.name));
  for (const auto& m : spec.mounts) {
    auto src = ResolveMountSource(spec, m);
    if (!src.ok()) {
      st->message = src.status().message();
      return src.status();
    }
    plan.mounts.push_back({*src, m.mount_path, m.read_only});
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
  const std::string plan_path = PodDir(spec.name) + "/launch.json";
  RETURN_IF_ERROR(files::WriteAtomic(plan_path, ToJson(plan).dump(2), 0600));

  int log_fd = ::open((PodDir(spec.name) + "/log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (log_fd < 0) return Status::Errorf("pod {}: open log: {}", spec.name, std::strerror(errno));
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);

  struct Args {
    int log_fd, null_fd;
    const char* exe;
    const char* plan;
  } args{log_fd, null_fd, opts_.self_exe.c_str(), plan_path.c_str()};
  // Only async-signal-safe calls happen between clone and exec.
  auto child_fn = [](void* p) -> int {
    auto* a = static_cast<Args*>(p);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(a->null_fd, 0);
    ::dup2(a->log_fd, 1);
    ::dup2(a->log_fd, 2);
    char* const argv[] = {const_cast<char*>("hpcplane"), const_cast<char*>("__pod-init"),
                          const_cast<char*>(a->plan), nullptr};
    ::execv(a->exe, argv);
    _exit(127);
  };
  constexpr size_t kStack = 64 * 1024;
  std::vector<char> stack(kStack);
  pid_t pid = ::clone(+child_fn, stack.data() + kStack, CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | SIGCHLD, &args);
  int err = errno;
  ::close(log_fd);
  ::close(null_fd);
  if (pid < 0) {
    st->message = fmt::format("clone: {}", std::strerror(err));
    return Status::Errorf("pod {}: {}", spec.name, st->message);
  }
  st->pid = pid;
  st->pid_start = hpc::ProcessStartTime(pid);
  st->started_at = UnixNow();
  st->ready = false;
  st->stopped = false;
  st->message.clear();
  next_probe_ms_[spec.name] = 0;
  spdlog::info("pod {} started (pid {}, ip {})", spec.name, pid, st->ip);
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
  if (!files::Exists(PodDir(name))) return network_.DeletePod(name);
  auto st = LoadState(name);
  if (st.ok()) RETURN_IF_ERROR(StopProcess(&*st).WithContext("pod " + name));
  RETURN_IF_ERROR(network_.DeletePod(name));
  spdlog::info("pod {} deleted", name);
  RETURN_IF_ERROR(files::RemoveAll(PodDir(name)));
  return UpdateHosts();
}

Status LocalRuntime::UpdateHosts() {
  std::string text = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
                     network_.subnet().Gateway() + "\thpcplane-host\n";
  for (const auto& name : files::ListDir(opts_.dir + "/pods")) {
    auto st = LoadState(name);
    if (st.ok() && !st->ip.empty()) text += st->ip + "\t" + name + "\n";
  }
  // In place: running pods have this file bind-mounted.
  auto old = files::Read(opts_.dir + "/hosts");
  if (old.ok() && *old == text) return Status::Ok();
  return files::WriteInPlace(opts_.dir + "/hosts", text, 0644);
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
    ps.not_enforced = NotEnforced(ps.resources);
    if (st->Alive()) {
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

bool LocalRuntime::ProbeReady(const PodSpec& spec, const PodState& st) {
  if (spec.readiness.tcp_port > 0) return TcpConnects(st.ip, spec.readiness.tcp_port, 200);
  if (!spec.readiness.command.empty()) {
    ExecOptions o;
    o.argv = spec.readiness.command;
    o.timeout = std::chrono::milliseconds(3000);
    auto r = Exec(spec.name, o);
    return r.ok() && r->exit_code == 0;
  }
  return true;
}

bool LocalRuntime::ProbeAlive(const PodSpec& spec, const PodState& st) {
  const int timeout_ms = spec.liveness.timeout_seconds * 1000;
  if (spec.liveness.http_port > 0) return HttpAnswers(st.ip, spec.liveness.http_port, timeout_ms);
  ExecOptions o;
  o.argv = spec.liveness.command;
  o.timeout = std::chrono::milliseconds(timeout_ms);
  auto r = Exec(spec.name, o);
  return r.ok() && r->exit_code == 0;
}

SupervisionResult LocalRuntime::Supervise() {
  SupervisionResult result;
  // Reap our children so they do not linger as zombies; adopted pods are checked by start time.
  for (;;) {
    int status = 0;
    pid_t p = ::waitpid(-1, &status, WNOHANG);
    if (p <= 0) break;
    reaped_[p] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  const int64_t now = NowMs();
  for (const auto& name : files::ListDir(opts_.dir + "/pods")) {
    auto spec = GetPodSpec(name);
    auto st = LoadState(name);
    if (!spec.ok() || !*spec || !st.ok()) continue;
    PodState before = *st;
    if (st->Alive()) {
      if (now >= next_probe_ms_[name]) {
        st->ready = ProbeReady(**spec, *st);
        // Probe often until ready. A ready TCP server is not probed again (each probe is a
        // connection the daemon logs as an error); process supervision covers its death.
        // A pod with a liveness probe is watched by that once ready.
        const bool tcp = (*spec)->readiness.tcp_port > 0;
        next_probe_ms_[name] = now + (!st->ready ? 25 : tcp || (*spec)->liveness.Set() ? INT64_MAX / 2 : 10000);
        if (st->ready && UnixNow() - st->started_at > 10) st->consecutive_failures = 0;
      }
      const LivenessProbe& live = (*spec)->liveness;
      if (live.Set() && st->ready && now >= next_liveness_ms_[name]) {
        next_liveness_ms_[name] = now + live.period_seconds * 1000LL;
        if (ProbeAlive(**spec, *st)) {
          liveness_failures_[name] = 0;
        } else if (++liveness_failures_[name] >= live.failure_threshold) {
          // Hung, not dead: as PID 1 of the pod, its death ends every process in it; the exit
          // below restarts it by its policy.
          killed_why_[name] = fmt::format("killed: its liveness probe failed {} times in a row ({} s apart)",
                                                 liveness_failures_[name], live.period_seconds);
          liveness_failures_[name] = 0;
          spdlog::warn("pod {} {}", name, killed_why_[name]);
          ::kill(st->pid, SIGKILL);
        }
      }
      const int64_t limit_mib = (*spec)->resources.limits.memory_mib;
      if (limit_mib > 0 && now >= next_memory_check_ms_[name]) {
        next_memory_check_ms_[name] = now + 1000;
        // What runs under the pod's init: the init is hpcplane's, not the workload's.
        int64_t rss_mib = DescendantsRssKiB(st->pid) / 1024;
        if (rss_mib > limit_mib) {
          // As PID 1 of the pod, its death ends every process in it; the exit below restarts it.
          killed_why_[name] = fmt::format("killed: its processes used {} MiB, over its memory limit of {} MiB",
                                                 rss_mib, limit_mib);
          spdlog::warn("pod {} {}", name, killed_why_[name]);
          ::kill(st->pid, SIGKILL);
        }
      }
    } else if (!st->stopped) {
      if (st->pid > 0) {
        auto it = reaped_.find(st->pid);
        st->last_exit = it != reaped_.end() ? it->second : -1;
        if (it != reaped_.end()) reaped_.erase(it);
        bool ran_long = UnixNow() - st->started_at > 10;
        st->consecutive_failures = ran_long ? 1 : st->consecutive_failures + 1;
        const auto policy = (*spec)->restart_policy;
        bool restart = policy == RestartPolicy::kAlways || (policy == RestartPolicy::kOnFailure && st->last_exit != 0);
        st->message = fmt::format("exited with status {}", st->last_exit);
        if (auto k = killed_why_.find(name); k != killed_why_.end()) {
          st->message = k->second;
          killed_why_.erase(k);
        }
        st->pid = 0;
        st->pid_start = 0;
        st->ready = false;
        if (!restart) {
          st->stopped = true;
        } else {
          // Exponential backoff from 200 ms, capped at 10 s.
          int64_t delay = std::min<int64_t>(10000, 200LL << std::min(st->consecutive_failures - 1, 6));
          next_start_ms_[name] = now + delay;
          spdlog::warn("pod {} {}; restarting in {} ms", name, st->message, delay);
        }
      }
      if (!st->stopped && now >= next_start_ms_[name]) {
        if (before.pid == 0 && before.started_at > 0) ++st->restarts;
        Status s = StartPod(**spec, &*st);
        if (!s.ok()) {
          spdlog::error("{}", s.message());
          next_start_ms_[name] = now + 2000;
        }
      }
    }
    if (st->pid != before.pid || st->ready != before.ready || st->stopped != before.stopped ||
        st->message != before.message || st->restarts != before.restarts) {
      (void)SaveState(name, *st);
      result.changed = true;
    }
    if (!st->stopped && !(st->Alive() && st->ready)) result.settled = false;
  }
  return result;
}

Status LocalRuntime::Teardown() {
  Status first;
  // TERM everything first so pods stop in parallel, then collect.
  auto names = files::ListDir(opts_.dir + "/pods");
  for (const auto& name : names) {
    auto st = LoadState(name);
    if (st.ok() && st->Alive()) ::kill(st->pid, SIGTERM);
  }
  for (const auto& name : names) {
    Status s = DeletePod(name);
    if (!s.ok() && first.ok()) first = s;
  }
  // Safety net: any pod init still running from this runtime's directory (its state file lost
  // or rewritten mid-crash) is ours by its command line; killing it ends its whole pod.
  const std::string marker = opts_.dir + "/pods/";
  for (const auto& entry : files::ListDir("/proc")) {
    if (entry.find_first_not_of("0123456789") != std::string::npos) continue;
    auto cmdline = files::Read("/proc/" + entry + "/cmdline");
    if (!cmdline.ok() || cmdline->find("__pod-init") == std::string::npos || cmdline->find(marker) == std::string::npos) {
      continue;
    }
    pid_t pid = std::stoi(entry);
    spdlog::warn("killing leftover pod init {} ({})", pid, marker);
    ::kill(pid, SIGKILL);
  }
  Status s = network_.DeleteAll();
  if (!s.ok() && first.ok()) first = s;
  return first;
}

// ---- exec and logs ----

Result<std::vector<std::string>> LocalRuntime::ExecArgv(const std::string& pod, const ExecOptions& opts) {
  auto loaded = LoadState(pod);
  if (!loaded.ok()) return Status::Errorf("pod {} not found", pod);
  const PodState& st = *loaded;
  if (!st.Alive()) return Status::Errorf("pod {} is not running", pod);
  if (opts.argv.empty()) return Status::Error("exec: no command given");
  std::vector<std::string> argv = {"nsenter", "--target", std::to_string(st.pid), "--net", "--uts",
                                   "--mount", "--pid", "--root", "--wd=/", "--"};
  if (opts.user != "root") {
    // Every user has a private group named after it (see slurm-users).
    argv.insert(argv.end(), {"setpriv", "--reuid=" + opts.user, "--regid=" + opts.user, "--init-groups", "--"});
  }
  // The working directory is entered by env, inside the pod: nsenter would resolve a path
  // before joining the pod's mounts and land in the host's directory under a mount point.
  argv.insert(argv.end(), {"env", "-i", "--chdir=" + (opts.working_dir.empty() ? std::string("/") : opts.working_dir),
                           "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "USER=" + opts.user,
                           "LOGNAME=" + opts.user, "HOSTNAME=" + pod});
  bool has_home = opts.env.count("HOME") > 0;
  if (!has_home) argv.push_back(opts.user == "root" ? "HOME=/root" : "HOME=/tmp");
  for (const auto& [k, v] : opts.env) argv.push_back(k + "=" + v);
  argv.insert(argv.end(), opts.argv.begin(), opts.argv.end());
  return argv;
}

Result<ProcessResult> LocalRuntime::Exec(const std::string& pod, const ExecOptions& opts) {
  ASSIGN_OR_RETURN(auto argv, ExecArgv(pod, opts));
  RunOptions ro;
  ro.timeout = opts.timeout;
  ro.stdin_data = opts.stdin_data;
  return RunProcess(argv, ro);
}

Result<int> LocalRuntime::ExecInteractive(const std::string& pod, const ExecOptions& opts) {
  ASSIGN_OR_RETURN(auto argv, ExecArgv(pod, opts));
  pid_t pid = ::fork();
  if (pid < 0) return Status::Errorf("fork: {}", std::strerror(errno));
  if (pid == 0) {
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    _exit(127);
  }
  // The terminal's signals reach the child directly; we only wait.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Result<std::string> LocalRuntime::Logs(const std::string& pod, size_t tail_lines) {
  std::string path = PodDir(pod) + "/log";
  if (!files::Exists(PodDir(pod))) return Status::Errorf("pod {} not found", pod);
  if (!files::Exists(path)) return std::string();
  ASSIGN_OR_RETURN(std::string text, files::Read(path));
  if (tail_lines == 0) return text;
  std::deque<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (lines.size() > tail_lines) lines.pop_front();
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace hpc::runtime::local
