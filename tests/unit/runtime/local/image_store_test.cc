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
  // The image the name referred to before stays for what still runs from it, until the name is
  // deleted.
  EXPECT_TRUE(Store().RootOf(first->Reference()).ok());
  ASSERT_TRUE(Store().Delete("tools").ok());
  EXPECT_FALSE(Store().RootOf(first->Reference()).ok());
  EXPECT_TRUE(files::ListDir(dir_ + "/store/images").empty());
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
