// Environments on Kubernetes: the operator's table of images, and a cluster's and a nodeset's
// environments resolved against it (refused with the field that names them, never replaced).
#include "kubernetes/environment_images.h"

#include <gtest/gtest.h>

namespace hpc::kube {
namespace {

constexpr const char* kTable = R"(
slurm-26.05: {image: "registry.example/hpcplane/slurm:26.05", slurm: "26.05"}
workspace-26.05:
  image: registry.example/hpcplane/workspace:26.05
  slurm: "26.05.5"
slurm-24.11: {image: registry.example/hpcplane/slurm:24.11, slurm: "24.11"}
)";

EnvironmentImages Table() {
  auto t = ParseEnvironmentImages(kTable, "environments.yaml");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.value_or({});
}

const EnvironmentImage kFallback{"hpcplane-slurm:26.05", {26, 5, 0}};

api::SlurmCluster Cluster(const std::string& environment) {
  api::SlurmCluster c;
  c.metadata.name = "research";
  c.spec.environment = environment;
  return c;
}

TEST(EnvironmentImagesTest, TheTableNamesEachEnvironmentsImageAndSlurm) {
  EnvironmentImages t = Table();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t.at("workspace-26.05").image, "registry.example/hpcplane/workspace:26.05");
  EXPECT_EQ(t.at("workspace-26.05").release.Series(), "26.05");
  EXPECT_EQ(t.at("slurm-24.11").release.Series(), "24.11");
  auto empty = ParseEnvironmentImages("", "f");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty()) << "an empty file: no environments";
}

TEST(EnvironmentImagesTest, AWrongTableIsRefusedSayingWhereAndWhy) {
  struct Case {
    const char* yaml;
    const char* says;
  };
  for (const Case& c : {
           Case{"- slurm-26.05", "f: must map environment names to {image, slurm}"},
           Case{"Slurm_26: {image: a:b, slurm: '26.05'}", "f: Slurm_26: must be 1-40 lowercase letters"},
           Case{"slurm-26.05: a:b", "f: slurm-26.05: must be {image: REFERENCE, slurm: RELEASE}"},
           Case{"slurm-26.05: {image: a:b, slrum: '26.05'}", "f: slurm-26.05: unknown field \"slrum\" (image, slurm)"},
           Case{"slurm-26.05: {slurm: '26.05'}", "f: slurm-26.05.image: must be an image reference"},
           Case{"slurm-26.05: {image: 'a b', slurm: '26.05'}", "f: slurm-26.05.image: must be an image reference"},
           Case{"slurm-26.05: {image: a:b}", "f: slurm-26.05.slurm: the Slurm release the image carries is required"},
           Case{"slurm-26.05: {image: a:b, slurm: latest}", "f: slurm-26.05.slurm: "},
           Case{"slurm-26.05: {image: [a], slurm: '26.05'}", "f: slurm-26.05.image: must be a string"},
           Case{"slurm-26.05: {image: a:b, slurm: '26.05'", "f: not YAML"},
       }) {
    auto t = ParseEnvironmentImages(c.yaml, "f");
    ASSERT_FALSE(t.ok()) << c.yaml;
    EXPECT_EQ(t.status().message().rfind(c.says, 0), 0u) << c.yaml << " -> " << t.status().message();
  }
  EXPECT_FALSE(LoadEnvironmentImages("/nonexistent/environments.yaml").ok());
}

TEST(EnvironmentImagesTest, AClusterRunsItsEnvironmentsImageAndOnlyThatSeriesBesides) {
  auto images = ResolveClusterImages(Cluster("slurm-24.11"), Table(), kFallback);
  ASSERT_TRUE(images.ok()) << images.status().message();
  EXPECT_EQ(images->image, "registry.example/hpcplane/slurm:24.11");
  EXPECT_EQ(images->release.Series(), "24.11");
  EXPECT_EQ(images->by_environment,
            (std::map<std::string, std::string>{{"slurm-24.11", "registry.example/hpcplane/slurm:24.11"}}));

  images = ResolveClusterImages(Cluster("slurm-26.05"), Table(), kFallback);
  ASSERT_TRUE(images.ok());
  EXPECT_EQ(images->image, "registry.example/hpcplane/slurm:26.05");
  EXPECT_EQ(images->by_environment.size(), 2u);
  EXPECT_EQ(images->by_environment.at("workspace-26.05"), "registry.example/hpcplane/workspace:26.05");
}

TEST(EnvironmentImagesTest, AClusterNamingNoEnvironmentRunsTheDefaultsEntryElseTheOperatorsImage) {
  auto images = ResolveClusterImages(Cluster(""), Table(), kFallback);
  ASSERT_TRUE(images.ok());
  EXPECT_EQ(images->image, "registry.example/hpcplane/slurm:26.05") << "slurm-26.05 is the default environment";
  images = ResolveClusterImages(Cluster(""), {}, kFallback);
  ASSERT_TRUE(images.ok());
  EXPECT_EQ(images->image, "hpcplane-slurm:26.05");
  EXPECT_EQ(images->by_environment.at("slurm-26.05"), "hpcplane-slurm:26.05");
}

TEST(EnvironmentImagesTest, AnEnvironmentWithoutAnImageHereIsRefusedNamingTheField) {
  auto images = ResolveClusterImages(Cluster("slurm-25.11"), Table(), kFallback);
  ASSERT_FALSE(images.ok());
  EXPECT_EQ(images.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(images.status().field(), "spec.environment");
  EXPECT_EQ(images.status().message(),
            "spec.environment: environment \"slurm-25.11\" has no image on this data plane (the operator's "
            "--environments lists: slurm-24.11, slurm-26.05, workspace-26.05)");
  EXPECT_FALSE(ResolveClusterImages(Cluster("slurm-24.11"), {}, kFallback).ok())
      << "named, it is never replaced by the operator's own image of another release";
}

TEST(EnvironmentImagesTest, TheOperatorsOwnImageIsTheBuiltInEnvironmentOfItsRelease) {
  auto images = ResolveClusterImages(Cluster("slurm-26.05"), {}, kFallback);
  ASSERT_TRUE(images.ok()) << "naming what it runs anyway is no error: " << images.status().message();
  EXPECT_EQ(images->image, "hpcplane-slurm:26.05");
  const EnvironmentImage older{"hpcplane-slurm:24.11", {24, 11, 0}};
  images = ResolveClusterImages(Cluster(""), {}, older);
  ASSERT_TRUE(images.ok());
  EXPECT_EQ(images->release.Series(), "24.11");
  EXPECT_TRUE(ResolveClusterImages(Cluster("slurm-24.11"), {}, older).ok());
  EXPECT_EQ(WithOperatorImage(Table(), kFallback).at("slurm-26.05").image, "registry.example/hpcplane/slurm:26.05")
      << "the table's own entry wins";
}

TEST(EnvironmentImagesTest, ANodeSetOrWorkspaceRunsAnEnvironmentOfItsClustersSeriesOnly) {
  const EnvironmentImages table = Table();
  auto images = ResolveClusterImages(Cluster("slurm-26.05"), table, kFallback);
  ASSERT_TRUE(images.ok());
  EXPECT_TRUE(CheckEnvironment("slurm-26.05", *images, table, kFallback).ok()) << "the cluster's own";
  EXPECT_TRUE(CheckEnvironment("workspace-26.05", *images, table, kFallback).ok());
  Status s = CheckEnvironment("slurm-24.11", *images, table, kFallback);
  EXPECT_EQ(s.field(), "spec.environment");
  EXPECT_EQ(s.message(),
            "spec.environment: environment \"slurm-24.11\" carries Slurm 24.11, the cluster runs Slurm 26.05: every "
            "pod of a cluster runs its release");
  s = CheckEnvironment("gpu-26.05", *images, table, kFallback);
  EXPECT_NE(s.message().find("environment \"gpu-26.05\" has no image on this data plane"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace hpc::kube
