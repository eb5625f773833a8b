// Backups of the control plane's store, made and restored with each engine's own tools: SQLite's
// online backup API (a consistent copy of a store in use, into one self-contained database
// file), PostgreSQL's pg_dump (custom format) and pg_restore. The store keeps every job's
// statistics for good; these are what an admin keeps it with (`hpcplane server backup|restore`).
//
// Both directions report each table's rows and an order-independent digest of them. A restore
// is verified before it reports success: the restored store must hold exactly the backup's rows,
// table by table (for PostgreSQL, compared as pg_dump writes them). A restore refuses
//  - a file that is no backup of this engine, or one that a newer hpcplane made (a schema this
//    binary does not know);
//  - a store that holds rows already, unless forced; then the store's content is first backed
//    up next to the file restored (`<file>.replaced-<unix time>`), so nothing is lost.
// Stop the control plane's servers before a restore: they would keep writing over it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace hpc::cp {

struct TableRows {
  std::string table;
  int64_t rows = 0;
  std::string digest;  // of its rows, in any order (16 hex digits)
  bool operator==(const TableRows&) const = default;
};

struct BackupSummary {
  std::string engine;             // "sqlite" | "postgres"
  std::string file;               // the backup written or restored
  int schema_version = 0;         // of the store in it
  std::vector<TableRows> tables;  // by name
  int64_t bytes = 0;              // the backup file's size
  std::string replaced;           // restore --force: where the store's earlier content went
  int64_t Rows() const;
};

// Writes a backup of the store at `store_url` (sqlite:PATH, PATH or postgres://...) to `file`,
// which must not exist (mode 0600: it holds token digests and every user's jobs).
Result<BackupSummary> BackupStore(const std::string& store_url, const std::string& file);

// Restores `file` (from BackupStore, same engine) into the store at `store_url`. `force`: over
// a store holding rows (kept first, see above); without it, FailedPrecondition naming them.
Result<BackupSummary> RestoreStore(const std::string& store_url, const std::string& file, bool force);

}  // namespace hpc::cp
