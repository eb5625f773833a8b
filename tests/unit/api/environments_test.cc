#include "api/environments.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "api/codec.h"
#include "api/validation.h"

namespace hpc::api {
namespace {

Environment Valid() {
  Environment e;
  e.metadata.name = "team-tools";
  e.spec.suite = "sid";
  e.spec.purpose = kPurposeWorkspace;
  e.spec.packages = {"jq", "python3-numpy=1:2.2.4+ds-1"};
  e.spec.files = {{"/etc/motd", "hello\n", 0644}};
  return e;
}

std::string Why(const Environment& e) { return Validate(e).message(); }

TEST(EnvironmentsTest, BuiltinsCoverTheThreeSlurmReleasesNewestFirstAndValidate) {
  const auto& all = BuiltinEnvironments();
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[0].metadata.name, kDefaultEnvironment);
  EXPECT_EQ(all[0].spec.suite, "sid");
  EXPECT_EQ(FindBuiltinEnvironment("slurm-24.11")->spec.suite, "trixie");
  EXPECT_EQ(FindBuiltinEnvironment("slurm-22.05")->spec.suite, "bookworm");
  EXPECT_FALSE(FindBuiltinEnvironment("slurm-21.08"));
  for (const auto& e : all) EXPECT_TRUE(Validate(e).ok()) << Validate(e).message();
  // What every cluster pod runs is in every cluster image.
  const auto base = BasePackages(kPurposeCluster, "sid");
  for (const char* p :
       {"slurmctld", "slurmd", "slurmdbd", "slurmrestd", "munge", "sackd", "mariadb-server", "openmpi-bin"}) {
    EXPECT_NE(std::find(base.begin(), base.end(), p), base.end()) << p;
  }
  // bookworm's Slurm (22.05) has no auth/slurm and Debian no sackd package there; its mpi/pmix
  // (the cluster's MpiDefault) needs libpmix.so in every pod that runs srun or a step.
  for (const char* purpose : {kPurposeCluster, kPurposeWorkspace}) {
    const auto bookworm = BasePackages(purpose, "bookworm");
    EXPECT_EQ(std::find(bookworm.begin(), bookworm.end(), "sackd"), bookworm.end());
    EXPECT_NE(std::find(bookworm.begin(), bookworm.end(), "munge"), bookworm.end());
    EXPECT_NE(std::find(bookworm.begin(), bookworm.end(), "libpmix-dev"), bookworm.end()) << purpose;
  }
}

TEST(EnvironmentsTest, EachReleaseHasAWorkspaceEnvironmentWithAPractitionersTools) {
  for (const char* release : {"26.05", "24.11", "22.05"}) {
    auto w = FindBuiltinEnvironment(std::string("workspace-") + release);
    ASSERT_TRUE(w) << release;
    EXPECT_EQ(w->spec.purpose, kPurposeWorkspace);
    EXPECT_EQ(w->spec.suite, FindBuiltinEnvironment(std::string("slurm-") + release)->spec.suite);
    for (const char* p : {"libopenmpi-dev", "build-essential", "python3-numpy", "git"}) {
      EXPECT_NE(std::find(w->spec.packages.begin(), w->spec.packages.end(), p), w->spec.packages.end()) << p;
    }
  }
  // 26.05: MPICH beside Open MPI, made the MPI that mpicc and mpirun name (srun speaks PMI-2 to it):
  // its runtime and launcher on the workers, its compiler wrappers and headers in workspaces.
  for (const auto& [name, package] : std::vector<std::pair<std::string, std::string>>{
           {"slurm-26.05", "mpich"}, {"workspace-26.05", "libmpich-dev"}}) {
    const auto e = FindBuiltinEnvironment(name);
    ASSERT_TRUE(e) << name;
    EXPECT_NE(std::find(e->spec.packages.begin(), e->spec.packages.end(), package), e->spec.packages.end()) << name;
    EXPECT_NE(e->spec.post_install.find("update-alternatives --set mpirun /usr/bin/mpirun.mpich"), std::string::npos)
        << name;
  }
  EXPECT_TRUE(FindBuiltinEnvironment("workspace-24.11")->spec.post_install.empty());
  const auto base = BasePackages(kPurposeWorkspace, "trixie");
  EXPECT_NE(std::find(base.begin(), base.end(), "slurm-client"), base.end());
  EXPECT_NE(std::find(base.begin(), base.end(), "sackd"), base.end());
  EXPECT_EQ(std::find(base.begin(), base.end(), "slurmctld"), base.end());
}

// Every image's MPI settings for ranks in pods: Open MPI over the pods' network, its idle ranks
// yielding the CPU (the kernel delivers packets between pods there), UCX without shared memory
// across pods.
TEST(EnvironmentsTest, EveryImageCarriesMpiSettingsForRanksInPods) {
  std::map<std::string, std::string> files;
  for (const auto& f : BaseFiles("cluster")) files[f.path] = f.content;
  EXPECT_NE(files["/etc/openmpi/openmpi-mca-params.conf"].find("\nmpi_yield_when_idle=1\n"), std::string::npos);
  EXPECT_NE(files["/etc/openmpi/openmpi-mca-params.conf"].find("\nbtl_tcp_if_exclude=127.0.0.0/8\n"),
            std::string::npos);
  EXPECT_NE(files["/etc/ucx/ucx.conf"].find("\nUCX_TLS=^sysv,posix,cma\n"), std::string::npos);
}

TEST(EnvironmentsTest, WorkspacesRunTheirOwnEnvironmentElseTheClusters) {
  SlurmCluster c;
  Workspace w;
  EXPECT_EQ(WorkspaceEnvironment(w, c), "slurm-26.05");
  c.spec.environment = "slurm-24.11";
  EXPECT_EQ(WorkspaceEnvironment(w, c), "slurm-24.11");
  w.spec.environment = "workspace-24.11";
  EXPECT_EQ(WorkspaceEnvironment(w, c), "workspace-24.11");
}

TEST(EnvironmentsTest, ClustersRunTheNewestUnlessTheyOrTheirNodesetsNameOne) {
  SlurmCluster c;
  NodeSet n;
  EXPECT_EQ(ClusterEnvironment(c), "slurm-26.05");
  EXPECT_EQ(WorkerEnvironment(n, c), "slurm-26.05");
  c.spec.environment = "slurm-24.11";
  EXPECT_EQ(WorkerEnvironment(n, c), "slurm-24.11");
  n.spec.environment = "gpu-24.11";
  EXPECT_EQ(WorkerEnvironment(n, c), "gpu-24.11");
}

TEST(EnvironmentsTest, ValidationNamesTheFieldAndWhy) {
  EXPECT_TRUE(Validate(Valid()).ok()) << Why(Valid());
  struct Case {
    std::function<void(Environment*)> change;
    std::string field, why;
  };
  // A named string, not a literal pushed in place: GCC 12 misreads that inlined copy as out of
  // bounds (-Warray-bounds) in some unity batches.
  const std::string unauthenticated = "--allow-unauthenticated";
  const std::vector<Case> cases = {
      {[](Environment* e) { e->metadata.name = "Bad_Name"; }, "metadata.name", "lowercase"},
      {[](Environment* e) { e->spec.suite = "sid; rm -rf /"; }, "spec.suite", "Debian suite"},
      {[](Environment* e) { e->spec.purpose = "gpu"; }, "spec.purpose", "cluster or workspace"},
      {[&](Environment* e) { e->spec.packages.push_back(unauthenticated); }, "spec.packages[2]",
       "not a Debian package name"},
      {[](Environment* e) { e->spec.files[0].path = "/etc/../root/.ssh/authorized_keys"; }, "spec.files[0].path",
       "absolute path"},
      {[](Environment* e) { e->spec.files[0].path = "/proc/sys/kernel/x"; }, "spec.files[0].path", "outside /proc"},
      {[](Environment* e) { e->spec.files[0].mode = 010000; }, "spec.files[0].mode", "file mode"},
  };
  for (const auto& c : cases) {
    auto e = Valid();
    c.change(&e);
    const std::string why = Why(e);
    EXPECT_NE(why.find(c.field), std::string::npos) << why;
    EXPECT_NE(why.find(c.why), std::string::npos) << why;
  }
}

TEST(EnvironmentsTest, ManifestsDecodeWithUnknownFieldsRefused) {
  auto e = DecodeEnvironment(R"(apiVersion: hpcplane.io/v1alpha1
kind: Environment
metadata: {name: team-tools}
spec:
  suite: trixie
  purpose: workspace
  packages: [jq]
  files: [{path: /etc/motd, content: "hi", mode: 420}]
  postInstall: "echo done"
)",
                             "env.yaml");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->spec.suite, "trixie");
  EXPECT_EQ(e->spec.files[0].mode, 0644);
  EXPECT_EQ(e->spec.post_install, "echo done");
  auto round = DecodeEnvironment(ToJson(*e).dump(), "json");
  ASSERT_TRUE(round.ok()) << round.status().message();
  EXPECT_EQ(round->spec, e->spec);
  auto unknown = DecodeEnvironment(
      "apiVersion: hpcplane.io/v1alpha1\nkind: Environment\nmetadata: {name: x}\nspec: {suite: sid, mirror: y}\n",
      "e.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("spec.mirror: unknown field"), std::string::npos)
      << unknown.status().message();
}

TEST(EnvironmentsTest, ClusterAndNodeSetEnvironmentNamesAreChecked) {
  SlurmCluster c;
  c.metadata.name = "c1";
  c.spec.subnet = "10.9.9.0/24";
  c.spec.environment = "slurm-26.05";
  EXPECT_TRUE(Validate(c).ok()) << Validate(c).message();
  c.spec.environment = "../etc";
  Status s = Validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("spec.environment"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace hpc::api
