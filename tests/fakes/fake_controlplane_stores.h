// In-memory stores behind the control plane's narrow interfaces that its services use (flags,
// projects and templates, uids, workspaces, data planes, submissions), for unit tests of the
// services; all of them can be made to fail like a store that does not answer.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/store.h"

namespace hpc::fakes {

class FakeControlPlaneStores : public cp::FlagStore,
                               public cp::WorkspaceStore,
                               public cp::DataPlaneStore,
                               public cp::DispatchStore,
                               public cp::ProjectStore,
                               public cp::TokenStore {
 public:
  std::map<std::string, bool> flags;
  std::map<std::string, cp::JobTemplate> templates;  // by "project/name"
  std::map<std::string, cp::WorkspaceRecord> workspaces;
  std::vector<cp::DataPlane> data_planes;
  std::map<std::string, cp::Submission> submissions;
  std::map<std::string, cp::ProjectConfig> projects;
  std::map<std::string, int64_t> uids;
  std::map<std::string, cp::TokenInfo> tokens;  // by digest
  bool unavailable = false;                     // every call fails as a store that does not answer

  // Project `name`, configured to run its workspaces on `data_plane` with the tier "small".
  void AddProject(const std::string& name, const std::string& data_plane) {
    cp::ProjectConfig p;
    p.name = name;
    p.data_plane = data_plane;
    p.tiers = {"small"};
    projects[name] = p;
  }

  // A data plane that reported at `at` as Healthy with Slurm (slurmctld 26.05.5).
  void AddSlurmDataPlane(const std::string& name, int64_t at) {
    cp::DataPlane dp;
    dp.name = name;
    dp.state = "Healthy";
    dp.component_versions["slurm/slurmctld"] = "26.05.5";
    dp.last_report = at;
    data_planes.push_back(dp);
  }

  Result<std::map<std::string, bool>> Flags() override { return Answer(flags); }
  Status SetFlag(const std::string& name, bool value) override {
    return Write([&] { flags[name] = value; });
  }

  Status PutWorkspace(const cp::WorkspaceRecord& w) override {
    return Write([&] { workspaces[w.id] = w; });
  }
  Result<std::optional<cp::WorkspaceRecord>> GetWorkspace(const std::string& id) override {
    return Answer(Find(workspaces, id));
  }
  Result<std::vector<cp::WorkspaceRecord>> ProjectWorkspaces(const std::string&) override { return Unused(); }
  Result<std::vector<cp::WorkspaceRecord>> DataPlaneWorkspaces(const std::string&) override { return Unused(); }
  Status SetWorkspaceDesired(const std::string&, const std::string&, bool) override { return Unused(); }
  Status SetWorkspacePhase(const std::string&, const std::string&, const std::string&) override { return Unused(); }

  Status UpsertDataPlane(const cp::DataPlane& dp) override {
    return Write([&] { data_planes.push_back(dp); });
  }
  Result<std::vector<cp::DataPlane>> DataPlanes() override { return Answer(data_planes); }

  Status PutSubmission(const cp::Submission& s) override {
    return Write([&] { submissions[s.id] = s; });
  }
  Result<std::optional<cp::Submission>> GetSubmission(const std::string& id) override {
    return Answer(Find(submissions, id));
  }
  Result<std::vector<cp::Submission>> PendingSubmissions(const std::string&) override { return Unused(); }
  Result<std::optional<cp::Submission>> SubmissionOfJob(const std::string&, const std::string&, int64_t,
                                                        int64_t) override {
    return Unused();
  }
  Status PutCancellation(const cp::Cancellation&) override { return Unused(); }
  Result<std::optional<cp::Cancellation>> GetCancellation(const std::string&) override { return Unused(); }
  Result<std::vector<cp::Cancellation>> PendingCancellations(const std::string&) override { return Unused(); }

  Status PutTemplate(const cp::JobTemplate& t) override {
    return Write([&] { templates[t.project + "/" + t.name] = t; });
  }
  Result<std::optional<cp::JobTemplate>> GetTemplate(const std::string& project, const std::string& name) override {
    return Answer(Find(templates, project + "/" + name));
  }
  Status PutProject(const cp::ProjectConfig& p) override {
    return Write([&] { projects[p.name] = p; });
  }
  Result<std::optional<cp::ProjectConfig>> GetProject(const std::string& name) override {
    return Answer(Find(projects, name));
  }
  Result<std::vector<std::string>> ProjectNames() override { return Unused(); }
  Result<std::vector<cp::JobTemplate>> ProjectTemplates(const std::string& project) override {
    std::vector<cp::JobTemplate> out;
    for (const auto& [key, t] : templates) {
      if (t.project == project) out.push_back(t);
    }
    return Answer(out);
  }
  Result<bool> DeleteTemplate(const std::string& project, const std::string& name) override {
    if (unavailable) return Status::Error("database is locked");
    return templates.erase(project + "/" + name) > 0;
  }
  Status CreateToken(const std::string& token_hash, const cp::TokenInfo& t) override {
    return Write([&] {
      tokens[token_hash] = t;
      tokens[token_hash].id = token_hash.substr(0, 16);
    });
  }
  Result<std::optional<cp::TokenInfo>> LookupToken(const std::string& token_hash) override {
    return Answer(Find(tokens, token_hash));
  }
  Result<std::vector<cp::TokenInfo>> ListTokens(const std::string& subject) override {
    std::vector<cp::TokenInfo> out;
    for (const auto& [digest, t] : tokens) {
      if (subject.empty() || t.principal.subject == subject) out.push_back(t);
    }
    return Answer(out);
  }
  Result<bool> RevokeToken(const std::string& id, int64_t at) override {
    if (unavailable) return Status::Error("database is locked");
    for (auto& [digest, t] : tokens) {
      if (t.id != id) continue;
      if (!t.revoked_at) t.revoked_at = at;
      return true;
    }
    return false;
  }
  Status TouchToken(const std::string&, int64_t) override { return Unused(); }

  Result<int64_t> AssignUid(const std::string& user) override {
    if (unavailable) return Status::Error("database is locked");
    auto [it, added] = uids.emplace(user, 20000 + static_cast<int64_t>(uids.size()));
    return it->second;
  }

 private:
  template <typename T>
  static std::optional<T> Find(const std::map<std::string, T>& m, const std::string& key) {
    auto it = m.find(key);
    return it == m.end() ? std::nullopt : std::optional<T>(it->second);
  }
  template <typename T>
  Result<T> Answer(T value) const {
    if (unavailable) return Status::Error("database is locked");
    return value;
  }
  template <typename F>
  Status Write(F f) {
    if (unavailable) return Status::Error("database is locked");
    f();
    return Status::Ok();
  }
  // What the services under test never call: failing loudly shows a test that they did.
  static Status Unused() { return Status::Internal("FakeControlPlaneStores: not faked"); }
};

}  // namespace hpc::fakes
