// PostgreSQL's half of store backups (store_backup.h): pg_dump's custom format, pg_restore in one
// transaction, and both tools' plain data output (COPY blocks) to count and digest the rows on
// each side. The connection reaches the tools through libpq's environment variables (PGHOST,
// PGPASSWORD...), never their command lines, which every user of the host can read.
#include <libpq-fe.h>

#include <algorithm>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "common/subprocess.h"
#include "server/store.h"
#include "server/store_backup_internal.h"

namespace hpc::cp::backup {
namespace {

constexpr auto kToolTimeout = std::chrono::hours(6);

struct Connection {
  std::map<std::string, std::string> env;  // libpq's variables for the URL's parts
  std::string dbname;
};

Result<Connection> ConnectionOf(const std::string& url) {
  char* err = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &err);
  if (!options) {
    std::string why = err ? err : "out of memory";
    PQfreemem(err);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return Status::InvalidArgument("store", "a PostgreSQL URL libpq cannot read: " + why);
  }
  Connection c;
  for (PQconninfoOption* o = options; o->keyword; ++o) {
    if (!o->val || !*o->val) continue;
    if (o->envvar) c.env[o->envvar] = o->val;
    if (std::string(o->keyword) == "dbname") c.dbname = o->val;
    if (std::string(o->keyword) == "user" && c.dbname.empty()) c.dbname = o->val;
  }
  PQconninfoFree(options);
  if (c.dbname.empty())
    return Status::InvalidArgument("store", "the PostgreSQL URL names no database (postgres://HOST/DB)");
  return c;
}

// Runs a PostgreSQL client tool; its output, or an error with what it said.
Result<std::string> RunTool(const std::string& what, std::vector<std::string> argv, const Connection& c) {
  RunOptions ro;
  ro.timeout = kToolTimeout;
  ro.extra_env = c.env;
  auto r = RunProcess(argv, ro);
  if (!r.ok()) {
    return Status::FailedPrecondition(fmt::format("{}: cannot run {} (Debian: the postgresql-client package): {}", what,
                                                  argv[0], r.status().message()));
  }
  if (r->exit_code != 0) {
    std::string err = r->err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    return Status::Errorf("{}: {} failed: {}", what, argv[0], err.substr(0, 2000));
  }
  return std::move(r->out);
}

// The COPY blocks of pg_dump's (or pg_restore's) plain output, table by table: each line between
// "COPY schema.table (...) FROM stdin;" and "\." is a row, as the server's COPY writes it.
BackupContents ParseCopyBlocks(const std::string& sql) {
  BackupContents out;
  std::istringstream in(sql);
  std::string line, table;
  RowDigest digest;
  while (std::getline(in, line)) {
    if (table.empty()) {
      if (line.rfind("COPY ", 0) != 0) continue;
      std::string name = line.substr(5, line.find_first_of(" (", 5) - 5);
      table = name.substr(name.rfind('.') + 1);
      digest = RowDigest();
    } else if (line == "\\.") {
      out.tables.push_back(digest.Done(table));
      table.clear();
    } else {
      digest.Add(line);
      if (table == "schema_migrations")
        out.schema_version = MaxVersion(out.schema_version, line.substr(0, line.find('\t')));
    }
  }
  std::sort(out.tables.begin(), out.tables.end(), [](const auto& a, const auto& b) { return a.table < b.table; });
  return out;
}

Status DropStoreTables(const std::string& url) {
  ASSIGN_OR_RETURN(auto db, OpenPostgres(url));
  std::string sql;
  for (const auto& t : StoreTableNames()) sql += fmt::format("DROP TABLE IF EXISTS {} CASCADE;\n", t);
  return db->Transaction([&](DbConnection& c) { return c.ExecScript(sql); });
}

}  // namespace

EngineOps PostgresOps(const std::string& url) {
  EngineOps ops;
  ops.name = "postgres";
  ops.store_tables = [url]() -> Result<std::vector<TableRows>> {
    ASSIGN_OR_RETURN(Connection c, ConnectionOf(url));
    ASSIGN_OR_RETURN(std::string data, RunTool("store", {"pg_dump", "--data-only", "--format=plain"}, c));
    return ParseCopyBlocks(data).tables;
  };
  ops.write_backup = [url](const std::string& file) -> Status {
    ASSIGN_OR_RETURN(Connection c, ConnectionOf(url));
    return RunTool("backup", {"pg_dump", "--format=custom", "--file=" + file}, c).status();
  };
  ops.read_backup = [url](const std::string& file) -> Result<BackupContents> {
    ASSIGN_OR_RETURN(Connection c, ConnectionOf(url));
    ASSIGN_OR_RETURN(std::string data, RunTool("backup " + file, {"pg_restore", "--data-only", "--file=-", file}, c));
    return ParseCopyBlocks(data);
  };
  ops.load_backup = [url](const std::string& file) -> Status {
    ASSIGN_OR_RETURN(Connection c, ConnectionOf(url));
    // The store's tables go first (a newer schema's too, which the backup would not replace);
    // then the backup's, in one transaction: on failure the store is left without tables, and
    // the next server start migrates it afresh.
    RETURN_IF_ERROR(DropStoreTables(url));
    return RunTool("restore",
                   {"pg_restore", "--single-transaction", "--exit-on-error", "--no-owner", "--no-privileges",
                    "--dbname=" + c.dbname, file},
                   c)
        .status();
  };
  return ops;
}

}  // namespace hpc::cp::backup
