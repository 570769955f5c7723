package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

const settingMinimalAvailable = "storage-minimal-available-percentage"

func (d *demo) connect(ctx context.Context) (string, error) {
	c, err := framework.Connect(ctx, d.o.kubeconfig)
	if err != nil {
		return "", err
	}
	d.c = c
	var ready []string
	err = pollUntil(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		nl, err := c.LH.LonghornV1beta2().Nodes(framework.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready = ready[:0]
		for _, n := range nl.Items {
			for _, cd := range n.Status.Conditions {
				if cd.Type == longhorn.NodeConditionTypeReady && cd.Status == longhorn.ConditionStatusTrue {
					ready = append(ready, n.Name)
				}
			}
		}
		sort.Strings(ready)
		return len(ready) >= 3 && contains(ready, d.o.node), nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for 3 Ready Longhorn nodes including %s (have %v): %w", d.o.node, ready, err)
	}
	return fmt.Sprintf("API server %s; Longhorn nodes Ready: %s", c.Rest.Host, strings.Join(ready, ", ")), nil
}

// settings lowers storage-minimal-available-percentage only when a disk
// would otherwise be under "disk pressure" for the demo's replicas. That is
// a property of this machine (how full its one disk is), not of the demo:
// Longhorn's default (25%) is right for a real node with a dedicated disk,
// and here every node's "disk" is a directory on the host's root
// filesystem. Changing it through the Setting object is what a Longhorn
// user does (`kubectl -n longhorn-system patch lhs ...`); baking a low value
// into the install's default-setting ConfigMap would hide the decision.
func (d *demo) settings(ctx context.Context) (string, error) {
	// On a fresh install the managers create the settings and the nodes
	// report their disks a few seconds after their pods start.
	var cur string
	var disks []diskSpace
	err := pollUntil(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		var err error
		if cur, err = d.c.Setting(ctx, settingMinimalAvailable); err != nil {
			return false, nil
		}
		disks, err = d.disks(ctx)
		return err == nil && len(disks) >= 3, nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for setting %s and 3 disks reported by the nodes (have %d): %w", settingMinimalAvailable, len(disks), err)
	}
	curPct, err := strconv.Atoi(cur)
	if err != nil {
		return "", fmt.Errorf("setting %s=%q: not an integer", settingMinimalAvailable, cur)
	}
	// Two demo volumes: at most two 1 GiB replicas per disk.
	pct, change, why, err := minimalAvailableFor(disks, 2<<30, curPct)
	if err != nil {
		return "", err
	}
	if !change {
		return fmt.Sprintf("%s stays %d%%: every disk has room above it", settingMinimalAvailable, curPct), nil
	}
	if err := d.c.SetSetting(ctx, settingMinimalAvailable, strconv.Itoa(pct)); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %d%% -> %d%%: %s\n(kubectl -n longhorn-system patch lhs %s --type merge -p '{\"value\":\"%d\"}')",
		settingMinimalAvailable, curPct, pct, why, settingMinimalAvailable, pct), nil
}

func (d *demo) disks(ctx context.Context) ([]diskSpace, error) {
	nl, err := d.c.LH.LonghornV1beta2().Nodes(framework.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("longhorn nodes: %w", err)
	}
	var out []diskSpace
	for _, n := range nl.Items {
		for name, ds := range n.Status.DiskStatus {
			if ds != nil && ds.StorageMaximum > 0 {
				out = append(out, diskSpace{Node: n.Name, Disk: name, Available: ds.StorageAvailable, Maximum: ds.StorageMaximum})
			}
		}
	}
	return out, nil
}

func (d *demo) cleanEarlier(ctx context.Context) (string, error) {
	var done []string
	if msg, err := cleanNodeFS(ctx, d.c, d.o.node); err != nil {
		return "", err
	} else if msg != "" {
		done = append(done, msg)
	}
	for _, v := range []string{nbdVolume, iscsiVolume} {
		if _, err := d.c.Volume(ctx, v); framework.IsNotFound(err) {
			continue
		}
		t := time.Now()
		if err := d.c.DeleteVolume(ctx, v, 3*time.Minute); err != nil {
			return "", err
		}
		done = append(done, fmt.Sprintf("deleted volume %s with its engine and replicas (%s)", v, secs(time.Since(t))))
	}
	if len(done) == 0 {
		return "nothing to clean", nil
	}
	return strings.Join(done, "\n"), nil
}

func (d *demo) createNBDVolume(ctx context.Context) (string, error) {
	out, err := d.c.Kubectl(ctx, "apply", "-f", d.o.manifest)
	if err != nil {
		return "", err
	}
	v, err := framework.ReadVolumeManifest(d.o.manifest)
	if err != nil {
		return "", err
	}
	if v.Name != nbdVolume {
		return "", fmt.Errorf("%s holds volume %q, want %q", d.o.manifest, v.Name, nbdVolume)
	}
	msg, err := d.waitScheduled(ctx, nbdVolume)
	return "$ kubectl apply -f " + d.o.manifest + "\n" + strings.TrimSpace(string(out)) + "\n" + msg, err
}

func (d *demo) createISCSIVolume(ctx context.Context) (string, error) {
	v, err := framework.ReadVolumeManifest(d.o.manifest)
	if err != nil {
		return "", err
	}
	v.Name = iscsiVolume
	v.Spec.Frontend = longhorn.VolumeFrontendISCSI
	if _, err := d.c.CreateVolume(ctx, v); err != nil {
		return "", err
	}
	return d.waitScheduled(ctx, iscsiVolume)
}

// waitScheduled waits for every replica to be placed and reports where.
func (d *demo) waitScheduled(ctx context.Context, vol string) (string, error) {
	v, err := d.c.WaitVolume(ctx, vol, 2*time.Minute, framework.All(framework.Scheduled(), framework.StateIs(longhorn.VolumeStateDetached)))
	if err != nil {
		return "", err
	}
	rs, err := d.c.Replicas(ctx, vol)
	if err != nil {
		return "", err
	}
	var at []string
	for _, r := range rs {
		at = append(at, r.Name+"@"+r.Node)
	}
	return fmt.Sprintf("%s: %s, %d replicas scheduled: %s", vol, gib(v.Spec.Size), len(rs), strings.Join(at, " ")), nil
}

func (d *demo) attachNBD(ctx context.Context) (string, error) {
	v, err := d.c.Volume(ctx, nbdVolume)
	if err != nil {
		return "", err
	}
	var note string
	if v.Spec.Frontend != longhorn.VolumeFrontendNBD {
		note = fmt.Sprintf("spec.frontend %s -> nbd: blockdev needs a kernel NBD or iSCSI initiator, which this kernel lacks;\n"+
			"with nbd the engine serves the volume itself and user-space clients (qemu, nbdfuse) use it\n", v.Spec.Frontend)
	}
	ep, err := d.attach(ctx, nbdVolume, longhorn.VolumeFrontendNBD)
	d.nbd = ep
	return note + d.endpointLine(ep), err
}

func (d *demo) attachISCSI(ctx context.Context) (string, error) {
	ep, err := d.attach(ctx, iscsiVolume, longhorn.VolumeFrontendISCSI)
	if err != nil {
		return "", err
	}
	d.iscsi = ep
	out, err := d.c.NodeExec(ctx, ep.Node, nil, "iscsi-ls", "-s", "-i", framework.InitiatorIQN, portalURL(ep.URI))
	if err != nil {
		return "", fmt.Errorf("iscsi-ls: %w", err)
	}
	return d.endpointLine(ep) + "\n$ iscsi-ls -s " + portalURL(ep.URI) + "\n" + strings.TrimSpace(string(out)), nil
}

// portalURL cuts iscsi://HOST:PORT/IQN/LUN to iscsi://HOST:PORT.
func portalURL(uri string) string {
	rest := strings.TrimPrefix(uri, "iscsi://")
	host, _, _ := strings.Cut(rest, "/")
	return "iscsi://" + host
}

func (d *demo) attach(ctx context.Context, vol string, fe longhorn.VolumeFrontend) (framework.Endpoint, error) {
	ep, err := d.c.Attach(ctx, vol, d.o.node, ticketID, fe, 3*time.Minute)
	if err != nil {
		return ep, err
	}
	_, err = d.c.WaitVolume(ctx, vol, 2*time.Minute, framework.RobustnessIs(longhorn.VolumeRobustnessHealthy))
	return ep, err
}

func (d *demo) endpointLine(ep framework.Endpoint) string {
	return fmt.Sprintf("%s attached on %s, healthy; engine %s endpoint %s", ep.Volume, ep.Node, ep.Engine, ep.Status)
}

// volumeData is a demo volume's endpoint and the data set written to it.
type volumeData struct {
	ep framework.Endpoint
	ds framework.DataSet
}

// dataSets lists both demo volumes with their data sets, iSCSI first.
func (d *demo) dataSets() []volumeData {
	return []volumeData{{d.iscsi, d.iscsiData()}, {d.nbd, d.nbdData()}}
}

func (d *demo) writeData(ctx context.Context) (string, error) {
	var lines []string
	for _, w := range d.dataSets() {
		t := time.Now()
		if err := d.c.WriteData(ctx, w.ep, w.ds); err != nil {
			return "", err
		}
		el := time.Since(t)
		lines = append(lines, fmt.Sprintf("%-15s %3d MiB at offset %4d MiB via %-5s sha256 %s... (%s, %.0f MiB/s)", w.ep.Volume,
			w.ds.Size>>20, w.ds.Offset>>20, w.ep.Frontend, w.ds.SHA256()[:16], secs(el), float64(w.ds.Size>>20)/el.Seconds()))
	}
	return strings.Join(lines, "\n"), nil
}

func (d *demo) verifyData(ctx context.Context) (string, error) {
	var lines []string
	for _, w := range d.dataSets() {
		t := time.Now()
		if err := d.c.VerifyData(ctx, w.ep, w.ds); err != nil {
			return "", err
		}
		lines = append(lines, fmt.Sprintf("%-15s %3d MiB via %-5s sha256 %s... matches (%s)", w.ep.Volume, w.ds.Size>>20,
			w.ep.Frontend, w.ds.SHA256()[:16], secs(time.Since(t))))
	}
	return strings.Join(lines, "\n"), nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// pollUntil calls cond every 250 ms until it holds, fails or timeout passes.
func pollUntil(ctx context.Context, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := cond(ctx)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
