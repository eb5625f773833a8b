// The partition plan and its sync: create and update hpcplane's nodeset partitions, and delete
// only those the ownership ledger records as hpcplane's (an admin's partition is never deleted).
#include <algorithm>

#include <gtest/gtest.h>

#include "common/files.h"
#include "fakes/fake_slurm.h"
#include "operator/node_snapshot.h"
#include "operator/ownership.h"
#include "operator/partition_sync.h"
#include "slurm/config.h"

namespace hpc::op {
namespace {

api::NodeSet Ns(const std::string& name, const std::string& state = "UP") {
  api::NodeSet n;
  n.metadata.name = name;
  n.spec.partition.state = state;
  return n;
}

slurm::SlurmNode Node(const std::string& name, const std::string& feature, std::set<std::string> partitions) {
  slurm::SlurmNode n;
  n.name = name;
  n.features = {feature};
  n.partitions = std::move(partitions);
  return n;
}

// A ledger in a fresh temporary directory, removed with the test.
class LedgerDir {
 public:
  LedgerDir() : dir_(*files::MakeTempDir("hpcplane-ledger")) {}
  ~LedgerDir() { (void)files::RemoveAll(dir_); }
  std::string path() const { return dir_ + "/owned.json"; }
  OwnershipLedger Open() const { return *OwnershipLedger::Open(path()); }

 private:
  std::string dir_;
};

TEST(PlanPartitions, CreatesMissingOnesWithTheirRegisteredWorkers) {
  auto plan = PlanPartitions({Ns("a"), Ns("b")}, {{"a", "UP"}}, {Node("b-0", "b", {})}, false, {});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].kind, PartitionAction::kCreate);
  EXPECT_EQ(plan[0].partition, "b");
  EXPECT_EQ(plan[0].options.front(), "Nodes=b-0");
  // The nodeset's memory over its CPUs for jobs that ask for none (1024 MiB, 1 CPU by default).
  EXPECT_NE(std::find(plan[0].options.begin(), plan[0].options.end(), "DefMemPerCPU=1024"), plan[0].options.end());
  auto admins = PlanPartitions({Ns("b")}, {}, {}, false, {}, /*cluster_sets_default_memory=*/true);
  ASSERT_EQ(admins.size(), 1u);
  EXPECT_EQ(std::find(admins[0].options.begin(), admins[0].options.end(), "DefMemPerCPU=1024"),
            admins[0].options.end());
}

TEST(PlanPartitions, AddsWorkersThatAreNotMembersAndAppliesStates) {
  auto plan =
      PlanPartitions({Ns("a", "DRAIN")}, {{"a", "UP"}}, {Node("a-0", "a", {"a"}), Node("a-1", "a", {})}, false, {"a"});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].kind, PartitionAction::kUpdate);
  EXPECT_EQ(plan[0].options, (std::vector<std::string>{"Nodes=a-0,a-1", "State=DRAIN"}));
}

TEST(PlanPartitions, NothingToDoWhenInStep) {
  EXPECT_TRUE(PlanPartitions({Ns("a")}, {{"a", "UP"}}, {Node("a-0", "a", {"a"})}, false, {"a"}).empty());
}

TEST(PlanPartitions, DeletesOwnedPartitionsWithoutNodesetAndRefreshesGroups) {
  api::NodeSet a = Ns("a");
  a.spec.partition.options["AllowGroups"] = "ann,hpcadmins";
  auto plan = PlanPartitions({a}, {{"a", "UP"}, {"gone", "DRAIN"}, {slurm::kPlaceholderPartition, "INACTIVE"}}, {},
                             true, {"a", "gone", slurm::kPlaceholderPartition});
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0], (PartitionAction{PartitionAction::kUpdate, "a", {"AllowGroups=ann,hpcadmins"}}));
  EXPECT_EQ(plan[1], (PartitionAction{PartitionAction::kDelete, "gone", {}}));
}

// Guards the bug where every partition outside hpcplane's list was deleted (extraConfig's
// "cloud", an admin's `scontrol create partition`).
TEST(PlanPartitions, NeverDeletesAPartitionItDoesNotOwn) {
  auto plan = PlanPartitions({Ns("a")}, {{"a", "UP"}, {"cloud", "UP"}, {"debug", "DOWN"}}, {}, false, {"a"});
  EXPECT_TRUE(plan.empty());
}

TEST(SyncPartitions, RecordsWhatItCreatesAndLeavesOthersAlone) {
  LedgerDir dir;
  auto ledger = dir.Open();
  fakes::FakeSlurm slurm;
  slurm.partitions = {{"cloud", "UP"}, {slurm::kPlaceholderPartition, "INACTIVE"}};
  ASSERT_TRUE(SyncPartitions({Ns("a")}, &slurm, &slurm, false, &ledger).ok());
  EXPECT_TRUE(slurm.Called("create-partition a"));
  EXPECT_EQ(ledger.partitions(), (std::set<std::string>{"a"}));
  // An admin adds one at run time; the nodeset goes away: only hpcplane's own is deleted.
  slurm.partitions.push_back({"debug", "UP"});
  ASSERT_TRUE(SyncPartitions({}, &slurm, &slurm, false, &ledger).ok());
  EXPECT_TRUE(slurm.Called("delete-partition a"));
  EXPECT_TRUE(slurm.HasPartition("cloud"));
  EXPECT_TRUE(slurm.HasPartition("debug"));
  EXPECT_TRUE(ledger.partitions().empty());
  // The ledger is on disk: a restarted daemon knows the same.
  EXPECT_TRUE(dir.Open().partitions().empty());
}

TEST(SyncPartitions, OwnershipOutlivesTheProcess) {
  LedgerDir dir;
  fakes::FakeSlurm slurm;
  {
    auto ledger = dir.Open();
    ASSERT_TRUE(SyncPartitions({Ns("a"), Ns("b")}, &slurm, &slurm, false, &ledger).ok());
  }
  auto reopened = dir.Open();
  ASSERT_TRUE(SyncPartitions({Ns("a")}, &slurm, &slurm, false, &reopened).ok());
  EXPECT_TRUE(slurm.Called("delete-partition b"));
  EXPECT_FALSE(slurm.Called("delete-partition a"));
}

// A recorded partition that vanished (slurmctld restarted without it) is forgotten, so an admin
// who later creates one of that name keeps it.
TEST(SyncPartitions, ForgetsRecordedPartitionsThatNoLongerExist) {
  LedgerDir dir;
  auto ledger = dir.Open();
  ASSERT_TRUE(ledger.AddPartitions({"old"}).ok());
  fakes::FakeSlurm slurm;
  ASSERT_TRUE(SyncPartitions({}, &slurm, &slurm, false, &ledger).ok());
  EXPECT_TRUE(ledger.partitions().empty());
  slurm.partitions.push_back({"old", "UP"});
  ASSERT_TRUE(SyncPartitions({}, &slurm, &slurm, false, &ledger).ok());
  EXPECT_TRUE(slurm.HasPartition("old"));
}

TEST(SyncPartitions, DoesNothingWhenSlurmCannotBeRead) {
  LedgerDir dir;
  auto ledger = dir.Open();
  ASSERT_TRUE(ledger.AddPartitions({"gone"}).ok());
  fakes::FakeSlurm slurm;
  slurm.reachable = false;
  EXPECT_FALSE(SyncPartitions({}, &slurm, &slurm, false, &ledger).ok());
  EXPECT_TRUE(slurm.calls.empty());
  EXPECT_EQ(ledger.partitions(), (std::set<std::string>{"gone"}));
}

TEST(OwnershipLedger, AMalformedRecordIsAnErrorNotAnEmptyLedger) {
  LedgerDir dir;
  ASSERT_TRUE(files::WriteAtomic(dir.path(), "{\"partitions\": [1]}").ok());
  auto ledger = OwnershipLedger::Open(dir.path());
  ASSERT_FALSE(ledger.ok());
  EXPECT_NE(ledger.status().message().find("not a valid ownership record"), std::string::npos);
  ASSERT_TRUE(files::WriteAtomic(dir.path(), "{\"partitions\": [], \"datasets\": {\"astro\": \"4100\"}}").ok());
  EXPECT_FALSE(OwnershipLedger::Open(dir.path()).ok()) << "a dataset's group is a number";
}

// On Kubernetes the ledger is a ConfigMap's text: what one replica recorded, the next reads; a
// record it cannot read is an error (nothing deleted), as with a file.
TEST(OwnershipLedger, KeptInAnyStorageItsNextReaderSeesWhatWasRecorded) {
  std::optional<std::string> stored;
  bool readable = true;
  LedgerStorage storage{"test storage",
                        [&]() -> Result<std::optional<std::string>> {
                          if (!readable) return Status::Error("the API server is away");
                          return stored;
                        },
                        [&](const std::string& text) {
                          stored = text;
                          return Status::Ok();
                        }};
  auto first = OwnershipLedger::Open(storage);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(stored) << "nothing written before something is owned";
  ASSERT_TRUE(first->AddPartitions({"cpu", "burst"}).ok());
  ASSERT_TRUE(first->SetAdminLevel("ann", "Administrator").ok());
  ASSERT_TRUE(first->AddDataset("astro", 60100).ok());
  auto next = OwnershipLedger::Open(storage);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->partitions(), (std::set<std::string>{"burst", "cpu"}));
  EXPECT_EQ(next->AdminLevel("ann"), "Administrator");
  EXPECT_EQ(next->datasets().at("astro"), 60100);
  readable = false;
  EXPECT_FALSE(OwnershipLedger::Open(storage).ok());
  readable = true;
  stored = "not json";
  auto bad = OwnershipLedger::Open(storage);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("test storage"), std::string::npos) << bad.status().message();
}

// A pass's node view is read once, when the pass starts: later changes wait for the next pass.
TEST(NodeSnapshot, ServesTheNodesReadAtTheStartOfThePass) {
  fakes::FakeSlurm slurm;
  slurm.nodes = {Node("a-0", "a", {"a"})};
  NodeSnapshot snapshot(&slurm);
  slurm.nodes.push_back(Node("a-1", "a", {"a"}));
  ASSERT_EQ(snapshot.Nodes()->size(), 1u);
  slurm.partitions = {{"a", "UP"}};
  EXPECT_EQ(snapshot.Partitions()->size(), 1u);  // everything else is read live
  fakes::FakeSlurm down;
  down.reachable = false;
  EXPECT_FALSE(NodeSnapshot(&down).Nodes().ok());
}

TEST(NeedsReconfigure, OnlyForChangesBeyondNodesetsAndPartitions) {
  std::string base = "ClusterName=x\nNodeSet=a Feature=a\nPartitionName=a Nodes=a State=UP\n";
  EXPECT_FALSE(slurm::NeedsReconfigure(base, base + "NodeSet=b Feature=b\nPartitionName=b Nodes=b State=UP\n"));
  EXPECT_FALSE(slurm::NeedsReconfigure(base, "ClusterName=x\n"));
  EXPECT_TRUE(slurm::NeedsReconfigure(base, base + "PriorityType=priority/multifactor\n"));
  // The change probe's hook reaches older clusters at slurmctld's next start, not by reconfigure.
  EXPECT_FALSE(slurm::NeedsReconfigure(base, base + "JobSubmitPlugins=lua\n"));
  EXPECT_FALSE(slurm::NeedsReconfigure(base, base + "HealthCheckProgram=/run/slurm-scripts/health_check\n"
                                                    "HealthCheckInterval=30\nHealthCheckNodeState=ANY\n"
                                                    "Epilog=/run/slurm-scripts/health_check\n"));
  EXPECT_FALSE(slurm::NeedsReconfigure(base, base + "Epilog=/bin/true\n"));        // without health checks
  EXPECT_TRUE(slurm::NeedsReconfigure(base, base + "Epilog=/opt/site/epilog\n"));  // an admin's is theirs
  // hpcplane's MpiDefault, once "none", now by release: at slurmctld's next start too.
  EXPECT_FALSE(slurm::NeedsReconfigure(base + "MpiDefault=none\n", base + "MpiDefault=pmix\n"));
  EXPECT_FALSE(slurm::NeedsReconfigure(base + "MpiDefault=none\n", "MpiDefault=pmi2\n" + base));
}

}  // namespace
}  // namespace hpc::op
