// A workspace sees only what it should (real Slurm, the state dir under /var/lib as in
// production): its pods have a root of their own, and project datasets belong to their project's
// group. From ann's login pod and from a job of ann's on her worker, every path to ben's dataset
// is refused, and nothing of the host outside the pod's mounts is visible.
#include <sys/stat.h>

#include <unistd.h>

#include <gtest/gtest.h>

#include "common/files.h"
#include "harness.h"

namespace hpc::it {
namespace {

using namespace std::chrono_literals;

ProcessResult InWorkspace(TestCluster& c, const std::string& ws, const std::string& script) {
  return c.Cli({"workspace", "exec", ws, "--", "bash", "-c", script}, 60s);
}

void LaunchWorkspace(TestCluster& c, const std::string& user, const std::string& project) {
  auto r = c.Cli({"workspace", "launch", "--user", user, "--project", project, "--tier", "small", "--max-workers", "1",
                  "--idle-timeout", "5s"},
                 120s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
}

// A shell script that tries every path and prints "OPEN <path>" for each one that answers.
std::string Probe(const std::vector<std::string>& paths) {
  std::string s = "for p in";
  for (const auto& p : paths) s += " '" + p + "'";
  s += "; do if ls \"$p\" >/dev/null 2>&1 || cat \"$p\" >/dev/null 2>&1; then echo \"OPEN $p\"; fi; done;"
       " touch /datasets/bio/from-ann.txt 2>/dev/null && echo 'OPEN write to bio';"
       " echo probed";
  return s;
}

void SeeOnlyTheirPodAndTheirProjectsDatasets();

TEST(IsolationIT, WorkspacesSeeOnlyTheirPodAndTheirProjectsDatasets) {
  ASSERT_EQ(files::MakeDirs("/var/lib/hpcplane-it", 0700).ok(), true);
  SeeOnlyTheirPodAndTheirProjectsDatasets();
  ::rmdir("/var/lib/hpcplane-it");  // only once empty: other test processes may share it
}

void SeeOnlyTheirPodAndTheirProjectsDatasets() {
  ClusterOptions o;
  o.replicas = 0;
  o.state_parent = "/var/lib/hpcplane-it";
  TestCluster c("iso", o);
  ASSERT_EQ(c.Up().exit_code, 0);
  for (const char* u : {"ann", "ben"}) ASSERT_EQ(c.Cli({"users", "add", u}).exit_code, 0);
  LaunchWorkspace(c, "ann", "astro");
  LaunchWorkspace(c, "ben", "bio");

  // Ben keeps a file in his project's dataset.
  ASSERT_EQ(InWorkspace(c, "ben-bio", "echo secret > /datasets/bio/notes.txt").exit_code, 0);
  const std::string volumes = c.ClusterDir() + "/runtime/volumes";
  const std::string bio_host = volumes + "/dataset-bio";
  ASSERT_TRUE(files::Exists(bio_host + "/notes.txt")) << "the probe below would prove nothing";

  // On the host: the state dir is root's alone; each dataset is root:proj-<project> 2770.
  struct stat st {};
  ASSERT_EQ(::stat(c.ClusterDir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat((c.state_dir() + "/clusters").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat(bio_host.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 02770u);
  EXPECT_EQ(st.st_uid, 0u);

  const std::vector<std::string> forbidden = {"/datasets/bio",
                                              "/datasets/bio/notes.txt",
                                              bio_host,
                                              bio_host + "/notes.txt",
                                              c.state_dir(),
                                              c.ClusterDir() + "/runtime/pods",
                                              "/var/lib/hpcplane-it",
                                              "/home",
                                              "/work",
                                              "/root",
                                              "/proc/1/root/datasets",
                                              HPCPLANE_SOURCE_DIR};
  // The probe sees what is there: it reports ann's own dataset and the pod's /tmp as open.
  auto sane = InWorkspace(c, "ann-astro", Probe({"/datasets/astro", "/tmp"}));
  EXPECT_NE(sane.out.find("OPEN /datasets/astro\nOPEN /tmp\n"), std::string::npos) << sane.out << sane.err;
  auto login = InWorkspace(c, "ann-astro", Probe(forbidden));
  EXPECT_NE(login.out.find("probed"), std::string::npos) << login.out << login.err;
  EXPECT_EQ(login.out.find("OPEN"), std::string::npos) << login.out;

  // ann's own dataset works as before; her files belong to her project's group.
  auto own = InWorkspace(c, "ann-astro",
                         "echo hi > /datasets/astro/ann.txt && stat -c '%a %U %G' /datasets/astro && "
                         "stat -c '%U %G' /datasets/astro/ann.txt");
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(own.out, "2770 root proj-astro\nann proj-astro\n");

  // The same from a job of ann's on her worker.
  auto job = c.Cli({"workspace", "exec", "ann-astro", "--", "sbatch", "--parsable", "--wait", "-o",
                    "/datasets/astro/probe.txt", "--wrap", Probe(forbidden) + "; hostname"},
                   120s);
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  auto probe = files::Read(volumes + "/dataset-astro/probe.txt").value_or("");
  EXPECT_NE(probe.find("probed\nann-astro-0\n"), std::string::npos) << probe;
  EXPECT_EQ(probe.find("OPEN"), std::string::npos) << probe;

  // Ben joins astro: his next workspace there reads and writes ann's project files.
  LaunchWorkspace(c, "ben", "astro");
  auto joined = InWorkspace(c, "ben-astro", "cat /datasets/astro/ann.txt && touch /datasets/astro/ben.txt");
  EXPECT_EQ(joined.exit_code, 0) << joined.err;
  EXPECT_EQ(joined.out, "hi\n");
  // ann, in no bio workspace, is no member of bio's group; ben is, of both.
  auto groups = InWorkspace(c, "ben-astro", "getent group proj-bio proj-astro | cut -d: -f1,4");
  EXPECT_EQ(groups.out, "proj-bio:ben\nproj-astro:ann,ben\n");
}

}  // namespace
}  // namespace hpc::it
