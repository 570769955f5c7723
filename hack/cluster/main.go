// Command lhcluster runs the local cluster (package testbed/cluster): `up`,
// `down` and `status` for users (make cluster / make cluster-down), and the
// internal modes `node-agent` (one per node, inside its netns) and
// `pod-exec` (one per container process).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/testbed/cluster/nodeagent"
)

func main() {
	app := &cli.App{
		Name:  "lhcluster",
		Usage: "local multi-node Kubernetes cluster for Longhorn (nodes are network + mount namespaces running kubelet and containerd)",
		Commands: []*cli.Command{
			upCommand(), downCommand(), statusCommand(), imageCommand(), nodeAgentCommand(), podExecCommand(), infoServerCommand(),
		},
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "lhcluster:", err)
		os.Exit(1)
	}
}

func commonFlags() []cli.Flag {
	d := cluster.DefaultConfig()
	home, _ := os.UserHomeDir()
	return []cli.Flag{
		&cli.StringFlag{Name: "name", Value: d.Name, Usage: "cluster name: prefix of bridge, netns and cgroup names"},
		&cli.StringFlag{Name: "state-dir", Value: filepath.Join(home, ".cache", "longhorn-testbed", "cluster-"+d.Name), Usage: "PKI, kubeconfig, logs, node directories"},
		&cli.IntFlag{Name: "nodes", Value: d.Nodes, Usage: "number of nodes"},
		&cli.StringFlag{Name: "subnet", Value: d.Subnet.String(), Usage: "node subnet; the bridge takes its last address"},
		&cli.StringFlag{Name: "service-cidr", Value: d.ServiceCIDR.String(), Usage: "service range (made unreachable)"},
		&cli.StringFlag{Name: "pod-cidr", Value: d.PodCIDR.String(), Usage: "pod range of real nodes: node i gets its i-th /24"},
		&cli.StringFlag{Name: "node-mode", Value: string(d.NodeMode), Usage: "containerd (real kubelet + containerd nodes) or agent (pods as processes, faster)"},
		&cli.StringFlag{Name: "storage-subnet", Usage: "real nodes: a storage network on a second bridge <name>br1 with this subnet, reached through the Multus-compatible meta-plugin (--multus-binary); empty: none"},
		&cli.StringFlag{Name: "multus-binary", Usage: "the meta-plugin binary (bin/lhmultus) for --storage-subnet"},
	}
}

func configFrom(c *cli.Context) (cluster.Config, error) {
	cfg := cluster.DefaultConfig()
	cfg.Name, cfg.Nodes, cfg.StateDir = c.String("name"), c.Int("nodes"), c.String("state-dir")
	var err error
	if cfg.Subnet, err = netip.ParsePrefix(c.String("subnet")); err != nil {
		return cfg, fmt.Errorf("--subnet: %w", err)
	}
	if cfg.ServiceCIDR, err = netip.ParsePrefix(c.String("service-cidr")); err != nil {
		return cfg, fmt.Errorf("--service-cidr: %w", err)
	}
	if cfg.PodCIDR, err = netip.ParsePrefix(c.String("pod-cidr")); err != nil {
		return cfg, fmt.Errorf("--pod-cidr: %w", err)
	}
	cfg.NodeMode = cluster.NodeMode(c.String("node-mode"))
	if s := c.String("storage-subnet"); s != "" {
		if cfg.StorageSubnet, err = netip.ParsePrefix(s); err != nil {
			return cfg, fmt.Errorf("--storage-subnet: %w", err)
		}
		if cfg.MultusBinary, err = filepath.Abs(c.String("multus-binary")); err != nil || c.String("multus-binary") == "" {
			return cfg, fmt.Errorf("--storage-subnet needs --multus-binary (bin/lhmultus)")
		}
	}
	if cfg.StateDir, err = filepath.Abs(cfg.StateDir); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

func printf(format string, args ...any) {
	fmt.Printf("cluster [%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func upCommand() *cli.Command {
	return &cli.Command{
		Name:  "up",
		Usage: "start (or complete) the cluster, apply the manifest if it exists, print the status",
		Flags: append(commonFlags(),
			&cli.StringFlag{Name: "assets", Required: true, Usage: "directory with etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (make testbin)"},
			&cli.StringSliceFlag{Name: "image", Usage: "agent mode: PATTERN=BINARY image mapping, e.g. 'longhornio/longhorn:*=/abs/bin/longhorn'"},
			&cli.StringSliceFlag{Name: "image-archive", Usage: "real nodes: OCI image archive to import into every node's containerd (repeatable; missing files are skipped with a message)"},
			&cli.StringFlag{Name: "pause-binary", Usage: "real nodes: static binary of the pause image (bin/lhpause)"},
			&cli.StringFlag{Name: "manifest", Usage: "manifest to apply with kubectl when the file exists (deploy/longhorn.yaml); waits for its DaemonSets. Overrides --helm"},
			&cli.StringFlag{Name: "helm", Usage: "helm binary: install --chart with --values (helm upgrade --install) and check the values' defaultSettings reach the Setting objects"},
			&cli.StringFlag{Name: "chart", Value: "chart", Usage: "chart directory for --helm"},
			&cli.StringFlag{Name: "values", Usage: "values file for --helm"},
			&cli.DurationFlag{Name: "manifest-timeout", Value: 5 * time.Minute},
		),
		Action: upAction,
	}
}

// upAction runs `up`: the cluster, then the manifest or the Helm chart.
func upAction(c *cli.Context) error {
	cfg, err := upConfig(c)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	t0 := time.Now()
	st, err := cluster.Up(ctx, cfg, printf)
	if err != nil {
		return err
	}
	if m := c.String("manifest"); m != "" {
		if _, err := os.Stat(m); errors.Is(err, fs.ErrNotExist) {
			printf("%s does not exist yet: not applied", m)
		} else if err := cluster.ApplyManifest(ctx, &st.Config, m, c.Duration("manifest-timeout"), printf); err != nil {
			return err
		}
	} else if h := c.String("helm"); h != "" {
		if err := helmInstall(ctx, &st.Config, h, c.String("chart"), c.String("values"), c.Duration("manifest-timeout")); err != nil {
			return err
		}
	}
	if st.Config.StorageNetworkEnabled() {
		if err := writeStorageNAD(&st.Config); err != nil {
			return err
		}
	}
	printf("cluster up in %.1fs", time.Since(t0).Seconds())
	return cluster.PrintStatus(ctx, st, os.Stdout)
}

// upConfig reads up's flags: paths made absolute, image archives that exist,
// PATTERN=BINARY image mappings.
func upConfig(c *cli.Context) (cluster.Config, error) {
	cfg, err := configFrom(c)
	if err != nil {
		return cfg, err
	}
	if cfg.AssetsDir, err = filepath.Abs(c.String("assets")); err != nil {
		return cfg, err
	}
	if cfg.AgentBinary, err = os.Executable(); err != nil {
		return cfg, err
	}
	if cfg.PauseBinary, err = filepath.Abs(c.String("pause-binary")); err != nil {
		return cfg, err
	}
	for _, a := range c.StringSlice("image-archive") {
		if _, err := os.Stat(a); err != nil {
			printf("image archive %s: %v: not imported", a, err)
			continue
		}
		abs, err := filepath.Abs(a)
		if err != nil {
			return cfg, err
		}
		cfg.ImageArchives = append(cfg.ImageArchives, abs)
	}
	cfg.Images = map[string]string{}
	for _, m := range c.StringSlice("image") {
		pat, bin, ok := strings.Cut(m, "=")
		if !ok {
			return cfg, fmt.Errorf("--image %q: want PATTERN=BINARY", m)
		}
		if cfg.Images[pat], err = filepath.Abs(bin); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

func downCommand() *cli.Command {
	return &cli.Command{
		Name:  "down",
		Usage: "stop every process and remove every namespace, mount, loop device and cgroup of the cluster",
		Flags: commonFlags(),
		Action: func(c *cli.Context) error {
			cfg, err := configFrom(c)
			if err != nil {
				return err
			}
			t0 := time.Now()
			if err := cluster.Down(cfg, printf); err != nil {
				return err
			}
			printf("cluster down in %.1fs (logs kept in %s)", time.Since(t0).Seconds(), filepath.Join(cfg.StateDir, "logs"))
			return nil
		},
	}
}

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "print the status table",
		Flags: commonFlags(),
		Action: func(c *cli.Context) error {
			cfg, err := configFrom(c)
			if err != nil {
				return err
			}
			st, err := cluster.LoadState(cfg.StateDir)
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("no cluster in %s", cfg.StateDir)
			}
			if err != nil {
				return err
			}
			return cluster.PrintStatus(c.Context, st, os.Stdout)
		},
	}
}

func nodeAgentCommand() *cli.Command {
	return &cli.Command{
		Name:   "node-agent",
		Usage:  "internal: run one node (started by up inside the node's netns)",
		Hidden: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Required: true},
			&cli.IntFlag{Name: "v", Value: 1, Usage: "klog verbosity"},
		},
		Action: func(c *cli.Context) error {
			fs := flag.NewFlagSet("klog", flag.ContinueOnError)
			klog.InitFlags(fs)
			_ = fs.Set("v", fmt.Sprint(c.Int("v")))
			cfg, err := nodeagent.LoadConfig(c.String("config"))
			if err != nil {
				return err
			}
			ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer cancel()
			return nodeagent.Run(ctx, cfg)
		},
	}
}

func podExecCommand() *cli.Command {
	return &cli.Command{
		Name:      "pod-exec",
		Usage:     "internal: become a container process (run by the node agent under unshare)",
		Hidden:    true,
		ArgsUsage: "SPEC.json",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return errors.New("pod-exec: want exactly one SPEC argument")
			}
			err := nodeagent.RunPodExec(c.Args().First())
			fmt.Fprintln(os.Stderr, err)
			os.Exit(127)
			return nil
		},
	}
}

// infoServerCommand is a tiny workload for infrastructure tests: GET /
// answers with the process's view (namespaces, env, files), GET /exit?code=N
// exits with N (to test restarts).
func infoServerCommand() *cli.Command {
	return &cli.Command{
		Name:   "info-server",
		Usage:  "internal: test workload answering with its namespaces and environment",
		Hidden: true,
		Flags:  []cli.Flag{&cli.StringFlag{Name: "listen", Value: ":8080"}},
		Action: func(c *cli.Context) error {
			mux := http.NewServeMux()
			mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
				netns, _ := os.Readlink("/proc/self/ns/net")
				mntns, _ := os.Readlink("/proc/self/ns/mnt")
				token, _ := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/token")
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]string{
					"netns": netns, "mntns": mntns, "hostname": os.Getenv("HOSTNAME"),
					"node": os.Getenv("NODE_NAME"), "podIP": os.Getenv("POD_IP"),
					"tokenBytes": fmt.Sprint(len(token)), "remote": r.RemoteAddr,
				})
			})
			mux.HandleFunc("/exit", func(w http.ResponseWriter, r *http.Request) {
				code, _ := strconv.Atoi(r.URL.Query().Get("code"))
				fmt.Printf("exiting with %d on request\n", code)
				os.Exit(code)
			})
			fmt.Printf("info-server listening on %s\n", c.String("listen"))
			return (&http.Server{Addr: c.String("listen"), Handler: mux, ReadHeaderTimeout: 10 * time.Second}).ListenAndServe()
		},
	}
}

// imageCommand writes a one-layer OCI image archive from host files: the
// test bed's small images (a static binary and the directories it needs)
// when the product image of `make image` is not wanted.
func imageCommand() *cli.Command {
	return &cli.Command{
		Name:  "image",
		Usage: "write an OCI image archive holding host files (FILE=PATH-IN-IMAGE...)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "ref", Required: true, Usage: "image reference, e.g. longhornio/longhorn:v0.1.0-dev"},
			&cli.StringFlag{Name: "out", Required: true, Usage: "archive to write"},
			&cli.StringSliceFlag{Name: "dir", Usage: "empty directory in the image (repeatable)"},
			&cli.StringSliceFlag{Name: "env", Usage: "image config environment KEY=VALUE (repeatable)"},
		},
		ArgsUsage: "HOSTFILE=/PATH/IN/IMAGE...",
		Action: func(c *cli.Context) error {
			spec := cluster.ImageSpec{Ref: c.String("ref"), Env: c.StringSlice("env")}
			for _, d := range c.StringSlice("dir") {
				spec.Files = append(spec.Files, cluster.ImageFile{Path: d, Dir: true})
			}
			for _, a := range c.Args().Slice() {
				src, dst, ok := strings.Cut(a, "=")
				if !ok {
					return fmt.Errorf("%q: want HOSTFILE=/PATH/IN/IMAGE", a)
				}
				st, err := os.Stat(src)
				if err != nil {
					return err
				}
				spec.Files = append(spec.Files, cluster.ImageFile{Path: dst, Source: src, Mode: st.Mode().Perm()})
			}
			if err := cluster.WriteOCIArchive(c.String("out"), spec); err != nil {
				return err
			}
			printf("wrote %s (%s)", c.String("out"), cluster.NormalizeRef(spec.Ref))
			return nil
		},
	}
}

// helmInstall installs the chart with the real helm CLI and waits until
// every defaultSettings key of the values file has reached its Setting
// (Longhorn's camelCase key -> kebab-case setting name).
func helmInstall(ctx context.Context, c *cluster.Config, helm, chart, values string, timeout time.Duration) error {
	abs, err := filepath.Abs(chart)
	if err != nil {
		return err
	}
	r := cluster.HelmRelease{Helm: helm, Chart: abs, Timeout: timeout}
	want := map[string]string{}
	if values != "" {
		r.ValuesFiles = []string{values}
		b, err := os.ReadFile(values)
		if err != nil {
			return err
		}
		var v struct {
			DefaultSettings map[string]any `json:"defaultSettings"`
		}
		if err := yaml.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("%s: %w", values, err)
		}
		for k, val := range v.DefaultSettings {
			if val != nil {
				want[kebab(k)] = fmt.Sprint(val)
			}
		}
	}
	if err := cluster.HelmInstall(ctx, c, r, printf); err != nil {
		return err
	}
	if err := cluster.WaitSettings(ctx, c, "longhorn-system", want, 2*time.Minute); err != nil {
		return err
	}
	printf("helm: %d defaultSettings of %s reached their Setting objects (kubectl -n longhorn-system get settings)", len(want), values)
	return cluster.WaitDaemonSets(ctx, c, timeout, printf)
}

// kebab turns Longhorn's defaultSettings key (replicaReplenishmentWaitInterval)
// into the setting name (replica-replenishment-wait-interval); a run of
// capitals is one word (guaranteedInstanceManagerCPU -> ...-cpu).
func kebab(k string) string {
	var b strings.Builder
	for i, r := range k {
		upper := r >= 'A' && r <= 'Z'
		if upper && i > 0 {
			prevUpper := k[i-1] >= 'A' && k[i-1] <= 'Z'
			nextLower := i+1 < len(k) && k[i+1] >= 'a' && k[i+1] <= 'z'
			if !prevUpper || nextLower {
				b.WriteByte('-')
			}
		}
		if upper {
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// writeStorageNAD writes an example NetworkAttachmentDefinition for the
// storage network into the state directory and says how to use it.
func writeStorageNAD(c *cluster.Config) error {
	p := filepath.Join(c.StateDir, "storage-nad.yaml")
	if err := os.WriteFile(p, []byte(c.StorageNAD("kube-system", "storage-network")), 0o644); err != nil {
		return err
	}
	printf("storage network %s on %s: kubectl apply -f %s, then (volumes detached) set the storage-network setting to kube-system/storage-network",
		c.StorageSubnet, c.StorageBridge(), p)
	return nil
}
