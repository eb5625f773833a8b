// The fields of each resource's spec, written once. The decoder (codec.cc) walks them to read a
// manifest; the CRD generator (crd.cc) walks them to write the openAPIV3Schema that Kubernetes
// checks before hpcplane sees an object. A field added here is accepted by both, with the same
// name and type; a field missing here is refused by both as unknown.
//
// A walker R provides, for a key of the current mapping:
//   String, Integer, OptionalInt, Bool, Duration, IntOrPercent, StringList, StringMap (scalars),
//   Object(key, fn)                 a nested mapping, walked by fn(R&)
//   ObjectList(key, vector*, fn)    a list of mappings, each walked by fn(R&, T*)
// Value checks (ranges, names, formats) stay in validation.cc: Kubernetes admits what this
// schema describes, and the operator reports what validation refuses as the condition Invalid.
#pragma once

#include "api/types.h"

namespace hpc::api {

template <typename R>
void WalkDatasets(R& r, std::vector<Dataset>* out) {
  r.ObjectList("datasets", out, [](R& d, Dataset* ds) {
    d.String("name", &ds->name);
    d.String("mountPath", &ds->mount_path);
    d.String("hostPath", &ds->host_path);
  });
}

template <typename R>
void WalkClusterSpec(R& r, SlurmClusterSpec* s) {
  r.String("environment", &s->environment);
  r.Object("sharedRoot", [&](R& shared) { shared.Bool("enabled", &s->shared_root); });
  r.Object("network", [&](R& net) { net.String("subnet", &s->subnet); });
  r.Object("restApi", [&](R& rest) {
    rest.Integer("port", &s->rest_port);
    rest.Integer("memoryLimitMiB", &s->rest_memory_limit_mib);
  });
  r.Object("login", [&](R& login) { login.Bool("enabled", &s->login_enabled); });
  r.Object("backupController", [&](R& backup) { backup.Bool("enabled", &s->backup_controller); });
  r.Object("storage", [&](R& st) { st.Bool("retainOnDelete", &s->retain_volumes_on_delete); });
  r.Object("nodeSetDefaults", [&](R& d) { d.Integer("minReplicaCount", &s->min_replica_count); });
  r.Object("scheduling", [&](R& sch) {
    sch.StringList("schedulerParameters", &s->scheduler_parameters);
    sch.String("priorityType", &s->priority_type);
    sch.StringList("extraConfig", &s->extra_config);
    sch.Integer("maxNodeCount", &s->max_node_count);
  });
  WalkDatasets(r, &s->datasets);
  r.Object("accounting", [&](R& acc) {
    acc.Bool("enabled", &s->accounting.enabled);
    acc.String("enforce", &s->accounting.enforce);
  });
  r.Object("healthChecks", [&](R& hc) {
    auto& h = s->health_checks;
    hc.Bool("enabled", &h.enabled);
    hc.Duration("interval", &h.interval_seconds);
    hc.Duration("timeout", &h.timeout_seconds);
    hc.Integer("minFreePercent", &h.min_free_percent);
    hc.Duration("maxClockSkew", &h.max_clock_skew_seconds);
    hc.IntOrPercent("maxUnhealthy", &h.max_unhealthy);
    hc.Duration("replaceAfter", &h.replace_after_seconds);
    hc.Integer("maxReplacementsPerHour", &h.max_replacements_per_hour);
  });
  r.Object("upgrade", [&](R& up) {
    up.Duration("drainDeadline", &s->upgrade.drain_deadline_seconds);
    up.String("afterDeadline", &s->upgrade.after_deadline);
  });
  r.ObjectList("users", &s->users, [](R& u, ClusterUser* user) {
    u.String("name", &user->name);
    u.Integer("uid", &user->uid);
    u.Integer("gid", &user->gid);
    u.Bool("admin", &user->admin);
    u.String("account", &user->account);
  });
}

template <typename R>
void WalkNodeSetSpec(R& r, NodeSetSpec* s) {
  r.String("cluster", &s->cluster);
  r.String("environment", &s->environment);
  r.OptionalInt("replicas", &s->replicas);
  r.OptionalInt("minReplicas", &s->min_replicas);
  r.Integer("maxReplicas", &s->max_replicas);
  r.Duration("idleTimeout", &s->idle_timeout_seconds);
  r.StringList("features", &s->features);
  WalkDatasets(r, &s->datasets);
  r.Object("scaling", [&](R& sc) {
    sc.Integer("scaleUpPerMinute", &s->scale_up_per_minute);
    sc.Integer("scaleDownPerMinute", &s->scale_down_per_minute);
  });
  r.Object("resources", [&](R& res) {
    res.Integer("cpus", &s->resources.cpus);
    res.Integer("memoryMiB", &s->resources.memory_mib);
    res.Integer("gpus", &s->resources.gpus);
    res.Integer("tmpMiB", &s->resources.tmp_mib);
  });
  r.Object("healthChecks", [&](R& hc) { hc.StringMap("scripts", &s->health_check_scripts); });
  r.Object("pod", [&](R& pod) {
    pod.StringMap("nodeSelector", &s->pod.node_selector);
    pod.ObjectList("tolerations", &s->pod.tolerations, [](R& t, Toleration* tol) {
      t.String("key", &tol->key);
      t.String("operator", &tol->op);
      t.String("value", &tol->value);
      t.String("effect", &tol->effect);
      t.OptionalInt("tolerationSeconds", &tol->seconds);
    });
    auto expressions = [](R& term, NodeSelectorTerm* t) {
      term.ObjectList("matchExpressions", &t->match_expressions, [](R& e, NodeSelectorRequirement* x) {
        e.String("key", &x->key);
        e.String("operator", &x->op);
        e.StringList("values", &x->values);
      });
    };
    pod.Object("affinity", [&](R& affinity) {
      affinity.Object("nodeAffinity", [&](R& node) {
        node.Object("requiredDuringSchedulingIgnoredDuringExecution", [&](R& required) {
          required.ObjectList("nodeSelectorTerms", &s->pod.required_node_terms, expressions);
        });
        node.ObjectList("preferredDuringSchedulingIgnoredDuringExecution", &s->pod.preferred_node_terms,
                        [&](R& p, PreferredNodeTerm* t) {
                          p.Integer("weight", &t->weight);
                          p.Object("preference", [&](R& pref) { expressions(pref, &t->preference); });
                        });
      });
    });
    pod.String("priorityClassName", &s->pod.priority_class_name);
    pod.StringList("imagePullSecrets", &s->pod.image_pull_secrets);
    pod.Object("securityContext", [&](R& sc) {
      sc.Object("seccompProfile", [&](R& seccomp) {
        seccomp.String("type", &s->pod.seccomp_type);
        seccomp.String("localhostProfile", &s->pod.seccomp_localhost_profile);
      });
    });
  });
  r.Object("partition", [&](R& p) {
    p.String("name", &s->partition.name);
    p.Bool("default", &s->partition.is_default);
    p.String("maxTime", &s->partition.max_time);
    p.StringMap("options", &s->partition.options);
    p.String("state", &s->partition.state);
  });
}

}  // namespace hpc::api

namespace hpc::api {

// A workspace as the control plane's agent writes it (operator/workspace.cc's record). Only the
// CRD walks this today; a test checks that the record's keys and these fields agree.
template <typename R>
void WalkWorkspaceSpec(R& r, WorkspaceSpec* s) {
  r.String("cluster", &s->cluster);
  r.Object("user", [&](R& u) {
    u.String("name", &s->user.name);
    u.Integer("uid", &s->user.uid);
    u.Integer("gid", &s->user.gid);
    u.Bool("admin", &s->user.admin);
  });
  r.String("project", &s->project);
  r.String("tier", &s->tier);
  r.Object("resources", [&](R& res) {
    res.Integer("cpus", &s->resources.cpus);
    res.Integer("memoryMiB", &s->resources.memory_mib);
    res.Integer("gpus", &s->resources.gpus);
  });
  r.Integer("maxWorkers", &s->max_workers);
  r.Integer("idleTimeoutSeconds", &s->idle_timeout_seconds);
  r.Integer("tokenLifetimeSeconds", &s->token_lifetime_seconds);
  r.StringList("datasets", &s->datasets);
  r.IntegerMap("datasetGroups", &s->dataset_gids);
  r.String("environment", &s->environment);
  r.Bool("stopping", &s->stopping);
  r.Bool("cancelJobs", &s->cancel_jobs);
}

template <typename R>
void WalkEnvironmentSpec(R& r, EnvironmentSpec* s) {
  r.String("suite", &s->suite);
  r.String("purpose", &s->purpose);
  r.StringList("packages", &s->packages);
  r.ObjectList("files", &s->files, [](R& f, EnvironmentFile* file) {
    f.String("path", &file->path);
    f.String("content", &file->content);
    f.Integer("mode", &file->mode);
  });
  r.String("postInstall", &s->post_install);
}

}  // namespace hpc::api
