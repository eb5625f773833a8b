// A manifest whose names and values hold ESC, BEL, NUL and a newline is refused by `up` and
// `apply` with one line that holds none of those bytes: an admin's terminal is never rewritten
// by what a manifest says, and nothing is created.
#include <gtest/gtest.h>

#include "common/files.h"
#include "harness.h"

namespace hpc::it {
namespace {

TEST(CliEscaping, ManifestsWithControlCharactersAreRefusedWithoutEchoingThem) {
  auto dir = files::MakeTempDir("hpcplane-esc");
  ASSERT_TRUE(dir.ok());
  // YAML's double-quoted escapes put the raw bytes into the values.
  const std::string evil = R"("a\e]0;pwned\ab\0c\nd")";
  const std::vector<std::string> manifests = {
      "apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: " + evil + "\nspec: {}\n",
      "apiVersion: hpcplane.io/v1alpha1\nkind: NodeSet\nmetadata:\n  name: cpu\nspec:\n  cluster: " + evil + "\n",
      "apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: ok\nspec:\n  users:\n    - name: " +
          evil + "\n      uid: 2001\n",
      "apiVersion: hpcplane.io/v1alpha1\nkind: " + evil + "\nmetadata:\n  name: ok\n",
  };
  for (size_t i = 0; i < manifests.size(); ++i) {
    const std::string path = *dir + "/m" + std::to_string(i) + ".yaml";
    ASSERT_TRUE(files::WriteAtomic(path, manifests[i]).ok());
    for (const std::string verb : {"up", "apply"}) {
      std::vector<std::string> argv = {HPCPLANE_BIN, "--state-dir", *dir + "/state", verb, "-f", path};
      if (verb == "up") argv.push_back("--detach");
      auto r = RunProcess(argv);
      ASSERT_TRUE(r.ok());
      const std::string what = verb + " " + manifests[i];
      EXPECT_NE(r->exit_code, 0) << what;
      ASSERT_FALSE(r->err.empty()) << what;
      EXPECT_EQ(r->err.find('\n'), r->err.size() - 1) << what << ": one line: " << r->err;
      for (unsigned char b : r->err + r->out) {
        EXPECT_FALSE(b == 0x1b || b == 0x07 || b == 0) << what << ": byte " << int(b) << " in " << r->err;
      }
      EXPECT_NE(r->err.find("\\x1b"), std::string::npos) << what << ": the value, escaped: " << r->err;
    }
  }
  // Nothing was created for any of them.
  EXPECT_TRUE(files::ListDir(*dir + "/state/clusters").empty());
  (void)files::RemoveAll(*dir);
}

}  // namespace
}  // namespace hpc::it
