// The Kubernetes runtime against the test API server (tests/kubernetes/apiserver.py, whose
// fidelity apiserver_test.py checks with kubectl and the official Python client). Run through
// `testcluster.py run --crds -- kubernetes_runtime_tests`, which starts a fresh server and
// passes KUBECONFIG, HPCPLANE_TEST_APISERVER and HPCPLANE_TEST_APISERVER_TOKEN_FILE.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>

#include <httplib.h>

#include "common/files.h"
#include "common/jwt.h"
#include "common/subprocess.h"
#include "runtime/kubernetes/api_client.h"
#include "runtime/kubernetes/informer.h"
#include "runtime/kubernetes/kubernetes_runtime.h"

namespace hpc::runtime::kubernetes {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

class KubernetesRuntimeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_FALSE(Env("KUBECONFIG").empty()) << "run through tests/kubernetes/testcluster.py run --crds -- ...";
  }

  void SetUp() override {
    auto conn = LoadKubeconfig(Env("KUBECONFIG"));
    ASSERT_TRUE(conn.ok()) << conn.status().message();
    // Each test in its own namespace, as tests side by side must not collide.
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    namespace_ = "t-" + std::to_string(std::hash<std::string>{}(info->name()) % 1000000007);
    conn->namespace_name = namespace_;
    api_ = std::make_shared<ApiClient>(*conn, RetryPolicy{4, std::chrono::milliseconds(50)});
    auto ns = api_->Post("/api/v1/namespaces",
                         {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", namespace_}}}});
    ASSERT_TRUE(ns.ok() || ns.status().code() == StatusCode::kAlreadyExists) << ns.status().message();
    ctx_.namespace_name = namespace_;
    ctx_.cluster = "research";
    ctx_.image = "hpcplane-slurm:test";
    rt_ = std::make_unique<KubernetesRuntime>(api_, ctx_);
  }

  Status Debug(const std::string& what) {
    Status s = api_->Post("/debug/" + what, json::object()).status();
    EXPECT_TRUE(s.ok()) << s.message();
    return s;
  }

  PodSpec Worker(const std::string& name) {
    PodSpec p;
    p.name = name;
    p.labels = {{"hpcplane.io/cluster", "research"}, {"hpcplane.io/component", "worker"}};
    p.command = {"slurmd", "-D"};
    p.mounts = {{MountSource::kConfigMap, "slurm-config", "/etc/slurm", "", true},
                {MountSource::kSecret, "munge-key", "/run/secrets/munge", "", true},
                {MountSource::kVolume, "dataset-shared", "/shared", "", false}};
    p.readiness.tcp_port = 6818;
    p.resources.requests = {4, 8000, 0};
    p.placement.node_selector = {{"node.kubernetes.io/instance-type", "c6i.2xlarge"}};
    p.placement.tolerations = {{"dedicated", "Equal", "hpc", "NoSchedule", -1}};
    p.placement.affinity = json::parse(R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}})");
    p.placement.security_context = {{"seccompProfile", {{"type", "RuntimeDefault"}}}};
    return p;
  }

  Status ApplyWorkerInputs() {
    RETURN_IF_ERROR(rt_->ApplyConfigMap({"slurm-config", {{"slurm.conf", "ClusterName=research\n"}}}));
    RETURN_IF_ERROR(rt_->ApplySecret({"munge-key", {{"munge.key", "k"}}, 64031, 64031}));
    return rt_->EnsureVolume({"dataset-shared", 0, 0, 01777, true});
  }

  // Informers of the namespace's hpcplane objects, each on its own connection and thread, as
  // the operator runs them; stopped at the end of the test.
  Caches StartInformers(const std::vector<std::string>& plurals) {
    Caches caches;
    for (const auto& plural : plurals) {
      auto client = std::make_shared<ApiClient>(api_->connection());
      informers_.push_back(std::make_unique<Informer>(client, "/api/v1/namespaces/" + namespace_ + "/" + plural,
                                                      "app.kubernetes.io/managed-by=hpcplane"));
      Informer* informer = informers_.back().get();
      caches.Add(plural, informer);
      informer_threads_.emplace_back([this, informer] {
        informer->Run(stop_informers_, [this](const WatchEvent& e) {
          std::lock_guard<std::mutex> lock(events_mu_);
          events_.push_back(e.type + " " + e.object["metadata"].value("name", ""));
        });
      });
    }
    EXPECT_TRUE(WaitFor(
        [&] { return std::all_of(informers_.begin(), informers_.end(), [](const auto& i) { return i->synced(); }); }));
    return caches;
  }

  void TearDown() override {
    stop_informers_ = true;
    std::vector<Informer*> running;
    for (auto& i : informers_) running.push_back(i.get());
    StopInformers(running);
    for (auto& t : informer_threads_) t.join();
  }

  bool SawEvent(const std::string& what) {
    std::lock_guard<std::mutex> lock(events_mu_);
    return std::find(events_.begin(), events_.end(), what) != events_.end();
  }

  // Reads (get and list) the test's hpcplane clients sent so far, by resource.
  std::map<std::string, int> Reads() {
    auto counts = api_->Get("/debug/requests?agent=hpcplane/");
    EXPECT_TRUE(counts.ok()) << counts.status().message();
    std::map<std::string, int> out;
    for (const auto& [what, n] : counts->items()) {
      if (what.rfind("get ", 0) == 0 || what.rfind("list ", 0) == 0) out[what] = n.get<int>();
    }
    return out;
  }

  std::string namespace_;
  std::shared_ptr<ApiClient> api_;
  ObjectContext ctx_;
  std::unique_ptr<KubernetesRuntime> rt_;
  std::atomic<bool> stop_informers_{false};
  std::vector<std::unique_ptr<Informer>> informers_;
  std::vector<std::thread> informer_threads_;
  std::mutex events_mu_;
  std::vector<std::string> events_;
};

TEST_F(KubernetesRuntimeTest, KubeconfigIsReadAndPlainHttpOrSkippedVerificationRefused) {
  auto conn = LoadKubeconfig(Env("KUBECONFIG"));
  ASSERT_TRUE(conn.ok());
  EXPECT_EQ(conn->server, Env("HPCPLANE_TEST_APISERVER"));
  EXPECT_EQ(conn->token_file, Env("HPCPLANE_TEST_APISERVER_TOKEN_FILE"));
  EXPECT_NE(conn->ca_pem.find("BEGIN CERTIFICATE"), std::string::npos);
  auto dir = files::MakeTempDir("hpcplane-kubeconfig");
  ASSERT_TRUE(dir.ok());
  auto write = [&](const std::string& server, const std::string& extra) {
    std::ofstream(*dir + "/config") << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                                    << "clusters: [{name: k, cluster: {server: \"" << server << "\"" << extra << "}}]\n"
                                    << "users: [{name: u, user: {token: abcdefabcdefabcdef}}]\n"
                                    << "contexts: [{name: c, context: {cluster: k, user: u}}]\n";
    return LoadKubeconfig(*dir + "/config");
  };
  auto http = write("http://127.0.0.1:1", "");
  ASSERT_FALSE(http.ok());
  EXPECT_NE(http.status().message().find("only https://"), std::string::npos) << http.status().message();
  auto skip = write("https://127.0.0.1:1", ", insecure-skip-tls-verify: true");
  ASSERT_FALSE(skip.ok());
  EXPECT_NE(skip.status().message().find("insecure-skip-tls-verify"), std::string::npos);
  EXPECT_TRUE(write("https://127.0.0.1:1", "").ok());
  ASSERT_TRUE(files::RemoveAll(*dir).ok());
}

// A client certificate and key, inline (base64 -data) or in files beside the kubeconfig, as
// kubeadm's and kind's admin kubeconfigs have them; half a pair, or what is not a PEM
// certificate with its key, is refused with what is wrong.
TEST_F(KubernetesRuntimeTest, KubeconfigClientCertificatesAreRead) {
  auto dir = files::MakeTempDir("hpcplane-kubeconfig");
  ASSERT_TRUE(dir.ok());
  Status made = RunChecked({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                            "-keyout", *dir + "/admin.key", "-out", *dir + "/admin.crt", "-days", "1", "-subj",
                            "/O=system:masters/CN=admin"});
  ASSERT_TRUE(made.ok()) << made.message();
  const std::string cert = *files::Read(*dir + "/admin.crt"), key = *files::Read(*dir + "/admin.key");
  auto write = [&](const std::string& user) {
    std::ofstream(*dir + "/config") << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                                    << "clusters: [{name: k, cluster: {server: \"https://127.0.0.1:1\"}}]\n"
                                    << "users: [{name: u, user: {" << user << "}}]\n"
                                    << "contexts: [{name: c, context: {cluster: k, user: u}}]\n";
    return LoadKubeconfig(*dir + "/config");
  };
  auto files_form = write("client-certificate: admin.crt, client-key: admin.key");
  ASSERT_TRUE(files_form.ok()) << files_form.status().message();
  EXPECT_EQ(files_form->client_cert_pem, cert);
  EXPECT_EQ(files_form->client_key_pem, key);
  EXPECT_TRUE(files_form->token.empty());
  auto inline_form =
      write("client-certificate-data: " + jwt::Base64Encode(cert) + ", client-key-data: " + jwt::Base64Encode(key));
  ASSERT_TRUE(inline_form.ok()) << inline_form.status().message();
  EXPECT_EQ(inline_form->client_key_pem, key);
  auto half = write("client-certificate: admin.crt");
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("a client certificate without its key"), std::string::npos)
      << half.status().message();
  auto garbage =
      write("client-certificate-data: " + jwt::Base64Encode("not a certificate") + ", client-key: admin.key");
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("not a PEM certificate and its private key"), std::string::npos)
      << garbage.status().message();
  auto nothing = write("username: admin");
  ASSERT_FALSE(nothing.ok());
  EXPECT_NE(nothing.status().message().find("no token, tokenFile, exec plugin or client certificate"),
            std::string::npos)
      << nothing.status().message();
  ASSERT_TRUE(files::RemoveAll(*dir).ok());
}

// A kubeconfig whose user is an exec plugin (client.authentication.k8s.io/v1 ExecCredential), as
// EKS's, GKE's and AKS's sign-in helpers are: the plugin (a script here, beside the kubeconfig)
// is run for a token, which is kept until a minute before its expiry, and asked again once after
// a 401; a plugin that fails, or answers what is not an ExecCredential, is named with why.
TEST_F(KubernetesRuntimeTest, KubeconfigExecPluginsGiveTheTokenAndAreAskedAgainWhenItExpires) {
  auto dir = files::MakeTempDir("hpcplane-kubeconfig");
  ASSERT_TRUE(dir.ok());
  const std::string token = *files::Read(Env("HPCPLANE_TEST_APISERVER_TOKEN_FILE"));
  // The plugin answers with the token in $TOKEN_FILE, expiring at $EXPIRES, and counts its runs;
  // it also checks that it was told it is not interactive.
  std::ofstream(*dir + "/plugin.sh")
      << "#!/bin/sh\n"
      << "echo run >> \"$RUNS\"\n"
      << "case \"$KUBERNETES_EXEC_INFO\" in *'\"interactive\":false'*) ;; *) echo not told >&2; exit 3;; esac\n"
      << "[ \"$1\" = fail ] && { echo 'sign-in expired: run login' >&2; exit 1; }\n"
      << "[ \"$1\" = garbage ] && { echo 'hello'; exit 0; }\n"
      << "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",'\n"
      << "printf '\"status\":{\"token\":\"%s\",\"expirationTimestamp\":\"%s\"}}' \"$(cat \"$TOKEN_FILE\")\" "
         "\"$EXPIRES\"\n";
  ASSERT_EQ(chmod((*dir + "/plugin.sh").c_str(), 0755), 0);
  ASSERT_TRUE(files::WriteAtomic(*dir + "/token", token, 0600).ok());
  auto write = [&](const std::string& api_version, const std::string& arg, const std::string& expires) {
    std::ofstream(*dir + "/config") << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                                    << "clusters: [{name: k, cluster: {server: \"" << Env("HPCPLANE_TEST_APISERVER")
                                    << "\", certificate-authority-data: \""
                                    << jwt::Base64Encode(api_->connection().ca_pem) << "\"}}]\n"
                                    << "users: [{name: u, user: {exec: {apiVersion: " << api_version
                                    << ", command: ./plugin.sh, args: [" << arg << "], env: [{name: RUNS, value: \""
                                    << *dir << "/runs\"}, {name: TOKEN_FILE, value: \"" << *dir
                                    << "/token\"}, {name: EXPIRES, value: \"" << expires << "\"}]}}}]\n"
                                    << "contexts: [{name: c, context: {cluster: k, user: u}}]\n";
    (void)files::RemoveAll(*dir + "/runs");
    return LoadKubeconfig(*dir + "/config");
  };
  auto runs = [&] {
    auto text = files::Read(*dir + "/runs");
    return text.ok() ? static_cast<int>(std::count(text->begin(), text->end(), '\n')) : 0;
  };
  // Valid for an hour: one run serves every request.
  auto conn = write("client.authentication.k8s.io/v1", "ok", "2999-01-01T00:00:00Z");
  ASSERT_TRUE(conn.ok()) << conn.status().message();
  ASSERT_TRUE(conn->exec.has_value());
  EXPECT_EQ(conn->exec->command, *dir + "/plugin.sh");
  {
    ApiClient client(*conn, RetryPolicy{1});
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(client.Get("/api/v1/namespaces").ok());
    EXPECT_EQ(runs(), 1);
  }
  // Within a minute of its expiry (with a fraction and an offset, as some plugins write it):
  // asked again for each request.
  conn = write("client.authentication.k8s.io/v1", "ok", "2000-01-01T00:00:30.5+00:00");
  ASSERT_TRUE(conn.ok());
  {
    ApiClient client(*conn, RetryPolicy{1});
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(client.Get("/api/v1/namespaces").ok());
    EXPECT_EQ(runs(), 2);
  }
  // Revoked before its expiry: the 401 makes it ask the plugin again, once (here it still has
  // the wrong one: 401 it is), and a later request after the plugin has a good one succeeds.
  ASSERT_TRUE(files::WriteAtomic(*dir + "/token", "not-the-token-not-the-token", 0600).ok());
  conn = write("client.authentication.k8s.io/v1", "ok", "2999-01-01T00:00:00Z");
  {
    ApiClient client(*conn, RetryPolicy{1});
    auto refused = client.Get("/api/v1/namespaces");
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kUnauthenticated) << refused.status().message();
    EXPECT_EQ(runs(), 2);
    ASSERT_TRUE(files::WriteAtomic(*dir + "/token", token, 0600).ok());
    auto after = client.Get("/api/v1/namespaces");
    EXPECT_TRUE(after.ok()) << after.status().message();
    EXPECT_EQ(runs(), 3);
  }
  // What fails is said, naming the plugin; the token is in no message.
  conn = write("client.authentication.k8s.io/v1", "fail", "2999-01-01T00:00:00Z");
  ASSERT_TRUE(conn.ok());
  auto failed = ApiClient(*conn, RetryPolicy{1}).Get("/api/v1/namespaces");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(failed.status().message().find("plugin.sh: exit 1: sign-in expired"), std::string::npos)
      << failed.status().message();
  conn = write("client.authentication.k8s.io/v1", "garbage", "2999-01-01T00:00:00Z");
  auto garbage = ApiClient(*conn, RetryPolicy{1}).Get("/api/v1/namespaces");
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("not an ExecCredential"), std::string::npos) << garbage.status().message();
  // The plugin answers v1 where the kubeconfig said v1beta1.
  conn = write("client.authentication.k8s.io/v1beta1", "ok", "2999-01-01T00:00:00Z");
  auto mismatch = ApiClient(*conn, RetryPolicy{1}).Get("/api/v1/namespaces");
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().message().find(token), std::string::npos);
  auto old = write("client.authentication.k8s.io/v1alpha1", "ok", "2999-01-01T00:00:00Z");
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("apiVersion \"client.authentication.k8s.io/v1alpha1\""), std::string::npos)
      << old.status().message();
  ASSERT_TRUE(files::RemoveAll(*dir).ok());
}

TEST_F(KubernetesRuntimeTest, AWrongTokenIsUnauthenticated) {
  Connection c = api_->connection();
  c.token_file.clear();
  c.token = "not-the-token-not-the-token";
  ApiClient wrong(c, RetryPolicy{1});
  auto r = wrong.Get("/api/v1/namespaces");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated) << r.status().message();
}

TEST_F(KubernetesRuntimeTest, ConfigMapsAndSecretsRoundTripWithModesAndOwners) {
  ASSERT_TRUE(rt_->ApplyConfigMap({"slurm-scripts", {{"task_prolog", "#!/bin/sh\n"}}, 0755}).ok());
  auto cm = rt_->GetConfigMap("slurm-scripts");
  ASSERT_TRUE(cm.ok() && *cm);
  EXPECT_EQ((*cm)->data.at("task_prolog"), "#!/bin/sh\n");
  EXPECT_EQ((*cm)->default_mode, 0755);
  const std::string binary("\x00\x01\xfe\xff munge key", 14);
  ASSERT_TRUE(rt_->ApplySecret({"munge-key", {{"munge.key", binary}}, 64031, 64031}).ok());
  auto s = rt_->GetSecret("munge-key");
  ASSERT_TRUE(s.ok() && *s);
  EXPECT_EQ((*s)->data.at("munge.key"), binary);
  EXPECT_EQ((*s)->owner_uid, 64031);
  EXPECT_EQ((*s)->owner_gid, 64031);
  // The objects are the cluster's, by name and label.
  auto raw = api_->Get("/api/v1/namespaces/" + namespace_ + "/secrets/research-munge-key");
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ((*raw)["metadata"]["labels"]["hpcplane.io/cluster"], "research");
  // An unchanged apply writes nothing; a changed one replaces.
  const std::string rv = (*raw)["metadata"]["resourceVersion"];
  ASSERT_TRUE(rt_->ApplySecret({"munge-key", {{"munge.key", binary}}, 64031, 64031}).ok());
  EXPECT_EQ(
      (*api_->Get("/api/v1/namespaces/" + namespace_ + "/secrets/research-munge-key"))["metadata"]["resourceVersion"],
      rv);
  ASSERT_TRUE(rt_->ApplyConfigMap({"slurm-scripts", {{"task_prolog", "#!/bin/sh\nexit 0\n"}}, 0755}).ok());
  EXPECT_EQ((*rt_->GetConfigMap("slurm-scripts"))->data.at("task_prolog"), "#!/bin/sh\nexit 0\n");
  EXPECT_FALSE(*rt_->GetConfigMap("absent"));
  ASSERT_TRUE(rt_->DeleteConfigMap("slurm-scripts").ok());
  ASSERT_TRUE(rt_->DeleteConfigMap("slurm-scripts").ok()) << "deleting what is gone is done";
  EXPECT_FALSE(*rt_->GetConfigMap("slurm-scripts"));
}

TEST_F(KubernetesRuntimeTest, AConcurrentWriterIsRetriedNotOverwritten) {
  ASSERT_TRUE(rt_->ApplyConfigMap({"slurm-config", {{"slurm.conf", "a\n"}}}).ok());
  // The next two PUTs meet a resourceVersion another writer has moved on.
  ASSERT_TRUE(Debug("conflict?count=2").ok());
  Status applied = rt_->ApplyConfigMap({"slurm-config", {{"slurm.conf", "b\n"}}});
  ASSERT_TRUE(applied.ok()) << applied.message();
  EXPECT_EQ((*rt_->GetConfigMap("slurm-config"))->data.at("slurm.conf"), "b\n");
  ASSERT_TRUE(Debug("conflict?count=9").ok());
  Status s = rt_->ApplyConfigMap({"slurm-config", {{"slurm.conf", "c\n"}}});
  EXPECT_EQ(s.code(), StatusCode::kConflict) << s.message();
  ASSERT_TRUE(Debug("conflict?count=0").ok());
}

TEST_F(KubernetesRuntimeTest, ThrottlingAndServerErrorsAreRetriedWithBackoff) {
  ASSERT_TRUE(Debug("throttle?count=2&retryAfter=1").ok());
  const auto start = Clock::now();
  ASSERT_TRUE(rt_->ApplyConfigMap({"slurm-config", {{"slurm.conf", "x\n"}}}).ok());
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(1900)) << "Retry-After: 1, twice";
  ASSERT_TRUE(Debug("fail?count=3&code=503").ok());
  EXPECT_TRUE(rt_->GetConfigMap("slurm-config").ok());
  ASSERT_TRUE(Debug("fail?count=20&code=500").ok());
  auto r = rt_->GetConfigMap("slurm-config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().message();
  EXPECT_NE(r.status().message().find("after 4 attempts"), std::string::npos) << r.status().message();
  ASSERT_TRUE(Debug("fail?count=0").ok());
}

TEST_F(KubernetesRuntimeTest, PodsAreCreatedOnceComparedBySpecAndReportedByStatus) {
  ASSERT_TRUE(ApplyWorkerInputs().ok());
  const PodSpec spec = Worker("cpu-0");
  ASSERT_TRUE(rt_->CreatePod(spec).ok());
  const std::string path = "/api/v1/namespaces/" + namespace_ + "/pods/research-cpu-0";
  auto pod = api_->Get(path);
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ((*pod)["spec"]["hostname"], "cpu-0");
  EXPECT_EQ((*pod)["spec"]["containers"][0]["resources"]["requests"]["cpu"], "4");
  EXPECT_EQ((*pod)["spec"]["affinity"], spec.placement.affinity);
  EXPECT_EQ((*pod)["spec"]["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  const std::string rv = (*pod)["metadata"]["resourceVersion"];
  ASSERT_TRUE(rt_->CreatePod(spec).ok()) << "the same spec again is done";
  EXPECT_EQ((*api_->Get(path))["metadata"]["resourceVersion"], rv);
  PodSpec other = spec;
  other.command = {"slurmd", "-D", "-vvv"};
  Status s = rt_->CreatePod(other);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("different spec"), std::string::npos) << s.message();
  auto back = rt_->GetPodSpec("cpu-0");
  ASSERT_TRUE(back.ok() && *back);
  EXPECT_EQ(**back, spec);

  auto listed = rt_->ListPods({{"hpcplane.io/component", "worker"}});
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name, "cpu-0");
  EXPECT_EQ((*listed)[0].phase, PodPhase::kPending);
  EXPECT_FALSE((*listed)[0].ready);
  EXPECT_TRUE(rt_->ListPods({{"hpcplane.io/component", "controller"}})->empty());
  EXPECT_FALSE(rt_->Supervise().settled);

  // An init container that fails (the prepare step's chown on a root-squashed volume): the
  // status says which and why, not the main container's PodInitializing.
  ASSERT_TRUE(
      api_->MergePatch(path + "/status",
                       {{"status",
                         {{"phase", "Pending"},
                          {"initContainerStatuses",
                           {{{"name", "prepare"},
                             {"restartCount", 3},
                             {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}, {"message", "back-off"}}}}},
                             {"lastState", {{"terminated", {{"exitCode", 1}, {"reason", "Error"}}}}}}}},
                          {"containerStatuses",
                           {{{"name", "worker"}, {"state", {{"waiting", {{"reason", "PodInitializing"}}}}}}}}}}})
          .ok());
  listed = rt_->ListPods({});
  ASSERT_TRUE(listed.ok() && listed->size() == 1u);
  EXPECT_EQ((*listed)[0].message, "init container prepare: CrashLoopBackOff: back-off (last exit 1 Error)");
  EXPECT_EQ((*listed)[0].restarts, 3);

  // What a kubelet reports once the pod runs.
  ASSERT_TRUE(api_->MergePatch(
                      path + "/status",
                      {{"status",
                        {{"phase", "Running"},
                         {"podIP", "10.1.2.3"},
                         {"startTime", "2026-12-01T00:00:00Z"},
                         {"conditions", {{{"type", "Ready"}, {"status", "True"}}}},
                         {"initContainerStatuses",
                          {{{"name", "prepare"}, {"restartCount", 0}, {"state", {{"terminated", {{"exitCode", 0}}}}}}}},
                         {"containerStatuses", {{{"name", "worker"}, {"restartCount", 2}}}}}}})
                  .ok());
  listed = rt_->ListPods({});
  ASSERT_TRUE(listed.ok() && listed->size() == 1u);
  const PodStatus& st = (*listed)[0];
  EXPECT_EQ(st.phase, PodPhase::kRunning);
  EXPECT_TRUE(st.ready);
  EXPECT_EQ(st.ip, "10.1.2.3");
  EXPECT_EQ(st.restarts, 2);
  EXPECT_EQ(st.started_at, 1796083200);
  EXPECT_EQ(st.resources.requests.cpus, 4);
  EXPECT_TRUE(st.not_enforced.empty()) << "the kubelet enforces requests and limits";
  EXPECT_TRUE(rt_->Supervise().changed);
  SupervisionResult again = rt_->Supervise();
  EXPECT_FALSE(again.changed);
  EXPECT_TRUE(again.settled);

  ASSERT_TRUE(rt_->DeletePod("cpu-0").ok());
  EXPECT_FALSE(*rt_->GetPodSpec("cpu-0"));
  EXPECT_TRUE(rt_->DeletePod("cpu-0").ok());
}

// pods/exec over WebSocket, through the API server to the kubelet of the pod's node (here a
// fake one on loopback): the command as the user asked for, stdin, stdout and stderr, the exit
// code, output larger than one frame, a timeout, and no exec into a pod that does not run.
TEST_F(KubernetesRuntimeTest, ExecRunsThroughTheNodesKubeletWithStdinOutputAndExitCode) {
  httplib::Server kubelet;
  std::mutex mu;
  json last;
  kubelet.Post(R"(/exec/([^/]+)/([^/]+)/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    json body = json::parse(req.body);
    {
      std::lock_guard<std::mutex> lock(mu);
      last = {{"pod", req.matches[2]},
              {"container", req.matches[3]},
              {"command", body["command"]},
              {"auth", req.get_header_value("Authorization")}};
    }
    const std::vector<std::string> cmd = body["command"];
    std::string out = *jwt::Base64Decode(body.value("stdin", ""));
    if (cmd.back() == "big") out = std::string(200000, 'x');
    if (cmd.back() == "slow") std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    res.set_content(json{{"exitCode", cmd.back() == "fail" ? 3 : 0},
                         {"stdout", jwt::Base64Encode(out)},
                         {"stderr", jwt::Base64Encode("warning\n")}}
                        .dump(),
                    "application/json");
  });
  const int port = kubelet.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { kubelet.listen_after_bind(); });
  struct Stop {
    httplib::Server& s;
    std::thread& t;
    ~Stop() {
      s.stop();
      t.join();
    }
  } stop{kubelet, serving};
  const std::string node = "node-" + namespace_;
  ASSERT_TRUE(
      api_->Post("/api/v1/nodes", {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", node}}}}).ok());
  ASSERT_TRUE(api_->MergePatch("/api/v1/nodes/" + node + "/status",
                               {{"status", {{"daemonEndpoints", {{"kubeletEndpoint", {{"Port", port}}}}}}}})
                  .ok());
  ASSERT_TRUE(ApplyWorkerInputs().ok());
  ASSERT_TRUE(rt_->CreatePod(Worker("cpu-0")).ok());
  const std::string path = "/api/v1/namespaces/" + namespace_ + "/pods/research-cpu-0";

  ExecOptions o;
  o.argv = {"cat"};
  o.stdin_data = "hello";
  // Not running yet: refused, nothing run.
  auto refused = rt_->Exec("cpu-0", o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("is not running"), std::string::npos) << refused.status().message();
  EXPECT_TRUE(last.is_null());
  ASSERT_TRUE(api_->Post(path + "/binding", {{"apiVersion", "v1"},
                                             {"kind", "Binding"},
                                             {"metadata", {{"name", "research-cpu-0"}}},
                                             {"target", {{"kind", "Node"}, {"name", node}}}})
                  .ok());
  ASSERT_TRUE(api_->MergePatch(path + "/status", {{"status", {{"phase", "Running"}}}}).ok());

  auto r = rt_->Exec("cpu-0", o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->out, "hello");
  EXPECT_EQ(r->err, "warning\n");
  EXPECT_EQ(last["pod"], "research-cpu-0");
  EXPECT_EQ(last["container"], "worker");
  EXPECT_EQ(last["command"], json({"env", "--chdir=/", "cat"}));

  o.user = "slurm";
  o.stdin_data.clear();
  o.env = {{"SLURM_CONF", "/etc/slurm/slurm.conf"}};
  o.argv = {"scontrol", "fail"};
  r = rt_->Exec("cpu-0", o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 3) << "NonZeroExitCode carries the code";
  EXPECT_EQ(last["command"],
            json({"setpriv", "--reuid=slurm", "--regid=slurm", "--init-groups", "--", "env", "--chdir=/", "USER=slurm",
                  "LOGNAME=slurm", "HOME=/tmp", "SLURM_CONF=/etc/slurm/slurm.conf", "scontrol", "fail"}));

  o.user = "root";
  o.env.clear();
  o.argv = {"big"};
  r = rt_->Exec("cpu-0", o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->out, std::string(200000, 'x')) << "output over many frames";

  o.argv = {"slow"};
  o.timeout = std::chrono::milliseconds(300);
  const auto start = Clock::now();
  r = rt_->Exec("cpu-0", o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));

  EXPECT_EQ(last["auth"], "Bearer " + *api_->BearerToken()) << "the API server authenticates to the kubelet";
  EXPECT_FALSE(rt_->Exec("cpu-9", o).ok()) << "no such pod";
}

TEST_F(KubernetesRuntimeTest, ObjectsHpcplaneDidNotMakeAreNeverReplacedOrDeleted) {
  const std::string base = "/api/v1/namespaces/" + namespace_ + "/";
  // An admin's ConfigMap, PVC and pod under the names the cluster would use.
  ASSERT_TRUE(api_->Post(base + "configmaps",
                         {{"metadata", {{"name", "research-slurm-config"}}}, {"data", {{"slurm.conf", "admin's\n"}}}})
                  .ok());
  ASSERT_TRUE(api_->Post(base + "persistentvolumeclaims", {{"metadata", {{"name", "research-dataset-shared"}}},
                                                           {"spec", {{"accessModes", {"ReadWriteOnce"}}}}})
                  .ok());
  ASSERT_TRUE(api_->Post(base + "pods",
                         {{"metadata", {{"name", "research-login"}, {"labels", {{"hpcplane.io/cluster", "research"}}}}},
                          {"spec", {{"containers", {{{"name", "m"}, {"image", "x"}}}}}}})
                  .ok());
  Status s = rt_->ApplyConfigMap({"slurm-config", {{"slurm.conf", "ours\n"}}});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.message();
  EXPECT_NE(s.message().find("not hpcplane's"), std::string::npos) << s.message();
  EXPECT_EQ((*api_->Get(base + "configmaps/research-slurm-config"))["data"]["slurm.conf"], "admin's\n");
  EXPECT_FALSE(rt_->DeleteConfigMap("slurm-config").ok());
  EXPECT_FALSE(rt_->EnsureVolume({"dataset-shared", 0, 0, 01777, true}).ok());
  EXPECT_FALSE(rt_->DeletePod("research-login").ok());
  EXPECT_TRUE(rt_->Teardown().ok()) << "teardown sees only the cluster's own pods";
  EXPECT_TRUE(rt_->ListPods({})->empty()) << "a pod without hpcplane's label is not the cluster's";
  for (const char* path :
       {"configmaps/research-slurm-config", "persistentvolumeclaims/research-dataset-shared", "pods/research-login"}) {
    EXPECT_TRUE(api_->Get(base + path).ok()) << path << " was deleted";
  }
  EXPECT_EQ((*api_->Get(base + "persistentvolumeclaims/research-dataset-shared"))["metadata"].value("annotations",
                                                                                                    json::object()),
            json::object())
      << "nothing written to it either";
}

TEST_F(KubernetesRuntimeTest, APodWhoseSecretIsMissingWaitsForIt) {
  Status s = rt_->CreatePod(Worker("cpu-1"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.message();
  EXPECT_FALSE(*rt_->GetPodSpec("cpu-1")) << "nothing half-made";
}

TEST_F(KubernetesRuntimeTest, APodOfAnEnvironmentWithoutAnImageHereIsRefusedAndNothingMade) {
  ctx_.images = {"registry.example/slurm:26.05"};
  rt_ = std::make_unique<KubernetesRuntime>(api_, ctx_);
  PodSpec p = Worker("cpu-1");
  p.image = "gpu-26.05";  // what the operator names when its table has no image for it
  Status s = rt_->CreatePod(p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "pod cpu-1: environment \"gpu-26.05\" has no image of the cluster's Slurm series on this data plane (the "
            "operator's --environments)");
  EXPECT_FALSE(*rt_->GetPodSpec("cpu-1")) << "nothing half-made";
}

TEST_F(KubernetesRuntimeTest, VolumesAreClaimedOnceAndKeepTheirOwner) {
  ASSERT_TRUE(rt_->EnsureVolume({"controller-state", 64030, 64030, 0700, false}).ok());
  ASSERT_TRUE(rt_->EnsureVolume({"controller-state", 64030, 64030, 0700, false}).ok());
  auto pvc = api_->Get("/api/v1/namespaces/" + namespace_ + "/persistentvolumeclaims/research-controller-state");
  ASSERT_TRUE(pvc.ok());
  EXPECT_EQ((*pvc)["spec"]["accessModes"][0], "ReadWriteOnce");
  EXPECT_EQ((*pvc)["metadata"]["annotations"][kOwnerAnnotation], "64030:64030");
  ASSERT_TRUE(rt_->EnsureVolume({"controller-state", 64030, 64030, 0750, false}).ok());
  pvc = api_->Get("/api/v1/namespaces/" + namespace_ + "/persistentvolumeclaims/research-controller-state");
  EXPECT_EQ((*pvc)["metadata"]["annotations"][kModeAnnotation], "0750");
  // The PV controller annotates every claim it binds: not a reason to write ours again.
  ASSERT_TRUE(api_->MergePatch("/api/v1/namespaces/" + namespace_ + "/persistentvolumeclaims/research-controller-state",
                               {{"metadata", {{"annotations", {{"pv.kubernetes.io/bind-completed", "yes"}}}}}})
                  .ok());
  auto patches = [&] {
    auto counts = api_->Get("/debug/requests?agent=hpcplane/");
    return counts.ok() ? counts->value("patch persistentvolumeclaims", 0) : -1;
  };
  const int before = patches();
  for (int pass = 0; pass < 3; ++pass)
    ASSERT_TRUE(rt_->EnsureVolume({"controller-state", 64030, 64030, 0750, false}).ok());
  EXPECT_EQ(patches(), before) << "no write when nothing of ours changed";
}

TEST_F(KubernetesRuntimeTest, DeletingTheSlurmClusterRemovesEveryObjectItOwns) {
  auto cluster = api_->Post("/apis/hpcplane.io/v1alpha1/namespaces/" + namespace_ + "/slurmclusters",
                            {{"apiVersion", "hpcplane.io/v1alpha1"},
                             {"kind", "SlurmCluster"},
                             {"metadata", {{"name", "research"}}},
                             {"spec", json::object()}});
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  ctx_.owner_uid = (*cluster)["metadata"]["uid"];
  rt_ = std::make_unique<KubernetesRuntime>(api_, ctx_);
  ASSERT_TRUE(ApplyWorkerInputs().ok());
  ASSERT_TRUE(rt_->CreatePod(Worker("cpu-0")).ok());
  ASSERT_TRUE(api_->Delete("/apis/hpcplane.io/v1alpha1/namespaces/" + namespace_ + "/slurmclusters/research").ok());
  const std::string base = "/api/v1/namespaces/" + namespace_ + "/";
  EXPECT_TRUE(WaitFor([&] {
    for (const char* plural : {"pods", "configmaps", "secrets", "persistentvolumeclaims"}) {
      auto list = api_->Get(base + plural);
      if (!list.ok() || !(*list)["items"].empty()) return false;
    }
    return true;
  })) << "the garbage collector follows the ownerReferences";
}

// retainOnDelete: a retained claim carries no owner reference (the garbage collector leaves it
// when the SlurmCluster goes); turning retention on or off patches the reference of a claim made
// before; a SlurmCluster of the same name takes a retained claim up again.
TEST_F(KubernetesRuntimeTest, RetainedClaimsOutliveTheirSlurmCluster) {
  const std::string clusters = "/apis/hpcplane.io/v1alpha1/namespaces/" + namespace_ + "/slurmclusters";
  const json cluster_object = {{"apiVersion", "hpcplane.io/v1alpha1"},
                               {"kind", "SlurmCluster"},
                               {"metadata", {{"name", "research"}}},
                               {"spec", json::object()}};
  auto cluster = api_->Post(clusters, cluster_object);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  ctx_.owner_uid = (*cluster)["metadata"]["uid"];
  rt_ = std::make_unique<KubernetesRuntime>(api_, ctx_);
  const std::string claims = "/api/v1/namespaces/" + namespace_ + "/persistentvolumeclaims/";
  auto owners = [&](const std::string& name) {
    auto pvc = api_->Get(claims + "research-" + name);
    return pvc.ok() ? (*pvc)["metadata"].value("ownerReferences", json::array()) : json("absent");
  };
  ASSERT_TRUE(rt_->EnsureVolume({"controller-state", 64030, 64030, 0700, false, false}).ok());
  ASSERT_EQ(owners("controller-state").size(), 1u);
  ASSERT_TRUE(rt_->EnsureVolume({"controller-state", 64030, 64030, 0700, false, /*retain=*/true}).ok());
  EXPECT_EQ(owners("controller-state"), json::array()) << "retention turned on for a claim made before";
  ASSERT_TRUE(rt_->EnsureVolume({"database", 64032, 64032, 0700, false, /*retain=*/true}).ok());
  EXPECT_EQ(owners("database"), json::array());
  ASSERT_TRUE(rt_->ApplyConfigMap({"slurm-config", {{"slurm.conf", "ClusterName=research\n"}}}).ok());

  ASSERT_TRUE(api_->Delete(clusters + "/research").ok());
  const std::string config = "/api/v1/namespaces/" + namespace_ + "/configmaps/research-slurm-config";
  EXPECT_TRUE(WaitFor([&] { return api_->Get(config).status().code() == StatusCode::kNotFound; }))
      << "what the SlurmCluster owned goes";
  EXPECT_EQ(owners("controller-state"), json::array()) << "the retained claims stay";
  EXPECT_EQ(owners("database"), json::array());

  cluster = api_->Post(clusters, cluster_object);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  ctx_.owner_uid = (*cluster)["metadata"]["uid"];
  rt_ = std::make_unique<KubernetesRuntime>(api_, ctx_);
  ASSERT_TRUE(rt_->EnsureVolume({"controller-state", 64030, 64030, 0700, false, false}).ok());
  ASSERT_EQ(owners("controller-state").size(), 1u) << "taken up by the new SlurmCluster";
  EXPECT_EQ(owners("controller-state")[0]["uid"], ctx_.owner_uid);
}

// A pod whose node never confirms its deletion stays, marked with when it should have gone;
// ForgetPod removes it at once (grace period 0) so its name is free.
TEST_F(KubernetesRuntimeTest, APodOnALostNodeIsForgotten) {
  ASSERT_TRUE(ApplyWorkerInputs().ok());
  ASSERT_TRUE(rt_->CreatePod(Worker("cpu-0")).ok());
  const std::string pod = "/api/v1/namespaces/" + namespace_ + "/pods/research-cpu-0";
  ASSERT_TRUE(api_->Post(pod + "/binding", {{"apiVersion", "v1"},
                                            {"kind", "Binding"},
                                            {"metadata", {{"name", "research-cpu-0"}}},
                                            {"target", {{"kind", "Node"}, {"name", "lost-node"}}}})
                  .ok());
  ASSERT_TRUE(rt_->DeletePod("cpu-0").ok());
  auto pods = rt_->ListPods({});
  ASSERT_TRUE(pods.ok());
  ASSERT_EQ(pods->size(), 1u) << "no kubelet confirmed it";
  EXPECT_GT((*pods)[0].delete_by, 0);
  EXPECT_EQ((*pods)[0].message, "terminating");
  ASSERT_TRUE(rt_->ForgetPod("cpu-0").ok());
  EXPECT_EQ(api_->Get(pod).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(rt_->CreatePod(Worker("cpu-0")).ok()) << "the name is free again";
}

TEST_F(KubernetesRuntimeTest, WatchDeliversEventsAndBookmarksAndReportsExpiry) {
  const std::string collection = "/api/v1/namespaces/" + namespace_ + "/configmaps";
  auto list = api_->Get(collection);
  ASSERT_TRUE(list.ok());
  const std::string rv = (*list)["metadata"]["resourceVersion"];
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    (void)rt_->ApplyConfigMap({"watched", {{"k", "v"}}});
  });
  bool added = false, bookmark = false;
  auto end = api_->Watch(collection, rv, 10, [&](const WatchEvent& e) {
    added = added || (e.type == "ADDED" && e.object["metadata"]["name"] == "research-watched");
    bookmark = bookmark || e.type == "BOOKMARK";
    return !(added && bookmark);
  });
  writer.join();
  ASSERT_TRUE(end.ok()) << end.status().message();
  EXPECT_TRUE(added);
  EXPECT_TRUE(bookmark);
  EXPECT_FALSE(end->expired);
  EXPECT_GT(std::stoll(end->resource_version), std::stoll(rv)) << "resume from what was seen";

  ASSERT_TRUE(Debug("compact").ok());
  auto expired = api_->Watch(collection, rv, 5, [](const WatchEvent&) { return true; });
  ASSERT_TRUE(expired.ok()) << expired.status().message();
  EXPECT_TRUE(expired->expired) << "410 Gone: list again";
}

// A watch lasts minutes (an idle operator sends almost nothing), yet a closing client ends it at
// once: CancelWatches shuts its connection down, and a watch begun after it returns at once.
TEST_F(KubernetesRuntimeTest, ALongWatchEndsAtOnceWhenCancelled) {
  const std::string collection = "/api/v1/namespaces/" + namespace_ + "/configmaps";
  auto list = api_->Get(collection);
  ASSERT_TRUE(list.ok());
  const std::string rv = (*list)["metadata"]["resourceVersion"];
  auto watcher = std::make_shared<ApiClient>(api_->connection());
  std::atomic<bool> seen{false};
  std::atomic<bool> returned{false};
  Result<WatchEnd> end = Status::Unavailable("not returned");
  std::thread t([&] {
    end = watcher->Watch(collection, rv, 300, [&](const WatchEvent& e) {
      if (e.type == "ADDED") seen = true;
      return true;
    });
    returned = true;
  });
  ASSERT_TRUE(rt_->ApplyConfigMap({"watched", {{"k", "v"}}}).ok());
  ASSERT_TRUE(WaitFor([&] { return seen.load(); })) << "the watch is established";
  const auto cancelled_at = std::chrono::steady_clock::now();
  watcher->CancelWatches();
  EXPECT_TRUE(WaitFor([&] { return returned.load(); }, std::chrono::seconds(3))) << "not after its 300 s";
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled_at, std::chrono::seconds(3));
  EXPECT_TRUE(end.ok()) << end.status().message();
  const auto again_at = std::chrono::steady_clock::now();
  auto again = watcher->Watch(collection, rv, 300, [](const WatchEvent&) { return true; });
  EXPECT_TRUE(again.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - again_at, std::chrono::seconds(1)) << "refused at once";
}

TEST_F(KubernetesRuntimeTest, AnInformerKeepsHpcplanesObjectsAndListsAgainAfterExpiry) {
  Caches caches = StartInformers({"configmaps"});
  ObjectCache* cache = caches.Synced("configmaps");
  ASSERT_NE(cache, nullptr);
  const std::string base = "/api/v1/namespaces/" + namespace_ + "/configmaps";
  ASSERT_TRUE(rt_->ApplyConfigMap({"slurm-config", {{"slurm.conf", "a\n"}}}).ok());
  ASSERT_TRUE(api_->Post(base, {{"metadata", {{"name", "admins"}}}, {"data", {{"k", "v"}}}}).ok());
  EXPECT_TRUE(WaitFor([&] { return cache->Get(namespace_, "research-slurm-config").has_value(); }));
  EXPECT_TRUE(SawEvent("ADDED research-slurm-config")) << "each change is passed on";
  ASSERT_TRUE(rt_->DeleteConfigMap("slurm-config").ok());
  EXPECT_TRUE(WaitFor([&] { return !cache->Get(namespace_, "research-slurm-config"); }));
  EXPECT_FALSE(cache->Get(namespace_, "admins")) << "only what the selector names is kept";

  // The watch's history is compacted past what it has seen and the stream breaks: it lists
  // again, and what was made meanwhile is there and passed on. (A bookmark between the write
  // elsewhere and the compaction would keep its version current: try again.)
  const int lists = informers_[0]->lists();
  for (int i = 0; i < 20 && informers_[0]->lists() == lists; ++i) {
    const std::string other = "t-other-" + namespace_;
    (void)api_->Post("/api/v1/namespaces", {{"metadata", {{"name", other + std::to_string(i)}}}});
    ASSERT_TRUE(rt_->ApplyConfigMap({"made-meanwhile", {{"k", "v"}}}).ok());
    ASSERT_TRUE(Debug("compact").ok());
    ASSERT_TRUE(Debug("drop-watches").ok());
    WaitFor([&] { return informers_[0]->lists() > lists; }, std::chrono::milliseconds(1000));
  }
  ASSERT_GT(informers_[0]->lists(), lists) << "410 Gone: listed again";
  EXPECT_TRUE(WaitFor([&] { return cache->Get(namespace_, "research-made-meanwhile").has_value(); }));
  EXPECT_TRUE(SawEvent("ADDED research-made-meanwhile"));
}

TEST_F(KubernetesRuntimeTest, OnCachesAPassSendsNoReadsAndStillNeverDuplicatesOrOverwrites) {
  rt_->UseCaches(StartInformers({"pods", "configmaps", "secrets", "persistentvolumeclaims", "services"}));
  ASSERT_TRUE(ApplyWorkerInputs().ok());
  ASSERT_TRUE(rt_->CreatePod(Worker("cpu-0")).ok());
  const std::string path = "/api/v1/namespaces/" + namespace_ + "/pods/research-cpu-0";
  const std::string rv = (*api_->Get(path))["metadata"]["resourceVersion"];
  // At once, before the watch may have brought it: the create's answer is in the cache.
  ASSERT_TRUE(rt_->CreatePod(Worker("cpu-0")).ok());
  EXPECT_EQ((*api_->Get(path))["metadata"]["resourceVersion"], rv) << "not created twice, not replaced";

  // What the next pass does, once the caches have caught up: no read goes to the API.
  ASSERT_TRUE(WaitFor([&] { return rt_->ListPods({})->size() == 1; }));
  const auto before = Reads();
  ASSERT_TRUE(ApplyWorkerInputs().ok());
  ASSERT_TRUE(rt_->CreatePod(Worker("cpu-0")).ok());
  auto pods = rt_->ListPods({{"hpcplane.io/component", "worker"}});
  ASSERT_TRUE(pods.ok());
  EXPECT_EQ(pods->size(), 1u);
  ASSERT_TRUE((*rt_->GetSecret("munge-key")).has_value());
  EXPECT_EQ(Reads(), before) << "every read came from the caches";

  // Another writer moves the config map on; a write from the now stale cache meets 409 and
  // reads it again, so nothing of the other writer's is lost by accident and ours lands.
  const std::string cm = "/api/v1/namespaces/" + namespace_ + "/configmaps/research-slurm-config";
  json theirs = *api_->Get(cm);
  theirs["data"]["slurm.conf"] = "theirs\n";
  ASSERT_TRUE(api_->Put(cm, theirs).ok());
  Status ours = rt_->ApplyConfigMap({"slurm-config", {{"slurm.conf", "ours\n"}}});
  ASSERT_TRUE(ours.ok()) << ours.message();
  EXPECT_EQ((*api_->Get(cm))["data"]["slurm.conf"], "ours\n");

  // A clash with an object someone else made is found in the API, not taken from the cache.
  ASSERT_TRUE(api_->Post("/api/v1/namespaces/" + namespace_ + "/secrets",
                         {{"metadata", {{"name", "research-admins"}}}, {"data", {{"k", "dg=="}}}})
                  .ok());
  Status clash = rt_->ApplySecret({"admins", {{"k", "ours"}}, 0, 0});
  EXPECT_EQ(clash.code(), StatusCode::kFailedPrecondition) << clash.message();
  EXPECT_FALSE(rt_->DeleteSecret("admins").ok()) << "nor deleted as if absent";
}

}  // namespace
}  // namespace hpc::runtime::kubernetes
