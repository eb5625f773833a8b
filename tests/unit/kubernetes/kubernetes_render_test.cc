// `hpcplane render`: the objects the operator's own reconciler asks for, translated for
// Kubernetes, deterministic, with no secret value printed.
#include "kubernetes/kubernetes_render.h"
#include "slurm/config.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <set>

namespace hpc::kube {
namespace {

const char* kManifest = R"(apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata:
  name: research
  namespace: slurm
spec:
  accounting:
    enabled: true
  datasets:
    - name: shared
      mountPath: /shared
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata:
  name: cpu
spec:
  cluster: research
  replicas: 2
  resources:
    cpus: 4
    memoryMiB: 8000
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata:
  name: gpu
spec:
  cluster: research
  minReplicas: 0
  maxReplicas: 8
  resources:
    cpus: 16
    memoryMiB: 120000
    gpus: 2
)";

std::map<std::string, YAML::Node> Render(const RenderOptions& options = {}) {
  auto m = api::DecodeManifest(kManifest, "test");
  EXPECT_TRUE(m.ok()) << m.status().message();
  auto out = RenderKubernetes(*m, options);
  EXPECT_TRUE(out.ok()) << out.status().message();
  std::map<std::string, YAML::Node> objects;
  for (const auto& doc : YAML::LoadAll(*out)) {
    const std::string key = doc["kind"].as<std::string>() + "/" + doc["metadata"]["name"].as<std::string>();
    EXPECT_FALSE(objects.count(key)) << key << " twice";
    objects[key] = doc;
  }
  return objects;
}

TEST(KubernetesRenderTest, IsDeterministic) {
  auto m = api::DecodeManifest(kManifest, "test");
  ASSERT_TRUE(m.ok());
  auto a = RenderKubernetes(*m, {});
  auto b = RenderKubernetes(*m, {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b) << "keys are generated each time, so equal output means none is printed";
}

TEST(KubernetesRenderTest, EveryObjectOfTheClusterAndNoSecretValue) {
  auto objects = Render();
  std::set<std::string> names;
  for (const auto& [key, o] : objects) {
    names.insert(key);
    EXPECT_EQ(o["metadata"]["namespace"].as<std::string>(), "slurm") << key;
    EXPECT_EQ(o["metadata"]["labels"]["app.kubernetes.io/managed-by"].as<std::string>(), "hpcplane") << key;
    if (o["kind"].as<std::string>() == "Secret") {
      EXPECT_FALSE(o["data"]) << key << " prints secret data";
    }
  }
  for (const char* want :
       {"Service/research-hosts", "ConfigMap/research-slurm-config", "ConfigMap/research-slurm-users",
        "Secret/research-slurm-key", "Secret/research-jwt-key", "Secret/research-slurmdbd-config",
        "PersistentVolumeClaim/research-controller-state", "PersistentVolumeClaim/research-accounting-db",
        "PersistentVolumeClaim/research-dataset-shared", "Pod/research-controller", "Pod/research-restapi",
        "Pod/research-mariadb", "Pod/research-slurmdbd", "Pod/research-cpu-0", "Pod/research-cpu-1"}) {
    EXPECT_TRUE(names.count(want)) << want;
  }
  EXPECT_FALSE(names.count("Secret/research-munge-key")) << "26.05 authenticates with auth/slurm";
  EXPECT_FALSE(names.count("Pod/research-munge"));
  EXPECT_FALSE(names.count("Pod/research-sackd")) << "sackd runs beside each client instead";
  EXPECT_FALSE(names.count("PersistentVolumeClaim/research-munge-socket"));
  EXPECT_FALSE(names.count("PersistentVolumeClaim/research-sack-socket"));
  EXPECT_FALSE(names.count("Pod/research-cpu-2"));
  EXPECT_FALSE(names.count("Pod/research-gpu-0")) << "an autoscaled nodeset starts at its minimum";
}

// The names of a pod's sidecars (init containers that keep running) and whether its main
// container mounts the Slurm key.
std::set<std::string> Sidecars(const YAML::Node& pod) {
  std::set<std::string> names;
  for (const auto& c : pod["spec"]["initContainers"]) {
    if (c["restartPolicy"] && c["restartPolicy"].as<std::string>() == "Always")
      names.insert(c["name"].as<std::string>());
  }
  return names;
}
bool MountsSlurmKey(const YAML::Node& pod) {
  for (const auto& m : pod["spec"]["containers"][0]["volumeMounts"]) {
    if (m["mountPath"].as<std::string>() == slurm::kSlurmKeyDir) return true;
  }
  return false;
}

TEST(KubernetesRenderTest, Slurm2205PodsEachRunMunged) {
  RenderOptions options;
  options.release = {22, 5, 8};
  auto objects = Render(options);
  EXPECT_TRUE(objects.count("Secret/research-munge-key"));
  EXPECT_FALSE(objects.count("Secret/research-slurm-key"));
  for (const auto& [key, o] : objects) {
    if (o["kind"].as<std::string>() != "Pod" || key == "Pod/research-mariadb") continue;
    EXPECT_EQ(Sidecars(o), std::set<std::string>{"munged"}) << key;
  }
}

TEST(KubernetesRenderTest, AuthSlurmDaemonsHoldTheKeyClientsRunSackdAndWorkersRequestTheirShape) {
  auto objects = Render();
  for (const auto& [key, o] : objects) {
    if (o["kind"].as<std::string>() != "Pod" || key == "Pod/research-mariadb") continue;
    const bool client = key == "Pod/research-login" || key == "Pod/research-restapi";
    EXPECT_EQ(Sidecars(o), client ? std::set<std::string>{"sackd"} : std::set<std::string>{}) << key;
    EXPECT_EQ(MountsSlurmKey(o), !client) << key << ": only Slurm's daemons hold the key";
  }
  const YAML::Node worker = objects.at("Pod/research-cpu-1");
  EXPECT_EQ(worker["spec"]["hostname"].as<std::string>(), "cpu-1") << "the Slurm node name";
  EXPECT_EQ(worker["spec"]["containers"][0]["resources"]["requests"]["cpu"].as<std::string>(), "4");
  EXPECT_EQ(worker["spec"]["containers"][0]["resources"]["requests"]["memory"].as<std::string>(), "8000Mi");
  // slurm-users lists the image's accounts, so every uid resolves the same in every pod.
  const std::string passwd = objects.at("ConfigMap/research-slurm-users")["data"]["passwd"].as<std::string>();
  EXPECT_NE(passwd.find("slurm:x:64030:64030:"), std::string::npos) << passwd;
  EXPECT_NE(passwd.find("munge:x:64031:64031:"), std::string::npos) << passwd;
}

TEST(KubernetesRenderTest, OptionsChooseNamespaceImageAndStorageClass) {
  RenderOptions options;
  options.namespace_name = "hpc";
  options.image = "registry.example/slurm:1";
  options.storage_class = "fast";
  auto objects = Render(options);
  EXPECT_EQ(objects.at("Pod/research-controller")["metadata"]["namespace"].as<std::string>(), "hpc");
  EXPECT_EQ(objects.at("Pod/research-controller")["spec"]["containers"][0]["image"].as<std::string>(),
            "registry.example/slurm:1");
  EXPECT_EQ(objects.at("Pod/research-controller")["spec"]["dnsConfig"]["searches"][0].as<std::string>(),
            "research-hosts.hpc.svc.cluster.local");
  EXPECT_EQ(objects.at("PersistentVolumeClaim/research-controller-state")["spec"]["storageClassName"].as<std::string>(),
            "fast");
}

// The manifest with the cluster's environment, the gpu nodeset's and a shared root set.
api::Manifest WithEnvironments(const std::string& cluster_env, const std::string& gpu_env) {
  auto m = api::DecodeManifest(kManifest, "test");
  EXPECT_TRUE(m.ok());
  m->clusters[0].spec.environment = cluster_env;
  m->clusters[0].spec.shared_root = true;
  m->nodesets[1].spec.environment = gpu_env;
  return *m;
}

TEST(KubernetesRenderTest, EnvironmentsAreTheirImagesAndOneWithoutAnImageIsRefused) {
  RenderOptions options;
  auto table = ParseEnvironmentImages(R"(
slurm-24.11: {image: registry.example/slurm:24.11, slurm: "24.11"}
gpu-24.11: {image: registry.example/gpu:24.11, slurm: "24.11"}
slurm-26.05: {image: registry.example/slurm:26.05, slurm: "26.05"}
)",
                                      "table");
  ASSERT_TRUE(table.ok()) << table.status().message();
  options.environments = *table;
  auto out = RenderKubernetes(WithEnvironments("slurm-24.11", "gpu-24.11"), options);
  ASSERT_TRUE(out.ok()) << out.status().message();
  std::map<std::string, YAML::Node> pods;
  for (const auto& doc : YAML::LoadAll(*out)) {
    if (doc["kind"].as<std::string>() == "Pod") pods[doc["metadata"]["name"].as<std::string>()] = doc;
  }
  EXPECT_EQ(pods.at("research-controller")["spec"]["containers"][0]["image"].as<std::string>(),
            "registry.example/slurm:24.11");
  // Slurm 24.11's configuration: no HTTP on slurmctld's port (25.11 on), so no /readyz probe.
  EXPECT_FALSE(pods.at("research-controller")["spec"]["containers"][0]["readinessProbe"]["httpGet"]);
  EXPECT_EQ(pods.at("research-cpu-0")["spec"]["containers"][0]["image"].as<std::string>(),
            "registry.example/slurm:24.11");
  bool shared_usr = false;
  for (const auto& m : pods.at("research-cpu-0")["spec"]["containers"][0]["volumeMounts"]) {
    shared_usr = shared_usr || m["mountPath"].as<std::string>() == "/usr";
  }
  EXPECT_TRUE(shared_usr) << "the cluster's workers share its root";

  out = RenderKubernetes(WithEnvironments("slurm-26.05", "gpu-24.11"), options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(),
            "render: nodeset gpu: spec.environment: environment \"gpu-24.11\" carries Slurm 24.11, the cluster runs "
            "Slurm 26.05: every pod of a cluster runs its release");
  out = RenderKubernetes(WithEnvironments("slurm-25.11", ""), options);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("render: cluster research: spec.environment: environment \"slurm-25.11\" "
                                        "has no image on this data plane"),
            std::string::npos)
      << out.status().message();
  out = RenderKubernetes(WithEnvironments("slurm-24.11", ""), {});
  EXPECT_FALSE(out.ok()) << "without a table, a named environment is not the default image";
}

TEST(KubernetesRenderTest, AManifestWithoutAClusterIsRefused) {
  api::Manifest m;
  auto out = RenderKubernetes(m, {});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("exactly one SlurmCluster"), std::string::npos);
}

}  // namespace
}  // namespace hpc::kube
