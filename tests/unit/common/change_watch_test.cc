#include "common/change_watch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>

#include "common/files.h"

namespace hpc {
namespace {

using std::chrono::milliseconds;

class ChangeWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = files::MakeTempDir("hpcplane-watch");
    ASSERT_TRUE(dir.ok());
    dir_ = *dir;
  }
  void TearDown() override { (void)files::RemoveAll(dir_); }
  std::string dir_;
};

// Events that happened before Wait are queued, so each check below is deterministic; a wait
// that times out is the "nothing changed" answer.
TEST_F(ChangeWatchTest, WakesForItsPathsOnlyWhateverWayTheyChange) {
  ChangeWatch watch({dir_ + "/marker", dir_ + "/cluster.json", dir_ + "/specs"});
  ASSERT_TRUE(watch.watching());
  EXPECT_FALSE(watch.Wait(milliseconds(10)));

  // Created and written in place (slurmctld's job_submit hook).
  ASSERT_TRUE(files::WriteInPlace(dir_ + "/marker", "1").ok());
  EXPECT_TRUE(watch.Wait(milliseconds(1000)));
  EXPECT_FALSE(watch.Wait(milliseconds(10)));  // one change, one wake-up

  // Another file in the same directory (slurmctld's state files) is not a change.
  ASSERT_TRUE(files::WriteInPlace(dir_ + "/job_state", "x").ok());
  EXPECT_FALSE(watch.Wait(milliseconds(20)));

  // Replaced by rename (the CLI's atomic writes).
  ASSERT_TRUE(files::WriteAtomic(dir_ + "/cluster.json", "{}").ok());
  EXPECT_TRUE(watch.Wait(milliseconds(1000)));

  // A directory that appears later, and then entries inside it.
  ASSERT_TRUE(files::MakeDirs(dir_ + "/specs").ok());
  EXPECT_TRUE(watch.Wait(milliseconds(1000)));
  ASSERT_TRUE(files::WriteAtomic(dir_ + "/specs/cpu.json", "{}").ok());
  EXPECT_TRUE(watch.Wait(milliseconds(1000)));
  ASSERT_EQ(::unlink((dir_ + "/specs/cpu.json").c_str()), 0);
  EXPECT_TRUE(watch.Wait(milliseconds(1000)));
}

// The controller's state volume is created by the first pass, after the daemon started watching.
TEST_F(ChangeWatchTest, APathWhoseDirectoryAppearsLaterIsWatchedOnceItExists) {
  ChangeWatch watch({dir_ + "/volume/marker"});
  EXPECT_FALSE(watch.Wait(milliseconds(10)));
  ASSERT_TRUE(files::MakeDirs(dir_ + "/volume").ok());
  EXPECT_FALSE(watch.Wait(milliseconds(10)));  // the directory is watched from here on
  ASSERT_TRUE(files::WriteInPlace(dir_ + "/volume/marker", "1").ok());
  EXPECT_TRUE(watch.Wait(milliseconds(1000)));
}

TEST_F(ChangeWatchTest, AWaitWithoutAChangeLastsItsTimeout) {
  ChangeWatch watch({dir_ + "/marker"});
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(watch.Wait(milliseconds(30)));
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(30));
}

}  // namespace
}  // namespace hpc
