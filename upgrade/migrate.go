package upgrade

import (
	"fmt"

	"golang.org/x/mod/semver"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Objects are the stored objects the migration steps read and change, as
// `longhorn post-upgrade` loads them from one namespace (Load) or a test
// builds them as fixtures. Settings are keyed by name.
type Objects struct {
	Settings      map[string]*longhorn.Setting
	Volumes       []*longhorn.Volume
	Backups       []*longhorn.Backup
	BackupVolumes []*longhorn.BackupVolume
	Nodes         []*longhorn.Node
}

// DeepCopy returns a copy sharing nothing with o.
func (o *Objects) DeepCopy() *Objects {
	out := &Objects{Settings: make(map[string]*longhorn.Setting, len(o.Settings))}
	for k, s := range o.Settings {
		out.Settings[k] = s.DeepCopy()
	}
	for _, v := range o.Volumes {
		out.Volumes = append(out.Volumes, v.DeepCopy())
	}
	for _, b := range o.Backups {
		out.Backups = append(out.Backups, b.DeepCopy())
	}
	for _, bv := range o.BackupVolumes {
		out.BackupVolumes = append(out.BackupVolumes, bv.DeepCopy())
	}
	for _, n := range o.Nodes {
		out.Nodes = append(out.Nodes, n.DeepCopy())
	}
	return out
}

// Step is one version step of the stored objects: objects written by a
// version From (a "vX.Y.x" release line) get the shape version To expects.
// Apply changes objs in place and must be idempotent (applying it to its
// own output changes nothing: TestStepsAreIdempotent), so a run whose
// starting version is unknown can run every step.
type Step struct {
	From, To string
	// Changes lists what the step does, one line per migration, each as
	// Longhorn's upgrade/<from>to<to> package does it.
	Changes []string
	Apply   func(objs *Objects) error
}

// Key is the registry key of the step, "FROM->TO".
func (s Step) Key() string { return s.From + "->" + s.To }

// Steps is the registry of version steps, oldest first. The product stores
// Longhorn's objects (longhorn.io/v1beta2), so the steps are Longhorn's
// documented ones for the fields the product has, keyed by the Longhorn
// releases that introduced them; objects written by a product release that
// predates a step's To are migrated by it.
var Steps = []Step{
	{From: "v1.7.x", To: "v1.8.0", Apply: migrateV17xToV180, Changes: []string{
		"Volume spec.backupTargetName empty -> \"default\" (multiple backup targets; before v1.8.0 every volume used the one target)",
		"BackupVolume spec.backupTargetName empty -> \"default\", spec.volumeName empty -> the object name, labels backup-target and backup-volume added",
		"Backup label backup-target=default added, status.backupTargetName empty -> \"default\"",
	}},
	{From: "v1.9.x", To: "v1.10.0", Apply: migrateV19xToV1100, Changes: []string{
		"Node condition RequiredPackages removed (the node controller adds it back when it checks packages)",
		"a data-engine-specific Setting's plain value -> the per-data-engine JSON object (\"3\" -> {\"v1\":\"3\",\"v2\":\"3\"})",
		"Volume and Backup spec.backupBlockSize 0 -> 2097152 (backups before v1.10.0 used 2 MiB blocks)",
	}},
}

// Plan is what Migrate runs for an upgrade: the selected steps and, when
// the starting version is unknown, why every step runs.
type Plan struct {
	Steps []Step
	// AllSteps says why every step is selected ("" when selected by version).
	AllSteps string
}

// PlanFor selects the steps for objects written by version from: every step
// whose To is newer than from. A from that is not a release version (empty:
// nothing recorded; a development build such as "7f3c421-dirty") selects
// every step, which is safe because each is idempotent.
func PlanFor(from string) Plan {
	if !semver.IsValid(from) {
		why := fmt.Sprintf("version %q is not a release version: every step runs (each is idempotent)", from)
		if from == "" {
			why = "no previous version recorded: every step runs (each is idempotent)"
		}
		return Plan{Steps: append([]Step(nil), Steps...), AllSteps: why}
	}
	var p Plan
	for _, s := range Steps {
		if semver.Compare(from, s.To) < 0 {
			p.Steps = append(p.Steps, s)
		}
	}
	return p
}

// Migrate applies the plan's steps in order to objs, in place.
func (p Plan) Migrate(objs *Objects) error {
	for _, s := range p.Steps {
		if err := s.Apply(objs); err != nil {
			return fmt.Errorf("upgrade step %s: %w", s.Key(), err)
		}
	}
	return nil
}

// Keys lists the plan's step keys.
func (p Plan) Keys() []string {
	out := make([]string, 0, len(p.Steps))
	for _, s := range p.Steps {
		out = append(out, s.Key())
	}
	return out
}
