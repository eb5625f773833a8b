#include <libpq-fe.h>

#include <mutex>

#include "controlplane/db.h"

namespace hpc::cp {
namespace {

class PostgresDb : public Db {
 public:
  explicit PostgresDb(PGconn* c) : conn_(c) {}
  ~PostgresDb() override { PQfinish(conn_); }
  const char* engine() const override { return "postgres"; }

  Status ExecScript(const std::string& sql) override {
    std::lock_guard<std::mutex> l(mu_);
    PGresult* r = PQexec(conn_, sql.c_str());
    Status s = Check(r);
    PQclear(r);
    return s;
  }

  Status Query(const std::string& sql, const std::vector<SqlValue>& params,
               const std::function<bool(const SqlRow&)>& row) override {
    std::lock_guard<std::mutex> l(mu_);
    return QueryLocked(sql, params, row);
  }

  Status ExecBatch(const std::string& sql, const std::vector<std::vector<SqlValue>>& params) override {
    std::lock_guard<std::mutex> l(mu_);
    RETURN_IF_ERROR(QueryLocked("BEGIN", {}, nullptr));
    for (const auto& p : params) {
      Status s = QueryLocked(sql, p, nullptr);
      if (!s.ok()) {
        (void)QueryLocked("ROLLBACK", {}, nullptr);
        return s;
      }
    }
    return QueryLocked("COMMIT", {}, nullptr);
  }

 private:
  Status Check(PGresult* r) {
    auto st = PQresultStatus(r);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return Status::Ok();
    std::string msg = PQresultErrorMessage(r);
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return Status::Errorf("postgres: {}", msg);
  }

  Status QueryLocked(const std::string& sql, const std::vector<SqlValue>& params,
                     const std::function<bool(const SqlRow&)>& row) {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    PGresult* r = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                               nullptr, 0);
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

  PGconn* conn_;
  std::mutex mu_;
};

}  // namespace

Result<std::unique_ptr<Db>> OpenPostgres(const std::string& url) {
  PGconn* c = PQconnectdb(url.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(c);
    PQfinish(c);
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return Status::Errorf("postgres: cannot connect: {}", msg);
  }
  return std::unique_ptr<Db>(std::make_unique<PostgresDb>(c));
}

}  // namespace hpc::cp
