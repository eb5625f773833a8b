#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <optional>

#include "common/files.h"

namespace hpc::files {
namespace {

// Whether another open file description could take the lock now (flock locks belong to the open
// file description, so a second open in this process stands for another process).
bool FreeFromElsewhere(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return free;
}

TEST(FileLockTest, HoldsAFileOrADirectoryUntilDestroyed) {
  auto dir = MakeTempDir("hpcplane-lock-test");
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  const std::string file = *dir + "/lock";
  {
    auto lock = FileLock::Take(file);
    ASSERT_TRUE(lock.ok()) << lock.status().message();
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);  // made when missing, root's alone
    EXPECT_FALSE(FreeFromElsewhere(file));
    std::optional<FileLock> moved(std::move(*lock));
    EXPECT_FALSE(FreeFromElsewhere(file));  // a moved lock is still held
  }
  EXPECT_TRUE(FreeFromElsewhere(file));
  {
    auto lock = FileLock::Take(*dir);
    ASSERT_TRUE(lock.ok()) << lock.status().message();
    EXPECT_FALSE(FreeFromElsewhere(*dir));
  }
  EXPECT_TRUE(FreeFromElsewhere(*dir));
  auto missing = FileLock::Take(*dir + "/no/such/dir/lock");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/no/such/dir/lock"), std::string::npos) << missing.status().message();
  std::filesystem::remove_all(*dir);
}

}  // namespace
}  // namespace hpc::files
