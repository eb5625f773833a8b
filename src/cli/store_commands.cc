#include "cli/store_commands.h"

#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "app/control_plane_process.h"
#include "server/store_backup.h"

namespace hpc::cli {
namespace {

struct StoreArgs {
  std::string file, store;
  bool force = false;
};

void PrintTables(const cp::BackupSummary& s) {
  std::cout << fmt::format("  {:<20} {:>12}  {}\n", "TABLE", "ROWS", "DIGEST");
  for (const auto& t : s.tables) std::cout << fmt::format("  {:<20} {:>12}  {}\n", t.table, t.rows, t.digest);
}

// The store as it may be shown: a SQLite file's path; never a PostgreSQL URL (it may hold a password).
std::string Shown(const std::string& url) {
  if (url.rfind("postgres", 0) == 0) return "PostgreSQL store";
  return "store " + (url.rfind("sqlite:", 0) == 0 ? url.substr(7) : url);
}

int CmdBackup(const std::string& store, const StoreArgs& a) {
  auto s = cp::BackupStore(store, a.file);
  if (!s.ok()) return Fail(s.status());
  std::cout << fmt::format("backup {} of the {}: schema version {}, {} rows in {} tables, {} bytes\n", s->file,
                           Shown(store), s->schema_version, s->Rows(), s->tables.size(), s->bytes);
  PrintTables(*s);
  return 0;
}

int CmdRestore(const Globals& g, const std::string& store, const StoreArgs& a) {
  auto s = cp::RestoreStore(store, a.file, a.force);
  if (!s.ok()) return Fail(s.status());
  if (!s->replaced.empty()) std::cout << "the store's earlier rows were backed up to " << s->replaced << "\n";
  std::cout << fmt::format(
      "restored {} into the {}: schema version {}, {} rows in {} tables, verified (each table holds the "
      "backup's rows)\n",
      s->file, Shown(store), s->schema_version, s->Rows(), s->tables.size());
  PrintTables(*s);
  std::cout << "API tokens are the backup's now: an admin token of this host that is not among them no longer "
               "signs in (remove "
            << g.state_dir << "/controlplane/admin.token before the server starts for a new one).\n";
  return 0;
}

}  // namespace

std::function<int()> AddStoreCommands(CLI::App* server, const std::string* server_store, Globals& g) {
  auto args = std::make_shared<StoreArgs>();
  const std::string store_help =
      "sqlite:PATH (default: server's --store, else under the state dir) or postgres://... (env HPCPLANE_STORE)";
  auto* backup = server->add_subcommand("backup", "Back the control plane's store up into FILE (a new file, 0600)");
  backup->add_option("file", args->file, "The backup to write (must not exist)")->required();
  backup->add_option("--store", args->store, store_help)->envname("HPCPLANE_STORE");
  auto* restore = server->add_subcommand(
      "restore", "Restore a backup into the store, verified (stop the control plane's servers first)");
  restore->add_option("file", args->file, "The backup to restore")->required()->check(CLI::ExistingFile);
  restore->add_option("--store", args->store, store_help)->envname("HPCPLANE_STORE");
  restore->add_flag("--force", args->force,
                    "Restore over a store that holds rows (they are backed up to FILE.replaced-TIME first)");
  return [=, &g]() -> int {
    const std::string store = app::StoreUrlOf(g.state_dir, args->store.empty() ? *server_store : args->store);
    if (backup->parsed()) return CmdBackup(store, *args);
    if (restore->parsed()) return CmdRestore(g, store, *args);
    return -1;
  };
}

}  // namespace hpc::cli
