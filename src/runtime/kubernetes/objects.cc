#include "runtime/kubernetes/objects.h"

#include <set>

#include <fmt/format.h>

#include "common/jwt.h"

namespace hpc::runtime::kubernetes {

using nlohmann::json;

namespace {

// Where the init container sees a secret's staged files, its owned copy, and a volume's root.
constexpr const char* kSecretStagingDir = "/hpcplane/secret-staging";
constexpr const char* kSecretCopyDir = "/hpcplane/secret";
constexpr const char* kVolumeRootDir = "/hpcplane/volume";
constexpr const char* kScratchRootDir = "/hpcplane/scratch";     // /tmp and /dev/shm, in the prepare step
constexpr const char* kSharedRootDir = "/hpcplane/shared-root";  // the claim, in the shared-root step
// What a shared root replaces in a pod (pod_init.h's contract): the system directories (/bin,
// /sbin and /lib* are links into /usr in the images, which the step checks), /etc, /opt and
// dpkg's database, so that what is installed into one pod's is installed in every one's.
const std::vector<std::string> kSharedRootDirs = {"usr", "etc", "opt", "var/lib/dpkg"};
// Probes: ready within seconds of the daemon listening; a slow first start (slurmctld loading
// state, MariaDB initialising) gets five minutes before liveness counts.
constexpr int kReadyPeriodSeconds = 2;
constexpr int kExecReadyPeriodSeconds = 10;
constexpr int kStartupFailureThreshold = 150;

std::string Octal(uint32_t mode) { return fmt::format("{:04o}", mode); }

// A shell word that is the string exactly, whatever it holds.
std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

json Metadata(const ObjectContext& ctx, const std::string& name, const std::map<std::string, std::string>& labels) {
  json labels_json = json::object();
  labels_json[kManagedByLabel] = kManagedBy;
  labels_json["hpcplane.io/cluster"] = ctx.cluster;
  for (const auto& [k, v] : labels) labels_json[k] = v;
  json m = {{"name", ObjectName(ctx, name)}, {"namespace", ctx.namespace_name}, {"labels", labels_json}};
  if (!ctx.owner_uid.empty()) {
    m["ownerReferences"] = json::array({{{"apiVersion", "hpcplane.io/v1alpha1"},
                                         {"kind", "SlurmCluster"},
                                         {"name", ctx.cluster},
                                         {"uid", ctx.owner_uid},
                                         {"controller", true},
                                         {"blockOwnerDeletion", true}}});
  }
  return m;
}

// Volume names are DNS labels: `<kind>-<object>`, shortened with a digest of the whole when long
// (SHA-256: the same name from every build, as render's output must be).
std::string VolumeName(const std::string& kind, const std::string& object) {
  std::string name = kind + "-" + object;
  if (name.size() <= 63) return name;
  return name.substr(0, 46) + "-" + jwt::Sha256Hex(name).substr(0, 16);
}

std::string VolumeNameFor(const Mount& m, size_t host_path_index) {
  switch (m.source) {
    case MountSource::kConfigMap:
      return VolumeName("config", m.name);
    case MountSource::kSecret:
      return VolumeName("secret", m.name);
    case MountSource::kVolume:
      return VolumeName("data", m.name);
    case MountSource::kEmptyDir:
      return VolumeName("scratch", m.name);
    case MountSource::kHostPath:
      return fmt::format("host-{}", host_path_index);
  }
  return "";
}

json ProbeJson(const runtime::Probe& p) {
  if (p.tcp_port > 0 && !p.http_path.empty()) return {{"httpGet", {{"path", p.http_path}, {"port", p.tcp_port}}}};
  if (p.tcp_port > 0) return {{"tcpSocket", {{"port", p.tcp_port}}}};
  return {{"exec", {{"command", p.command}}}};
}

bool ProbeSet(const runtime::Probe& p) { return p.tcp_port > 0 || !p.command.empty(); }

// Startup probes run often until their first success (bring-up waits on them; the kubelet runs
// the readiness probe at once after it). Readiness then runs every kReadyPeriodSeconds, but a
// command only every kExecReadyPeriodSeconds: the kubelet starts a process in the container
// for each, every worker, all the time.
int ReadyPeriod(const runtime::Probe& p) { return p.command.empty() ? kReadyPeriodSeconds : kExecReadyPeriodSeconds; }

json SecurityContext(int64_t uid, int64_t gid) {
  json sc = {{"runAsUser", uid}, {"runAsGroup", gid}};
  // Root is for daemons that start other users' processes (slurmd) or drop privileges themselves.
  if (uid != 0) sc["allowPrivilegeEscalation"] = false;
  return sc;
}

std::string Quantity(int64_t mib) { return fmt::format("{}Mi", mib); }

json Resources(const runtime::Resources& r) {
  json out = json::object();
  auto list = [](const ResourceList& l, bool with_cpu) {
    json j = json::object();
    if (with_cpu && l.cpus > 0) j["cpu"] = std::to_string(l.cpus);
    if (l.memory_mib > 0) j["memory"] = Quantity(l.memory_mib);
    if (l.gpus > 0) j["nvidia.com/gpu"] = std::to_string(l.gpus);
    return j;
  };
  // A CPU limit throttles (CFS quota) rather than bounding anything Slurm does not already
  // bound with its own cgroups or task binding, so only requests carry CPUs.
  json requests = list(r.requests, true);
  json limits = list(r.limits, false);
  if (!requests.empty()) out["requests"] = requests;
  if (!limits.empty()) out["limits"] = limits;
  return out;
}

// Collects the pod's volumes (one per source object) and each container's mounts of them.
class VolumeSet {
 public:
  json MountsOf(const std::vector<Mount>& mounts) {
    json out = json::array();
    for (const auto& m : mounts) {
      std::string name = Add(m);
      json vm = {{"name", name}, {"mountPath", m.mount_path}};
      if (!m.sub_path.empty()) vm["subPath"] = m.sub_path;
      if (m.read_only) vm["readOnly"] = true;
      out.push_back(vm);
    }
    return out;
  }
  const std::vector<Mount>& sources() const { return sources_; }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::string Add(const Mount& m) {
    for (size_t i = 0; i < sources_.size(); ++i) {
      if (sources_[i].source == m.source && sources_[i].name == m.name) return names_[i];
    }
    size_t host_paths = 0;
    for (const auto& s : sources_) host_paths += s.source == MountSource::kHostPath ? 1 : 0;
    sources_.push_back(m);
    names_.push_back(VolumeNameFor(m, host_paths));
    return names_.back();
  }
  std::vector<Mount> sources_;
  std::vector<std::string> names_;
};

}  // namespace

std::string ObjectName(const ObjectContext& ctx, const std::string& name) {
  if (name.rfind(ctx.cluster + "-", 0) == 0) return name;
  return ctx.cluster + "-" + name;
}

std::string HostsServiceName(const ObjectContext& ctx) { return ctx.cluster + "-hosts"; }

json NetworkPolicyObject(const NetworkPolicy& policy, const ObjectContext& ctx) {
  json ingress = json::array();
  for (const auto& rule : policy.ingress) {
    json from = json::array();
    for (const auto& selector : rule.from) from.push_back({{"podSelector", {{"matchLabels", selector}}}});
    json r = {{"from", from}};
    if (!rule.tcp_ports.empty()) {
      json ports = json::array();
      for (const PortRange& p : rule.tcp_ports) {
        json port = {{"protocol", "TCP"}, {"port", p.first}};
        if (p.last != p.first) port["endPort"] = p.last;
        ports.push_back(port);
      }
      r["ports"] = ports;
    }
    ingress.push_back(r);
  }
  return {
      {"apiVersion", "networking.k8s.io/v1"},
      {"kind", "NetworkPolicy"},
      {"metadata", Metadata(ctx, policy.name, {})},
      {"spec",
       {{"podSelector", {{"matchLabels", policy.pod_selector}}}, {"policyTypes", {"Ingress"}}, {"ingress", ingress}}}};
}

Result<NetworkPolicy> NetworkPolicyFromObject(const std::string& name, const json& object) {
  try {
    NetworkPolicy p;
    p.name = name;
    const json& spec = object.at("spec");
    p.pod_selector = spec.at("podSelector").value("matchLabels", json::object()).get<LabelSelector>();
    for (const auto& r : spec.value("ingress", json::array())) {
      IngressRule rule;
      for (const auto& f : r.value("from", json::array())) {
        rule.from.push_back(f.at("podSelector").value("matchLabels", json::object()).get<LabelSelector>());
      }
      for (const auto& port : r.value("ports", json::array())) {
        const int first = port.at("port").get<int>();
        rule.tcp_ports.emplace_back(first, port.value("endPort", first));
      }
      p.ingress.push_back(std::move(rule));
    }
    return p;
  } catch (const json::exception& e) {
    return Status::Errorf("network policy {}: {}", name, e.what());
  }
}

json ConfigMapObject(const ConfigMap& cm, const ObjectContext& ctx) {
  json o = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", Metadata(ctx, cm.name, {})}};
  o["metadata"]["annotations"] = {{kModeAnnotation, Octal(static_cast<uint32_t>(cm.default_mode))}};
  o["data"] = cm.data;
  return o;
}

json SecretObject(const Secret& secret, const ObjectContext& ctx, bool include_data) {
  json o = {{"apiVersion", "v1"}, {"kind", "Secret"}, {"metadata", Metadata(ctx, secret.name, {})}, {"type", "Opaque"}};
  json annotations = {{kOwnerAnnotation, fmt::format("{}:{}", secret.owner_uid, secret.owner_gid)}};
  if (include_data) {
    json data = json::object();
    for (const auto& [k, v] : secret.data) data[k] = jwt::Base64Encode(v);
    o["data"] = data;
  } else {
    std::string keys;
    for (const auto& [k, v] : secret.data) keys += (keys.empty() ? "" : ",") + k;
    annotations["hpcplane.io/generated-keys"] = keys;
  }
  o["metadata"]["annotations"] = annotations;
  return o;
}

json VolumeClaimObject(const Volume& volume, const ObjectContext& ctx) {
  json o = {{"apiVersion", "v1"}, {"kind", "PersistentVolumeClaim"}, {"metadata", Metadata(ctx, volume.name, {})}};
  // Not the SlurmCluster's: the garbage collector leaves it when the SlurmCluster goes.
  if (volume.retain) o["metadata"].erase("ownerReferences");
  o["metadata"]["annotations"] = {{kOwnerAnnotation, fmt::format("{}:{}", volume.owner_uid, volume.owner_gid)},
                                  {kModeAnnotation, Octal(volume.mode)}};
  json spec = {
      {"accessModes", {volume.shared ? "ReadWriteMany" : "ReadWriteOnce"}},
      {"resources", {{"requests", {{"storage", volume.shared ? ctx.shared_volume_size : ctx.state_volume_size}}}}}};
  const std::string& storage_class = volume.shared ? ctx.shared_storage_class : ctx.storage_class;
  if (!storage_class.empty()) spec["storageClassName"] = storage_class;
  o["spec"] = spec;
  return o;
}

json HostsServiceObject(const ObjectContext& ctx) {
  json o = {{"apiVersion", "v1"}, {"kind", "Service"}, {"metadata", Metadata(ctx, HostsServiceName(ctx), {})}};
  // Headless: one DNS record per pod (hostname.subdomain), published before a pod is ready so a
  // starting slurmd reaches slurmctld and slurmctld reaches it.
  o["spec"] = {
      {"clusterIP", "None"}, {"publishNotReadyAddresses", true}, {"selector", {{"hpcplane.io/cluster", ctx.cluster}}}};
  return o;
}

namespace {

// The image of the pod's main container: its environment's (PodSpec::image, resolved by the
// operator), else the cluster's. Sidecars (sackd, munged) and the prepare step run the cluster's.
const std::string& MainImage(const PodSpec& spec, const ObjectContext& ctx) {
  return spec.image.empty() ? ctx.image : spec.image;
}

// The pod's main container: its command, environment, mounts (with /tmp and /dev/shm, and its
// shared root's directories), probes and resources.
json MainContainer(const PodSpec& spec, const ObjectContext& ctx, const std::string& name, VolumeSet& volumes) {
  json main = {{"name", name},
               {"image", MainImage(spec, ctx)},
               {"imagePullPolicy", "IfNotPresent"},
               {"command", spec.command},
               {"workingDir", spec.working_dir},
               {"securityContext", SecurityContext(spec.uid, spec.gid)}};
  if (!spec.env.empty()) {
    json env = json::array();
    for (const auto& [k, v] : spec.env) env.push_back({{"name", k}, {"value", v}});
    main["env"] = env;
  }
  std::vector<Mount> main_mounts = spec.mounts;
  main_mounts.push_back({MountSource::kEmptyDir, "tmp", "/tmp", "", false});
  main_mounts.push_back({MountSource::kEmptyDir, "shm", "/dev/shm", "", false});
  if (!spec.shared_root.empty()) {
    // Mounted under the pod's own mounts (the container runtime mounts parents first): /etc/slurm
    // and the users directory stay the cluster's.
    for (const auto& dir : kSharedRootDirs) {
      main_mounts.push_back(
          {MountSource::kVolume, spec.shared_root, "/" + dir, "rootfs/" + dir, !spec.shared_root_writable});
    }
  }
  main["volumeMounts"] = volumes.MountsOf(main_mounts);
  if (ProbeSet(spec.readiness)) {
    json ready = ProbeJson(spec.readiness);
    // Liveness counts only once the pod has started, as the local runtime's does.
    json startup = ready;
    startup["periodSeconds"] = kReadyPeriodSeconds;
    startup["failureThreshold"] = kStartupFailureThreshold;
    main["startupProbe"] = startup;
    ready["periodSeconds"] = ReadyPeriod(spec.readiness);
    main["readinessProbe"] = ready;
  }
  if (spec.liveness.Set()) {
    json live;
    if (spec.liveness.http_port > 0 && !spec.liveness.http_path.empty()) {
      live = {{"httpGet", {{"path", spec.liveness.http_path}, {"port", spec.liveness.http_port}}}};
    } else if (spec.liveness.http_port > 0) {
      // Any answer is life (slurmrestd answers 401 to a request without a token), but the
      // kubelet's httpGet counts only 2xx and 3xx: a request over bash's /dev/tcp instead, whose
      // status line must come back within the timeout.
      live = {{"exec",
               {{"command",
                 {"bash", "-c",
                  fmt::format("exec 3<>/dev/tcp/127.0.0.1/{} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && "
                              "head -c 5 <&3 | grep -q '^HTTP/'",
                              spec.liveness.http_port)}}}}};
    } else {
      live = {{"exec", {{"command", spec.liveness.command}}}};
    }
    live["periodSeconds"] = spec.liveness.period_seconds;
    live["timeoutSeconds"] = spec.liveness.timeout_seconds;
    live["failureThreshold"] = spec.liveness.failure_threshold;
    main["livenessProbe"] = live;
  }
  json resources = Resources(spec.resources);
  if (!resources.empty()) main["resources"] = resources;
  return main;
}

// Sidecars: init containers that keep running (Kubernetes' native sidecars), started and
// started-up before the main container.
json SidecarContainers(const PodSpec& spec, const ObjectContext& ctx, VolumeSet& volumes) {
  json init = json::array();
  for (const auto& sc : spec.sidecars) {
    json c = {{"name", sc.name},
              {"image", ctx.image},
              {"imagePullPolicy", "IfNotPresent"},
              {"restartPolicy", "Always"},
              {"command", sc.command},
              {"securityContext", SecurityContext(sc.uid, sc.gid)},
              {"volumeMounts", volumes.MountsOf(sc.mounts)}};
    if (ProbeSet(sc.readiness)) {
      json probe = ProbeJson(sc.readiness);
      json startup = probe;
      if (!sc.readiness.command.empty()) {
        // The main container waits for this probe's first success, and the kubelet probes on a
        // clock of its own: a probe that ran just before the daemon was up cost the pod a whole
        // period. This one tries again every 50 ms for up to 5 s before it fails.
        json command = {"/bin/sh", "-c", "i=0; until \"$@\"; do i=$((i+1)); [ $i -lt 100 ] || exit 1; sleep 0.05; done",
                        "probe"};
        for (const auto& arg : sc.readiness.command) command.push_back(arg);
        startup = {{"exec", {{"command", command}}}, {"timeoutSeconds", 10}};
      }
      startup["periodSeconds"] = 1;
      startup["failureThreshold"] = kStartupFailureThreshold;
      c["startupProbe"] = startup;
      probe["periodSeconds"] = ReadyPeriod(sc.readiness);
      c["readinessProbe"] = probe;
    }
    init.push_back(c);
  }

  return init;
}

// The pod's volumes, and the prepare container's mounts and script: what must be done before
// anything else runs (each secret's files given their owner and mode 0600, each volume's root
// its owner and mode).
struct PodVolumes {
  json volumes = json::array();
  std::string script;
  json prepare_mounts = json::array();
};
Result<PodVolumes> VolumesOf(const PodSpec& spec, const MountedObjects& mounted, const ObjectContext& ctx,
                             const VolumeSet& volumes) {
  PodVolumes out;
  const int64_t tmp_mib = spec.tmp_mib > 0 ? spec.tmp_mib : kDefaultPodTmpMiB;
  for (size_t i = 0; i < volumes.sources().size(); ++i) {
    const Mount& m = volumes.sources()[i];
    const std::string& name = volumes.names()[i];
    switch (m.source) {
      case MountSource::kConfigMap: {
        auto mode = mounted.config_map_modes.find(m.name);
        int default_mode = mode == mounted.config_map_modes.end() ? 0644 : mode->second;
        out.volumes.push_back(
            {{"name", name}, {"configMap", {{"name", ObjectName(ctx, m.name)}, {"defaultMode", default_mode}}}});
        break;
      }
      case MountSource::kSecret: {
        auto s = mounted.secrets.find(m.name);
        if (s == mounted.secrets.end()) {
          return Status::Errorf("pod {}: mounts secret \"{}\", which was not applied", spec.name, m.name);
        }
        const std::string staging = VolumeName("staged", m.name);
        out.volumes.push_back(
            {{"name", staging}, {"secret", {{"secretName", ObjectName(ctx, m.name)}, {"defaultMode", 0400}}}});
        out.volumes.push_back({{"name", name}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "16Mi"}}}});
        const std::string from = std::string(kSecretStagingDir) + "/" + m.name;
        const std::string to = std::string(kSecretCopyDir) + "/" + m.name;
        out.prepare_mounts.push_back({{"name", staging}, {"mountPath", from}, {"readOnly", true}});
        out.prepare_mounts.push_back({{"name", name}, {"mountPath", to}});
        const std::string owner = fmt::format("{}:{}", s->second.owner_uid, s->second.owner_gid);
        out.script += fmt::format("chown {0} {1} && chmod 0755 {1}\n", owner, ShellQuote(to));
        out.script += fmt::format("for f in {}/*; do install -o {} -g {} -m 0600 \"$f\" {}/; done\n", ShellQuote(from),
                                  s->second.owner_uid, s->second.owner_gid, ShellQuote(to));
        break;
      }
      case MountSource::kVolume: {
        auto v = mounted.volumes.find(m.name);
        if (v == mounted.volumes.end()) {
          return Status::Errorf("pod {}: mounts volume \"{}\", which was not ensured", spec.name, m.name);
        }
        out.volumes.push_back({{"name", name}, {"persistentVolumeClaim", {{"claimName", ObjectName(ctx, m.name)}}}});
        const std::string root = std::string(kVolumeRootDir) + "/" + m.name;
        out.prepare_mounts.push_back({{"name", name}, {"mountPath", root}});
        // Changed only where it differs: root in the pod cannot chown on a root-squashing file
        // system (NFS), and a volume whose root the admin gave its owner on the server must start.
        const std::string want = fmt::format("{}:{}:{:o}", v->second.owner_uid, v->second.owner_gid, v->second.mode);
        out.script += fmt::format(
            "[ \"$(stat -c %u:%g:%a {0})\" = {1} ] || {{ chown {2}:{3} {0} && chmod {4} {0}; }} || {{ echo \"volume "
            "{5}: its root is $(stat -c %u:%g:%a {0}) (owner:group:mode), must be {1}, and root in this pod cannot "
            "change it (a root-squashing file system?): give the directory that owner and mode on the file "
            "server\" >&2; exit 1; }}\n",
            ShellQuote(root), want, v->second.owner_uid, v->second.owner_gid, Octal(v->second.mode), m.name);
        break;
      }
      case MountSource::kEmptyDir: {
        json empty = json::object();
        if (m.name == "tmp" || m.name == "shm") {
          empty["sizeLimit"] = Quantity(tmp_mib);
          // The kubelet makes an emptyDir 0777: /tmp and /dev/shm shared by users need the sticky
          // bit, or any user could delete or replace another's files.
          const std::string dir = std::string(kScratchRootDir) + "/" + m.name;
          out.prepare_mounts.push_back({{"name", name}, {"mountPath", dir}});
          out.script += fmt::format("chmod 1777 {}\n", ShellQuote(dir));
        }
        if (m.name == "shm") empty["medium"] = "Memory";
        out.volumes.push_back({{"name", name}, {"emptyDir", empty}});
        break;
      }
      case MountSource::kHostPath:
        out.volumes.push_back({{"name", name}, {"hostPath", {{"path", m.name}, {"type", "Directory"}}}});
        break;
    }
  }
  return out;
}

// The prepare init container (first of all) when the volumes need one.
json PrepareContainer(const ObjectContext& ctx, const PodVolumes& v) {
  return {{"name", "prepare"},
          {"image", ctx.image},
          {"imagePullPolicy", "IfNotPresent"},
          {"command", {"/bin/sh", "-ec", v.script}},
          {"securityContext", {{"runAsUser", 0}, {"runAsGroup", 0}}},
          {"volumeMounts", v.prepare_mounts}};
}

// The prepare step folded into the pod's first sidecar (its sackd or munged), which then drops to its own
// user: one container fewer before the main one, whose start the kubelet holds until its status
// relist (every second) saw the container before it end.
void FoldPrepareInto(const PodVolumes& v, const runtime::Sidecar& sidecar, json* container) {
  json command = {
      "/bin/sh", "-ec",
      v.script + fmt::format("exec setpriv --reuid={} --regid={} --clear-groups -- \"$@\"\n", sidecar.uid, sidecar.gid),
      "prepare"};
  for (const auto& arg : sidecar.command) command.push_back(arg);
  (*container)["command"] = command;
  // Dropping to a user needs no escalation: no_new_privs stays on.
  (*container)["securityContext"] = {{"runAsUser", 0}, {"runAsGroup", 0}, {"allowPrivilegeEscalation", false}};
  for (const auto& m : v.prepare_mounts) (*container)["volumeMounts"].push_back(m);
}

// The shared-root step (after prepare): the first pod to start copies its image's system
// directories into the claim, under a lock so pods starting together make it once (flock: the
// claim's file system must keep locks across nodes, as NFSv4 and CephFS do); kept from then on,
// whatever is installed into it (as the local runtime's). A copy interrupted half-way is made
// again, never used: the marker `image` is written last. A pod of another image does not start
// on it (its daemons and the shared root's Slurm would differ): the claim must be made again.
json SharedRootContainer(const PodSpec& spec, const ObjectContext& ctx, VolumeSet& volumes) {
  std::string dirs;
  for (const auto& dir : kSharedRootDirs) dirs += " " + dir;
  const std::string script = fmt::format(
      "want={image}\n"
      "cd {root}\n"
      "exec 9>>.lock\n"
      "flock 9\n"
      "if [ -e image ]; then\n"
      "  [ \"$(cat image)\" = \"$want\" ] && exit 0\n"
      "  echo \"shared root: made from image $(cat image), this pod runs $want: stop the cluster's pods and delete "
      "the claim {claim} to make it again from the new image (what was installed there goes with it)\" >&2\n"
      "  exit 1\n"
      "fi\n"
      "for d in bin sbin lib; do [ -L /$d ] || {{ echo \"shared root: the image's /$d is not a link into /usr (it "
      "takes an image with merged /usr)\" >&2; exit 1; }}; done\n"
      "rm -rf rootfs.partial rootfs\n"
      "for d in{dirs}; do\n"
      "  mkdir -p \"rootfs.partial/$(dirname \"$d\")\" || exit 1\n"
      "  cp -a \"/$d\" \"rootfs.partial/$d\" || {{ echo \"shared root: copying /$d failed (a claim whose file "
      "system maps root to another user cannot keep the image's owners)\" >&2; exit 1; }}\n"
      "done\n"
      "mv -T rootfs.partial rootfs\n"
      "printf '%s\\n' \"$want\" > image.partial && mv -T image.partial image\n",
      fmt::arg("root", kSharedRootDir), fmt::arg("dirs", dirs), fmt::arg("image", ShellQuote(MainImage(spec, ctx))),
      fmt::arg("claim", ObjectName(ctx, spec.shared_root)));
  return {{"name", "shared-root"},
          {"image", MainImage(spec, ctx)},
          {"imagePullPolicy", "IfNotPresent"},
          {"command", {"/bin/sh", "-ec", script}},
          {"securityContext", {{"runAsUser", 0}, {"runAsGroup", 0}}},
          {"volumeMounts", volumes.MountsOf({{MountSource::kVolume, spec.shared_root, kSharedRootDir, "", false}})}};
}

// Where the pod may run and with what: node selector, tolerations, affinity, security context
// (with the runtime's default seccomp profile unless the admin gave one), priority, pull secrets.
void ApplyPlacement(const Placement& place, json* pod_spec_ptr) {
  json& pod_spec = *pod_spec_ptr;
  if (!place.node_selector.empty()) pod_spec["nodeSelector"] = place.node_selector;
  if (!place.tolerations.empty()) {
    json tolerations = json::array();
    for (const auto& t : place.tolerations) {
      json j = json::object();
      if (!t.key.empty()) j["key"] = t.key;
      if (!t.op.empty()) j["operator"] = t.op;
      if (!t.value.empty()) j["value"] = t.value;
      if (!t.effect.empty()) j["effect"] = t.effect;
      if (t.seconds >= 0) j["tolerationSeconds"] = t.seconds;
      tolerations.push_back(j);
    }
    pod_spec["tolerations"] = tolerations;
  }
  if (!place.affinity.is_null()) pod_spec["affinity"] = place.affinity;
  if (!place.security_context.is_null()) pod_spec["securityContext"] = place.security_context;
  // No user namespaces in any pod (as on the local runtime): the container runtime's default
  // seccomp profile refuses them to processes without CAP_SYS_ADMIN. An admin's own profile
  // for a nodeset's pods wins.
  if (!pod_spec.contains("securityContext") || !pod_spec["securityContext"].contains("seccompProfile")) {
    pod_spec["securityContext"]["seccompProfile"] = {{"type", "RuntimeDefault"}};
  }
  if (!place.priority_class.empty()) pod_spec["priorityClassName"] = place.priority_class;
  if (!place.image_pull_secrets.empty()) {
    json secrets = json::array();
    for (const auto& name : place.image_pull_secrets) secrets.push_back({{"name", name}});
    pod_spec["imagePullSecrets"] = secrets;
  }
}

}  // namespace

Result<json> PodObject(const PodSpec& spec, const MountedObjects& mounted, const ObjectContext& ctx) {
  if (spec.command.empty()) return Status::Errorf("pod {}: command is empty", spec.name);
  VolumeSet volumes;
  const std::string main_name =
      spec.labels.count("hpcplane.io/component") ? spec.labels.at("hpcplane.io/component") : std::string("main");
  // In this order: the volume set names each volume as the containers first mount it.
  json main = MainContainer(spec, ctx, main_name, volumes);
  json init = SidecarContainers(spec, ctx, volumes);
  if (!spec.shared_root.empty()) init.insert(init.begin(), SharedRootContainer(spec, ctx, volumes));
  ASSIGN_OR_RETURN(PodVolumes pod_volumes, VolumesOf(spec, mounted, ctx, volumes));
  if (!pod_volumes.script.empty()) {
    // With a shared root, prepare runs first of all: it gives the claim's root its owner.
    if (spec.shared_root.empty() && !spec.sidecars.empty()) {
      FoldPrepareInto(pod_volumes, spec.sidecars.front(), &init.front());
    } else {
      init.insert(init.begin(), PrepareContainer(ctx, pod_volumes));
    }
  }
  static const std::map<RestartPolicy, const char*> kRestart = {
      {RestartPolicy::kAlways, "Always"}, {RestartPolicy::kOnFailure, "OnFailure"}, {RestartPolicy::kNever, "Never"}};
  json pod_spec = {
      {"hostname", spec.name},
      {"subdomain", HostsServiceName(ctx)},
      // Short names (`cpu-0`, `<cluster>-controller`) resolve as through /etc/hosts locally.
      {"dnsConfig",
       {{"searches", {fmt::format("{}.{}.svc.{}", HostsServiceName(ctx), ctx.namespace_name, ctx.cluster_domain)}}}},
      {"restartPolicy", kRestart.at(spec.restart_policy)},
      // Slurm's pods have no business with the Kubernetes API or other services' variables.
      {"automountServiceAccountToken", false},
      {"enableServiceLinks", false},
      {"containers", json::array({main})},
      {"volumes", pod_volumes.volumes}};
  if (!init.empty()) pod_spec["initContainers"] = init;
  // A nodeset's workers spread over the machines (preferred, never a reason to stay Pending):
  // a job's nodes on different machines fail apart, and each gets a machine's whole bandwidth.
  if (auto nodeset = spec.labels.find("hpcplane.io/nodeset"); nodeset != spec.labels.end()) {
    pod_spec["topologySpreadConstraints"] = json::array(
        {{{"maxSkew", 1},
          {"topologyKey", "kubernetes.io/hostname"},
          {"whenUnsatisfiable", "ScheduleAnyway"},
          {"labelSelector",
           {{"matchLabels", {{"hpcplane.io/cluster", ctx.cluster}, {"hpcplane.io/nodeset", nodeset->second}}}}}}});
  }
  ApplyPlacement(spec.placement, &pod_spec);
  if (!spec.supplemental_groups.empty()) pod_spec["securityContext"]["supplementalGroups"] = spec.supplemental_groups;
  json metadata = Metadata(ctx, spec.name, spec.labels);
  metadata["annotations"] = {{"kubectl.kubernetes.io/default-container", main_name}};
  return json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata}, {"spec", pod_spec}};
}

}  // namespace hpc::runtime::kubernetes
