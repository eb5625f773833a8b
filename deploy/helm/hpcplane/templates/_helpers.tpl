{{- define "hpcplane.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "hpcplane.labels" -}}
app.kubernetes.io/part-of: hpcplane
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{/* The operator's rights on what a SlurmCluster is made of, as rules. */}}
{{- define "hpcplane.operatorRules" -}}
- apiGroups: ["hpcplane.io"]
  resources: ["slurmclusters", "nodesets", "workspaces"]
  verbs: ["get", "list", "watch", "update", "patch"]
- apiGroups: ["hpcplane.io"]
  resources: ["slurmclusters/status", "nodesets/status", "workspaces/status"]
  verbs: ["get", "update", "patch"]
- apiGroups: ["hpcplane.io"]
  resources: ["slurmclusters/finalizers", "nodesets/finalizers", "workspaces/finalizers"]
  verbs: ["update"]
- apiGroups: [""]
  resources: ["pods", "services", "configmaps", "secrets", "persistentvolumeclaims"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: [""]
  resources: ["pods/exec"]
  verbs: ["create", "get"]
- apiGroups: [""]
  resources: ["pods/log"]
  verbs: ["get"]
- apiGroups: ["", "events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end -}}
