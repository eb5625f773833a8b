// The translation of runtime objects into Kubernetes objects (docs/kubernetes-runtime.md): names,
// resources, probes, users, secrets' owners through the prepare container, sidecars, and what
// cannot be expressed refused.
#include "runtime/kubernetes/objects.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "common/files.h"
#include "common/jwt.h"
#include "common/subprocess.h"

namespace hpc::runtime::kubernetes {
namespace {

using nlohmann::json;

ObjectContext Context() {
  ObjectContext ctx;
  ctx.namespace_name = "slurm";
  ctx.cluster = "research";
  ctx.image = "hpcplane-slurm:test";
  return ctx;
}

const json* Find(const json& list, const std::string& name) {
  for (const auto& item : list) {
    if (item.value("name", "") == name) return &item;
  }
  return nullptr;
}

TEST(KubernetesObjectsTest, NamesArePrefixedWithTheClusterOnce) {
  EXPECT_EQ(ObjectName(Context(), "cpu-0"), "research-cpu-0");
  EXPECT_EQ(ObjectName(Context(), "research-controller"), "research-controller");
  EXPECT_EQ(HostsServiceName(Context()), "research-hosts");
}

TEST(KubernetesObjectsTest, PodCarriesHostNameResourcesProbesAndUser) {
  PodSpec p;
  p.name = "gpu-3";
  p.labels = {{"hpcplane.io/component", "worker"}, {"hpcplane.io/nodeset", "gpu"}};
  p.command = {"slurmd", "-D"};
  p.env = {{"B", "2"}, {"A", "1"}};
  p.uid = 0;
  p.readiness.tcp_port = 6818;
  p.liveness.http_port = 6820;
  p.liveness.period_seconds = 15;
  p.resources.requests = {16, 120000, 2};
  p.resources.limits.gpus = 2;
  p.resources.limits.memory_mib = 128000;
  p.tmp_mib = 4096;
  auto pod = PodObject(p, {}, Context());
  ASSERT_TRUE(pod.ok()) << pod.status().message();
  const json& o = *pod;
  EXPECT_EQ(o["metadata"]["name"], "research-gpu-3");
  EXPECT_EQ(o["metadata"]["namespace"], "slurm");
  EXPECT_EQ(o["metadata"]["labels"]["app.kubernetes.io/managed-by"], "hpcplane");
  EXPECT_EQ(o["metadata"]["labels"]["hpcplane.io/nodeset"], "gpu");
  EXPECT_FALSE(o["metadata"].contains("ownerReferences")) << "no owner uid given";
  // Slurm knows the worker by its host name; the hosts Service resolves it.
  EXPECT_EQ(o["spec"]["hostname"], "gpu-3");
  EXPECT_EQ(o["spec"]["subdomain"], "research-hosts");
  EXPECT_EQ(o["spec"]["dnsConfig"]["searches"][0], "research-hosts.slurm.svc.cluster.local");
  EXPECT_EQ(o["spec"]["automountServiceAccountToken"], false);
  const json& c = o["spec"]["containers"][0];
  EXPECT_EQ(c["name"], "worker");
  EXPECT_EQ(c["image"], "hpcplane-slurm:test");
  EXPECT_EQ(c["env"], json::parse(R"([{"name":"A","value":"1"},{"name":"B","value":"2"}])"));
  EXPECT_EQ(c["resources"]["requests"], json::parse(R"({"cpu":"16","memory":"120000Mi","nvidia.com/gpu":"2"})"));
  EXPECT_EQ(c["resources"]["limits"], json::parse(R"({"memory":"128000Mi","nvidia.com/gpu":"2"})"));
  EXPECT_EQ(c["readinessProbe"]["tcpSocket"]["port"], 6818);
  EXPECT_EQ(c["startupProbe"]["tcpSocket"]["port"], 6818) << "liveness counts only after start";
  EXPECT_EQ(c["livenessProbe"]["exec"]["command"][0], "bash") << "any HTTP answer: see AnyHttpAnswerKeepsAPodAlive";
  EXPECT_EQ(c["livenessProbe"]["periodSeconds"], 15);
  EXPECT_EQ(c["securityContext"]["runAsUser"], 0);
  // A daemon's own health paths (slurmctld 25.11 on) become HTTP probes.
  p.readiness.http_path = "/readyz";
  p.liveness.http_path = "/livez";
  auto probed = PodObject(p, {}, Context());
  ASSERT_TRUE(probed.ok());
  const json& h = (*probed)["spec"]["containers"][0];
  EXPECT_EQ(h["readinessProbe"]["httpGet"], json::parse(R"({"path":"/readyz","port":6818})"));
  EXPECT_EQ(h["livenessProbe"]["httpGet"], json::parse(R"({"path":"/livez","port":6820})"));
  const json* tmp = Find(o["spec"]["volumes"], "scratch-tmp");
  ASSERT_NE(tmp, nullptr);
  EXPECT_EQ((*tmp)["emptyDir"]["sizeLimit"], "4096Mi");
  const json* shm = Find(o["spec"]["volumes"], "scratch-shm");
  ASSERT_NE(shm, nullptr);
  EXPECT_EQ((*shm)["emptyDir"]["medium"], "Memory");
  // The only thing to prepare: /tmp and /dev/shm made sticky (the kubelet makes them 0777).
  ASSERT_EQ(o["spec"]["initContainers"].size(), 1u);
  EXPECT_EQ(o["spec"]["initContainers"][0]["command"][2],
            "chmod 1777 '/hpcplane/scratch/tmp'\nchmod 1777 '/hpcplane/scratch/shm'\n");
}

// A liveness probe that takes any HTTP answer (slurmrestd's 401 to a request without a token)
// cannot be the kubelet's httpGet, which counts only 2xx and 3xx (slurmrestd was restarted every
// 45 s). Its command, run for real: alive for a 401; dead for a closed port, and for a listener
// that never answers (the kubelet's timeout ends it).
TEST(KubernetesObjectsTest, AnyHttpAnswerKeepsAPodAlive) {
  httplib::Server server;
  server.Get("/", [](const httplib::Request&, httplib::Response& res) { res.status = 401; });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { server.listen_after_bind(); });
  PodSpec p;
  p.name = "restapi";
  p.command = {"slurmrestd"};
  p.liveness.http_port = port;
  auto pod = PodObject(p, {}, Context());
  ASSERT_TRUE(pod.ok());
  const json& live = (*pod)["spec"]["containers"][0]["livenessProbe"];
  ASSERT_TRUE(live.contains("exec")) << live.dump();
  const auto argv = live["exec"]["command"].get<std::vector<std::string>>();
  RunOptions o;
  o.timeout = std::chrono::seconds(3);
  for (int i = 0; i < 100 && !server.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto alive = RunProcess(argv, o);
  ASSERT_TRUE(alive.ok());
  EXPECT_EQ(alive->exit_code, 0) << alive->err;
  server.stop();
  serving.join();
  auto closed = RunProcess(argv, o);
  ASSERT_TRUE(closed.ok());
  EXPECT_NE(closed->exit_code, 0);
  // Accepts connections (the kernel's backlog) and never answers: a hung slurmrestd.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  auto hung = RunProcess(argv, o);
  ::close(fd);
  ASSERT_TRUE(hung.ok());
  EXPECT_FALSE(hung->ok()) << "no answer within the timeout is no life";
}

TEST(KubernetesObjectsTest, PlacementGoesToNodeSelectorTolerationsPriorityAndPullSecrets) {
  PodSpec p;
  p.name = "a100-0";
  p.command = {"slurmd"};
  p.placement.node_selector = {{"nvidia.com/gpu.product", "A100"}};
  p.placement.tolerations = {{"nvidia.com/gpu", "Exists", "", "NoSchedule", -1},
                             {"node.kubernetes.io/unreachable", "Exists", "", "NoExecute", 300}};
  p.placement.priority_class = "hpc-batch";
  p.placement.image_pull_secrets = {"registry-credentials"};
  auto pod = PodObject(p, {}, Context());
  ASSERT_TRUE(pod.ok());
  const json& s = (*pod)["spec"];
  EXPECT_EQ(s["nodeSelector"]["nvidia.com/gpu.product"], "A100");
  EXPECT_EQ(s["tolerations"][0], json::parse(R"({"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"})"));
  EXPECT_EQ(s["tolerations"][1]["tolerationSeconds"], 300);
  EXPECT_EQ(s["priorityClassName"], "hpc-batch");
  EXPECT_EQ(s["imagePullSecrets"][0]["name"], "registry-credentials");
  p.placement = {};
  auto plain = PodObject(p, {}, Context());
  for (const char* k : {"nodeSelector", "tolerations", "priorityClassName", "imagePullSecrets"}) {
    EXPECT_FALSE((*plain)["spec"].contains(k)) << k;
  }
}

TEST(KubernetesObjectsTest, AnUnprivilegedUserCannotEscalate) {
  PodSpec p;
  p.name = "research-restapi";
  p.command = {"slurmrestd"};
  p.uid = 65534;
  p.gid = 65534;
  auto pod = PodObject(p, {}, Context());
  ASSERT_TRUE(pod.ok());
  const json& sc = (*pod)["spec"]["containers"][0]["securityContext"];
  EXPECT_EQ(sc["runAsUser"], 65534);
  EXPECT_EQ(sc["runAsGroup"], 65534);
  EXPECT_EQ(sc["allowPrivilegeEscalation"], false);
  EXPECT_EQ((*pod)["metadata"]["name"], "research-restapi") << "not prefixed twice";
}

// Every pod runs under the runtime's default seccomp profile (no user namespaces), unless the
// admin gave the nodeset's pods a profile of their own.
TEST(KubernetesObjectsTest, PodsRunUnderTheDefaultSeccompProfileUnlessTheAdminChoseOne) {
  PodSpec p;
  p.name = "cpu-0";
  p.command = {"slurmd"};
  auto pod = PodObject(p, {}, Context());
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ((*pod)["spec"]["securityContext"]["seccompProfile"], json::parse(R"({"type": "RuntimeDefault"})"));
  p.placement.security_context = {{"seccompProfile", {{"type", "Localhost"}, {"localhostProfile", "hpc.json"}}},
                                  {"fsGroup", 3000}};
  auto own = PodObject(p, {}, Context());
  ASSERT_TRUE(own.ok());
  EXPECT_EQ((*own)["spec"]["securityContext"]["seccompProfile"]["type"], "Localhost");
  EXPECT_EQ((*own)["spec"]["securityContext"]["fsGroup"], 3000);
}

// The prepare step's lines for a volume and /tmp, run for real (paths moved into a temp dir, a
// stand-in chown that fails as root's does on a root-squashing NFS export): a volume's root is
// given its owner and mode; one already right is left as it is, so a root-squashed volume whose
// owner the admin set on the server starts; one that is wrong and cannot be changed fails with
// what it is, what it must be and what to do. The kubelet's 0777 emptyDir /tmp becomes 1777.
TEST(KubernetesObjectsTest, ThePrepareStepOwnsVolumesWithoutChowningWhatIsRight) {
  PodSpec p;
  p.name = "research-controller";
  p.command = {"slurmctld", "-D"};
  p.mounts = {{MountSource::kVolume, "controller-state", "/run/slurm/state", "", false}};
  MountedObjects mounted;
  const int64_t uid = 64030;
  mounted.volumes["controller-state"] = {"controller-state", uid, uid, 0750, false};
  auto pod = PodObject(p, mounted, Context());
  ASSERT_TRUE(pod.ok()) << pod.status().message();
  std::string script = (*pod)["spec"]["initContainers"][0]["command"][2];

  auto dir = files::MakeTempDir("hpcplane-prepare-test");
  ASSERT_TRUE(dir.ok());
  const std::string root = *dir + "/root", bin = *dir + "/bin";
  for (const std::string& d : {root + "/volume/controller-state", root + "/scratch/tmp", root + "/scratch/shm", bin}) {
    ASSERT_TRUE(files::MakeDirs(d, 0755).ok());
  }
  ASSERT_EQ(::chmod((root + "/scratch/tmp").c_str(), 0777), 0);
  for (size_t at; (at = script.find("/hpcplane/")) != std::string::npos;) script.replace(at, 10, root + "/");
  auto prepare = [&](bool squashed) {
    RunOptions o;
    if (squashed) {
      EXPECT_TRUE(
          files::WriteAtomic(bin + "/chown", "#!/bin/sh\necho \"chown: Operation not permitted\" >&2\nexit 1\n", 0755)
              .ok());
      o.extra_env = {{"PATH", bin + ":/usr/bin:/bin"}};
    }
    return RunProcess({"/bin/sh", "-ec", script}, o);
  };
  auto owner_mode = [&](const std::string& path) {
    struct stat st {};
    ::stat(path.c_str(), &st);
    return fmt::format("{}:{}:{:o}", st.st_uid, st.st_gid, st.st_mode & 07777);
  };
  const std::string volume = root + "/volume/controller-state";

  auto r = prepare(false);
  ASSERT_TRUE(r.ok() && r->ok()) << (r.ok() ? r->err : r.status().message());
  EXPECT_EQ(owner_mode(volume), "64030:64030:750");
  EXPECT_EQ(owner_mode(root + "/scratch/tmp"), "0:0:1777");
  r = prepare(/*squashed=*/true);
  EXPECT_TRUE(r.ok() && r->ok()) << "already right: no chown to fail";
  ASSERT_EQ(::chown(volume.c_str(), 0, 0), 0);
  r = prepare(/*squashed=*/true);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->ok());
  EXPECT_NE(r->err.find("volume controller-state: its root is 0:0:750 (owner:group:mode), must be 64030:64030:750, "
                        "and root in this pod cannot change it"),
            std::string::npos)
      << r->err;
  ASSERT_TRUE(files::RemoveAll(*dir).ok());
}

TEST(KubernetesObjectsTest, SecretsReachTheContainerOwnedAndPrivate) {
  PodSpec p;
  p.name = "research-controller";
  p.command = {"slurmctld", "-D"};
  p.mounts = {{MountSource::kSecret, "jwt-key", "/run/secrets/jwt", "", true},
              {MountSource::kVolume, "controller-state", "/run/slurm/state", "", false},
              {MountSource::kConfigMap, "slurm-scripts", "/run/slurm-scripts", "", true}};
  MountedObjects mounted;
  mounted.secrets["jwt-key"] = {"jwt-key", {}, 64030, 64030};
  mounted.volumes["controller-state"] = {"controller-state", 64030, 64030, 0700, false};
  mounted.config_map_modes["slurm-scripts"] = 0755;
  ObjectContext ctx = Context();
  ctx.owner_uid = "0d5c-uid";
  auto pod = PodObject(p, mounted, ctx);
  ASSERT_TRUE(pod.ok()) << pod.status().message();
  const json& spec = (*pod)["spec"];
  // The Secret is staged read-only; the container sees a private copy owned by its owner.
  const json* staged = Find(spec["volumes"], "staged-jwt-key");
  ASSERT_NE(staged, nullptr);
  EXPECT_EQ((*staged)["secret"]["secretName"], "research-jwt-key");
  const json* copy = Find(spec["volumes"], "secret-jwt-key");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ((*copy)["emptyDir"]["medium"], "Memory") << "secrets never touch a disk";
  const json* mount = Find(spec["containers"][0]["volumeMounts"], "secret-jwt-key");
  ASSERT_NE(mount, nullptr);
  EXPECT_EQ((*mount)["mountPath"], "/run/secrets/jwt");
  EXPECT_EQ((*mount)["readOnly"], true);
  EXPECT_EQ(Find(spec["containers"][0]["volumeMounts"], "staged-jwt-key"), nullptr) << "the raw Secret stays hidden";
  ASSERT_TRUE(spec.contains("initContainers"));
  const json& prepare = spec["initContainers"][0];
  EXPECT_EQ(prepare["name"], "prepare");
  EXPECT_EQ(prepare["securityContext"]["runAsUser"], 0);
  const std::string script = prepare["command"][2];
  EXPECT_NE(script.find("install -o 64030 -g 64030 -m 0600"), std::string::npos) << script;
  EXPECT_NE(script.find("chown 64030:64030 '/hpcplane/volume/controller-state' && chmod 0700"), std::string::npos)
      << script;
  EXPECT_NE(script.find("chmod 1777 '/hpcplane/scratch/tmp'"), std::string::npos) << "/tmp is sticky: " << script;
  const json* scripts = Find(spec["volumes"], "config-slurm-scripts");
  ASSERT_NE(scripts, nullptr);
  EXPECT_EQ((*scripts)["configMap"]["defaultMode"], 0755);
  const json* state = Find(spec["volumes"], "data-controller-state");
  ASSERT_NE(state, nullptr);
  EXPECT_EQ((*state)["persistentVolumeClaim"]["claimName"], "research-controller-state");
  EXPECT_EQ((*pod)["metadata"]["ownerReferences"][0]["uid"], "0d5c-uid");
  EXPECT_EQ((*pod)["metadata"]["ownerReferences"][0]["kind"], "SlurmCluster");
}

TEST(KubernetesObjectsTest, SidecarsStartBeforeTheMainContainerAndKeepRunning) {
  PodSpec p;
  p.name = "cpu-0";
  p.command = {"slurmd"};
  p.mounts = {{MountSource::kEmptyDir, "munge-socket", "/run/munge", "", false}};
  Sidecar munged;
  munged.name = "munged";
  munged.command = {"munged", "--foreground"};
  munged.uid = 64031;
  munged.gid = 64031;
  munged.mounts = {{MountSource::kSecret, "munge-key", "/run/secrets/munge", "", true},
                   {MountSource::kEmptyDir, "munge-socket", "/run/munge", "", false}};
  munged.readiness.command = {"munge", "--no-input"};
  p.sidecars = {munged};
  MountedObjects mounted;
  mounted.secrets["munge-key"] = {"munge-key", {}, 64031, 64031};
  auto pod = PodObject(p, mounted, Context());
  ASSERT_TRUE(pod.ok()) << pod.status().message();
  const json& init = (*pod)["spec"]["initContainers"];
  ASSERT_EQ(init.size(), 1u) << "the prepare step runs in munged's container, one container fewer to wait for";
  const json& sidecar = init[0];
  EXPECT_EQ(sidecar["name"], "munged");
  EXPECT_EQ(sidecar["restartPolicy"], "Always");
  // Keys are in place before munged reads them, and munged runs as its own user.
  EXPECT_EQ(sidecar["securityContext"]["runAsUser"], 0);
  const std::string script = sidecar["command"][2];
  const size_t install = script.find("install -o 64031 -g 64031 -m 0600");
  const size_t drop = script.find("exec setpriv --reuid=64031 --regid=64031 --clear-groups -- \"$@\"");
  EXPECT_NE(install, std::string::npos) << script;
  ASSERT_NE(drop, std::string::npos) << script;
  EXPECT_LT(install, drop) << script;
  EXPECT_EQ(sidecar["command"][4], "munged");
  EXPECT_EQ(sidecar["command"].back(), "--foreground");
  EXPECT_NE(Find(sidecar["volumeMounts"], "staged-munge-key"), nullptr) << "the prepare step's mounts too";
  // The startup probe tries again within itself (the kubelet's next try is a second away);
  // readiness is the plain command.
  const json& startup = sidecar["startupProbe"]["exec"]["command"];
  EXPECT_EQ(startup[0], "/bin/sh");
  EXPECT_EQ(startup[4], "munge");
  EXPECT_EQ(sidecar["startupProbe"]["timeoutSeconds"], 10);
  EXPECT_EQ(sidecar["readinessProbe"]["exec"]["command"][0], "munge");
  // Often while starting (bring-up waits on it), seldom after: each run is a process in the pod.
  EXPECT_EQ(sidecar["startupProbe"]["periodSeconds"], 1);
  EXPECT_EQ(sidecar["readinessProbe"]["periodSeconds"], 10);
  // One socket directory, shared by the sidecar and the main container.
  int socket_volumes = 0;
  for (const auto& v : (*pod)["spec"]["volumes"]) socket_volumes += v["name"] == "scratch-munge-socket" ? 1 : 0;
  EXPECT_EQ(socket_volumes, 1);

  // Run for real as root (paths moved into a temp dir; the sidecar's command replaced by one that
  // says who runs it): the key is munged's, private, and the daemon runs as munged's user alone.
  if (::geteuid() != 0) GTEST_SKIP() << "the privilege drop needs root";
  auto dir = files::MakeTempDir("hpcplane-fold-test");
  ASSERT_TRUE(dir.ok());
  const std::string root = *dir + "/root";
  for (const std::string& d :
       {root + "/secret-staging/munge-key", root + "/secret/munge-key", root + "/scratch/tmp", root + "/scratch/shm"}) {
    ASSERT_TRUE(files::MakeDirs(d, 0755).ok());
  }
  ASSERT_TRUE(files::WriteAtomic(root + "/secret-staging/munge-key/munge.key", "k", 0400).ok());
  std::string folded = script;
  for (size_t at; (at = folded.find("/hpcplane/")) != std::string::npos;) folded.replace(at, 10, root + "/");
  auto r = RunProcess({"/bin/sh", "-ec", folded, "prepare", "/bin/sh", "-c", "echo $(id -u):$(id -g):$(id -G)"});
  ASSERT_TRUE(r.ok() && r->ok()) << (r.ok() ? r->err : r.status().message());
  EXPECT_EQ(r->out, "64031:64031:64031\n");
  struct stat st {};
  ASSERT_EQ(::stat((root + "/secret/munge-key/munge.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 64031u);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_TRUE(files::RemoveAll(*dir).ok());
}

TEST(KubernetesObjectsTest, APodRunsItsEnvironmentsImageAndItsSidecarsTheClusters) {
  PodSpec p;
  p.name = "ws-ada-login";
  p.image = "registry.example/workspace:26.05";
  p.command = {"sleep", "infinity"};
  Sidecar munged;
  munged.name = "munged";
  munged.command = {"munged", "--foreground"};
  p.sidecars = {munged};
  auto pod = PodObject(p, {}, Context());
  ASSERT_TRUE(pod.ok()) << pod.status().message();
  EXPECT_EQ((*pod)["spec"]["containers"][0]["image"], "registry.example/workspace:26.05");
  EXPECT_EQ((*pod)["spec"]["initContainers"][0]["image"], "hpcplane-slurm:test");
  p.image.clear();
  pod = PodObject(p, {}, Context());
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ((*pod)["spec"]["containers"][0]["image"], "hpcplane-slurm:test");
}

// A shared root on Kubernetes: a claim the first pod fills from its image, mounted over the
// system directories of every worker (read-only) and of the login pod (writable).
PodSpec SharedRootPod(bool writable) {
  PodSpec p;
  p.name = writable ? "research-login" : "cpu-0";
  p.image = "registry.example/slurm:26.05";
  p.command = {"slurmd", "-D"};
  p.mounts = {{MountSource::kConfigMap, "slurm-conf", "/etc/slurm", "", true}};
  p.shared_root = "shared-root";
  p.shared_root_writable = writable;
  return p;
}

MountedObjects SharedRootMounted() {
  MountedObjects mounted;
  mounted.volumes["shared-root"] = {"shared-root", 0, 0, 0755, true};
  return mounted;
}

TEST(KubernetesObjectsTest, ASharedRootIsMountedOverTheSystemDirectoriesReadOnlyOnWorkers) {
  for (bool writable : {false, true}) {
    auto pod = PodObject(SharedRootPod(writable), SharedRootMounted(), Context());
    ASSERT_TRUE(pod.ok()) << pod.status().message();
    const json& init = (*pod)["spec"]["initContainers"];
    ASSERT_EQ(init.size(), 2u);
    EXPECT_EQ(init[0]["name"], "prepare") << "the claim's root is owned before it is filled";
    EXPECT_EQ(init[1]["name"], "shared-root");
    EXPECT_EQ(init[1]["image"], "registry.example/slurm:26.05") << "filled from the pod's own image";
    EXPECT_EQ(init[1]["securityContext"]["runAsUser"], 0);
    const json& mounts = (*pod)["spec"]["containers"][0]["volumeMounts"];
    std::map<std::string, json> by_path;
    for (const auto& m : mounts) by_path[m["mountPath"]] = m;
    for (const std::string dir : {"usr", "etc", "opt", "var/lib/dpkg"}) {
      ASSERT_TRUE(by_path.count("/" + dir)) << dir << " " << mounts.dump();
      EXPECT_EQ(by_path["/" + dir]["subPath"], "rootfs/" + dir);
      EXPECT_EQ(by_path["/" + dir].value("readOnly", false), !writable) << dir;
      EXPECT_EQ(by_path["/" + dir]["name"], init[1]["volumeMounts"][0]["name"]) << "one claim";
    }
    EXPECT_TRUE(by_path.count("/etc/slurm")) << "the cluster's configuration stays over the shared /etc";
    const json* claim = Find((*pod)["spec"]["volumes"], init[1]["volumeMounts"][0]["name"]);
    ASSERT_NE(claim, nullptr);
    EXPECT_EQ((*claim)["persistentVolumeClaim"]["claimName"], "research-shared-root");
  }
  MountedObjects none;
  EXPECT_FALSE(PodObject(SharedRootPod(false), none, Context()).ok()) << "a claim never ensured is refused";
}

TEST(KubernetesObjectsTest, TheSharedRootStepCopiesTheImageOnceAndKeepsWhatWasInstalled) {
  auto pod = PodObject(SharedRootPod(false), SharedRootMounted(), Context());
  ASSERT_TRUE(pod.ok()) << pod.status().message();
  std::string script = (*pod)["spec"]["initContainers"][1]["command"][2];
  auto dir = files::MakeTempDir("hpcplane-shared-root-test");
  ASSERT_TRUE(dir.ok());
  // A small image root in place of the container's own, and the claim beside it.
  const std::string image = *dir + "/image", claim = *dir + "/claim";
  for (const std::string d : {"usr/bin", "usr/lib", "etc/apt", "opt", "var/lib/dpkg"}) {
    ASSERT_TRUE(files::MakeDirs(image + "/" + d, 0755).ok());
  }
  ASSERT_TRUE(files::WriteAtomic(image + "/usr/bin/tool", "v1\n", 0755).ok());
  ASSERT_TRUE(files::WriteAtomic(image + "/var/lib/dpkg/status", "Package: base\n", 0644).ok());
  for (const std::string d : {"bin", "sbin", "lib"}) {
    ASSERT_EQ(::symlink(("usr/" + d).c_str(), (image + "/" + d).c_str()), 0);
  }
  ASSERT_TRUE(files::MakeDirs(claim, 0755).ok());
  auto replace_all = [](std::string s, const std::string& from, const std::string& to) {
    for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
    return s;
  };
  script = replace_all(script, "/hpcplane/shared-root", claim);
  script = replace_all(script, "-L /$d", "-L " + image + "/$d");
  script = replace_all(script, "cp -a \"/$d\"", "cp -a \"" + image + "/$d\"");
  // cp counted (and slowed, so that two steps overlap without the lock) by a wrapper on PATH.
  const std::string bin = *dir + "/bin", copies = *dir + "/copies";
  ASSERT_TRUE(files::MakeDirs(bin, 0755).ok());
  ASSERT_TRUE(files::WriteAtomic(bin + "/cp",
                                 "#!/bin/sh\necho \"$*\" >> " + copies + "\nsleep 0.1\nexec /bin/cp \"$@\"\n", 0755)
                  .ok());
  auto step = [&] {
    RunOptions o;
    o.extra_env = {{"PATH", bin + ":/usr/bin:/bin"}};
    return RunProcess({"/bin/sh", "-ec", script}, o);
  };
  auto copied = [&] {
    std::string text = files::Read(copies).value_or("");
    return std::count(text.begin(), text.end(), '\n');
  };

  // Pods starting together make it once.
  auto first = std::async(std::launch::async, step), second = std::async(std::launch::async, step);
  auto a = first.get(), b = second.get();
  ASSERT_TRUE(a.ok() && a->ok()) << (a.ok() ? a->err : a.status().message());
  ASSERT_TRUE(b.ok() && b->ok()) << (b.ok() ? b->err : b.status().message());
  EXPECT_EQ(copied(), 4) << "one copy of usr, etc, opt and var/lib/dpkg, not two";
  EXPECT_EQ(files::Read(claim + "/rootfs/usr/bin/tool").value_or(""), "v1\n");
  EXPECT_EQ(files::Read(claim + "/rootfs/var/lib/dpkg/status").value_or(""), "Package: base\n");
  EXPECT_TRUE(files::Exists(claim + "/rootfs/etc/apt"));
  EXPECT_FALSE(files::Exists(claim + "/rootfs.partial"));
  EXPECT_EQ(files::Read(claim + "/image").value_or(""), "registry.example/slurm:26.05\n");

  // What the admin installed stays, whatever becomes of the image.
  ASSERT_TRUE(files::WriteAtomic(claim + "/rootfs/usr/bin/installed", "yes\n", 0755).ok());
  ASSERT_TRUE(files::WriteAtomic(image + "/usr/bin/tool", "v2\n", 0755).ok());
  auto again = step();
  ASSERT_TRUE(again.ok() && again->ok());
  EXPECT_TRUE(files::Exists(claim + "/rootfs/usr/bin/installed"));
  EXPECT_EQ(files::Read(claim + "/rootfs/usr/bin/tool").value_or(""), "v1\n");
  EXPECT_EQ(copied(), 4) << "made once, then kept";

  // A pod of another image does not start on it: said, nothing changed.
  {
    PodSpec other = SharedRootPod(false);
    other.image = "registry.example/slurm:26.05.1";
    auto pod2 = PodObject(other, SharedRootMounted(), Context());
    ASSERT_TRUE(pod2.ok());
    std::string other_script = (*pod2)["spec"]["initContainers"][1]["command"][2];
    other_script = replace_all(other_script, "/hpcplane/shared-root", claim);
    auto refused = RunProcess({"/bin/sh", "-ec", other_script});
    ASSERT_TRUE(refused.ok());
    EXPECT_FALSE(refused->ok());
    EXPECT_NE(refused->err.find("shared root: made from image registry.example/slurm:26.05, this pod runs "
                                "registry.example/slurm:26.05.1: stop the cluster's pods and delete the claim "
                                "research-shared-root"),
              std::string::npos)
        << refused->err;
    EXPECT_TRUE(files::Exists(claim + "/rootfs/usr/bin/installed"));
  }

  // A copy interrupted before its marker is made again, never used half-way.
  ASSERT_TRUE(files::RemoveAll(claim + "/image").ok());
  ASSERT_TRUE(files::MakeDirs(claim + "/rootfs.partial/usr", 0755).ok());
  again = step();
  ASSERT_TRUE(again.ok() && again->ok()) << (again.ok() ? again->err : "");
  EXPECT_EQ(files::Read(claim + "/rootfs/usr/bin/tool").value_or(""), "v2\n");
  EXPECT_FALSE(files::Exists(claim + "/rootfs/usr/bin/installed"));
  EXPECT_FALSE(files::Exists(claim + "/rootfs.partial"));

  // An image whose /bin is its own directory cannot share /usr alone: said, nothing made.
  ASSERT_TRUE(files::RemoveAll(claim).ok());
  ASSERT_TRUE(files::MakeDirs(claim, 0755).ok());
  ASSERT_EQ(::unlink((image + "/bin").c_str()), 0);
  ASSERT_TRUE(files::MakeDirs(image + "/bin", 0755).ok());
  again = step();
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->ok());
  EXPECT_NE(again->err.find("shared root: the image's /bin is not a link into /usr"), std::string::npos) << again->err;
  EXPECT_FALSE(files::Exists(claim + "/rootfs"));
  EXPECT_FALSE(files::Exists(claim + "/image"));
  ASSERT_TRUE(files::RemoveAll(*dir).ok());
}

TEST(KubernetesObjectsTest, AMountOfSomethingNeverAppliedIsRefused) {
  PodSpec p;
  p.name = "cpu-0";
  p.command = {"slurmd"};
  p.mounts = {{MountSource::kSecret, "munge-key", "/run/secrets/munge", "", true}};
  auto pod = PodObject(p, {}, Context());
  ASSERT_FALSE(pod.ok());
  EXPECT_NE(pod.status().message().find("secret \"munge-key\""), std::string::npos) << pod.status().message();
  p.mounts = {{MountSource::kVolume, "state", "/state", "", false}};
  EXPECT_FALSE(PodObject(p, {}, Context()).ok());
  p.mounts.clear();
  p.command.clear();
  EXPECT_FALSE(PodObject(p, {}, Context()).ok());
}

TEST(KubernetesObjectsTest, VolumeNamesStayDnsLabelsAndPathsStayOneShellWord) {
  PodSpec p;
  p.name = "cpu-0";
  p.command = {"slurmd"};
  const std::string long_name = "dataset-" + std::string(70, 'a');
  const std::string odd_name = "it's";
  p.mounts = {{MountSource::kVolume, long_name, "/data", "", false},
              {MountSource::kVolume, odd_name, "/odd", "", false}};
  MountedObjects mounted;
  mounted.volumes[long_name] = {long_name, 0, 0, 01777, true};
  mounted.volumes[odd_name] = {odd_name, 0, 0, 0700, false};
  auto pod = PodObject(p, mounted, Context());
  ASSERT_TRUE(pod.ok());
  for (const auto& v : (*pod)["spec"]["volumes"]) {
    EXPECT_LE(v["name"].get<std::string>().size(), 63u) << v["name"];
  }
  const std::string script = (*pod)["spec"]["initContainers"][0]["command"][2];
  EXPECT_NE(script.find("'/hpcplane/volume/it'\\''s'"), std::string::npos) << script;
  EXPECT_NE(script.find("chmod 1777"), std::string::npos) << script;
}

TEST(KubernetesObjectsTest, SecretsConfigMapsAndClaims) {
  Secret s{"munge-key", {{"munge.key", std::string("\x00\xff key", 6)}}, 64031, 64031};
  json with = SecretObject(s, Context());
  EXPECT_EQ(with["metadata"]["name"], "research-munge-key");
  EXPECT_EQ(with["data"]["munge.key"], jwt::Base64Encode(s.data.at("munge.key")));
  EXPECT_EQ(with["metadata"]["annotations"][kOwnerAnnotation], "64031:64031");
  json without = SecretObject(s, Context(), /*include_data=*/false);
  EXPECT_FALSE(without.contains("data"));
  EXPECT_EQ(without["metadata"]["annotations"]["hpcplane.io/generated-keys"], "munge.key");

  ConfigMap cm{"slurm-scripts", {{"task_prolog", "#!/bin/sh\n"}}, 0755};
  json cmo = ConfigMapObject(cm, Context());
  EXPECT_EQ(cmo["data"]["task_prolog"], "#!/bin/sh\n");
  EXPECT_EQ(cmo["metadata"]["annotations"][kModeAnnotation], "0755");

  json state = VolumeClaimObject({"controller-state", 64030, 64030, 0700, false}, Context());
  EXPECT_EQ(state["spec"]["accessModes"][0], "ReadWriteOnce");
  EXPECT_EQ(state["spec"]["resources"]["requests"]["storage"], "1Gi");
  EXPECT_FALSE(state["spec"].contains("storageClassName"));
  // A class per claim kind: block storage cannot bind a claim that pods on many nodes mount.
  ObjectContext ctx = Context();
  ctx.storage_class = "ssd";
  ctx.shared_storage_class = "cephfs";
  json shared = VolumeClaimObject({"dataset-shared", 0, 0, 01777, true}, ctx);
  EXPECT_EQ(shared["spec"]["accessModes"][0], "ReadWriteMany") << "every worker mounts a dataset";
  EXPECT_EQ(shared["spec"]["storageClassName"], "cephfs");
  EXPECT_EQ(VolumeClaimObject({"controller-state", 64030, 64030, 0700, false}, ctx)["spec"]["storageClassName"], "ssd");
  EXPECT_EQ(shared["metadata"]["annotations"][kModeAnnotation], "1777");

  json svc = HostsServiceObject(Context());
  EXPECT_EQ(svc["spec"]["clusterIP"], "None");
  EXPECT_EQ(svc["spec"]["publishNotReadyAddresses"], true);
  EXPECT_EQ(svc["spec"]["selector"]["hpcplane.io/cluster"], "research");
}

// A network policy becomes an ingress-only NetworkPolicy of the cluster, and reads back the same.
TEST(KubernetesObjectsTest, NetworkPoliciesRoundTripAsIngressNetworkPolicies) {
  NetworkPolicy p{
      "research-mariadb",
      {{"hpcplane.io/component", "mariadb"}},
      {{{{{"hpcplane.io/component", "slurmdbd"}}}, {3306, {61001, 64000}}}, {{{{"a", "b"}}, {{"c", "d"}}}, {}}}};
  json o = NetworkPolicyObject(p, Context());
  EXPECT_EQ(o["apiVersion"], "networking.k8s.io/v1");
  EXPECT_EQ(o["kind"], "NetworkPolicy");
  EXPECT_EQ(o["metadata"]["name"], "research-mariadb");
  EXPECT_EQ(o["spec"]["policyTypes"], json({"Ingress"}));
  EXPECT_EQ(o["spec"]["podSelector"]["matchLabels"]["hpcplane.io/component"], "mariadb");
  EXPECT_EQ(o["spec"]["ingress"][0]["ports"], json::parse(R"([{"protocol": "TCP", "port": 3306},
                                    {"protocol": "TCP", "port": 61001, "endPort": 64000}])"));
  EXPECT_FALSE(o["spec"]["ingress"][1].contains("ports")) << "every port";
  EXPECT_EQ(o["spec"]["ingress"][1]["from"].size(), 2u);
  auto back = NetworkPolicyFromObject("research-mariadb", o);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, p);
  EXPECT_FALSE(NetworkPolicyFromObject("x", json::object()).ok());
}

}  // namespace
}  // namespace hpc::runtime::kubernetes
