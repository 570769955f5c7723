package scheduler

import (
	"testing"
	"time"
)

func failedAt(name, nodeName, diskName string, ago time.Duration) Replica {
	r := placed(name, nodeName, diskName)
	r.FailedAt = now.Add(-ago)
	return r
}

func TestFindReusableReplica(t *testing.T) {
	cases := []struct {
		name     string
		replicas []Replica
		mutate   func(nodes []Node, in *ReuseInput)
		want     string
	}{
		{"one reusable failed replica", []Replica{failedAt("r0", "n1", "d1", time.Minute), placed("r1", "n2", "d1")}, nil, "r0"},
		{"latest failure wins", []Replica{failedAt("r0", "n1", "d1", 2*time.Minute), failedAt("r1", "n2", "d1", time.Minute)}, nil, "r1"},
		{"healthy replicas are not reused", []Replica{placed("r0", "n1", "d1")}, nil, ""},
		{"retried too often", []Replica{func() Replica {
			r := failedAt("r0", "n1", "d1", time.Minute)
			r.RebuildRetryCount = FailedReplicaMaxRetryCount
			return r
		}()}, nil, ""},
		{"four retries still reusable", []Replica{func() Replica {
			r := failedAt("r0", "n1", "d1", time.Minute)
			r.RebuildRetryCount = FailedReplicaMaxRetryCount - 1
			return r
		}()}, nil, "r0"},
		{"inactive replica", []Replica{func() Replica { r := failedAt("r0", "n1", "d1", time.Minute); r.Active = false; return r }()}, nil, ""},
		{"instance manager down", []Replica{func() Replica {
			r := failedAt("r0", "n1", "d1", time.Minute)
			r.InstanceManagerRunning = false
			return r
		}()}, nil, ""},
		{"disk not ready", []Replica{failedAt("r0", "n1", "d1", time.Minute)}, func(n []Node, _ *ReuseInput) { n[0].Disks[0].Ready = false }, ""},
		{"disk pressure but not full", []Replica{failedAt("r0", "n1", "d1", time.Minute)}, func(n []Node, _ *ReuseInput) {
			n[0].Disks[0].Schedulable, n[0].Disks[0].SchedulableReason = false, "DiskPressure"
		}, "r0"},
		{"disk pressure and full", []Replica{failedAt("r0", "n1", "d1", time.Minute)}, func(n []Node, _ *ReuseInput) {
			n[0].Disks[0].Schedulable, n[0].Disks[0].SchedulableReason = false, "DiskPressure"
			n[0].Disks[0].StorageAvailable = 25 * gib
		}, ""},
		{"disk evicting", []Replica{failedAt("r0", "n1", "d1", time.Minute)}, func(n []Node, _ *ReuseInput) { n[0].Disks[0].EvictionRequested = true }, ""},
		{"disk replaced (UUID changed)", []Replica{failedAt("r0", "n1", "d1", time.Minute)}, func(n []Node, _ *ReuseInput) { n[0].Disks[0].UUID = "other" }, ""},
		{"node not schedulable", []Replica{failedAt("r0", "n1", "d1", time.Minute)}, func(n []Node, _ *ReuseInput) { n[0].Ready = false }, ""},
		{"hard affinity elsewhere", []Replica{failedAt("r0", "n1", "d1", time.Minute)}, func(_ []Node, in *ReuseInput) { in.HardNodeAffinity = "n2" }, ""},
		{"v2 without fast rebuild", []Replica{failedAt("r0", "n1", "d1", time.Minute)}, func(n []Node, in *ReuseInput) {
			in.Volume.DataEngine = DataEngineV2
			n[0].Disks[0].Type = DiskTypeBlock
		}, ""},
		{"disk tags do not match", []Replica{failedAt("r0", "n1", "d1", time.Minute)}, func(n []Node, in *ReuseInput) {
			in.Volume.DiskSelector = []string{"ssd"}
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nodes := threeNodes()
			in := ReuseInput{Volume: vol(), Replicas: tc.replicas, Nodes: nodes, Settings: defaultSettings(), Now: now}
			if tc.mutate != nil {
				tc.mutate(nodes, &in)
			}
			got, ok, rs := FindReusableReplica(in)
			if got != tc.want || ok != (tc.want != "") {
				t.Fatalf("got %q ok=%v, want %q (reasons %v)", got, ok, tc.want, rs)
			}
		})
	}
}

func TestRequireNewReplica(t *testing.T) {
	reusable := []Replica{failedAt("r0", "n1", "d1", time.Minute), placed("r1", "n2", "d1")}
	cases := []struct {
		name     string
		replicas []Replica
		mutate   func(*ReuseInput)
		want     time.Duration
	}{
		{"new volume", reusable, func(in *ReuseInput) { in.Volume.Robustness = "" }, 0},
		{"healthy volume (eviction)", reusable, func(in *ReuseInput) { in.Volume.Robustness = RobustnessHealthy }, 0},
		{"data locality replica", reusable, func(in *ReuseInput) { in.HardNodeAffinity = "n3" }, 0},
		{"nothing reusable", []Replica{placed("r1", "n2", "d1")}, nil, 0},
		{"degraded 100 s ago, wait 600 s", reusable, nil, 501 * time.Second},
		{"wait elapsed", reusable, func(in *ReuseInput) { in.Volume.LastDegradedAt = now.Add(-600 * time.Second) }, 0},
		{"wait elapsed long ago", reusable, func(in *ReuseInput) { in.Volume.LastDegradedAt = now.Add(-time.Hour) }, 0},
		{"wait interval 0", reusable, func(in *ReuseInput) { in.Settings.ReplenishmentWaitInterval = 0 }, 0},
		{"v2 without fast rebuild", reusable, func(in *ReuseInput) { in.Volume.DataEngine = DataEngineV2 }, 0},
		{"v2 with fast rebuild", reusable, func(in *ReuseInput) {
			in.Volume.DataEngine, in.FastReplicaRebuild = DataEngineV2, true
		}, 501 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := vol()
			v.Robustness, v.LastDegradedAt = RobustnessDegraded, now.Add(-100*time.Second)
			in := ReuseInput{Volume: v, Replicas: tc.replicas, Nodes: threeNodes(), Settings: defaultSettings(), Now: now}
			if tc.mutate != nil {
				tc.mutate(&in)
			}
			if got := RequireNewReplica(in); got != tc.want {
				t.Fatalf("RequireNewReplica = %v, want %v", got, tc.want)
			}
		})
	}
}
