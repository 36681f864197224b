{{/* The release's name for its objects: the release name, or
release-vipstack when it does not contain "vipstack". */}}
{{- define "vipstack.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 48 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 48 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 48 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "vipstack.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of a component: pass (list . "controller"). */}}
{{- define "vipstack.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ $root.Chart.Name }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "vipstack.componentLabels" -}}
{{ include "vipstack.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "vipstack.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end -}}

{{- define "vipstack.controller.serviceAccountName" -}}
{{- .Values.controller.serviceAccount.name | default (printf "%s-controller" (include "vipstack.fullname" .)) -}}
{{- end -}}

{{- define "vipstack.agent.serviceAccountName" -}}
{{- .Values.agent.serviceAccount.name | default (printf "%s-agent" (include "vipstack.fullname" .)) -}}
{{- end -}}

{{/* The API server for clusters without kube-proxy: an explicit env wins
over the one the kubelet injects from the kubernetes Service. */}}
{{- define "vipstack.apiServerEnv" -}}
{{- if .Values.kubernetesServiceHost }}
- name: KUBERNETES_SERVICE_HOST
  value: {{ .Values.kubernetesServiceHost | quote }}
- name: KUBERNETES_SERVICE_PORT
  value: {{ .Values.kubernetesServicePort | quote }}
{{- end }}
{{- end -}}

{{/* The agent's ports share the node's network namespace: two equal ports,
or one on the agent's own status port (127.0.0.1:9653), would stop the
agent at start. */}}
{{- define "vipstack.agent.checkPorts" -}}
{{- $a := .Values.agent -}}
{{- if eq (int $a.metricsPort) (int $a.healthPort) -}}
{{- fail (printf "agent.healthPort: %d is also agent.metricsPort; the agent binds both on the node's network, so they must differ" (int $a.healthPort)) -}}
{{- end -}}
{{- range $field := list "metricsPort" "healthPort" -}}
{{- if eq (int (index $a $field)) 9653 -}}
{{- fail (printf "agent.%s: 9653 is the port of the agent's status endpoint (127.0.0.1:9653, on the node's network); want another port (the defaults: metrics 9654, health 9655)" $field) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The authenticated metrics endpoint's arguments of a component (list $
"agent"|"controller"): --metrics-auth, and the certificate files of its
metricsTLSSecret, mounted at /etc/vipstack/metrics-tls.
*/}}
{{- define "vipstack.metricsAuthArgs" -}}
{{- $c := index (index . 0).Values (index . 1) }}
{{- if eq $c.metricsAuth "kubernetes" }}
# HTTPS, only for a bearer token whose user may get /metrics (the API
# server's TokenReview and SubjectAccessReview).
- --metrics-auth=kubernetes
{{- if $c.metricsTLSSecret }}
- --metrics-tls-cert-file=/etc/vipstack/metrics-tls/tls.crt
- --metrics-tls-key-file=/etc/vipstack/metrics-tls/tls.key
{{- end }}
{{- end }}
{{- end }}

{{/* The volume of a component's metricsTLSSecret (list $ component). */}}
{{- define "vipstack.metricsTLSVolume" -}}
{{- $c := index (index . 0).Values (index . 1) }}
{{- if and (eq $c.metricsAuth "kubernetes") $c.metricsTLSSecret }}
- name: metrics-tls
  secret: {secretName: {{ $c.metricsTLSSecret }}}
{{- end }}
{{- end }}

{{/* Its mount. */}}
{{- define "vipstack.metricsTLSMount" -}}
{{- $c := index (index . 0).Values (index . 1) }}
{{- if and (eq $c.metricsAuth "kubernetes") $c.metricsTLSSecret }}
- {name: metrics-tls, mountPath: /etc/vipstack/metrics-tls, readOnly: true}
{{- end }}
{{- end }}

{{/*
How a monitor reaches a component's metrics (list $ component kind):
https with the monitoring.tlsConfig and a bearer token when its
metricsAuth is kubernetes.
*/}}
{{- define "vipstack.monitorAuth" -}}
{{- $ := index . 0 }}
{{- $c := index $.Values (index . 1) }}
{{- $m := $.Values.monitoring }}
{{- if eq $c.metricsAuth "kubernetes" }}
scheme: https
{{- with $m.tlsConfig }}
tlsConfig:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $m.bearerTokenSecret.name }}
authorization:
  type: Bearer
  credentials: {name: {{ $m.bearerTokenSecret.name }}, key: {{ $m.bearerTokenSecret.key }}}
{{- else if eq (index . 2) "ServiceMonitor" }}
# Prometheus's own ServiceAccount token.
bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
{{- else }}
{{- fail (printf "monitoring.podMonitor.enabled with %s.metricsAuth kubernetes: set monitoring.bearerTokenSecret.name (a Secret in the release namespace with the token Prometheus sends; a PodMonitor cannot send Prometheus's own token), or use monitoring.serviceMonitor, or %s.metricsAuth none" (index . 1) (index . 1)) }}
{{- end }}
{{- end }}
{{- end }}
