// The control plane's store: data planes and what they report, job records, API tokens and
// feature flags. One interface, two implementations (SQLite by default, PostgreSQL for a
// shared deployment), both behind versioned schema migrations.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "messages/job_record.h"
#include "server/job_template.h"
#include "server/project_config.h"

namespace hpc::cp {

struct DataPlane {
  std::string name;
  std::string state;  // Healthy | Degraded | Unreachable
  std::vector<std::string> reasons;
  std::map<std::string, std::string> component_versions;
  int64_t last_report = 0;  // unix seconds
  int64_t registered_at = 0;
  // Slurm work goes only where Slurm is known to be there and healthy.
  bool OffersSlurm() const { return state == "Healthy" && component_versions.count("slurm/slurmctld") > 0; }
};

// kMetrics: reads /metrics and nothing else (what a Prometheus scraper holds).
enum class Role { kAdmin, kUser, kAgent, kMetrics };
const char* RoleName(Role r);
std::optional<Role> ParseRole(const std::string& s);

struct Principal {
  std::string subject;  // user name, or the agent's data plane
  Role role = Role::kUser;
  std::vector<std::string> projects;  // users: projects they belong to
  // When the credential a request came with stops working (unix seconds, 0: never): its token's
  // expiry, or its console session's when sooner. Set by authentication, never stored.
  int64_t credential_expires_at = 0;
  bool MemberOf(const std::string& project) const;
};

// An API token as stored: its digest's key, never the token itself.
struct TokenInfo {
  std::string id;  // public handle: the first 16 hex digits of the digest
  Principal principal;
  int64_t created_at = 0;
  int64_t expires_at = 0;  // 0: never
  int64_t last_used = 0;   // to the minute
  int64_t revoked_at = 0;  // 0: not revoked
  std::string created_by;
  bool Revoked() const { return revoked_at != 0; }
  bool Expired(int64_t now) const { return expires_at != 0 && now >= expires_at; }
};

// Who did what, when and from where: token changes, flag changes, project configuration,
// submissions, workspace launches and stops, failed sign-ins.
struct AuditEntry {
  int64_t at_us = 0;   // unix microseconds
  std::string actor;   // subject of the token, or "-" for a failed sign-in
  std::string action;  // e.g. token.create, flag.set, signin.failed
  std::string target;
  std::string detail;
  std::string remote;  // client address
};

// The order of a job listing, newest first: by submit, start or end time (a job not started or
// not ended yet has 0 there and comes last).
enum class JobOrder { kSubmit, kStart, kEnd };

struct JobFilter {
  std::string project;        // required for listing, unless all_projects
  bool all_projects = false;  // every project's jobs (the admins' view); project is ignored
  JobOrder order = JobOrder::kSubmit;
  std::string user;
  std::string state;
  std::string workspace;      // the partition
  std::string name_contains;  // part of the job name
  int64_t from = 0;           // submit time range, unix seconds; 0: open
  int64_t to = 0;
};

// Keyset paging: records in (submit_time, data_plane, cluster, job_id) descending order, or with
// the start or end time first (then that key); the cursor is the last key of the previous page.
struct JobCursor {
  JobOrder order = JobOrder::kSubmit;
  int64_t order_time = 0;  // the start or end time, for those orders
  int64_t submit_time = 0;
  std::string data_plane, cluster;
  int64_t job_id = 0;
  std::string Encode() const;
  static Result<JobCursor> Decode(const std::string& s);
};

// A project's jobs over a time range, aggregated in the store (the console's charts): jobs per
// state and per queue-wait range (submit to start) per bucket of submit time, queue waits by
// range over the whole range, and node-hours per user per day.
struct JobStats {
  struct Bucket {
    int64_t start = 0;
    std::map<std::string, int64_t> states;  // state -> jobs submitted in the bucket
    std::map<std::string, int64_t> waits;   // wait range -> those of them that started
  };
  std::vector<Bucket> buckets;
  std::vector<std::pair<std::string, int64_t>> wait;  // range label -> jobs, in order
  struct UserDay {
    std::string user;  // the project instead, when the filter spans all projects
    int64_t day = 0;   // unix seconds of the day's start (UTC)
    double node_hours = 0;
  };
  std::vector<UserDay> usage;
};
// Queue-wait ranges of JobStats::wait: upper bounds in seconds (the last is open).
inline const std::vector<std::pair<std::string, int64_t>>& WaitRanges() {
  static const std::vector<std::pair<std::string, int64_t>> r = {{"<10s", 10},     {"10s-1m", 60},   {"1m-10m", 600},
                                                                 {"10m-1h", 3600}, {"1h-1d", 86400}, {">1d", 0}};
  return r;
}

struct JobPage {
  std::vector<JobRecord> jobs;
  std::optional<JobCursor> next;
};

// A batch script submitted through the API, waiting for its data plane's agent to run it as
// the user in the workspace (sbatch in the login pod), then carrying the job id it got.
struct Submission {
  std::string id;
  std::string data_plane, project, workspace, user;
  std::string script;
  std::vector<std::string> sbatch_args;  // validated options, e.g. --job-name=x
  std::string state = "Pending";         // Pending | Submitted | Failed
  std::string cluster;
  int64_t job_id = 0;
  int64_t submit_time = 0;
  std::string error;
  int64_t created_at = 0;
};

// A request to cancel a queued or running job, waiting for its data plane's agent to run
// scancel (as Slurm's operator, for that job only if it still is that user's job of that
// submit time: ids are reused).
struct Cancellation {
  std::string id;
  std::string data_plane, cluster, project;
  int64_t job_id = 0;
  int64_t submit_time = 0;
  std::string job_user;           // the job's owner
  std::string requested_by;       // the owner or an admin
  std::string state = "Pending";  // Pending | Done | Failed
  std::string error;              // Failed: why; Done: a note ("had already ended")
  int64_t created_at = 0;
};

// The store in narrow interfaces, one per kind of record, so that a service or a route names
// only what it reads and writes, and a test fakes only that. Store (below) is all of them.

class DataPlaneStore {
 public:
  virtual ~DataPlaneStore() = default;
  virtual Status UpsertDataPlane(const DataPlane& dp) = 0;
  virtual Result<std::vector<DataPlane>> DataPlanes() = 0;
};

// One nodeset's workers at one moment (the live cluster's history, for its charts).
struct NodeSetSample {
  std::string nodeset;
  int64_t at = 0;  // unix seconds, a multiple of kNodeSetSampleSeconds
  int desired = 0, current = 0, busy = 0, idle = 0;
};
// Samples closer together than this are one (the latest report in the interval wins).
inline constexpr int64_t kNodeSetSampleSeconds = 15;
// How long samples are kept.
inline constexpr int64_t kNodeSetHistorySeconds = 91 * 86400;

// The last live view of each data plane (live_cluster.h) as the agent sent it, and the history
// of its nodesets.
class LiveClusterStore {
 public:
  virtual ~LiveClusterStore() = default;
  // Replaces the data plane's live view (JSON text) and records its nodesets' samples.
  virtual Status PutLiveCluster(const std::string& data_plane, const std::string& view_json, int64_t received_at,
                                const std::vector<NodeSetSample>& samples) = 0;
  // The view and when it was received; nullopt before the first.
  virtual Result<std::optional<std::pair<std::string, int64_t>>> GetLiveCluster(const std::string& data_plane) = 0;
  // Samples at [from, to) in steps of `step` seconds (the most of each count within a step),
  // oldest first.
  virtual Result<std::vector<NodeSetSample>> NodeSetHistory(const std::string& data_plane, int64_t from, int64_t to,
                                                            int64_t step) = 0;
};

class JobStore {
 public:
  virtual ~JobStore() = default;
  // Idempotent on (data_plane, cluster, job_id, submit_time); one transaction per batch.
  virtual Status UpsertJobs(const std::vector<JobRecord>& jobs) = 0;
  virtual Result<JobPage> ListJobs(const JobFilter& f, const std::optional<JobCursor>& after, int limit) = 0;
  virtual Result<std::optional<JobRecord>> GetJob(const std::string& data_plane, const std::string& cluster,
                                                  int64_t job_id, int64_t submit_time) = 0;
  // Streams every matching record to `sink` without holding them all; `sink` returns false to stop.
  virtual Status ExportJobs(const JobFilter& f, const std::function<bool(const JobRecord&)>& sink) = 0;
  virtual Result<int64_t> CountJobs() = 0;
  // Over jobs of f.project submitted in [f.from, f.to) (f's other filters apply too); buckets of
  // `bucket_seconds`.
  virtual Result<JobStats> JobStatistics(const JobFilter& f, int64_t bucket_seconds) = 0;
};

// What the control plane asks data planes to do: submissions and cancellations.
class DispatchStore {
 public:
  virtual ~DispatchStore() = default;
  virtual Status PutSubmission(const Submission& s) = 0;  // insert or replace
  virtual Result<std::optional<Submission>> GetSubmission(const std::string& id) = 0;
  virtual Result<std::vector<Submission>> PendingSubmissions(const std::string& data_plane) = 0;
  // The API submission that created a job, if it was one.
  virtual Result<std::optional<Submission>> SubmissionOfJob(const std::string& data_plane, const std::string& cluster,
                                                            int64_t job_id, int64_t submit_time) = 0;
  virtual Status PutCancellation(const Cancellation& c) = 0;  // insert or replace
  virtual Result<std::optional<Cancellation>> GetCancellation(const std::string& id) = 0;
  virtual Result<std::vector<Cancellation>> PendingCancellations(const std::string& data_plane) = 0;
};

// Projects: their configuration, their batch job templates, and their users' uids.
class ProjectStore {
 public:
  virtual ~ProjectStore() = default;
  virtual Status PutProject(const ProjectConfig& p) = 0;  // insert or replace
  virtual Result<std::optional<ProjectConfig>> GetProject(const std::string& name) = 0;
  // Every configured project's name, sorted.
  virtual Result<std::vector<std::string>> ProjectNames() = 0;
  // A project's batch job templates, by name: admins write them, members start from them.
  virtual Status PutTemplate(const JobTemplate& t) = 0;  // insert or replace
  virtual Result<std::optional<JobTemplate>> GetTemplate(const std::string& project, const std::string& name) = 0;
  // Sorted by name.
  virtual Result<std::vector<JobTemplate>> ProjectTemplates(const std::string& project) = 0;
  // False when the project has no template of that name.
  virtual Result<bool> DeleteTemplate(const std::string& project, const std::string& name) = 0;
  // The platform user's uid, the same on every data plane: handed out once, from 20000 up.
  virtual Result<int64_t> AssignUid(const std::string& user) = 0;
};

class WorkspaceStore {
 public:
  virtual ~WorkspaceStore() = default;
  // A (re)launched workspace replaces a settled one of the same id.
  virtual Status PutWorkspace(const WorkspaceRecord& w) = 0;
  virtual Result<std::optional<WorkspaceRecord>> GetWorkspace(const std::string& id) = 0;
  virtual Result<std::vector<WorkspaceRecord>> ProjectWorkspaces(const std::string& project) = 0;
  // The workspaces a data plane's agent still has to act on or report (not settled).
  virtual Result<std::vector<WorkspaceRecord>> DataPlaneWorkspaces(const std::string& data_plane) = 0;
  // What the user wants (Running | Stopped) and what the agent reports, written apart so a
  // report and a stop request never overwrite each other.
  virtual Status SetWorkspaceDesired(const std::string& id, const std::string& desired, bool cancel_jobs) = 0;
  virtual Status SetWorkspacePhase(const std::string& id, const std::string& phase, const std::string& message) = 0;
};

class TokenStore {
 public:
  virtual ~TokenStore() = default;
  virtual Status CreateToken(const std::string& token_hash, const TokenInfo& t) = 0;
  Status PutToken(const std::string& token_hash, const Principal& p) {
    TokenInfo t;
    t.principal = p;
    return CreateToken(token_hash, t);
  }
  virtual Result<std::optional<TokenInfo>> LookupToken(const std::string& token_hash) = 0;
  // Every token (admins) or one subject's, newest first, without digests.
  virtual Result<std::vector<TokenInfo>> ListTokens(const std::string& subject = "") = 0;
  // False when no token has that id; revoking twice keeps the first time.
  virtual Result<bool> RevokeToken(const std::string& id, int64_t at) = 0;
  virtual Status TouchToken(const std::string& token_hash, int64_t at) = 0;
};

class AuditStore {
 public:
  virtual ~AuditStore() = default;
  virtual Status AppendAudit(const AuditEntry& e) = 0;
  // Newest first, older than `before_us` when given.
  virtual Result<std::vector<AuditEntry>> ListAudit(int limit, int64_t before_us = 0) = 0;
};

class FlagStore {
 public:
  virtual ~FlagStore() = default;
  virtual Result<std::map<std::string, bool>> Flags() = 0;
  virtual Status SetFlag(const std::string& name, bool value) = 0;
};

// A store failure as what it means to a client of the API: the store does not answer (503).
inline Status StoreUnavailable(const Status& s) { return s.ok() ? s : Status::Unavailable(s.message()); }

// The whole store: SQLite or PostgreSQL (sql_store.h).
class Store : public DataPlaneStore,
              public LiveClusterStore,
              public JobStore,
              public DispatchStore,
              public ProjectStore,
              public WorkspaceStore,
              public TokenStore,
              public AuditStore,
              public FlagStore {
 public:
  ~Store() override = default;
  // Applies the migrations not yet applied; returns the schema version.
  virtual Result<int> Migrate() = 0;
  // `observer` hears of every store call: its duration and whether it succeeded.
  virtual void ObserveOperations(std::function<void(double seconds, bool ok)> observer) = 0;
};

// "sqlite:PATH", a path, or "postgres://..." / "postgresql://...".
Result<std::unique_ptr<Store>> OpenStore(const std::string& url);
// The schema version OpenStore migrates a store to.
int StoreSchemaVersion();
// The tables the migrations create (schema_migrations among them).
std::vector<std::string> StoreTableNames();

}  // namespace hpc::cp
