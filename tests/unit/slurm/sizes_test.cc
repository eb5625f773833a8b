#include "slurm/sizes.h"

#include <gtest/gtest.h>

namespace hpc::slurm {
namespace {

TEST(SlurmSizes, UnitsAreKiBBasedAndBareNumbersAreBytes) {
  EXPECT_EQ(ParseSlurmSizeKiB("512K"), 512);
  EXPECT_EQ(ParseSlurmSizeKiB("3M"), 3072);
  EXPECT_EQ(ParseSlurmSizeKiB("2G"), 2 * 1024 * 1024);
  EXPECT_EQ(ParseSlurmSizeKiB("1T"), int64_t{1024} * 1024 * 1024);
  EXPECT_EQ(ParseSlurmSizeKiB("2048"), 2);
}

TEST(SlurmSizes, UnreadableOrAbsurdIsZero) {
  EXPECT_EQ(ParseSlurmSizeKiB(""), 0);
  EXPECT_EQ(ParseSlurmSizeKiB("N/A"), 0);
  EXPECT_EQ(ParseSlurmSizeKiB("-5M"), 0);
  EXPECT_EQ(ParseSlurmSizeKiB("1e30T"), 0);
}

}  // namespace
}  // namespace hpc::slurm
