// Store over Db: the same SQL for SQLite and PostgreSQL.
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <map>
#include <regex>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "platform/catalog.h"
#include "server/db.h"
#include "server/job_rollup.h"
#include "server/store.h"

namespace hpc::cp {
using nlohmann::json;

namespace {

// Append-only: a deployed schema is changed by a new entry, never by editing an old one.
const std::vector<std::string>& Migrations() {
  static const std::vector<std::string> m = {
      R"(CREATE TABLE data_planes (
           name TEXT PRIMARY KEY, state TEXT NOT NULL, reasons TEXT NOT NULL, components TEXT NOT NULL,
           last_report BIGINT NOT NULL, registered_at BIGINT NOT NULL);
         CREATE TABLE jobs (
           data_plane TEXT NOT NULL, cluster TEXT NOT NULL, job_id BIGINT NOT NULL, submit_time BIGINT NOT NULL,
           name TEXT NOT NULL, user_name TEXT NOT NULL, project TEXT NOT NULL, partition_name TEXT NOT NULL,
           state TEXT NOT NULL, exit_code TEXT NOT NULL, start_time BIGINT NOT NULL, end_time BIGINT NOT NULL,
           elapsed_seconds BIGINT NOT NULL, cpu_seconds BIGINT NOT NULL, max_rss_kib BIGINT NOT NULL,
           nodes INTEGER NOT NULL, node_list TEXT NOT NULL, tres TEXT NOT NULL, source TEXT NOT NULL,
           PRIMARY KEY (data_plane, cluster, job_id, submit_time));
         CREATE INDEX jobs_by_project ON jobs (project, submit_time DESC, data_plane DESC, cluster DESC, job_id DESC);
         CREATE TABLE tokens (token_hash TEXT PRIMARY KEY, subject TEXT NOT NULL, role TEXT NOT NULL,
           projects TEXT NOT NULL);
         CREATE TABLE flags (name TEXT PRIMARY KEY, value INTEGER NOT NULL);)",
      R"(CREATE TABLE submissions (
           id TEXT PRIMARY KEY, data_plane TEXT NOT NULL, project TEXT NOT NULL, workspace TEXT NOT NULL,
           user_name TEXT NOT NULL, script TEXT NOT NULL, sbatch_args TEXT NOT NULL, state TEXT NOT NULL,
           cluster TEXT NOT NULL, job_id BIGINT NOT NULL, submit_time BIGINT NOT NULL, error TEXT NOT NULL,
           created_at BIGINT NOT NULL);
         CREATE INDEX submissions_pending ON submissions (data_plane, state, created_at);)",
      R"(CREATE TABLE projects (name TEXT PRIMARY KEY, config TEXT NOT NULL, updated_at BIGINT NOT NULL);
         CREATE TABLE platform_users (name TEXT PRIMARY KEY, uid BIGINT NOT NULL UNIQUE);
         CREATE TABLE workspaces (
           id TEXT PRIMARY KEY, project TEXT NOT NULL, data_plane TEXT NOT NULL, spec TEXT NOT NULL,
           desired TEXT NOT NULL, cancel_jobs INTEGER NOT NULL, phase TEXT NOT NULL, message TEXT NOT NULL,
           created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL);
         CREATE INDEX workspaces_by_project ON workspaces (project, created_at);
         CREATE INDEX workspaces_by_data_plane ON workspaces (data_plane, created_at);)",
      R"(ALTER TABLE tokens ADD COLUMN created_at BIGINT NOT NULL DEFAULT 0;
         ALTER TABLE tokens ADD COLUMN expires_at BIGINT NOT NULL DEFAULT 0;
         ALTER TABLE tokens ADD COLUMN last_used BIGINT NOT NULL DEFAULT 0;
         ALTER TABLE tokens ADD COLUMN revoked_at BIGINT NOT NULL DEFAULT 0;
         ALTER TABLE tokens ADD COLUMN created_by TEXT NOT NULL DEFAULT '';
         CREATE TABLE audit_log (at_us BIGINT NOT NULL, id TEXT NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL,
           target TEXT NOT NULL, detail TEXT NOT NULL, remote TEXT NOT NULL, PRIMARY KEY (at_us, id));)",
      // Pages filtered by user or workspace walk an index of their own instead of the project's
      // whole history (a user's page over 1M records: 50 users' records scanned otherwise).
      R"(CREATE INDEX jobs_by_user ON jobs (project, user_name, submit_time DESC, data_plane DESC, cluster DESC, job_id DESC);
         CREATE INDEX jobs_by_workspace ON jobs (project, partition_name, submit_time DESC, data_plane DESC, cluster DESC,
           job_id DESC);)",
      R"(CREATE TABLE cancellations (
           id TEXT PRIMARY KEY, data_plane TEXT NOT NULL, cluster TEXT NOT NULL, project TEXT NOT NULL,
           job_id BIGINT NOT NULL, submit_time BIGINT NOT NULL, job_user TEXT NOT NULL, requested_by TEXT NOT NULL,
           state TEXT NOT NULL, error TEXT NOT NULL, created_at BIGINT NOT NULL);
         CREATE INDEX cancellations_pending ON cancellations (data_plane, state, created_at);)",
      // Listings by start or end time walk an index of their own.
      R"(CREATE INDEX jobs_by_start ON jobs (project, start_time DESC, submit_time DESC, data_plane DESC, cluster DESC,
           job_id DESC);
         CREATE INDEX jobs_by_end ON jobs (project, end_time DESC, submit_time DESC, data_plane DESC, cluster DESC,
           job_id DESC);)",
      R"(ALTER TABLE jobs ADD COLUMN array_job_id BIGINT NOT NULL DEFAULT 0;
         ALTER TABLE jobs ADD COLUMN array_task TEXT NOT NULL DEFAULT '';)",
      R"(CREATE TABLE job_templates (
           project TEXT NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL, script TEXT NOT NULL,
           options TEXT NOT NULL, updated_at BIGINT NOT NULL, updated_by TEXT NOT NULL,
           PRIMARY KEY (project, name));)",
      // The statistics' hourly rollup (job_rollup.h), filled from the records already kept. Its
      // wait ranges are those of this migration: changing WaitRanges() needs a new migration
      // that rebuilds it.
      fmt::format(R"(CREATE TABLE job_rollup (
           project TEXT NOT NULL, hour BIGINT NOT NULL, user_name TEXT NOT NULL, partition_name TEXT NOT NULL,
           state TEXT NOT NULL, wait_range INTEGER NOT NULL, jobs BIGINT NOT NULL, node_seconds BIGINT NOT NULL,
           PRIMARY KEY (project, hour, user_name, partition_name, state, wait_range));
         INSERT INTO job_rollup (project, hour, user_name, partition_name, state, wait_range, jobs, node_seconds)
           SELECT project, (submit_time / {0}) * {0}, user_name, partition_name, state, {1}, COUNT(*),
                  SUM(CAST(nodes AS BIGINT) * elapsed_seconds)
           FROM jobs GROUP BY project, (submit_time / {0}) * {0}, user_name, partition_name, state, {1};)",
                  kRollupSeconds, WaitRangeSql()),
      // Every project's jobs at once (the admins' list), newest first; each data plane's live
      // view; its nodesets' worker counts over time.
      R"(CREATE INDEX jobs_by_submit ON jobs (submit_time DESC, data_plane DESC, cluster DESC, job_id DESC);
         CREATE TABLE live_clusters (data_plane TEXT PRIMARY KEY, snapshot TEXT NOT NULL, received_at BIGINT NOT NULL);
         CREATE TABLE nodeset_samples (
           data_plane TEXT NOT NULL, at BIGINT NOT NULL, nodeset TEXT NOT NULL, desired INTEGER NOT NULL,
           current_workers INTEGER NOT NULL, busy INTEGER NOT NULL, idle INTEGER NOT NULL,
           PRIMARY KEY (data_plane, at, nodeset));)",
  };
  return m;
}

constexpr int kJobColumnCount = 21;
const char* kJobColumns =
    "data_plane, cluster, job_id, submit_time, name, user_name, project, partition_name, state, exit_code, "
    "start_time, end_time, elapsed_seconds, cpu_seconds, max_rss_kib, nodes, node_list, tres, source, array_job_id, "
    "array_task";

int64_t I(const SqlValue& v) { return v ? std::atoll(v->c_str()) : 0; }
SqlValue N(int64_t v) { return std::to_string(v); }
std::string S(const SqlValue& v) { return v.value_or(""); }

JobRecord JobFromRow(const SqlRow& r) {
  JobRecord j;
  j.data_plane = S(r[0]), j.cluster = S(r[1]), j.job_id = I(r[2]), j.submit_time = I(r[3]);
  j.name = S(r[4]), j.user = S(r[5]), j.project = S(r[6]), j.partition = S(r[7]), j.state = S(r[8]);
  j.exit_code = S(r[9]), j.start_time = I(r[10]), j.end_time = I(r[11]), j.elapsed_seconds = I(r[12]);
  j.cpu_seconds = I(r[13]), j.max_rss_kib = I(r[14]), j.nodes = static_cast<int>(I(r[15]));
  j.node_list = S(r[16]), j.tres = S(r[17]), j.source = S(r[18]);
  j.array_job_id = I(r[19]), j.array_task = S(r[20]);
  return j;
}

std::vector<SqlValue> JobParams(const JobRecord& j) {
  return {j.data_plane,
          j.cluster,
          N(j.job_id),
          N(j.submit_time),
          j.name,
          j.user,
          j.project,
          j.partition,
          j.state,
          j.exit_code,
          N(j.start_time),
          N(j.end_time),
          N(j.elapsed_seconds),
          N(j.cpu_seconds),
          N(j.max_rss_kib),
          N(j.nodes),
          j.node_list,
          j.tres,
          j.source,
          N(j.array_job_id),
          j.array_task};
}

const char* kTemplateSelect =
    "SELECT project, name, description, script, options, updated_at, updated_by FROM job_templates";

JobTemplate TemplateFromRow(const SqlRow& r) {
  JobTemplate t;
  t.project = S(r[0]), t.name = S(r[1]), t.description = S(r[2]), t.script = S(r[3]);
  // Written by PutTemplate from validated options; anything else reads as none.
  t.options = json::parse(S(r[4]), nullptr, false);
  if (!t.options.is_object()) t.options = json::object();
  t.updated_at = I(r[5]), t.updated_by = S(r[6]);
  return t;
}

class SqlStore : public Store {
 public:
  explicit SqlStore(std::unique_ptr<Db> db) : db_(std::move(db)) {}

  Result<int> Migrate() override {
    const auto& all = Migrations();
    // One transaction under the schema lock: two servers starting at once on one database
    // apply each migration once, and a failed migration leaves the schema as it was.
    Status s = db_->SchemaTransaction([&](DbConnection& c) {
      RETURN_IF_ERROR(c.ExecScript(
          "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"));
      size_t current = 0;
      RETURN_IF_ERROR(c.Query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", {}, [&](const SqlRow& r) {
        current = static_cast<size_t>(I(r[0]));
        return false;
      }));
      for (size_t v = current; v < all.size(); ++v) {
        Status m = c.ExecScript(all[v] + ";\nINSERT INTO schema_migrations (version, applied_at) VALUES (" +
                                std::to_string(v + 1) + ", " + std::to_string(std::time(nullptr)) + ")");
        if (!m.ok()) return Status::Errorf("migration {}: {}", v + 1, m.message());
      }
      return Status::Ok();
    });
    RETURN_IF_ERROR(s);
    return static_cast<int>(all.size());
  }

  Status UpsertDataPlane(const DataPlane& dp) override {
    return db_->Query(
        "INSERT INTO data_planes (name, state, reasons, components, last_report, registered_at) "
        "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO UPDATE SET state = excluded.state, "
        "reasons = excluded.reasons, components = excluded.components, last_report = excluded.last_report",
        {dp.name, dp.state, json(dp.reasons).dump(), json(dp.component_versions).dump(), std::to_string(dp.last_report),
         std::to_string(dp.registered_at ? dp.registered_at : dp.last_report)});
  }

  Result<std::vector<DataPlane>> DataPlanes() override {
    std::vector<DataPlane> out;
    RETURN_IF_ERROR(db_->Query(
        "SELECT name, state, reasons, components, last_report, registered_at FROM data_planes ORDER BY name", {},
        [&](const SqlRow& r) {
          DataPlane dp;
          dp.name = S(r[0]), dp.state = S(r[1]);
          dp.reasons = json::parse(S(r[2]), nullptr, false).get<std::vector<std::string>>();
          dp.component_versions = json::parse(S(r[3]), nullptr, false).get<std::map<std::string, std::string>>();
          dp.last_report = I(r[4]), dp.registered_at = I(r[5]);
          out.push_back(std::move(dp));
          return true;
        }));
    return out;
  }

  Status PutLiveCluster(const std::string& data_plane, const std::string& view_json, int64_t received_at,
                        const std::vector<NodeSetSample>& samples) override {
    return db_->Transaction([&](DbConnection& c) -> Status {
      RETURN_IF_ERROR(
          c.Query("INSERT INTO live_clusters (data_plane, snapshot, received_at) VALUES ($1, $2, $3) ON CONFLICT "
                  "(data_plane) DO UPDATE SET snapshot = excluded.snapshot, received_at = excluded.received_at",
                  {data_plane, view_json, N(received_at)}, nullptr));
      // The history the charts offer (90 days) and a day more; older samples go.
      RETURN_IF_ERROR(c.Query("DELETE FROM nodeset_samples WHERE data_plane = $1 AND at < CAST($2 AS BIGINT)",
                              {data_plane, N(received_at - kNodeSetHistorySeconds)}, nullptr));
      for (const auto& s : samples) {
        RETURN_IF_ERROR(
            c.Query("INSERT INTO nodeset_samples (data_plane, at, nodeset, desired, current_workers, busy, idle) "
                    "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (data_plane, at, nodeset) DO UPDATE SET "
                    "desired = excluded.desired, current_workers = excluded.current_workers, busy = excluded.busy, "
                    "idle = excluded.idle",
                    {data_plane, N(s.at), s.nodeset, N(s.desired), N(s.current), N(s.busy), N(s.idle)}, nullptr));
      }
      return Status::Ok();
    });
  }

  Result<std::optional<std::pair<std::string, int64_t>>> GetLiveCluster(const std::string& data_plane) override {
    std::optional<std::pair<std::string, int64_t>> out;
    RETURN_IF_ERROR(db_->Query("SELECT snapshot, received_at FROM live_clusters WHERE data_plane = $1", {data_plane},
                               [&](const SqlRow& r) {
                                 out.emplace(S(r[0]), I(r[1]));
                                 return false;
                               }));
    return out;
  }

  Result<std::vector<NodeSetSample>> NodeSetHistory(const std::string& data_plane, int64_t from, int64_t to,
                                                    int64_t step) override {
    std::vector<NodeSetSample> out;
    RETURN_IF_ERROR(db_->Query(
        fmt::format("SELECT nodeset, (at / {0}) * {0} AS t, MAX(desired), MAX(current_workers), MAX(busy), MAX(idle) "
                    "FROM nodeset_samples WHERE data_plane = $1 AND at >= CAST($2 AS BIGINT) AND "
                    "at < CAST($3 AS BIGINT) GROUP BY t, nodeset ORDER BY t, nodeset",
                    std::max<int64_t>(1, step)),
        {data_plane, N(from), N(to)}, [&](const SqlRow& r) {
          out.push_back({S(r[0]), I(r[1]), static_cast<int>(I(r[2])), static_cast<int>(I(r[3])),
                         static_cast<int>(I(r[4])), static_cast<int>(I(r[5]))});
          return true;
        }));
    return out;
  }

  Status UpsertJobs(const std::vector<JobRecord>& jobs) override {
    // One key once per statement (PostgreSQL refuses to update a row twice in one INSERT);
    // the last report of a key wins.
    std::map<std::tuple<std::string, std::string, int64_t, int64_t>, const JobRecord*> unique;
    for (const auto& j : jobs) unique[{j.data_plane, j.cluster, j.job_id, j.submit_time}] = &j;
    std::vector<const JobRecord*> rows;
    for (const auto& [key, j] : unique) rows.push_back(j);
    const bool sqlite = std::string(db_->engine()) == "sqlite";
    // The records and the rollup change together, or neither does.
    return db_->Transaction([&](DbConnection& c) -> Status {
      // Batches one at a time (SQLite's write transaction already is): each reads the records
      // it replaces, so two at once could both count a new record.
      if (!sqlite) RETURN_IF_ERROR(c.ExecScript("SELECT pg_advisory_xact_lock(7215004)"));
      RollupDeltas deltas;
      RETURN_IF_ERROR(ReplacedRecords(c, rows, sqlite, [&](const JobRecord& old) { deltas.Add(old, -1); }));
      RETURN_IF_ERROR(InsertJobs(c, rows, sqlite));
      for (const auto* j : rows) deltas.Add(*j, +1);
      for (const auto& [k, d] : deltas.Changed()) {
        RETURN_IF_ERROR(c.Query(
            "INSERT INTO job_rollup (project, hour, user_name, partition_name, state, wait_range, jobs, node_seconds) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (project, hour, user_name, partition_name, state, "
            "wait_range) DO UPDATE SET jobs = job_rollup.jobs + excluded.jobs, "
            "node_seconds = job_rollup.node_seconds + excluded.node_seconds",
            {k.project, N(k.hour), k.user, k.partition, k.state, N(k.wait_range), N(d.jobs), N(d.node_seconds)},
            nullptr));
      }
      return Status::Ok();
    });
  }

  // The stored versions of `rows` that exist, with what the rollup counted of them.
  static Status ReplacedRecords(DbConnection& c, const std::vector<const JobRecord*>& rows, bool sqlite,
                                const std::function<void(const JobRecord&)>& sink) {
    const char* columns = "project, submit_time, user_name, partition_name, state, start_time, nodes, elapsed_seconds";
    auto emit = [&](const SqlRow& r) {
      JobRecord old;
      old.project = S(r[0]), old.submit_time = I(r[1]), old.user = S(r[2]), old.partition = S(r[3]);
      old.state = S(r[4]), old.start_time = I(r[5]), old.nodes = static_cast<int>(I(r[6]));
      old.elapsed_seconds = I(r[7]);
      sink(old);
      return true;
    };
    if (sqlite) {  // in-process: a primary-key lookup per record costs microseconds
      const std::string sql = fmt::format(
          "SELECT {} FROM jobs WHERE data_plane = $1 AND cluster = $2 AND "
          "job_id = CAST($3 AS BIGINT) AND submit_time = CAST($4 AS BIGINT)",
          columns);
      for (const auto* j : rows) {
        RETURN_IF_ERROR(c.Query(sql, {j->data_plane, j->cluster, N(j->job_id), N(j->submit_time)}, emit));
      }
      return Status::Ok();
    }
    constexpr size_t kChunk = 500;  // one round trip for up to 500 keys
    for (size_t start = 0; start < rows.size(); start += kChunk) {
      const size_t end = std::min(rows.size(), start + kChunk);
      std::string keys;
      std::vector<SqlValue> params;
      for (size_t i = start; i < end; ++i) {
        const size_t n = params.size();
        keys += fmt::format("{}(${}, ${}, CAST(${} AS BIGINT), CAST(${} AS BIGINT))", i == start ? "" : ",", n + 1,
                            n + 2, n + 3, n + 4);
        params.insert(params.end(),
                      {rows[i]->data_plane, rows[i]->cluster, N(rows[i]->job_id), N(rows[i]->submit_time)});
      }
      RETURN_IF_ERROR(c.Query(fmt::format("SELECT {} FROM jobs WHERE (data_plane, cluster, job_id, submit_time) IN "
                                          "(VALUES {})",
                                          columns, keys),
                              params, emit));
    }
    return Status::Ok();
  }

  static Status InsertJobs(DbConnection& c, const std::vector<const JobRecord*>& rows, bool sqlite) {
    const std::string conflict =
        " ON CONFLICT (data_plane, cluster, job_id, submit_time) DO UPDATE SET name = excluded.name, "
        "user_name = excluded.user_name, project = excluded.project, partition_name = excluded.partition_name, "
        "state = excluded.state, exit_code = excluded.exit_code, start_time = excluded.start_time, "
        "end_time = excluded.end_time, elapsed_seconds = excluded.elapsed_seconds, "
        "cpu_seconds = excluded.cpu_seconds, max_rss_kib = excluded.max_rss_kib, nodes = excluded.nodes, "
        "node_list = excluded.node_list, tres = excluded.tres, array_job_id = excluded.array_job_id, "
        "array_task = excluded.array_task, "
        // A job submitted through the API stays marked so when the agent reports it again.
        "source = CASE WHEN jobs.source = 'api' THEN 'api' ELSE excluded.source END";
    auto placeholders = [](size_t first) {
      std::string v = "(";
      for (int col = 0; col < kJobColumnCount; ++col) v += fmt::format("{}${}", col ? "," : "", first + col + 1);
      return v + ")";
    };
    if (sqlite) {  // one statement bound per row
      const std::string sql = fmt::format("INSERT INTO jobs ({}) VALUES {}{}", kJobColumns, placeholders(0), conflict);
      for (const auto* j : rows) RETURN_IF_ERROR(c.Query(sql, JobParams(*j), nullptr));
      return Status::Ok();
    }
    // PostgreSQL: multi-row statements of up to 500 records, one round trip each.
    constexpr size_t kChunk = 500;
    for (size_t start = 0; start < rows.size(); start += kChunk) {
      size_t end = std::min(rows.size(), start + kChunk);
      std::string values;
      std::vector<SqlValue> params;
      for (size_t i = start; i < end; ++i) {
        values += (i == start ? "" : ",") + placeholders(params.size());
        auto p = JobParams(*rows[i]);
        params.insert(params.end(), p.begin(), p.end());
      }
      RETURN_IF_ERROR(
          c.Query(fmt::format("INSERT INTO jobs ({}) VALUES {}{}", kJobColumns, values, conflict), params, nullptr));
    }
    return Status::Ok();
  }

  // " WHERE project = $1 AND ..." for a filter, its parameters appended to `p`.
  static std::string Where(const JobFilter& f, std::vector<SqlValue>* p) {
    std::string sql = " WHERE 1 = 1";
    auto add = [&](const std::string& cond, const std::string& v) {
      p->push_back(v);
      sql += " AND " + fmt::format(fmt::runtime(cond), p->size());
    };
    if (!f.all_projects) add("project = ${}", f.project);
    if (!f.user.empty()) add("user_name = ${}", f.user);
    if (!f.state.empty()) add("state = ${}", f.state);
    if (!f.workspace.empty()) add("partition_name = ${}", f.workspace);
    if (f.from) add("submit_time >= CAST(${} AS BIGINT)", std::to_string(f.from));
    if (f.to) add("submit_time < CAST(${} AS BIGINT)", std::to_string(f.to));
    if (!f.name_contains.empty()) {
      // LIKE with its wildcards escaped: the text matches literally, in either engine.
      std::string pattern = "%";
      for (char c : f.name_contains) {
        if (c == '%' || c == '_' || c == '\\') pattern += '\\';
        pattern += c;
      }
      add("name LIKE ${} ESCAPE '\\'", pattern + "%");
    }
    return sql;
  }

  Result<JobStats> JobStatistics(const JobFilter& f, int64_t bucket) override {
    const StatsPlan plan = PlanStatistics(f, bucket);
    // Usage per user within a project; per project across all of them.
    const char* who = f.all_projects ? "project" : "user_name";
    StatsFold fold(bucket);
    auto add = [&](const SqlRow& r) {
      fold.Add(I(r[0]), S(r[1]), S(r[2]), static_cast<int>(I(r[3])), I(r[4]), I(r[5]));
      return true;
    };
    for (const auto& [from, to] : plan.scans) {
      JobFilter part = f;
      part.from = from, part.to = to;
      std::vector<SqlValue> p;
      RETURN_IF_ERROR(
          db_->Query(fmt::format("SELECT (submit_time / {0}) * {0} AS t, {3} AS who, state, {1} AS w, COUNT(*), "
                                 "SUM(CAST(nodes AS BIGINT) * elapsed_seconds) FROM jobs{2} GROUP BY t, who, state, w",
                                 plan.grain, WaitRangeSql(), Where(part, &p), who),
                     p, add));
    }
    if (plan.use_rollup) {
      std::vector<SqlValue> p = {N(plan.rollup_from)};
      std::string sql = fmt::format(
          "SELECT hour, {0} AS who, state, wait_range, SUM(jobs), SUM(node_seconds) FROM job_rollup "
          "WHERE hour >= CAST($1 AS BIGINT)",
          who);
      auto add_condition = [&](const std::string& column, const std::string& value) {
        p.push_back(value);
        sql += fmt::format(" AND {} = ${}", column, p.size());
      };
      if (!f.all_projects) add_condition("project", f.project);
      if (plan.rollup_to) {
        p.push_back(N(plan.rollup_to));
        sql += fmt::format(" AND hour < CAST(${} AS BIGINT)", p.size());
      }
      if (!f.user.empty()) add_condition("user_name", f.user);
      if (!f.state.empty()) add_condition("state", f.state);
      if (!f.workspace.empty()) add_condition("partition_name", f.workspace);
      RETURN_IF_ERROR(db_->Query(sql + " GROUP BY hour, who, state, wait_range", p, add));
    }
    return fold.Finish();
  }

  Result<std::vector<std::string>> ProjectNames() override {
    std::vector<std::string> out;
    RETURN_IF_ERROR(db_->Query("SELECT name FROM projects ORDER BY name", {}, [&](const SqlRow& r) {
      out.push_back(S(r[0]));
      return true;
    }));
    return out;
  }

  Result<JobPage> ListJobs(const JobFilter& f, const std::optional<JobCursor>& after, int limit) override {
    std::vector<SqlValue> p;
    std::string sql = fmt::format("SELECT {} FROM jobs", kJobColumns) + Where(f, &p);
    // The order's own time first (start or end), then the record's key, which is unique.
    const char* time = f.order == JobOrder::kStart ? "start_time" : f.order == JobOrder::kEnd ? "end_time" : nullptr;
    if (after) {
      if (after->order != f.order) return Status::InvalidArgument("cursor", "the cursor is of another sort order");
      size_t n = p.size();
      std::string key = "(submit_time, data_plane, cluster, job_id)";
      std::string values = "(CAST(${} AS BIGINT), ${}, ${}, CAST(${} AS BIGINT))";
      if (time) {
        p.push_back(std::to_string(after->order_time));
        key = fmt::format("({}, submit_time, data_plane, cluster, job_id)", time);
        values = "(CAST(${} AS BIGINT), CAST(${} AS BIGINT), ${}, ${}, CAST(${} AS BIGINT))";
      }
      p.push_back(std::to_string(after->submit_time));
      p.push_back(after->data_plane);
      p.push_back(after->cluster);
      p.push_back(std::to_string(after->job_id));
      sql += " AND " + key + " < " +
             (time ? fmt::format(fmt::runtime(values), n + 1, n + 2, n + 3, n + 4, n + 5)
                   : fmt::format(fmt::runtime(values), n + 1, n + 2, n + 3, n + 4));
    }
    sql += fmt::format(" ORDER BY {}submit_time DESC, data_plane DESC, cluster DESC, job_id DESC LIMIT {}",
                       time ? fmt::format("{} DESC, ", time) : "", limit + 1);
    JobPage page;
    RETURN_IF_ERROR(db_->Query(sql, p, [&](const SqlRow& r) {
      page.jobs.push_back(JobFromRow(r));
      return true;
    }));
    if (static_cast<int>(page.jobs.size()) > limit) {
      page.jobs.pop_back();
      const auto& last = page.jobs.back();
      page.next =
          JobCursor{f.order,
                    f.order == JobOrder::kStart ? last.start_time : f.order == JobOrder::kEnd ? last.end_time : 0,
                    last.submit_time,
                    last.data_plane,
                    last.cluster,
                    last.job_id};
    }
    return page;
  }

  Result<std::optional<JobRecord>> GetJob(const std::string& data_plane, const std::string& cluster, int64_t job_id,
                                          int64_t submit_time) override {
    std::optional<JobRecord> out;
    std::string sql =
        fmt::format("SELECT {} FROM jobs WHERE data_plane = $1 AND cluster = $2 AND job_id = $3", kJobColumns);
    std::vector<SqlValue> p = {data_plane, cluster, std::to_string(job_id)};
    if (submit_time) {
      sql += " AND submit_time = $4";
      p.push_back(std::to_string(submit_time));
    }
    sql += " ORDER BY submit_time DESC LIMIT 1";  // without a submit time: the latest run of that id
    RETURN_IF_ERROR(db_->Query(sql, p, [&](const SqlRow& r) {
      out = JobFromRow(r);
      return false;
    }));
    return out;
  }

  Status ExportJobs(const JobFilter& f, const std::function<bool(const JobRecord&)>& sink) override {
    // Keyset pages of bounded size: memory stays flat however many records match.
    std::optional<JobCursor> cursor;
    while (true) {
      ASSIGN_OR_RETURN(JobPage page, ListJobs(f, cursor, 2000));
      for (const auto& j : page.jobs) {
        if (!sink(j)) return Status::Ok();
      }
      if (!page.next) return Status::Ok();
      cursor = page.next;
    }
  }

  Result<int64_t> CountJobs() override {
    int64_t n = 0;
    RETURN_IF_ERROR(db_->Query("SELECT COUNT(*) FROM jobs", {}, [&](const SqlRow& r) {
      n = I(r[0]);
      return false;
    }));
    return n;
  }

  Status PutSubmission(const Submission& x) override {
    return db_->Query(
        "INSERT INTO submissions (id, data_plane, project, workspace, user_name, script, sbatch_args, state, cluster, "
        "job_id, submit_time, error, created_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13) "
        "ON CONFLICT (id) DO UPDATE SET state = excluded.state, cluster = excluded.cluster, job_id = excluded.job_id, "
        "submit_time = excluded.submit_time, error = excluded.error",
        {x.id, x.data_plane, x.project, x.workspace, x.user, x.script, json(x.sbatch_args).dump(), x.state, x.cluster,
         N(x.job_id), N(x.submit_time), x.error, N(x.created_at)});
  }

  Result<std::optional<Submission>> GetSubmission(const std::string& id) override {
    std::vector<Submission> out;
    RETURN_IF_ERROR(QuerySubmissions("WHERE id = $1", {id}, &out));
    return out.empty() ? std::optional<Submission>() : std::optional<Submission>(out[0]);
  }

  Result<std::vector<Submission>> PendingSubmissions(const std::string& data_plane) override {
    std::vector<Submission> out;
    RETURN_IF_ERROR(QuerySubmissions("WHERE data_plane = $1 AND state = 'Pending' ORDER BY created_at LIMIT 100",
                                     {data_plane}, &out));
    return out;
  }

  Result<std::optional<Submission>> SubmissionOfJob(const std::string& data_plane, const std::string& cluster,
                                                    int64_t job_id, int64_t submit_time) override {
    std::vector<Submission> out;
    RETURN_IF_ERROR(QuerySubmissions(
        "WHERE data_plane = $1 AND cluster = $2 AND job_id = CAST($3 AS BIGINT) AND submit_time = CAST($4 AS BIGINT) "
        "AND state = 'Submitted' LIMIT 1",
        {data_plane, cluster, N(job_id), N(submit_time)}, &out));
    return out.empty() ? std::optional<Submission>() : std::optional<Submission>(out[0]);
  }

  Status PutCancellation(const Cancellation& c) override {
    return db_->Query(
        "INSERT INTO cancellations (id, data_plane, cluster, project, job_id, submit_time, job_user, requested_by, "
        "state, error, created_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11) "
        "ON CONFLICT (id) DO UPDATE SET state = excluded.state, error = excluded.error",
        {c.id, c.data_plane, c.cluster, c.project, N(c.job_id), N(c.submit_time), c.job_user, c.requested_by, c.state,
         c.error, N(c.created_at)});
  }

  Result<std::optional<Cancellation>> GetCancellation(const std::string& id) override {
    std::vector<Cancellation> out;
    RETURN_IF_ERROR(QueryCancellations("WHERE id = $1", {id}, &out));
    return out.empty() ? std::optional<Cancellation>() : std::optional<Cancellation>(out[0]);
  }

  Result<std::vector<Cancellation>> PendingCancellations(const std::string& data_plane) override {
    std::vector<Cancellation> out;
    RETURN_IF_ERROR(QueryCancellations("WHERE data_plane = $1 AND state = 'Pending' ORDER BY created_at LIMIT 100",
                                       {data_plane}, &out));
    return out;
  }

  Status PutProject(const ProjectConfig& p) override {
    return db_->Query(
        "INSERT INTO projects (name, config, updated_at) VALUES ($1, $2, $3) "
        "ON CONFLICT (name) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at",
        {p.name, ToJson(p).dump(), std::to_string(p.updated_at)});
  }

  Status PutTemplate(const JobTemplate& t) override {
    return db_->Query(
        "INSERT INTO job_templates (project, name, description, script, options, updated_at, updated_by) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (project, name) DO UPDATE SET "
        "description = excluded.description, script = excluded.script, options = excluded.options, "
        "updated_at = excluded.updated_at, updated_by = excluded.updated_by",
        {t.project, t.name, t.description, t.script, t.options.dump(), N(t.updated_at), t.updated_by});
  }

  Result<std::optional<JobTemplate>> GetTemplate(const std::string& project, const std::string& name) override {
    std::optional<JobTemplate> out;
    RETURN_IF_ERROR(db_->Query(std::string(kTemplateSelect) + " WHERE project = $1 AND name = $2", {project, name},
                               [&](const SqlRow& r) {
                                 out = TemplateFromRow(r);
                                 return false;
                               }));
    return out;
  }

  Result<std::vector<JobTemplate>> ProjectTemplates(const std::string& project) override {
    std::vector<JobTemplate> out;
    RETURN_IF_ERROR(
        db_->Query(std::string(kTemplateSelect) + " WHERE project = $1 ORDER BY name", {project}, [&](const SqlRow& r) {
          out.push_back(TemplateFromRow(r));
          return true;
        }));
    return out;
  }

  Result<bool> DeleteTemplate(const std::string& project, const std::string& name) override {
    bool found = false;
    RETURN_IF_ERROR(db_->Query("DELETE FROM job_templates WHERE project = $1 AND name = $2 RETURNING name",
                               {project, name}, [&](const SqlRow&) {
                                 found = true;
                                 return true;
                               }));
    return found;
  }

  Result<std::optional<ProjectConfig>> GetProject(const std::string& name) override {
    std::optional<std::string> config;
    int64_t updated = 0;
    RETURN_IF_ERROR(db_->Query("SELECT config, updated_at FROM projects WHERE name = $1", {name}, [&](const SqlRow& r) {
      config = S(r[0]);
      updated = I(r[1]);
      return false;
    }));
    if (!config) return std::optional<ProjectConfig>();
    json j = json::parse(*config, nullptr, false);
    // Stored durations are whole seconds under the API's input names.
    j["idleTimeout"] = j.value("idleTimeoutSeconds", int64_t{300});
    j["tokenLifetime"] = j.value("tokenLifetimeSeconds", int64_t{8 * 3600});
    for (const char* k : {"name", "idleTimeoutSeconds", "tokenLifetimeSeconds", "updatedAt"}) j.erase(k);
    ASSIGN_OR_RETURN(ProjectConfig p, ProjectConfigFromJson(name, j));
    p.updated_at = updated;
    return std::optional<ProjectConfig>(p);
  }

  Result<int64_t> AssignUid(const std::string& user) override {
    // Two servers may race for the same next uid: the UNIQUE constraint refuses one, which
    // then takes the next.
    Status last;
    for (int attempt = 0; attempt < 5; ++attempt) {
      last = db_->Query(
          "INSERT INTO platform_users (name, uid) SELECT CAST($1 AS TEXT), COALESCE(MAX(uid), $2) + 1 "
          "FROM platform_users WHERE true ON CONFLICT (name) DO NOTHING",
          {user, std::to_string(platform::kFirstUid - 1)});
      if (last.ok()) break;
    }
    RETURN_IF_ERROR(last);
    int64_t uid = 0;
    RETURN_IF_ERROR(db_->Query("SELECT uid FROM platform_users WHERE name = $1", {user}, [&](const SqlRow& r) {
      uid = I(r[0]);
      return false;
    }));
    if (uid == 0) return Status::Errorf("no uid recorded for user {}", user);
    if (uid > platform::kLastUid)
      return Status::Errorf("no free uid left for platform users (up to {})", platform::kLastUid);
    return uid;
  }

  Status PutWorkspace(const WorkspaceRecord& w) override {
    return db_->Query(
        "INSERT INTO workspaces (id, project, data_plane, spec, desired, cancel_jobs, phase, message, created_at, "
        "updated_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10) ON CONFLICT (id) DO UPDATE SET project = "
        "excluded.project, "
        "data_plane = excluded.data_plane, spec = excluded.spec, desired = excluded.desired, "
        "cancel_jobs = excluded.cancel_jobs, phase = excluded.phase, message = excluded.message, "
        "created_at = excluded.created_at, updated_at = excluded.updated_at",
        {w.id, w.project, w.data_plane, ToJson(w).dump(), w.desired, N(w.cancel_jobs ? 1 : 0), w.phase, w.message,
         N(w.created_at), N(w.updated_at)});
  }

  Result<std::optional<WorkspaceRecord>> GetWorkspace(const std::string& id) override {
    ASSIGN_OR_RETURN(auto found, QueryWorkspaces("WHERE id = $1", {id}));
    return found.empty() ? std::optional<WorkspaceRecord>() : std::optional<WorkspaceRecord>(found[0]);
  }

  Result<std::vector<WorkspaceRecord>> ProjectWorkspaces(const std::string& project) override {
    return QueryWorkspaces("WHERE project = $1 ORDER BY created_at, id", {project});
  }

  Result<std::vector<WorkspaceRecord>> DataPlaneWorkspaces(const std::string& data_plane) override {
    return QueryWorkspaces(
        "WHERE data_plane = $1 AND NOT (desired = 'Stopped' AND phase = 'Stopped') ORDER BY created_at, id",
        {data_plane});
  }

  Status SetWorkspaceDesired(const std::string& id, const std::string& desired, bool cancel_jobs) override {
    return db_->Query("UPDATE workspaces SET desired = $2, cancel_jobs = $3, updated_at = $4 WHERE id = $1",
                      {id, desired, std::string(cancel_jobs ? "1" : "0"), std::to_string(std::time(nullptr))});
  }

  Status SetWorkspacePhase(const std::string& id, const std::string& phase, const std::string& message) override {
    return db_->Query("UPDATE workspaces SET phase = $2, message = $3, updated_at = $4 WHERE id = $1",
                      {id, phase, message, std::to_string(std::time(nullptr))});
  }

  Status CreateToken(const std::string& token_hash, const TokenInfo& t) override {
    const Principal& pr = t.principal;
    return db_->Query(
        "INSERT INTO tokens (token_hash, subject, role, projects, created_at, expires_at, created_by) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7)",
        {token_hash, pr.subject, std::string(RoleName(pr.role)), json(pr.projects).dump(), N(t.created_at),
         N(t.expires_at), t.created_by});
  }

  Result<std::optional<TokenInfo>> LookupToken(const std::string& token_hash) override {
    std::vector<TokenInfo> out;
    RETURN_IF_ERROR(QueryTokens("WHERE token_hash = $1", {token_hash}, &out));
    return out.empty() ? std::optional<TokenInfo>() : std::optional<TokenInfo>(out[0]);
  }

  Result<std::vector<TokenInfo>> ListTokens(const std::string& subject) override {
    std::vector<TokenInfo> out;
    if (subject.empty()) {
      RETURN_IF_ERROR(QueryTokens("ORDER BY created_at DESC, token_hash", {}, &out));
    } else {
      RETURN_IF_ERROR(QueryTokens("WHERE subject = $1 ORDER BY created_at DESC, token_hash", {subject}, &out));
    }
    return out;
  }

  Result<bool> RevokeToken(const std::string& id, int64_t at) override {
    bool found = false;
    RETURN_IF_ERROR(db_->Query(
        "UPDATE tokens SET revoked_at = CASE WHEN revoked_at = 0 THEN CAST($2 AS BIGINT) ELSE revoked_at END "
        "WHERE substr(token_hash, 1, 16) = $1 RETURNING token_hash",
        {id, N(at)}, [&](const SqlRow&) {
          found = true;
          return true;
        }));
    return found;
  }

  Status TouchToken(const std::string& token_hash, int64_t at) override {
    return db_->Query("UPDATE tokens SET last_used = $2 WHERE token_hash = $1 AND last_used < $2", {token_hash, N(at)});
  }

  Status AppendAudit(const AuditEntry& e) override {
    // The id only tells apart two entries of the same microsecond.
    static std::atomic<uint64_t> seq{0};
    return db_->Query(
        "INSERT INTO audit_log (at_us, id, actor, action, target, detail, remote) VALUES ($1,$2,$3,$4,$5,$6,$7)",
        {N(e.at_us), fmt::format("{}-{}", ::getpid(), seq++), e.actor, e.action, e.target, e.detail, e.remote});
  }

  Result<std::vector<AuditEntry>> ListAudit(int limit, int64_t before_us) override {
    std::vector<AuditEntry> out;
    RETURN_IF_ERROR(db_->Query(
        fmt::format(
            "SELECT at_us, actor, action, target, detail, remote FROM audit_log {} ORDER BY at_us DESC, id DESC "
            "LIMIT {}",
            before_us ? "WHERE at_us < CAST($1 AS BIGINT)" : "", limit),
        before_us ? std::vector<SqlValue>{N(before_us)} : std::vector<SqlValue>{}, [&](const SqlRow& r) {
          out.push_back({I(r[0]), S(r[1]), S(r[2]), S(r[3]), S(r[4]), S(r[5])});
          return true;
        }));
    return out;
  }

  void ObserveOperations(std::function<void(double, bool)> observer) override {
    db_->set_observer(std::move(observer));
  }

  Result<std::map<std::string, bool>> Flags() override {
    std::map<std::string, bool> out;
    RETURN_IF_ERROR(db_->Query("SELECT name, value FROM flags", {}, [&](const SqlRow& r) {
      out[S(r[0])] = I(r[1]) != 0;
      return true;
    }));
    return out;
  }

  Status SetFlag(const std::string& name, bool value) override {
    return db_->Query(
        "INSERT INTO flags (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        {name, std::string(value ? "1" : "0")});
  }

 private:
  Result<std::vector<WorkspaceRecord>> QueryWorkspaces(const std::string& where, const std::vector<SqlValue>& params) {
    std::vector<WorkspaceRecord> out;
    Status bad;
    RETURN_IF_ERROR(db_->Query("SELECT spec, desired, cancel_jobs, phase, message, updated_at FROM workspaces " + where,
                               params, [&](const SqlRow& r) {
                                 auto w = WorkspaceRecordFromJson(json::parse(S(r[0]), nullptr, false));
                                 if (!w.ok()) {
                                   bad = w.status();
                                   return false;
                                 }
                                 w->desired = S(r[1]), w->cancel_jobs = I(r[2]) != 0, w->phase = S(r[3]),
                                 w->message = S(r[4]);
                                 w->updated_at = I(r[5]);
                                 out.push_back(std::move(*w));
                                 return true;
                               }));
    RETURN_IF_ERROR(bad);
    return out;
  }

  Status QueryTokens(const std::string& where, const std::vector<SqlValue>& params, std::vector<TokenInfo>* out) {
    return db_->Query(
        "SELECT token_hash, subject, role, projects, created_at, expires_at, last_used, revoked_at, created_by "
        "FROM tokens " +
            where,
        params, [&](const SqlRow& r) {
          TokenInfo t;
          t.id = S(r[0]).substr(0, 16);
          t.principal.subject = S(r[1]);
          t.principal.role = ParseRole(S(r[2])).value_or(Role::kUser);
          t.principal.projects = json::parse(S(r[3]), nullptr, false).get<std::vector<std::string>>();
          t.created_at = I(r[4]), t.expires_at = I(r[5]), t.last_used = I(r[6]), t.revoked_at = I(r[7]);
          t.created_by = S(r[8]);
          out->push_back(std::move(t));
          return true;
        });
  }

  Status QueryCancellations(const std::string& where, const std::vector<SqlValue>& params,
                            std::vector<Cancellation>* out) {
    return db_->Query(
        "SELECT id, data_plane, cluster, project, job_id, submit_time, job_user, requested_by, state, error, "
        "created_at "
        "FROM cancellations " +
            where,
        params, [&](const SqlRow& r) {
          Cancellation c;
          c.id = S(r[0]), c.data_plane = S(r[1]), c.cluster = S(r[2]), c.project = S(r[3]);
          c.job_id = I(r[4]), c.submit_time = I(r[5]), c.job_user = S(r[6]), c.requested_by = S(r[7]);
          c.state = S(r[8]), c.error = S(r[9]), c.created_at = I(r[10]);
          out->push_back(std::move(c));
          return true;
        });
  }

  Status QuerySubmissions(const std::string& where, const std::vector<SqlValue>& params, std::vector<Submission>* out) {
    return db_->Query(
        "SELECT id, data_plane, project, workspace, user_name, script, sbatch_args, state, cluster, job_id, "
        "submit_time, error, created_at FROM submissions " +
            where,
        params, [&](const SqlRow& r) {
          Submission x;
          x.id = S(r[0]), x.data_plane = S(r[1]), x.project = S(r[2]), x.workspace = S(r[3]), x.user = S(r[4]);
          x.script = S(r[5]);
          x.sbatch_args = json::parse(S(r[6]), nullptr, false).get<std::vector<std::string>>();
          x.state = S(r[7]), x.cluster = S(r[8]), x.job_id = I(r[9]), x.submit_time = I(r[10]);
          x.error = S(r[11]), x.created_at = I(r[12]);
          out->push_back(std::move(x));
          return true;
        });
  }

  std::unique_ptr<Db> db_;
};

}  // namespace

const char* RoleName(Role r) {
  switch (r) {
    case Role::kAdmin:
      return "admin";
    case Role::kAgent:
      return "agent";
    case Role::kMetrics:
      return "metrics";
    default:
      return "user";
  }
}

std::optional<Role> ParseRole(const std::string& s) {
  if (s == "admin") return Role::kAdmin;
  if (s == "user") return Role::kUser;
  if (s == "agent") return Role::kAgent;
  if (s == "metrics") return Role::kMetrics;
  return std::nullopt;
}

bool Principal::MemberOf(const std::string& project) const {
  if (role == Role::kAdmin) return true;
  for (const auto& p : projects) {
    if (p == project) return true;
  }
  return false;
}

std::string JobCursor::Encode() const {
  const std::string key = fmt::format("{}.{}.{}.{}", submit_time, job_id, data_plane, cluster);
  if (order == JobOrder::kSubmit) return key;
  return fmt::format("{}{}.{}", order == JobOrder::kStart ? "s" : "e", order_time, key);
}

Result<JobCursor> JobCursor::Decode(const std::string& s) {
  // [s|e<time>.]submit.jobid.dataplane.cluster; names are resource names (no dots).
  JobCursor c;
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    parts.push_back(s.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  auto digits = [](const std::string& v) {
    return !v.empty() && v.size() <= 18 && v.find_first_not_of("0123456789") == std::string::npos;
  };
  const Status bad = Status::InvalidArgument("cursor", fmt::format("\"{}\" is not one this API returned", s));
  if (parts.size() == 5) {
    const char kind = parts[0].empty() ? '\0' : parts[0][0];
    if ((kind != 's' && kind != 'e') || !digits(parts[0].substr(1))) return bad;
    c.order = kind == 's' ? JobOrder::kStart : JobOrder::kEnd;
    c.order_time = std::atoll(parts[0].c_str() + 1);
    parts.erase(parts.begin());
  }
  if (parts.size() != 4 || !digits(parts[0]) || !digits(parts[1]) || parts[2].empty() || parts[3].empty()) return bad;
  c.submit_time = std::atoll(parts[0].c_str());
  c.job_id = std::atoll(parts[1].c_str());
  c.data_plane = parts[2];
  c.cluster = parts[3];
  return c;
}

int StoreSchemaVersion() { return static_cast<int>(Migrations().size()); }

std::vector<std::string> StoreTableNames() {
  std::vector<std::string> out = {"schema_migrations"};
  static const std::regex kCreate(R"(CREATE TABLE (?:IF NOT EXISTS )?(\w+))");
  for (const auto& m : Migrations()) {
    for (std::sregex_iterator it(m.begin(), m.end(), kCreate), end; it != end; ++it) out.push_back((*it)[1].str());
  }
  return out;
}

Result<std::unique_ptr<Store>> OpenStore(const std::string& url) {
  std::unique_ptr<Db> db;
  if (url.rfind("postgres://", 0) == 0 || url.rfind("postgresql://", 0) == 0) {
    ASSIGN_OR_RETURN(db, OpenPostgres(url));
  } else {
    std::string path = url.rfind("sqlite:", 0) == 0 ? url.substr(7) : url;
    ASSIGN_OR_RETURN(db, OpenSqlite(path));
  }
  auto store = std::make_unique<SqlStore>(std::move(db));
  ASSIGN_OR_RETURN(int version, store->Migrate());
  (void)version;
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace hpc::cp
