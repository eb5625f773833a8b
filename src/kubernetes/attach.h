// `hpcplane kube-attach`: a command in a pod's container attached to this process's stdin and
// stdout through `pods/exec` (runtime/kubernetes/exec_stream.h), what the agent on Kubernetes
// runs on a pseudo-terminal of its own for a terminal in the browser or JupyterLab.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace hpc::kube {

struct AttachOptions {
  std::string kubeconfig;  // empty: the pod's service account
  std::string namespace_name;
  std::string pod;
  std::string container;
  bool tty = false;
  std::vector<std::string> argv;
};

// The command's exit code once it ended, or why it could not run.
Result<int> AttachToPod(const AttachOptions& options);

}  // namespace hpc::kube
