#include "testkit/postgres.h"

#include <pwd.h>
#include <unistd.h>

#include <filesystem>

#include <libpq-fe.h>

#include "common/files.h"
#include "common/subprocess.h"

namespace hpc::testkit {
namespace {

std::string PostgresBin() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    std::string bin = e.path().string() + "/bin";
    if (files::Exists(bin + "/postgres") && files::Exists(bin + "/initdb")) return bin;
  }
  return "";
}

}  // namespace

PostgresServer::PostgresServer() {
  std::string bin = PostgresBin();
  struct passwd* pw = ::getpwnam("postgres");
  if (bin.empty() || !pw) {
    error_ = "PostgreSQL is not installed (scripts/install-deps.sh installs it)";
    return;
  }
  auto dir = files::MakeTempDir("hpcplane-pg");
  if (!dir.ok()) {
    error_ = dir.status().message();
    return;
  }
  dir_ = *dir;
  ::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid);
  std::string data = dir_ + "/data";
  auto init = RunProcess({"setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", bin + "/initdb", "-D",
                          data, "-U", "postgres", "--auth=trust", "--no-sync"});
  if (!init.ok() || init->exit_code != 0) {
    error_ = "initdb failed: " + (init.ok() ? init->err : init.status().message());
    return;
  }
  int port = FreeLoopbackPort();
  server_ = std::make_unique<Background>(
      std::vector<std::string>{"/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups",
                               bin + "/postgres", "-D", data, "-k", dir_, "-p", std::to_string(port), "-c",
                               "listen_addresses=", "-c", "fsync=off"},
      dir_ + "/postgres.log");
  std::string url = "postgresql:///postgres?host=" + dir_ + "&port=" + std::to_string(port) + "&user=postgres";
  // The socket appears before the server accepts connections ("the database system is
  // starting up"): ready is when a connection would be accepted.
  if (!WaitFor([&] { return PQping(url.c_str()) == PQPING_OK; }, std::chrono::seconds(30))) {
    error_ = "postgres did not start: " + server_->Log();
    return;
  }
  url_ = url;
}

PostgresServer::~PostgresServer() {
  server_.reset();  // SIGTERM: a clean shutdown
  if (!dir_.empty()) (void)files::RemoveAll(dir_);
}

}  // namespace hpc::testkit
