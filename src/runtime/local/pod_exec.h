// A later process of a local pod, started by exec (LocalRuntime::Exec): it joins what every
// process of the pod is held by before it enters the pod's namespaces (nsenter does that part).
#pragma once

namespace hpc::runtime::local {

// Entry point of `hpcplane __pod-exec CGROUP_DIR... -- PROGRAM [ARG...]`: joins each of the
// pod's cgroup directories, gives up the right to create user namespaces (user_namespaces.h),
// then execs PROGRAM. Returns only on failure, with 127.
int RunPodExec(int argc, char** argv);

}  // namespace hpc::runtime::local
