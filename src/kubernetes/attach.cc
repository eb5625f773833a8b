#include "kubernetes/attach.h"

#include <unistd.h>

#include "runtime/kubernetes/api_client.h"
#include "runtime/kubernetes/exec_stream.h"

namespace hpc::kube {

namespace k8s = runtime::kubernetes;

Result<int> AttachToPod(const AttachOptions& options) {
  auto conn = options.kubeconfig.empty() ? k8s::InClusterConnection() : k8s::LoadKubeconfig(options.kubeconfig);
  if (!conn.ok()) return conn.status();
  k8s::ApiClient api(*conn);
  k8s::PodExecRequest request;
  request.namespace_name = options.namespace_name;
  request.pod = options.pod;
  request.container = options.container;
  request.argv = options.argv;
  request.tty = options.tty;
  return k8s::ExecAttached(api, request, STDIN_FILENO, STDOUT_FILENO);
}

}  // namespace hpc::kube
