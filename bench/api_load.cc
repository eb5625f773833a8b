// Control plane API under load, against itself under attack in the same run:
//   plain     CLIENTS concurrent clients (half keep-alive, half a new connection per request),
//             REQUESTS each, asking for pages of a project's jobs over RECORDS stored ones
//             (first pages, filtered pages, deep pages by cursor): p50/p99 latency, errors,
//             the server's RSS at start, peak and end;
//   attacked  the same while SLOW clients trickle one header byte every 500 ms (reconnecting
//             when the server closes them).
// Prints both and the ratio attacked/plain of p99. Targets (issue 15): p99 <= 50 ms plain,
// <= 100 ms attacked, no errors, RSS flat.
// Env: RECORDS (1000000), CLIENTS (50), REQUESTS (200), SLOW (10); HPCPLANE_UNDER_TEST (the
// hpcplane binary to load instead of this build's).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "common/files.h"
#include "job_records.h"
#include "server/store.h"
#include "testkit/processes.h"

using namespace hpc;
using Clock = std::chrono::steady_clock;

namespace {

using bench::Env;
using bench::Job;

int64_t RssKiB(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  }
  return 0;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

struct PhaseResult {
  double p50 = 0, p99 = 0, max = 0;
  int64_t requests = 0, errors = 0;
  int64_t rss_start = 0, rss_peak = 0, rss_end = 0;
  double seconds = 0;
};

// One slow client: connects, sends a header byte every 500 ms, reconnects when closed.
void SlowClient(int port, const std::atomic<bool>& stop) {
  const std::string request = "GET /api/v1/flags HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  while (!stop) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      for (size_t i = 0; !stop; ++i) {
        char c = i < request.size() ? request[i] : 'a';
        if (::send(fd, &c, 1, MSG_NOSIGNAL) != 1) break;
        for (int t = 0; t < 5 && !stop; ++t) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    ::close(fd);
  }
}

PhaseResult Phase(int port, pid_t server, const std::string& token, int clients, int requests, int slow,
                  const std::vector<std::string>& cursors) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> attackers;
  for (int i = 0; i < slow; ++i) attackers.emplace_back([&] { SlowClient(port, stop); });
  if (slow > 0) std::this_thread::sleep_for(std::chrono::seconds(1));  // attackers in place first

  PhaseResult r;
  r.rss_start = RssKiB(server);
  std::atomic<int64_t> peak{r.rss_start};
  std::thread sampler([&] {
    while (!stop) {
      peak = std::max<int64_t>(peak, RssKiB(server));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::mutex mu;
  std::vector<double> latencies;
  std::atomic<int64_t> errors{0};
  std::string first_error;
  auto start = Clock::now();
  std::vector<std::thread> workers;
  for (int c = 0; c < clients; ++c) {
    workers.emplace_back([&, c] {
      std::mt19937_64 rng(static_cast<uint64_t>(c));
      const bool keep_alive = c % 2 == 0;
      httplib::Client shared("127.0.0.1", port);
      shared.set_keep_alive(true);
      shared.set_tcp_nodelay(true);
      std::vector<double> mine;
      for (int i = 0; i < requests; ++i) {
        std::string path = "/api/v1/projects/astro/jobs?limit=100";
        switch (rng() % 3) {
          case 1:
            path += "&user=user" + std::to_string(rng() % 50);
            break;
          case 2:
            path += "&cursor=" + cursors[rng() % cursors.size()];
            break;
          default:
            break;
        }
        httplib::Headers h = {{"Authorization", "Bearer " + token}};
        auto t = Clock::now();
        httplib::Result res = [&] {
          if (keep_alive) return shared.Get(path, h);
          httplib::Client once("127.0.0.1", port);
          once.set_tcp_nodelay(true);
          return once.Get(path, h);
        }();
        mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
        if (!res || res->status != 200) {
          ++errors;
          std::lock_guard<std::mutex> l(mu);
          if (first_error.empty()) {
            first_error =
                res ? fmt::format("{} {}", res->status, res->body.substr(0, 200)) : httplib::to_string(res.error());
          }
        }
      }
      std::lock_guard<std::mutex> l(mu);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
    });
  }
  for (auto& w : workers) w.join();
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  stop = true;
  sampler.join();
  for (auto& a : attackers) a.join();
  r.p50 = Percentile(latencies, 0.50);
  r.p99 = Percentile(latencies, 0.99);
  r.max = latencies.empty() ? 0 : *std::max_element(latencies.begin(), latencies.end());
  r.requests = static_cast<int64_t>(latencies.size());
  r.errors = errors;
  if (!first_error.empty()) fmt::print(stderr, "first error: {}\n", first_error);
  r.rss_peak = peak;
  r.rss_end = RssKiB(server);
  return r;
}

void Print(const char* name, const PhaseResult& r) {
  fmt::print(
      "{:<9} {:>6} requests in {:5.1f} s ({:6.0f}/s): p50 {:6.2f} ms, p99 {:6.2f} ms, max {:7.2f} ms, "
      "{} errors; server RSS {} -> peak {} -> {} MiB\n",
      name, r.requests, r.seconds, static_cast<double>(r.requests) / r.seconds, r.p50, r.p99, r.max, r.errors,
      r.rss_start / 1024, r.rss_peak / 1024, r.rss_end / 1024);
}

}  // namespace

int main() {
  const int64_t records = Env("RECORDS", 1000000);
  const int clients = static_cast<int>(Env("CLIENTS", 50));
  const int requests = static_cast<int>(Env("REQUESTS", 200));
  const int slow = static_cast<int>(Env("SLOW", 10));
  auto dir = files::MakeTempDir("hpcplane-bench-api");
  if (!dir.ok()) return 1;
  const std::string db = *dir + "/controlplane/hpcplane.db";
  (void)files::MakeDirs(*dir + "/controlplane", 0700);
  {
    auto store = cp::OpenStore("sqlite:" + db);
    if (!store.ok()) {
      fmt::print(stderr, "store: {}\n", store.status().message());
      return 1;
    }
    auto t = Clock::now();
    std::vector<cp::JobRecord> batch;
    for (int64_t i = 1; i <= records; ++i) {
      batch.push_back(Job(i));
      if (batch.size() == 5000 || i == records) {
        if (Status s = (*store)->UpsertJobs(batch); !s.ok()) {
          fmt::print(stderr, "ingest: {}\n", s.message());
          return 1;
        }
        batch.clear();
      }
    }
    fmt::print("stored {} job records in {:.1f} s\n", records, std::chrono::duration<double>(Clock::now() - t).count());
  }
  // Cursors at random depths, as a client paging through the history would hold.
  std::vector<std::string> cursors;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100; ++i) {
    cp::JobRecord k = Job(1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(records)));
    cursors.push_back(
        cp::JobCursor{cp::JobOrder::kSubmit, 0, k.submit_time, k.data_plane, k.cluster, k.job_id}.Encode());
  }
  const int port = testkit::FreeLoopbackPort();
  // HPCPLANE_UNDER_TEST: another build's binary over the same records (a before/after comparison).
  const char* other = std::getenv("HPCPLANE_UNDER_TEST");
  const std::string bin = other && *other ? other : HPCPLANE_BIN;
  fmt::print("server: {}\n", bin);
  testkit::Background server({bin, "--state-dir", *dir, "server", "--listen", "127.0.0.1:" + std::to_string(port)},
                             *dir + "/server.log");
  std::string token;
  bool up = testkit::WaitFor(
      [&] {
        token = testkit::Trim(files::Read(*dir + "/controlplane/admin.token").value_or(""));
        if (token.empty()) return false;
        httplib::Client c("127.0.0.1", port);
        c.set_bearer_token_auth(token);
        auto r = c.Get("/api/v1/flags");
        return r && r->status == 200;
      },
      std::chrono::seconds(60));
  if (!up) {
    fmt::print(stderr, "server did not come up:\n{}\n", server.Log());
    return 1;
  }
  fmt::print(
      "{} clients x {} requests (half keep-alive), pages of 100 over {} records; attacked: {} slow-header "
      "clients\n",
      clients, requests, records, slow);
  PhaseResult plain = Phase(port, server.pid(), token, clients, requests, 0, cursors);
  Print("plain", plain);
  PhaseResult attacked = Phase(port, server.pid(), token, clients, requests, slow, cursors);
  Print("attacked", attacked);
  fmt::print("ratio attacked/plain p99: {:.2f} (targets: plain p99 <= 50 ms, attacked p99 <= 100 ms, 0 errors)\n",
             plain.p99 > 0 ? attacked.p99 / plain.p99 : 0.0);
  server.Stop();
  (void)files::RemoveAll(*dir);
  return plain.errors + attacked.errors == 0 ? 0 : 1;
}
