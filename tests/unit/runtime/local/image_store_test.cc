#include "runtime/local/image_store.h"
#include "runtime/local/oci_export.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <future>

#include <gtest/gtest.h>

#include "common/files.h"
#include "common/subprocess.h"

namespace hpc::runtime::local {
namespace {

// A stand-in for mmdebstrap on PATH: makes a root with /usr and a dpkg database listing each
// --include'd package at $FAKE_VERSION, runs the customize hooks as mmdebstrap does, and fails
// as apt does on a package named missing-*, after leaving a half-made root behind.
constexpr const char* kFakeMmdebstrap = R"(#!/bin/bash
set -e
hooks=(); include=""
for a in "$@"; do
  case "$a" in
    --include=*) include=${a#--include=} ;;
    --customize-hook=*) hooks+=("${a#--customize-hook=}") ;;
    --*) ;;
    *) pos+=("$a") ;;
  esac
done
target=${pos[1]}
mkdir -p "$target/usr/bin" "$target/var/lib/dpkg" "$target/etc"
echo "I: extracting archives..."
for p in ${include//,/ }; do
  case "$p" in missing-*) echo "E: Unable to locate package $p" >&2; exit 1 ;; esac
  printf 'Package: %s\nStatus: install ok installed\nVersion: %s\nArchitecture: amd64\n\n' "$p" "${FAKE_VERSION:-1.0}" \
    >> "$target/var/lib/dpkg/status"
done
for h in "${hooks[@]}"; do sh -c "$h" exec "$target"; done
echo "I: success in 0.1 seconds"
)";

class ImageStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hpcplane-imagestore-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    ASSERT_TRUE(files::MakeDirs(dir_ + "/bin").ok());
    ASSERT_TRUE(files::WriteAtomic(dir_ + "/bin/mmdebstrap", kFakeMmdebstrap, 0755).ok());
    ::setenv("PATH", (dir_ + "/bin:" + std::getenv("PATH")).c_str(), 1);
    ::unsetenv("FAKE_VERSION");
  }
  void TearDown() override { (void)files::RemoveAll(dir_); }

  ImageRecipe Recipe(std::vector<std::string> packages = {"hello", "jq"}) {
    ImageRecipe r;
    r.name = "tools";
    r.suite = "sid";
    r.packages = std::move(packages);
    r.files = {{"/etc/motd", "hi\n", 0640}};
    return r;
  }
  ImageStore Store() { return ImageStore(dir_ + "/store"); }

  std::string dir_;
};

TEST_F(ImageStoreTest, AnUnchangedRecipeReusesItsImageAndAChangedOneMakesANewImage) {
  std::vector<std::string> progress;
  ImageStore::BuildOptions o;
  o.progress = [&](const std::string& line) { progress.push_back(line); };
  auto first = Store().Build(Recipe(), o);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->packages.at("jq"), "1.0");
  auto root = Store().RootOf(first->Reference());
  ASSERT_TRUE(root.ok()) << root.status().message();
  EXPECT_EQ(*files::Read(*root + "/etc/motd"), "hi\n");
  EXPECT_EQ(*Store().RootOf("tools"), *root);

  progress.clear();
  auto again = Store().Build(Recipe(), o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->digest, first->digest);
  ASSERT_FALSE(progress.empty());
  EXPECT_NE(progress.front().find("reusing"), std::string::npos) << progress.front();

  auto changed = Store().Build(Recipe({"hello", "jq", "curl"}), o);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_NE(changed->digest, first->digest);
  EXPECT_EQ(changed->packages.count("curl"), 1u);
  EXPECT_EQ((*Store().Find("tools"))->digest, changed->digest);
  // No pod holds the image the name referred to before: it is gone.
  EXPECT_FALSE(Store().RootOf(first->Reference()).ok());
  ASSERT_TRUE(Store().Delete("tools").ok());
  EXPECT_FALSE(Store().RootOf(changed->Reference()).ok());
  EXPECT_TRUE(files::ListDir(dir_ + "/store/images").empty());
}

// A rebuild leaves the image it replaced while a pod holds it, and removes it at the next build
// or delete once none does; a hold whose pod directory is gone counts for nothing.
TEST_F(ImageStoreTest, AReplacedImageStaysWhileAPodHoldsItAndGoesAfter) {
  const std::string pod_a = dir_ + "/pods/a", pod_b = dir_ + "/pods/b";
  ASSERT_TRUE(files::MakeDirs(pod_a).ok() && files::MakeDirs(pod_b).ok());
  auto first = Store().Build(Recipe(), {});
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto held = Store().Hold(first->Reference(), pod_a);
  ASSERT_TRUE(held.ok()) << held.status().message();
  EXPECT_EQ(*held, *Store().RootOf(first->Reference()));
  auto second = Store().Build(Recipe({"hello", "jq", "curl"}), {});
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(Store().RootOf(first->Reference()).ok()) << "pod a runs on it";
  EXPECT_EQ(files::ListDir(dir_ + "/store/images").size(), 2u);

  ASSERT_TRUE(Store().Release(pod_a).ok());
  ASSERT_TRUE(Store().Release(pod_a).ok()) << "nothing held is no error";
  ASSERT_TRUE(Store().Hold("tools", pod_b).ok());  // by name: the current image, the second
  auto third = Store().Build(Recipe({"hello"}), {});
  ASSERT_TRUE(third.ok());
  EXPECT_FALSE(Store().RootOf(first->Reference()).ok()) << "let go of: removed";
  EXPECT_TRUE(Store().RootOf(second->Reference()).ok()) << "pod b holds it";
  auto ref = nlohmann::json::parse(*files::Read(dir_ + "/store/refs/tools.json"));
  EXPECT_EQ(ref["previous"], nlohmann::json::array({second->digest})) << ref.dump();

  ASSERT_TRUE(files::RemoveAll(pod_b).ok());  // deleted by a runtime that died before letting go
  auto fourth = Store().Build(Recipe({"jq"}), {});
  ASSERT_TRUE(fourth.ok());
  EXPECT_FALSE(Store().RootOf(second->Reference()).ok());
  EXPECT_EQ(files::ListDir(dir_ + "/store/images"), std::vector<std::string>{fourth->digest});
  EXPECT_TRUE(files::ListDir(dir_ + "/store/holds").empty()) << "the stale hold is gone too";
  EXPECT_FALSE(Store().Hold("tools@sha256:" + first->digest, pod_a).ok()) << "a removed image cannot be held";
}

// A deleted name's image stays while a pod holds it.
TEST_F(ImageStoreTest, DeleteLeavesAHeldImageUntilItsPodLetsGo) {
  const std::string pod = dir_ + "/pods/a";
  ASSERT_TRUE(files::MakeDirs(pod).ok());
  auto image = Store().Build(Recipe(), {});
  ASSERT_TRUE(image.ok());
  ASSERT_TRUE(Store().Hold(image->Reference(), pod).ok());
  ASSERT_TRUE(Store().Delete("tools").ok());
  EXPECT_TRUE(Store().RootOf(image->Reference()).ok());
  ASSERT_TRUE(Store().Release(pod).ok());
  ImageRecipe other = Recipe({"curl"});
  other.name = "other";
  auto built = Store().Build(other, {});
  ASSERT_TRUE(built.ok());
  EXPECT_FALSE(Store().RootOf(image->Reference()).ok());
  EXPECT_EQ(files::ListDir(dir_ + "/store/images"), std::vector<std::string>{built->digest});
}

// A pod started before images were held (an older hpcplane) shows its image only in its own mount
// namespace: that is enough to keep it.
TEST_F(ImageStoreTest, AnImageMountedInAnotherMountNamespaceIsKept) {
  // Packages of its own: an image no other test (running beside it) has.
  auto first = Store().Build(Recipe({"hello", "mounted-here"}), {});
  ASSERT_TRUE(first.ok());
  const std::string mnt = dir_ + "/mnt", ready = dir_ + "/ready", go = dir_ + "/go";
  ASSERT_TRUE(files::MakeDirs(mnt).ok());
  auto pod = std::async(std::launch::async, [&] {
    RunOptions o;
    o.timeout = std::chrono::seconds(30);
    return RunProcess({"unshare", "-m", "--propagation", "private", "sh", "-c",
                       "mount --bind \"$1\" \"$2\" && touch \"$3\" && while [ ! -e \"$4\" ]; do sleep 0.05; done",
                       "pod", *Store().RootOf(first->Reference()) + "/usr", mnt, ready, go},
                      o);
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!files::Exists(ready) && std::chrono::steady_clock::now() < deadline) {
    if (pod.wait_for(std::chrono::milliseconds(20)) == std::future_status::ready) break;
  }
  if (!files::Exists(ready)) {
    auto r = pod.get();
    GTEST_SKIP() << "cannot mount in a mount namespace here: " << (r.ok() ? r->err : r.status().message());
  }
  auto second = Store().Build(Recipe({"curl"}), {});
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(Store().RootOf(first->Reference()).ok()) << "mounted in the other namespace";
  ASSERT_TRUE(files::WriteAtomic(go, "").ok());
  ASSERT_TRUE(pod.get().ok());
  ASSERT_TRUE(Store().Build(Recipe({"jq"}), {}).ok());
  EXPECT_FALSE(Store().RootOf(first->Reference()).ok());
}

// Another environment's build holds the store's lock for minutes: an unchanged image is reused
// meanwhile (a cluster's `up` once waited behind a JupyterLab build until its caller gave up).
TEST_F(ImageStoreTest, AnUnchangedImageIsReusedWhileAnotherBuildHoldsTheStore) {
  ASSERT_TRUE(Store().Build(Recipe(), {}).ok());
  int held = ::open((dir_ + "/store/lock").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  auto reused = std::async(std::launch::async, [&] { return Store().Build(Recipe(), {}); });
  const bool returned = reused.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  // A changed recipe needs the lock: it waits until the other build is done.
  auto changed = std::async(std::launch::async, [&] { return Store().Build(Recipe({"hello", "curl"}), {}); });
  EXPECT_EQ(changed.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  ::close(held);
  EXPECT_TRUE(returned) << "the reuse waited for the store's lock";
  EXPECT_TRUE(reused.get().ok());
  auto built = changed.get();
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_EQ(built->packages.count("curl"), 1u);
}

TEST_F(ImageStoreTest, ARebuildWithNewerPackagesChangesTheDigestAndOneWithTheSameKeepsIt) {
  auto first = Store().Build(Recipe(), {});
  ASSERT_TRUE(first.ok());
  ImageStore::BuildOptions rebuild;
  rebuild.rebuild = true;
  auto same = Store().Build(Recipe(), rebuild);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->digest, first->digest);
  ::setenv("FAKE_VERSION", "1.1", 1);
  auto newer = Store().Build(Recipe(), rebuild);
  ASSERT_TRUE(newer.ok());
  EXPECT_NE(newer->digest, first->digest);
  EXPECT_EQ(newer->packages.at("jq"), "1.1");
}

TEST_F(ImageStoreTest, AFailedBuildNamesThePackageAndLeavesNothingBehind) {
  auto failed = Store().Build(Recipe({"hello", "missing-thing"}), {});
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("Unable to locate package missing-thing"), std::string::npos)
      << failed.status().message();
  EXPECT_TRUE(files::ListDir(dir_ + "/store/building").empty());
  EXPECT_TRUE(files::ListDir(dir_ + "/store/images").empty());
  EXPECT_FALSE(*Store().Find("tools"));
  auto root = Store().RootOf("tools");
  ASSERT_FALSE(root.ok());
  EXPECT_NE(root.status().message().find("hpcplane environments build tools"), std::string::npos);
}

TEST_F(ImageStoreTest, DeleteRemovesTheImageOnlyWhenNoOtherNameRefersToIt) {
  auto a = Store().Build(Recipe(), {});
  auto other = Recipe();
  other.name = "tools-copy";
  auto b = Store().Build(other, {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->digest, b->digest);  // content-addressed: the same recipe and packages
  ASSERT_TRUE(Store().Delete("tools").ok());
  EXPECT_TRUE(Store().RootOf(b->Reference()).ok());
  ASSERT_TRUE(Store().Delete("tools-copy").ok());
  EXPECT_FALSE(Store().RootOf(b->Reference()).ok());
  EXPECT_EQ(Store().Delete("tools").code(), StatusCode::kNotFound);
  EXPECT_FALSE(Store().RootOf("tools@sha256:not-hex").ok());
  // Names are file names of the store, never paths out of it.
  for (const char* bad : {"../../etc/passwd", "a/b", ".hidden", ""}) {
    EXPECT_EQ(Store().Find(bad).status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_FALSE(Store().RootOf(bad).ok()) << bad;
  }
  auto traversal = Recipe();
  traversal.name = "../escape";
  EXPECT_EQ(Store().Build(traversal, {}).status().code(), StatusCode::kInvalidArgument);
}

// Packed with the real umoci (a tiny root from the fake mmdebstrap): the tag names the image,
// its labels carry the store's digest; packing it again changes nothing; a rebuilt image
// replaces what the tag named and the old layer is collected.
TEST_F(ImageStoreTest, AnImageExportedAsOciIsReusedUntilItsDigestChanges) {
  auto first = Store().Build(Recipe(), {});
  ASSERT_TRUE(first.ok()) << first.status().message();
  OciExportOptions o;
  o.layout = dir_ + "/layout";
  o.labels = {{"hpcplane.io/slurm", "26.05.5"}};
  auto exported = ExportOci(Store(), *first, o);
  ASSERT_TRUE(exported.ok()) << exported.status().message();
  EXPECT_EQ(exported->tag, "tools");
  EXPECT_FALSE(exported->reused);
  EXPECT_EQ(exported->manifest_digest.rfind("sha256:", 0), 0u);
  auto labels = OciLabels(o.layout, "tools");
  ASSERT_TRUE(labels.ok()) << labels.status().message();
  EXPECT_EQ(labels->at(kOciLabelImageDigest), first->digest);
  EXPECT_EQ(labels->at(kOciLabelEnvironment), "tools");
  EXPECT_EQ(labels->at("hpcplane.io/slurm"), "26.05.5");

  auto again = ExportOci(Store(), *first, o);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->reused);
  EXPECT_EQ(again->manifest_digest, exported->manifest_digest);
  const size_t blobs = files::ListDir(o.layout + "/blobs/sha256").size();
  // Another tool's garbage in a shared layout is not hpcplane's to collect.
  const std::string foreign = o.layout + "/blobs/sha256/" + std::string(64, 'f');
  ASSERT_TRUE(files::WriteAtomic(foreign, "someone else's").ok());

  ::setenv("FAKE_VERSION", "2.0", 1);
  ImageStore::BuildOptions rebuild;
  rebuild.rebuild = true;
  auto newer = Store().Build(Recipe(), rebuild);
  ASSERT_TRUE(newer.ok());
  auto replaced = ExportOci(Store(), *newer, o);
  ASSERT_TRUE(replaced.ok()) << replaced.status().message();
  EXPECT_FALSE(replaced->reused);
  EXPECT_NE(replaced->manifest_digest, exported->manifest_digest);
  EXPECT_EQ(OciLabels(o.layout, "tools")->at(kOciLabelImageDigest), newer->digest);
  EXPECT_EQ(files::ListDir(o.layout + "/blobs/sha256").size(), blobs + 1) << "the old image's blobs are collected";
  EXPECT_TRUE(files::Exists(foreign));
  EXPECT_EQ(*OciManifestDigest(o.layout, "other"), "");
}

TEST_F(ImageStoreTest, AnExportRefusesABadTagAndADirectoryThatIsNoLayout) {
  auto image = Store().Build(Recipe(), {});
  ASSERT_TRUE(image.ok());
  OciExportOptions o;
  o.layout = dir_ + "/layout";
  o.tag = "../x";
  auto bad = ExportOci(Store(), *image, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("tag: must be", 0), 0u) << bad.status().message();
  EXPECT_FALSE(files::Exists(o.layout));
  o.tag = "";
  o.layout = dir_ + "/bin";  // holds the fake mmdebstrap
  auto not_layout = ExportOci(Store(), *image, o);
  ASSERT_FALSE(not_layout.ok());
  EXPECT_NE(not_layout.status().message().find("neither empty nor an OCI image layout"), std::string::npos)
      << not_layout.status().message();
  EXPECT_TRUE(files::Exists(dir_ + "/bin/mmdebstrap"));

  // A tag another tool made is not replaced.
  o.layout = dir_ + "/shared-layout";
  ASSERT_TRUE(RunChecked({"umoci", "init", "--layout", o.layout}).ok());
  ASSERT_TRUE(RunChecked({"umoci", "new", "--image", o.layout + ":tools"}).ok());
  const std::string theirs = *OciManifestDigest(o.layout, "tools");
  auto taken = ExportOci(Store(), *image, o);
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.status().message().find("names an image hpcplane did not export"), std::string::npos)
      << taken.status().message();
  EXPECT_EQ(*OciManifestDigest(o.layout, "tools"), theirs);
}

}  // namespace
}  // namespace hpc::runtime::local
