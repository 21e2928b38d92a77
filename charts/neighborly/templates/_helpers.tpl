{{/* SPDX-License-Identifier: Apache-2.0 */}}

{{/* Chart name, 63 characters at most. */}}
{{- define "neighborly.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Resource name prefix: the release name, plus the chart name unless the release name holds it. */}}
{{- define "neighborly.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Name of one component's objects: <fullname>-<component>. */}}
{{- define "neighborly.componentName" -}}
{{- printf "%s-%s" (include "neighborly.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "neighborly.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every object; call with (dict "root" $ "component" "extender"). */}}
{{- define "neighborly.labels" -}}
helm.sh/chart: {{ include "neighborly.chart" .root }}
{{ include "neighborly.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: neighborly
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "neighborly.selectorLabels" -}}
app.kubernetes.io/name: {{ include "neighborly.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* The Neighborly image reference. */}}
{{- define "neighborly.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- printf "%s/%s:%s" .Values.image.registry .Values.image.repository $tag -}}
{{- end -}}

{{/* The extender's in-cluster HTTP URL, as the scheduler calls it. */}}
{{- define "neighborly.extenderURL" -}}
{{- if .Values.schedulerExtender.urlPrefix -}}
{{- .Values.schedulerExtender.urlPrefix -}}
{{- else -}}
{{- printf "%s://%s.%s.svc:%d" (ternary "https" "http" .Values.tls.scheduler) (include "neighborly.componentName" (dict "root" . "component" "extender")) .Release.Namespace (int .Values.extender.httpPort) -}}
{{- end -}}
{{- end -}}

{{/* The headless Service agents resolve to reach every extender replica. */}}
{{- define "neighborly.extenderAgentsAddress" -}}
{{- printf "%s.%s.svc:%d" (include "neighborly.componentName" (dict "root" . "component" "extender-agents")) .Release.Namespace (int .Values.extender.grpcPort) -}}
{{- end -}}

{{/* The `extenders:` entry shared by the second scheduler and the primary-scheduler snippet. */}}
{{- define "neighborly.extenderEntry" -}}
- urlPrefix: {{ include "neighborly.extenderURL" . | quote }}
  filterVerb: filter
  prioritizeVerb: prioritize
  weight: {{ .Values.schedulerExtender.weight }}
  enableHTTPS: {{ .Values.tls.scheduler }}
  {{- if .Values.tls.scheduler }}
  {{- /* second-scheduler: the Secret mounted in the scheduler pod; extender-only:
         where the admin copies the -tls-scheduler Secret's files on control-plane hosts. */}}
  {{- $dir := ternary "/etc/neighborly-tls" "/etc/kubernetes/neighborly" (eq .Values.mode "second-scheduler") }}
  tlsConfig:
    caFile: {{ $dir }}/ca.crt
    {{- if .Values.tls.requireSchedulerClientCert }}
    certFile: {{ $dir }}/tls.crt
    keyFile: {{ $dir }}/tls.key
    {{- end }}
  {{- end }}
  httpTimeout: {{ .Values.schedulerExtender.httpTimeout }}
  nodeCacheCapable: {{ .Values.schedulerExtender.nodeCacheCapable }}
  ignorable: {{ .Values.schedulerExtender.ignorable }}
{{- end -}}

{{/* Image pull secrets block for a pod spec. */}}
{{- define "neighborly.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Prometheus scrape annotations; call with (dict "root" $ "port" 8889 "scheme" "https"). */}}
{{- define "neighborly.scrapeAnnotations" -}}
{{- if .root.Values.metrics.podAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
prometheus.io/scheme: {{ default "http" .scheme }}
{{- end }}
{{- end -}}

{{/* Secret holding one component's TLS files (tls.crt, tls.key, ca.crt); component: extender|agent|scheduler. */}}
{{- define "neighborly.tlsSecret" -}}
{{- $existing := get .root.Values.tls.existingSecrets .component -}}
{{- if $existing -}}
{{- $existing -}}
{{- else -}}
{{- include "neighborly.componentName" (dict "root" .root "component" (printf "tls-%s" .component)) -}}
{{- end -}}
{{- end -}}

{{/* Whether any TLS is on (the chart then renders or references the Secrets). */}}
{{- define "neighborly.tlsEnabled" -}}
{{- if or .Values.tls.telemetry .Values.tls.scheduler -}}true{{- end -}}
{{- end -}}

{{/* The extender's configuration: extender.config plus the transport security keys. */}}
{{/* The names a role's client certificate must carry (tls.clientNames; the chart's CN by default). */}}
{{- define "neighborly.clientNames" -}}
{{- $names := get .root.Values.tls.clientNames .role -}}
{{- if not $names -}}
{{- $names = list (include "neighborly.componentName" (dict "root" .root "component" .role)) -}}
{{- end -}}
{{- toJson $names -}}
{{- end -}}

{{- define "neighborly.extenderConfig" -}}
{{- $schedulerNames := include "neighborly.clientNames" (dict "root" . "role" "scheduler") | fromJsonArray -}}
{{- $agentNames := include "neighborly.clientNames" (dict "root" . "role" "agent") | fromJsonArray -}}
{{- $config := deepCopy .Values.extender.config -}}
{{- $grpc := dict -}}
{{- if .Values.tls.telemetry -}}
{{- $_ := set $grpc "tls" (dict "caFile" "/etc/neighborly-tls/ca.crt" "certFile" "/etc/neighborly-tls/tls.crt" "keyFile" "/etc/neighborly-tls/tls.key" "requireClientCert" true "allowedClientNames" $agentNames) -}}
{{- else -}}
{{- $_ := set $grpc "insecurePlaintext" true -}}
{{- end -}}
{{- with .Values.extender.identity.issuer -}}
{{- $subjects := $.Values.extender.identity.allowedSubjects -}}
{{- if not $subjects -}}
{{- $subjects = list (printf "system:serviceaccount:%s:%s" $.Release.Namespace (include "neighborly.componentName" (dict "root" $ "component" "agent"))) -}}
{{- end -}}
{{- $_ := set $grpc "identity" (dict "issuer" . "audience" "neighborly" "jwksFile" "/etc/neighborly-identity/jwks.json" "allowedSubjects" $subjects) -}}
{{- end -}}
{{- $_ := set $config "grpc" (merge $grpc (default dict $config.grpc)) -}}
{{- if .Values.tls.scheduler -}}
{{- $httpTls := dict "certFile" "/etc/neighborly-tls/tls.crt" "keyFile" "/etc/neighborly-tls/tls.key" -}}
{{- if .Values.tls.requireSchedulerClientCert -}}
{{- $_ := set $httpTls "clientCaFile" "/etc/neighborly-tls/ca.crt" -}}
{{- $_ := set $httpTls "allowedClientNames" $schedulerNames -}}
{{- end -}}
{{- $_ := set $config "http" (merge (dict "tls" $httpTls) (default dict $config.http)) -}}
{{- end -}}
{{- if and (eq .Values.mode "second-scheduler") (eq .Values.scheduler.integration "plugin") -}}
{{- /* The placement port for neighborly-scheduler's plugin: mutual TLS with the
       scheduler's client certificate from the chart's CA, or plaintext when
       the chart runs without scheduler TLS. */ -}}
{{- $placement := dict "address" (printf "0.0.0.0:%d" (int .Values.extender.placement.port)) -}}
{{- if .Values.tls.scheduler -}}
{{- $_ := set $placement "tls" (dict "caFile" "/etc/neighborly-tls/ca.crt" "certFile" "/etc/neighborly-tls/tls.crt" "keyFile" "/etc/neighborly-tls/tls.key" "allowedClientNames" $schedulerNames) -}}
{{- else -}}
{{- $_ := set $placement "insecurePlaintext" true -}}
{{- end -}}
{{- $_ := set $config "placement" (merge $placement (default dict $config.placement)) -}}
{{- end -}}
{{- $operator := dict "tokenFile" "/etc/neighborly-operator/tokens" -}}
{{- if .Values.tls.scheduler -}}
{{- $_ := set $operator "tls" (dict "certFile" "/etc/neighborly-tls/tls.crt" "keyFile" "/etc/neighborly-tls/tls.key") -}}
{{- end -}}
{{- $_ := set $config "operator" (merge $operator (default dict $config.operator)) -}}
{{- $metrics := default dict $config.metrics -}}
{{- $_ := set $metrics "perNodeSeries" .Values.metrics.perNodeSeries -}}
{{- $_ := set $config "metrics" $metrics -}}
{{- if .Values.allocation.enabled -}}
{{- $batch := dict "l3WaysFraction" .Values.allocation.batch.l3WaysFraction "mbaPercent" (int .Values.allocation.batch.mbaPercent) "mbaMBps" (int64 .Values.allocation.batch.mbaMBps) -}}
{{- $_ := set $config "allocation" (merge (dict "enabled" true "batch" $batch) (default dict $config.allocation)) -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}

{{/* Secret holding the operator API's bearer tokens (key `tokens`). */}}
{{- define "neighborly.operatorTokensSecret" -}}
{{- default (include "neighborly.componentName" (dict "root" . "component" "operator-tokens")) .Values.extender.operatorTokens.existingSecret -}}
{{- end -}}

{{/* The operator port's scheme: HTTPS with the extender's certificate when tls.scheduler. */}}
{{- define "neighborly.operatorScheme" -}}
{{- ternary "https" "http" .Values.tls.scheduler -}}
{{- end -}}

{{/*
The kube-scheduler image. kube-scheduler must not be newer than the API server
(Kubernetes' version skew policy), so the tag follows the cluster's minor
version: scheduler.image.tagByMinor, or scheduler.image.tag checked against it.
*/}}
{{- define "neighborly.schedulerImage" -}}
{{- $img := .Values.scheduler.image -}}
{{- $cluster := regexFind "^v?[0-9]+\\.[0-9]+" .Capabilities.KubeVersion.Version | trimPrefix "v" -}}
{{- $tag := $img.tag -}}
{{- if not $tag -}}
{{- $tag = get $img.tagByMinor $cluster -}}
{{- if not $tag -}}
{{- fail (printf "[ERROR] scheduler.image: no kube-scheduler pinned for Kubernetes %s (the cluster's version %s); set scheduler.image.tag to a kube-scheduler v%s.x, or add it to scheduler.image.tagByMinor" $cluster .Capabilities.KubeVersion.Version $cluster) -}}
{{- end -}}
{{- else -}}
{{- $tagMinor := regexFind "^v?[0-9]+\\.[0-9]+" $tag | trimPrefix "v" -}}
{{- $tagParts := splitList "." $tagMinor -}}
{{- $clusterParts := splitList "." $cluster -}}
{{- if or (gt (int (index $tagParts 0)) (int (index $clusterParts 0))) (and (eq (int (index $tagParts 0)) (int (index $clusterParts 0))) (gt (int (index $tagParts 1)) (int (index $clusterParts 1)))) -}}
{{- fail (printf "[ERROR] scheduler.image.tag %s is newer than the cluster (Kubernetes %s): kube-scheduler must not be newer than the API server; use a v%s.x tag or leave the tag empty" $tag .Capabilities.KubeVersion.Version $cluster) -}}
{{- end -}}
{{- end -}}
{{- printf "%s/%s:%s" $img.registry $img.repository $tag -}}
{{- end -}}

{{/* The Neighborly plugin's pluginConfig args (scheduler.integration: plugin). */}}
{{- define "neighborly.pluginArgs" -}}
address: {{ printf "%s.%s.svc:%d" (include "neighborly.componentName" (dict "root" . "component" "extender")) .Release.Namespace (int .Values.extender.placement.port) | quote }}
{{- /* Reserve and Unreserve also go to every replica behind the headless
       Service (one A record per pod), so a surviving replica holds the
       bookings of the pods in flight (docs/operations.md, "Several replicas"). */}}
peersAddress: {{ printf "%s.%s.svc:%d" (include "neighborly.componentName" (dict "root" . "component" "extender-agents")) .Release.Namespace (int .Values.extender.placement.port) | quote }}
{{- if .Values.tls.scheduler }}
{{- if not .Values.tls.requireSchedulerClientCert }}
{{- fail "[ERROR] scheduler.integration=plugin with tls.scheduler needs tls.requireSchedulerClientCert: the placement port takes only clients with a certificate" }}
{{- end }}
caFile: /etc/neighborly-tls/ca.crt
certFile: /etc/neighborly-tls/tls.crt
keyFile: /etc/neighborly-tls/tls.key
{{- else }}
insecure: true
{{- end }}
filterTimeout: {{ .Values.scheduler.plugin.filterTimeout }}
scoreTimeout: {{ .Values.scheduler.plugin.scoreTimeout }}
reserveTimeout: {{ .Values.scheduler.plugin.reserveTimeout }}
failOpen: {{ .Values.scheduler.plugin.failOpen }}
bookingLinger: {{ .Values.scheduler.plugin.bookingLinger }}
{{- end -}}

{{/* The neighborly-scheduler image; fails on a cluster minor it does not support. */}}
{{- define "neighborly.pluginSchedulerImage" -}}
{{- $cluster := regexFind "^v?[0-9]+\\.[0-9]+" .Capabilities.KubeVersion.Version | trimPrefix "v" -}}
{{- if not (has $cluster .Values.scheduler.plugin.supportedMinors) -}}
{{- fail (printf "[ERROR] scheduler.integration=plugin: neighborly-scheduler supports Kubernetes %s, the cluster is %s; use scheduler.integration=extender (any of scheduler.image.tagByMinor) on this cluster" (join ", " .Values.scheduler.plugin.supportedMinors) .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- $img := .Values.scheduler.plugin.image -}}
{{- printf "%s/%s:%s" $img.registry $img.repository (default .Chart.AppVersion $img.tag) -}}
{{- end -}}

{{/* The identity ConfigMap (key jwks.json) the extender mounts at /etc/neighborly-identity. */}}
{{- define "neighborly.identityConfigMap" -}}
{{- include "neighborly.componentName" (dict "root" . "component" "identity") -}}
{{- end -}}

{{/*
The kubectl image of extender.identity.jwksSync: its tag, or the cluster's
minor version's Kubernetes release from scheduler.image.tagByMinor (kubectl is
released with the same versions). registry.k8s.io/kubectl exists from v1.28 on.
*/}}
{{- define "neighborly.kubectlImage" -}}
{{- $img := .Values.extender.identity.jwksSync.image -}}
{{- $cluster := regexFind "^v?[0-9]+\\.[0-9]+" .Capabilities.KubeVersion.Version | trimPrefix "v" -}}
{{- $tag := $img.tag -}}
{{- if not $tag -}}
{{- $parts := splitList "." $cluster -}}
{{- if and (eq (int (index $parts 0)) 1) (lt (int (index $parts 1)) 28) -}}
{{- fail (printf "[ERROR] extender.identity.jwksSync.image: registry.k8s.io/kubectl is published from Kubernetes 1.28, the cluster is %s; set extender.identity.jwksSync.image.tag (and registry/repository) to a kubectl image with bash and jq" .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- $tag = get .Values.scheduler.image.tagByMinor $cluster -}}
{{- if not $tag -}}
{{- fail (printf "[ERROR] extender.identity.jwksSync.image: no Kubernetes release pinned for %s in scheduler.image.tagByMinor; set extender.identity.jwksSync.image.tag to a kubectl v%s.x" $cluster $cluster) -}}
{{- end -}}
{{- end -}}
{{- printf "%s/%s:%s" $img.registry $img.repository $tag -}}
{{- end -}}

{{/*
The pod of the JWKS sync Job and CronJob; call with (dict "root" $ "name"
account "configMap" name). The script needs bash and kubectl only: it checks
that the answer is a JWKS with keys, leaves the ConfigMap alone when it holds
that text already, else merge-patches data.jwks.json (JSON-escaped in bash).
*/}}
{{- define "neighborly.jwksSyncPod" -}}
{{- $sync := .root.Values.extender.identity.jwksSync -}}
metadata:
  labels:
    {{- include "neighborly.selectorLabels" (dict "root" .root "component" "jwks-sync") | nindent 4 }}
spec:
  serviceAccountName: {{ .name }}
  automountServiceAccountToken: true
  restartPolicy: OnFailure
  securityContext:
    runAsNonRoot: true
    runAsUser: 65534
    runAsGroup: 65534
    seccompProfile:
      type: RuntimeDefault
  containers:
    - name: jwks-sync
      image: {{ include "neighborly.kubectlImage" .root }}
      imagePullPolicy: {{ $sync.image.pullPolicy }}
      command: ["/bin/bash", "-c"]
      args:
        - |
          set -euo pipefail
          jwks="$(kubectl get --raw /openid/v1/jwks)"
          if [[ "${jwks}" != \{*\"keys\"*\"kty\"* ]]; then
            echo "jwks-sync: /openid/v1/jwks is not a JWKS with keys: ${jwks:0:200}" >&2
            exit 1
          fi
          current="$(kubectl get configmap "${JWKS_CONFIGMAP}" -n "${JWKS_NAMESPACE}" -o 'jsonpath={.data.jwks\.json}')"
          if [[ "${current}" == "${jwks}" ]]; then
            echo "jwks-sync: ${JWKS_NAMESPACE}/${JWKS_CONFIGMAP} ${JWKS_KEY} is up to date"
            exit 0
          fi
          esc="${jwks//\\/\\\\}"
          esc="${esc//\"/\\\"}"
          esc="${esc//$'\n'/\\n}"
          esc="${esc//$'\r'/\\r}"
          esc="${esc//$'\t'/\\t}"
          kubectl patch configmap "${JWKS_CONFIGMAP}" -n "${JWKS_NAMESPACE}" --type merge \
            -p "{\"data\":{\"${JWKS_KEY}\":\"${esc}\"}}"
          echo "jwks-sync: wrote ${JWKS_NAMESPACE}/${JWKS_CONFIGMAP} ${JWKS_KEY} (${#jwks} bytes)"
      env:
        - name: JWKS_CONFIGMAP
          value: {{ .configMap | quote }}
        - name: JWKS_KEY
          value: jwks.json
        - name: JWKS_NAMESPACE
          value: {{ .root.Release.Namespace | quote }}
        # kubectl's discovery cache goes under $HOME; the root file system is read-only.
        - name: HOME
          value: /tmp
      securityContext:
        allowPrivilegeEscalation: false
        readOnlyRootFilesystem: true
        capabilities:
          drop: ["ALL"]
      {{- with $sync.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
  volumes:
    - name: tmp
      emptyDir:
        sizeLimit: 16Mi
{{- end -}}
