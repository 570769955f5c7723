package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// VolumeCondition is a predicate on a volume for WaitVolume. It returns
// whether it holds and, when it does not, what it saw (for the timeout
// error), e.g. "state attaching, want attached".
type VolumeCondition func(v *longhorn.Volume) (ok bool, saw string)

// StateIs holds when status.state is s.
func StateIs(s longhorn.VolumeState) VolumeCondition {
	return func(v *longhorn.Volume) (bool, string) {
		return v.Status.State == s, fmt.Sprintf("state %q, want %q", v.Status.State, s)
	}
}

// RobustnessIs holds when status.robustness is r.
func RobustnessIs(r longhorn.VolumeRobustness) VolumeCondition {
	return func(v *longhorn.Volume) (bool, string) {
		return v.Status.Robustness == r, fmt.Sprintf("robustness %q, want %q", v.Status.Robustness, r)
	}
}

// AttachedTo holds when the volume is attached on node.
func AttachedTo(node string) VolumeCondition {
	return func(v *longhorn.Volume) (bool, string) {
		ok := v.Status.State == longhorn.VolumeStateAttached && v.Status.CurrentNodeID == node
		return ok, fmt.Sprintf("state %q on %q, want attached on %q", v.Status.State, v.Status.CurrentNodeID, node)
	}
}

// ConditionIs holds when the status condition of type typ (e.g.
// "Scheduled", "Restore", "TooManySnapshots") has status st.
func ConditionIs(typ string, st longhorn.ConditionStatus) VolumeCondition {
	return func(v *longhorn.Volume) (bool, string) {
		for _, c := range v.Status.Conditions {
			if c.Type == typ {
				return c.Status == st, fmt.Sprintf("condition %s=%s (%s: %s), want %s", typ, c.Status, c.Reason, c.Message, st)
			}
		}
		return false, fmt.Sprintf("no condition %s, want %s", typ, st)
	}
}

// Scheduled holds when every replica of the volume is scheduled
// (condition Scheduled=True).
func Scheduled() VolumeCondition {
	return ConditionIs(longhorn.VolumeConditionTypeScheduled, longhorn.ConditionStatusTrue)
}

// All holds when every condition holds; it reports the first that does not.
func All(conds ...VolumeCondition) VolumeCondition {
	return func(v *longhorn.Volume) (bool, string) {
		for _, c := range conds {
			if ok, saw := c(v); !ok {
				return false, saw
			}
		}
		return true, ""
	}
}

// WaitVolume polls the volume (every 250 ms) until cond holds and returns
// it. On timeout the error wraps ErrTimeout and holds what cond saw last
// and a Dump of the volume's objects.
func (c *Cluster) WaitVolume(ctx context.Context, name string, timeout time.Duration, cond VolumeCondition) (*longhorn.Volume, error) {
	var v *longhorn.Volume
	err := poll(ctx, timeout, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		cur, err := c.Volume(ctx, name)
		if err != nil {
			return false, err.Error(), nil
		}
		v = cur
		ok, saw := cond(cur)
		return ok, saw, nil
	})
	if err != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return v, fmt.Errorf("volume %s: %w\n%s", name, err, c.Dump(dctx, name))
	}
	return v, nil
}

// Dump renders the volume, its attachment tickets, engines and replicas as
// tables (what `kubectl get lhv,lhva,lhe,lhr` shows, plus replica modes
// and conditions), for error messages. It never fails: errors are part of
// the text.
func (c *Cluster) Dump(ctx context.Context, name string) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	api := c.LH.LonghornV1beta2()
	v, err := api.Volumes(Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		fmt.Fprintf(tw, "lhv/%s: %v\n", name, err)
	} else {
		fmt.Fprintf(tw, "lhv/%s\tstate=%s\trobustness=%s\tnode=%s\tfrontend=%s\treplicas=%d\n", name, v.Status.State,
			v.Status.Robustness, v.Status.CurrentNodeID, v.Spec.Frontend, v.Spec.NumberOfReplicas)
		for _, cd := range v.Status.Conditions {
			fmt.Fprintf(tw, "  condition %s=%s\t%s\t%s\n", cd.Type, cd.Status, cd.Reason, cd.Message)
		}
	}
	if va, err := api.VolumeAttachments(Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
		for id, t := range va.Spec.AttachmentTickets {
			st := va.Status.AttachmentTicketStatuses[id]
			fmt.Fprintf(tw, "lhva ticket %s\ttype=%s\tnode=%s\tsatisfied=%v\n", id, t.Type, t.NodeID, st != nil && st.Satisfied)
		}
	}
	sel := metav1.ListOptions{LabelSelector: types.LonghornLabelVolume + "=" + name}
	if es, err := api.Engines(Namespace).List(ctx, sel); err != nil {
		fmt.Fprintf(tw, "lhe: %v\n", err)
	} else {
		for _, e := range es.Items {
			fmt.Fprintf(tw, "lhe/%s\tstate=%s/%s\tnode=%s\tendpoint=%s\tmodes=%s\n", e.Name, e.Spec.DesireState,
				e.Status.CurrentState, e.Spec.NodeID, e.Status.Endpoint, modeString(e.Status.ReplicaModeMap))
			for _, cd := range e.Status.Conditions {
				fmt.Fprintf(tw, "  condition %s=%s\t%s\t%s\n", cd.Type, cd.Status, cd.Reason, cd.Message)
			}
		}
	}
	if rs, err := api.Replicas(Namespace).List(ctx, sel); err != nil {
		fmt.Fprintf(tw, "lhr: %v\n", err)
	} else {
		for _, r := range rs.Items {
			fmt.Fprintf(tw, "lhr/%s\tstate=%s/%s\tnode=%s\taddr=%s:%d\tfailedAt=%s\thealthyAt=%s\n", r.Name, r.Spec.DesireState,
				r.Status.CurrentState, r.Spec.NodeID, r.Status.StorageIP, r.Status.Port, r.Spec.FailedAt, r.Spec.HealthyAt)
		}
	}
	tw.Flush()
	return b.String()
}

// modeString renders a replica mode map sorted by name: "a:RW b:WO".
func modeString(m map[string]longhorn.ReplicaMode) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+":"+string(m[k]))
	}
	return strings.Join(parts, " ")
}
