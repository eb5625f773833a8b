#include "runtime/local/pod_exec.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "runtime/local/pod_cgroups.h"
#include "runtime/local/user_namespaces.h"

namespace hpc::runtime::local {

int RunPodExec(int argc, char** argv) {
  int i = 0;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    if (Status s = JoinCgroup(argv[i]); !s.ok()) {
      std::fprintf(stderr, "pod-exec: %s\n", s.message().c_str());
      return 127;
    }
  }
  if (i + 1 >= argc) {
    std::fprintf(stderr, "pod-exec: usage: __pod-exec CGROUP_DIR... -- PROGRAM [ARG...]\n");
    return 127;
  }
  if (Status s = DenyUserNamespaces(); !s.ok()) {
    std::fprintf(stderr, "pod-exec: %s\n", s.message().c_str());
    return 127;
  }
  char** program = argv + i + 1;
  ::execvp(program[0], program);
  std::fprintf(stderr, "pod-exec: exec %s: %s\n", program[0], std::strerror(errno));
  return 127;
}

}  // namespace hpc::runtime::local
