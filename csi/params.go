package csi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/longhorn-go/longhorn/types"
)

// Volume context keys the node side reads (the StorageClass parameters are
// passed through as the volume context, as Longhorn does).
const (
	paramFsType     = "fsType"
	paramMkfsParams = "mkfsParams"
)

// volumeOptions is what CreateVolume makes of the StorageClass parameters.
type volumeOptions struct {
	create     VolumeCreate
	fsType     string
	mkfsParams string
}

// paramRule applies one parameter's value, or refuses it with an error
// that names the parameter and what it may be.
type paramRule func(o *volumeOptions, v string) error

// notYet refuses a parameter whose feature this product lacks, unless its
// value is one of the no-op values allowed.
func notYet(feature string, allowed ...string) paramRule {
	return func(_ *volumeOptions, v string) error {
		for _, a := range append(allowed, "") {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("%s is not supported yet", feature)
	}
}

func oneOf(set func(o *volumeOptions, v string), values ...string) paramRule {
	return func(o *volumeOptions, v string) error {
		for _, a := range values {
			if v == a {
				set(o, v)
				return nil
			}
		}
		if v == "" {
			return nil
		}
		return fmt.Errorf("want one of %s", strings.Join(values, ", "))
	}
}

func boolParam(set func(o *volumeOptions, b bool)) paramRule {
	return func(o *volumeOptions, v string) error {
		if v == "" {
			return nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		set(o, b)
		return nil
	}
}

func intParam(lo, hi int, set func(o *volumeOptions, n int)) paramRule {
	return func(o *volumeOptions, v string) error {
		if v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("want an integer in %d..%d", lo, hi)
		}
		set(o, n)
		return nil
	}
}

// tags splits Longhorn's comma-separated tag lists ("ssd,fast").
func tags(v string) []string {
	var out []string
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func refuseTrue(feature string) paramRule {
	return func(_ *volumeOptions, v string) error {
		if b, err := strconv.ParseBool(v); v != "" && (err != nil || b) {
			return fmt.Errorf("%s is not supported yet", feature)
		}
		return nil
	}
}

// paramRules are the StorageClass parameters Longhorn's CSI driver parses
// (LM csi/util.go getVolumeOptions and controller_server.go), each applied
// or refused. The "ignored" values of the per-volume overrides mean "use
// the setting", which changes nothing.
var paramRules = map[string]paramRule{
	"numberOfReplicas":    intParam(1, 20, func(o *volumeOptions, n int) { o.create.NumberOfReplicas = n }),
	"staleReplicaTimeout": intParam(0, 1<<30, func(o *volumeOptions, n int) { o.create.StaleReplicaTimeout = n }),
	// fromBackup: the volume is restored from the backup URL
	// (<target>?backup=<name>&volume=<volume>); the manager's webhook
	// checks it and names spec.fromBackup when it refuses one.
	"fromBackup":       func(o *volumeOptions, v string) error { o.create.FromBackup = strings.TrimSpace(v); return nil },
	"backupTargetName": func(o *volumeOptions, v string) error { o.create.BackupTargetName = v; return nil },
	"backupBlockSize":  notYet("backups (backupBlockSize)"),
	// dataSource: the volume is cloned from vol://<volume> or
	// snap://<volume>/<snapshot>; the webhook checks it.
	"dataSource": func(o *volumeOptions, v string) error { o.create.DataSource = v; return nil },
	"cloneMode":  notYet("linked clones (cloneMode=linked-clone, v2 data engine)", "full-copy"),
	"share":      refuseTrue("RWX volumes (share=true) need the share manager, which"),
	"exclusive": boolParam(func(o *volumeOptions, b bool) {
		if b {
			o.create.AccessMode = "rwop"
		}
	}),
	"migratable":             refuseTrue("live migration (migratable=true)"),
	"encrypted":              refuseTrue("encryption (encrypted=true)"),
	"dataLocality":           oneOf(func(o *volumeOptions, v string) { o.create.DataLocality = v }, "disabled", "best-effort", "strict-local"),
	"disableRevisionCounter": boolParam(func(o *volumeOptions, b bool) { o.create.RevisionCounterDisabled = b }),
	"unmapMarkSnapChainRemoved": oneOf(func(o *volumeOptions, v string) { o.create.UnmapMarkSnapChainRemoved = v },
		"ignored", "enabled", "disabled"),
	"replicaAutoBalance": oneOf(func(o *volumeOptions, v string) { o.create.ReplicaAutoBalance = v },
		"ignored", "disabled", "least-effort", "best-effort"),
	"replicaSoftAntiAffinity":          notYet("a per-volume replicaSoftAntiAffinity (the setting applies)", "ignored"),
	"replicaZoneSoftAntiAffinity":      notYet("a per-volume replicaZoneSoftAntiAffinity (the setting applies)", "ignored"),
	"replicaDiskSoftAntiAffinity":      notYet("a per-volume replicaDiskSoftAntiAffinity (the setting applies)", "ignored"),
	"diskSelector":                     func(o *volumeOptions, v string) error { o.create.DiskSelector = tags(v); return nil },
	"nodeSelector":                     func(o *volumeOptions, v string) error { o.create.NodeSelector = tags(v); return nil },
	"recurringJobSelector":             notYet("recurring jobs (recurringJobSelector)", "[]"),
	"backingImage":                     notYet("backing images (backingImage)"),
	"backingImageDataSourceType":       notYet("backing images (backingImageDataSourceType)"),
	"backingImageDataSourceParameters": notYet("backing images (backingImageDataSourceParameters)"),
	"backingImageChecksum":             notYet("backing images (backingImageChecksum)"),
	"dataEngine":                       oneOf(func(o *volumeOptions, v string) { o.create.DataEngine = v }, "v1"),
	"frontend":                         oneOf(func(o *volumeOptions, v string) { o.create.Frontend = v }, "blockdev"),
	"freezeFilesystemForSnapshot":      notYet("freezing the file system for snapshots", "ignored", "disabled"),
	"ublkNumberOfQueue":                notYet("the v2 data engine (ublkNumberOfQueue)"),
	"ublkQueueDepth":                   notYet("the v2 data engine (ublkQueueDepth)"),
	"nvmeTcpNrIoQueues":                notYet("the v2 data engine (nvmeTcpNrIoQueues)"),
	"dataLayout.type":                  oneOf(func(*volumeOptions, string) {}, "replicated"),
	"dataLayout.mode":                  notYet("erasure-coded layouts (dataLayout.mode)"),
	"dataLayout.dataChunks":            notYet("erasure-coded layouts (dataLayout.dataChunks)"),
	"dataLayout.parityChunks":          notYet("erasure-coded layouts (dataLayout.parityChunks)"),
	"dataLayout.stripSizeKB":           notYet("erasure-coded layouts (dataLayout.stripSizeKB)"),
	paramFsType:                        oneOf(func(o *volumeOptions, v string) { o.fsType = v }, "ext4", "xfs"),
	paramMkfsParams:                    func(o *volumeOptions, v string) error { o.mkfsParams = v; return nil },
	"nfsOptions":                       notYet("RWX volumes (nfsOptions)"),
	"shareManagerNodeSelector":         notYet("RWX volumes (shareManagerNodeSelector)"),
	"shareManagerTolerations":          notYet("RWX volumes (shareManagerTolerations)"),
	"strictTopology":                   refuseTrue("strictTopology=true"),
	"volumeTopology":                   notYet("volumeTopology"),
	"storageCapacityMode":              notYet("storageCapacityMode"),
	// Parameters of older Longhorn releases, no longer read by Longhorn.
	"recurringJobs": notYet("the legacy recurringJobs parameter (Longhorn replaced it by recurringJobSelector)", "[]"),
	"baseImage":     notYet("the legacy baseImage parameter (Longhorn replaced it by backingImage)"),
}

// metadataPrefix marks parameters the external-provisioner adds itself
// (--extra-create-metadata: csi.storage.k8s.io/pvc/name, ...).
const metadataPrefix = "csi.storage.k8s.io/"

// parseParameters turns StorageClass parameters into volume options. The
// error names the first refused parameter (sorted by name, so the message
// is stable) and why; nothing is created then.
func parseParameters(params map[string]string) (volumeOptions, error) {
	o := volumeOptions{}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, metadataPrefix) {
			continue
		}
		rule, ok := paramRules[k]
		if !ok {
			return o, fmt.Errorf("StorageClass parameter %q is not a Longhorn parameter", k)
		}
		if err := rule(&o, strings.TrimSpace(params[k])); err != nil {
			return o, fmt.Errorf("StorageClass parameter %s=%q: %w", k, params[k], err)
		}
	}
	return o, nil
}

// maxVolumeName is Longhorn's volume name limit (datastore.NameMaximumLength).
const maxVolumeName = 40

// volumeName turns a CSI volume name (a PV name, pvc-<uuid>, or any string
// a CO picks) into a Longhorn volume name as Longhorn's driver does: lower
// case, characters other than [a-z0-9.-] replaced by '-', and a name over
// 40 characters cut to its first 31 plus '-' and 8 hex digits of its
// SHA-256, so distinct long names stay distinct.
func volumeName(name string) string {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '.' {
			b[i] = '-'
		}
	}
	out := strings.Trim(string(b), "-.")
	if len(out) > maxVolumeName || len(out) == 0 {
		sum := sha256.Sum256([]byte(name))
		suffix := "-" + hex.EncodeToString(sum[:4])
		out = strings.TrimRight(out[:min(len(out), maxVolumeName-len(suffix))], "-.") + suffix
	}
	return out
}

// The per-volume resource limits (not in Longhorn; see
// types.ResourceLimitParameters): checked here, sent as the REST
// resourceLimits, stored as the Volume's longhorn.io/... annotations.
func init() {
	for p, a := range types.ResourceLimitParameters {
		paramRules[p] = resourceLimitParam(p, a)
	}
}

func resourceLimitParam(param, annotation string) paramRule {
	return func(o *volumeOptions, v string) error {
		if v = strings.TrimSpace(v); v == "" {
			return nil
		}
		if _, err := types.ParseResourceLimits(map[string]string{annotation: v}); err != nil {
			return err
		}
		if o.create.ResourceLimits == nil {
			o.create.ResourceLimits = map[string]string{}
		}
		o.create.ResourceLimits[param] = v
		return nil
	}
}
