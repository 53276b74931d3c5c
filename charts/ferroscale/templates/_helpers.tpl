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

{{/* Secret holding the server certificate (tls.crt, tls.key, ca.crt). */}}
{{- define "ferroscale.serverSecret" -}}
{{- if .Values.tls.certManager.enabled -}}
{{ include "ferroscale.fullname" . }}-server-tls
{{- else -}}
{{ .Values.tls.serverSecret }}
{{- end -}}
{{- end -}}

{{/* Secret holding cluster-autoscaler's client certificate. */}}
{{- define "ferroscale.clientSecret" -}}
{{- if .Values.tls.certManager.enabled -}}
{{ include "ferroscale.fullname" . }}-client-tls
{{- else -}}
{{ required "tls.clientSecret is required for the cluster-autoscaler client certificate" .Values.tls.clientSecret }}
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
