// PostgreSQL's half of store backups (store_backup.h): pg_dump's custom format of the store's
// tables (only hpcplane's: a database may hold others), a restore as one psql transaction that
// drops the store's tables and runs pg_restore's script, and both tools' plain data output (COPY
// blocks) to count and digest the rows on each side. The connection reaches the tools through
// libpq's environment variables (PGHOST, PGPASSWORD...), never their command lines, which every
// user of the host can read. Their output goes through files in a private temporary directory,
// read line by line: a store of millions of jobs is never held in memory.
#include <libpq-fe.h>

#include <algorithm>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "common/files.h"
#include "common/subprocess.h"
#include "server/store.h"
#include "server/store_backup_internal.h"

namespace hpc::cp::backup {
namespace {

constexpr auto kToolTimeout = std::chrono::hours(6);

struct Connection {
  std::map<std::string, std::string> env;  // libpq's variables for the URL's parts
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
    if (o->val && *o->val && o->envvar) c.env[o->envvar] = o->val;
  }
  PQconninfoFree(options);
  return c;
}

// A private directory for the tools' files, removed with it.
class Scratch {
 public:
  static Result<Scratch> Make() {
    ASSIGN_OR_RETURN(std::string dir, files::MakeTempDir("hpcplane-pg"));
    return Scratch(dir);
  }
  Scratch(Scratch&& other) noexcept : dir_(std::move(other.dir_)) { other.dir_.clear(); }
  Scratch(const Scratch&) = delete;
  ~Scratch() {
    if (!dir_.empty()) (void)files::RemoveAll(dir_);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  explicit Scratch(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

// Runs a PostgreSQL client tool; an error with what it said when it fails.
Result<std::string> RunTool(const std::string& what, const std::vector<std::string>& argv, const Connection& c) {
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

// pg_dump's selection of the store's tables.
std::vector<std::string> StoreTablesOnly() {
  std::vector<std::string> out;
  for (const auto& t : StoreTableNames()) out.push_back("--table=" + t);
  return out;
}

// The COPY blocks of pg_dump's (or pg_restore's) plain output in `file`, table by table: each
// line between "COPY schema.table (...) FROM stdin;" and "\." is a row, as the server's COPY
// writes it.
Result<BackupContents> ParseCopyBlocks(const std::string& file) {
  std::ifstream in(file);
  if (!in) return Status::Errorf("read {}", file);
  BackupContents out;
  std::string line, table;
  RowDigest digest;
  while (std::getline(in, line)) {
    if (table.empty()) {
      if (line.rfind("COPY ", 0) != 0) continue;
      const std::string name = line.substr(5, line.find_first_of(" (", 5) - 5);
      table = name.substr(name.rfind('.') + 1);
      digest = RowDigest();
    } else if (line == "\\.") {
      out.tables.push_back(digest.Done(table));
      table.clear();
    } else {
      digest.Add(line);
      if (table == "schema_migrations") {
        out.schema_version = MaxVersion(out.schema_version, line.substr(0, line.find('\t')));
      }
    }
  }
  std::sort(out.tables.begin(), out.tables.end(), [](const auto& a, const auto& b) { return a.table < b.table; });
  return out;
}

Result<std::vector<TableRows>> PgStoreTables(const std::string& url) {
  ASSIGN_OR_RETURN(Connection c, ConnectionOf(url));
  ASSIGN_OR_RETURN(Scratch scratch, Scratch::Make());
  std::vector<std::string> argv = {"pg_dump", "--data-only", "--format=plain", "--file=" + scratch.Path("data.sql")};
  for (const auto& t : StoreTablesOnly()) argv.push_back(t);
  auto dumped = RunTool("store", argv, c);
  // A database without the store's tables (not migrated yet) holds none of its rows.
  if (!dumped.ok() && dumped.status().message().find("no matching tables") != std::string::npos) {
    return std::vector<TableRows>{};
  }
  RETURN_IF_ERROR(dumped.status());
  ASSIGN_OR_RETURN(BackupContents contents, ParseCopyBlocks(scratch.Path("data.sql")));
  return contents.tables;
}

Status PgWriteBackup(const std::string& url, const std::string& file) {
  ASSIGN_OR_RETURN(Connection c, ConnectionOf(url));
  std::vector<std::string> argv = {"pg_dump", "--format=custom", "--file=" + file};
  for (const auto& t : StoreTablesOnly()) argv.push_back(t);
  auto dumped = RunTool("backup", argv, c);
  if (!dumped.ok() && dumped.status().message().find("no matching tables") != std::string::npos) {
    return Status::FailedPrecondition("no hpcplane store there to back up (none of its tables)");
  }
  return dumped.status();
}

Result<BackupContents> PgReadBackup(const std::string& url, const std::string& file) {
  ASSIGN_OR_RETURN(Connection c, ConnectionOf(url));
  ASSIGN_OR_RETURN(Scratch scratch, Scratch::Make());
  RETURN_IF_ERROR(
      RunTool("backup " + file, {"pg_restore", "--data-only", "--file=" + scratch.Path("data.sql"), file}, c).status());
  return ParseCopyBlocks(scratch.Path("data.sql"));
}

// One transaction: the store's tables dropped (a newer schema's too, which the backup would not
// replace), then the backup's script; any error rolls all of it back.
Status PgLoadBackup(const std::string& url, const std::string& file) {
  ASSIGN_OR_RETURN(Connection c, ConnectionOf(url));
  ASSIGN_OR_RETURN(Scratch scratch, Scratch::Make());
  std::string drops;
  for (const auto& t : StoreTableNames()) drops += fmt::format("DROP TABLE IF EXISTS public.{} CASCADE;\n", t);
  RETURN_IF_ERROR(files::WriteAtomic(scratch.Path("drop.sql"), drops, 0600));
  RETURN_IF_ERROR(
      RunTool("restore", {"pg_restore", "--no-owner", "--no-privileges", "--file=" + scratch.Path("restore.sql"), file},
              c)
          .status());
  return RunTool("restore",
                 {"psql", "--no-psqlrc", "--quiet", "--set=ON_ERROR_STOP=1", "--single-transaction",
                  "--file=" + scratch.Path("drop.sql"), "--file=" + scratch.Path("restore.sql")},
                 c)
      .status();
}

}  // namespace

EngineOps PostgresOps(const std::string& url) {
  EngineOps ops;
  ops.name = "postgres";
  ops.store_tables = [url] { return PgStoreTables(url); };
  ops.write_backup = [url](const std::string& file) { return PgWriteBackup(url, file); };
  ops.read_backup = [url](const std::string& file) { return PgReadBackup(url, file); };
  ops.load_backup = [url](const std::string& file) { return PgLoadBackup(url, file); };
  return ops;
}

}  // namespace hpc::cp::backup
