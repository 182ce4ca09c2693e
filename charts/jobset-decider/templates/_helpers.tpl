{{/*
Names are the ones deploy/ gives, not derived from the release name: the CRD, the webhook
configurations and the shim's controller name are one per cluster, the decider's certificate
code and the docs name these objects, and Helm itself refuses a second release that would take
them over. Everything namespaced goes into the release namespace.
*/}}

{{/* Labels Helm's conventions add to every object; the comparison with deploy/ ignores them. */}}
{{- define "jobset-decider.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* The labels deploy/decider and deploy/shim give their objects, then Helm's.
     Called with (list $ "jobset-decider") or (list $ "decider-shim"). */}}
{{- define "jobset-decider.labels" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ index . 1 }}
app.kubernetes.io/part-of: jobset-decider
{{ include "jobset-decider.helmLabels" $ }}
{{- end }}

{{- define "jobset-decider.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* featureGates as a flag value: A=true,B=false in name order (range sorts map keys). */}}
{{- define "jobset-decider.featureGates" -}}
{{- $gates := list -}}
{{- range $name, $on := .Values.featureGates -}}
{{- $gates = append $gates (printf "%s=%t" $name $on) -}}
{{- end -}}
{{- join "," $gates -}}
{{- end }}

{{- define "jobset-decider.otlpEndpoint" -}}
{{- .Values.telemetry.otlpEndpoint | default (printf "http://otel-collector.%s:4317" .Release.Namespace) -}}
{{- end }}

{{/* The OTEL_* environment of both processes. Off: the decider's tracing explicitly off, as
     deploy/decider sets it; the shim is off without a variable. */}}
{{- define "jobset-decider.telemetryEnv" -}}
{{- $ := index . 0 -}}
{{- $component := index . 1 -}}
{{- $t := $.Values.telemetry -}}
{{- if $t.enabled }}
- name: OTEL_TRACES_EXPORTER
  value: {{ ternary "otlp" "none" $t.traces }}
{{- if $t.metrics }}
- name: OTEL_METRICS_EXPORTER
  value: otlp
{{- end }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ include "jobset-decider.otlpEndpoint" $ | quote }}
{{- with $t.sampler }}
- name: OTEL_TRACES_SAMPLER
  value: {{ . | quote }}
{{- end }}
{{- with $t.samplerArg }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ . | quote }}
{{- end }}
{{- else if eq $component "decider" }}
- name: OTEL_TRACES_EXPORTER
  value: none
{{- end }}
{{- end }}

{{/* Exactly the verbs the shim uses (docs/shim.md, RBAC): the rules of deploy/shim's
     ClusterRole, and of deploy/shim-namespaced's Role. */}}
{{- define "jobset-decider.shimRules" -}}
- apiGroups: ["jobset.x-k8s.io"]
  resources: ["jobsets"]
  verbs: ["list", "watch", "delete"]
- apiGroups: ["jobset.x-k8s.io"]
  resources: ["jobsets/status"]
  verbs: ["update"]
- apiGroups: ["jobset.x-k8s.io"]
  resources: ["jobsets/finalizers"]
  verbs: ["update"]
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["list", "watch", "get", "create", "delete", "patch"]
- apiGroups: ["batch"]
  resources: ["jobs/status"]
  verbs: ["patch"]
- apiGroups: ["batch"]
  resources: ["jobs/finalizers"]
  verbs: ["update"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["list", "watch", "get", "create", "patch"]
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["list", "watch", "get", "create"]
- apiGroups: ["scheduling.k8s.io"]
  resources: ["workloads", "podgroups", "compositepodgroups"]
  verbs: ["list", "watch", "get", "create", "delete", "patch"]
- apiGroups: [""]
  resources: ["events"]
  {{- /* patch: a repeated event is counted on the one already written (shim/event_sink.py). */}}
  verbs: ["create", "patch"]
{{- end }}

{{/* With InPlaceRestart the shim reads pods. */}}
{{- define "jobset-decider.shimPodRules" -}}
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch"]
{{- end }}

{{/* --gang-target scheduler-plugins or volcano: the PodGroups those schedulers consume. */}}
{{- define "jobset-decider.shimGangTargetRules" -}}
- apiGroups: ["scheduling.x-k8s.io"]
  resources: ["podgroups"]
  verbs: ["list", "watch", "get", "create", "delete", "patch"]
- apiGroups: ["scheduling.volcano.sh"]
  resources: ["podgroups"]
  verbs: ["list", "watch", "get", "create", "delete", "patch"]
{{- end }}

{{/* The shim's optional rights as [[suffix, rules template]...]. */}}
{{- define "jobset-decider.shimExtraRoles" -}}
{{- $roles := list -}}
{{- if index .Values.featureGates "InPlaceRestart" -}}
{{- $roles = append $roles (list "pods" "jobset-decider.shimPodRules") -}}
{{- end -}}
{{- if has .Values.shim.gangTarget (list "scheduler-plugins" "volcano") -}}
{{- $roles = append $roles (list "gang-targets" "jobset-decider.shimGangTargetRules") -}}
{{- end -}}
{{- toJson $roles -}}
{{- end }}

{{- define "jobset-decider.validate" -}}
{{- if and (eq .Values.rbac.scope "namespaced") (not .Values.shim.namespaces) -}}
{{- fail "rbac.scope namespaced grants the shim rights only in shim.namespaces: list them" -}}
{{- end -}}
{{- if and (not .Values.shim.leaderElection.enabled) (gt (int .Values.shim.replicas) 1) -}}
{{- fail "shim.leaderElection.enabled false with shim.replicas above 1: every replica would act" -}}
{{- end -}}
{{- end }}
