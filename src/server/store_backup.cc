#include "server/store_backup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "common/files.h"
#include "common/jwt.h"
#include "server/store.h"
#include "server/store_backup_internal.h"

namespace hpc::cp {

int64_t BackupSummary::Rows() const {
  int64_t n = 0;
  for (const auto& t : tables) n += t.rows;
  return n;
}

namespace backup {

void RowDigest::Add(const std::string& row) {
  sum_ += std::strtoull(jwt::Sha256Hex(row).substr(0, 16).c_str(), nullptr, 16);
  ++rows_;
}

TableRows RowDigest::Done(std::string table) const { return {std::move(table), rows_, fmt::format("{:016x}", sum_)}; }

std::string RowText(const SqlRow& row) {
  std::string out;
  for (const auto& v : row) out += v ? fmt::format("{}:{};", v->size(), *v) : std::string("null;");
  return out;
}

int MaxVersion(int current, const std::string& version) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(version.c_str(), &end, 10);
  if (version.empty() || *end != '\0' || errno != 0 || v <= 0 || v > 1000000) return current;
  return std::max(current, static_cast<int>(v));
}

Status OnlyStoreTables(const std::vector<std::string>& tables, const std::string& file) {
  const std::vector<std::string> ours = StoreTableNames();
  std::string foreign;
  for (const auto& t : tables) {
    if (std::find(ours.begin(), ours.end(), t) == ours.end()) foreign += (foreign.empty() ? "" : ", ") + t;
  }
  if (foreign.empty()) return Status::Ok();
  return Status::InvalidArgument(
      "backup", fmt::format("{} holds tables that are not hpcplane's ({}): not a backup of a store", file, foreign));
}

}  // namespace backup

namespace {

using backup::BackupContents;
using backup::EngineOps;

constexpr const char* kMigrationsTable = "schema_migrations";

EngineOps OpsFor(const std::string& store_url) {
  if (store_url.rfind("postgres://", 0) == 0 || store_url.rfind("postgresql://", 0) == 0) {
    return backup::PostgresOps(store_url);
  }
  return backup::SqliteOps(store_url.rfind("sqlite:", 0) == 0 ? store_url.substr(7) : store_url);
}

// The engine whose backup `file` is, by its first bytes.
Result<std::string> EngineOfFile(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("backup {}: cannot read it: {}", file, std::strerror(errno)));
  char head[16] = {};
  in.read(head, sizeof head);
  const std::string magic(head, static_cast<size_t>(in.gcount()));
  if (magic == std::string("SQLite format 3\0", 16)) return std::string("sqlite");
  if (magic.rfind("PGDMP", 0) == 0) return std::string("postgres");
  return Status::InvalidArgument(
      "backup", fmt::format("{} is neither a SQLite database nor a pg_dump archive: not a backup of a store", file));
}

// An empty file of mode 0600 in `file`'s directory, for the backup to be written into before it
// takes its name.
Result<std::string> TempFileBeside(const std::string& file) {
  std::string path = file + ".partial-XXXXXX";
  int fd = ::mkstemp(path.data());
  if (fd < 0) return Status::Errorf("backup {}: cannot create a file beside it: {}", file, std::strerror(errno));
  ::fchmod(fd, 0600);
  ::close(fd);
  return path;
}

// Gives the finished backup its name, durably; `file` must not have appeared meanwhile.
Status Commit(const std::string& tmp, const std::string& file) {
  int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    if (fd >= 0) ::close(fd);
    return Status::Errorf("backup {}: sync: {}", file, std::strerror(errno));
  }
  ::close(fd);
  // link() fails when the name exists: a backup never replaces a file.
  if (::link(tmp.c_str(), file.c_str()) != 0) {
    return Status::Errorf("backup {}: {}", file, std::strerror(errno));
  }
  ::unlink(tmp.c_str());
  const std::string dir = std::filesystem::path(file).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

// "jobs 1,204, tokens 3": the tables that hold rows, the migrations' own bookkeeping aside.
std::string DescribeRows(const std::vector<TableRows>& tables, int64_t* total) {
  std::string out;
  *total = 0;
  for (const auto& t : tables) {
    if (t.table == kMigrationsTable || t.rows == 0) continue;
    *total += t.rows;
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", t.table, t.rows);
  }
  return out;
}

// The restored store holds exactly the backup's rows, table by table.
Status Verify(const std::vector<TableRows>& expected, const std::vector<TableRows>& restored) {
  std::map<std::string, TableRows> got;
  for (const auto& t : restored) got[t.table] = t;
  for (const auto& want : expected) {
    auto it = got.find(want.table);
    const int64_t rows = it == got.end() ? 0 : it->second.rows;
    if (rows != want.rows) {
      return Status::Internal(
          fmt::format("restore not verified: table {} holds {} rows, the backup {}", want.table, rows, want.rows));
    }
    if (rows > 0 && it->second.digest != want.digest) {
      return Status::Internal(
          fmt::format("restore not verified: table {} holds {} rows, as many as the backup, but not the same ones",
                      want.table, rows));
    }
    if (it != got.end()) got.erase(it);
  }
  for (const auto& [name, t] : got) {
    if (t.rows > 0) {
      return Status::Internal(
          fmt::format("restore not verified: table {} holds {} rows the backup does not have", name, t.rows));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<BackupSummary> BackupStore(const std::string& store_url, const std::string& file) {
  if (file.empty()) return Status::InvalidArgument("file", "name the file to write the backup to");
  if (files::Exists(file)) {
    return Status::AlreadyExists(fmt::format("backup {}: the file exists; a backup never replaces a file", file));
  }
  const EngineOps ops = OpsFor(store_url);
  ASSIGN_OR_RETURN(std::string tmp, TempFileBeside(file));
  Status wrote = ops.write_backup(tmp);
  // What was written, read back whole.
  Result<BackupContents> written = wrote.ok() ? ops.read_backup(tmp) : Result<BackupContents>(wrote);
  if (written.ok() && written->schema_version <= 0) {
    written = Status::FailedPrecondition(fmt::format("no hpcplane store there to back up (no schema_migrations)"));
  }
  Status committed = written.ok() ? Commit(tmp, file) : written.status();
  if (!committed.ok()) {
    ::unlink(tmp.c_str());
    return committed;
  }
  BackupSummary s;
  s.engine = ops.name;
  s.file = file;
  s.schema_version = written->schema_version;
  s.tables = std::move(written->tables);
  s.bytes = FileSize(file);
  return s;
}

Result<BackupSummary> RestoreStore(const std::string& store_url, const std::string& file, bool force) {
  const EngineOps ops = OpsFor(store_url);
  ASSIGN_OR_RETURN(std::string engine, EngineOfFile(file));
  if (engine != ops.name) {
    return Status::InvalidArgument(
        "backup", fmt::format("{} is a {} backup; this store is {} (a backup restores into a store of its engine)",
                              file, engine, ops.name));
  }
  ASSIGN_OR_RETURN(BackupContents contents, ops.read_backup(file));
  std::vector<std::string> names;
  for (const auto& t : contents.tables) names.push_back(t.table);
  RETURN_IF_ERROR(backup::OnlyStoreTables(names, file));
  if (contents.schema_version <= 0) {
    return Status::InvalidArgument("backup", fmt::format("{} holds no hpcplane store (no schema_migrations)", file));
  }
  if (contents.schema_version > StoreSchemaVersion()) {
    return Status::FailedPrecondition(
        fmt::format("{} is of schema version {}, made by a newer hpcplane; this one knows versions up to {}", file,
                    contents.schema_version, StoreSchemaVersion()));
  }
  ASSIGN_OR_RETURN(std::vector<TableRows> current, ops.store_tables());
  int64_t held = 0;
  const std::string what = DescribeRows(current, &held);
  BackupSummary s;
  if (held > 0) {
    if (!force) {
      return Status::FailedPrecondition(
          fmt::format("the store holds {} row{} already ({}); restore over {} with --force (backed up first)", held,
                      held == 1 ? "" : "s", what, held == 1 ? "it" : "them"));
    }
    ASSIGN_OR_RETURN(BackupSummary kept, BackupStore(store_url, fmt::format("{}.replaced-{}", file,
                                                                            static_cast<int64_t>(std::time(nullptr)))));
    s.replaced = kept.file;
  }
  Status loaded = ops.load_backup(file);
  Result<std::vector<TableRows>> restored = loaded.ok() ? ops.store_tables() : Result<std::vector<TableRows>>(loaded);
  Status verified = restored.ok() ? Verify(contents.tables, *restored) : restored.status();
  if (!verified.ok()) {
    // The engines load in one transaction: a failed load changed nothing; a load that does not
    // verify is in place, and what it replaced is where the message says.
    return Status::Error(
        verified.message() +
        (loaded.ok() ? "; the backup's rows are in the store as restored" : "; the store is as it was") +
        (s.replaced.empty() ? "" : fmt::format(" (its earlier rows: {})", s.replaced)));
  }
  s.engine = ops.name;
  s.file = file;
  s.schema_version = contents.schema_version;
  s.tables = std::move(contents.tables);
  s.bytes = FileSize(file);
  return s;
}

}  // namespace hpc::cp
