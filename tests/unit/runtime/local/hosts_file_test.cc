#include "runtime/local/hosts_file.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "common/files.h"

namespace hpc::runtime::local {
namespace {

const std::string kController = "10.9.8.4\tc-controller";
const std::string kWorker = "10.9.8.8\tcpu-0";
const std::string kOther = "10.9.8.9\tcpu-1";

TEST(HostsFileTest, AnEntryThatStaysNeverMoves) {
  std::string one = NextHostsContent("", {"127.0.0.1\tlocalhost", kController});
  EXPECT_EQ(one, "127.0.0.1\tlocalhost\n" + kController + "\n");
  std::string two = NextHostsContent(one, {"127.0.0.1\tlocalhost", kWorker, kController});
  EXPECT_EQ(two.rfind(one, 0), 0u) << "a new entry is appended, after the ones that stay";
  EXPECT_EQ(NextHostsContent(two, {"127.0.0.1\tlocalhost", kWorker, kController}), two) << "nothing to change";

  // Removed: blanked in place, the same length, so what follows keeps its offset.
  std::string three = NextHostsContent(two, {"127.0.0.1\tlocalhost", kController});
  EXPECT_EQ(three.size(), two.size());
  EXPECT_EQ(three.find(kController), two.find(kController));
  EXPECT_EQ(three.find(kWorker), std::string::npos);
  EXPECT_EQ(three.substr(two.find(kWorker), 1), "#") << three;

  // A new entry takes a blanked slot it fits in; the others stay where they are.
  std::string four = NextHostsContent(three, {"127.0.0.1\tlocalhost", kController, kOther});
  EXPECT_EQ(four.size(), three.size()) << four;
  EXPECT_EQ(four.find(kOther), two.find(kWorker));
  EXPECT_EQ(four.find(kController), two.find(kController));
  std::string five = NextHostsContent(four, {"127.0.0.1\tlocalhost", kController, kOther, kWorker});
  EXPECT_EQ(five.rfind(four, 0), 0u) << "no slot left: appended";
}

TEST(HostsFileTest, LinesNotAskedForAndATornLastLineAreDropped) {
  std::string next = NextHostsContent("10.1.1.1\tstranger\n" + kController + "\n10.9.8.8\tcpu", {kController});
  EXPECT_EQ(next.find("stranger"), std::string::npos);
  EXPECT_EQ(next.find("cpu"), std::string::npos);
  EXPECT_NE(next.find(kController), std::string::npos);
}

// While the file is rewritten in place, over and over, a reader always finds the entry that
// stays: a truncating rewrite (open with O_TRUNC, then write) left it empty for a moment.
TEST(HostsFileTest, AConcurrentReaderAlwaysFindsAnEntryThatStays) {
  auto dir = files::MakeTempDir("hpcplane-hosts-");
  ASSERT_TRUE(dir.ok());
  const std::string path = *dir + "/hosts";
  const std::string with = NextHostsContent("", {kController, kWorker});
  const std::string without = NextHostsContent(with, {kController});
  ASSERT_TRUE(files::WriteInPlace(path, with, 0644).ok());
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, misses{0};
  std::thread reader([&] {
    while (!done) {
      auto text = files::Read(path);
      if (!text.ok() || text->find(kController) == std::string::npos) ++misses;
      ++reads;
    }
  });
  for (int i = 0; i < 20000; ++i) ASSERT_TRUE(files::WriteInPlace(path, i % 2 ? with : without, 0644).ok());
  done = true;
  reader.join();
  EXPECT_GT(reads.load(), 100);
  EXPECT_EQ(misses.load(), 0) << "of " << reads.load() << " reads";
  (void)files::RemoveAll(*dir);
}

}  // namespace
}  // namespace hpc::runtime::local
