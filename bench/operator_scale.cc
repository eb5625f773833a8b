// Benchmark support: `hpcplane operator`'s own loop (informers, work queue, Lease, reconcile passes
// over the Kubernetes runtime and store) against a real API server, with a model of Slurm in place
// of the cluster's pods, so that it can be measured at a thousand workers on fake nodes
// (bench/operator_scale.py starts the API server, kwok and this, and reads the numbers).
//
// The model: JOBS one-node jobs are queued in each of PARTITIONS from the start; a worker pod that is
// Running and ready is a registered node, and takes the next queued job (it then runs until the
// benchmark ends). Its squeue prints the listing the operator reads (slurm/squeue_jobs.h); every
// other command run in a pod succeeds (a `cat` of slurm.conf prints the ConfigMap's). The
// submission watch waits and sees nothing. What this leaves out of the measure: the execs the
// real Slurm needs (one squeue a pass at most, 2-3 submission polls a minute: per cluster, not
// per worker) and slurmrestd's reads.
//
// Usage: bench_operator_scale --kubeconfig FILE --namespace NS --state-dir DIR --jobs N
//          --partitions P1,P2... --passes FILE [--storage-class CLASS]
// Each pass is a line of PASSES: "<unix ms at its end> <microseconds it took> <converged 0|1>".
// It runs until SIGTERM.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "kubernetes/kubernetes_operator.h"
#include "operator/builders.h"
#include "slurm/squeue_jobs.h"

using namespace hpc;

namespace {

class ModelSlurm : public slurm::SlurmReader, public slurm::SlurmControl {
 public:
  ModelSlurm(runtime::PodRuntime* rt, const std::vector<std::string>& partitions, int jobs, std::string release)
      : rt_(rt), release_(std::move(release)) {
    for (int i = 0; i < jobs * static_cast<int>(partitions.size()); ++i) {
      const std::string& partition = partitions[i / jobs];
      slurm::SlurmJob j;
      j.job_id = i + 1;
      j.user = "alice";
      j.state = "PENDING";
      j.reason = "Resources";
      j.partition = partition;
      j.submit_time = std::time(nullptr);
      j.exclusive = true;
      j.node_count = 1;
      j.cpus = 1;
      j.min_cpus_per_node = 1;
      j.priority = 1;
      jobs_.push_back(j);
    }
  }

  Result<std::string> Ping() override { return release_; }
  Result<std::vector<slurm::SlurmNode>> Nodes() override {
    std::lock_guard<std::mutex> lock(mu_);
    RETURN_IF_ERROR(Register());
    std::vector<slurm::SlurmNode> out;
    for (const auto& [name, n] : nodes_) out.push_back(n);
    return out;
  }
  Result<std::vector<slurm::SlurmJob>> Jobs() override {
    std::lock_guard<std::mutex> lock(mu_);
    return jobs_;
  }
  Result<std::vector<slurm::SlurmPartition>> Partitions() override {
    std::lock_guard<std::mutex> lock(mu_);
    return partitions_;
  }
  // squeue's listing, as slurm/squeue_jobs.cc reads it.
  std::string Squeue() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const auto& j : jobs_) {
      const std::vector<std::string> fields = {std::to_string(j.job_id),
                                               j.user,
                                               j.state,
                                               j.reason,
                                               j.partition,
                                               j.nodes,
                                               std::to_string(j.submit_time),
                                               std::to_string(j.start_time),
                                               "1",
                                               "1",
                                               "1",
                                               "0",
                                               "cpu=1,node=1",
                                               "N/A",
                                               "NO",
                                               "NODE",
                                               "N/A",
                                               "",
                                               "1",
                                               "0"};
      for (const auto& f : fields) out += f + '\x1f';
      out += '\n';
    }
    return out;
  }

  Status DrainNode(const std::string&, const std::string&) override { return Status::Ok(); }
  Status ResumeNode(const std::string&) override { return Status::Ok(); }
  Status DeleteNode(const std::string& node) override {
    std::lock_guard<std::mutex> lock(mu_);
    nodes_.erase(node);
    return Status::Ok();
  }
  Status Reconfigure() override { return Status::Ok(); }
  Status ResetNode(const std::string&, const std::string&) override { return Status::Ok(); }
  Status CreatePartition(const std::string& partition, const std::vector<std::string>&) override {
    std::lock_guard<std::mutex> lock(mu_);
    partitions_.push_back({partition, "UP"});
    return Status::Ok();
  }
  Status UpdatePartition(const std::string&, const std::vector<std::string>&) override { return Status::Ok(); }
  Status DeletePartition(const std::string& partition) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(partitions_, [&](const auto& p) { return p.name == partition; });
    return Status::Ok();
  }
  Status CancelPartitionJobs(const std::string&) override { return Status::Ok(); }
  Status EndJobsOnNode(const std::string&, bool) override { return Status::Ok(); }

 private:
  // Worker pods Running and ready register; each idle node takes the next queued job.
  Status Register() {
    ASSIGN_OR_RETURN(auto pods, rt_->ListPods());
    const int64_t now = std::time(nullptr);
    for (const auto& p : pods) {
      auto nodeset = p.labels.find(op::kLabelNodeSet);
      if (nodeset == p.labels.end() || p.phase != runtime::PodPhase::kRunning || !p.ready) continue;
      auto [it, added] = nodes_.try_emplace(p.name);
      if (!added) continue;
      slurm::SlurmNode& n = it->second;
      n.name = p.name;
      n.state = "idle";
      n.features = {nodeset->second};
      n.cpus = 1;
      n.memory_mib = 1024;
      n.last_busy = now;
    }
    for (auto& [name, n] : nodes_) {
      if (n.state != "idle") continue;
      auto next = std::find_if(jobs_.begin(), jobs_.end(), [&](const auto& j) {
        return j.state == "PENDING" && n.features.count(j.partition);  // each nodeset's partition is its name
      });
      if (next == jobs_.end()) continue;
      next->state = "RUNNING";
      next->reason = "None";
      next->nodes = name;
      next->start_time = now;
      n.state = "allocated";
      n.alloc_cpus = 1;
      n.partitions = {next->partition};
    }
    for (auto& [name, n] : nodes_) {
      if (n.state == "allocated") n.last_busy = now;
    }
    return Status::Ok();
  }

  runtime::PodRuntime* rt_;
  const std::string release_;
  std::mutex mu_;
  std::map<std::string, slurm::SlurmNode> nodes_;
  std::vector<slurm::SlurmJob> jobs_;
  std::vector<slurm::SlurmPartition> partitions_;
};

// The cluster's Kubernetes runtime, with commands run in its pods answered by the model.
class ModelExecRuntime : public runtime::PodRuntime {
 public:
  ModelExecRuntime(runtime::PodRuntime* real, ModelSlurm* slurm) : real_(real), slurm_(slurm) {}

  Result<ProcessResult> Exec(const std::string&, const runtime::ExecOptions& o) override {
    ProcessResult r;
    r.exit_code = 0;
    if (!o.argv.empty() && o.argv[0] == "squeue") r.out = slurm_->Squeue();
    if (o.argv.size() == 2 && o.argv[0] == "cat" && o.argv[1].ends_with("/slurm.conf")) {
      ASSIGN_OR_RETURN(auto cm, real_->GetConfigMap(op::kConfigMapSlurm));
      if (cm && cm->data.count("slurm.conf")) r.out = cm->data.at("slurm.conf");
    }
    return r;
  }
  Result<int> ExecInteractive(const std::string&, const runtime::ExecOptions&) override {
    return Status::Error("no terminal in the benchmark's model of Slurm");
  }

  Status ApplyConfigMap(const runtime::ConfigMap& cm) override { return real_->ApplyConfigMap(cm); }
  Result<std::optional<runtime::ConfigMap>> GetConfigMap(const std::string& n) override {
    return real_->GetConfigMap(n);
  }
  Status DeleteConfigMap(const std::string& n) override { return real_->DeleteConfigMap(n); }
  Status ApplySecret(const runtime::Secret& s) override { return real_->ApplySecret(s); }
  Result<std::optional<runtime::Secret>> GetSecret(const std::string& n) override { return real_->GetSecret(n); }
  Status DeleteSecret(const std::string& n) override { return real_->DeleteSecret(n); }
  Status ApplyNetworkPolicy(const runtime::NetworkPolicy& p) override { return real_->ApplyNetworkPolicy(p); }
  Result<std::optional<runtime::NetworkPolicy>> GetNetworkPolicy(const std::string& n) override {
    return real_->GetNetworkPolicy(n);
  }
  Status DeleteNetworkPolicy(const std::string& n) override { return real_->DeleteNetworkPolicy(n); }
  Status EnsureVolume(const runtime::Volume& v) override { return real_->EnsureVolume(v); }
  Status CreatePod(const runtime::PodSpec& s) override { return real_->CreatePod(s); }
  Status DeletePod(const std::string& n) override { return real_->DeletePod(n); }
  Status ForgetPod(const std::string& n) override { return real_->ForgetPod(n); }
  Result<std::vector<runtime::PodStatus>> ListPods(const std::map<std::string, std::string>& selector) override {
    return real_->ListPods(selector);
  }
  Result<std::optional<runtime::PodSpec>> GetPodSpec(const std::string& n) override { return real_->GetPodSpec(n); }
  Result<std::string> Logs(const std::string& n, size_t tail) override { return real_->Logs(n, tail); }

 private:
  runtime::PodRuntime* real_;
  ModelSlurm* slurm_;
};

// What one cluster's controllers use, kept as long as the process runs (a new ClusterState, after
// a change of the cluster's images, makes new ones).
struct ModelCluster {
  std::unique_ptr<ModelSlurm> slurm;
  std::unique_ptr<ModelExecRuntime> rt;
};

// A reader the cluster reconciler owns, reading the model.
class ModelReader : public slurm::SlurmReader {
 public:
  explicit ModelReader(ModelSlurm* s) : s_(s) {}
  Result<std::string> Ping() override { return s_->Ping(); }
  Result<std::vector<slurm::SlurmNode>> Nodes() override { return s_->Nodes(); }
  Result<std::vector<slurm::SlurmJob>> Jobs() override { return s_->Jobs(); }
  Result<std::vector<slurm::SlurmPartition>> Partitions() override { return s_->Partitions(); }

 private:
  ModelSlurm* s_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("The operator's Kubernetes side with a model of Slurm (bench/operator_scale.py)");
  kube::OperatorOptions options;
  std::vector<std::string> partitions;
  std::string passes_file;
  int jobs = 0;
  app.add_option("--kubeconfig", options.kubeconfig)->required();
  app.add_option("--namespace", options.namespace_name)->required();
  app.add_option("--state-dir", options.state_dir)->required();
  app.add_option("--storage-class", options.objects.storage_class);
  app.add_option("--jobs", jobs)->required();
  app.add_option("--partitions", partitions)->required()->delimiter(',');
  app.add_option("--passes", passes_file)->required();
  CLI11_PARSE(app, argc, argv);
  options.objects.shared_storage_class = options.objects.storage_class;
  options.lease_namespace = options.namespace_name;
  options.identity = "operator-scale";

  std::FILE* passes = std::fopen(passes_file.c_str(), "w");
  if (!passes) return std::fprintf(stderr, "cannot write %s\n", passes_file.c_str()), 1;
  std::mutex mu;
  std::vector<std::unique_ptr<ModelCluster>> models;
  options.slurm.controllers = [&](runtime::PodRuntime* rt, const op::BuildInputs& inputs, const std::string& cluster,
                                  op::LedgerStorage ledger) -> Result<std::unique_ptr<op::ClusterControllers>> {
    auto m = std::make_unique<ModelCluster>();
    m->slurm = std::make_unique<ModelSlurm>(rt, partitions, jobs, inputs.release.ToString());
    m->rt = std::make_unique<ModelExecRuntime>(rt, m->slurm.get());
    auto c = std::make_unique<op::ClusterControllers>();
    ASSIGN_OR_RETURN(op::OwnershipLedger owned, op::OwnershipLedger::Open(std::move(ledger)));
    c->ledger = std::make_unique<op::OwnershipLedger>(std::move(owned));
    c->rt = m->rt.get();
    ModelSlurm* s = m->slurm.get();
    c->cluster = std::make_unique<op::ClusterReconciler>(
        c->rt, inputs, [s](const std::string&, int) { return std::make_unique<ModelReader>(s); }, s);
    c->nodesets = std::make_unique<op::NodeSetReconciler>(c->rt, inputs, s);
    c->workspaces = std::make_unique<op::WorkspaceReconciler>(c->rt, inputs, s);
    api::SlurmCluster named;
    named.metadata.name = cluster;
    c->accounting = std::make_unique<op::AccountingSync>(c->rt, op::ControllerPodName(named));
    std::lock_guard<std::mutex> lock(mu);
    models.push_back(std::move(m));
    return c;
  };
  // The long poll finds nothing new: it waits out its time, or until it is stopped.
  options.slurm.submissions = [](const runtime::kubernetes::ObjectContext&, const std::string&) {
    return [](const std::vector<std::string>&, std::chrono::milliseconds timeout,
              std::shared_ptr<const std::atomic<bool>> cancelled) -> Result<ProcessResult> {
      const auto until = std::chrono::steady_clock::now() + timeout;
      while (std::chrono::steady_clock::now() < until && !cancelled->load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      return Status::Unavailable("cancelled or timed out");
    };
  };
  options.on_pass = [&](const std::string&, std::chrono::steady_clock::duration took, bool converged) {
    const auto now =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
    std::lock_guard<std::mutex> lock(mu);
    std::fprintf(passes, "%lld %lld %d\n", static_cast<long long>(now.count()),
                 static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(took).count()),
                 converged ? 1 : 0);
    std::fflush(passes);
  };
  const int code = kube::RunOperator(options);
  std::fclose(passes);
  return code;
}
