{{/*
The environment each cloud's SDK reads. Secrets the values carry go to the chart's Secret
(secret.yaml); identities that need none (IRSA, Workload Identity, Azure workload
identity) come from rbac.serviceAccount.annotations.
*/}}
{{- define "storage-autoscaler.secretEnv" -}}
{{- $root := index . 0 -}}{{- $name := index . 1 -}}{{- $key := index . 2 -}}
- name: {{ $name }}
  valueFrom:
    secretKeyRef:
      name: {{ include "storage-autoscaler.secretName" $root }}
      key: {{ $key }}
{{- end -}}

{{- define "storage-autoscaler.cloudEnv" -}}
{{- if eq .Values.cloudProvider "aws" }}
{{- with tpl .Values.awsRegion . }}
- name: AWS_REGION
  value: {{ . | quote }}
{{- end }}
{{- if .Values.awsAccessKeyID }}
{{ include "storage-autoscaler.secretEnv" (list . "AWS_ACCESS_KEY_ID" "AwsAccessKeyId") }}
{{ include "storage-autoscaler.secretEnv" (list . "AWS_SECRET_ACCESS_KEY" "AwsSecretAccessKey") }}
{{- end }}
{{- else if eq .Values.cloudProvider "gce" }}
{{- with .Values.gceProjectID }}
- name: GCE_PROJECT
  value: {{ . | quote }}
{{- end }}
{{- with .Values.gceZones }}
- name: GCE_ZONES
  value: {{ join "," . | quote }}
{{- end }}
{{- else if eq .Values.cloudProvider "azure" }}
{{- if ne .Values.azureVMType "vmss" }}
{{- fail (printf "azureVMType: %q is not supported (only vmss)" .Values.azureVMType) }}
{{- end }}
{{ include "storage-autoscaler.secretEnv" (list . "ARM_SUBSCRIPTION_ID" "SubscriptionID") }}
{{ include "storage-autoscaler.secretEnv" (list . "ARM_RESOURCE_GROUP" "ResourceGroup") }}
{{- if .Values.azureUseWorkloadIdentityExtension }}
{{- else if .Values.azureUseManagedIdentityExtension }}
{{- if .Values.azureUserAssignedIdentityID }}
{{ include "storage-autoscaler.secretEnv" (list . "AZURE_CLIENT_ID" "UserAssignedIdentityID") }}
{{- end }}
{{- else if .Values.azureClientSecret }}
{{ include "storage-autoscaler.secretEnv" (list . "AZURE_TENANT_ID" "TenantID") }}
{{ include "storage-autoscaler.secretEnv" (list . "AZURE_CLIENT_ID" "ClientID") }}
{{ include "storage-autoscaler.secretEnv" (list . "AZURE_CLIENT_SECRET" "ClientSecret") }}
{{- end }}
{{- end }}
{{- end -}}
