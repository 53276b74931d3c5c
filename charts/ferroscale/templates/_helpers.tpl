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

{{/* Upstream chart's rbac.serviceAccount, which wins over serviceAccount where set ({} when absent). */}}
{{- define "ferroscale.caServiceAccount" -}}
{{- toJson (dig "serviceAccount" dict (.Values.rbac | default dict)) -}}
{{- end -}}

{{/* "true" when the chart creates the ServiceAccount: rbac.serviceAccount.create, else serviceAccount.create. */}}
{{- define "ferroscale.serviceAccountCreate" -}}
{{- $ca := include "ferroscale.caServiceAccount" . | fromJson -}}
{{- if hasKey $ca "create" -}}
{{- $ca.create -}}
{{- else -}}
{{- .Values.serviceAccount.create -}}
{{- end -}}
{{- end -}}

{{/* The ServiceAccount's annotations: serviceAccount.annotations and rbac.serviceAccount.annotations, the
latter winning per key (JSON). */}}
{{- define "ferroscale.serviceAccountAnnotations" -}}
{{- $ca := include "ferroscale.caServiceAccount" . | fromJson -}}
{{- toJson (merge (dict) ($ca.annotations | default dict) (.Values.serviceAccount.annotations | default dict)) -}}
{{- end -}}

{{- define "ferroscale.serviceAccountName" -}}
{{- $ca := include "ferroscale.caServiceAccount" . | fromJson -}}
{{- $name := coalesce $ca.name .Values.serviceAccount.name "" -}}
{{- if eq (include "ferroscale.serviceAccountCreate" .) "true" -}}
{{- default (include "ferroscale.fullname" .) $name -}}
{{- else -}}
{{- required "serviceAccount.name (or rbac.serviceAccount.name) is required when the ServiceAccount is not created" $name -}}
{{- end -}}
{{- end -}}

{{- define "ferroscale.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}

{{/* Replicas: replicaCount (upstream's name) or replicas. Provider runs exactly one (one cache, one writer;
the schema refuses more, and so does this in case schema validation is skipped); standalone defaults to 2,
one of which leads, and runs at most one without leader election. */}}
{{- define "ferroscale.replicas" -}}
{{- $replicas := coalesce .Values.replicaCount .Values.replicas -}}
{{- if eq .Values.mode "provider" -}}
{{- if gt (int (default 1 $replicas)) 1 -}}
{{- fail "replicas (or replicaCount): provider mode runs exactly one replica (one AWS cache, one writer; cluster-autoscaler is leader-elected itself)" -}}
{{- end -}}
1
{{- else -}}
{{- $replicas = default 2 $replicas -}}
{{- if and (gt (int $replicas) 1) (not (include "ferroscale.leaderElect" . | eq "true")) -}}
{{- fail "replicas (or replicaCount): standalone mode with standalone.leaderElect=false runs at most one replica (without a Lease every replica would write)" -}}
{{- end -}}
{{- $replicas -}}
{{- end -}}
{{- end -}}

{{/* Whether standalone replicas elect a leader: standalone.leaderElect, unless extraArgs or
standalone.extraArgs set leader-elect (they win on the command line, so they win here). */}}
{{- define "ferroscale.leaderElect" -}}
{{- $extra := merge (dict) (.Values.extraArgs | default dict) (.Values.standalone.extraArgs | default dict) -}}
{{- if hasKey $extra "leader-elect" -}}
{{- index $extra "leader-elect" | toString | lower -}}
{{- else -}}
{{- .Values.standalone.leaderElect | toString -}}
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

{{/* The text of the priority file (--priority-config), or nothing: expanderPriorities (upstream's name) in
provider mode, else priorities. In standalone mode expanderPriorities is the ConfigMap
cluster-autoscaler-priority-expander instead, which run follows, and no file is passed. */}}
{{- define "ferroscale.priorityFile" -}}
{{- if .Values.expanderPriorities -}}
{{- if eq .Values.mode "provider" -}}
{{- include "ferroscale.upstreamPriorities" .Values.expanderPriorities -}}
{{- end -}}
{{- else if .Values.priorities -}}
{{- include "ferroscale.upstreamPriorities" .Values.priorities -}}
{{- end -}}
{{- end -}}

{{/* Priority tiers in upstream's format from a string (verbatim) or a map (keys written as integers). */}}
{{- define "ferroscale.upstreamPriorities" -}}
{{- if kindIs "string" . -}}
{{ . }}
{{- else -}}
{{- range $priority, $patterns := . }}
{{ int $priority }}:
  {{- toYaml $patterns | nindent 2 }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* The --nodes specs: aws.nodes, except those naming a group of autoscalingGroups, then autoscalingGroups
(upstream's {name, minSize, maxSize}) as MIN:MAX:NAME (a YAML list). */}}
{{- define "ferroscale.nodes" -}}
{{- $caNames := list -}}
{{- range .Values.autoscalingGroups }}
{{- $caNames = append $caNames (toString .name) -}}
{{- end -}}
{{- $out := list -}}
{{- range .Values.aws.nodes }}
{{- if not (has (regexReplaceAll "^[0-9]+:[0-9]+:" . "") $caNames) }}
{{- $out = append $out . -}}
{{- end }}
{{- end }}
{{- range .Values.autoscalingGroups }}
{{- $out = append $out (printf "%v:%v:%v" (int .minSize) (int .maxSize) .name) -}}
{{- end }}
{{- toYaml $out -}}
{{- end -}}

{{/* The --node-group-auto-discovery specs: aws.autoDiscovery, then, when autoDiscovery.clusterName is set,
asg:tag= and autoDiscovery.tags (run through tpl) joined by commas, as upstream's chart (a YAML list). */}}
{{- define "ferroscale.autoDiscovery" -}}
{{- $out := .Values.aws.autoDiscovery | default list -}}
{{- if .Values.autoDiscovery.clusterName -}}
{{- $spec := printf "asg:tag=%s" (tpl (join "," .Values.autoDiscovery.tags) .) -}}
{{- if not (has $spec $out) -}}
{{- $out = append $out $spec -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
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
{{- range include "ferroscale.autoDiscovery" . | fromYamlArray }}
- --node-group-auto-discovery={{ . }}
{{- end }}
{{- range include "ferroscale.nodes" . | fromYamlArray }}
- --nodes={{ . }}
{{- end }}
- --pricing-source={{ .Values.aws.pricingSource }}
{{- end }}
- --expander={{ .Values.expander }}
{{- if include "ferroscale.priorityFile" . }}
- --priority-config=/etc/ferroscale/config/priorities.yaml
{{- end }}
{{- if .Values.priceOverrides }}
- --price-overrides=/etc/ferroscale/config/price-overrides.yaml
{{- end }}
{{- end -}}

{{/* Flags of ferroscale's container, as a YAML list: the chart's own, except those whose key extraArgs or
(standalone) standalone.extraArgs set, then those (extraArgs winning per key), each --key=value. Repeatable
flags (--nodes, --node-group-auto-discovery, --tls-client-san) are kept with any extraArgs one. */}}
{{- define "ferroscale.args" -}}
{{- $extra := merge (dict) (.Values.extraArgs | default dict) (ternary (.Values.standalone.extraArgs | default dict) dict (eq .Values.mode "standalone")) -}}
{{- $repeatable := list "nodes" "node-group-auto-discovery" "tls-client-san" -}}
{{- range include "ferroscale.chartArgs" . | fromYamlArray }}
{{- $key := regexReplaceAll "^--([^=]+)(=.*)?$" . "${1}" }}
{{- if or (not (hasPrefix "--" .)) (has $key $repeatable) (not (hasKey $extra $key)) }}
- {{ . | quote }}
{{- end }}
{{- end }}
{{- range $k, $v := $extra }}
- {{ printf "--%s=%s" $k (include "ferroscale.scalar" $v) | quote }}
{{- end }}
{{- end -}}

{{/* The chart's own flags of ferroscale's container (a YAML list; "ferroscale.args" adds extraArgs). */}}
{{- define "ferroscale.chartArgs" -}}
{{- $provider := eq .Values.mode "provider" -}}
{{- $tls := and $provider .Values.tls.enabled -}}
{{- if $provider }}
- serve
- --listen=0.0.0.0:{{ .Values.provider.grpcPort }}
- --http-listen=0.0.0.0:{{ .Values.metricsPort }}
- --expander-listen=0.0.0.0:{{ .Values.provider.expanderPort }}
{{- if $tls }}
- --tls-cert=/etc/ferroscale/tls/tls.crt
- --tls-key=/etc/ferroscale/tls/tls.key
- --tls-client-ca=/etc/ferroscale/tls/ca.crt
{{- range .Values.tls.clientNames }}
- --tls-client-san={{ . }}
{{- end }}
- --expander-tls-cert=/etc/ferroscale/tls/tls.crt
- --expander-tls-key=/etc/ferroscale/tls/tls.key
{{- else }}
{{- /* tls.enabled=false: plaintext on purpose (serve refuses it on a non-loopback address otherwise). */}}
- --allow-plaintext
{{- end }}
{{- else }}
- run
- --address=0.0.0.0:{{ .Values.metricsPort }}
- --namespace={{ .Release.Namespace }}
- --scan-interval={{ .Values.standalone.scanInterval }}
- --dry-run={{ .Values.standalone.dryRun }}
- --leader-elect={{ .Values.standalone.leaderElect }}
- --leader-elect-resource-name={{ .Values.standalone.leaseName }}
- --status-config-map-name={{ .Values.standalone.statusConfigMapName }}
{{- if .Values.descheduler.enabled }}
{{- if include "ferroscale.deschedulerCron" . }}
{{- fail "descheduler.kind: CronJob runs `ferroscale deschedule` in provider mode; standalone deschedules inside run (use Deployment)" }}
{{- end }}
- --deschedule-policy=/etc/ferroscale/config/deschedule-policy.yaml
- --deschedule-interval={{ include "ferroscale.deschedulerInterval" . }}
- --deschedule-cooldown={{ .Values.descheduler.cooldown }}
{{- end }}
{{- end }}
{{ include "ferroscale.cloudArgs" . }}
{{- end -}}

{{/* ferroscale's environment (a YAML list): AWS_REGION from awsRegion (upstream's name; --aws-region, from
aws.region, wins over it in the SDK), then extraEnv {NAME: value}. */}}
{{- define "ferroscale.env" -}}
{{- $env := list -}}
{{- with .Values.awsRegion }}
{{- $env = append $env (dict "name" "AWS_REGION" "value" (toString .)) -}}
{{- end }}
{{- range $k, $v := .Values.extraEnv }}
{{- $env = append $env (dict "name" $k "value" (include "ferroscale.scalar" $v)) -}}
{{- end }}
{{- toYaml $env -}}
{{- end -}}

{{/* A value as text; whole numbers (YAML numbers reach templates as floats) without an exponent: 100000000,
not 1e+08. */}}
{{- define "ferroscale.scalar" -}}
{{- if and (kindIs "float64" .) (eq . (floor .)) -}}
{{- int64 . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{/* The descheduler policy file as the descheduler chart writes it: apiVersion and kind, then
descheduler.policy (its deschedulerPolicy). */}}
{{- define "ferroscale.deschedulerPolicy" -}}
{{- $d := .Values.descheduler -}}
apiVersion: {{ $d.deschedulerPolicyAPIVersion | default $d.policyAPIVersion | quote }}
kind: "DeschedulerPolicy"
{{ toYaml ($d.deschedulerPolicy | default $d.policy) }}
{{- end -}}

{{/* descheduler.interval, refused when zero: `run` needs an interval, and `deschedule` with 0 runs one
cycle and exits, which a Deployment would restart forever. */}}
{{- define "ferroscale.deschedulerInterval" -}}
{{- $d := .Values.descheduler -}}
{{- $i := toString ($d.deschedulingInterval | default $d.interval) -}}
{{- if regexMatch "^([0.]+(ns|us|µs|ms|s|m|h))+$" $i -}}
{{- fail "descheduler.interval: must be more than 0s" -}}
{{- end -}}
{{- $i -}}
{{- end -}}

{{/* Whether the descheduler runs as a CronJob (descheduler.kind, the descheduler chart's `kind`). */}}
{{- define "ferroscale.deschedulerCron" -}}
{{- $kind := .Values.descheduler.kind | default "Deployment" -}}
{{- if not (has $kind (list "Deployment" "CronJob")) -}}
{{- fail (printf "descheduler.kind: %s is neither Deployment nor CronJob" $kind) -}}
{{- end -}}
{{- if eq $kind "CronJob" -}}true{{- end -}}
{{- end -}}

{{/* The name of the descheduler's objects in provider mode (`ferroscale deschedule`'s Deployment). */}}
{{- define "ferroscale.deschedulerName" -}}
{{- printf "%s-descheduler" (include "ferroscale.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The descheduler's pod labels (provider mode): apart from ferroscale's own, which its Deployment,
Service, PDB and NetworkPolicy select. */}}
{{- define "ferroscale.deschedulerSelectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}-descheduler
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The descheduler's ServiceAccount: descheduler.serviceAccount.name, or the descheduler's name when
the chart creates it. */}}
{{- define "ferroscale.deschedulerServiceAccountName" -}}
{{- $sa := .Values.descheduler.serviceAccount -}}
{{- if $sa.create -}}
{{- default (include "ferroscale.deschedulerName" .) $sa.name -}}
{{- else -}}
{{- required "descheduler.serviceAccount.name is required when the ServiceAccount is not created" $sa.name -}}
{{- end -}}
{{- end -}}

{{/* Flags of `ferroscale deschedule` (a YAML list): the chart's own, except those whose key
descheduler.extraArgs sets, then those, each --key=value. */}}
{{- define "ferroscale.deschedulerArgs" -}}
{{- $d := .Values.descheduler -}}
{{- $cron := eq (include "ferroscale.deschedulerCron" .) "true" -}}
{{- $extra := $d.extraArgs | default dict -}}
{{- $own := list
  "deschedule"
  "--policy-config-file=/etc/ferroscale/descheduler/policy.yaml"
  (printf "--descheduling-interval=%s" (ternary "0s" (include "ferroscale.deschedulerInterval" .) $cron))
  (printf "--deschedule-cooldown=%s" $d.cooldown)
  (printf "--dry-run=%v" $d.dryRun)
  (ternary (printf "--secure-port=%v" .Values.metricsPort) (printf "--address=0.0.0.0:%v" .Values.metricsPort) (eq (toString $d.securePort) "true"))
  (printf "--leader-elect=%v" (and $d.leaderElect (not $cron)))
  (printf "--leader-elect-resource-name=%s" $d.leaseName)
  (printf "--leader-elect-resource-namespace=%s" .Release.Namespace) -}}
{{- range $own }}
{{- $key := regexReplaceAll "^--([^=]+)(=.*)?$" . "${1}" }}
{{- if or (not (hasPrefix "--" .)) (not (hasKey $extra $key)) }}
- {{ . | quote }}
{{- end }}
{{- end }}
{{- range $k, $v := $extra }}
- {{ printf "--%s=%s" $k (include "ferroscale.scalar" $v) | quote }}
{{- end }}
{{- end -}}
