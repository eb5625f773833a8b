#include "server/db.h"

#include <chrono>

namespace hpc::cp {

Db::Db(DbEngine engine) : engine_(std::move(engine)) {}
Db::~Db() = default;

size_t Db::open_connections() const {
  std::lock_guard<std::mutex> l(mu_);
  return open_;
}

Result<std::unique_ptr<DbConnection>> Db::Acquire() {
  std::unique_lock<std::mutex> l(mu_);
  freed_.wait(l, [&] { return !idle_.empty() || open_ < engine_.max_connections; });
  if (!idle_.empty()) {
    auto c = std::move(idle_.back());
    idle_.pop_back();
    return c;
  }
  ++open_;
  l.unlock();
  auto c = engine_.open();
  if (!c.ok()) {
    std::lock_guard<std::mutex> g(mu_);
    --open_;
    freed_.notify_one();
  }
  return c;
}

void Db::Release(std::unique_ptr<DbConnection> c) {
  std::lock_guard<std::mutex> l(mu_);
  if (c->Broken()) {
    --open_;  // the next caller opens a fresh one
  } else {
    idle_.push_back(std::move(c));
  }
  freed_.notify_one();
}

Status Db::WithConnection(const std::function<Status(DbConnection&)>& body) {
  const auto start = std::chrono::steady_clock::now();
  auto c = Acquire();
  Status s = c.ok() ? body(**c) : c.status();
  if (c.ok()) Release(std::move(*c));
  if (observer_) observer_(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), s.ok());
  return s;
}

Status Db::ExecScript(const std::string& sql) {
  return WithConnection([&](DbConnection& c) { return c.ExecScript(sql); });
}

Status Db::Query(const std::string& sql, const std::vector<SqlValue>& params, const RowSink& row) {
  return WithConnection([&](DbConnection& c) { return c.Query(sql, params, row); });
}

Status Db::Transaction(const std::function<Status(DbConnection&)>& body) {
  return WithConnection([&](DbConnection& c) {
    RETURN_IF_ERROR(c.ExecScript(engine_.begin_write));
    Status s = body(c);
    if (s.ok()) s = c.ExecScript("COMMIT");
    if (!s.ok()) (void)c.ExecScript("ROLLBACK");
    return s;
  });
}

Status Db::SchemaTransaction(const std::function<Status(DbConnection&)>& body) {
  return Transaction([&](DbConnection& c) {
    if (!engine_.schema_lock.empty()) RETURN_IF_ERROR(c.ExecScript(engine_.schema_lock));
    return body(c);
  });
}

Status Db::ExecBatch(const std::string& sql, const std::vector<std::vector<SqlValue>>& params) {
  return Transaction([&](DbConnection& c) {
    for (const auto& p : params) RETURN_IF_ERROR(c.Query(sql, p, nullptr));
    return Status::Ok();
  });
}

}  // namespace hpc::cp
