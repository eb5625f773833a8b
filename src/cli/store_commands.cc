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

int CmdBackup(const Globals& g, const StoreArgs& a) {
  auto s = cp::BackupStore(app::StoreUrlOf(g.state_dir, a.store), a.file);
  if (!s.ok()) return Fail(s.status());
  std::cout << fmt::format("backup {}: the {} store, schema version {}, {} rows in {} tables, {} bytes\n", s->file,
                           s->engine, s->schema_version, s->Rows(), s->tables.size(), s->bytes);
  PrintTables(*s);
  return 0;
}

int CmdRestore(const Globals& g, const StoreArgs& a) {
  auto s = cp::RestoreStore(app::StoreUrlOf(g.state_dir, a.store), a.file, a.force);
  if (!s.ok()) return Fail(s.status());
  if (!s->replaced.empty()) std::cout << "the store's earlier rows were backed up to " << s->replaced << "\n";
  std::cout << fmt::format(
      "restored {} into the {} store: schema version {}, {} rows in {} tables, verified (each table holds the "
      "backup's rows)\n",
      s->file, s->engine, s->schema_version, s->Rows(), s->tables.size());
  PrintTables(*s);
  std::cout << "API tokens are the backup's now: an admin token of this host that is not among them no longer "
               "signs in (remove "
            << g.state_dir << "/controlplane/admin.token before the server starts for a new one).\n";
  return 0;
}

}  // namespace

std::function<int()> AddStoreCommands(CLI::App* server, Globals& g) {
  auto args = std::make_shared<StoreArgs>();
  const std::string store_help = "sqlite:PATH (default under the state dir) or postgres://...";
  auto* backup = server->add_subcommand("backup", "Back the control plane's store up into FILE (a new file, 0600)");
  backup->add_option("file", args->file, "The backup to write (must not exist)")->required();
  backup->add_option("--store", args->store, store_help);
  auto* restore = server->add_subcommand(
      "restore", "Restore a backup into the store, verified (stop the control plane's servers first)");
  restore->add_option("file", args->file, "The backup to restore")->required()->check(CLI::ExistingFile);
  restore->add_option("--store", args->store, store_help);
  restore->add_flag("--force", args->force,
                    "Restore over a store that holds rows (they are backed up to FILE.replaced-TIME first)");
  return [=, &g]() -> int {
    if (backup->parsed()) return CmdBackup(g, *args);
    if (restore->parsed()) return CmdRestore(g, *args);
    return -1;
  };
}

}  // namespace hpc::cli
