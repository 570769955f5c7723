package lifecycle

import (
	"strings"
	"testing"
	"time"
)

// TestCheckEngineUpgrade is the one decision the webhook, the REST
// engineUpgrade action and the automatic upgrade share: each refused state
// with Longhorn's wording where Longhorn refuses it.
func TestCheckEngineUpgrade(t *testing.T) {
	live := EngineUpgradeCheck{Volume: "v", OldImage: "a", CurrentImage: "a", NewImage: "b", State: VolumeAttached,
		Robustness: RobustnessHealthy, Frontend: "nbd", NewImageKnown: true}
	offline := live
	offline.State, offline.Robustness, offline.Frontend = VolumeDetached, RobustnessUnknown, "blockdev"
	with := func(c EngineUpgradeCheck, f func(*EngineUpgradeCheck)) EngineUpgradeCheck { f(&c); return c }
	cases := []struct {
		name string
		in   EngineUpgradeCheck
		want string // "" = allowed
	}{
		{"live nbd healthy", live, ""},
		{"offline blockdev", offline, ""},
		{"offline degraded", with(offline, func(c *EngineUpgradeCheck) { c.Robustness = RobustnessDegraded }), ""},
		{"same image", with(live, func(c *EngineUpgradeCheck) { c.NewImage = "a"; c.Rebuilding = true }), ""},
		{"rollback during an upgrade", with(live, func(c *EngineUpgradeCheck) { c.OldImage, c.NewImage, c.Rebuilding = "b", "a", true }), ""},
		{"third image during an upgrade", with(live, func(c *EngineUpgradeCheck) { c.OldImage, c.NewImage = "b", "c" }),
			"upgrading in process for volume v engine image from a to b, cannot upgrade to another engine image"},
		{"automatic limit, not the default", with(live, func(c *EngineUpgradeCheck) { c.AutoUpgradeLimit, c.DefaultImage = 1, "d" }),
			"Only allow to upgrade to the default engine image d"},
		{"automatic limit, the default", with(live, func(c *EngineUpgradeCheck) { c.AutoUpgradeLimit, c.DefaultImage = 1, "b" }), ""},
		{"unknown image", with(offline, func(c *EngineUpgradeCheck) { c.NewImageKnown = false }), "b is not an engine image"},
		{"not deployed", with(live, func(c *EngineUpgradeCheck) { c.NewImageMissingOn = []string{"n2"} }),
			"is not deployed on the replicas' nodes or the node that the volume is attached to (missing on n2)"},
		{"restoring", with(offline, func(c *EngineUpgradeCheck) { c.Restoring = true }), "restoring a backup"},
		{"expanding", with(live, func(c *EngineUpgradeCheck) { c.Expanding = true }), "it is expanding"},
		{"migrating", with(live, func(c *EngineUpgradeCheck) { c.Migrating = true }), "cannot upgrade during migration"},
		{"attaching", with(live, func(c *EngineUpgradeCheck) { c.State = VolumeAttaching }), "while it is attaching"},
		{"rebuilding", with(live, func(c *EngineUpgradeCheck) { c.Rebuilding = true }), "cannot do live upgrade for a unhealthy volume v: a replica is rebuilding"},
		{"degraded", with(live, func(c *EngineUpgradeCheck) { c.Robustness = RobustnessDegraded }), "cannot do live upgrade for a unhealthy volume v"},
		{"strict-local", with(live, func(c *EngineUpgradeCheck) { c.StrictLocal = true }), "attached strict-local volume v"},
		{"maintenance mode", with(live, func(c *EngineUpgradeCheck) { c.DisableFrontend = true }), "not supported yet for a volume attached without a frontend"},
		{"blockdev", with(live, func(c *EngineUpgradeCheck) { c.Frontend = "blockdev" }), "not supported yet for frontend blockdev (only nbd); detach the volume"},
		{"iscsi", with(live, func(c *EngineUpgradeCheck) { c.Frontend = "iscsi" }), "not supported yet for frontend iscsi"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckEngineUpgrade(tc.in)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestNextEngineUpgrade walks the transition table of NextEngineUpgrade.
func TestNextEngineUpgrade(t *testing.T) {
	up := EngineUpgradeObserved{Phase: UpgradeRunning, Want: true, NewIM: true, Timeout: time.Minute}
	with := func(o EngineUpgradeObserved, f func(*EngineUpgradeObserved)) EngineUpgradeObserved { f(&o); return o }
	cases := []struct {
		name   string
		in     EngineUpgradeObserved
		phase  EngineUpgradePhase
		action EngineUpgradeAction // "" = none
		msg    string
	}{
		{"idle, wanted: record first", EngineUpgradeObserved{Want: true}, UpgradeRunning, "", ""},
		{"idle, stale new process", EngineUpgradeObserved{NewProcess: InstanceRunning}, UpgradeIdle, ActionDeleteNewEngine, ""},
		{"idle, nothing", EngineUpgradeObserved{}, UpgradeIdle, "", ""},
		{"start the new engine", up, UpgradeRunning, ActionCreateNewEngine, ""},
		{"starting", with(up, func(o *EngineUpgradeObserved) { o.NewProcess = InstanceStarting }), UpgradeRunning, "", ""},
		{"starting too long", with(up, func(o *EngineUpgradeObserved) { o.NewProcess, o.Elapsed = InstanceStarting, 2*time.Minute }),
			UpgradeAborting, "", "did not take the volume over within 1m0s"},
		{"serving: switch", with(up, func(o *EngineUpgradeObserved) { o.NewProcess = InstanceRunning }), UpgradeIdle, ActionSwitch, ""},
		{"exited", with(up, func(o *EngineUpgradeObserved) { o.NewProcess, o.NewError = InstanceError, "hand-over refused" }),
			UpgradeAborting, "", "the new engine exited: hand-over refused"},
		{"no new instance manager", with(up, func(o *EngineUpgradeObserved) { o.NewIM = false }), UpgradeAborting, "", "no running instance manager"},
		{"rolled back meanwhile", with(up, func(o *EngineUpgradeObserved) { o.Want = false; o.NewProcess = InstanceRunning }), UpgradeCanceling, "", ""},
		{"aborting: remove the new engine", EngineUpgradeObserved{Phase: UpgradeAborting, NewProcess: InstanceError}, UpgradeAborting, ActionDeleteNewEngine, "m"},
		{"aborting: old engine not back yet", EngineUpgradeObserved{Phase: UpgradeAborting}, UpgradeAborting, "", "m"},
		{"aborting: old engine not back, within grace", EngineUpgradeObserved{Phase: UpgradeAborting, Waited: 20 * time.Second,
			OldGrace: 30 * time.Second}, UpgradeAborting, "", "m"},
		{"aborting: old engine never back (drained after Done)", EngineUpgradeObserved{Phase: UpgradeAborting, Waited: 31 * time.Second,
			OldGrace: 30 * time.Second}, UpgradeAborting, ActionDeleteOldEngine, "m"},
		{"aborting: new engine still listed past grace", EngineUpgradeObserved{Phase: UpgradeAborting, NewProcess: InstanceStopping,
			Waited: time.Minute, OldGrace: 30 * time.Second}, UpgradeAborting, ActionDeleteNewEngine, "m"},
		{"canceling: old engine never back", EngineUpgradeObserved{Phase: UpgradeCanceling, Waited: 31 * time.Second,
			OldGrace: 30 * time.Second}, UpgradeCanceling, ActionDeleteOldEngine, ""},
		{"aborting: no grace set waits", EngineUpgradeObserved{Phase: UpgradeAborting, Waited: time.Hour}, UpgradeAborting, "", "m"},
		{"aborting: old engine serves", EngineUpgradeObserved{Phase: UpgradeAborting, OldServing: true}, UpgradeFailed, "", "m"},
		{"aborting: old engine deleted, serves past grace", EngineUpgradeObserved{Phase: UpgradeAborting, OldServing: true,
			Waited: time.Minute, OldGrace: 30 * time.Second}, UpgradeFailed, "", "m"},
		{"canceling: old engine serves", EngineUpgradeObserved{Phase: UpgradeCanceling, OldServing: true}, UpgradeIdle, "", ""},
		{"failed, still wanted", EngineUpgradeObserved{Phase: UpgradeFailed, Want: true}, UpgradeFailed, "", "m"},
		{"failed, engine lost, still requested", EngineUpgradeObserved{Phase: UpgradeFailed, Requested: true}, UpgradeFailed, "", "m"},
		{"failed, rolled back", EngineUpgradeObserved{Phase: UpgradeFailed}, UpgradeIdle, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := NextEngineUpgrade(tc.in, "m")
			var act EngineUpgradeAction
			if len(st.Actions) == 1 {
				act = st.Actions[0]
			} else if len(st.Actions) > 1 {
				t.Fatalf("actions %v", st.Actions)
			}
			if st.Phase != tc.phase || act != tc.action || !strings.Contains(st.Message, tc.msg) {
				t.Fatalf("got %+v, want phase %q action %q message %q", st, tc.phase, tc.action, tc.msg)
			}
		})
	}
	for _, p := range []EngineUpgradePhase{UpgradeRunning, UpgradeAborting, UpgradeCanceling} {
		if !p.Holding() {
			t.Errorf("%s does not hold the new replicas", p)
		}
	}
	for _, p := range []EngineUpgradePhase{UpgradeIdle, UpgradeFailed} {
		if p.Holding() {
			t.Errorf("%s holds the new replicas", p)
		}
	}
}

// TestCheckEngineImageDelete: the default image and an image in use stay.
func TestCheckEngineImageDelete(t *testing.T) {
	cases := []struct {
		image    string
		refCount int
		defaults []string
		want     string // "" = allowed
	}{
		{"lh:old", 0, []string{"lh:new", "lh:new"}, ""},
		{"lh:new", 0, []string{"lh:new", ""}, "unable to delete the default engine image lh:new"},
		{"lh:old", 0, []string{"lh:new", "lh:old"}, "unable to delete the default engine image lh:old"},
		{"lh:old", 3, []string{"lh:new"}, "unable to delete the engine image lh:old while being used and refCount is 3"},
		{"lh:old", 0, nil, ""},
	}
	for _, c := range cases {
		err := CheckEngineImageDelete(c.image, c.refCount, c.defaults...)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s refCount %d defaults %v: %v, want %q", c.image, c.refCount, c.defaults, err, c.want)
		}
	}
}
