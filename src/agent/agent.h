// The data-plane agent (`hpcplane agent`): registers its data plane with the control plane,
// reports every few seconds its state and component versions, applies the workspaces the
// control plane wants here, runs API submissions, and ships job records read from slurmdbd by
// time window. The window's start only moves forward once slurmctld has nothing
// queued for slurmdbd, so records stored late (database away) are still read; records are
// upserted idempotently, so reading a window twice duplicates nothing. The window start is
// saved only after the server accepted the batch: a crash at any point loses nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "agent/agent_lab.h"
#include "agent/agent_terminal.h"
#include "agent/data_plane_access.h"
#include "common/elastic_thread_pool.h"
#include "common/result.h"
#include "messages/relay_messages.h"

namespace httplib {
class Client;
}

namespace hpc::cp {

struct AgentOptions {
  std::string server = "http://127.0.0.1:8080";
  std::string token;
  std::string ca_file;     // verifies an https:// server (default: the system's CAs)
  std::string data_plane;  // default: the cluster's name
  int interval_seconds = 5;
  int overlap_seconds = 120;  // re-read this much before the window start
  int64_t first_window_seconds = 7 * 86400;
  int batch_size = 500;
  // Where the job window's start is kept between runs (0600); the wiring layer chooses it.
  std::string cursor_file;
};

// In squeue/sacct lines "id|submit|user|comment": the job that carries submission `id`'s
// comment and belongs to `user` — anyone can put that comment on a job of their own.
std::optional<std::pair<int64_t, int64_t>> MatchSubmittedJob(const std::string& listing, const std::string& id,
                                                             const std::string& user);

class Agent {
 public:
  // `data_plane` is how the agent reaches its data plane (data_plane_access.h); it outlives the agent.
  Agent(DataPlaneAccess* data_plane, AgentOptions opts);
  // One report and one job sync. Errors are returned (and retried next round by Run).
  Status Report();
  // The cluster's nodes, partitions, queue and nodesets as they are now (live_cluster.h).
  Status ReportLiveCluster();
  Status SyncJobs();
  // Creates and stops the workspaces the control plane wants on this data plane and reports
  // each one's phase (see workspace_apply.cc).
  Status ApplyWorkspaces();
  // Runs the control plane's pending API submissions with sbatch in their workspace's login
  // pod, as the workspace's user; each job carries --comment=hpcplane-submission:<id>, so a
  // submission interrupted by a crash is found rather than submitted twice.
  Status RunSubmissions();
  // Runs the control plane's pending cancellations: scancel of the job, only while the job of
  // that id in the queue is still the same one (its user and submit time); a job that already
  // left the queue needs nothing.
  Status RunCancellations();
  // One long poll (at most `wait`) for the requests the control plane relays to this data plane
  // (messages/relay_messages.h: e.g. a job's output for the console); each is run on a worker thread, which posts
  // its answer.
  Status ServeRelay(std::chrono::seconds wait);
  // The answer to one relayed request; an unknown kind is answered as an error, not dropped.
  nlohmann::json HandleRelayed(const nlohmann::json& request);
  // Loops until `stop` is set; relayed requests are served on a thread of their own, so they
  // are answered at once rather than at the next round.
  void Run(const std::atomic<bool>& stop);

 private:
  Status Post(const std::string& path, const std::string& body);
  Result<std::string> Get(const std::string& path);
  // The job a submission already created as `user`, if any: (job id, submit time).
  Result<std::optional<std::pair<int64_t, int64_t>>> FindSubmitted(const std::string& id, const std::string& user,
                                                                   int64_t since);

  DataPlaneAccess* dp_;
  AgentOptions opts_;
  bool healthy_ = false;            // as the last Report found the cluster
  std::string serving_controller_;  // the controller pod that serves, as the last Report found it
  // Slurm's node list as JSON: `scontrol show nodes --json`, or where scontrol has no --json
  // (22.05) `sinfo --json`, remembered once found.
  Result<std::string> NodesJson();
  bool nodes_from_sinfo_ = false;

  void RelayLoop(const std::atomic<bool>& stop);
  std::mutex relay_mu_;
  httplib::Client* relay_client_ = nullptr;  // the long poll in flight, stopped on shutdown
  bool relay_stopping_ = false;
  AgentTerminals terminals_;  // shells of terminals in the browser
  AgentLabs labs_;            // JupyterLab in workspaces
  // What serves each kind of relayed request (messages/relay_messages.h).
  std::map<RelayKind, std::function<nlohmann::json(const nlohmann::json&)>> RelayHandlers();
  const std::map<RelayKind, std::function<nlohmann::json(const nlohmann::json&)>> relay_handlers_ = RelayHandlers();
  // Relayed requests run here, each on its own thread (up to kRelayWorkers at once).
  static constexpr size_t kRelayWorkers = 32;
  std::unique_ptr<ElasticThreadPool> relay_workers_ = std::make_unique<ElasticThreadPool>(kRelayWorkers);
};

}  // namespace hpc::cp
