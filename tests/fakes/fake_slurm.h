// An in-memory Slurm behind the operator's SlurmReader and SlurmControl interfaces, for unit
// tests of reconcilers and syncs: it holds nodes, partitions and jobs, applies the control verbs
// to them, and records every call so a test can assert what was (and was not) done.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "slurm/slurm_client.h"

namespace hpc::fakes {

class FakeSlurm : public slurm::SlurmReader, public slurm::SlurmControl {
 public:
  std::vector<slurm::SlurmNode> nodes;
  std::vector<slurm::SlurmPartition> partitions;
  std::vector<slurm::SlurmJob> jobs;
  std::vector<std::string> calls;  // "verb target", in order
  bool reachable = true;           // false: every read fails, as when slurmctld does not answer

  Result<std::string> Ping() override {
    if (!reachable) return Status::Error("slurmctld does not answer");
    return std::string("22.05.8");
  }
  Result<std::vector<slurm::SlurmNode>> Nodes() override {
    if (!reachable) return Status::Error("slurmctld does not answer");
    return nodes;
  }
  Result<std::vector<slurm::SlurmJob>> Jobs() override {
    if (!reachable) return Status::Error("slurmctld does not answer");
    return jobs;
  }
  Result<std::vector<slurm::SlurmPartition>> Partitions() override {
    if (!reachable) return Status::Error("slurmctld does not answer");
    return partitions;
  }

  Status DrainNode(const std::string& node, const std::string& /*reason*/) override { return Record("drain " + node); }
  Status ResumeNode(const std::string& node) override { return Record("resume " + node); }
  Status DeleteNode(const std::string& node) override {
    std::erase_if(nodes, [&](const auto& n) { return n.name == node; });
    return Record("delete-node " + node);
  }
  Status Reconfigure() override { return Record("reconfigure"); }
  Status ResetNode(const std::string& node, const std::string& reason) override {
    return Record("reset " + node + " (" + reason + ")");
  }
  Status CreatePartition(const std::string& partition, const std::vector<std::string>& /*options*/) override {
    partitions.push_back({partition, "UP"});
    return Record("create-partition " + partition);
  }
  Status UpdatePartition(const std::string& partition, const std::vector<std::string>& /*options*/) override {
    return Record("update-partition " + partition);
  }
  Status DeletePartition(const std::string& partition) override {
    std::erase_if(partitions, [&](const auto& p) { return p.name == partition; });
    return Record("delete-partition " + partition);
  }
  Status CancelPartitionJobs(const std::string& partition) override { return Record("cancel " + partition); }
  Status EndJobsOnNode(const std::string& node, bool requeue) override {
    return Record((requeue ? "requeue-jobs " : "cancel-jobs ") + node);
  }

  bool Called(const std::string& call) const { return std::find(calls.begin(), calls.end(), call) != calls.end(); }
  bool HasPartition(const std::string& name) const {
    return std::any_of(partitions.begin(), partitions.end(), [&](const auto& p) { return p.name == name; });
  }

 private:
  Status Record(std::string call) {
    calls.push_back(std::move(call));
    return Status::Ok();
  }
};

// A reader that forwards to a FakeSlurm: a reconciler that makes one reader per endpoint (and
// owns it) reads the test's Slurm through it.
class ForwardingReader : public slurm::SlurmReader {
 public:
  explicit ForwardingReader(FakeSlurm* s) : s_(s) {}
  Result<std::string> Ping() override { return s_->Ping(); }
  Result<std::vector<slurm::SlurmNode>> Nodes() override { return s_->Nodes(); }
  Result<std::vector<slurm::SlurmJob>> Jobs() override { return s_->Jobs(); }
  Result<std::vector<slurm::SlurmPartition>> Partitions() override { return s_->Partitions(); }

 private:
  FakeSlurm* s_;
};

}  // namespace hpc::fakes
