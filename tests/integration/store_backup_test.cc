// `hpcplane server backup` and `restore` (server/store_backup.h), the real binary against SQLite
// files and real PostgreSQL servers: a backup restored into a fresh store gives the same rows; a
// restore refuses what it must (a store holding rows, a damaged file, another engine's backup, a
// newer schema) and changes nothing then; --force keeps what it replaces.
#include <sys/stat.h>

#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "common/files.h"
#include "common/subprocess.h"
#include "server/db.h"
#include "server/store.h"
#include "testkit/postgres.h"

namespace hpc::it {
namespace {

using testkit::PostgresServer;

constexpr int kJobs = 2000;

cp::JobRecord Job(int64_t id) {
  cp::JobRecord j;
  j.data_plane = "dp1";
  j.cluster = "c1";
  j.job_id = id;
  j.submit_time = 1700000000 + id;
  j.name = "train\t" + std::to_string(id) + "\nline two \\ done";  // COPY escapes these
  j.user = id % 2 ? "ann" : "bob";
  j.project = "astro";
  j.state = "COMPLETED";
  j.exit_code = "0:0";
  j.elapsed_seconds = id;
  j.tres = "cpu=1,node=1";
  return j;
}

ProcessResult Hpcplane(const std::string& state_dir, std::vector<std::string> args,
                       std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), {HPCPLANE_BIN, "--state-dir", state_dir});
  RunOptions ro;
  ro.extra_env = std::move(env);
  ro.timeout = std::chrono::minutes(5);
  auto r = RunProcess(args, ro);
  if (r.ok()) return *r;
  ProcessResult failed;
  failed.err = r.status().message();
  return failed;
}

// The one number `sql` selects, or -1.
int64_t CountOf(cp::Db& db, const std::string& sql) {
  int64_t n = -1;
  Status s = db.Query(sql, {}, [&](const cp::SqlRow& r) {
    n = std::stoll(r[0].value_or("-1"));
    return false;
  });
  return s.ok() ? n : -1;
}

class StoreBackup : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto dir = files::MakeTempDir("hpcplane-backup");
    ASSERT_TRUE(dir.ok());
    dir_ = *dir;
  }
  void TearDown() override {
    servers_.clear();
    (void)files::RemoveAll(dir_);
  }
  // A fresh, empty store of the engine: its URL.
  std::string NewStore(const std::string& name) {
    if (GetParam() == "sqlite") return "sqlite:" + dir_ + "/" + name + ".db";
    servers_.push_back(std::make_unique<PostgresServer>());
    EXPECT_TRUE(servers_.back()->ok()) << servers_.back()->error();
    return servers_.back()->url();
  }
  // A store holding kJobs jobs from `first`, a flag and a token.
  std::string FilledStore(const std::string& name, int64_t first) {
    const std::string url = NewStore(name);
    auto store = cp::OpenStore(url);
    EXPECT_TRUE(store.ok()) << store.status().message();
    if (!store.ok()) return url;
    std::vector<cp::JobRecord> jobs;
    for (int64_t id = first; id < first + kJobs; ++id) jobs.push_back(Job(id));
    EXPECT_TRUE((*store)->UpsertJobs(jobs).ok());
    EXPECT_TRUE((*store)->SetFlag("EnableHPCJobs", true).ok());
    cp::TokenInfo t;
    t.id = "0123456789abcdef";
    t.principal = {"ann", cp::Role::kUser, {"astro"}};
    t.created_at = 1700000000;
    EXPECT_TRUE((*store)->CreateToken("digest-of-" + name, t).ok());
    return url;
  }
  int64_t Jobs(const std::string& url) {
    auto store = cp::OpenStore(url);
    if (!store.ok()) return -1;
    auto n = (*store)->CountJobs();
    return n.ok() ? *n : -1;
  }
  std::string dir_;
  std::vector<std::unique_ptr<PostgresServer>> servers_;
};

TEST_P(StoreBackup, ARestoreIntoAFreshStoreGivesTheSameRows) {
  const std::string source = FilledStore("source", 1);
  const std::string file = dir_ + "/cp.backup";
  auto made = Hpcplane(dir_, {"server", "backup", file, "--store", source});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("jobs"), std::string::npos) << made.out;
  EXPECT_NE(made.out.find(std::to_string(kJobs)), std::string::npos) << made.out;
  struct stat st;
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "token digests and every user's jobs";
  for (const auto& name : files::ListDir(dir_)) EXPECT_EQ(name.find(".partial-"), std::string::npos) << name;
  // A backup never replaces a file.
  auto again = Hpcplane(dir_, {"server", "backup", file, "--store", source});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("exists"), std::string::npos) << again.err;
  // The store may come as the server's --store, or from the environment (off the command line).
  EXPECT_EQ(Hpcplane(dir_, {"server", "--store", source, "backup", dir_ + "/second.backup"}).exit_code, 0);
  auto by_env = Hpcplane(dir_, {"server", "backup", dir_ + "/third.backup"}, {{"HPCPLANE_STORE", source}});
  EXPECT_EQ(by_env.exit_code, 0) << by_env.err;
  EXPECT_NE(by_env.out.find(std::to_string(kJobs)), std::string::npos) << by_env.out;

  const std::string fresh = NewStore("fresh");
  auto restored = Hpcplane(dir_, {"server", "restore", file, "--store", fresh});
  ASSERT_EQ(restored.exit_code, 0) << restored.err;
  EXPECT_NE(restored.out.find("verified"), std::string::npos) << restored.out;
  auto store = cp::OpenStore(fresh);  // a server starts on it: its migrations find it current
  ASSERT_TRUE(store.ok()) << store.status().message();
  EXPECT_EQ(*(*store)->CountJobs(), kJobs);
  for (int64_t id : {1, 2, 999, kJobs}) {
    auto got = (*store)->GetJob("dp1", "c1", id, Job(id).submit_time);
    ASSERT_TRUE(got.ok() && got->has_value()) << id;
    EXPECT_EQ((*got)->name, Job(id).name);
    EXPECT_EQ((*got)->user, Job(id).user);
    EXPECT_EQ((*got)->submit_time, Job(id).submit_time);
  }
  EXPECT_TRUE((*store)->Flags()->at("EnableHPCJobs"));
  auto token = (*store)->LookupToken("digest-of-source");
  ASSERT_TRUE(token.ok() && token->has_value());
  EXPECT_EQ((*token)->principal.subject, "ann");
}

TEST_P(StoreBackup, ARestoreOverRowsNeedsForceAndKeepsThemFirst) {
  const std::string file = dir_ + "/cp.backup";
  ASSERT_EQ(Hpcplane(dir_, {"server", "backup", file, "--store", FilledStore("source", 1)}).exit_code, 0);
  const std::string target = FilledStore("target", 100000);  // other jobs
  auto refused = Hpcplane(dir_, {"server", "restore", file, "--store", target});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("jobs " + std::to_string(kJobs)), std::string::npos) << refused.err;
  {
    auto store = cp::OpenStore(target);
    ASSERT_TRUE(store.ok());
    auto kept = (*store)->GetJob("dp1", "c1", 100000, Job(100000).submit_time);
    EXPECT_TRUE(kept.ok() && kept->has_value()) << "nothing changed";
  }
  auto forced = Hpcplane(dir_, {"server", "restore", file, "--store", target, "--force"});
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  auto store = cp::OpenStore(target);
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(*(*store)->CountJobs(), kJobs);
  EXPECT_FALSE((*store)->GetJob("dp1", "c1", 100000, Job(100000).submit_time)->has_value()) << "the backup's rows only";
  EXPECT_TRUE((*store)->GetJob("dp1", "c1", 1, Job(1).submit_time)->has_value());
  store->reset();
  // What it replaced was backed up first, and restores.
  std::string replaced;
  for (const auto& name : files::ListDir(dir_)) {
    if (name.rfind("cp.backup.replaced-", 0) == 0) replaced = dir_ + "/" + name;
  }
  ASSERT_FALSE(replaced.empty()) << forced.out;
  EXPECT_NE(forced.out.find(replaced), std::string::npos) << forced.out;
  const std::string other = NewStore("other");
  ASSERT_EQ(Hpcplane(dir_, {"server", "restore", replaced, "--store", other}).exit_code, 0);
  auto back = cp::OpenStore(other);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE((*back)->GetJob("dp1", "c1", 100000, Job(100000).submit_time)->has_value());
}

TEST_P(StoreBackup, DamagedForeignAndMissingBackupsAreRefusedWithNothingChanged) {
  const std::string file = dir_ + "/cp.backup";
  ASSERT_EQ(Hpcplane(dir_, {"server", "backup", file, "--store", FilledStore("source", 1)}).exit_code, 0);
  const std::string target = FilledStore("target", 100000);
  // Cut short: the last third of it gone.
  const std::string whole = *files::Read(file);
  const std::string cut = dir_ + "/cut.backup";
  {
    std::ofstream out(cut, std::ios::binary);
    out << whole.substr(0, whole.size() * 2 / 3);
  }
  auto damaged = Hpcplane(dir_, {"server", "restore", cut, "--store", target, "--force"});
  EXPECT_NE(damaged.exit_code, 0) << damaged.out;
  EXPECT_EQ(Jobs(target), kJobs);
  // Not a backup at all.
  const std::string text = dir_ + "/notes.txt";
  ASSERT_TRUE(files::WriteAtomic(text, "hello\n").ok());
  auto foreign = Hpcplane(dir_, {"server", "restore", text, "--store", target, "--force"});
  EXPECT_NE(foreign.exit_code, 0);
  EXPECT_NE(foreign.err.find("not a backup"), std::string::npos) << foreign.err;
  // Another engine's backup.
  const std::string other_engine = GetParam() == "sqlite" ? "postgres" : "sqlite";
  const std::string wrong = dir_ + "/wrong.backup";
  ASSERT_TRUE(files::WriteAtomic(wrong, other_engine == "sqlite" ? std::string("SQLite format 3\0rest", 20)
                                                                 : std::string("PGDMP\1\16\0rest", 12))
                  .ok());
  auto engine = Hpcplane(dir_, {"server", "restore", wrong, "--store", target, "--force"});
  EXPECT_NE(engine.exit_code, 0);
  EXPECT_NE(engine.err.find("a " + other_engine + " backup"), std::string::npos) << engine.err;
  auto missing = Hpcplane(dir_, {"server", "restore", dir_ + "/none.backup", "--store", target, "--force"});
  EXPECT_NE(missing.exit_code, 0);
  auto store = cp::OpenStore(target);
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(*(*store)->CountJobs(), kJobs);
  EXPECT_TRUE((*store)->GetJob("dp1", "c1", 100000, Job(100000).submit_time)->has_value()) << "its own rows still";
}

// A database may hold other applications' tables: a backup takes only the store's, a restore
// neither counts nor touches the others; a backup holding tables that are not the store's is
// refused (another application's database is no store to restore).
TEST_P(StoreBackup, OtherTablesAreNeitherBackedUpNorCountedNorTouched) {
  const std::string source = FilledStore("source", 1);
  const std::string target = NewStore("target");
  auto sql = [](const std::string& url, const std::string& script) {
    auto db = GetParam() == "sqlite" ? cp::OpenSqlite(url.substr(7)) : cp::OpenPostgres(url);
    return db.ok() ? (*db)->ExecScript(script) : db.status();
  };
  ASSERT_TRUE(sql(target, "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('theirs');").ok());
  const std::string file = dir_ + "/cp.backup";
  if (GetParam() == "postgres") {
    ASSERT_TRUE(sql(source, "CREATE TABLE other_app (x INTEGER); INSERT INTO other_app VALUES (1);").ok());
    ASSERT_EQ(Hpcplane(dir_, {"server", "backup", file, "--store", source}).exit_code, 0);
    auto restored = Hpcplane(dir_, {"server", "restore", file, "--store", target});  // "notes" is no row of the store
    ASSERT_EQ(restored.exit_code, 0) << restored.err;
    EXPECT_EQ(restored.out.find("other_app"), std::string::npos) << restored.out;
    auto db = cp::OpenPostgres(target);
    ASSERT_TRUE(db.ok());
    EXPECT_EQ(CountOf(**db, "SELECT count(*) FROM notes"), 1) << "another application's rows stay";
    const int64_t other =
        CountOf(**db, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'other_app'");
    EXPECT_EQ(other, 0) << "nor did the source's come along";
    EXPECT_EQ(Jobs(target), kJobs);
  } else {
    // A SQLite store is a file of its own: one with another table is not a store's backup.
    ASSERT_TRUE(sql(source, "CREATE TABLE other_app (x INTEGER)").ok());
    ASSERT_EQ(Hpcplane(dir_, {"server", "backup", file, "--store", source}).exit_code, 0);
    auto refused = Hpcplane(dir_, {"server", "restore", file, "--store", target});
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_NE(refused.err.find("not hpcplane's (other_app)"), std::string::npos) << refused.err;
  }
}

// PostgreSQL: a restore that fails half way (here: an object of another application in the way
// of an index the backup creates, after the store's tables were dropped) changes nothing.
TEST_P(StoreBackup, ARestoreThatFailsHalfWayChangesNothing) {
  if (GetParam() != "postgres") GTEST_SKIP() << "SQLite's backup API replaces the file in one step";
  const std::string file = dir_ + "/cp.backup";
  ASSERT_EQ(Hpcplane(dir_, {"server", "backup", file, "--store", FilledStore("source", 1)}).exit_code, 0);
  const std::string target = FilledStore("target", 100000);
  auto db = cp::OpenPostgres(target);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->ExecScript("DROP INDEX jobs_by_end; CREATE TABLE jobs_by_end (x INTEGER);").ok());
  auto failed = Hpcplane(dir_, {"server", "restore", file, "--store", target, "--force"});
  EXPECT_NE(failed.exit_code, 0);
  EXPECT_NE(failed.err.find("the store is as it was"), std::string::npos) << failed.err;
  EXPECT_NE(failed.err.find("replaced-"), std::string::npos) << "names the copy of what it was: " << failed.err;
  auto store = cp::OpenStore(target);
  ASSERT_TRUE(store.ok()) << store.status().message();
  EXPECT_EQ(*(*store)->CountJobs(), kJobs);
  EXPECT_TRUE((*store)->GetJob("dp1", "c1", 100000, Job(100000).submit_time)->has_value());
}

// A backup that a newer hpcplane made (a schema version this binary does not know) is refused.
TEST(StoreBackupSqlite, ABackupOfANewerSchemaIsRefused) {
  auto dir = files::MakeTempDir("hpcplane-backup");
  ASSERT_TRUE(dir.ok());
  const std::string source = "sqlite:" + *dir + "/source.db";
  ASSERT_TRUE(cp::OpenStore(source).ok());
  const std::string file = *dir + "/cp.backup";
  ASSERT_EQ(Hpcplane(*dir, {"server", "backup", file, "--store", source}).exit_code, 0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "INSERT INTO schema_migrations (version, applied_at) VALUES (999, 0)", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto refused = Hpcplane(*dir, {"server", "restore", file, "--store", "sqlite:" + *dir + "/target.db"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("newer hpcplane"), std::string::npos) << refused.err;
  (void)files::RemoveAll(*dir);
}

INSTANTIATE_TEST_SUITE_P(Engines, StoreBackup, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace hpc::it
