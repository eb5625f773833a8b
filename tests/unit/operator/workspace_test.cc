// Workspace derivation, the partition plan, the platform catalogs.
#include <gtest/gtest.h>

#include "api/codec.h"
#include "api/validation.h"
#include "common/files.h"
#include "operator/builders.h"
#include "operator/workspace.h"
#include "platform/catalog.h"
#include "slurm/config.h"

namespace hpc::op {
namespace {

api::Workspace Ws() {
  api::Workspace w;
  w.metadata.name = "ann-astro";
  w.spec.cluster = "demo";
  w.spec.user = {"ann", 20000, 20000, false, ""};
  w.spec.project = "astro";
  w.spec.tier = "small";
  w.spec.resources = {2, 2048, 0};
  w.spec.max_workers = 3;
  w.spec.datasets = {"astro"};
  return w;
}

TEST(WorkspaceNodeSet, IsAutoscaledFromZeroWithTheTierAndAPrivatePartition) {
  api::NodeSet ns = WorkspaceNodeSet(Ws(), false);
  EXPECT_EQ(ns.metadata.name, "ann-astro");
  EXPECT_FALSE(ns.spec.replicas.has_value());
  EXPECT_FALSE(ns.spec.min_replicas.has_value());  // the cluster's default
  EXPECT_EQ(ns.spec.max_replicas, 3);
  EXPECT_EQ(ns.spec.resources.cpus, 2);
  EXPECT_EQ(ns.spec.resources.memory_mib, 2048);
  EXPECT_EQ(ns.PartitionName(), "ann-astro");
  EXPECT_EQ(ns.spec.partition.options.at("AllowGroups"), std::string("ann,") + kAdminGroup);
  EXPECT_EQ(ns.spec.partition.state, "UP");
  ASSERT_EQ(ns.spec.datasets.size(), 1u);
  EXPECT_EQ(ns.spec.datasets[0].mount_path, "/datasets/astro");
  EXPECT_TRUE(api::ValidateShape(ns).ok());
}

TEST(WorkspaceNodeSet, StoppingDrainsThenPinsToZeroOnceJobsAreGone) {
  api::Workspace w = Ws();
  w.spec.stopping = true;
  EXPECT_EQ(WorkspaceNodeSet(w, false).spec.partition.state, "DRAIN");
  EXPECT_FALSE(WorkspaceNodeSet(w, false).spec.replicas.has_value());
  EXPECT_EQ(WorkspaceNodeSet(w, true).spec.replicas.value_or(-1), 0);
}

TEST(WorkspaceJson, RoundTrips) {
  api::Workspace w = Ws();
  w.spec.token_lifetime_seconds = 60;
  w.status.phase = "Ready";
  w.status.token_expires = 123;
  auto back = WorkspaceFromJson(WorkspaceSpecJson(w), WorkspaceStatusJson(w.status));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(WorkspaceSpecJson(*back), WorkspaceSpecJson(w));
  EXPECT_EQ(back->status.phase, "Ready");
  EXPECT_EQ(back->status.token_expires, 123);
  EXPECT_FALSE(WorkspaceFromJson(nlohmann::json::object(), nullptr).ok());
}

TEST(WorkspaceValidation, NamesTheField) {
  api::Workspace w = Ws();
  w.spec.max_workers = 0;
  EXPECT_NE(ValidateWorkspace(w).message().find("maxWorkers"), std::string::npos);
  w = Ws();
  w.spec.user.name = "root";
  EXPECT_NE(ValidateWorkspace(w).message().find("reserved"), std::string::npos);
  w = Ws();
  w.metadata.name = "a-very-long-workspace-name-indeed";
  EXPECT_NE(ValidateWorkspace(w).message().find("name:"), std::string::npos);
}

TEST(WorkspaceValidation, NeverASystemAccountWhoeverWroteTheResource) {
  for (int64_t id : {0, 999, 64030, 60001}) {
    api::Workspace w = Ws();
    w.spec.user.uid = id;
    EXPECT_NE(ValidateWorkspace(w).message().find("user.uid: must be 1000-60000"), std::string::npos) << id;
    w = Ws();
    w.spec.user.gid = id;
    EXPECT_NE(ValidateWorkspace(w).message().find("user.gid: must be 1000-60000"), std::string::npos) << id;
  }
  EXPECT_TRUE(ValidateWorkspace(Ws()).ok());
}

// A Workspace resource from kubectl: what the CRD schema has, types checked, the rest defaulted.
TEST(WorkspaceResource, DecodesWithDefaultsAndRefusesWithTheFieldPath) {
  const std::string ok = R"({"apiVersion": "hpcplane.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "ws-bob"},
    "spec": {"cluster": "research", "user": {"name": "bob", "uid": 2002, "gid": 2002}, "project": "demo",
             "resources": {"cpus": 1, "memoryMiB": 500}}})";
  auto w = api::DecodeWorkspace(ok, "Workspace slurm/ws-bob");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->spec.user.uid, 2002);
  EXPECT_EQ(w->spec.max_workers, 2) << "left out: the default";
  EXPECT_EQ(w->spec.idle_timeout_seconds, 300);
  EXPECT_TRUE(ValidateWorkspace(*w).ok()) << ValidateWorkspace(*w).message();

  auto wrong_type = api::DecodeWorkspace(
      R"({"apiVersion": "hpcplane.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "ws-bob"},
          "spec": {"cluster": "research", "maxWorkers": "9"}})",
      "Workspace slurm/ws-bob");
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.status().message().find("spec.maxWorkers: must be an integer"), std::string::npos)
      << wrong_type.status().message();
  auto unknown = api::DecodeWorkspace(
      R"({"apiVersion": "hpcplane.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "ws-bob"},
          "spec": {"cluster": "research", "user": {"name": "bob", "uid": 2002, "sudo": true}}})",
      "Workspace slurm/ws-bob");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("spec.user.sudo"), std::string::npos) << unknown.status().message();
  auto kind = api::DecodeWorkspace(R"({"apiVersion": "hpcplane.io/v1alpha1", "kind": "NodeSet"})", "x");
  EXPECT_FALSE(kind.ok());
  EXPECT_FALSE(api::DecodeWorkspace("{not json", "x").ok());
}

TEST(WorkspaceUsers, OneEntryPerUser) {
  api::Workspace a = Ws(), b = Ws();
  b.metadata.name = "ann-bio";
  EXPECT_EQ(WorkspaceUsers({a, b}).size(), 1u);
}

TEST(UsersConfigMap, PrivateGroupsAndAnAdminGroup) {
  api::SlurmCluster c;
  BuildInputs in;
  in.host_passwd = "root:x:0:0:root:/root:/bin/bash\n";
  in.host_group = "root:x:0:\n";
  auto cm = BuildUsersConfigMap(c, {{"ann", 20000, 20000, false, ""}, {"bob", 20001, 20001, true, ""}}, in);
  EXPECT_NE(cm.data["passwd"].find("ann:x:20000:20000:"), std::string::npos);
  EXPECT_NE(cm.data["group"].find("ann:x:20000:ann\n"), std::string::npos);
  EXPECT_NE(cm.data["group"].find(std::string(kAdminGroup) + ":x:" + std::to_string(kAdminGroupGid) + ":bob\n"),
            std::string::npos);
}

// A project dataset belongs to its project's group: the nodeset's and login pod's datasets
// carry the gid, and the group lists the users of the workspaces mounting it.
TEST(WorkspaceDatasets, BelongToTheProjectGroupWhoseMembersAreItsWorkspacesUsers) {
  api::Workspace ann = Ws();
  ann.spec.dataset_gids = {{"astro", 60000}};
  api::Workspace ben = Ws();
  ben.metadata.name = "ben-astro";
  ben.spec.user = {"ben", 20001, 20001, false, ""};
  ben.spec.dataset_gids = {{"astro", 60000}};
  api::NodeSet ns = WorkspaceNodeSet(ann, false);
  ASSERT_EQ(ns.spec.datasets.size(), 1u);
  EXPECT_EQ(ns.spec.datasets[0].group_gid, 60000);
  auto groups = WorkspaceDatasetGroups({ann, ben});
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0], (DatasetGroup{"proj-astro", 60000, {"ann", "ben"}}));
  // Admins are members of every dataset group; others are not.
  api::SlurmCluster c;
  BuildInputs in;
  auto cm = BuildUsersConfigMap(c, {ann.spec.user, {"carol", 20002, 20002, true, ""}, {"dan", 20003, 20003, false, ""}},
                                in, {{"proj-astro", 60000, {"ann"}}});
  EXPECT_NE(cm.data["group"].find("\nproj-astro:x:60000:ann,carol\n"), std::string::npos) << cm.data["group"];
  // A workspace from before dataset groups has none (the daemon gives it one at start).
  EXPECT_TRUE(WorkspaceDatasetGroups({Ws()}).empty());
}

}  // namespace
}  // namespace hpc::op
