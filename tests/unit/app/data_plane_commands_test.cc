#include "app/data_plane_commands.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace hpc::app
