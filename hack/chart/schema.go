package chart

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/longhorn-go/longhorn/types"
)

// Schema returns chart/values.schema.json (JSON Schema draft-07, which Helm
// checks on install, upgrade, lint and template): every top-level key of
// Longhorn's chart values and of this chart, unknown keys refused at the top
// level and in the sections this chart reads, and defaultSettings typed from
// the setting definitions (type, options, range, per-data-engine maps), so
// a mistyped key or a bad value fails at `helm install` with its path.
func Schema() []byte {
	root := object(map[string]any{
		"global":                    globalSchema(),
		"image":                     imageSchema(),
		"service":                   serviceSchema(),
		"persistence":               persistenceSchema(),
		"csi":                       csiSchema(),
		"defaultSettings":           DefaultSettingsSchema(),
		"defaultBackupStore":        defaultBackupStoreSchema(),
		"privateRegistry":           privateRegistrySchema(),
		"longhornManager":           managerSchema(),
		"longhornDriver":            ignoredComponent("the CSI driver deployer (CSI is deployed by the manager)"),
		"longhornUI":                uiSchema(),
		"longhornConversionWebhook": ignoredComponent("the conversion webhook Deployment (it runs in the manager, port 9501)"),
		"longhornAdmissionWebhook":  ignoredComponent("the admission webhook Deployment (it runs in the manager, port 9502)"),
		"longhornRecoveryBackend":   ignoredComponent("the recovery backend Deployment (it runs in the manager, port 9503)"),
		"ingress":                   toggled("an Ingress for the UI"),
		"httproute":                 toggled("an HTTPRoute for the UI"),
		"networkPolicies":           toggled("network policies"),
		"openshift":                 toggled("OpenShift routes and the OAuth proxy"),
		"metrics":                   anyObject("Longhorn's metrics.serviceMonitor: enabled renders a Prometheus Operator ServiceMonitor of the managers' /metrics (port manager, 9500)"),
		"preUpgradeChecker": nullable(object(map[string]any{
			"jobEnabled":          jsType("boolean", "render the pre-upgrade hook Job longhorn-pre-upgrade (`longhorn pre-upgrade`: refuses a downgrade or a skipped version); disable for GitOps tools without hooks"),
			"upgradeVersionCheck": jsType("boolean", "the managers refuse to start on an upgrade path Longhorn refuses (--upgrade-version-check); false also disables the pre-upgrade Job"),
		})),
		"enablePSP":         jsType("boolean", "PodSecurityPolicy (removed in Kubernetes 1.25): only false is supported"),
		"enableGoCoverDir":  jsType("boolean", "Longhorn's coverage build switch; accepted, no effect"),
		"extraObjects":      map[string]any{"type": "array", "description": "extra manifests rendered with the release (strings are templated)"},
		"namespaceOverride": jsType("string", "install into this namespace instead of the release's"),
		"annotations":       stringMap("annotations of the manager pods"),
		"serviceAccount":    object(map[string]any{"annotations": stringMap("annotations of the service account")}),
	})
	root["$schema"] = "http://json-schema.org/draft-07/schema#"
	root["title"] = "Values of the longhorn chart"
	b, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		panic(err) // maps of plain values always marshal
	}
	return append(b, '\n')
}

// object is a strict object schema: only the listed properties.
func object(props map[string]any) map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false, "properties": props}
}

func jsType(t, desc string) map[string]any {
	m := map[string]any{"type": t}
	if desc != "" {
		m["description"] = desc
	}
	return m
}

func nullable(s map[string]any) map[string]any {
	return map[string]any{"anyOf": []any{map[string]any{"type": "null"}, s}}
}

func anyObject(desc string) map[string]any {
	return map[string]any{"type": []any{"object", "null"}, "description": desc}
}

func stringMap(desc string) map[string]any {
	return map[string]any{"type": []any{"object", "null"}, "description": desc,
		"additionalProperties": map[string]any{"type": []any{"string", "number", "boolean"}}}
}

func enum(desc string, vals ...string) map[string]any {
	return map[string]any{"type": "string", "enum": vals, "description": desc}
}

// toggled is a Longhorn feature section whose enabled must stay false here.
func toggled(what string) map[string]any {
	return map[string]any{"type": []any{"object", "null"},
		"description": fmt.Sprintf("Longhorn's %s: not supported yet, enabled must be false (checked by the templates)", what),
		"properties":  map[string]any{"enabled": jsType("boolean", "")}}
}

// ignoredComponent is a Longhorn component that is part of the manager here.
func ignoredComponent(what string) map[string]any {
	return anyObject("Longhorn's values for " + what + "; accepted and not used")
}

func imageRef() map[string]any {
	return object(map[string]any{"repository": jsType("string", ""), "tag": jsType("string", "")})
}

func globalSchema() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{
		"imageRegistry":    jsType("string", "registry prefixed to the image (Longhorn's global.imageRegistry)"),
		"imagePullSecrets": map[string]any{"type": "array", "description": "pull secrets of the manager pods"},
		"tolerations":      map[string]any{"type": "array", "description": "tolerations added to the manager pods"},
		"nodeSelector":     stringMap("node selector added to the manager pods"),
		"timezone":         jsType("string", "TZ of the manager container"),
		"cattle": map[string]any{"type": "object", "properties": map[string]any{
			"systemDefaultRegistry": jsType("string", "registry prefixed to the image (Rancher)"),
			"windowsCluster": map[string]any{"type": "object", "properties": map[string]any{
				"enabled": jsType("boolean", "Rancher Windows clusters: not supported yet, must be false (checked by the templates)")}},
		}},
	}}
}

func imageSchema() map[string]any {
	comps := map[string]any{"repository": jsType("string", "the one image every component runs"), "tag": jsType("string", "empty: the chart's appVersion")}
	for _, c := range []string{"engine", "manager", "ui", "instanceManager", "shareManager", "backingImageManager", "supportBundleKit"} {
		comps[c] = imageRef()
	}
	lh := object(comps)
	lh["description"] = "repository and tag of the one image; Longhorn's per-component images (engine, manager, ...) are accepted and not used"
	return object(map[string]any{
		"longhorn":   lh,
		"csi":        anyObject("Longhorn's CSI sidecar images; accepted and not used"),
		"openshift":  anyObject("Longhorn's OpenShift images; accepted and not used"),
		"pullPolicy": enum("pull policy of the manager pods", "IfNotPresent", "Always", "Never"),
	})
}

func serviceSchema() map[string]any {
	mgr := object(map[string]any{
		"type":                     enum("type of Service longhorn-backend", "ClusterIP", "NodePort", "LoadBalancer"),
		"nodePort":                 map[string]any{"type": []any{"string", "integer", "null"}},
		"loadBalancerIP":           jsType("string", ""),
		"loadBalancerSourceRanges": map[string]any{"type": []any{"string", "array"}},
		"loadBalancerClass":        jsType("string", ""),
		"annotations":              stringMap(""),
		"labels":                   stringMap(""),
	})
	ui := object(map[string]any{
		"type":                     enum("type of Service longhorn-frontend (the web UI, port 80)", "ClusterIP", "NodePort", "LoadBalancer"),
		"nodePort":                 map[string]any{"type": []any{"string", "integer", "null"}},
		"loadBalancerIP":           jsType("string", ""),
		"loadBalancerSourceRanges": map[string]any{"type": []any{"string", "array"}},
		"loadBalancerClass":        jsType("string", ""),
		"annotations":              stringMap(""),
		"labels":                   stringMap(""),
	})
	return object(map[string]any{"manager": mgr, "ui": ui})
}

// uiSchema is longhornUI: the longhorn-ui Deployment (`longhorn ui`).
func uiSchema() map[string]any {
	return object(map[string]any{
		"replicas":      map[string]any{"type": "integer", "minimum": 0, "description": "replicas of Deployment longhorn-ui"},
		"priorityClass": map[string]any{"type": []any{"string", "null"}},
		"tolerations":   map[string]any{"type": []any{"array", "null"}},
		"nodeSelector":  stringMap(""),
		"resources":     map[string]any{"type": []any{"object", "null"}},
		"affinity":      map[string]any{"type": []any{"object", "null"}, "description": "affinity of the longhorn-ui pods (default: spread over nodes)"},
	})
}

func persistenceSchema() map[string]any {
	sel := object(map[string]any{"enable": jsType("boolean", ""), "selector": jsType("string", "")})
	return object(map[string]any{
		"defaultClass":              jsType("boolean", ""),
		"defaultFsType":             enum("", "ext4", "xfs"),
		"defaultMkfsParams":         jsType("string", ""),
		"defaultClassReplicaCount":  map[string]any{"type": "integer", "minimum": 1, "maximum": 20},
		"defaultDataLocality":       enum("", "disabled", "best-effort", "strict-local"),
		"reclaimPolicy":             enum("", "Delete", "Retain"),
		"volumeBindingMode":         enum("", "Immediate", "WaitForFirstConsumer"),
		"migratable":                jsType("boolean", ""),
		"disableRevisionCounter":    map[string]any{"type": []any{"string", "boolean"}, "enum": []any{"true", "false", true, false}},
		"nfsOptions":                jsType("string", ""),
		"dataEngine":                enum("", "v1", "v2"),
		"backupTargetName":          jsType("string", ""),
		"unmapMarkSnapChainRemoved": enum("", "ignored", "enabled", "disabled"),
		"recurringJobSelector": object(map[string]any{"enable": jsType("boolean", ""),
			"jobList": map[string]any{"type": []any{"array", "string"}}}),
		"backingImage": object(map[string]any{"enable": jsType("boolean", ""), "name": nullable(jsType("string", "")),
			"dataSourceType": nullable(jsType("string", "")), "dataSourceParameters": nullable(jsType("string", "")),
			"expectedChecksum": nullable(jsType("string", ""))}),
		"defaultDiskSelector": sel,
		"defaultNodeSelector": sel,
	})
}

func csiSchema() map[string]any {
	props := map[string]any{}
	for _, k := range []string{"kubeletRootDir", "podAntiAffinityPreset"} {
		props[k] = nullable(jsType("string", ""))
	}
	for _, k := range []string{"attacherReplicaCount", "provisionerReplicaCount", "resizerReplicaCount", "snapshotterReplicaCount"} {
		props[k] = nullable(map[string]any{"type": "integer", "minimum": 1})
	}
	s := object(props)
	s["description"] = "Longhorn's CSI deployment values (chart/templates/csi-*.yaml); ~ takes the default (kubelet at /var/lib/kubelet, 3 replicas per sidecar, soft anti-affinity)"
	return s
}

func defaultBackupStoreSchema() map[string]any {
	return object(map[string]any{
		"backupTarget":                 nullable(map[string]any{"type": "string", "pattern": `^(|s3://.+|nfs://.+|cifs://.+|azblob://.+)$`}),
		"backupTargetCredentialSecret": nullable(jsType("string", "")),
		"pollInterval":                 nullable(map[string]any{"type": []any{"integer", "string"}, "minimum": 0}),
	})
}

func privateRegistrySchema() map[string]any {
	return object(map[string]any{
		"createSecret":   nullable(jsType("boolean", "create the pull secret registrySecret from registryUrl/User/Passwd")),
		"registryUrl":    nullable(jsType("string", "")),
		"registryUser":   nullable(jsType("string", "")),
		"registryPasswd": nullable(jsType("string", "")),
		"registrySecret": nullable(jsType("string", "image pull secret of the manager and the pods it creates (setting registry-secret)")),
	})
}

func managerSchema() map[string]any {
	return object(map[string]any{
		"log":                object(map[string]any{"format": enum("log format of the manager: plain (text) or json", "plain", "json", "text")}),
		"priorityClass":      nullable(jsType("string", "priority class of the manager pods")),
		"tolerations":        map[string]any{"type": []any{"array", "null"}},
		"nodeSelector":       stringMap(""),
		"resources":          anyObject(""),
		"serviceAnnotations": stringMap("annotations of Service longhorn-backend"),
		"serviceLabels":      stringMap("labels of Service longhorn-backend"),
		"updateStrategy":     anyObject("updateStrategy of the manager DaemonSet"),
	})
}

var numericString = `^\s*-?[0-9]+\s*$`

// DefaultSettingsSchema types every defaultSettings key (and alias) from its
// setting definition; unknown keys are refused.
func DefaultSettingsSchema() map[string]any {
	props := map[string]any{}
	for _, k := range SettingKeys() {
		d, _ := types.GetSettingDefinition(k.Name)
		s := settingSchema(d)
		s["description"] = fmt.Sprintf("setting %s: %s", d.Name, d.Description)
		props[k.Key] = s
		for _, a := range k.Aliases {
			as := settingSchema(d)
			as["description"] = fmt.Sprintf("setting %s (the earlier spelling of %s)", d.Name, k.Key)
			props[a] = as
		}
	}
	s := object(props)
	s["description"] = "initial values of Longhorn settings (ConfigMap longhorn-default-setting); ~ keeps the default"
	return s
}

// settingSchema: null, the scalar form, and for per-data-engine settings a
// map of the engines the setting covers or a JSON object string.
func settingSchema(d types.SettingDefinition) map[string]any {
	forms := []any{map[string]any{"type": "null"}}
	forms = append(forms, scalarForms(d)...)
	if d.DataEngineSpecific {
		engines := map[string]any{}
		for _, e := range regexp.MustCompile(`"(v[0-9]+)"\s*:`).FindAllStringSubmatch(d.Default, -1) {
			engines[e[1]] = map[string]any{"anyOf": scalarForms(d)}
		}
		forms = append(forms,
			map[string]any{"type": "object", "additionalProperties": false, "properties": engines},
			map[string]any{"type": "string", "pattern": `^\s*\{.*\}\s*$`})
	}
	return map[string]any{"anyOf": forms}
}

// scalarForms: the typed value and its string spelling.
func scalarForms(d types.SettingDefinition) []any {
	switch d.Type {
	case types.SettingTypeBool:
		return []any{map[string]any{"type": "boolean"}, map[string]any{"type": "string", "enum": []any{"true", "false"}}}
	case types.SettingTypeInt:
		n := map[string]any{"type": "integer"}
		if r := d.Range; r != nil {
			if r.Minimum != nil {
				n["minimum"] = *r.Minimum
			}
			if r.Maximum != nil {
				n["maximum"] = *r.Maximum
			}
		}
		if len(d.Options) > 0 {
			var ints []any
			for _, o := range d.Options {
				if i, err := strconv.Atoi(o); err == nil {
					ints = append(ints, i)
				}
			}
			n["enum"] = ints
			return []any{n, map[string]any{"type": "string", "enum": toAny(d.Options)}}
		}
		return []any{n, map[string]any{"type": "string", "pattern": numericString}}
	case types.SettingTypeFloat:
		n := map[string]any{"type": "number"}
		if r := d.FloatRange; r != nil {
			n["minimum"], n["maximum"] = r.Minimum, r.Maximum
		}
		return []any{n, map[string]any{"type": "string", "pattern": `^\s*-?[0-9]+(\.[0-9]+)?\s*$`}}
	}
	if len(d.Options) > 0 {
		return []any{map[string]any{"type": "string", "enum": toAny(d.Options)}}
	}
	return []any{map[string]any{"type": "string"}}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = strings.TrimSpace(s)
	}
	return out
}
