// Control plane store and API benchmarks, each against a peer in the same run:
//   ingest     records/s into SQLite and PostgreSQL in the agent's batches (500 per request)
//              vs one record per transaction;
//   list page  p50/p95 of one 100-record page over RECORDS stored jobs, first pages with
//              filters and deep pages by cursor, vs deep pages by OFFSET;
//   export     the whole RECORDS through `hpcplane server` (NDJSON, streamed): time and the
//              server's peak RSS growth, vs building the full answer in memory first.
// Env: RECORDS (1000000), PG_RECORDS (200000), PEER_RECORDS (20000).
#include <httplib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "common/files.h"
#include "job_records.h"
#include "server/db.h"
#include "server/store.h"
#include "testkit/postgres.h"
#include "testkit/processes.h"

using namespace hpc;
using Clock = std::chrono::steady_clock;

namespace {

using bench::Env;
using bench::Job;

double Secs(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double Ingest(cp::Store* s, int64_t first, int64_t n, int batch) {
  auto t = Clock::now();
  std::vector<cp::JobRecord> buf;
  for (int64_t i = first; i < first + n; ++i) {
    buf.push_back(Job(i));
    if (static_cast<int>(buf.size()) == batch) {
      if (!s->UpsertJobs(buf).ok()) std::abort();
      buf.clear();
    }
  }
  if (!buf.empty() && !s->UpsertJobs(buf).ok()) std::abort();
  return n / Secs(t);
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * (v.size() - 1))];
}

int64_t VmHwmKiB(pid_t pid) {
  auto text = files::Read(fmt::format("/proc/{}/status", pid));
  if (!text.ok()) return -1;
  auto pos = text->find("VmHWM:");
  return pos == std::string::npos ? -1 : std::atoll(text->c_str() + pos + 6);
}

void IngestBench(const std::string& engine, cp::Store* s, int64_t n, int64_t peer_n) {
  double batched = Ingest(s, 0, n, 500);
  double single = Ingest(s, n, peer_n, 1);
  fmt::print(
      "ingest {:<8} {:>9} records in batches of 500: {:>9.0f} records/s | peer, one per transaction "
      "({} records): {:>7.0f} records/s | ratio {:.1f}x\n",
      engine, n, batched, peer_n, single, batched / single);
}

}  // namespace

int main() {
  const int64_t records = Env("RECORDS", 1000000), pg_records = Env("PG_RECORDS", 200000),
                peer_records = Env("PEER_RECORDS", 20000);
  auto dir = files::MakeTempDir("hpcplane-bench-cp");
  if (!dir.ok()) return 1;
  const std::string db_path = *dir + "/controlplane/hpcplane.db";
  (void)files::MakeDirs(*dir + "/controlplane", 0700);

  // Ingest.
  {
    auto s = cp::OpenStore("sqlite:" + db_path);
    if (!s.ok()) return fmt::print(stderr, "{}\n", s.status().message()), 1;
    IngestBench("sqlite", s->get(), records, peer_records);
  }
  {
    testkit::PostgresServer pg;
    if (!pg.ok()) {
      fmt::print("ingest postgres: skipped ({})\n", pg.error());
    } else {
      auto s = cp::OpenStore(pg.url());
      if (!s.ok()) return fmt::print(stderr, "{}\n", s.status().message()), 1;
      IngestBench("postgres", s->get(), pg_records, peer_records / 4);
      // List pages on PostgreSQL too (over what was ingested).
      std::vector<double> lat;
      cp::JobFilter f;
      f.project = "astro";
      std::optional<cp::JobCursor> cur;
      for (int i = 0; i < 200; ++i) {
        auto t = Clock::now();
        auto page = (*s)->ListJobs(f, cur, 100);
        lat.push_back(Secs(t) * 1000);
        cur = page->next;
      }
      fmt::print("list   postgres  {:>9} stored, 200 consecutive pages of 100: p50 {:.2f} ms, p95 {:.2f} ms\n",
                 pg_records + peer_records / 4, Percentile(lat, 0.5), Percentile(lat, 0.95));
    }
  }

  // List pages over the SQLite store: keyset (cursor) vs OFFSET at the same depths.
  {
    auto s = cp::OpenStore("sqlite:" + db_path);
    auto db = cp::OpenSqlite(db_path);
    std::mt19937_64 rng(42);
    std::vector<double> keyset, offset, first;
    const int64_t total = records + peer_records;
    for (int i = 0; i < 100; ++i) {
      cp::JobFilter f;
      f.project = "astro";
      if (i % 2) f.user = "user" + std::to_string(rng() % 50);
      auto t = Clock::now();
      (void)(*s)->ListJobs(f, std::nullopt, 100);
      first.push_back(Secs(t) * 1000);
      // A page starting at a random depth: by cursor, and by OFFSET as a naive API would.
      int64_t depth = static_cast<int64_t>(rng() % static_cast<uint64_t>(total - 200));
      int64_t id = total - 1 - depth;  // records are ordered by submit time, which grows with the id
      cp::JobRecord k = Job(id < records ? id : id);
      cp::JobCursor c{cp::JobOrder::kSubmit, 0, k.submit_time, k.data_plane, k.cluster, k.job_id};
      f = {};
      f.project = "astro";
      t = Clock::now();
      auto page = (*s)->ListJobs(f, c, 100);
      keyset.push_back(Secs(t) * 1000);
      if (!page.ok() || page->jobs.size() != 100) fmt::print(stderr, "short page at depth {}\n", depth);
      t = Clock::now();
      int rows = 0;
      (void)(*db)->Query(fmt::format("SELECT * FROM jobs WHERE project = 'astro' ORDER BY submit_time DESC, "
                                     "data_plane DESC, cluster DESC, job_id DESC LIMIT 100 OFFSET {}",
                                     depth),
                         {}, [&](const cp::SqlRow&) { return ++rows > 0; });
      offset.push_back(Secs(t) * 1000);
    }
    fmt::print(
        "list   sqlite    {:>9} stored, page of 100: first page (half filtered by user) p50 {:.2f} ms "
        "p95 {:.2f} ms; random depth by cursor p50 {:.2f} ms p95 {:.2f} ms | peer OFFSET p50 {:.2f} ms "
        "p95 {:.2f} ms | ratio p95 {:.3f}\n",
        total, Percentile(first, 0.5), Percentile(first, 0.95), Percentile(keyset, 0.5), Percentile(keyset, 0.95),
        Percentile(offset, 0.5), Percentile(offset, 0.95), Percentile(keyset, 0.95) / Percentile(offset, 0.95));
  }

  // Export through the real server: streamed, the server's peak RSS should not follow the size.
  {
    int port = testkit::FreeLoopbackPort();
    testkit::Background server(
        {HPCPLANE_BIN, "--state-dir", *dir, "server", "--listen", "127.0.0.1:" + std::to_string(port)},
        *dir + "/server.log");
    std::string url = "http://127.0.0.1:" + std::to_string(port);
    testkit::WaitFor([&] { return httplib::Client(url).Get("/api/v1/dataplanes") != nullptr; },
                     std::chrono::seconds(20));
    std::string token = files::Read(*dir + "/controlplane/admin.token").value_or("");
    while (!token.empty() && token.back() == '\n') token.pop_back();
    int64_t before = VmHwmKiB(server.pid());
    httplib::Client cli(url);
    cli.set_bearer_token_auth(token);
    cli.set_read_timeout(3600);
    size_t bytes = 0, lines = 0;
    auto t = Clock::now();
    cli.Get("/api/v1/projects/astro/jobs/export?format=ndjson", [&](const char* d, size_t n) {
      bytes += n;
      lines += std::count(d, d + n, '\n');
      return true;
    });
    double secs = Secs(t);
    int64_t after = VmHwmKiB(server.pid());
    server.Stop();
    // Peer: the same records gathered and serialised in memory before answering.
    int pipefd[2];
    if (::pipe(pipefd) != 0) return 1;
    pid_t child = ::fork();
    if (child == 0) {
      auto s = cp::OpenStore("sqlite:" + db_path);
      int64_t base = VmHwmKiB(::getpid());
      std::vector<cp::JobRecord> all;
      cp::JobFilter f;
      f.project = "astro";
      (void)(*s)->ExportJobs(f, [&](const cp::JobRecord& r) { return all.push_back(r), true; });
      std::string body;
      for (const auto& r : all) body += cp::ToJson(r).dump() + "\n";
      std::string msg = fmt::format("{} {}", VmHwmKiB(::getpid()) - base, body.size());
      (void)!::write(pipefd[1], msg.data(), msg.size());
      _exit(0);
    }
    ::close(pipefd[1]);
    char buf[64] = {};
    (void)!::read(pipefd[0], buf, sizeof buf - 1);
    ::waitpid(child, nullptr, 0);
    int64_t peer_growth = std::atoll(buf);
    fmt::print(
        "export sqlite    {:>9} records streamed as NDJSON ({:.0f} MiB) in {:.1f} s ({:.0f} records/s): server "
        "peak RSS {} MiB -> {} MiB (+{} MiB) | peer, built in memory first: +{} MiB | ratio {:.3f}\n",
        lines, bytes / 1048576.0, secs, lines / secs, before / 1024, after / 1024, (after - before) / 1024,
        peer_growth / 1024, static_cast<double>(after - before) / std::max<int64_t>(1, peer_growth));
  }
  (void)files::RemoveAll(*dir);
  return 0;
}
