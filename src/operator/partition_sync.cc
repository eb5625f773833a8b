#include "operator/partition_sync.h"

#include <map>
#include <set>

#include <spdlog/spdlog.h>

#include "slurm/config.h"

namespace hpc::op {

std::vector<PartitionAction> PlanPartitions(const std::vector<api::NodeSet>& nodesets,
                                            const std::vector<slurm::SlurmPartition>& actual,
                                            const std::vector<slurm::SlurmNode>& nodes, bool users_changed,
                                            const std::set<std::string>& owned, bool cluster_sets_default_memory) {
  std::map<std::string, const slurm::SlurmPartition*> live;
  for (const auto& p : actual) live[p.name] = &p;
  std::vector<PartitionAction> out;
  std::set<std::string> wanted;
  for (const auto& ns : nodesets) {
    const std::string name = ns.PartitionName();
    wanted.insert(name);
    std::string members;
    bool missing_member = false;
    for (const auto& n : nodes) {
      if (!n.features.count(ns.metadata.name)) continue;
      members += (members.empty() ? "" : ",") + n.name;
      missing_member = missing_member || !n.partitions.count(name);
    }
    auto it = live.find(name);
    if (it == live.end()) {
      std::vector<std::string> opts;
      if (!members.empty()) opts.push_back("Nodes=" + members);
      for (const auto& o : slurm::PartitionOptions(ns, cluster_sets_default_memory)) opts.push_back(o);
      out.push_back({PartitionAction::kCreate, name, opts});
      continue;
    }
    std::vector<std::string> update;
    if (missing_member) update.push_back("Nodes=" + members);
    if (it->second->state != ns.spec.partition.state) update.push_back("State=" + ns.spec.partition.state);
    auto groups = ns.spec.partition.options.find("AllowGroups");
    if (users_changed && groups != ns.spec.partition.options.end()) update.push_back("AllowGroups=" + groups->second);
    if (!update.empty()) out.push_back({PartitionAction::kUpdate, name, update});
  }
  for (const auto& p : actual) {
    // Not wanted is not enough: an admin's partition is not wanted either.
    if (owned.count(p.name) && !wanted.count(p.name) && p.name != slurm::kPlaceholderPartition) {
      out.push_back({PartitionAction::kDelete, p.name, {}});
    }
  }
  return out;
}

Status SyncPartitions(const std::vector<api::NodeSet>& nodesets, slurm::SlurmReader* reader,
                      slurm::SlurmControl* control, bool users_changed, OwnershipLedger* ledger,
                      bool cluster_sets_default_memory) {
  ASSIGN_OR_RETURN(auto partitions, reader->Partitions());
  ASSIGN_OR_RETURN(auto nodes, reader->Nodes());
  // Ours before they exist: a crash right after a create still finds the partition recorded.
  std::set<std::string> wanted;
  for (const auto& ns : nodesets) wanted.insert(ns.PartitionName());
  RETURN_IF_ERROR(ledger->AddPartitions(wanted));
  // Recorded ones that neither exist nor are wanted (deleted while the daemon was down, or
  // gone with a slurmctld restart) are forgotten, so a later admin partition of that name stays theirs.
  std::set<std::string> live;
  for (const auto& p : partitions) live.insert(p.name);
  for (const auto& name : std::set<std::string>(ledger->partitions())) {
    if (!live.count(name) && !wanted.count(name)) RETURN_IF_ERROR(ledger->ForgetPartition(name));
  }
  Status first = Status::Ok();
  for (const auto& a :
       PlanPartitions(nodesets, partitions, nodes, users_changed, ledger->partitions(), cluster_sets_default_memory)) {
    Status s = a.kind == PartitionAction::kCreate   ? control->CreatePartition(a.partition, a.options)
               : a.kind == PartitionAction::kUpdate ? control->UpdatePartition(a.partition, a.options)
                                                    : control->DeletePartition(a.partition);
    const char* verb = a.kind == PartitionAction::kCreate   ? "created"
                       : a.kind == PartitionAction::kUpdate ? "updated"
                                                            : "deleted";
    if (s.ok() && a.kind == PartitionAction::kDelete) s = ledger->ForgetPartition(a.partition);
    if (s.ok()) {
      std::string opts;
      for (const auto& o : a.options) opts += " " + o;
      spdlog::info("partition {} {}{}", a.partition, verb, opts);
    } else if (first.ok()) {
      first = s;
    }
  }
  return first;
}

}  // namespace hpc::op
