// The driver's user-space files for GPU pods: found under a driver root laid out as Debian's
// packages lay them out (tools in usr/bin, libraries in the multiarch directory and its
// nvidia/current, names linked to one file), staged as one copy per file with its other names
// as links.
#include "runtime/local/gpu_driver_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "common/files.h"

namespace hpc::runtime::local {
namespace {

namespace fs = std::filesystem;

class DriverRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = files::MakeTempDir("hpcplane-driver-test");
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    dir_ = *dir;
    root_ = dir_ + "/root";
    lib_ = root_ + "/usr/lib/x86_64-linux-gnu";
  }
  void TearDown() override { fs::remove_all(dir_); }

  void File(const std::string& path, const std::string& content, fs::perms perms = fs::perms(0644)) {
    ASSERT_TRUE(files::MakeDirs(fs::path(path).parent_path().string()).ok());
    ASSERT_TRUE(files::WriteAtomic(path, content).ok());
    fs::permissions(path, perms);
  }
  void Link(const std::string& to, const std::string& at) {
    ASSERT_TRUE(files::MakeDirs(fs::path(at).parent_path().string()).ok());
    ASSERT_EQ(::symlink(to.c_str(), at.c_str()), 0) << at;
  }
  static std::map<std::string, std::string> ByTarget(const std::vector<DriverFile>& files) {
    std::map<std::string, std::string> out;
    for (const auto& f : files) out[f.target] = f.source;
    return out;
  }

  std::string dir_, root_, lib_;
};

TEST_F(DriverRoot, NoDriverNoFiles) {
  ASSERT_TRUE(files::MakeDirs(root_ + "/usr/bin").ok());
  File(root_ + "/usr/bin/bash", "not the driver's");
  File(lib_ + "/libc.so.6", "not the driver's");
  EXPECT_TRUE(ListDriverFiles(root_).empty());
  EXPECT_TRUE(ListDriverFiles(dir_ + "/nowhere").empty());
}

#if defined(__x86_64__)
TEST_F(DriverRoot, FindsTheToolsAndEveryNameOfEachLibraryAndStagesOneCopyEach) {
  File(root_ + "/usr/bin/nvidia-smi", "#!/bin/sh\necho smi\n", fs::perms(0755));
  File(root_ + "/usr/bin/nvidia-settings", "a desktop tool: not for pods");
  // Debian: the library in nvidia/current, its names in the multiarch directory.
  File(lib_ + "/nvidia/current/libcuda.so.550.54.15", "cuda");
  Link("nvidia/current/libcuda.so.550.54.15", lib_ + "/libcuda.so.1");
  Link("libcuda.so.1", lib_ + "/libcuda.so");
  File(lib_ + "/libnvidia-ml.so.550.54.15", "nvml");
  Link("libnvidia-ml.so.550.54.15", lib_ + "/libnvidia-ml.so.1");
  Link("libnvidia-gone.so.1", lib_ + "/libnvidia-ml.so");  // dangling: left out
  File(lib_ + "/libcudart.so.12", "the toolkit's, not the driver's");

  auto found = ByTarget(ListDriverFiles(root_));
  const std::string cuda = fs::canonical(lib_ + "/nvidia/current/libcuda.so.550.54.15").string();
  EXPECT_EQ(found.size(), 6u);
  EXPECT_EQ(found["bin/nvidia-smi"], fs::canonical(root_ + "/usr/bin/nvidia-smi").string());
  EXPECT_EQ(found["lib/x86_64-linux-gnu/libcuda.so"], cuda);
  EXPECT_EQ(found["lib/x86_64-linux-gnu/libcuda.so.1"], cuda);
  EXPECT_EQ(found["lib/x86_64-linux-gnu/libcuda.so.550.54.15"], cuda) << "from nvidia/current";
  EXPECT_TRUE(found.count("lib/x86_64-linux-gnu/libnvidia-ml.so.1"));
  EXPECT_TRUE(found.count("lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15"));
  EXPECT_FALSE(found.count("lib/x86_64-linux-gnu/libnvidia-ml.so"));
  EXPECT_FALSE(found.count("bin/nvidia-settings"));
  EXPECT_FALSE(found.count("lib/x86_64-linux-gnu/libcudart.so.12"));

  const std::string layer = dir_ + "/layer";
  ASSERT_TRUE(files::WriteAtomic(layer + "-stale", "").ok());
  ASSERT_TRUE(files::MakeDirs(layer + "/bin").ok());
  ASSERT_TRUE(files::WriteAtomic(layer + "/bin/old-tool", "from an older driver").ok());
  ASSERT_TRUE(StageDriverFiles(ListDriverFiles(root_), layer).ok());
  EXPECT_FALSE(files::Exists(layer + "/bin/old-tool")) << "made afresh";
  EXPECT_EQ(files::Read(layer + "/bin/nvidia-smi").value_or(""), "#!/bin/sh\necho smi\n");
  EXPECT_EQ(::access((layer + "/bin/nvidia-smi").c_str(), X_OK), 0) << "still executable";
  const std::string staged = layer + "/lib/x86_64-linux-gnu/";
  int copies = 0, links = 0;
  for (const char* name : {"libcuda.so", "libcuda.so.1", "libcuda.so.550.54.15"}) {
    EXPECT_EQ(files::Read(staged + name).value_or(""), "cuda") << name;
    (fs::is_symlink(staged + name) ? links : copies) += 1;
  }
  EXPECT_EQ(copies, 1);
  EXPECT_EQ(links, 2);
  EXPECT_EQ(fs::read_symlink(staged + "libcuda.so.1").string(), "libcuda.so.550.54.15") << "the file's own name";
  EXPECT_EQ(fs::read_symlink(staged + "libnvidia-ml.so.1").string(), "libnvidia-ml.so.550.54.15");
  // A link names a file of its own directory: it resolves inside the pod as well.
  for (const auto& e : fs::directory_iterator(staged)) {
    if (e.is_symlink()) {
      EXPECT_EQ(fs::read_symlink(e.path()).string().find('/'), std::string::npos) << e.path();
    }
  }
}
#endif

}  // namespace
}  // namespace hpc::runtime::local
