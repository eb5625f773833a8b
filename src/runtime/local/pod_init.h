// The first process of a local pod. The runtime clones it into fresh PID, mount and UTS
// namespaces; it joins the pod's network namespace, builds the pod's root file system, starts
// the pod's command as the pod's user and then acts as the pod's init: it forwards termination
// signals, reaps orphans, and exits with the command's status. Its exit ends every process left
// in the pod, since it is PID 1 of the pod's PID namespace.
//
// The pod's file-system contract (what a pod sees; the Kubernetes runtime gives the same from
// container images): a root of its own (a small tmpfs, writable only by root) holding
//  - the system directories /usr, /bin, /sbin, /lib* read-only and nosuid, and /etc read-only:
//    from the pod's image (its /etc less accounts and host files; its /opt and dpkg database
//    too), or without an image from the host (only the parts of /etc that programs need to run:
//    dynamic linker, alternatives, NSS, time zone, shells, MariaDB's and Python's configuration);
//  - exactly the pod's mounts (config maps, secrets, volumes, emptyDirs, host paths);
//  - a private /tmp and /dev/shm (tmpfs of tmp_mib each), /run (tmpfs), /var with empty lib,
//    log, spool, cache and tmp, an empty /root;
//  - a minimal /dev (null, zero, full, random, urandom, tty, a private devpts), /proc of the
//    pod's PID namespace (each user sees only their own processes), /sys read-only with only the pod's own cgroups
//    under /sys/fs/cgroup.
// Nothing else of the host is there: no state dir, /home, /root, /var/lib/*, /work, other pods'
// or clusters' files. Daemons that need more get it through explicit mounts.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace hpc::runtime::local {

struct LaunchMount {
  std::string source;  // host path
  std::string target;  // path inside the pod
  bool read_only = false;
};

// Everything pod-init needs, resolved to host paths by the runtime.
struct LaunchPlan {
  std::string hostname;
  std::string root_dir;         // an empty host directory the pod's root is assembled on
  std::string image_root;       // the image's root file system (host path); empty: the host's
  bool image_writable = false;  // its system directories writable (a shared root's installer)
  int64_t tmp_mib = 1024;       // size of /tmp (and of /dev/shm)
  std::string netns_path;
  std::vector<LaunchMount> mounts;
  // The pod's cgroup directories (pod_cgroups.h): init joins each, and the pod sees them at
  // their targets (under /sys/fs/cgroup), writable only when the pod delegates.
  std::vector<LaunchMount> cgroups;
  // Device files of the host bound into the pod's /dev (target: a name there, e.g. "nvidia3"):
  // the GPUs the pod holds (gpus.h) and the driver's control devices.
  std::vector<LaunchMount> devices;
  // The directories of the driver's GPU list (/proc/driver/nvidia/gpus) the pod sees, each at
  // its target under that path: its own GPUs' only.
  std::vector<LaunchMount> gpu_entries;
  // A host directory laid over the image's /usr (a read-only overlay): the GPU driver's tools
  // and libraries (gpu_driver_files.h). Empty: /usr as the image has it.
  std::string usr_layer;
  std::vector<std::string> command;
  std::vector<std::string> env;  // KEY=VALUE
  int64_t uid = 0;
  int64_t gid = 0;
  std::string working_dir = "/";
  // A host file init creates once the pod is whole (its root, mounts, /proc) and its command
  // started: until then an exec would join a half-built mount namespace, the host's root still
  // in it. Empty: none (a plan of an older runtime).
  std::string started_file;
};

nlohmann::json ToJson(const LaunchPlan& p);
Result<LaunchPlan> LaunchPlanFromJson(const nlohmann::json& j);

// Entry point of `hpcplane __pod-init PLAN_FILE`; returns the process exit code.
int RunPodInit(const std::string& plan_path);

}  // namespace hpc::runtime::local
