#include <libpq-fe.h>

#include "server/db.h"

namespace hpc::cp {
namespace {

class PostgresConnection : public DbConnection {
 public:
  explicit PostgresConnection(PGconn* c) : conn_(c) {}
  ~PostgresConnection() override { PQfinish(conn_); }

  Status ExecScript(const std::string& sql) override {
    PGresult* r = PQexec(conn_, sql.c_str());
    Status s = Check(r);
    PQclear(r);
    return s;
  }

  Status Query(const std::string& sql, const std::vector<SqlValue>& params, const RowSink& row) override {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    PGresult* r =
        PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0);
    Status s = Check(r);
    if (s.ok() && row) {
      int rows = PQntuples(r), cols = PQnfields(r);
      for (int i = 0; i < rows; ++i) {
        SqlRow out;
        for (int c = 0; c < cols; ++c) {
          out.push_back(PQgetisnull(r, i, c) ? std::nullopt : SqlValue(std::string(PQgetvalue(r, i, c))));
        }
        if (!row(out)) break;
      }
    }
    PQclear(r);
    return s;
  }

  bool Broken() const override { return PQstatus(conn_) != CONNECTION_OK; }

 private:
  Status Check(PGresult* r) {
    auto st = PQresultStatus(r);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return Status::Ok();
    std::string msg = r ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return Status::Errorf("postgres: {}", msg);
  }

  PGconn* conn_;
};

Result<std::unique_ptr<DbConnection>> OpenPostgresConnection(const std::string& url) {
  PGconn* c = PQconnectdb(url.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(c);
    PQfinish(c);
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return Status::Errorf("postgres: cannot connect: {}", msg);
  }
  // NOTICEs ("relation already exists, skipping") are the server talking to itself, not news.
  PQsetNoticeProcessor(
      c, [](void*, const char*) {}, nullptr);
  return std::unique_ptr<DbConnection>(std::make_unique<PostgresConnection>(c));
}

}  // namespace

Result<std::unique_ptr<Db>> OpenPostgres(const std::string& url) {
  DbEngine e;
  e.name = "postgres";
  e.begin_write = "BEGIN";
  // Held to the end of the migration transaction: a second server starting at the same time
  // waits, then finds the migrations applied.
  e.schema_lock = "SELECT pg_advisory_xact_lock(7085016)";
  e.max_connections = 8;
  e.open = [url] { return OpenPostgresConnection(url); };
  auto db = std::make_unique<Db>(std::move(e));
  RETURN_IF_ERROR(db->ExecScript("SELECT 1"));  // an unreachable server fails now, not at the first request
  return db;
}

}  // namespace hpc::cp
