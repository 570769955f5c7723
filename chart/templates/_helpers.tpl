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
