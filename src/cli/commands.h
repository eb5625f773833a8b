// The hpcplane command line: one verb per subcommand, each returning a process exit code.
#pragma once

#include <string>
#include <vector>

namespace hpc::cli {

// Entry point for everything except the hidden `__pod-init` and `__daemon` roles.
int Main(int argc, char** argv, const std::string& self_exe);

}  // namespace hpc::cli
