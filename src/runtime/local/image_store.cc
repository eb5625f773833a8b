#include "runtime/local/image_store.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "common/files.h"
#include "common/jwt.h"
#include "common/subprocess.h"

namespace hpc::runtime::local {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Held while the store changes: builds and deletes of any name wait for each other.
Result<files::FileLock> TakeStoreLock(const std::string& dir) {
  RETURN_IF_ERROR(files::MakeDirs(dir));
  auto lock = files::FileLock::Take(dir + "/lock");
  if (!lock.ok()) return lock.status().WithContext("image store " + dir);
  return lock;
}

json RecipeJson(const ImageRecipe& r) {
  json files_json = json::array();
  for (const auto& f : r.files) files_json.push_back({{"path", f.path}, {"content", f.content}, {"mode", f.mode}});
  std::vector<std::string> packages = r.packages;
  std::sort(packages.begin(), packages.end());
  packages.erase(std::unique(packages.begin(), packages.end()), packages.end());
  json recipe = {{"suite", r.suite},
                 {"packages", packages},
                 {"files", files_json},
                 {"postInstall", r.post_install},
                 {"annotations", r.annotations}};
  if (!r.accounts.empty()) {
    json accounts = json::array();
    for (const auto& a : r.accounts) {
      accounts.push_back({{"name", a.name}, {"uid", a.uid}, {"gid", a.gid}, {"home", a.home}, {"shell", a.shell}});
    }
    recipe["accounts"] = accounts;
  }
  return recipe;
}

// Account fields go into shell text and into /etc/passwd: nothing but what such names hold.
Status CheckAccount(const ImageAccount& a) {
  static const std::regex name("^[a-z_][a-z0-9_-]{0,31}$");
  static const std::regex path("^/[A-Za-z0-9_./-]*$");
  if (!std::regex_match(a.name, name) || !std::regex_match(a.home, path) || !std::regex_match(a.shell, path) ||
      a.uid < 0 || a.gid < 0) {
    return Status::InvalidArgument("accounts", fmt::format("image account \"{}\": not a valid account", a.name));
  }
  return Status::Ok();
}

// An mmdebstrap hook that adds the account to the essential system (passwd, group and shadow
// when there is one) unless it is there already.
std::string AccountHook(const ImageAccount& a) {
  return fmt::format(
      "--essential-hook=grep -q '^{0}:' \"$1/etc/passwd\" || {{ "
      "echo '{0}:x:{1}:{2}::{3}:{4}' >> \"$1/etc/passwd\"; "
      "echo '{0}:x:{2}:' >> \"$1/etc/group\"; "
      "if [ -f \"$1/etc/shadow\" ]; then echo '{0}:*:1:0:99999:7:::' >> \"$1/etc/shadow\"; fi; "
      "if [ -f \"$1/etc/gshadow\" ]; then echo '{0}:!::' >> \"$1/etc/gshadow\"; fi; }}",
      a.name, a.uid, a.gid, a.home, a.shell);
}

bool IsHexDigest(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(c) && !std::isupper(c); });
}

// A name is a file name in refs/: never a path.
Status CheckName(const std::string& name) {
  const bool ok =
      !name.empty() && name.size() <= 64 && name[0] != '.' && std::all_of(name.begin(), name.end(), [](char c) {
        return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' ||
               c == '.' || c == '_';
      });
  if (!ok) return Status::InvalidArgument("name", fmt::format("image name \"{}\": not a name of this store", name));
  return Status::Ok();
}

// Detaches whatever a failed mmdebstrap left mounted below `dir` (its /proc, /sys, /dev), deepest
// first, so that removing the directory cannot reach into the host's.
void DetachMountsBelow(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  std::vector<std::string> below;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, mount_point;
    fields >> id >> parent >> devno >> root >> mount_point;
    if (mount_point.rfind(dir + "/", 0) == 0) below.push_back(mount_point);
  }
  std::sort(below.begin(), below.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const auto& m : below) ::umount2(m.c_str(), MNT_DETACH);
}

void RemoveBuildDir(const std::string& dir) {
  DetachMountsBelow(dir);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

int64_t TreeBytes(const std::string& dir) {
  int64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) total += static_cast<int64_t>(it->file_size(ec));
  }
  return total;
}

Result<std::map<std::string, std::string>> InstalledPackages(const std::string& rootfs) {
  RunOptions o;
  o.timeout = std::chrono::seconds(60);
  ASSIGN_OR_RETURN(ProcessResult r, RunProcess({"dpkg-query", "--admindir=" + rootfs + "/var/lib/dpkg", "-W",
                                                "-f=${Package}\t${Version}\t${db:Status-Abbrev}\n"},
                                               o));
  if (!r.ok()) return Status::Errorf("dpkg-query in {}: {}", rootfs, r.err);
  std::map<std::string, std::string> out;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    auto t1 = line.find('\t'), t2 = line.rfind('\t');
    if (t1 == std::string::npos || t2 == t1) continue;
    if (line.compare(t2 + 1, 2, "ii") != 0) continue;  // installed, not merely known
    out[line.substr(0, t1)] = line.substr(t1 + 1, t2 - t1 - 1);
  }
  return out;
}

// The recipe's files, laid out under `overlay` as they will be in the image.
Status StageFiles(const ImageRecipe& r, const std::string& overlay) {
  RETURN_IF_ERROR(files::MakeDirs(overlay, 0755));
  for (const auto& f : r.files) {
    const std::string path = overlay + f.path;
    RETURN_IF_ERROR(files::MakeDirs(fs::path(path).parent_path().string(), 0755));
    RETURN_IF_ERROR(files::WriteAtomic(path, f.content, static_cast<mode_t>(f.mode)));
    ::chmod(path.c_str(), static_cast<mode_t>(f.mode));  // WriteAtomic applies the umask
  }
  return Status::Ok();
}

// apt's and mmdebstrap's own error lines ("E: Unable to locate package foo"): what went wrong.
std::string ErrorLines(const ProcessResult& r) {
  std::string out;
  std::istringstream lines(r.err + "\n" + r.out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("E: ", 0) != 0 || line.find("mmdebstrap failed") != std::string::npos ||
        line.find("failed to run") != std::string::npos) {
      continue;
    }
    if (out.find(line) != std::string::npos) continue;
    if (!out.empty()) out += "; ";
    out += line;
  }
  return out.empty() ? "exit " + std::to_string(r.exit_code) : out;
}

}  // namespace

std::string ImageStore::RecipeDigest(const ImageRecipe& recipe) { return jwt::Sha256Hex(RecipeJson(recipe).dump()); }

Result<ImageManifest> ImageStore::LoadManifest(const std::string& digest) const {
  ASSIGN_OR_RETURN(std::string text, files::Read(ImageDir(digest) + "/manifest.json"));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Errorf("image {}: manifest.json is not JSON", digest);
  ImageManifest m;
  m.digest = digest;
  m.recipe_digest = j.value("recipeDigest", "");
  m.recipe = j.value("recipe", json::object());
  m.packages = j.value("packages", std::map<std::string, std::string>{});
  m.built_at = j.value("builtAt", int64_t{0});
  m.size_bytes = j.value("sizeBytes", int64_t{0});
  return m;
}

Result<std::optional<ImageManifest>> ImageStore::Find(const std::string& name) const {
  RETURN_IF_ERROR(CheckName(name));
  if (!files::Exists(RefPath(name))) return std::optional<ImageManifest>();
  ASSIGN_OR_RETURN(std::string text, files::Read(RefPath(name)));
  json ref = json::parse(text, nullptr, false);
  std::string digest = ref.is_object() ? ref.value("digest", "") : "";
  if (!IsHexDigest(digest)) return Status::Errorf("image store {}: refs/{}.json is damaged", dir_, name);
  if (!files::Exists(ImageDir(digest) + "/manifest.json")) return std::optional<ImageManifest>();
  ASSIGN_OR_RETURN(ImageManifest m, LoadManifest(digest));
  m.name = name;
  return std::optional<ImageManifest>(std::move(m));
}

Result<std::vector<ImageManifest>> ImageStore::List() const {
  std::vector<ImageManifest> out;
  for (const auto& file : files::ListDir(dir_ + "/refs")) {
    if (file.size() <= 5 || file.substr(file.size() - 5) != ".json") continue;
    ASSIGN_OR_RETURN(auto m, Find(file.substr(0, file.size() - 5)));
    if (m) out.push_back(std::move(*m));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

Result<std::string> ImageStore::RootOf(const std::string& reference) const {
  const auto at = reference.find("@sha256:");
  const std::string name = reference.substr(0, at);
  RETURN_IF_ERROR(CheckName(name));
  std::string digest;
  if (at != std::string::npos) {
    digest = reference.substr(at + 8);
    if (!IsHexDigest(digest)) return Status::Errorf("image \"{}\": not a name@sha256:<64 hex digits>", reference);
  } else {
    ASSIGN_OR_RETURN(auto m, Find(name));
    if (!m) {
      return Status::Errorf("image \"{}\" is not in the store {}: build it with `hpcplane environments build {}`", name,
                            dir_, name);
    }
    digest = m->digest;
  }
  const std::string root = ImageDir(digest) + "/rootfs";
  if (!files::Exists(root + "/usr")) {
    return Status::Errorf("image \"{}\" is not in the store {}: build it with `hpcplane environments build {}`",
                          reference, dir_, name);
  }
  return root;
}

Result<ImageManifest> ImageStore::Build(const ImageRecipe& recipe, const BuildOptions& options) {
  RETURN_IF_ERROR(CheckName(recipe.name));
  const std::string recipe_digest = RecipeDigest(recipe);
  auto reuse = [&]() -> Result<std::optional<ImageManifest>> {
    if (options.rebuild) return std::optional<ImageManifest>();
    ASSIGN_OR_RETURN(auto existing, Find(recipe.name));
    if (!existing || existing->recipe_digest != recipe_digest) return std::optional<ImageManifest>();
    if (options.progress) options.progress("reusing " + existing->Reference() + " (recipe unchanged)");
    return existing;
  };
  // An unchanged image is reused without the lock (a name's ref is replaced atomically): `up`
  // never waits minutes behind another environment's build.
  ASSIGN_OR_RETURN(auto unlocked, reuse());
  if (unlocked) return std::move(*unlocked);
  ASSIGN_OR_RETURN(files::FileLock lock, TakeStoreLock(dir_));
  // Looked at again: a build of the same recipe may have finished while this one waited.
  ASSIGN_OR_RETURN(auto locked, reuse());
  if (locked) return std::move(*locked);
  return BuildLocked(recipe, recipe_digest, options);
}

Result<ImageManifest> ImageStore::BuildLocked(const ImageRecipe& recipe, const std::string& recipe_digest,
                                              const BuildOptions& options) {
  auto say = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  // Under the store's lock no other build runs: whatever is in building/ was left by one that
  // was killed.
  for (const auto& stale : files::ListDir(dir_ + "/building")) RemoveBuildDir(dir_ + "/building/" + stale);
  const std::string work = dir_ + "/building/" + recipe.name + "." + std::to_string(::getpid());
  RETURN_IF_ERROR(files::MakeDirs(work, 0755));  // apt downloads as _apt inside
  const std::string rootfs = work + "/rootfs";
  const std::string overlay = work + "/overlay";
  auto fail = [&](Status s) {
    RemoveBuildDir(work);
    return s;
  };
  for (const auto& a : recipe.accounts) {
    if (Status s = CheckAccount(a); !s.ok()) return fail(s);
  }
  if (Status s = StageFiles(recipe, overlay); !s.ok()) return fail(s);
  std::string include;
  for (const auto& p : recipe.packages) include += (include.empty() ? "" : ",") + p;
  std::vector<std::string> argv = {
      "mmdebstrap", "--mode=root", "--variant=apt", "--format=directory",
      // The archive served here may be a snapshot whose Release file has expired.
      "--aptopt=Acquire::Check-Valid-Until \"false\"", "--dpkgopt=path-exclude=/usr/share/man/*",
      "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-include=/usr/share/doc/*/copyright",
      // No fsync per unpacked file: a build that dies is discarded whole.
      "--dpkgopt=force-unsafe-io", "--include=" + include, "--customize-hook=cp -a '" + overlay + "/.' \"$1/\""};
  for (const auto& a : recipe.accounts) argv.push_back(AccountHook(a));
  if (!recipe.post_install.empty()) {
    RETURN_IF_ERROR(files::WriteAtomic(work + "/post-install", recipe.post_install, 0700));
    argv.push_back("--customize-hook=cp '" + work +
                   "/post-install' \"$1/tmp/hpcplane-post-install\" && chroot \"$1\" " +
                   "/bin/sh -e /tmp/hpcplane-post-install; rc=$?; rm -f \"$1/tmp/hpcplane-post-install\"; exit $rc");
  }
  // No keys in an image: every cluster brings its own (the pods' secrets).
  argv.push_back("--customize-hook=rm -f \"$1\"/etc/munge/munge.key \"$1\"/etc/ssh/ssh_host_*");
  argv.insert(argv.end(), {recipe.suite, rootfs, options.mirror});
  say("building " + recipe.name + " from Debian " + recipe.suite + " with " + std::to_string(recipe.packages.size()) +
      " packages");
  RunOptions run;
  run.timeout = std::chrono::minutes(30);
  run.on_line = [&](const std::string& line) {
    // mmdebstrap's own steps ("I: ..."), not every line of apt and dpkg.
    if (line.rfind("I: ", 0) == 0 || line.rfind("E: ", 0) == 0 || line.rfind("W: ", 0) == 0) say(line);
  };
  auto r = RunProcess(argv, run);
  if (!r.ok()) return fail(r.status().WithContext("environment " + recipe.name));
  if (!r->ok()) {
    return fail(Status::Errorf("environment \"{}\": building from Debian {} failed: {}", recipe.name, recipe.suite,
                               r->timed_out ? std::string("timed out after 30 minutes") : ErrorLines(*r)));
  }
  auto packages = InstalledPackages(rootfs);
  if (!packages.ok()) return fail(packages.status());
  std::string versions = recipe_digest + "\n";
  for (const auto& [p, v] : *packages) versions += p + "=" + v + "\n";
  ImageManifest m;
  m.name = recipe.name;
  m.digest = jwt::Sha256Hex(versions);
  m.recipe_digest = recipe_digest;
  m.recipe = RecipeJson(recipe);
  m.packages = std::move(*packages);
  m.built_at =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  m.size_bytes = TreeBytes(rootfs);
  const std::string image_dir = ImageDir(m.digest);
  if (files::Exists(image_dir + "/manifest.json")) {
    say("the same packages as " + m.Reference() + ": reusing it");
    RemoveBuildDir(work);
  } else {
    RemoveBuildDir(image_dir);  // a half-moved image of an earlier crash
    if (Status s = files::MakeDirs(image_dir, 0755); !s.ok()) return fail(s);
    std::error_code ec;
    fs::rename(rootfs, image_dir + "/rootfs", ec);
    if (ec) return fail(Status::Errorf("image store: move {} into place: {}", rootfs, ec.message()));
    json manifest = {{"recipeDigest", m.recipe_digest},
                     {"recipe", m.recipe},
                     {"packages", m.packages},
                     {"builtAt", m.built_at},
                     {"sizeBytes", m.size_bytes}};
    if (Status s = files::WriteAtomic(image_dir + "/manifest.json", manifest.dump(2), 0644); !s.ok()) return fail(s);
    RemoveBuildDir(work);
  }
  RETURN_IF_ERROR(files::MakeDirs(dir_ + "/refs", 0755));
  // The images the name referred to before stay while pods hold them (RemoveUnheldImages).
  std::vector<std::string> previous = RefDigests(recipe.name);
  previous.erase(std::remove(previous.begin(), previous.end(), m.digest), previous.end());
  RETURN_IF_ERROR(files::WriteAtomic(
      RefPath(recipe.name), json{{"digest", m.digest}, {"recipeDigest", recipe_digest}, {"previous", previous}}.dump(),
      0644));
  RemoveUnheldImages(say);
  // The recorded manifest is the one that counts (an identical image may predate this build).
  ASSIGN_OR_RETURN(ImageManifest stored, LoadManifest(m.digest));
  stored.name = recipe.name;
  say("built " + stored.Reference() + " (" + std::to_string(stored.packages.size()) + " packages, " +
      std::to_string(stored.size_bytes >> 20) + " MiB)");
  return stored;
}

std::vector<std::string> ImageStore::RefDigests(const std::string& name) const {
  auto text = files::Read(RefPath(name));
  if (!text.ok()) return {};
  json ref = json::parse(*text, nullptr, false);
  if (!ref.is_object()) return {};
  std::vector<std::string> out = ref.value("previous", std::vector<std::string>{});
  out.push_back(ref.value("digest", ""));
  out.erase(std::remove_if(out.begin(), out.end(), [](const auto& d) { return !IsHexDigest(d); }), out.end());
  return out;
}

Status ImageStore::Delete(const std::string& name) {
  ASSIGN_OR_RETURN(files::FileLock lock, TakeStoreLock(dir_));
  ASSIGN_OR_RETURN(auto m, Find(name));
  if (!m) return Status::NotFound(fmt::format("environment \"{}\" has no image in {}", name, dir_));
  if (::unlink(RefPath(name).c_str()) != 0) return Status::Errorf("remove {}: {}", RefPath(name), std::strerror(errno));
  // Its images, now and before, less those another name refers to (content-addressed: the same
  // recipe and packages under two names are one image) or a pod holds.
  RemoveUnheldImages(nullptr);
  return Status::Ok();
}

std::string ImageStore::HoldPath(const std::string& holder) const {
  return dir_ + "/holds/" + jwt::Sha256Hex(holder) + ".json";
}

Result<std::string> ImageStore::Hold(const std::string& reference, const std::string& holder) {
  RETURN_IF_ERROR(files::MakeDirs(dir_ + "/holds", 0755));
  auto lock = files::FileLock::Take(dir_ + "/holds.lock");
  if (!lock.ok()) return lock.status().WithContext("image store " + dir_);
  // Looked up under the lock: no image is removed between finding it and holding it.
  ASSIGN_OR_RETURN(std::string root, RootOf(reference));
  const std::string digest = fs::path(root).parent_path().filename().string();
  RETURN_IF_ERROR(files::WriteAtomic(HoldPath(holder), json{{"holder", holder}, {"digest", digest}}.dump(), 0644));
  return root;
}

Status ImageStore::Release(const std::string& holder) {
  if (::unlink(HoldPath(holder).c_str()) != 0 && errno != ENOENT) {
    return Status::Errorf("image store {}: let go of {}: {}", dir_, holder, std::strerror(errno));
  }
  return Status::Ok();
}

namespace {

// The images some process's mounts show (a pod's root is bound from its image's rootfs inside
// the pod's own mount namespace, so the host's mount table does not list it): by digest, read
// from each mount namespace's mountinfo once. A pod started by an hpcplane that did not hold
// images yet is seen here all the same. A mount's root (4th field) is its path inside its file
// system: where the store is on the root file system that is "<images dir>/<digest>/...", this
// store's own; elsewhere any ".../images/<digest>/..." counts (keeping more, never less).
std::set<std::string> ImagesMounted(const std::string& images_dir) {
  std::set<std::string> out, namespaces;
  std::error_code ec;
  const std::string real = fs::weakly_canonical(images_dir, ec).string();
  struct stat here {};
  struct stat root {};
  const bool on_root = !ec && ::stat(real.c_str(), &here) == 0 && ::stat("/", &root) == 0 && here.st_dev == root.st_dev;
  const std::string marker = on_root ? real + "/" : "/" + fs::path(images_dir).filename().string() + "/";
  for (const auto& pid : files::ListDir("/proc")) {
    if (pid.empty() || !std::all_of(pid.begin(), pid.end(), ::isdigit)) continue;
    const std::string ns = fs::read_symlink("/proc/" + pid + "/ns/mnt", ec).string();
    if (ec || namespaces.count(ns)) continue;
    auto text = files::Read("/proc/" + pid + "/mountinfo");
    if (!text.ok()) continue;  // gone meanwhile: another process of its namespace may tell
    namespaces.insert(ns);
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      std::string id, parent, dev, mount_root;
      fields >> id >> parent >> dev >> mount_root;
      for (size_t at = mount_root.find(marker); at != std::string::npos; at = mount_root.find(marker, at + 1)) {
        if (on_root && at != 0) break;
        const std::string digest = mount_root.substr(at + marker.size(), 64);
        if (IsHexDigest(digest)) out.insert(digest);
      }
    }
  }
  return out;
}

}  // namespace

int ImageStore::RemoveUnheldImages(const std::function<void(const std::string&)>& say) {
  auto warn = [&](const std::string& why) {
    if (say) say("unused images are kept: " + why);
  };
  // Under the holds' lock, the unused images only move aside (a rename): pods starting meanwhile
  // wait for the lock, not for gigabytes to be deleted. The deletion follows, without it; one a
  // crash cut short is finished by the next.
  const std::string trash = dir_ + "/trash";
  int removed = 0;
  {
    auto lock = files::FileLock::Take(dir_ + "/holds.lock");
    if (!lock.ok()) return warn(lock.status().message()), 0;  // holds unread: nothing goes
    std::set<std::string> kept;
    std::vector<std::string> names;
    for (const auto& file : files::ListDir(dir_ + "/refs")) {
      if (file.size() <= 5 || file.substr(file.size() - 5) != ".json") continue;
      names.push_back(file.substr(0, file.size() - 5));
      auto now = Find(names.back());
      if (!now.ok()) return warn(now.status().message()), 0;  // what a damaged ref names is unknown
      if (*now) kept.insert((*now)->digest);
    }
    // Holds of pods whose directory is gone (deleted by a runtime that died mid-way) are stale.
    for (const auto& file : files::ListDir(dir_ + "/holds")) {
      const std::string path = dir_ + "/holds/" + file;
      json hold = json::parse(files::Read(path).value_or(""), nullptr, false);
      const std::string holder = hold.is_object() ? hold.value("holder", "") : "";
      if (!holder.empty() && files::Exists(holder)) {
        kept.insert(hold.value("digest", ""));
      } else if (hold.is_object()) {
        (void)files::RemoveAll(path);
      }
    }
    for (const auto& digest : ImagesMounted(dir_ + "/images")) kept.insert(digest);
    if (!files::MakeDirs(trash, 0700).ok()) return warn("cannot make " + trash), 0;
    for (const auto& digest : files::ListDir(dir_ + "/images")) {
      if (!IsHexDigest(digest) || kept.count(digest)) continue;
      std::error_code ec;
      fs::rename(ImageDir(digest), trash + "/" + digest + "." + std::to_string(::getpid()), ec);
      if (ec) continue;
      ++removed;
      if (say) say("removed image sha256:" + digest + " (no name refers to it and nothing holds it)");
    }
    // The refs' lists of earlier images keep only what is still there.
    for (const auto& name : names) {
      json ref = json::parse(files::Read(RefPath(name)).value_or(""), nullptr, false);
      if (!ref.is_object() || !ref.contains("previous")) continue;
      std::vector<std::string> previous = ref.value("previous", std::vector<std::string>{});
      const size_t before = previous.size();
      previous.erase(std::remove_if(previous.begin(), previous.end(), [&](const auto& d) { return !kept.count(d); }),
                     previous.end());
      if (previous.size() == before) continue;
      ref["previous"] = previous;
      (void)files::WriteAtomic(RefPath(name), ref.dump(), 0644);
    }
  }
  for (const auto& entry : files::ListDir(trash)) RemoveBuildDir(trash + "/" + entry);
  return removed;
}

}  // namespace hpc::runtime::local
