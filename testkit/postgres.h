// A real PostgreSQL server for tests: initdb into a temp dir, listening on a Unix socket only,
// run as the postgres user, removed at the end.
#pragma once

#include <memory>
#include <string>

#include "testkit/processes.h"

namespace hpc::testkit {

class PostgresServer {
 public:
  PostgresServer();
  ~PostgresServer();
  bool ok() const { return !url_.empty(); }
  const std::string& url() const { return url_; }  // a libpq connection URL
  const std::string& error() const { return error_; }

 private:
  std::string dir_, url_, error_;
  std::unique_ptr<Background> server_;
};

}  // namespace hpc::testkit
