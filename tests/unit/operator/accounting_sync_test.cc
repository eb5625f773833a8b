// AccountingSync changes a user's Slurm administrator level only where hpcplane set it: an
// admin's own sacctmgr settings survive passes and daemon restarts.
#include <gtest/gtest.h>

#include "common/files.h"
#include "fakes/fake_pod_runtime.h"
#include "operator/accounting_sync.h"

namespace hpc::op {
namespace {

class AccountingSyncTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = *files::MakeTempDir("hpcplane-acct"); }
  void TearDown() override { (void)files::RemoveAll(dir_); }
  OwnershipLedger Ledger() { return *OwnershipLedger::Open(dir_ + "/owned.json"); }
  int Modifies(const fakes::FakePodRuntime& rt, const std::string& user) {
    int n = 0;
    for (const auto& l : rt.ExecLines()) n += l.find("modify user where name=" + user) != std::string::npos;
    return n;
  }
  std::string dir_;
};

TEST_F(AccountingSyncTest, AnOrdinaryUsersLevelIsNeverOverwritten) {
  // e.g. an admin made ann an Operator with sacctmgr; hpcplane wants her as a plain user.
  for (int restart = 0; restart < 2; ++restart) {
    fakes::FakePodRuntime rt;
    AccountingSync sync(&rt, "c-controller");
    auto ledger = Ledger();
    ASSERT_TRUE(sync.Sync("c", {{"ann", "astro", false}}, &ledger).ok());
    EXPECT_EQ(Modifies(rt, "ann"), 0) << "restart " << restart;
    EXPECT_TRUE(sync.Synced("ann"));
  }
}

TEST_F(AccountingSyncTest, GrantsAdministratorOnceAndRevokesOnlyWhatItGranted) {
  {
    fakes::FakePodRuntime rt;
    AccountingSync sync(&rt, "c-controller");
    auto ledger = Ledger();
    ASSERT_TRUE(sync.Sync("c", {{"carol", "ops", true}}, &ledger).ok());
    EXPECT_EQ(Modifies(rt, "carol"), 1);
  }
  {
    // A restarted daemon does not set it again.
    fakes::FakePodRuntime rt;
    AccountingSync sync(&rt, "c-controller");
    auto ledger = Ledger();
    ASSERT_TRUE(sync.Sync("c", {{"carol", "ops", true}}, &ledger).ok());
    EXPECT_EQ(Modifies(rt, "carol"), 0);
    // carol loses SysAdmin: the level hpcplane granted is taken back.
    ASSERT_TRUE(sync.Sync("c", {{"carol", "ops", false}}, &ledger).ok());
    ASSERT_EQ(Modifies(rt, "carol"), 1);
    EXPECT_NE(rt.ExecLines().back().find("AdminLevel=None"), std::string::npos) << rt.ExecLines().back();
  }
}

// A restarted daemon confirms the associations it made before with one listing, not an `add`
// per user; one the listing lacks (an admin deleted it) is added again.
TEST_F(AccountingSyncTest, ARestartConfirmsKnownAssociationsWithOneListing) {
  {
    fakes::FakePodRuntime rt;
    AccountingSync sync(&rt, "c-controller");
    auto ledger = Ledger();
    ASSERT_TRUE(sync.Sync("c", {{"ann", "astro", false}, {"bob", "astro", false}}, &ledger).ok());
  }
  auto listing = [](std::string out) {
    return [out](const std::string&, const runtime::ExecOptions& o) {
      ProcessResult r;
      r.exit_code = 0;
      if (o.argv.size() > 3 && o.argv[3] == "show") r.out = out;
      return r;
    };
  };
  {
    fakes::FakePodRuntime rt;
    rt.exec_handler = listing("root|\nroot|root\nastro|\nastro|ann\nastro|bob\n");
    AccountingSync sync(&rt, "c-controller");
    auto ledger = Ledger();
    ASSERT_TRUE(sync.Sync("c", {{"ann", "astro", false}, {"bob", "astro", false}}, &ledger).ok());
    EXPECT_EQ(rt.ExecLines().size(), 1u) << ::testing::PrintToString(rt.ExecLines());
    EXPECT_TRUE(sync.Synced("ann"));
    EXPECT_TRUE(sync.Synced("bob"));
  }
  {
    fakes::FakePodRuntime rt;
    rt.exec_handler = listing("root|\nastro|\nastro|ann\n");  // bob's association is gone
    AccountingSync sync(&rt, "c-controller");
    auto ledger = Ledger();
    ASSERT_TRUE(sync.Sync("c", {{"ann", "astro", false}, {"bob", "astro", false}}, &ledger).ok());
    ASSERT_EQ(rt.ExecLines().size(), 2u) << ::testing::PrintToString(rt.ExecLines());
    EXPECT_NE(rt.ExecLines()[1].find("add user bob Account=astro"), std::string::npos) << rt.ExecLines()[1];
  }
}

TEST_F(AccountingSyncTest, AFailedSacctmgrIsReportedWithItsOutput) {
  fakes::FakePodRuntime rt;
  rt.exec_handler = [](const std::string&, const runtime::ExecOptions&) {
    ProcessResult r;
    r.exit_code = 1;
    r.err = "sacctmgr: error: Problem talking to the database: Connection refused\n";
    return r;
  };
  AccountingSync sync(&rt, "c-controller");
  auto ledger = Ledger();
  Status s = sync.Sync("c", {{"ann", "astro", false}}, &ledger);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Connection refused"), std::string::npos) << s.message();
  EXPECT_FALSE(sync.Synced("ann"));
}

}  // namespace
}  // namespace hpc::op
