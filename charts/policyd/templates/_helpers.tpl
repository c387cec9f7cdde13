{{/* Labels every object carries; `component` names the piece. */}}
{{- define "policyd.labels" -}}
app.kubernetes.io/name: {{ .component }}
app.kubernetes.io/part-of: policyd
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{/* What selects a piece's pods: stable across upgrades (a Deployment's selector cannot change). */}}
{{- define "policyd.selector" -}}
app.kubernetes.io/name: {{ . }}
app.kubernetes.io/part-of: policyd
{{- end -}}

{{/* The one image of every container: by digest when given, else by tag (the appVersion by default). */}}
{{- define "policyd.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* Pod Security `restricted` for every pod and container; the root filesystem is read-only, so
     what a process writes goes to the emptyDir at /tmp (the parse cache through XDG_CACHE_HOME). */}}
{{- define "policyd.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "policyd.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "policyd.env" -}}
- name: XDG_CACHE_HOME
  value: /tmp/cache
- name: PYTHONDONTWRITEBYTECODE
  value: "1"
{{- end -}}

{{/* Scheduling of a piece's pods: .values is its section, .component its name. */}}
{{- define "policyd.scheduling" -}}
{{- with .values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
affinity:
{{- if .values.affinity }}
  {{- toYaml .values.affinity | nindent 2 }}
{{- else }}
  podAntiAffinity:  # one node down leaves the other replicas serving
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- include "policyd.selector" .component | nindent 14 }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The address policyd's clients dial: every ready replica by the headless Service's name. */}}
{{- define "policyd.address" -}}
dns:///policyd-headless.{{ .Release.Namespace }}.svc:{{ .Values.policyd.port }}
{{- end -}}

{{/* The chart's CA (without cert-manager), as {"crt", "key"} base64: the one kept in the Secret
     policyd-ca when there is one, else generated; made once a render and kept in .Values so the
     Secrets and the webhook configurations' caBundle, in other templates, have the same. */}}
{{- define "policyd.ca" -}}
{{- if not (hasKey .Values "_generatedCA") -}}
{{- $kept := lookup "v1" "Secret" .Release.Namespace "policyd-ca" -}}
{{- if and $kept $kept.data -}}
{{- $_ := set .Values "_generatedCA" (dict "crt" (index $kept.data "tls.crt") "key" (index $kept.data "tls.key")) -}}
{{- else -}}
{{- $ca := genCA "policyd-ca" (int .Values.tls.validityDays) -}}
{{- $_ := set .Values "_generatedCA" (dict "crt" ($ca.Cert | b64enc) "key" ($ca.Key | b64enc)) -}}
{{- end -}}
{{- end -}}
{{- .Values._generatedCA | toJson -}}
{{- end -}}
