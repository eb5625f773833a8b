// hpcplane: one multi-call binary. Hidden roles are dispatched before argument parsing:
//   __pod-init PLAN     the first process of a local pod (see app/runtime_factory.h)
//   __daemon DIR NAME   the operator daemon of one cluster (see app/daemon.h)
//   __pod-exec CG... -- PROG...  a process exec starts in a local pod (see app/runtime_factory.h)
#include <unistd.h>

#include <climits>
#include <cstring>
#include <string>

#include "app/daemon.h"
#include "app/runtime_factory.h"
#include "cli/commands.h"

static std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "hpcplane";
  buf[n] = '\0';
  return buf;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "__pod-init") == 0) {
    return hpc::app::RunPodInit(argv[2]);
  }
  if (argc >= 3 && std::strcmp(argv[1], "__pod-exec") == 0) {
    return hpc::app::RunPodExec(argc - 2, argv + 2);
  }
  if (argc == 4 && std::strcmp(argv[1], "__daemon") == 0) {
    return hpc::app::RunDaemon({argv[2], argv[3]}, SelfExe());
  }
  return hpc::cli::Main(argc, argv, SelfExe());
}
