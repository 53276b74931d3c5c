{{- define "ferroscale.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ferroscale.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ferroscale.labels" -}}
{{ include "ferroscale.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/component: {{ .Values.mode }}
{{- end -}}

{{- define "ferroscale.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ferroscale.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "ferroscale.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}

{{/* Replicas: provider runs exactly one (one cache, one writer; the schema refuses more, and so does this
in case schema validation is skipped); standalone defaults to 2, one of which leads. */}}
{{- define "ferroscale.replicas" -}}
{{- if eq .Values.mode "provider" -}}
{{- if gt (int (default 1 .Values.replicas)) 1 -}}
{{- fail "replicas: provider mode runs exactly one replica (one AWS cache, one writer; cluster-autoscaler is leader-elected itself)" -}}
{{- end -}}
1
{{- else -}}
{{- default 2 .Values.replicas -}}
{{- end -}}
{{- end -}}

{{/* Where the certificates come from: certManager, secrets (existing), or generated (by this chart). */}}
{{- define "ferroscale.tlsSource" -}}
{{- if .Values.tls.certManager.enabled -}}
certManager
{{- else if .Values.tls.serverSecret -}}
secrets
{{- else -}}
generated
{{- end -}}
{{- end -}}

{{/* Secret holding the server certificate (tls.crt, tls.key, ca.crt). */}}
{{- define "ferroscale.serverSecret" -}}
{{- if eq (include "ferroscale.tlsSource" .) "secrets" -}}
{{ .Values.tls.serverSecret }}
{{- else -}}
{{ include "ferroscale.fullname" . }}-server-tls
{{- end -}}
{{- end -}}

{{/* Secret holding cluster-autoscaler's client certificate. */}}
{{- define "ferroscale.clientSecret" -}}
{{- if eq (include "ferroscale.tlsSource" .) "secrets" -}}
{{ required "tls.clientSecret is required for the cluster-autoscaler client certificate" .Values.tls.clientSecret }}
{{- else -}}
{{ include "ferroscale.fullname" . }}-client-tls
{{- end -}}
{{- end -}}

{{/* The Service's DNS names, which the server certificate carries (a YAML list). */}}
{{- define "ferroscale.serviceDnsNames" -}}
{{- $svc := include "ferroscale.fullname" . -}}
- {{ $svc }}
- {{ $svc }}.{{ .Release.Namespace }}
- {{ $svc }}.{{ .Release.Namespace }}.svc
- {{ $svc }}.{{ .Release.Namespace }}.svc.cluster.local
{{- end -}}

{{/* The names cluster-autoscaler's client certificate carries: tls.clientNames, or cluster-autoscaler. */}}
{{- define "ferroscale.clientCertNames" -}}
{{- toYaml (.Values.tls.clientNames | default (list "cluster-autoscaler")) -}}
{{- end -}}

{{/* What the generated certificates were issued for, stored on their Secrets: certificates issued for other
names are issued again. */}}
{{- define "ferroscale.generatedTls.names" -}}
server={{ include "ferroscale.serviceDnsNames" . | fromYamlArray | join "," }};client={{ include "ferroscale.clientCertNames" . | fromYamlArray | join "," }}
{{- end -}}

{{/* The chart-generated Secrets already in the cluster, as JSON {"server": data, "client": data}, when both
exist, hold tls.crt, tls.key and ca.crt, and were issued for today's names; otherwise {}. Offline
(helm template, --dry-run=client) lookup finds nothing. */}}
{{- define "ferroscale.generatedTls.existing" -}}
{{- $names := include "ferroscale.generatedTls.names" . -}}
{{- $server := lookup "v1" "Secret" .Release.Namespace (printf "%s-server-tls" (include "ferroscale.fullname" .)) -}}
{{- $client := lookup "v1" "Secret" .Release.Namespace (printf "%s-client-tls" (include "ferroscale.fullname" .)) -}}
{{- $ok := and $server $client -}}
{{- range $s := list $server $client -}}
{{- if $ok -}}
{{- $data := get $s "data" | default dict -}}
{{- $ok = and (eq (dig "metadata" "annotations" "ferroscale/certificate-names" "" $s) $names) (hasKey $data "tls.crt") (hasKey $data "tls.key") (hasKey $data "ca.crt") -}}
{{- end -}}
{{- end -}}
{{- if $ok -}}
{{- toJson (dict "server" $server.data "client" $client.data) -}}
{{- else -}}
{}
{{- end -}}
{{- end -}}

{{/* Flags shared by serve and run: the cloud, prices and the expander. */}}
{{- define "ferroscale.cloudArgs" -}}
- --cloud={{ .Values.cloud }}
{{- if eq .Values.cloud "memory" }}
- --memory-config=/etc/ferroscale/config/memory-cloud.yaml
{{- else }}
{{- with .Values.aws.region }}
- --aws-region={{ . }}
{{- end }}
{{- range .Values.aws.autoDiscovery }}
- --node-group-auto-discovery={{ . }}
{{- end }}
{{- range .Values.aws.nodes }}
- --nodes={{ . }}
{{- end }}
- --pricing-source={{ .Values.aws.pricingSource }}
{{- end }}
- --expander={{ .Values.expander }}
{{- if .Values.priorities }}
- --priority-config=/etc/ferroscale/config/priorities.yaml
{{- end }}
{{- if .Values.priceOverrides }}
- --price-overrides=/etc/ferroscale/config/price-overrides.yaml
{{- end }}
{{- end -}}
