// The local runtime's supervision with real processes: a pod over its memory limit is killed
// and restarted, and says why, as a Kubernetes memory limit would; supervision reaps its pods
// and no other process.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "common/files.h"
#include "common/subprocess.h"
#include "harness.h"
#include "runtime/local/local_runtime.h"

namespace hpc::it {
namespace {

using namespace std::chrono_literals;

TEST(LocalRuntime, PodOverItsMemoryLimitIsKilledAndRestarted) {
  auto dir = files::MakeTempDir("hpcplane-rt");
  ASSERT_TRUE(dir.ok());
  runtime::local::LocalRuntime::Options o;
  o.dir = *dir + "/runtime";
  o.cluster_key = *dir + "/memlimit";
  o.subnet = "10.239." + std::to_string(::getpid() % 256) + ".0/24";
  o.self_exe = HPCPLANE_BIN;
  o.supervise = true;
  auto rt = runtime::local::LocalRuntime::Create(o);
  ASSERT_TRUE(rt.ok()) << rt.status().message();
  runtime::PodSpec hog;
  hog.name = "hog";
  // Takes 200 MiB, then waits; its limit is 100 MiB.
  hog.command = {"python3", "-c",
                 "import time; x = bytearray(200 << 20); x[::4096] = b'x' * len(x[::4096]); time.sleep(600)"};
  hog.resources.limits.memory_mib = 100;
  runtime::PodSpec calm = hog;
  calm.name = "calm";
  calm.command = {"sleep", "600"};
  calm.resources.limits.cpus = 1;
  ASSERT_TRUE((*rt)->CreatePod(hog).ok());
  ASSERT_TRUE((*rt)->CreatePod(calm).ok());
  auto pod = [&](const std::string& name) {
    runtime::PodStatus out;
    auto pods = (*rt)->ListPods({});
    if (pods.ok()) {
      for (const auto& p : *pods) {
        if (p.name == name) out = p;
      }
    }
    return out;
  };
  EXPECT_TRUE(WaitFor(
      [&] {
        (*rt)->Supervise();
        return pod("hog").restarts >= 1;
      },
      60s))
      << pod("hog").message;
  // Its last exit says why, with the numbers; the pod under its limit runs on untouched.
  EXPECT_TRUE(WaitFor(
      [&] {
        (*rt)->Supervise();
        return pod("hog").message.find("over its memory limit of 100 MiB") != std::string::npos;
      },
      10s))
      << pod("hog").message;
  EXPECT_EQ(pod("calm").restarts, 0);
  // The memory limit is enforced; the CPU limit is where the host has cgroups, and the status
  // says which.
  EXPECT_TRUE(pod("hog").not_enforced.empty());
  if ((*rt)->cgroup_hierarchy() == runtime::local::CgroupHierarchy::kNone) {
    ASSERT_EQ(pod("calm").not_enforced.size(), 1u);
    EXPECT_EQ(pod("calm").not_enforced[0].rfind("limits.cpus: not enforced", 0), 0u) << pod("calm").not_enforced[0];
  } else {
    EXPECT_TRUE(pod("calm").not_enforced.empty()) << pod("calm").not_enforced[0];
  }
  EXPECT_EQ(pod("calm").phase, runtime::PodPhase::kRunning);
  ASSERT_TRUE((*rt)->Teardown().ok());
  rt->reset();
  (void)files::RemoveAll(*dir);
}

runtime::local::LocalRuntime::Options RuntimeOptions(const std::string& dir, const std::string& name, int subnet_byte) {
  runtime::local::LocalRuntime::Options o;
  o.dir = dir + "/runtime";
  o.cluster_key = dir + "/" + name;
  o.subnet = "10.239." + std::to_string(subnet_byte) + ".0/24";
  o.self_exe = HPCPLANE_BIN;
  o.supervise = true;
  return o;
}

// The daemon supervises its pods on one thread while its agent and terminals run processes of
// their own on others: supervision reaps only its pods, so each of those reads its own exit
// status (a supervisor that reaped every child made a failed command read as exit 0, and left its
// waiter waiting on whatever process took the pid next), and a pod's exit is told with its status.
TEST(LocalRuntime, SupervisionReapsItsPodsAndNoOtherThreadsChildren) {
  auto dir = files::MakeTempDir("hpcplane-rt");
  ASSERT_TRUE(dir.ok());
  auto rt = runtime::local::LocalRuntime::Create(RuntimeOptions(*dir, "reaping", (::getpid() + 64) % 256));
  ASSERT_TRUE(rt.ok()) << rt.status().message();
  runtime::PodSpec once;
  once.name = "once";
  once.command = {"sh", "-c", "sleep 0.5; exit 7"};
  once.restart_policy = runtime::RestartPolicy::kNever;
  ASSERT_TRUE((*rt)->CreatePod(once).ok());
  std::atomic<bool> stop{false};
  std::thread supervisor([&] {
    while (!stop) (*rt)->Supervise();
  });
  int wrong = 0;
  for (int i = 0; i < 200; ++i) {
    auto r = RunProcess({"sh", "-c", "exit 3"});
    if (!r.ok() || r->exit_code != 3) ++wrong;
  }
  stop = true;
  supervisor.join();
  EXPECT_EQ(wrong, 0) << "commands run beside the supervisor that did not read their own exit status";
  auto message = [&] {
    auto pods = (*rt)->ListPods({});
    return pods.ok() && !pods->empty() ? pods->front().message : std::string();
  };
  EXPECT_TRUE(WaitFor(
      [&] {
        (*rt)->Supervise();
        return !message().empty();
      },
      10s));
  EXPECT_EQ(message(), "exited with status 7");
  ASSERT_TRUE((*rt)->Teardown().ok());
  rt->reset();
  (void)files::RemoveAll(*dir);
}

// Runs `script` in the pod as root, or as uid/gid 65534 with `unprivileged` (these pods have no
// /etc/passwd of their own).
std::string ExecIn(runtime::PodRuntime& rt, const std::string& pod, const std::string& script,
                   bool unprivileged = false) {
  runtime::ExecOptions e;
  e.argv = {"sh", "-c", script};
  if (unprivileged) e.argv.insert(e.argv.begin(), {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
  auto r = rt.Exec(pod, e);
  if (!r.ok()) return "exec failed: " + r.status().message();
  return Trim(r->out) + (r->exit_code != 0 ? " (exit " + std::to_string(r->exit_code) + ")" : "");
}

// The pid of this process's child that runs `hpcplane __pod-init`, once it does; 0 until then.
pid_t PodInitChild() {
  const std::string self = std::to_string(::getpid());
  for (const auto& task : files::ListDir("/proc/" + self + "/task")) {
    auto children = files::Read("/proc/" + self + "/task/" + task + "/children");
    if (!children.ok()) continue;
    std::istringstream in(*children);
    pid_t child = 0;
    while (in >> child) {
      auto cmdline = files::Read("/proc/" + std::to_string(child) + "/cmdline");
      if (cmdline.ok() && cmdline->find("__pod-init") != std::string::npos) return child;
    }
  }
  return 0;
}

// Whether `pid` still has the host's root as its own (a pod's init before it entered the pod's).
bool HasTheHostsRoot(pid_t pid) {
  struct stat host, its;
  return ::stat("/", &host) == 0 && ::stat(("/proc/" + std::to_string(pid) + "/root/").c_str(), &its) == 0 &&
         host.st_dev == its.st_dev && host.st_ino == its.st_ino;
}

// The freezer of the cgroup pod `pod` of cluster `key` will have, made ahead of the pod: its init
// joins its cgroups first of all, and stops there while this is frozen.
class PodFreezer {
 public:
  PodFreezer(runtime::local::CgroupHierarchy h, const std::string& key, const std::string& pod)
      : v2_(h == runtime::local::CgroupHierarchy::kV2) {
    std::string dir = v2_ ? "/sys/fs/cgroup" : "/sys/fs/cgroup/freezer";
    for (const std::string& level : {std::string("hpcplane"), key, pod}) {
      dir += "/" + level;
      ::mkdir(dir.c_str(), 0755);
    }
    control_ = dir + (v2_ ? "/cgroup.freeze" : "/freezer.state");
  }
  ~PodFreezer() { Set(false); }  // never leaves a pod frozen, whatever the test's outcome
  bool Set(bool frozen) {
    std::ofstream out(control_);
    out << (v2_ ? (frozen ? "1" : "0") : (frozen ? "FROZEN" : "THAWED"));
    out.flush();
    return static_cast<bool>(out);
  }

 private:
  bool v2_;
  std::string control_;
};

// A pod is Running, and exec enters it, only once its init has built it: an exec that came
// while the init was still mounting joined a mount namespace with the host's root in it (the
// host's files and cgroups: a CPU quota of -1 was read under CI's load). The init is held, frozen,
// as it joins the pod's cgroups, before it builds anything: the pod is not Running and exec is
// refused; once it goes on, exec finds the pod's root only.
TEST(LocalRuntime, ExecNeverEntersAPodItsInitIsStillBuilding) {
  auto dir = files::MakeTempDir("hpcplane-rt");
  ASSERT_TRUE(dir.ok());
  const auto options = RuntimeOptions(*dir, "building", (::getpid() + 192) % 256);
  auto rt = runtime::local::LocalRuntime::Create(options);
  ASSERT_TRUE(rt.ok()) << rt.status().message();
  if ((*rt)->cgroup_hierarchy() == runtime::local::CgroupHierarchy::kNone) {
    GTEST_SKIP() << "this host has no cgroups the local runtime can use: nothing holds a pod's init";
  }
  // The test's directory is on the host and in no pod.
  auto where = [&](const std::string& pod) {
    runtime::ExecOptions e;
    e.argv = {"sh", "-c", "test -d " + *dir + " && echo host || echo pod"};
    e.timeout = 10s;
    auto r = (*rt)->Exec(pod, e);
    return r.ok() ? Trim(r->out) : r.status().message();
  };
  auto phase = [&](const std::string& pod) {
    auto pods = (*rt)->ListPods({});
    if (pods.ok()) {
      for (const auto& p : *pods) {
        if (p.name == pod) return std::string(runtime::PodPhaseName(p.phase));
      }
    }
    return std::string("not listed");
  };
  PodFreezer freezer((*rt)->cgroup_hierarchy(), runtime::local::NamesFor(options.cluster_key).key, "held");
  ASSERT_TRUE(freezer.Set(true));
  runtime::PodSpec spec;
  spec.name = "held";
  spec.command = {"sleep", "600"};
  ASSERT_TRUE((*rt)->CreatePod(spec).ok());
  pid_t init = 0;
  ASSERT_TRUE(WaitFor([&] { return (init = PodInitChild()) > 0; }, 10s));
  EXPECT_TRUE(HasTheHostsRoot(init)) << "the init is held before it entered the pod's root";
  EXPECT_EQ(phase(spec.name), "Pending");
  EXPECT_NE(where(spec.name).find("is starting"), std::string::npos) << where(spec.name);
  ASSERT_TRUE(freezer.Set(false));
  ASSERT_TRUE(WaitFor([&] { return phase(spec.name) == "Running"; }, 30s));
  EXPECT_EQ(where(spec.name), "pod");
  ASSERT_TRUE((*rt)->Teardown().ok());
  rt->reset();
  (void)files::RemoveAll(*dir);
}

// Every process of a pod, its init's children and what exec starts in it alike, is in the pod's
// own cgroups, which enforce its CPU limit and are all it sees of the hierarchy; only a pod that
// delegates may create cgroups below its own; no process in any pod creates a user namespace.
TEST(LocalRuntime, PodsLiveInTheirOwnCgroupsAndCreateNoUserNamespaces) {
  auto dir = files::MakeTempDir("hpcplane-rt");
  ASSERT_TRUE(dir.ok());
  auto rt = runtime::local::LocalRuntime::Create(RuntimeOptions(*dir, "cgroups", (::getpid() + 128) % 256));
  ASSERT_TRUE(rt.ok()) << rt.status().message();
  if ((*rt)->cgroup_hierarchy() != runtime::local::CgroupHierarchy::kV1) {
    GTEST_SKIP() << "this host has no cgroup v1 hierarchy: the test checks v1's files";
  }
  runtime::PodSpec plain;
  plain.name = "plain";
  plain.command = {"sleep", "600"};
  plain.resources.limits.cpus = 1;
  plain.resources.limits.memory_mib = 300;
  runtime::PodSpec delegating = plain;
  delegating.name = "delegating";
  delegating.delegate_cgroups = true;
  ASSERT_TRUE((*rt)->CreatePod(plain).ok());
  ASSERT_TRUE((*rt)->CreatePod(delegating).ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        (*rt)->Supervise();
        auto pods = (*rt)->ListPods({});
        return pods.ok() && pods->size() == 2 && (*pods)[0].phase == runtime::PodPhase::kRunning &&
               (*pods)[1].phase == runtime::PodPhase::kRunning;
      },
      30s));
  // The limits, as the pod itself reads them.
  EXPECT_EQ(ExecIn(**rt, "plain", "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us"), "100000");
  EXPECT_EQ(ExecIn(**rt, "plain", "cat /sys/fs/cgroup/memory/memory.limit_in_bytes"), std::to_string(300 << 20));
  // Its processes are in its cgroup: the pod's command (PID 2, under the pod's init) and exec's.
  const std::string own = ExecIn(**rt, "plain", "grep :memory: /proc/2/cgroup; grep :memory: /proc/self/cgroup");
  EXPECT_NE(own.find(":memory:/hpcplane/"), std::string::npos) << own;
  EXPECT_EQ(own.substr(0, own.find('\n')), own.substr(own.find('\n') + 1)) << own;
  EXPECT_EQ(own.substr(own.size() - std::string("/plain").size()), "/plain") << own;
  // Nothing of the host's hierarchy: only the pod's controllers.
  EXPECT_EQ(ExecIn(**rt, "plain", "ls /sys/fs/cgroup/memory | grep -c '^hpcplane$'"), "0 (exit 1)");
  // Delegation: root in the delegating pod creates a cgroup below its own; in the other it cannot.
  EXPECT_EQ(ExecIn(**rt, "delegating", "mkdir /sys/fs/cgroup/memory/job && echo made"), "made");
  EXPECT_NE(ExecIn(**rt, "plain", "mkdir /sys/fs/cgroup/memory/job 2>/dev/null && echo made"), "made");
  // No user namespaces, neither for root nor for a user, while ordinary processes still start.
  for (bool unprivileged : {false, true}) {
    EXPECT_EQ(ExecIn(**rt, "plain", "unshare -Ur true 2>/dev/null; echo $?", unprivileged), "1") << unprivileged;
    EXPECT_EQ(ExecIn(**rt, "plain", "unshare -U true 2>/dev/null; echo $?", unprivileged), "1") << unprivileged;
    EXPECT_EQ(ExecIn(**rt, "plain",
                     "python3 -c 'import os; pid = os.fork(); pid or os._exit(0); print(os.waitpid(pid, 0)[1])'",
                     unprivileged),
              "0")
        << unprivileged;
  }
  // What the pods held of the hierarchy goes with them, the delegated cgroup too.
  const std::string key = runtime::local::NamesFor(*dir + "/cgroups").key;
  EXPECT_TRUE(files::Exists("/sys/fs/cgroup/memory/hpcplane/" + key + "/delegating/job"));
  ASSERT_TRUE((*rt)->Teardown().ok());
  EXPECT_FALSE(files::Exists("/sys/fs/cgroup/memory/hpcplane/" + key));
  EXPECT_FALSE(files::Exists("/sys/fs/cgroup/cpu/hpcplane/" + key));
  rt->reset();
  (void)files::RemoveAll(*dir);
}

}  // namespace
}  // namespace hpc::it
