#include "runtime/local/pod_init.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "common/files.h"
#include "runtime/local/pod_cgroups.h"
#include "runtime/local/user_namespaces.h"

namespace hpc::runtime::local {

namespace {

nlohmann::json MountsJson(const std::vector<LaunchMount>& in) {
  nlohmann::json mounts = nlohmann::json::array();
  for (const auto& m : in) mounts.push_back({{"source", m.source}, {"target", m.target}, {"readOnly", m.read_only}});
  return mounts;
}

std::vector<LaunchMount> MountsFromJson(const nlohmann::json& j) {
  std::vector<LaunchMount> out;
  for (const auto& m : j) {
    out.push_back({m.at("source").get<std::string>(), m.at("target").get<std::string>(), m.at("readOnly").get<bool>()});
  }
  return out;
}

}  // namespace

nlohmann::json ToJson(const LaunchPlan& p) {
  return {{"hostname", p.hostname},
          {"rootDir", p.root_dir},
          {"imageRoot", p.image_root},
          {"imageWritable", p.image_writable},
          {"tmpMiB", p.tmp_mib},
          {"netns", p.netns_path},
          {"mounts", MountsJson(p.mounts)},
          {"cgroups", MountsJson(p.cgroups)},
          {"devices", MountsJson(p.devices)},
          {"gpuEntries", MountsJson(p.gpu_entries)},
          {"usrLayer", p.usr_layer},
          {"command", p.command},
          {"env", p.env},
          {"uid", p.uid},
          {"gid", p.gid},
          {"workingDir", p.working_dir},
          {"startedFile", p.started_file}};
}

Result<LaunchPlan> LaunchPlanFromJson(const nlohmann::json& j) {
  try {
    LaunchPlan p;
    p.hostname = j.at("hostname").get<std::string>();
    p.root_dir = j.at("rootDir").get<std::string>();
    p.image_root = j.value("imageRoot", "");
    p.image_writable = j.value("imageWritable", false);
    p.tmp_mib = j.at("tmpMiB").get<int64_t>();
    p.netns_path = j.at("netns").get<std::string>();
    p.mounts = MountsFromJson(j.at("mounts"));
    p.cgroups = MountsFromJson(j.value("cgroups", nlohmann::json::array()));
    p.devices = MountsFromJson(j.value("devices", nlohmann::json::array()));
    p.gpu_entries = MountsFromJson(j.value("gpuEntries", nlohmann::json::array()));
    p.usr_layer = j.value("usrLayer", "");
    p.command = j.at("command").get<std::vector<std::string>>();
    p.env = j.at("env").get<std::vector<std::string>>();
    p.uid = j.at("uid").get<int64_t>();
    p.gid = j.at("gid").get<int64_t>();
    p.working_dir = j.at("workingDir").get<std::string>();
    p.started_file = j.value("startedFile", "");
    return p;
  } catch (const nlohmann::json::exception& e) {
    return Status::Errorf("launch plan: {}", e.what());
  }
}

namespace {

[[noreturn]] void Die(const std::string& what) {
  if (errno != 0) {
    std::fprintf(stderr, "pod-init: %s: %s\n", what.c_str(), std::strerror(errno));
  } else {
    std::fprintf(stderr, "pod-init: %s\n", what.c_str());
  }
  std::fflush(stderr);
  _exit(127);
}

void MountOrDie(const char* src, const char* target, const char* type, unsigned long flags,
                const char* data = nullptr) {
  if (::mount(src, target, type, flags, data) != 0) Die(std::string("mount ") + target);
}

// Creates a mount point of the same kind (file or directory) as the source.
void EnsureMountPoint(const std::string& target, bool is_dir) {
  std::error_code ec;
  if (std::filesystem::exists(target, ec)) return;
  std::filesystem::create_directories(is_dir ? target : std::filesystem::path(target).parent_path().string(), ec);
  if (!is_dir) {
    int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
  }
}

void MakeDirOrDie(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) Die("mkdir " + path);
  ::chmod(path.c_str(), mode);  // mkdir applies the umask
}

void SymlinkOrDie(const std::string& to, const std::string& at) {
  if (::symlink(to.c_str(), at.c_str()) != 0) Die("symlink " + at);
}

// Binds `source` (a path, or /proc/self/fd/N) at `target`, read-only when asked; system
// directories are nosuid too: nothing in a pod gains privileges from a host binary.
void Bind(const std::string& source, const std::string& target, bool read_only, bool nosuid = false) {
  MountOrDie(source.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC);
  if (read_only || nosuid) {
    unsigned long flags = MS_BIND | MS_REMOUNT | (read_only ? MS_RDONLY : 0) | (nosuid ? MS_NOSUID : 0);
    MountOrDie(nullptr, target.c_str(), nullptr, flags);
  }
}

// Makes `root`/`path` show `from`/`path` (the host's, or an image's) read-only: the same symlink
// where `from` has a symlink there (merged /usr), a bind of the file or directory otherwise;
// absent stays absent.
void ShowSystemPath(const std::string& root, const std::string& from, const std::string& path, bool writable = false) {
  struct stat st;
  const std::string source = from + path;
  if (::lstat(source.c_str(), &st) != 0) return;
  std::string target = root + path;
  if (S_ISLNK(st.st_mode)) {
    char buf[4096];
    ssize_t n = ::readlink(source.c_str(), buf, sizeof buf - 1);
    if (n <= 0) Die("readlink " + source);
    SymlinkOrDie(std::string(buf, static_cast<size_t>(n)), target);
    return;
  }
  EnsureMountPoint(target, S_ISDIR(st.st_mode));
  Bind(source, target, !writable, true);
}

// The system part of the pod's root (see the contract in pod_init.h).
constexpr const char* kSystemDirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
// Of the host's /etc, only what programs need to run: the rest (keys, the host's accounts and
// services) is not the pod's business.
constexpr const char* kHostEtcEntries[] = {
    "alternatives", "bash.bashrc", "debian_version", "environment",  "gai.conf",      "host.conf",
    "inputrc",      "ld.so.cache", "ld.so.conf",     "ld.so.conf.d", "locale.alias",  "localtime",
    "login.defs",   "mime.types",  "mysql",          "networks",     "nsswitch.conf", "os-release",
    "perl",         "profile",     "profile.d",      "protocols",    "python3",       "python3.11",
    "rpc",          "services",    "shells",         "ssl",          "terminfo",      "timezone",
    "mtab"};
// An image's /etc is the pod's, less the accounts, keys and host files the runtime provides
// (or leaves out); so are its /opt and its package database (dpkg -l, apt in a shared root).
constexpr const char* kImageEtcLeftOut[] = {"passwd",   "group",       "shadow",     "gshadow", "hosts",
                                            "hostname", "resolv.conf", "machine-id", "subuid",  "subgid"};
constexpr const char* kImageExtraDirs[] = {"/opt", "/var/lib/dpkg"};

// The top-level names under /etc that the pod's own mounts use: they stay the pod's (a read-only
// bind from the image there would leave no place for the mount point).
std::set<std::string> EtcNamesMounted(const std::vector<LaunchMount>& mounts) {
  std::set<std::string> names;
  for (const auto& m : mounts) {
    if (m.target.rfind("/etc/", 0) != 0) continue;
    names.insert(m.target.substr(5, m.target.find('/', 5) - 5));
  }
  return names;
}

// The pod's /etc: the chosen parts of the host's, or an image's own.
void ShowEtc(const std::string& root, const std::string& image_root, bool writable,
             const std::vector<LaunchMount>& mounts) {
  MakeDirOrDie(root + "/etc", 0755);
  if (image_root.empty()) {
    for (const char* entry : kHostEtcEntries) ShowSystemPath(root, "", std::string("/etc/") + entry);
    return;
  }
  std::set<std::string> skip = EtcNamesMounted(mounts);
  skip.insert(std::begin(kImageEtcLeftOut), std::end(kImageEtcLeftOut));
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(image_root + "/etc", ec)) {
    const std::string name = entry.path().filename().string();
    if (!skip.count(name)) ShowSystemPath(root, image_root, "/etc/" + name, writable);
  }
  if (ec) Die("read " + image_root + "/etc: " + ec.message());
}

// Moves this process (and so everything the pod will run) into the pod's cgroups.
void JoinCgroups(const std::vector<LaunchMount>& cgroups) {
  for (const auto& cg : cgroups) {
    if (Status s = JoinCgroup(cg.source); !s.ok()) {
      errno = 0;
      Die(s.message());
    }
  }
}

// /sys/fs/cgroup shows the pod's own cgroups only: a fresh tmpfs (v1: one directory per
// controller) or the pod's directory itself (v2), never the host's hierarchy.
void ShowPodCgroups(const std::string& root, const std::vector<LaunchMount>& cgroups) {
  if (cgroups.empty()) return;
  const std::string base = root + "/sys/fs/cgroup";
  const bool per_controller = cgroups.front().target != "/sys/fs/cgroup";
  if (per_controller) {
    MountOrDie("tmpfs", base.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755,size=1m");
  }
  for (const auto& cg : cgroups) {
    const std::string target = root + cg.target;
    EnsureMountPoint(target, true);
    Bind(cg.source, target, cg.read_only);
  }
  if (per_controller)
    MountOrDie(nullptr, base.c_str(), nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
}

// `root`/usr: `layer` over the image's (or the host's) /usr, read-only and nosuid like any
// system directory. Overlay options separate directories with ':' and options with ','.
void ShowUsrWithLayer(const std::string& root, const std::string& image, const std::string& layer) {
  const std::string lower = image + "/usr";
  if (layer.find_first_of(":,") != std::string::npos || lower.find_first_of(":,") != std::string::npos) {
    errno = EINVAL;
    Die("overlay /usr: a ':' or ',' in " + layer + " or " + lower);
  }
  MakeDirOrDie(root + "/usr", 0755);
  const std::string options = "lowerdir=" + layer + ":" + lower;
  MountOrDie("overlay", (root + "/usr").c_str(), "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, options.c_str());
}

void BuildSystemRoot(const LaunchPlan& plan) {
  const std::string& root = plan.root_dir;
  const std::string& image = plan.image_root;
  const std::string tmp_opts = "mode=1777,size=" + std::to_string(plan.tmp_mib) + "m";
  MountOrDie("tmpfs", root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=64m");
  for (const char* dir : kSystemDirs) {
    if (std::string(dir) == "/usr" && !plan.usr_layer.empty() && !plan.image_writable) {
      ShowUsrWithLayer(root, image, plan.usr_layer);
    } else {
      ShowSystemPath(root, image, dir, plan.image_writable);
    }
  }
  ShowEtc(root, image, plan.image_writable, plan.mounts);
  MakeDirOrDie(root + "/tmp", 01777);
  MountOrDie("tmpfs", (root + "/tmp").c_str(), "tmpfs", MS_NOSUID | MS_NODEV, tmp_opts.c_str());
  MakeDirOrDie(root + "/run", 0755);
  MountOrDie("tmpfs", (root + "/run").c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=64m");
  MakeDirOrDie(root + "/var", 0755);
  for (const char* dir : {"lib", "log", "spool", "cache"}) MakeDirOrDie(root + "/var/" + dir, 0755);
  if (!image.empty()) {
    for (const char* dir : kImageExtraDirs) ShowSystemPath(root, image, dir, plan.image_writable);
  }
  MakeDirOrDie(root + "/var/tmp", 01777);
  SymlinkOrDie("../run", root + "/var/run");
  MakeDirOrDie(root + "/root", 0700);
  MakeDirOrDie(root + "/proc", 0555);
  MakeDirOrDie(root + "/sys", 0555);
  // A sysfs of the pod's own network namespace (this process joined it): /sys/class/net lists
  // the pod's interfaces, not the host's (MPI libraries pick their interfaces there). Without
  // pod cgroups the host's /sys stays, with its cgroup mounts, as slurmd wants them.
  if (plan.cgroups.empty()) {
    Bind("/sys", root + "/sys", true);
  } else {
    MountOrDie("sysfs", (root + "/sys").c_str(), "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
  }
  ShowPodCgroups(root, plan.cgroups);
  // A minimal /dev: the usual character devices, a private pseudo-terminal instance, shm.
  const std::string dev = root + "/dev";
  MakeDirOrDie(dev, 0755);
  MountOrDie("tmpfs", dev.c_str(), "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=1m");
  for (const char* node : {"null", "zero", "full", "random", "urandom", "tty"}) {
    EnsureMountPoint(dev + "/" + node, false);
    Bind(std::string("/dev/") + node, dev + "/" + node, false);
  }
  // Read-only, nosuid: the pod cannot chmod or chown the host's device files; reading and
  // writing a character device does not need a writable mount.
  for (const auto& d : plan.devices) {
    EnsureMountPoint(dev + "/" + d.target, false);
    Bind(d.source, dev + "/" + d.target, true, true);
  }
  MakeDirOrDie(dev + "/pts", 0755);
  MountOrDie("devpts", (dev + "/pts").c_str(), "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620");
  SymlinkOrDie("pts/ptmx", dev + "/ptmx");
  MakeDirOrDie(dev + "/shm", 01777);
  MountOrDie("tmpfs", (dev + "/shm").c_str(), "tmpfs", MS_NOSUID | MS_NODEV, tmp_opts.c_str());
  SymlinkOrDie("/proc/self/fd", dev + "/fd");
  SymlinkOrDie("/proc/self/fd/0", dev + "/stdin");
  SymlinkOrDie("/proc/self/fd/1", dev + "/stdout");
  SymlinkOrDie("/proc/self/fd/2", dev + "/stderr");
}

// Where the GPU entries wait (in the pod's /dev) between their binds, made while the host's
// paths are still in view, and the pod's /proc, mounted once the pod's root is "/".
constexpr const char* kGpuEntriesStage = "/dev/.gpu-entries";

// Binds each of `entries` (open directories) read-only in the new root's stage, by index.
void StageGpuEntries(const std::string& root, const std::vector<std::pair<int, LaunchMount>>& entries) {
  if (entries.empty()) return;
  MakeDirOrDie(root + kGpuEntriesStage, 0500);
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string staged = root + kGpuEntriesStage + "/" + std::to_string(i);
    MakeDirOrDie(staged, 0500);
    Bind("/proc/self/fd/" + std::to_string(entries[i].first), staged, true);
    ::close(entries[i].first);
  }
}

// Makes `path` a fresh tmpfs (or the deepest directory of it that exists, the rest made in it);
// returns where the tmpfs is.
std::string MaskWithTmpfs(const std::string& path) {
  std::string top = path;
  struct stat st;
  while (!top.empty() && (::stat(top.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) top = top.substr(0, top.rfind('/'));
  if (top.empty()) Die("no directory of " + path + " to mount on");
  MountOrDie("tmpfs", top.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755,size=64k");
  for (std::string dir = top; dir != path;) {
    dir = path.substr(0, path.find('/', dir.size() + 1));
    MakeDirOrDie(dir, 0755);
  }
  return top;
}

// slurmd (gpu/nvidia) reads each GPU's CPUs (sysfs local_cpulist, the host's numbering) and
// offers the GPU only with those of its worker's cores: a worker's N cores are Slurm's first N
// machine CPUs, not the GPU's NUMA node's, so a GPU would be offered with none and every job
// asking for it would be "never runnable". Jobs are not bound to cores here (cgroup.conf), so
// each GPU of the pod is shown local to every CPU the host has online.
void ShowGpusLocalToEveryCpu(const std::vector<std::pair<int, LaunchMount>>& entries) {
  const std::string drivers = "/sys/bus/pci/drivers/nvidia";
  std::string online = "0";
  if (auto text = files::Read("/sys/devices/system/cpu/online"); text.ok() && !text->empty()) online = *text;
  const std::string top = MaskWithTmpfs(drivers);
  for (const auto& [fd, e] : entries) {
    const std::string dir = drivers + "/" + e.target.substr(e.target.rfind('/') + 1);
    MakeDirOrDie(dir, 0555);
    if (Status s = files::WriteAtomic(dir + "/local_cpulist", online, 0444); !s.ok()) Die(s.message());
  }
  MountOrDie(nullptr, top.c_str(), nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
}

// The driver's list of GPUs shows the pod's own only, as the NVIDIA container toolkit masks it:
// a tmpfs over /proc/driver/nvidia/gpus (or over /proc/driver, where the list comes from
// elsewhere) holding the pod's GPUs' directories, each moved there from the stage.
void ShowOwnGpus(const std::vector<std::pair<int, LaunchMount>>& entries) {
  const std::string list = "/proc/driver/nvidia/gpus";
  if (entries.empty()) {
    // A pod that holds no GPU sees none of the host's (/proc is not per namespace): slurmd's
    // AutoDetect on a CPU worker would find them all.
    struct stat st;
    if (::stat(list.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      MountOrDie("tmpfs", list.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=555,size=4k");
    }
    return;
  }
  if (::access("/proc/driver", F_OK) != 0) Die("no /proc/driver to show the pod's GPUs in");
  const std::string top = MaskWithTmpfs(list);
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string staged = std::string(kGpuEntriesStage) + "/" + std::to_string(i);
    MakeDirOrDie(entries[i].second.target, 0555);
    MountOrDie(staged.c_str(), entries[i].second.target.c_str(), nullptr, MS_MOVE);
    ::rmdir(staged.c_str());
  }
  ::rmdir(kGpuEntriesStage);
  MountOrDie(nullptr, top.c_str(), nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
  ShowGpusLocalToEveryCpu(entries);
}

// Makes `root` the pod's "/" and detaches the host's root from this mount namespace.
void EnterRoot(const std::string& root) {
  if (::chdir(root.c_str()) != 0) Die("chdir " + root);
  // pivot_root(".", ".") stacks the old root on the new one; unmounting "." then removes it.
  if (::syscall(SYS_pivot_root, ".", ".") != 0) Die("pivot_root " + root);
  if (::umount2(".", MNT_DETACH) != 0) Die("detach the host's root");
  if (::chdir("/") != 0) Die("chdir /");
}

// The pod's command, as the pod's user, in a session of its own (the child of init's fork).
[[noreturn]] void ExecCommand(LaunchPlan& plan) {
  ::setsid();
  if (plan.uid != 0 || plan.gid != 0) {
    gid_t g = static_cast<gid_t>(plan.gid);
    if (::setgroups(1, &g) != 0 || ::setgid(g) != 0 || ::setuid(static_cast<uid_t>(plan.uid)) != 0) {
      Die("drop privileges");
    }
  }
  if (::chdir(plan.working_dir.c_str()) != 0) Die("chdir " + plan.working_dir);
  std::vector<char*> argv, envp;
  for (auto& a : plan.command) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : plan.env) envp.push_back(e.data());
  envp.push_back(nullptr);
  ::execvpe(argv[0], argv.data(), envp.data());
  Die("exec " + plan.command[0]);
}

// The started file's directory (pod_init.h), opened while the host's root is still in view;
// -1 where the plan names none.
int OpenStartedDir(const LaunchPlan& plan) {
  if (plan.started_file.empty()) return -1;
  const std::string dir = std::filesystem::path(plan.started_file).parent_path().string();
  int fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) Die("open " + dir);
  return fd;
}

// Creates the started file in `dir` (from OpenStartedDir): the pod is whole.
void AnnounceStarted(int dir, const LaunchPlan& plan) {
  if (dir < 0) return;
  const std::string name = std::filesystem::path(plan.started_file).filename().string();
  int fd = ::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) Die("create " + plan.started_file);
  ::close(fd);
  ::close(dir);
}

pid_t g_child = -1;
void Forward(int sig) {
  if (g_child > 0) ::kill(g_child, sig);
}

}  // namespace

int RunPodInit(const std::string& plan_path) {
  auto text = files::Read(plan_path);
  if (!text.ok()) Die(text.status().message());
  auto j = nlohmann::json::parse(*text, nullptr, false);
  auto plan_or = LaunchPlanFromJson(j);
  if (!plan_or.ok()) {
    std::fprintf(stderr, "pod-init: %s\n", plan_or.status().message().c_str());
    return 127;
  }
  LaunchPlan plan = std::move(plan_or).value();

  const int started_dir = OpenStartedDir(plan);
  JoinCgroups(plan.cgroups);
  // Mount changes stay inside this pod.
  MountOrDie(nullptr, "/", nullptr, MS_REC | MS_PRIVATE);
  int netfd = ::open(plan.netns_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (netfd < 0 || ::setns(netfd, CLONE_NEWNET) != 0) Die("join network namespace " + plan.netns_path);
  ::close(netfd);
  if (::sethostname(plan.hostname.data(), plan.hostname.size()) != 0) Die("sethostname");

  // Sources are opened first, then bound through /proc/self/fd into the new root.
  std::vector<std::pair<int, LaunchMount>> sources;
  for (const auto& m : plan.mounts) {
    int fd = ::open(m.source.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) Die("open mount source " + m.source);
    sources.emplace_back(fd, m);
  }
  std::vector<std::pair<int, LaunchMount>> gpu_entries;
  for (const auto& e : plan.gpu_entries) {
    int fd = ::open(e.source.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) Die("open GPU entry " + e.source);
    gpu_entries.emplace_back(fd, e);
  }
  BuildSystemRoot(plan);
  // Parents before children, so nested mount paths land on top of their parents.
  std::sort(sources.begin(), sources.end(), [](const auto& a, const auto& b) {
    return std::count(a.second.target.begin(), a.second.target.end(), '/') <
           std::count(b.second.target.begin(), b.second.target.end(), '/');
  });
  for (const auto& [fd, m] : sources) {
    struct stat st;
    if (::fstat(fd, &st) != 0) Die("stat " + m.source);
    const std::string target = plan.root_dir + m.target;
    EnsureMountPoint(target, S_ISDIR(st.st_mode));
    Bind("/proc/self/fd/" + std::to_string(fd), target, m.read_only);
    ::close(fd);
  }
  StageGpuEntries(plan.root_dir, gpu_entries);
  EnterRoot(plan.root_dir);
  // A /proc of this pod's PID namespace: `ps` inside shows the pod's processes only, and a user
  // only their own (hidepid=2: two tenants' jobs on one worker do not see each other's).
  MountOrDie("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2");
  ShowOwnGpus(gpu_entries);

  // From here on neither this init nor anything it starts creates a user namespace.
  if (Status denied = DenyUserNamespaces(); !denied.ok()) {
    errno = 0;
    Die(denied.message());
  }

  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old);
  // The command waits until init has announced the pod and let go of the host directory it
  // announces in: nothing of the pod's own ever runs beside that handle (/proc/1/fd).
  int go[2];
  if (::pipe2(go, O_CLOEXEC) != 0) Die("pipe");
  g_child = ::fork();
  if (g_child < 0) Die("fork");
  if (g_child == 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    ::close(go[1]);
    if (started_dir >= 0) ::close(started_dir);
    char byte;
    while (::read(go[0], &byte, 1) < 0 && errno == EINTR) {}
    ::close(go[0]);
    ExecCommand(plan);
  }
  ::close(go[0]);

  struct sigaction sa {};
  sa.sa_handler = Forward;
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) ::sigaction(sig, &sa, nullptr);
  sigprocmask(SIG_SETMASK, &old, nullptr);
  AnnounceStarted(started_dir, plan);
  ::close(go[1]);  // the command goes on

  // PID 1: reap everything; leave when the pod's command does.
  for (;;) {
    int status = 0;
    pid_t p = ::waitpid(-1, &status, 0);
    if (p < 0) {
      if (errno == EINTR) continue;
      return 127;
    }
    if (p == g_child) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return 128 + WTERMSIG(status);
    }
  }
}

}  // namespace hpc::runtime::local
