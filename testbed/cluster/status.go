package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PrintStatus writes the status table: control-plane processes, nodes
// (address, namespace, agent, Ready, pods) and how to use the kubeconfig.
func PrintStatus(ctx context.Context, st *State, w io.Writer) error {
	c := &st.Config
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tPID\tSTATE\tENDPOINT")
	for _, comp := range c.components() {
		p := st.Procs[comp.name]
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", comp.name, p.PID, aliveWord(p), strings.TrimSuffix(strings.TrimSuffix(comp.health, "/readyz"), "/health"))
	}
	tw.Flush()
	fmt.Fprintln(w)
	nodes := map[string]*corev1.Node{}
	podsOn := map[string][]string{}
	if cs, err := c.Client(); err == nil {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if nl, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
			for i := range nl.Items {
				nodes[nl.Items[i].Name] = &nl.Items[i]
			}
		}
		if pl, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err == nil {
			for _, p := range pl.Items {
				podsOn[p.Spec.NodeName] = append(podsOn[p.Spec.NodeName], fmt.Sprintf("%s/%s(%s)", p.Namespace, p.Name, p.Status.Phase))
			}
		}
	}
	if c.Real() {
		fmt.Fprintln(tw, "NODE\tIP\tPOD CIDR\tNETNS\tCONTAINERD\tKUBELET\tKUBE-PROXY\tREADY\tPODS")
	} else {
		fmt.Fprintln(tw, "NODE\tIP\tNETNS\tAGENT PID\tAGENT\tREADY\tPODS")
	}
	for i := 1; i <= c.Nodes; i++ {
		ready := "-"
		if n, ok := nodes[c.NodeName(i)]; ok {
			ready = fmt.Sprint(nodeReady(n))
		}
		if c.Real() {
			pw := func(k string) string {
				p := st.Procs[nodeProcName(c, k, i)]
				return fmt.Sprintf("%d %s", p.PID, aliveWord(p))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", c.NodeName(i), c.NodeIP(i), c.NodePodCIDR(i), c.Netns(i),
				pw(kindContainerd), pw(kindKubelet), pw(kindKubeProxy), ready, len(podsOn[c.NodeName(i)]))
			continue
		}
		p := st.Procs[agentName(c, i)]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%d\n", c.NodeName(i), c.NodeIP(i), c.Netns(i), p.PID, aliveWord(p), ready, len(podsOn[c.NodeName(i)]))
	}
	tw.Flush()
	if c.Real() {
		printRealNodes(ctx, c, w)
	}
	fmt.Fprintf(w, "\nkubeconfig: %s\n  export KUBECONFIG=%s; %s get nodes\nlogs: %s\n",
		c.KubeconfigPath(), c.KubeconfigPath(), filepath.Join(c.AssetsDir, "kubectl"), filepath.Join(c.StateDir, "logs"))
	return nil
}

func aliveWord(p Proc) string {
	if p.PID == 0 {
		return "absent"
	}
	if p.Alive() {
		return "running"
	}
	return "DEAD"
}

// Kubectl returns a kubectl command (from the assets) with the cluster's
// admin kubeconfig.
func (c *Config) Kubectl(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.AssetsDir, "kubectl"), append([]string{"--kubeconfig", c.KubeconfigPath()}, args...)...)
	cmd.Env = os.Environ()
	return cmd
}

// ApplyManifest applies a manifest with kubectl and waits until every
// DaemonSet in the cluster (outside kube-system) has all its pods ready.
func ApplyManifest(ctx context.Context, c *Config, path string, timeout time.Duration, out Printf) error {
	t0 := time.Now()
	if b, err := c.Kubectl(ctx, "apply", "-f", path).CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl apply -f %s: %w\n%s", path, err, b)
	}
	out("applied %s (%.1fs)", path, time.Since(t0).Seconds())
	return WaitDaemonSets(ctx, c, timeout, out)
}

// WaitDaemonSets waits until every DaemonSet outside kube-system has as
// many ready pods as nodes it should run on (and at least one).
func WaitDaemonSets(ctx context.Context, c *Config, timeout time.Duration, out Printf) error {
	cs, err := c.Client()
	if err != nil {
		return err
	}
	t0 := time.Now()
	deadline := t0.Add(timeout)
	for {
		dl, err := cs.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
		var pending []string
		if err != nil {
			pending = append(pending, err.Error())
		} else {
			for _, ds := range dl.Items {
				if ds.Namespace != metav1.NamespaceSystem && !daemonSetReady(&ds) {
					pending = append(pending, fmt.Sprintf("%s/%s %d/%d ready", ds.Namespace, ds.Name, ds.Status.NumberReady, ds.Status.DesiredNumberScheduled))
				}
			}
		}
		if len(pending) == 0 {
			out("daemonsets ready (%.1fs)", time.Since(t0).Seconds())
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("daemonsets not ready after %v: %s", timeout, strings.Join(pending, "; "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func daemonSetReady(ds *appsv1.DaemonSet) bool {
	s := ds.Status
	return s.ObservedGeneration >= ds.Generation && s.DesiredNumberScheduled > 0 &&
		s.NumberReady == s.DesiredNumberScheduled && s.UpdatedNumberScheduled == s.DesiredNumberScheduled
}

// printRealNodes prints `kubectl get nodes -o wide` (kubelet version and
// container runtime of every node) and each node's `crictl ps`.
func printRealNodes(ctx context.Context, c *Config, w io.Writer) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	fmt.Fprintln(w, "\n$ kubectl get nodes -o wide")
	if b, err := c.Kubectl(ctx, "get", "nodes", "-o", "wide").CombinedOutput(); err == nil {
		w.Write(b)
	}
	for i := 1; i <= c.Nodes; i++ {
		fmt.Fprintf(w, "\n$ crictl ps   # on %s\n", c.NodeName(i))
		b, err := c.Crictl(ctx, i, "ps").Output()
		w.Write(b)
		if err != nil {
			fmt.Fprintf(w, "crictl: %v\n", err)
		}
	}
}
