package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// killState is what killReplica leaves for waitRebuild.
type killState struct {
	replica, node string
	at            time.Time
}

// killReplica kills (SIGKILL) the replica process of example-volume on the
// first node, by name, other than the attached one: the engine and its
// local replica stay.
func (d *demo) killReplica(ctx context.Context) (string, error) {
	rs, err := d.c.Replicas(ctx, nbdVolume)
	if err != nil {
		return "", err
	}
	var victim *framework.Replica
	for i := range rs {
		if rs[i].Node != d.nbd.Node && rs[i].Mode == longhorn.ReplicaModeRW {
			victim = &rs[i]
			break
		}
	}
	if victim == nil {
		return "", fmt.Errorf("no RW replica of %s outside %s: %+v", nbdVolume, d.nbd.Node, rs)
	}
	var note string
	if d.fs != nil {
		if note, err = d.startWriter(ctx); err != nil {
			return "", err
		}
	}
	pid, err := d.c.KillReplica(ctx, victim.Name)
	if err != nil {
		return "", err
	}
	d.killed = killState{replica: victim.Name, node: victim.Node, at: time.Now()}
	return note + fmt.Sprintf("replica %s on %s (%s): kill -9 %d, the `longhorn engine replica` process is gone",
		victim.Name, victim.Node, victim.Address, pid), nil
}

// waitRebuild follows the volume from the kill until it is healthy again
// with every replica RW, printing each change it sees (robustness, replica
// state and mode) with the time since the kill, then the events Longhorn
// recorded.
func (d *demo) waitRebuild(ctx context.Context) (string, error) {
	last := map[string]string{}
	seenDegraded := false
	err := pollUntil(ctx, 5*time.Minute, func(ctx context.Context) (bool, error) {
		v, err := d.c.Volume(ctx, nbdVolume)
		if err != nil {
			return false, nil
		}
		rs, err := d.c.Replicas(ctx, nbdVolume)
		if err != nil {
			return false, nil
		}
		cur := map[string]string{"volume " + nbdVolume: "robustness " + string(v.Status.Robustness)}
		for _, r := range rs {
			mode := string(r.Mode)
			if mode == "" {
				mode = "-"
			}
			cur["replica "+r.Name+"@"+r.Node] = fmt.Sprintf("%s, mode %s", r.State, mode)
		}
		printChanges(last, cur, time.Since(d.killed.at))
		last = cur
		if v.Status.Robustness == longhorn.VolumeRobustnessDegraded {
			seenDegraded = true
		}
		done := v.Status.Robustness == longhorn.VolumeRobustnessHealthy &&
			framework.HealthyReplicas(rs) >= v.Spec.NumberOfReplicas && (seenDegraded || failedSince(rs, d.killed.at))
		return done, nil
	})
	if err != nil {
		return "", fmt.Errorf("%w\n%s", err, d.c.Dump(context.WithoutCancel(ctx), nbdVolume))
	}
	msg := fmt.Sprintf("healthy again %s after the kill; Longhorn's events:\n%s", secs(time.Since(d.killed.at)), d.events(ctx))
	if d.writer != nil {
		w, err := d.finishWriter(ctx)
		if err != nil {
			return "", err
		}
		msg += "\n" + w
	}
	return msg, nil
}

// failedSince reports whether a replica failed after t (spec.failedAt or
// lastFailedAt are RFC 3339).
func failedSince(rs []framework.Replica, t time.Time) bool {
	for _, r := range rs {
		for _, at := range []string{r.FailedAt, r.LastFailedAt} {
			if ft, err := time.Parse(time.RFC3339, at); err == nil && !ft.Before(t.Truncate(time.Second)) {
				return true
			}
		}
	}
	return false
}

func printChanges(last, cur map[string]string, since time.Duration) {
	keys := make([]string, 0, len(cur))
	for k := range cur {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if last[k] != cur[k] {
			fmt.Printf("       +%-6s %s: %s\n", secs(since), k, cur[k])
		}
	}
	for k := range last {
		if _, ok := cur[k]; !ok {
			fmt.Printf("       +%-6s %s: deleted\n", secs(since), k)
		}
	}
}

// events lists the Kubernetes events about the volume, its engines and
// replicas since the kill (what `kubectl get events` shows).
func (d *demo) events(ctx context.Context) string {
	el, err := d.c.Kube.CoreV1().Events(framework.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "  (events: " + err.Error() + ")"
	}
	var evs []corev1.Event
	for _, e := range el.Items {
		ts := e.LastTimestamp.Time
		if ts.IsZero() {
			ts = e.EventTime.Time
		}
		if ts.Before(d.killed.at.Add(-time.Second)) || !strings.HasPrefix(e.InvolvedObject.Name, nbdVolume) {
			continue
		}
		evs = append(evs, e)
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].LastTimestamp.Before(&evs[j].LastTimestamp) })
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "  %-7s %-15s %s/%s: %s\n", e.Type, e.Reason, strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name, e.Message)
	}
	return strings.TrimRight(b.String(), "\n")
}
