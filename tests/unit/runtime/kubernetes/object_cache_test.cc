#include "runtime/kubernetes/informer.h"

#include <gtest/gtest.h>

namespace hpc::runtime::kubernetes {
namespace {

using nlohmann::json;

json Object(const std::string& ns, const std::string& name, const std::string& rv, json labels = json::object()) {
  return {{"metadata", {{"namespace", ns}, {"name", name}, {"resourceVersion", rv}, {"labels", labels}}},
          {"data", {{"v", rv}}}};
}

std::vector<std::string> Changes(const std::vector<WatchEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.type + " " + e.object["metadata"].value("name", ""));
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ObjectCache, AListReplacesEverythingAndReportsWhatChangedWhileNotWatching) {
  ObjectCache cache;
  EXPECT_EQ(Changes(cache.Replace(json::array({Object("a", "x", "1"), Object("a", "y", "2")}))),
            (std::vector<std::string>{"ADDED x", "ADDED y"}));
  // Relisted after a 410: y changed, x was deleted, z was created meanwhile.
  EXPECT_EQ(Changes(cache.Replace(json::array({Object("a", "y", "5"), Object("a", "z", "6")}))),
            (std::vector<std::string>{"ADDED z", "DELETED x", "MODIFIED y"}));
  EXPECT_FALSE(cache.Get("a", "x"));
  EXPECT_EQ(cache.Get("a", "y")->at("data")["v"], "5");
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(cache.Replace(json::array({Object("a", "y", "5"), Object("a", "z", "6")})).empty())
      << "an unchanged list reports nothing";
}

TEST(ObjectCache, WatchEventsAddModifyAndDeleteAndBookmarksChangeNothing) {
  ObjectCache cache;
  EXPECT_TRUE(cache.Apply({"ADDED", Object("a", "x", "1")}));
  EXPECT_TRUE(cache.Apply({"MODIFIED", Object("a", "x", "2")}));
  EXPECT_EQ(cache.Get("a", "x")->at("data")["v"], "2");
  EXPECT_FALSE(cache.Apply({"BOOKMARK", Object("", "", "3")}));
  EXPECT_TRUE(cache.Apply({"DELETED", Object("a", "x", "4")}));
  EXPECT_FALSE(cache.Get("a", "x"));
  EXPECT_FALSE(cache.Apply({"DELETED", Object("a", "x", "4")})) << "nothing left to delete";
}

TEST(ObjectCache, AWritesAnswerIsSeenAtOnceAndAnOlderEventDoesNotUndoIt) {
  ObjectCache cache;
  cache.Replace(json::array({Object("a", "x", "1")}));
  cache.Observe(Object("a", "x", "7"));  // the operator's PUT answered with version 7
  EXPECT_EQ(cache.Get("a", "x")->at("data")["v"], "7");
  EXPECT_FALSE(cache.Apply({"MODIFIED", Object("a", "x", "5")})) << "an event from before the write";
  EXPECT_EQ(cache.Get("a", "x")->at("data")["v"], "7");
  EXPECT_TRUE(cache.Apply({"MODIFIED", Object("a", "x", "7")}));
  cache.Observe(Object("a", "x", "6"));  // a slower writer's older answer
  EXPECT_EQ(cache.Get("a", "x")->at("data")["v"], "7");
  cache.Observe(Object("a", "new", "8"));
  EXPECT_TRUE(cache.Get("a", "new"));
  cache.Observe(json("not an object"));
  EXPECT_EQ(cache.size(), 2u);
}

TEST(ObjectCache, VersionsThatAreNotNumbersAreTakenInTheOrderTheyCome) {
  ObjectCache cache;
  cache.Apply({"ADDED", Object("a", "x", "b9")});
  EXPECT_TRUE(cache.Apply({"MODIFIED", Object("a", "x", "a1")}));
  EXPECT_EQ(cache.Get("a", "x")->at("data")["v"], "a1");
}

TEST(ObjectCache, ListFiltersByNamespaceAndEveryLabelAsked) {
  ObjectCache cache;
  cache.Replace(json::array({Object("slurm", "w0", "1", {{"c", "research"}, {"role", "worker"}}),
                             Object("slurm", "ctl", "2", {{"c", "research"}, {"role", "controller"}}),
                             Object("slurm2", "w0", "3", {{"c", "research"}, {"role", "worker"}}),
                             Object("slurm-x", "w9", "4", {{"c", "research"}, {"role", "worker"}})}));
  EXPECT_EQ(cache.List("slurm", {{"role", "worker"}}).size(), 1u) << "slurm-x and slurm2 are other namespaces";
  EXPECT_EQ(cache.List("slurm", {{"c", "research"}}).size(), 2u);
  EXPECT_EQ(cache.List("", {{"role", "worker"}}).size(), 3u);
  EXPECT_TRUE(cache.List("slurm", {{"c", "other"}}).empty());
  std::vector<std::string> visited;
  cache.ForEach("slurm", {{"c", "research"}}, [&](const json& o) { visited.push_back(o["metadata"]["name"]); });
  EXPECT_EQ(visited, (std::vector<std::string>{"ctl", "w0"})) << "the same objects as List, in place";
}

// The API server's field bookkeeping is not kept: nothing reads it, and it was most of a pod.
TEST(ObjectCache, ManagedFieldsAreNotKept) {
  ObjectCache cache;
  json pod = Object("slurm", "w0", "1");
  pod["metadata"]["managedFields"] = json::array({{{"manager", "kubelet"}, {"fieldsV1", {{"f:status", {}}}}}});
  cache.Replace(json::array({pod}));
  EXPECT_FALSE(cache.Get("slurm", "w0")->at("metadata").contains("managedFields"));
  pod["metadata"]["resourceVersion"] = "2";
  ASSERT_TRUE(cache.Apply({"MODIFIED", pod}));
  EXPECT_FALSE(cache.Get("slurm", "w0")->at("metadata").contains("managedFields"));
  pod["metadata"]["resourceVersion"] = "3";
  cache.Observe(pod);
  EXPECT_EQ(cache.Get("slurm", "w0")->at("metadata")["resourceVersion"], "3");
  EXPECT_FALSE(cache.Get("slurm", "w0")->at("metadata").contains("managedFields"));
}

}  // namespace
}  // namespace hpc::runtime::kubernetes
