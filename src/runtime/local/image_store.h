// The local runtime's images: root file systems built from a Debian suite and packages with
// mmdebstrap, kept in a content-addressed store that pods take their system directories from
// (pod_init.h). Knows nothing of Slurm: a recipe is a suite, packages, files and a script.
//
// Layout of `dir`:
//   images/<digest>/rootfs/          the root file system (read-only to pods)
//   images/<digest>/manifest.json    name, recipe, every installed package's version, size
//   refs/<name>.json                 the digest a name refers to now, its recipe's digest, and the
//                                    digests it referred to before that pods still hold
//   holds/<sha256 of a pod dir>.json the image a pod holds (Hold): its directory and the digest
//   building/<name>.<pid>/           a build in progress (removed on failure)
//   lock                             held while building or deleting
//   holds.lock                       held while a pod takes hold of an image, and while unheld
//                                    images are moved to trash/
//   trash/<digest>.<pid>/            an unused image being deleted
// An image no name refers to any more (a rebuild replaced it, or its name was deleted) stays
// while a pod holds it, and is removed by the next build or delete after the last let go: a
// store rebuilt every week does not fill its disk.
// An image's digest is the SHA-256 of its recipe's digest and of the versions of every package
// it holds: rebuilding an unchanged recipe from an unchanged archive gives the same image.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace hpc::runtime::local {

struct ImageFile {
  std::string path;  // absolute, inside the image
  std::string content;
  int mode = 0644;
};

// A system account the image gets with fixed ids before its packages are installed (their
// scripts keep an account that exists): the same ids in every image, whatever the install order,
// so that a runtime that cannot read an image's /etc/passwd (Kubernetes) can still name them.
struct ImageAccount {
  std::string name;  // [a-z_][a-z0-9_-]*
  int64_t uid = 0;
  int64_t gid = 0;
  std::string home;
  std::string shell;
};

struct ImageRecipe {
  std::string name;  // what the image is known by (an environment's name)
  std::string suite;
  std::vector<std::string> packages;
  std::vector<ImageFile> files;
  std::vector<ImageAccount> accounts;
  std::string post_install;  // shell script, run as root inside the image after the packages
  // Anything else the caller wants recorded (and hashed) with the image, e.g. its purpose.
  nlohmann::json annotations = nlohmann::json::object();
};

struct ImageManifest {
  std::string name;
  std::string digest;         // hex SHA-256
  std::string recipe_digest;  // hex SHA-256 of the recipe
  nlohmann::json recipe;
  std::map<std::string, std::string> packages;  // every installed package -> version
  int64_t built_at = 0;                         // unix seconds
  int64_t size_bytes = 0;
  std::string Reference() const { return name + "@sha256:" + digest; }
};

class ImageStore {
 public:
  explicit ImageStore(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  struct BuildOptions {
    bool rebuild = false;  // build even when the recipe is unchanged (picks up newer packages)
    std::string mirror = "http://deb.debian.org/debian";
    std::function<void(const std::string&)> progress;  // one line at a time
  };
  // Builds the recipe's image and points its name at it; an unchanged recipe reuses the image
  // its name refers to without building. A failed build leaves the store as it was.
  Result<ImageManifest> Build(const ImageRecipe& recipe, const BuildOptions& options);

  // The image a name refers to now; nullopt when it was never built.
  Result<std::optional<ImageManifest>> Find(const std::string& name) const;
  Result<std::vector<ImageManifest>> List() const;
  // The root file system of "name@sha256:<digest>" (that exact image) or of "name" (the
  // image the name refers to now).
  Result<std::string> RootOf(const std::string& reference) const;
  // RootOf `reference`, held for the pod whose directory is `holder` until Release (or until that
  // directory is gone): a pod holds one image, the one it started with last.
  Result<std::string> Hold(const std::string& reference, const std::string& holder);
  // Lets go of what `holder` holds. Nothing held is no error.
  Status Release(const std::string& holder);
  // Forgets the name, and removes its images (the current one and those it referred to before)
  // that no other name refers to and no pod holds.
  Status Delete(const std::string& name);

  static std::string RecipeDigest(const ImageRecipe& recipe);

 private:
  std::string ImageDir(const std::string& digest) const { return dir_ + "/images/" + digest; }
  std::string RefPath(const std::string& name) const { return dir_ + "/refs/" + name + ".json"; }
  Result<ImageManifest> LoadManifest(const std::string& digest) const;
  // The digests a name refers to: now, and before a rebuild changed it.
  std::vector<std::string> RefDigests(const std::string& name) const;
  std::string HoldPath(const std::string& holder) const;
  // Removes every image no name refers to now and no pod holds, and drops it from the refs'
  // lists of earlier images; with the store's lock held. Returns how many it removed.
  int RemoveUnheldImages(const std::function<void(const std::string&)>& say);
  Result<ImageManifest> BuildLocked(const ImageRecipe& recipe, const std::string& recipe_digest,
                                    const BuildOptions& options);

  std::string dir_;
};

}  // namespace hpc::runtime::local
