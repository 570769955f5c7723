{{/*
Namespace everything is installed in: namespaceOverride, else the release's.
*/}}
{{- define "release_namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{/*
Labels on every object of the chart.
*/}}
{{- define "longhorn.labels" -}}
app.kubernetes.io/name: longhorn
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ include "longhorn.tag" . }}
{{- end -}}

{{/*
Image tag: image.longhorn.tag, else the chart's appVersion.
*/}}
{{- define "longhorn.tag" -}}
{{- default .Chart.AppVersion .Values.image.longhorn.tag -}}
{{- end -}}

{{/*
The one image every Longhorn component runs: [registry/]repository:tag,
registry from global.imageRegistry, else global.cattle.systemDefaultRegistry
(Longhorn's two spellings).
*/}}
{{- define "longhorn.image" -}}
{{- $g := .Values.global | default dict -}}
{{- $reg := $g.imageRegistry | default (dig "cattle" "systemDefaultRegistry" "" $g) -}}
{{- $ref := printf "%s:%s" .Values.image.longhorn.repository (include "longhorn.tag" .) -}}
{{- if $reg }}{{ printf "%s/%s" (trimSuffix "/" $reg) $ref }}{{ else }}{{ $ref }}{{ end -}}
{{- end -}}

{{/*
A setting value as the manager's ConfigMap parser wants it: scalars as their
string form (whole numbers without an exponent), maps (per data engine, e.g.
{v1: 3, v2: 3}) as a JSON object of strings.
*/}}
{{- define "longhorn.settingValue" -}}
{{- if kindIs "map" . -}}
{{- $m := dict -}}
{{- range $k, $v := . -}}
{{- $_ := set $m $k (include "longhorn.settingScalar" $v) -}}
{{- end -}}
{{- toJson $m -}}
{{- else -}}
{{- include "longhorn.settingScalar" . -}}
{{- end -}}
{{- end -}}

{{- define "longhorn.settingScalar" -}}
{{- if and (kindIs "float64" .) (eq . (floor .)) -}}
{{- int64 . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{/*
A hook Job running one `longhorn` subcommand with the manager's service
account, image, pull secrets, tolerations and node selector (Longhorn's
longhorn-pre-upgrade / longhorn-post-upgrade / longhorn-uninstall Jobs).
Called with (dict "root" $ "name" NAME "hook" HOOK "deletePolicy" POLICY "args" LIST
["serviceAccount" SA]); the service account defaults to the manager's.
*/}}
{{- define "longhorn.hookJob" -}}
{{- $root := .root -}}
{{- $m := $root.Values.longhornManager -}}
{{- $g := $root.Values.global | default dict -}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .name }}
  namespace: {{ include "release_namespace" $root }}
  labels: {{- include "longhorn.labels" $root | nindent 4 }}
  annotations:
    helm.sh/hook: {{ .hook }}
    helm.sh/hook-delete-policy: {{ .deletePolicy }}
spec:
  activeDeadlineSeconds: 900
  backoffLimit: 1
  template:
    metadata:
      name: {{ .name }}
      labels: {{- include "longhorn.labels" $root | nindent 8 }}
    spec:
      serviceAccountName: {{ .serviceAccount | default "longhorn-service-account" }}
      restartPolicy: Never
      {{- with $m.priorityClass }}
      priorityClassName: {{ . | quote }}
      {{- end }}
      {{- $secrets := $g.imagePullSecrets | default list }}
      {{- with $root.Values.privateRegistry.registrySecret }}
      {{- $secrets = append $secrets (dict "name" .) }}
      {{- end }}
      {{- with $secrets }}
      imagePullSecrets: {{- toYaml . | nindent 6 }}
      {{- end }}
      {{- with concat ($m.tolerations | default list) ($g.tolerations | default list) }}
      tolerations: {{- toYaml . | nindent 6 }}
      {{- end }}
      {{- with merge (dict) ($m.nodeSelector | default dict) ($g.nodeSelector | default dict) }}
      nodeSelector: {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
      - name: {{ .name }}
        image: {{ include "longhorn.image" $root | quote }}
        imagePullPolicy: {{ $root.Values.image.pullPolicy }}
        command: {{- toYaml (concat (list "longhorn") .args) | nindent 8 }}
        env:
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        {{- with $g.timezone }}
        - name: TZ
          value: {{ . | quote }}
        {{- end }}
{{- end -}}
