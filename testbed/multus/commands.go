package multus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/version"
)

// callTimeout bounds one CNI command (delegates and API calls).
const callTimeout = 90 * time.Second

// Add is CNI ADD: the cluster network on args.IfName, then every network
// of the pod's networks annotation on its interface, then network-status
// on the pod. It prints the cluster network's result (what the runtime
// reports as the pod's IP). A failure leaves the cache of what was added,
// so the runtime's DEL cleans up.
func (p *Plugin) Add(args *skel.CmdArgs) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	conf, err := loadConf(args.StdinData)
	if err != nil {
		return err
	}
	cluster, err := os.ReadFile(conf.ClusterNetwork)
	if err != nil {
		return fmt.Errorf("cluster network: %w", err)
	}
	pod, pairs := parseArgs(args.Args)
	def := delegate{Interface: args.IfName, Conf: cluster, Default: true}
	defList, err := confList(cluster, "cluster")
	if err != nil {
		return fmt.Errorf("cluster network %s: %w", conf.ClusterNetwork, err)
	}
	def.Name = defList.Name
	ds := []delegate{def}
	if err := writeCache(conf, args.ContainerID, ds); err != nil {
		return err
	}
	res, err := p.CNI.AddNetworkList(ctx, defList, runtimeConf(args, pairs, args.IfName, conf.RuntimeConfig))
	if err != nil {
		return fmt.Errorf("cluster network %s: %w", defList.Name, err)
	}
	statuses := []NetworkStatus{}
	st, err := StatusFromResult(def.Name, args.IfName, res, true)
	if err != nil {
		return err
	}
	statuses = append(statuses, st)
	if pod.Name != "" {
		more, err := p.addAttachments(ctx, conf, args, pod, pairs, ds)
		if err != nil {
			return err
		}
		statuses = append(statuses, more...)
	}
	if err := p.writeStatus(ctx, conf, pod, statuses); err != nil {
		return err
	}
	out, err := res.GetAsVersion(conf.CNIVersion)
	if err != nil {
		return err
	}
	w := p.Stdout
	if w == nil {
		w = os.Stdout
	}
	return out.PrintTo(w)
}

// addAttachments runs the delegate of every network the pod asks for.
func (p *Plugin) addAttachments(ctx context.Context, conf *NetConf, args *skel.CmdArgs, pod podRef, pairs [][2]string, ds []delegate) ([]NetworkStatus, error) {
	kc, err := p.Cluster(conf.Kubeconfig)
	if err != nil {
		return nil, err
	}
	ann, err := kc.PodNetworks(ctx, pod.Namespace, pod.Name)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	sel, err := ParseNetworks(ann, pod.Namespace)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	var out []NetworkStatus
	for _, s := range sel {
		ref := s.Namespace + "/" + s.Name
		cfg, err := kc.NADConfig(ctx, s.Namespace, s.Name)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: network %s: %w", pod.Namespace, pod.Name, ref, err)
		}
		list, err := confList([]byte(cfg), s.Name)
		if err != nil {
			return nil, fmt.Errorf("NetworkAttachmentDefinition %s spec.config: %w", ref, err)
		}
		d := delegate{Name: ref, Interface: s.Interface, Conf: json.RawMessage(list.Bytes), IPs: s.IPs, MAC: s.MAC}
		ds = append(ds, d)
		if err := writeCache(conf, args.ContainerID, ds); err != nil {
			return nil, err
		}
		res, err := p.CNI.AddNetworkList(ctx, list, runtimeConf(args, pairs, s.Interface, selectionCaps(d)))
		if err != nil {
			return nil, fmt.Errorf("network %s on %s: %w", ref, s.Interface, err)
		}
		st, err := StatusFromResult(ref, s.Interface, res, false)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// selectionCaps are the capability arguments of a selection (Multus'
// "ips" and "mac" runtime config).
func selectionCaps(d delegate) map[string]any {
	caps := map[string]any{}
	if len(d.IPs) > 0 {
		caps["ips"] = d.IPs
	}
	if d.MAC != "" {
		caps["mac"] = d.MAC
	}
	return caps
}

func (p *Plugin) writeStatus(ctx context.Context, conf *NetConf, pod podRef, st []NetworkStatus) error {
	if pod.Name == "" {
		return nil
	}
	kc, err := p.Cluster(conf.Kubeconfig)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "    ")
	if err != nil {
		return err
	}
	if err := kc.SetNetworkStatus(ctx, pod.Namespace, pod.Name, string(b)); err != nil {
		return fmt.Errorf("pod %s/%s: write %s: %w", pod.Namespace, pod.Name, NetworkStatusAnnotation, err)
	}
	return nil
}

// delegates returns what ADD recorded for the container, or, without a
// record, the cluster network alone on args.IfName.
func (p *Plugin) delegates(conf *NetConf, args *skel.CmdArgs) ([]delegate, error) {
	ds, err := readCache(conf, args.ContainerID)
	if err == nil {
		return ds, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	cluster, err := os.ReadFile(conf.ClusterNetwork)
	if err != nil {
		return nil, fmt.Errorf("cluster network: %w", err)
	}
	return []delegate{{Interface: args.IfName, Conf: cluster, Default: true}}, nil
}

// Del is CNI DEL: every recorded delegate in reverse order (each gets its
// DEL even when another failed), then the record goes. Deleting twice is
// harmless.
func (p *Plugin) Del(args *skel.CmdArgs) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	conf, err := loadConf(args.StdinData)
	if err != nil {
		return err
	}
	ds, err := p.delegates(conf, args)
	if err != nil {
		return err
	}
	_, pairs := parseArgs(args.Args)
	var errs []error
	for i := len(ds) - 1; i >= 0; i-- {
		d := ds[i]
		list, err := confList(d.Conf, "cluster")
		if err == nil {
			caps := selectionCaps(d)
			if d.Default {
				caps = conf.RuntimeConfig
			}
			err = p.CNI.DelNetworkList(ctx, list, runtimeConf(args, pairs, d.Interface, caps))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("DEL %s on %s: %w", d.Name, d.Interface, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := os.Remove(cachePath(conf, args.ContainerID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Check is CNI CHECK of every recorded delegate of CNI version 0.4.0 or
// later.
func (p *Plugin) Check(args *skel.CmdArgs) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	conf, err := loadConf(args.StdinData)
	if err != nil {
		return err
	}
	ds, err := readCache(conf, args.ContainerID)
	if err != nil {
		return fmt.Errorf("no ADD recorded for container %s: %w", args.ContainerID, err)
	}
	_, pairs := parseArgs(args.Args)
	for _, d := range ds {
		list, err := confList(d.Conf, "cluster")
		if err != nil {
			return err
		}
		if ok, err := version.GreaterThanOrEqualTo(list.CNIVersion, "0.4.0"); err != nil || !ok {
			continue // CHECK came with CNI 0.4.0; older configurations are not checked (as Multus does)
		}
		caps := selectionCaps(d)
		if d.Default {
			caps = conf.RuntimeConfig
		}
		if err := p.CNI.CheckNetworkList(ctx, list, runtimeConf(args, pairs, d.Interface, caps)); err != nil {
			return fmt.Errorf("CHECK %s on %s: %w", d.Name, d.Interface, err)
		}
	}
	return nil
}
