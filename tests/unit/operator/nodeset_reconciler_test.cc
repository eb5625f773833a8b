// The nodeset reconciler against fakes: health reports turned into drains with the cap, and a
// restarted worker whose jobs Slurm still counts being reset.
#include "operator/nodeset_reconciler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>

#include <fmt/format.h>

#include "fakes/fake_pod_runtime.h"
#include "fakes/fake_slurm.h"
#include "operator/conditions.h"

namespace hpc::op {
namespace {

bool IsTrue(const std::vector<api::Condition>& conds, const std::string& type) {
  const auto* c = FindCondition(conds, type);
  return c && c->status == "True";
}

bool HasEvent(const api::NodeSetStatus& st, const std::string& reason, const std::string& words) {
  return std::any_of(st.events.begin(), st.events.end(), [&](const api::Event& e) {
    return e.reason == reason && e.message.find(words) != std::string::npos;
  });
}

class NodeSetReconcilerTest : public ::testing::Test {
 protected:
  NodeSetReconcilerTest() {
    cluster_.metadata.name = "c1";
    ns_.metadata.name = "cpu";
    ns_.spec.max_replicas = 5;
  }
  // Pins the nodeset at `n` workers and makes Slurm list each as a registered idle node.
  void Workers(int n) {
    ns_.spec.replicas = n;
    Pass();
    ListIdle(n);
    Pass();
    slurm_.calls.clear();
  }
  // Slurm lists workers 0..n-1 as registered idle nodes.
  void ListIdle(int n) {
    slurm_.nodes.clear();
    for (int i = 0; i < n; ++i) {
      slurm::SlurmNode node;
      node.name = "cpu-" + std::to_string(i);
      node.state = "idle";
      node.cpus = 1;
      node.features = {"cpu"};
      node.last_busy = std::time(nullptr);
      slurm_.nodes.push_back(node);
    }
  }
  slurm::SlurmNode& Node(int i) { return slurm_.nodes[i]; }
  // slurmctld drained worker i itself for a launch failure, `ago` seconds back.
  void DrainedBySlurm(int i, int64_t ago) {
    Node(i).flags.insert("DRAIN");
    Node(i).reason = "Duplicate jobid";
    Node(i).reason_set_by = "slurm";
    Node(i).reason_changed_at = std::time(nullptr) - ago;
  }
  api::NodeSetStatus Pass() {
    ns_.status = rec_.Reconcile(cluster_, ns_, &slurm_, nullptr);
    return ns_.status;
  }
  static std::string Report(bool ok, int64_t ago = 1) {
    return fmt::format("hpcplane-health:{}:{}", std::time(nullptr) - ago, ok ? "ok" : "fail:tmp: /tmp is full");
  }

  fakes::FakePodRuntime rt_;
  fakes::FakeSlurm slurm_;
  NodeSetReconciler rec_{&rt_, BuildInputs{}, &slurm_};
  api::SlurmCluster cluster_;
  api::NodeSet ns_;
};

TEST_F(NodeSetReconcilerTest, AFailingReportDrainsAndTheCapMakesTheCheckSuspect) {
  Workers(5);
  Node(1).extra = Report(false);
  auto st = Pass();
  EXPECT_TRUE(slurm_.Called("drain cpu-1"));
  EXPECT_EQ(st.health_drains, 1);
  EXPECT_FALSE(IsTrue(st.conditions, "WorkersHealthy"));
  EXPECT_FALSE(IsTrue(st.conditions, "HealthChecksSuspect"));
  // Slurm now shows it drained by the check; the nodeset adds a worker in its place.
  Node(1).flags.insert("DRAIN");
  Node(1).reason = "hpcplane:health:tmp: /tmp is full";
  Node(1).reason_changed_at = std::time(nullptr) - 1;
  st = Pass();
  EXPECT_EQ(st.unhealthy, 1);
  EXPECT_FALSE(IsTrue(st.conditions, "WorkersHealthy"));
  EXPECT_EQ(rt_.pods.count("cpu-5"), 1u);
  // Every worker fails: with maxUnhealthy 20% of 6 (2), one more is drained, the rest stay.
  slurm_.calls.clear();
  for (int i = 0; i < 5; ++i) {
    if (i != 1) Node(i).extra = Report(false);
  }
  st = Pass();
  int drains = 0;
  for (const auto& c : slurm_.calls) drains += c.rfind("drain ", 0) == 0;
  EXPECT_EQ(drains, 1);
  EXPECT_TRUE(IsTrue(st.conditions, "HealthChecksSuspect"));
  EXPECT_TRUE(std::any_of(st.events.begin(), st.events.end(),
                          [](const api::Event& e) { return e.reason == "HealthCheckSuspect" && e.type == "Warning"; }));
}

// slurmctld drained a worker itself (it could not launch a job there): the worker is unhealthy,
// its capacity comes back at once on a new worker, and once it has been drained replaceAfter
// and runs nothing it is removed. The same reason typed by an admin is the admin's.
TEST_F(NodeSetReconcilerTest, AWorkerSlurmDrainedForAFaultIsReplaced) {
  cluster_.spec.health_checks.replace_after_seconds = 60;
  Workers(2);
  DrainedBySlurm(0, 10);
  auto st = Pass();
  EXPECT_EQ(st.unhealthy, 1);
  EXPECT_FALSE(IsTrue(st.conditions, "WorkersHealthy"));
  EXPECT_EQ(rt_.pods.count("cpu-2"), 1u);  // the capacity, on a new worker
  EXPECT_FALSE(slurm_.Called("resume cpu-0"));
  EXPECT_EQ(rt_.pods.count("cpu-0"), 1u);  // not yet replaceAfter
  Node(0).reason_changed_at = std::time(nullptr) - 61;
  st = Pass();
  EXPECT_EQ(rt_.pods.count("cpu-0"), 0u);
  EXPECT_TRUE(slurm_.Called("delete-node cpu-0"));
  EXPECT_EQ(st.replacements, 1);
  EXPECT_EQ(st.events.back().reason, "Replaced");
  EXPECT_NE(st.events.back().message.find("by Slurm (Duplicate jobid)"), std::string::npos);

  // An admin's drain with the same words: left alone, however long.
  slurm_.calls.clear();
  Node(1).flags.insert("DRAIN");
  Node(1).reason = "Duplicate jobid";
  Node(1).reason_set_by = "root";
  Node(1).reason_changed_at = std::time(nullptr) - 3600;
  st = Pass();
  EXPECT_EQ(rt_.pods.count("cpu-1"), 1u);
  EXPECT_FALSE(slurm_.Called("delete-node cpu-1"));
  EXPECT_FALSE(slurm_.Called("resume cpu-1"));
}

// A drain first seen already past replaceAfter: the worker is replaced in that same pass, and
// its capacity comes back under a new name, never the name of the node just removed (whose pod
// may still be on its way out).
TEST_F(NodeSetReconcilerTest, AWorkerReplacedOnFirstSightDoesNotLendItsName) {
  cluster_.spec.health_checks.replace_after_seconds = 3;
  Workers(2);
  DrainedBySlurm(0, 10);
  auto st = Pass();
  EXPECT_EQ(st.replacements, 1);
  EXPECT_EQ(rt_.pods.count("cpu-0"), 0u);
  EXPECT_EQ(rt_.pods.count("cpu-2"), 1u);
  slurm_.nodes.erase(slurm_.nodes.begin());  // Slurm forgot cpu-0
  Pass();
  EXPECT_EQ(rt_.pods.count("cpu-0"), 0u);  // two workers already: nothing more to create
  EXPECT_EQ(rt_.pods.size(), 2u);
}

// slurmctld restarted from state older than a worker's registration: the worker runs, Slurm
// has no node for it. Past the grace its pod is deleted and started again; never while Slurm
// cannot be read (fail closed), and not before the grace.
TEST_F(NodeSetReconcilerTest, AWorkerSlurmLostIsStartedAgain) {
  Workers(2);
  slurm_.nodes.pop_back();  // cpu-1 is gone from Slurm
  rec_.set_unregistered_grace(3600);
  Pass();
  EXPECT_EQ(rt_.deleted.size(), 0u);
  rec_.set_unregistered_grace(0);
  slurm_.reachable = false;
  Pass();
  EXPECT_EQ(rt_.deleted.size(), 0u);
  slurm_.reachable = true;
  auto st = Pass();
  EXPECT_EQ(rt_.deleted, (std::vector<std::string>{"cpu-1"}));
  EXPECT_EQ(rt_.pods.count("cpu-1"), 1u);  // pinned at two: started again at once
  EXPECT_TRUE(std::any_of(st.events.begin(), st.events.end(),
                          [](const api::Event& e) { return e.reason == "WorkerUnregistered"; }));
  EXPECT_EQ(rt_.pods.count("cpu-0"), 1u);
}

// A worker whose machine is gone: only when Slurm set it DOWN for not responding and its pod is
// not ready is it replaced, under a new name at once; its pod, which the machine never confirms
// gone, is forgotten past its grace period, and Slurm's record of it goes once the pod has.
TEST_F(NodeSetReconcilerTest, AWorkerOnALostMachineIsReplacedAndItsPodForgotten) {
  Workers(2);
  rt_.unreachable.insert("cpu-1");
  // Cut off from the API server only (not ready), slurmd still answering Slurm: left alone.
  rt_.not_ready.insert("cpu-1");
  Pass();
  EXPECT_TRUE(rt_.deleted.empty());
  // Slurm not responding but the pod still ready (the kubelet has not noticed yet): left alone.
  rt_.not_ready.clear();
  Node(1).state = "down";
  Node(1).flags.insert("NOT_RESPONDING");
  Node(1).reason = "Not responding";
  Pass();
  EXPECT_TRUE(rt_.deleted.empty());
  // Both agree, but Slurm cannot be read this pass: nothing.
  rt_.not_ready.insert("cpu-1");
  slurm_.reachable = false;
  Pass();
  EXPECT_TRUE(rt_.deleted.empty());
  slurm_.reachable = true;

  auto st = Pass();
  EXPECT_EQ(rt_.deleted, (std::vector<std::string>{"cpu-1"}));
  EXPECT_EQ(rt_.pods.count("cpu-1"), 1u);  // its machine has not confirmed
  EXPECT_EQ(rt_.pods.count("cpu-2"), 1u);  // the capacity, at once, under a new name
  EXPECT_TRUE(rt_.forgotten.empty());
  EXPECT_TRUE(HasEvent(st, "WorkerLost", "worker cpu-1 is lost: Slurm set it DOWN (Not responding)"));

  Pass();  // within the grace period: waited for, and not deleted again
  EXPECT_EQ(rt_.deleted.size(), 1u);
  EXPECT_TRUE(rt_.forgotten.empty());
  EXPECT_EQ(rt_.pods.size(), 3u);  // no third worker while the lost one is on its way out

  rt_.delete_by["cpu-1"] = std::time(nullptr) - kLostPodForgetAfterSeconds;
  st = Pass();
  EXPECT_EQ(rt_.forgotten, (std::vector<std::string>{"cpu-1"}));
  EXPECT_TRUE(HasEvent(st, "WorkerLost", "the pod is forgotten"));
  EXPECT_FALSE(slurm_.Called("delete-node cpu-1"));  // the pod was still there this pass
  Pass();
  EXPECT_TRUE(slurm_.Called("delete-node cpu-1"));
  EXPECT_EQ(rt_.pods.count("cpu-0"), 1u);
  EXPECT_EQ(rt_.pods.count("cpu-2"), 1u);
  EXPECT_EQ(rt_.pods.size(), 2u);
}

// After slurmctld restarts, each ready worker's slurmd is sent SIGHUP once, past the delay, so it
// registers again and slurmctld ends jobs its old state shows running there.
TEST_F(NodeSetReconcilerTest, WorkersRegisterAgainOnceAfterTheControllerRestarts) {
  Workers(2);
  auto hups = [&] {
    int n = 0;
    for (const auto& e : rt_.execs)
      n += e.opts.argv == std::vector<std::string>{"pkill", "-HUP", "-x", "slurmd(-wlm)?"};
    return n;
  };
  const int64_t now = std::time(nullptr);
  rec_.set_controller_started_at(now - 5);  // too soon: BatchStartTimeout has not passed
  Pass();
  EXPECT_EQ(hups(), 0);
  rec_.set_controller_started_at(now - kRegisterAgainAfterSeconds - 1);
  auto st = Pass();
  EXPECT_EQ(hups(), 2);
  EXPECT_EQ(st.events.back().reason, "RegisteredAgain");
  Pass();
  EXPECT_EQ(hups(), 2);  // once per controller start
  // A controller start long past (the daemon came up later) needs nothing.
  rec_.set_controller_started_at(now - 3600);
  Pass();
  EXPECT_EQ(hups(), 2);
}

// A worker whose slurmd started after this slurmctld registered with it: it is not signalled
// (a SIGHUP makes slurmd pause launches while it reconfigures; a busy worker lost seconds to it).
TEST_F(NodeSetReconcilerTest, WorkersStartedAfterTheControllerAreNotAskedToRegisterAgain) {
  Workers(2);
  const int64_t now = std::time(nullptr);
  const int64_t controller_start = now - kRegisterAgainAfterSeconds - 1;
  rt_.started_at["cpu-0"] = controller_start - 100;  // from before the restart
  rt_.started_at["cpu-1"] = controller_start + 1;    // started by this controller's cluster
  rec_.set_controller_started_at(controller_start);
  Pass();
  std::vector<std::string> signalled;
  for (const auto& e : rt_.execs) {
    if (e.opts.argv == std::vector<std::string>{"pkill", "-HUP", "-x", "slurmd(-wlm)?"}) signalled.push_back(e.pod);
  }
  EXPECT_EQ(signalled, (std::vector<std::string>{"cpu-0"}));
}

// After a restart slurmctld recovers the workers' nodes before their pods are back. The pass
// that starts the pods again must not delete those nodes: a worker registering meanwhile would
// be left without one.
TEST_F(NodeSetReconcilerTest, NodesOfWorkersStartedInThisPassAreKept) {
  ns_.spec.replicas = 2;
  for (int i = 0; i < 3; ++i) {  // cpu-2: a node left over from a larger nodeset
    slurm::SlurmNode node;
    node.name = "cpu-" + std::to_string(i);
    node.state = "idle";
    node.cpus = 1;
    node.features = {"cpu"};
    slurm_.nodes.push_back(node);
  }
  Pass();
  EXPECT_EQ(rt_.pods.count("cpu-0"), 1u);
  EXPECT_EQ(rt_.pods.count("cpu-1"), 1u);
  EXPECT_FALSE(slurm_.Called("delete-node cpu-0"));
  EXPECT_FALSE(slurm_.Called("delete-node cpu-1"));
  EXPECT_TRUE(slurm_.Called("delete-node cpu-2"));
}

TEST_F(NodeSetReconcilerTest, ARestartedWorkerThatSlurmCountsBusyIsReset) {
  Workers(2);
  Node(0).state = "allocated";
  Node(0).alloc_cpus = 1;
  Pass();
  EXPECT_TRUE(slurm_.calls.empty());  // busy, not restarted: nothing to do
  rt_.restarts["cpu-0"] = 1;
  auto st = Pass();
  EXPECT_TRUE(slurm_.Called("reset cpu-0 (hpcplane: worker pod restarted; its jobs ended with it)"));
  EXPECT_EQ(st.events.back().reason, "WorkerRestarted");
  // Once only: the next pass sees the same restart count.
  slurm_.calls.clear();
  Pass();
  EXPECT_FALSE(slurm_.Called("reset cpu-0 (hpcplane: worker pod restarted; its jobs ended with it)"));
  // A restarted idle worker needs nothing; an admin's drained one is left to the admin.
  rt_.restarts["cpu-1"] = 1;
  Pass();
  EXPECT_TRUE(slurm_.calls.empty());
  Node(0).flags.insert("DRAIN");
  Node(0).reason = "bad DIMM";
  rt_.restarts["cpu-0"] = 2;
  Pass();
  EXPECT_TRUE(slurm_.calls.empty());
}

}  // namespace
}  // namespace hpc::op

namespace hpc::op {
namespace {

// Slurm's view after hpcplane drained a worker for a scale-down.
void DrainedByUs(slurm::SlurmNode& n) {
  n.flags.insert("DRAIN");
  n.reason = std::string(slurm::kDrainReasonPrefix) + " scale-down of nodeset cpu";
}

slurm::SlurmJob PendingJob(int64_t id) {
  slurm::SlurmJob j;
  j.job_id = id;
  j.state = "PENDING";
  j.reason = "Resources";
  j.partition = "cpu";
  return j;
}

// The autoscaling sequence: from zero, workers appear for pending jobs; idle past the timeout
// they are drained first, and removed (pod, then node) only once Slurm shows them drained.
TEST_F(NodeSetReconcilerTest, AutoscalesFromZeroAndBackDrainingBeforeRemoving) {
  ns_.spec.min_replicas = 0;
  ns_.spec.max_replicas = 4;
  ns_.spec.idle_timeout_seconds = 60;
  std::vector<slurm::SlurmJob> jobs = {PendingJob(1), PendingJob(2)};
  PendingByPartition pending = GroupPending(jobs);
  auto pass = [&](const PendingByPartition& p) { return ns_.status = rec_.Reconcile(cluster_, ns_, &slurm_, &p); };

  auto st = pass(PendingByPartition{});
  EXPECT_TRUE(rt_.pods.empty()) << "nothing runs for nothing";
  st = pass(pending);
  EXPECT_EQ(st.desired, 2);
  EXPECT_EQ(rt_.created, (std::vector<std::string>{"cpu-0", "cpu-1"}));
  EXPECT_NE(st.last_decision.find("scale up 0→2"), std::string::npos) << st.last_decision;

  // Registered, the jobs ran and left; idle for less than the timeout: kept.
  for (int i = 0; i < 2; ++i) {
    slurm::SlurmNode n;
    n.name = "cpu-" + std::to_string(i);
    n.state = "idle";
    n.cpus = 1;
    n.features = {"cpu"};
    n.last_busy = std::time(nullptr) - 10;
    slurm_.nodes.push_back(n);
  }
  st = pass(PendingByPartition{});
  EXPECT_TRUE(slurm_.calls.empty()) << testing::PrintToString(slurm_.calls);
  EXPECT_EQ(st.replicas, 2);
  // Idle past the timeout: drained, not deleted.
  for (auto& n : slurm_.nodes) n.last_busy = std::time(nullptr) - 120;
  st = pass(PendingByPartition{});
  EXPECT_TRUE(slurm_.Called("drain cpu-0") && slurm_.Called("drain cpu-1")) << testing::PrintToString(slurm_.calls);
  EXPECT_TRUE(rt_.deleted.empty());
  // Slurm shows them drained and idle: the pods go, then the nodes.
  for (auto& n : slurm_.nodes) DrainedByUs(n);
  st = pass(PendingByPartition{});
  EXPECT_EQ(rt_.deleted, (std::vector<std::string>{"cpu-0", "cpu-1"}));
  EXPECT_TRUE(slurm_.Called("delete-node cpu-0") && slurm_.Called("delete-node cpu-1"));
  EXPECT_EQ(st.replicas, 0);
}

// A job listing reused from before this pass's node list can show a job as pending that already
// runs on a worker counted busy: it holds the worker count and asks for a fresh listing; the
// same jobs listed afresh add the worker they need.
TEST_F(NodeSetReconcilerTest, AListingOlderThanTheNodesNeverAddsWorkers) {
  ns_.spec.min_replicas = 0;
  ns_.spec.max_replicas = 4;
  ns_.spec.idle_timeout_seconds = 60;
  auto pass = [&](const PendingByPartition& p) { return ns_.status = rec_.Reconcile(cluster_, ns_, &slurm_, &p); };
  std::vector<slurm::SlurmJob> first = {PendingJob(1)};
  auto st = pass(GroupPending(first));
  ASSERT_EQ(rt_.created, (std::vector<std::string>{"cpu-0"}));
  // cpu-0 registered and runs job 1; a reused listing still has job 1 pending, with job 2.
  slurm::SlurmNode n;
  n.name = "cpu-0";
  n.state = "mixed";
  n.cpus = 2;
  n.alloc_cpus = 1;
  n.features = {"cpu"};
  slurm_.nodes.push_back(n);
  std::vector<slurm::SlurmJob> stale = {PendingJob(1), PendingJob(2)};
  rec_.set_pending_predates_nodes(true);
  st = pass(GroupPending(stale));
  EXPECT_EQ(st.desired, 1);
  EXPECT_EQ(rt_.created.size(), 1u) << testing::PrintToString(rt_.created);
  EXPECT_TRUE(rec_.held_for_fresh_listing());
  // Listed afresh, job 2 alone is pending (Slurm had no room for it): one more worker.
  rec_.set_pending_predates_nodes(false);
  std::vector<slurm::SlurmJob> fresh = {PendingJob(2)};
  st = pass(GroupPending(fresh));
  EXPECT_FALSE(rec_.held_for_fresh_listing());
  EXPECT_EQ(st.desired, 2);
  EXPECT_EQ(rt_.created, (std::vector<std::string>{"cpu-0", "cpu-1"}));
}

// Holding for a fresh listing never takes back what an earlier pass asked for: two workers
// wanted, one still starting, and a reused listing keeps the nodeset at two (not down to the one
// there, and up again at the next pass).
TEST_F(NodeSetReconcilerTest, AHeldPassKeepsWhatAnEarlierPassAskedFor) {
  ns_.spec.min_replicas = 0;
  ns_.spec.max_replicas = 4;
  auto pass = [&](const PendingByPartition& p) { return ns_.status = rec_.Reconcile(cluster_, ns_, &slurm_, &p); };
  auto whole_worker = [](int64_t id) {
    slurm::SlurmJob j = PendingJob(id);
    j.exclusive = true;
    return j;
  };
  std::vector<slurm::SlurmJob> two = {whole_worker(1), whole_worker(2)};
  auto st = pass(GroupPending(two));
  ASSERT_EQ(st.desired, 2);
  ASSERT_EQ(rt_.created.size(), 2u);
  rt_.pods.erase(rt_.created.back());  // the second worker's pod is not there yet
  std::vector<slurm::SlurmJob> three = {whole_worker(1), whole_worker(2), whole_worker(3)};
  rec_.set_pending_predates_nodes(true);
  st = pass(GroupPending(three));
  EXPECT_EQ(st.desired, 2) << st.last_decision;
  EXPECT_TRUE(rec_.held_for_fresh_listing());
}

// Fail closed: while Slurm cannot be read, a pinned-down nodeset neither drains nor deletes,
// and says why; once Slurm answers, the scale-down goes ahead.
TEST_F(NodeSetReconcilerTest, NothingIsDrainedOrDeletedWhileSlurmIsNotVisible) {
  Workers(3);
  ns_.spec.replicas = 1;
  slurm_.reachable = false;
  auto st = Pass();
  EXPECT_TRUE(slurm_.calls.empty()) << testing::PrintToString(slurm_.calls);
  EXPECT_TRUE(rt_.deleted.empty());
  EXPECT_FALSE(IsTrue(st.conditions, "SlurmVisible"));
  EXPECT_NE(FindCondition(st.conditions, "SlurmVisible")->message.find("no worker is drained or deleted"),
            std::string::npos);
  // An autoscaled nodeset without Slurm's view holds its count: no scale-up from guesses.
  ns_.spec.replicas.reset();
  PendingByPartition none;
  st = ns_.status = rec_.Reconcile(cluster_, ns_, &slurm_, &none);
  EXPECT_EQ(st.desired, 3);
  EXPECT_EQ(rt_.pods.size(), 3u);
  ns_.spec.replicas = 1;
  slurm_.reachable = true;
  Pass();
  EXPECT_TRUE(slurm_.Called("drain cpu-2") && slurm_.Called("drain cpu-1")) << testing::PrintToString(slurm_.calls);
}

// An admin's drain is theirs: the worker is neither resumed nor drained again nor removed, even
// when the nodeset shrinks; another worker goes instead.
TEST_F(NodeSetReconcilerTest, AnAdminsDrainIsNeverResumedOrRemoved) {
  Workers(2);
  Node(1).flags.insert("DRAIN");
  Node(1).reason = "bad DIMM";
  Node(1).reason_set_by = "root";
  Pass();
  EXPECT_TRUE(slurm_.calls.empty()) << testing::PrintToString(slurm_.calls);
  ns_.spec.replicas = 1;
  Pass();
  EXPECT_FALSE(slurm_.Called("resume cpu-1"));
  EXPECT_FALSE(slurm_.Called("drain cpu-1"));
  EXPECT_TRUE(slurm_.Called("drain cpu-0"));
  DrainedByUs(Node(0));
  Pass();
  EXPECT_EQ(rt_.deleted, (std::vector<std::string>{"cpu-0"}));
  EXPECT_EQ(rt_.pods.count("cpu-1"), 1u);
  EXPECT_FALSE(slurm_.Called("delete-node cpu-1"));
}

// A worker pod that disappears (its process tree died and the runtime dropped it, or someone
// deleted it) is created again under its name on the next pass.
TEST_F(NodeSetReconcilerTest, AWorkerPodThatVanishedIsCreatedAgain) {
  Workers(2);
  rt_.pods.erase("cpu-1");
  auto st = Pass();
  EXPECT_EQ(rt_.pods.count("cpu-1"), 1u);
  EXPECT_EQ(rt_.created.back(), "cpu-1");
  EXPECT_EQ(st.replicas, 2);
}

// A daemon restarted mid-scale-down (a new reconciler, nothing in memory) finishes it from what
// Slurm and the runtime show: the drained worker is removed, the busy one kept, nothing created
// twice.
TEST_F(NodeSetReconcilerTest, AReconcilerStartedAfterACrashFinishesTheScaleDown) {
  Workers(3);
  ns_.spec.replicas = 1;
  Node(0).state = "allocated";
  Node(0).alloc_cpus = 1;
  DrainedByUs(Node(2));
  NodeSetReconciler fresh{&rt_, BuildInputs{}, &slurm_};
  const size_t created = rt_.created.size();
  ns_.status = fresh.Reconcile(cluster_, ns_, &slurm_, nullptr);
  EXPECT_EQ(rt_.deleted, (std::vector<std::string>{"cpu-2"}));
  EXPECT_TRUE(slurm_.Called("drain cpu-1")) << testing::PrintToString(slurm_.calls);
  EXPECT_FALSE(slurm_.Called("drain cpu-0")) << "the busy worker stays";
  EXPECT_EQ(rt_.created.size(), created);
}

// Seen on the real cluster: `kubectl scale nodeset cpu --replicas=1` from two drained and
// removed cpu-1, whose pod then stayed listed for its grace period (a Kubernetes pod being
// deleted); counted as a replica, the next pass drained cpu-0 as well. A worker being deleted
// is no capacity and keeps its name until it is gone.
TEST_F(NodeSetReconcilerTest, AWorkerStillTerminatingIsNotCountedSoScalingDownByOneRemovesOne) {
  Workers(2);
  rt_.unreachable.insert("cpu-1");  // DeletePod leaves it listed, being deleted, as a grace period does
  ns_.spec.replicas = 1;
  for (int i = 0; i < 4; ++i) {
    Pass();
    // Slurm as it follows: cpu-1 drained, then its node deleted.
    for (auto& n : slurm_.nodes) {
      if (n.name == "cpu-1" && slurm_.Called("drain cpu-1")) DrainedByUs(n);
    }
    if (slurm_.Called("delete-node cpu-1")) {
      std::erase_if(slurm_.nodes, [](const slurm::SlurmNode& n) { return n.name == "cpu-1"; });
    }
  }
  EXPECT_EQ(rt_.deleted, (std::vector<std::string>{"cpu-1"}));
  EXPECT_FALSE(slurm_.Called("drain cpu-0")) << testing::PrintToString(slurm_.calls);
  EXPECT_EQ(rt_.pods.count("cpu-0"), 1u);
  EXPECT_EQ(rt_.delete_by.count("cpu-1"), 1u);
  // Scaled up again while it terminates: a new name, not the one still in use.
  ns_.spec.replicas = 2;
  Pass();
  EXPECT_EQ(rt_.created.back(), "cpu-2");
}

// The cluster was down and up: Slurm's saved state counts cpu-0 busy with a job of its earlier
// pod. Before the new pod starts, the node is reset so Slurm ends (and requeues) that job; one an
// admin drained is left to the admin.
TEST_F(NodeSetReconcilerTest, AWorkerStartedAgainUnderABusyNodesNameHasItsEarlierPodsJobsEnded) {
  ns_.spec.replicas = 2;
  slurm::SlurmNode busy;
  busy.name = "cpu-0";
  busy.state = "allocated";
  busy.alloc_cpus = 1;
  busy.features = {"cpu"};
  slurm::SlurmNode drained = busy;
  drained.name = "cpu-1";
  drained.flags = {"DRAIN"};
  drained.reason = "bad fan";
  slurm_.nodes = {busy, drained};
  auto st = Pass();
  EXPECT_TRUE(rt_.pods.count("cpu-0"));
  ASSERT_FALSE(slurm_.calls.empty());
  EXPECT_EQ(slurm_.calls.front().rfind("reset cpu-0 (hpcplane: worker starts again", 0), 0u) << slurm_.calls.front();
  EXPECT_FALSE(slurm_.Called("reset cpu-1 (hpcplane: worker starts again; its jobs ended with its earlier pod)"));
  EXPECT_TRUE(HasEvent(st, "JobsOfEarlierPod", "cpu-0"));
  EXPECT_TRUE(HasEvent(st, "JobsOfEarlierPod", "admin's drain is left"));
  // A pod that exists is no earlier pod's: nothing is reset again.
  slurm_.calls.clear();
  Pass();
  EXPECT_TRUE(std::none_of(slurm_.calls.begin(), slurm_.calls.end(),
                           [](const std::string& call) { return call.rfind("reset", 0) == 0; }));
}

// A rolling upgrade: the cluster's environment moved from slurm-24.11 to slurm-26.05; both
// images are known to the reconciler, the workers run the old one.
class RollingUpgradeTest : public NodeSetReconcilerTest {
 protected:
  static BuildInputs TwoReleases() {
    BuildInputs in;
    in.images = {{"slurm-24.11", "slurm-24.11@sha256:old"}, {"slurm-26.05", "slurm-26.05@sha256:new"}};
    in.environment_releases = {{"slurm-24.11", {24, 11, 5}}, {"slurm-26.05", {26, 5, 5}}};
    in.release = {26, 5, 5};
    return in;
  }
  RollingUpgradeTest() {
    cluster_.spec.environment = "slurm-24.11";
    ns_.spec.replicas = 2;
    UpgradePass();
    ListIdle(2);
    UpgradePass();
    slurm_.calls.clear();
    EXPECT_EQ(rt_.pods.at("cpu-0").image, "slurm-24.11@sha256:old");
    cluster_.spec.environment = "slurm-26.05";
  }
  // Slurm shows worker i drained as hpcplane drained it for the upgrade, `ago` seconds back.
  void DrainedForUpgrade(int i, int64_t ago = 1) {
    Node(i).flags.insert("DRAIN");
    Node(i).reason = "hpcplane: upgrade: runs slurm-24.11, the nodeset runs slurm-26.05";
    Node(i).reason_changed_at = std::time(nullptr) - ago;
  }
  void Busy(int i) {
    Node(i).state = "allocated";
    Node(i).alloc_cpus = 1;
  }
  std::vector<std::string> PodsOn(const std::string& image) const {
    std::vector<std::string> out;
    for (const auto& [name, spec] : rt_.pods) {
      if (spec.image == image) out.push_back(name);
    }
    return out;
  }
  NodeSetReconciler upgrading_{&rt_, TwoReleases(), &slurm_};
  api::NodeSetStatus UpgradePass() {
    ns_.status = upgrading_.Reconcile(cluster_, ns_, &slurm_, nullptr);
    return ns_.status;
  }
};

TEST_F(RollingUpgradeTest, OldWorkersAreDrainedWhileNewOnesStartBesideThemAndGoOnceTheirJobsEnd) {
  Busy(0);
  auto st = UpgradePass();
  EXPECT_TRUE(slurm_.Called("drain cpu-0"));
  EXPECT_TRUE(slurm_.Called("drain cpu-1"));
  // Two new workers on the new release beside the old ones: the pinned count is of new workers.
  EXPECT_EQ(PodsOn("slurm-26.05@sha256:new"), (std::vector<std::string>{"cpu-2", "cpu-3"}));
  EXPECT_EQ(st.outdated, 2);
  EXPECT_TRUE(IsTrue(st.conditions, "Upgrading"));
  EXPECT_TRUE(rt_.pods.count("cpu-1")) << "removed only once Slurm shows it drained: a job may have just started";
  // Slurm shows both drained: the idle one goes, the busy one runs its job on.
  DrainedForUpgrade(0);
  DrainedForUpgrade(1);
  slurm_.calls.clear();
  st = UpgradePass();
  EXPECT_FALSE(slurm_.Called("resume cpu-0"));
  EXPECT_FALSE(rt_.pods.count("cpu-1"));
  EXPECT_TRUE(slurm_.Called("delete-node cpu-1"));
  EXPECT_TRUE(rt_.pods.count("cpu-0"));
  EXPECT_FALSE(slurm_.Called("requeue-jobs cpu-0"));  // the default: wait for its job
  EXPECT_EQ(st.outdated, 1);
  // Its job ends: it goes too, and only the new release runs.
  Node(0).state = "idle";
  Node(0).alloc_cpus = 0;
  st = UpgradePass();
  EXPECT_FALSE(rt_.pods.count("cpu-0"));
  EXPECT_TRUE(PodsOn("slurm-24.11@sha256:old").empty());
  EXPECT_EQ(st.outdated, 0);
  EXPECT_FALSE(IsTrue(st.conditions, "Upgrading"));
}

TEST_F(RollingUpgradeTest, NothingMovesUntilSlurmctldRunsTheNewRelease) {
  upgrading_.set_controller_current(false);
  auto st = UpgradePass();
  EXPECT_FALSE(slurm_.Called("drain cpu-0"));
  EXPECT_TRUE(PodsOn("slurm-26.05@sha256:new").empty());
  EXPECT_EQ(st.outdated, 2);
  const auto* upgrading = FindCondition(st.conditions, "Upgrading");
  ASSERT_NE(upgrading, nullptr);
  EXPECT_NE(upgrading->message.find("once slurmctld runs the new release"), std::string::npos) << upgrading->message;
  upgrading_.set_controller_current(true);
  UpgradePass();
  EXPECT_TRUE(slurm_.Called("drain cpu-0"));
  EXPECT_EQ(PodsOn("slurm-26.05@sha256:new").size(), 2u);
}

TEST_F(RollingUpgradeTest, AnAdminsDrainKeepsItsOutdatedWorker) {
  Node(1).flags.insert("DRAIN");
  Node(1).reason = "bad fan";
  Node(1).reason_set_by = "root";
  UpgradePass();
  EXPECT_FALSE(slurm_.Called("drain cpu-1"));
  EXPECT_TRUE(rt_.pods.count("cpu-1"));
  EXPECT_FALSE(slurm_.Called("delete-node cpu-1"));
}

TEST_F(RollingUpgradeTest, PastTheDeadlineJobsAreRequeuedOrCancelledAsTheSpecSaysOnceAMinute) {
  cluster_.spec.upgrade.drain_deadline_seconds = 600;
  cluster_.spec.upgrade.after_deadline = api::kAfterDeadlineRequeue;
  Busy(0);
  Busy(1);
  DrainedForUpgrade(0, 700);  // past the deadline
  DrainedForUpgrade(1, 300);  // not yet
  auto st = UpgradePass();
  EXPECT_TRUE(slurm_.Called("requeue-jobs cpu-0"));
  EXPECT_FALSE(slurm_.Called("requeue-jobs cpu-1"));
  EXPECT_TRUE(HasEvent(st, "UpgradeDeadline", "cpu-0"));
  slurm_.calls.clear();
  UpgradePass();
  EXPECT_FALSE(slurm_.Called("requeue-jobs cpu-0"));  // not again within the minute
  cluster_.spec.upgrade.after_deadline = api::kAfterDeadlineCancel;
  DrainedForUpgrade(1, 700);
  UpgradePass();
  EXPECT_TRUE(slurm_.Called("cancel-jobs cpu-1"));
  // Wait leaves them be however long.
  cluster_.spec.upgrade.after_deadline = api::kAfterDeadlineWait;
  Busy(0);
  slurm_.calls.clear();
  NodeSetReconciler fresh{&rt_, TwoReleases(), &slurm_};
  ns_.status = fresh.Reconcile(cluster_, ns_, &slurm_, nullptr);
  EXPECT_FALSE(slurm_.Called("requeue-jobs cpu-0"));
  EXPECT_FALSE(slurm_.Called("cancel-jobs cpu-0"));
}

TEST_F(RollingUpgradeTest, AnOutdatedWorkerThatNeverRegisteredIsRemovedAtOnce) {
  slurm_.nodes.erase(slurm_.nodes.begin() + 1);  // cpu-1 is still starting
  UpgradePass();
  EXPECT_FALSE(rt_.pods.count("cpu-1"));
  EXPECT_FALSE(slurm_.Called("drain cpu-1"));
}

}  // namespace
}  // namespace hpc::op
