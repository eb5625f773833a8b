// The control plane's store, the same tests against SQLite and a real PostgreSQL.
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "common/files.h"
#include "server/store.h"
#include "testkit/postgres.h"

namespace hpc::it {
namespace {

using testkit::PostgresServer;

cp::JobRecord Job(int64_t id, int64_t submit, const std::string& user = "ann", const std::string& state = "COMPLETED") {
  cp::JobRecord j;
  j.data_plane = "dp1";
  j.cluster = "c1";
  j.job_id = id;
  j.submit_time = submit;
  j.name = "job" + std::to_string(id);
  j.user = user;
  j.project = "astro";
  j.partition = "ann-astro";
  j.state = state;
  j.exit_code = "0:0";
  j.elapsed_seconds = id;
  j.max_rss_kib = 1000 + id;
  j.nodes = 1;
  j.node_list = "w-0";
  j.tres = "cpu=1,node=1";
  return j;
}

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgres") {
      pg_ = std::make_unique<PostgresServer>();
      ASSERT_TRUE(pg_->ok()) << pg_->error();
      url_ = pg_->url();
    } else {
      auto dir = files::MakeTempDir("hpcplane-store");
      ASSERT_TRUE(dir.ok());
      dir_ = *dir;
      url_ = "sqlite:" + dir_ + "/cp.db";
    }
    auto s = cp::OpenStore(url_);
    ASSERT_TRUE(s.ok()) << s.status().message();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    pg_.reset();
    if (!dir_.empty()) (void)files::RemoveAll(dir_);
  }
  std::unique_ptr<PostgresServer> pg_;
  std::string dir_, url_;
  std::unique_ptr<cp::Store> store_;
};

TEST_P(StoreTest, MigrationsAreVersionedAndRerunSafely) {
  store_.reset();
  auto again = cp::OpenStore(url_);  // a second open applies nothing twice
  ASSERT_TRUE(again.ok()) << again.status().message();
  auto v = (*again)->Migrate();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 11);  // the last: live views and nodeset samples (10: the statistics' rollup)
  store_ = std::move(*again);
}

TEST_P(StoreTest, UpsertsAreIdempotentOnTheRecordKey) {
  ASSERT_TRUE(store_->UpsertJobs({Job(1, 100, "ann", "RUNNING"), Job(2, 101)}).ok());
  ASSERT_TRUE(store_->UpsertJobs({Job(1, 100), Job(2, 101)}).ok());
  EXPECT_EQ(*store_->CountJobs(), 2);
  EXPECT_EQ((*store_->GetJob("dp1", "c1", 1, 100))->state, "COMPLETED");
  // The same id submitted again (Slurm reused it) is another record.
  ASSERT_TRUE(store_->UpsertJobs({Job(1, 500)}).ok());
  EXPECT_EQ(*store_->CountJobs(), 3);
  EXPECT_EQ((*store_->GetJob("dp1", "c1", 1, 0))->submit_time, 500);  // latest by default
  // A job submitted through the API keeps that mark when the agent reports it.
  auto api = Job(3, 102);
  api.source = "api";
  ASSERT_TRUE(store_->UpsertJobs({api}).ok());
  ASSERT_TRUE(store_->UpsertJobs({Job(3, 102)}).ok());
  EXPECT_EQ((*store_->GetJob("dp1", "c1", 3, 102))->source, "api");
}

// Listings by start or end time: every record once, newest first by that time, jobs that have
// not started (or ended) last; a cursor of one order is refused for another.
TEST_P(StoreTest, KeysetPagesByStartAndEndTimeCoverEveryRecordOnce) {
  std::vector<cp::JobRecord> jobs;
  for (int i = 1; i <= 120; ++i) {
    cp::JobRecord j = Job(i, 1000 + i);
    // Start order differs from submit order; every tenth job is still pending (never started).
    j.start_time = i % 10 == 0 ? 0 : 5000 - (i * 37) % 400;
    j.end_time = j.start_time ? j.start_time + (i % 7) * 10 : 0;
    if (i % 10 == 0) j.state = "PENDING";
    jobs.push_back(j);
  }
  ASSERT_TRUE(store_->UpsertJobs(jobs).ok());
  for (cp::JobOrder order : {cp::JobOrder::kStart, cp::JobOrder::kEnd}) {
    cp::JobFilter f;
    f.project = "astro";
    f.order = order;
    std::set<int64_t> seen;
    std::optional<cp::JobCursor> cursor;
    std::pair<int64_t, int64_t> last = {INT64_MAX, INT64_MAX};
    do {
      auto page = store_->ListJobs(f, cursor, 25);
      ASSERT_TRUE(page.ok()) << page.status().message();
      for (const auto& j : page->jobs) {
        EXPECT_TRUE(seen.insert(j.job_id).second) << j.job_id;
        std::pair<int64_t, int64_t> key = {order == cp::JobOrder::kStart ? j.start_time : j.end_time, j.submit_time};
        EXPECT_LE(key, last) << "job " << j.job_id;
        last = key;
      }
      cursor = page->next;
      if (cursor) {
        auto round = cp::JobCursor::Decode(cursor->Encode());
        ASSERT_TRUE(round.ok()) << cursor->Encode();
        EXPECT_EQ(round->order, order);
        cursor = *round;
      }
    } while (cursor);
    EXPECT_EQ(seen.size(), 120u);
    EXPECT_EQ(last.first, 0) << "the never-started come last";
  }
  cp::JobFilter by_start;
  by_start.project = "astro";
  by_start.order = cp::JobOrder::kStart;
  auto first = store_->ListJobs(by_start, std::nullopt, 10);
  ASSERT_TRUE(first.ok() && first->next);
  cp::JobFilter by_submit;
  by_submit.project = "astro";
  auto mixed = store_->ListJobs(by_submit, first->next, 10);
  EXPECT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(cp::JobCursor::Decode("x5.1000.1.dp1.c1").ok());
  EXPECT_FALSE(cp::JobCursor::Decode("s.1000.1.dp1.c1").ok());
}

TEST_P(StoreTest, KeysetPagesCoverEveryRecordOnceWithFilters) {
  std::vector<cp::JobRecord> jobs;
  for (int i = 1; i <= 250; ++i)
    jobs.push_back(Job(i, 1000 + i / 3, i % 5 == 0 ? "bob" : "ann", i % 7 == 0 ? "FAILED" : "COMPLETED"));
  ASSERT_TRUE(store_->UpsertJobs(jobs).ok());
  cp::JobFilter f;
  f.project = "astro";
  std::set<int64_t> seen;
  std::optional<cp::JobCursor> cursor;
  int pages = 0;
  int64_t last_submit = INT64_MAX;
  do {
    auto page = store_->ListJobs(f, cursor, 40);
    ASSERT_TRUE(page.ok()) << page.status().message();
    for (const auto& j : page->jobs) {
      EXPECT_TRUE(seen.insert(j.job_id).second) << j.job_id;
      EXPECT_LE(j.submit_time, last_submit);
      last_submit = j.submit_time;
    }
    cursor = page->next;
    if (cursor) {
      auto round = cp::JobCursor::Decode(cursor->Encode());
      ASSERT_TRUE(round.ok());
      cursor = *round;
    }
    ++pages;
  } while (cursor);
  EXPECT_EQ(seen.size(), 250u);
  EXPECT_EQ(pages, 7);
  f.user = "bob";
  f.state = "FAILED";
  auto filtered = store_->ListJobs(f, std::nullopt, 1000);
  ASSERT_TRUE(filtered.ok());
  EXPECT_EQ(filtered->jobs.size(), 7u);  // multiples of 35 up to 250
  f = {};
  f.project = "astro";
  f.from = 1010;
  f.to = 1020;
  EXPECT_EQ(store_->ListJobs(f, std::nullopt, 1000)->jobs.size(), 30u);
  f.project = "other";
  EXPECT_TRUE(store_->ListJobs(f, std::nullopt, 1000)->jobs.empty());
  int exported = 0;
  cp::JobFilter all;
  all.project = "astro";
  ASSERT_TRUE(store_->ExportJobs(all, [&](const cp::JobRecord&) { return ++exported > 0; }).ok());
  EXPECT_EQ(exported, 250);
  EXPECT_FALSE(cp::JobCursor::Decode("garbage").ok());
}

// The console's name search matches literally (LIKE's wildcards in the text are plain
// characters), and its charts' aggregates come from the store.
TEST_P(StoreTest, NameSearchAndJobStatistics) {
  std::vector<cp::JobRecord> jobs;
  for (int i = 1; i <= 30; ++i) {
    auto j = Job(i, 86400 + i * 600, i % 3 == 0 ? "bob" : "ann", i % 2 ? "COMPLETED" : "FAILED");
    j.name = i == 7 ? "fit_100%" : "fit-" + std::to_string(i);
    j.start_time = j.submit_time + (i <= 10 ? 5 : 120);  // 10 jobs waited <10s, 20 waited 1m-10m
    j.elapsed_seconds = 3600;
    j.nodes = 2;
    jobs.push_back(j);
  }
  ASSERT_TRUE(store_->UpsertJobs(jobs).ok());
  cp::JobFilter f;
  f.project = "astro";
  f.name_contains = "_100%";
  auto found = store_->ListJobs(f, std::nullopt, 100);
  ASSERT_TRUE(found.ok()) << found.status().message();
  ASSERT_EQ(found->jobs.size(), 1u);
  EXPECT_EQ(found->jobs[0].name, "fit_100%");
  f.name_contains = "fit-1";  // fit-1, fit-10..19
  EXPECT_EQ(store_->ListJobs(f, std::nullopt, 100)->jobs.size(), 11u);

  cp::JobFilter range;
  range.project = "astro";
  range.from = 86400;
  range.to = 2 * 86400;
  auto stats = store_->JobStatistics(range, 3600);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  int64_t total = 0;
  std::map<std::string, int64_t> by_state;
  for (const auto& b : stats->buckets) {
    EXPECT_EQ(b.start % 3600, 0);
    for (const auto& [st, n] : b.states) total += n, by_state[st] += n;
  }
  EXPECT_EQ(total, 30);
  EXPECT_EQ(by_state["COMPLETED"], 15);
  EXPECT_EQ(by_state["FAILED"], 15);
  EXPECT_EQ(stats->buckets.size(), 6u);  // 30 jobs 10 minutes apart: six hours
  ASSERT_EQ(stats->wait.size(), cp::WaitRanges().size());
  EXPECT_EQ(stats->wait[0], (std::pair<std::string, int64_t>{"<10s", 10}));
  EXPECT_EQ(stats->wait[2], (std::pair<std::string, int64_t>{"1m-10m", 20}));
  double ann = 0, bob = 0;
  for (const auto& u : stats->usage) {
    EXPECT_EQ(u.day, 86400);
    (u.user == "ann" ? ann : bob) += u.node_hours;
  }
  EXPECT_DOUBLE_EQ(ann, 20 * 2.0);  // 20 jobs of ann, 2 nodes for an hour each
  EXPECT_DOUBLE_EQ(bob, 10 * 2.0);
  range.project = "other";
  EXPECT_TRUE(store_->JobStatistics(range, 3600)->buckets.empty());
}

// The charts' aggregates computed from `jobs` directly, as the store's statistics define them.
cp::JobStats ReferenceStatistics(const std::vector<cp::JobRecord>& jobs, const cp::JobFilter& f, int64_t bucket) {
  std::map<int64_t, std::map<std::string, int64_t>> states, waits;
  std::vector<int64_t> wait(cp::WaitRanges().size(), 0);
  std::map<std::pair<int64_t, std::string>, int64_t> usage;
  for (const auto& j : jobs) {
    if ((!f.all_projects && j.project != f.project) || (!f.user.empty() && j.user != f.user) ||
        (!f.state.empty() && j.state != f.state) || (!f.workspace.empty() && j.partition != f.workspace) ||
        (f.from && j.submit_time < f.from) || (f.to && j.submit_time >= f.to) ||
        (!f.name_contains.empty() && j.name.find(f.name_contains) == std::string::npos)) {
      continue;
    }
    states[j.submit_time / bucket * bucket][j.state]++;
    if (j.start_time > 0) {
      const int64_t w = j.start_time - j.submit_time;
      size_t r = 0;
      while (r + 1 < wait.size() && w >= cp::WaitRanges()[r].second) ++r;
      wait[r]++;
      waits[j.submit_time / bucket * bucket][cp::WaitRanges()[r].first]++;
    }
    usage[{j.submit_time / 86400 * 86400, f.all_projects ? j.project : j.user}] +=
        static_cast<int64_t>(j.nodes) * j.elapsed_seconds;
  }
  cp::JobStats out;
  for (const auto& [start, s] : states) out.buckets.push_back({start, s, waits[start]});
  for (size_t r = 0; r < wait.size(); ++r) out.wait.emplace_back(cp::WaitRanges()[r].first, wait[r]);
  for (const auto& [k, ns] : usage) out.usage.push_back({k.second, k.first, static_cast<double>(ns) / 3600.0});
  return out;
}

std::string Describe(const cp::JobStats& s) {
  std::string out;
  for (const auto& b : s.buckets) {
    out += std::to_string(b.start) + "{";
    for (const auto& [st, n] : b.states) out += st + "=" + std::to_string(n) + " ";
    for (const auto& [range, n] : b.waits) out += range + "=" + std::to_string(n) + " ";
    out += "} ";
  }
  out += "| wait";
  for (const auto& [label, n] : s.wait) out += " " + label + "=" + std::to_string(n);
  out += " | usage";
  for (const auto& u : s.usage) out += " " + u.user + "@" + std::to_string(u.day) + "=" + std::to_string(u.node_hours);
  return out;
}

// The statistics kept as hourly rollups equal those of the records themselves, after records
// came again with other states, starts, users, workspaces and projects (and some twice in one
// batch), over ranges on and off the hour, buckets finer and coarser than an hour, and filters.
TEST_P(StoreTest, StatisticsFromTheRollupEqualThoseOfTheRecords) {
  std::mt19937 rng(17);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const int64_t t0 = 1700006400;  // a day's start
  const std::vector<std::string> users = {"ann", "bob", "cy"}, states = {"PENDING", "RUNNING", "COMPLETED", "FAILED"};
  auto vary = [&](cp::JobRecord j) {
    j.project = pick(5) == 0 ? "bio" : "astro";
    j.user = users[pick(3)];
    j.partition = j.user + "-" + j.project;
    j.state = states[pick(4)];
    j.start_time = pick(4) == 0 ? 0 : j.submit_time + std::vector<int64_t>{3, 30, 300, 3000, 30000, 200000}[pick(6)];
    j.nodes = 1 + pick(3);
    j.elapsed_seconds = pick(5000);
    return j;
  };
  std::vector<cp::JobRecord> latest;
  for (int i = 0; i < 600; ++i) {
    auto j = Job(i + 1, t0 + pick(3 * 86400));
    j.name = "sim-" + std::to_string(i);
    latest.push_back(vary(j));
  }
  for (size_t k = 0; k < latest.size(); k += 100) {
    ASSERT_TRUE(store_->UpsertJobs({latest.begin() + k, latest.begin() + k + 100}).ok());
  }
  for (int round = 0; round < 3; ++round) {
    std::vector<cp::JobRecord> batch;
    for (int n = 0; n < 150; ++n) {
      const int i = pick(600);
      if (pick(3)) latest[i] = vary(latest[i]);  // else reported again unchanged
      batch.push_back(latest[i]);
    }
    batch.push_back(latest[batch.front().job_id - 1]);  // a key twice in one batch: the last wins
    ASSERT_TRUE(store_->UpsertJobs(batch).ok());
  }
  struct Case {
    int64_t from, to, bucket;
    std::string user, state, workspace, name;
  };
  const std::vector<Case> cases = {
      {t0, t0 + 3 * 86400, 3600, "", "", "", ""},
      {t0 + 1234, t0 + 2 * 86400 + 777, 21600, "", "", "", ""},
      {t0 + 1234, t0 + 2 * 86400 + 777, 60, "", "", "", ""},
      {t0 - 5000, t0 + 4 * 86400, 7 * 86400, "", "", "", ""},
      {t0 + 100, t0 + 3000, 3600, "", "", "", ""},
      {0, 0, 86400, "", "", "", ""},
      {t0 + 999, 0, 3600, "bob", "", "", ""},
      {t0, t0 + 3 * 86400, 3600, "", "COMPLETED", "", ""},
      {t0 + 5, t0 + 3 * 86400 - 5, 3600, "", "", "ann-astro", ""},
      {t0, t0 + 3 * 86400, 3600, "", "", "", "sim-1"},
  };
  for (const std::string project : {"astro", "bio", ""}) {  // "": every project's (the admins' view)
    for (const auto& c : cases) {
      cp::JobFilter f;
      f.project = project, f.all_projects = project.empty();
      f.from = c.from, f.to = c.to, f.user = c.user, f.state = c.state;
      f.workspace = c.workspace, f.name_contains = c.name;
      auto got = store_->JobStatistics(f, c.bucket);
      ASSERT_TRUE(got.ok()) << got.status().message();
      EXPECT_EQ(Describe(*got), Describe(ReferenceStatistics(latest, f, c.bucket)))
          << project << " [" << c.from << ", " << c.to << ") bucket " << c.bucket << " " << c.user << c.state
          << c.workspace << c.name;
    }
  }
}

// Every project's jobs in one list (the admins' view): newest first across projects, in pages
// that cover each record once, with the filters of a project's list.
TEST_P(StoreTest, EveryProjectsJobsArePagedNewestFirst) {
  std::vector<cp::JobRecord> jobs;
  for (int i = 0; i < 45; ++i) {
    auto j = Job(i + 1, 1700000000 + i * 10);
    j.project = i % 3 == 0 ? "bio" : "astro";
    jobs.push_back(j);
  }
  ASSERT_TRUE(store_->UpsertJobs(jobs).ok());
  cp::JobFilter f;
  f.all_projects = true;
  std::vector<int64_t> seen;
  std::optional<cp::JobCursor> cursor;
  do {
    auto page = store_->ListJobs(f, cursor, 10);
    ASSERT_TRUE(page.ok()) << page.status().message();
    for (const auto& j : page->jobs) seen.push_back(j.job_id);
    cursor = page->next;
  } while (cursor);
  ASSERT_EQ(seen.size(), 45u);
  for (size_t k = 0; k < seen.size(); ++k) EXPECT_EQ(seen[k], 45 - static_cast<int64_t>(k)) << "newest first";
  f.project = "bio";  // ignored: every project's
  f.user = jobs[0].user;
  auto page = store_->ListJobs(f, std::nullopt, 100);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->jobs.size(), 45u);
}

// The live cluster: the last view per data plane, and its nodesets' samples folded into steps
// (the most of each count in a step), old ones pruned.
TEST_P(StoreTest, LiveViewsAndNodesetHistory) {
  auto none = store_->GetLiveCluster("dp1");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  const int64_t t0 = 1700000010;  // a multiple of the sample interval, 15 s
  for (int k = 0; k < 8; ++k) {
    // cpu: 0, 1, 2, 2, 2, 1, 0, 0 workers; gpu stays at 1.
    const int cpu = std::vector<int>{0, 1, 2, 2, 2, 1, 0, 0}[k];
    ASSERT_TRUE(
        store_
            ->PutLiveCluster("dp1", "{\"k\":" + std::to_string(k) + "}", t0 + k * 15,
                             {{"cpu", t0 + k * 15, cpu, cpu, cpu / 2, cpu - cpu / 2}, {"gpu", t0 + k * 15, 1, 1, 0, 1}})
            .ok());
  }
  ASSERT_TRUE(store_->PutLiveCluster("dp2", "{}", t0, {{"cpu", t0, 9, 9, 9, 0}}).ok());
  auto live = store_->GetLiveCluster("dp1");
  ASSERT_TRUE(live.ok() && live->has_value());
  EXPECT_EQ((*live)->first, "{\"k\":7}") << "the last view replaces the others";
  EXPECT_EQ((*live)->second, t0 + 7 * 15);
  auto fine = store_->NodeSetHistory("dp1", t0, t0 + 8 * 15, 15);
  ASSERT_TRUE(fine.ok()) << fine.status().message();
  std::vector<int> cpu;
  for (const auto& s : *fine) {
    if (s.nodeset == "cpu") cpu.push_back(s.current);
  }
  EXPECT_EQ(cpu, (std::vector<int>{0, 1, 2, 2, 2, 1, 0, 0})) << "another data plane's samples are not these";
  auto coarse = store_->NodeSetHistory("dp1", t0, t0 + 8 * 15, 60);
  ASSERT_TRUE(coarse.ok());
  std::vector<std::pair<int64_t, int>> steps;
  for (const auto& s : *coarse) {
    if (s.nodeset == "cpu") steps.emplace_back(s.at, s.current);
  }
  // Steps of 60 s from the epoch (t0 is 30 s into one): samples 0-1, 2-5 and 6-7.
  EXPECT_EQ(steps, (std::vector<std::pair<int64_t, int>>{{t0 - 30, 1}, {t0 + 30, 2}, {t0 + 90, 0}}));
  // A report 91 days later prunes what is older than the history kept.
  ASSERT_TRUE(store_->PutLiveCluster("dp1", "{}", t0 + cp::kNodeSetHistorySeconds + 200, {}).ok());
  auto after = store_->NodeSetHistory("dp1", 0, t0 + cp::kNodeSetHistorySeconds + 300, 86400);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->empty());
  auto other = store_->NodeSetHistory("dp2", 0, t0 + 1, 15);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->size(), 1u) << "pruning is per data plane";
}

// A database whose records came before the rollup gets it filled from them by the migration:
// the statistics read the same before and after (SQLite: the test rewinds the file's schema).
TEST_P(StoreTest, TheRollupMigrationFillsItFromTheRecordsKept) {
  if (GetParam() != "sqlite") GTEST_SKIP() << "rewinding a schema is done on the SQLite file";
  std::vector<cp::JobRecord> jobs;
  for (int i = 0; i < 300; ++i) {
    auto j = Job(i + 1, 1700006400 + i * 997, i % 4 ? "ann" : "bob", i % 3 ? "COMPLETED" : "FAILED");
    j.start_time = i % 5 ? j.submit_time + i * 13 : 0;
    j.nodes = 1 + i % 3;
    jobs.push_back(j);
  }
  ASSERT_TRUE(store_->UpsertJobs(jobs).ok());
  cp::JobFilter f;
  f.project = "astro", f.from = 1700006400 + 1000, f.to = 1700006400 + 250000;
  const std::string before = Describe(*store_->JobStatistics(f, 3600));
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/cp.db").c_str(), &db), SQLITE_OK);
  // Back to version 9: what migrations 10 (the rollup) and 11 (live views) made goes.
  ASSERT_EQ(sqlite3_exec(db,
                         "DROP TABLE job_rollup; DROP TABLE live_clusters; DROP TABLE nodeset_samples; "
                         "DROP INDEX jobs_by_submit; DELETE FROM schema_migrations WHERE version >= 10",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  auto reopened = cp::OpenStore(url_);
  ASSERT_TRUE(reopened.ok()) << reopened.status().message();
  store_ = std::move(*reopened);
  EXPECT_EQ(Describe(*store_->JobStatistics(f, 3600)), before);
  EXPECT_EQ(Describe(*store_->JobStatistics(f, 3600)), Describe(ReferenceStatistics(jobs, f, 3600)));
}

TEST_P(StoreTest, CancellationsArePendingUntilTheAgentSettlesThem) {
  cp::Cancellation c;
  c.id = "abc123";
  c.data_plane = "dp1", c.cluster = "c1", c.project = "astro";
  c.job_id = 42, c.submit_time = 1000, c.job_user = "ann", c.requested_by = "admin", c.created_at = 5;
  ASSERT_TRUE(store_->PutCancellation(c).ok());
  auto pending = store_->PendingCancellations("dp1");
  ASSERT_TRUE(pending.ok()) << pending.status().message();
  ASSERT_EQ(pending->size(), 1u);
  EXPECT_EQ((*pending)[0].job_user, "ann");
  EXPECT_TRUE(store_->PendingCancellations("dp2")->empty());
  c.state = "Done";
  ASSERT_TRUE(store_->PutCancellation(c).ok());
  EXPECT_TRUE(store_->PendingCancellations("dp1")->empty());
  auto got = store_->GetCancellation("abc123");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->state, "Done");
  EXPECT_EQ((*got)->job_id, 42);
  EXPECT_FALSE(store_->GetCancellation("nope")->has_value());
}

TEST_P(StoreTest, TheSubmissionOfAJobIsFoundByTheJobsKey) {
  cp::Submission x;
  x.id = "s1", x.data_plane = "dp1", x.project = "astro", x.workspace = "ann-astro", x.user = "ann";
  x.script = "#!/bin/sh\ntrue\n", x.sbatch_args = {"--job-name=a"}, x.created_at = 1;
  ASSERT_TRUE(store_->PutSubmission(x).ok());
  EXPECT_FALSE(store_->SubmissionOfJob("dp1", "c1", 7, 100)->has_value());  // still Pending: no job yet
  x.state = "Submitted", x.cluster = "c1", x.job_id = 7, x.submit_time = 100;
  ASSERT_TRUE(store_->PutSubmission(x).ok());
  auto found = store_->SubmissionOfJob("dp1", "c1", 7, 100);
  ASSERT_TRUE(found.ok()) << found.status().message();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->script, x.script);
  EXPECT_EQ((*found)->sbatch_args, x.sbatch_args);
  EXPECT_FALSE(store_->SubmissionOfJob("dp1", "c1", 7, 101)->has_value());  // another run of id 7
  EXPECT_FALSE(store_->SubmissionOfJob("dp2", "c1", 7, 100)->has_value());
}

TEST_P(StoreTest, DataPlanesTokensAndFlags) {
  cp::DataPlane dp{"dp1", "Healthy", {}, {{"slurm/slurmctld", "22.05.8"}}, 100, 0};
  ASSERT_TRUE(store_->UpsertDataPlane(dp).ok());
  dp.state = "Degraded";
  dp.reasons = {"slurmdbd down"};
  dp.last_report = 200;
  ASSERT_TRUE(store_->UpsertDataPlane(dp).ok());
  auto dps = store_->DataPlanes();
  ASSERT_TRUE(dps.ok());
  ASSERT_EQ(dps->size(), 1u);
  EXPECT_EQ((*dps)[0].state, "Degraded");
  EXPECT_EQ((*dps)[0].reasons, std::vector<std::string>{"slurmdbd down"});
  EXPECT_EQ((*dps)[0].registered_at, 100);
  EXPECT_EQ((*dps)[0].component_versions.at("slurm/slurmctld"), "22.05.8");
  ASSERT_TRUE(store_->PutToken("h1", {"ann", cp::Role::kUser, {"astro"}}).ok());
  auto p = store_->LookupToken("h1");
  ASSERT_TRUE(p.ok() && *p);
  EXPECT_TRUE((*p)->principal.MemberOf("astro"));
  EXPECT_FALSE((*p)->principal.MemberOf("bio"));
  EXPECT_FALSE(*store_->LookupToken("nope"));
  EXPECT_TRUE(store_->Flags()->empty());
  ASSERT_TRUE(store_->SetFlag("EnableHPCJobs", true).ok());
  EXPECT_TRUE(store_->Flags()->at("EnableHPCJobs"));
}

TEST_P(StoreTest, ProjectsUidsAndWorkspaces) {
  auto none = store_->GetProject("astro");
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_FALSE(*none);
  auto config = cp::ProjectConfigFromJson("astro", {{"dataPlane", "dp1"},
                                                    {"tiers", {"medium"}},
                                                    {"maxWorkers", 3},
                                                    {"idleTimeout", "1m"},
                                                    {"sysAdmins", {"carol"}}});
  ASSERT_TRUE(config.ok()) << config.status().message();
  config->updated_at = 42;
  ASSERT_TRUE(store_->PutProject(*config).ok());
  auto got = store_->GetProject("astro");
  ASSERT_TRUE(got.ok() && *got) << got.status().message();
  EXPECT_EQ((*got)->data_plane, "dp1");
  EXPECT_EQ((*got)->tiers, (std::vector<std::string>{"medium", "small"}));
  EXPECT_EQ((*got)->max_workers, 3);
  EXPECT_EQ((*got)->idle_timeout_seconds, 60);
  EXPECT_EQ((*got)->datasets, std::vector<std::string>{"astro"});
  EXPECT_EQ((*got)->sys_admins, std::vector<std::string>{"carol"});
  EXPECT_EQ((*got)->updated_at, 42);

  // One uid per user, handed out once, the same on every later call.
  auto ann = store_->AssignUid("ann"), ben = store_->AssignUid("ben"), ann_again = store_->AssignUid("ann");
  ASSERT_TRUE(ann.ok() && ben.ok() && ann_again.ok()) << ann.status().message();
  EXPECT_EQ(*ann, 20000);
  EXPECT_EQ(*ben, 20001);
  EXPECT_EQ(*ann_again, *ann);

  auto w = cp::BuildWorkspace(**got, "ann", nlohmann::json::object());
  ASSERT_TRUE(w.ok()) << w.status().message();
  w->uid = *ann;
  w->created_at = 100;
  ASSERT_TRUE(store_->PutWorkspace(*w).ok());
  auto c = cp::BuildWorkspace(**got, "carol", {{"name", "carol-ws"}, {"tier", "medium"}});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->admin);  // a sysAdmin of the project
  c->created_at = 101;
  ASSERT_TRUE(store_->PutWorkspace(*c).ok());
  auto listed = store_->ProjectWorkspaces("astro");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].id, "ann-astro");
  EXPECT_EQ((*listed)[0].uid, 20000);
  EXPECT_EQ((*listed)[1].tier, "medium");
  // The desired state and the reported phase are written apart and both kept.
  ASSERT_TRUE(store_->SetWorkspacePhase("ann-astro", "Ready", "login pod running").ok());
  ASSERT_TRUE(store_->SetWorkspaceDesired("ann-astro", "Stopped", true).ok());
  auto one = store_->GetWorkspace("ann-astro");
  ASSERT_TRUE(one.ok() && *one);
  EXPECT_EQ((*one)->phase, "Ready");
  EXPECT_EQ((*one)->message, "login pod running");
  EXPECT_EQ((*one)->desired, "Stopped");
  EXPECT_TRUE((*one)->cancel_jobs);
  EXPECT_EQ(store_->DataPlaneWorkspaces("dp1")->size(), 2u);
  // Stopped as asked: settled, no longer the agent's business, still listed for the project.
  ASSERT_TRUE(store_->SetWorkspacePhase("ann-astro", "Stopped", "").ok());
  auto pending = store_->DataPlaneWorkspaces("dp1");
  ASSERT_TRUE(pending.ok());
  ASSERT_EQ(pending->size(), 1u);
  EXPECT_EQ((*pending)[0].id, "carol-ws");
  EXPECT_EQ(store_->ProjectWorkspaces("astro")->size(), 2u);
  EXPECT_TRUE(store_->DataPlaneWorkspaces("dp2")->empty());
}

// Templates are a project's own, listed by name, replaced in place and deleted once.
TEST_P(StoreTest, JobTemplatesArePerProjectReplacedInPlaceAndDeletedOnce) {
  auto make = [](const std::string& project, const std::string& name, const std::string& script) {
    auto t = cp::JobTemplateFromJson(project, name, {{"script", script}, {"options", {{"nodes", 2}}}});
    EXPECT_TRUE(t.ok()) << t.status().message();
    t->updated_at = 7;
    t->updated_by = "admin";
    return *t;
  };
  ASSERT_TRUE(store_->PutTemplate(make("astro", "sweep", "#!/bin/sh\necho 1")).ok());
  ASSERT_TRUE(store_->PutTemplate(make("astro", "array", "#!/bin/sh\necho a")).ok());
  ASSERT_TRUE(store_->PutTemplate(make("bio", "sweep", "#!/bin/sh\necho bio")).ok());
  auto astro = store_->ProjectTemplates("astro");
  ASSERT_TRUE(astro.ok()) << astro.status().message();
  ASSERT_EQ(astro->size(), 2u);
  EXPECT_EQ((*astro)[0].name, "array");
  EXPECT_EQ((*astro)[1].options["nodes"], 2);
  EXPECT_EQ((*astro)[1].updated_by, "admin");
  ASSERT_TRUE(store_->PutTemplate(make("astro", "sweep", "#!/bin/sh\necho 2")).ok());
  auto sweep = store_->GetTemplate("astro", "sweep");
  ASSERT_TRUE(sweep.ok() && *sweep);
  EXPECT_EQ((*sweep)->script, "#!/bin/sh\necho 2");
  EXPECT_EQ(store_->ProjectTemplates("astro")->size(), 2u);
  EXPECT_EQ((*store_->GetTemplate("bio", "sweep"))->script, "#!/bin/sh\necho bio");
  EXPECT_TRUE(*store_->DeleteTemplate("astro", "sweep"));
  EXPECT_FALSE(*store_->DeleteTemplate("astro", "sweep"));
  EXPECT_FALSE(*store_->GetTemplate("astro", "sweep"));
  EXPECT_TRUE(*store_->GetTemplate("bio", "sweep"));
}

TEST_P(StoreTest, TokensExpireAreListedWithoutSecretsAndRevokedOnce) {
  cp::TokenInfo t;
  t.principal = {"ann", cp::Role::kUser, {"astro"}};
  t.created_at = 1000;
  t.expires_at = 2000;
  t.created_by = "admin";
  const std::string digest = "0123456789abcdef" + std::string(48, 'a');
  ASSERT_TRUE(store_->CreateToken(digest, t).ok());
  ASSERT_TRUE(store_->PutToken(std::string(64, 'b'), {"ben", cp::Role::kUser, {}}).ok());
  auto got = store_->LookupToken(digest);
  ASSERT_TRUE(got.ok() && *got);
  EXPECT_EQ((*got)->id, "0123456789abcdef");
  EXPECT_FALSE((*got)->Expired(1999));
  EXPECT_TRUE((*got)->Expired(2000));
  EXPECT_EQ((*got)->created_by, "admin");
  ASSERT_TRUE(store_->TouchToken(digest, 1500).ok());
  ASSERT_TRUE(store_->TouchToken(digest, 1400).ok());  // never moves back
  EXPECT_EQ((*store_->LookupToken(digest))->last_used, 1500);
  auto anns = store_->ListTokens("ann");
  ASSERT_TRUE(anns.ok());
  ASSERT_EQ(anns->size(), 1u);
  EXPECT_EQ((*anns)[0].id, "0123456789abcdef");
  EXPECT_EQ(store_->ListTokens()->size(), 2u);
  EXPECT_TRUE(*store_->RevokeToken("0123456789abcdef", 1600));
  EXPECT_TRUE(*store_->RevokeToken("0123456789abcdef", 1700));
  EXPECT_EQ((*store_->LookupToken(digest))->revoked_at, 1600);
  EXPECT_FALSE(*store_->RevokeToken("ffffffffffffffff", 1600));
}

TEST_P(StoreTest, AuditEntriesComeBackNewestFirstInPages) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        store_->AppendAudit({1000 + i, "admin", "flag.set", "F" + std::to_string(i), "true", "127.0.0.1"}).ok());
  }
  ASSERT_TRUE(store_->AppendAudit({1004, "-", "signin.failed", "", "unknown token", "10.0.0.1"}).ok());  // same time
  auto first = store_->ListAudit(3);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 3u);
  EXPECT_EQ((*first)[0].at_us, 1004);
  EXPECT_EQ((*first)[1].at_us, 1004);
  EXPECT_EQ((*first)[2].target, "F3");
  auto next = store_->ListAudit(10, (*first)[2].at_us);
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->size(), 3u);
  EXPECT_EQ((*next)[0].target, "F2");
  EXPECT_EQ((*next)[2].remote, "127.0.0.1");
}

// Guards the shared connection: two agents posting batches at once got 503 "cannot start a
// transaction within a transaction", and other writes could land inside an open batch.
TEST_P(StoreTest, ConcurrentWritersEachGetTheirOwnTransaction) {
  constexpr int kWriters = 8, kBatches = 15, kBatch = 40;
  std::atomic<int> failures{0};
  std::string first_error;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int b = 0; b < kBatches; ++b) {
        std::vector<cp::JobRecord> jobs;
        for (int i = 0; i < kBatch; ++i) {
          auto j = Job(1 + (w * kBatches + b) * kBatch + i, 5000);
          j.data_plane = "dp" + std::to_string(w);
          jobs.push_back(j);
        }
        Status s = store_->UpsertJobs(jobs);
        // Single writes and reads in between, from the same threads.
        if (s.ok()) s = store_->SetFlag("F" + std::to_string(w), b % 2 == 0);
        cp::JobFilter f;
        f.project = "astro";
        if (s.ok()) s = store_->ListJobs(f, std::nullopt, 10).status();
        if (!s.ok()) {
          ++failures;
          std::lock_guard<std::mutex> l(mu);
          if (first_error.empty()) first_error = s.message();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0) << first_error;
  EXPECT_EQ(*store_->CountJobs(), kWriters * kBatches * kBatch);
  EXPECT_EQ(store_->Flags()->size(), static_cast<size_t>(kWriters));
}

TEST_P(StoreTest, TwoServersMigratingOneDatabaseAtOnceBothSucceed) {
  // A fresh database (schema not yet there), opened by two stores at the same moment.
  std::string url;
  std::unique_ptr<PostgresServer> fresh;
  if (GetParam() == "postgres") {
    fresh = std::make_unique<PostgresServer>();  // the fixture's database is migrated already
    ASSERT_TRUE(fresh->ok()) << fresh->error();
    url = fresh->url();
  } else {
    url = "sqlite:" + dir_ + "/fresh.db";
  }
  Result<std::unique_ptr<cp::Store>> a = Status::Error("not run"), b = Status::Error("not run");
  std::thread ta([&] { a = cp::OpenStore(url); }), tb([&] { b = cp::OpenStore(url); });
  ta.join();
  tb.join();
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(*(*a)->Migrate(), *(*b)->Migrate());
  ASSERT_TRUE((*a)->UpsertJobs({Job(1, 10)}).ok());
  EXPECT_EQ(*(*b)->CountJobs(), 1);
  a->reset();
  b->reset();
}

INSTANTIATE_TEST_SUITE_P(Engines, StoreTest, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace hpc::it
