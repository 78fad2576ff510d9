{{/*
Names. Like the official cluster-autoscaler chart: "<release>-<cloudProvider>-<chart>"
unless the release name already is that name, or fullnameOverride is set.
*/}}
{{- define "storage-autoscaler.name" -}}
{{- default (printf "%s-%s" .Values.cloudProvider .Chart.Name) .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "storage-autoscaler.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "storage-autoscaler.name" . -}}
{{- if eq $name .Release.Name -}}
{{- $name -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "storage-autoscaler.selectorLabels" -}}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/name: {{ include "storage-autoscaler.name" . | quote }}
{{- end -}}

{{- define "storage-autoscaler.labels" -}}
{{ include "storage-autoscaler.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
app.kubernetes.io/part-of: storage-autoscaler
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | quote }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "storage-autoscaler.serviceAccountName" -}}
{{- if .Values.rbac.serviceAccount.create -}}
{{- default (include "storage-autoscaler.fullname" .) .Values.rbac.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.rbac.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding cloud credentials the values carry (static keys, Azure ids). */}}
{{- define "storage-autoscaler.secretName" -}}
{{- include "storage-autoscaler.fullname" . -}}
{{- end -}}

{{- define "storage-autoscaler.hasSecret" -}}
{{- if or (and (eq .Values.cloudProvider "aws") .Values.awsAccessKeyID) (eq .Values.cloudProvider "azure") -}}true{{- end -}}
{{- end -}}

{{/*
A flag's value from extraArgs, or a default: extraArgs keys may carry a "_suffix".
Usage: include "storage-autoscaler.arg" (list . "flag-name" "default")
*/}}
{{- define "storage-autoscaler.arg" -}}
{{- $root := index . 0 -}}{{- $flag := index . 1 -}}{{- $value := index . 2 -}}
{{- range $key, $v := $root.Values.extraArgs -}}
{{- if and (eq (regexFind "^[^_]+" $key) $flag) (not (kindIs "invalid" $v)) -}}{{- $value = $v -}}{{- end -}}
{{- end -}}
{{- $value -}}
{{- end -}}

{{/* True when extraArgs turn dry-run on (a shadow next to a running CA). */}}
{{- define "storage-autoscaler.dryRun" -}}
{{- $value := include "storage-autoscaler.arg" (list . "dry-run" "false") -}}
{{- if has (lower (toString $value)) (list "true" "1" "t" "yes") -}}true{{- end -}}
{{- range $key, $v := .Values.extraArgs -}}
{{- if and (eq (regexFind "^[^_]+" $key) "dry-run") (kindIs "invalid" $v) -}}true{{- end -}}
{{- end -}}
{{- end -}}

{{/* The Lease and the status ConfigMap the autoscaler writes (its RBAC names them). */}}
{{- define "storage-autoscaler.leaseName" -}}
{{- $default := ternary "storage-autoscaler-shadow" "cluster-autoscaler" (eq (include "storage-autoscaler.dryRun" .) "true") -}}
{{- include "storage-autoscaler.arg" (list . "leader-elect-resource-name" $default) -}}
{{- end -}}

{{- define "storage-autoscaler.statusConfigMapName" -}}
{{- $default := ternary "storage-autoscaler-shadow-status" "cluster-autoscaler-status" (eq (include "storage-autoscaler.dryRun" .) "true") -}}
{{- include "storage-autoscaler.arg" (list . "status-config-map-name" $default) -}}
{{- end -}}

{{- define "storage-autoscaler.priorityExpander" -}}
{{- if has "priority" (splitList "," (toString (include "storage-autoscaler.arg" (list . "expander" "")))) -}}true{{- end -}}
{{- end -}}
