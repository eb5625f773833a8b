#include "app/data_plane_commands.h"

#include <gtest/gtest.h>

#include "fakes/fake_pod_runtime.h"
#include "operator/builders.h"

namespace hpc::app {
namespace {

runtime::PodStatus Pod(const std::string& name, const std::string& component, const std::string& workspace = "",
                       runtime::PodPhase phase = runtime::PodPhase::kRunning) {
  runtime::PodStatus p;
  p.name = name;
  p.phase = phase;
  p.labels[op::kLabelComponent] = component;
  if (!workspace.empty()) p.labels[op::kLabelWorkspace] = workspace;
  return p;
}

TEST(DataPlaneCommands, JobFilesAreLookedForOnTheWorkerThenTheUsersLoginPodsThenTheClusters) {
  std::vector<runtime::PodStatus> pods = {
      Pod("login", "login"),
      Pod("ann-astro-login", "workspace-login", "ann-astro"),
      Pod("bob-astro-login", "workspace-login", "bob-astro"),
      Pod("cpu-0", "worker"),
      Pod("cpu-1", "worker"),
      Pod("ann-old-login", "workspace-login", "ann-old", runtime::PodPhase::kPending)};
  auto user_of = [](const std::string& w) { return w.substr(0, w.find('-')); };
  EXPECT_EQ(PodsForJobFiles(pods, "cpu-1", "ann", user_of),
            (std::vector<std::string>{"cpu-1", "ann-astro-login", "login"}));
  // A job no longer on a worker, another user: never ann's login pod.
  EXPECT_EQ(PodsForJobFiles(pods, "", "bob", user_of), (std::vector<std::string>{"bob-astro-login", "login"}));
}

TEST(DataPlaneCommands, AWorkspacesCommandsRunAsItsUserInItsDatasetAndTheLabTokenStaysOffCommandsAndEnvironment) {
  api::Workspace w;
  w.metadata.name = "ann-astro";
  w.spec.cluster = "kube";
  w.spec.user = {"ann", 3001, 3001, false, ""};
  w.spec.project = "astro";
  w.spec.datasets = {"astro"};
  auto command = WorkspaceCommand(w, {"sbatch", "job.sh"});
  EXPECT_EQ(command.user, "ann");
  EXPECT_EQ(command.working_dir, command.env.at("HPCPLANE_DATASET"));
  EXPECT_FALSE(command.working_dir.empty());
  auto shell = WorkspaceShell(w);
  EXPECT_EQ(shell.user, "ann");
  EXPECT_EQ(shell.argv.at(0), "/bin/bash");
  const cp::LabLaunch launch{"/lab/", "secret-token", 18888};
  auto lab = WorkspaceLab(w, launch, "10.1.2.3");
  // The token is in neither the command nor its environment (both reach an exec request and a
  // process listing): the lab reads it from the file the writer filled from its stdin.
  for (const auto& arg : lab.argv) EXPECT_EQ(arg.find("secret-token"), std::string::npos) << arg;
  for (const auto& [key, value] : lab.env) EXPECT_EQ(value.find("secret-token"), std::string::npos) << key;
  for (const auto& arg : LabTokenWriter(launch)) EXPECT_EQ(arg.find("secret-token"), std::string::npos) << arg;
  EXPECT_NE(std::find(lab.argv.begin(), lab.argv.end(), LabTokenFile(launch)), lab.argv.end());
  EXPECT_NE(std::find(lab.argv.begin(), lab.argv.end(), "--ServerApp.ip=10.1.2.3"), lab.argv.end());
}

// Healthy when Ready; a backup controller serving in the primary's stead is a reason of its own.
TEST(DataPlaneHealth, ABackupServingInThePrimarysSteadIsAReason) {
  api::SlurmCluster c;
  c.metadata.name = "c1";
  EXPECT_FALSE(HealthOf(c).healthy);
  c.status.conditions = {{"Ready", "True", "AllComponentsReady", "", ""}};
  c.status.component_versions = {{"slurm/slurmctld", "26.05.5"}};
  c.spec.backup_controller = true;
  c.status.leading_controller = "c1-controller";
  auto h = HealthOf(c);
  EXPECT_TRUE(h.healthy);
  EXPECT_TRUE(h.reasons.empty());
  EXPECT_EQ(h.component_versions.at("slurm/slurmctld"), "26.05.5");
  c.status.conditions = {{"Ready", "False", "NotReady", "waiting for controller pod c1-controller: starting", ""}};
  c.status.leading_controller = "c1-controller-backup";
  h = HealthOf(c);
  EXPECT_FALSE(h.healthy);
  ASSERT_EQ(h.reasons.size(), 2u);
  EXPECT_EQ(h.reasons[1], "the backup controller c1-controller-backup serves: the primary c1-controller does not");
}

// The serving controller's pod runs the command (the primary's when none is known); where it
// cannot, or does not answer in time (gone with its machine), the other controller's.
TEST(DataPlaneCommands, AControllerCommandRunsInTheBackupsPodWhereThePrimarysIsGone) {
  fakes::FakePodRuntime rt;
  std::string hangs;  // the pod whose exec times out
  rt.exec_handler = [&](const std::string& pod, const runtime::ExecOptions&) {
    ProcessResult r;
    r.exit_code = 0;
    r.out = pod;
    r.timed_out = pod == hangs;
    return r;
  };
  EXPECT_EQ(InControllerPod(&rt, "c1", {"squeue"}, "c1-controller-backup").value_or(""), "c1-controller-backup");
  hangs = "c1-controller";
  EXPECT_EQ(InControllerPod(&rt, "c1", {"squeue"}).value_or(""), "c1-controller-backup");
  hangs.clear();
  auto out = InControllerPod(&rt, "c1", {"squeue"});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, "c1-controller");
  EXPECT_EQ(rt.execs.back().opts.user, "slurm");
  rt.exec_fails = {"c1-controller"};
  out = InControllerPod(&rt, "c1", {"squeue"});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, "c1-controller-backup");
  rt.exec_fails = {"c1-controller", "c1-controller-backup"};
  out = InControllerPod(&rt, "c1", {"squeue"});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("c1-controller is not running"), std::string::npos) << "the primary's error";
}

}  // namespace
}  // namespace hpc::app
