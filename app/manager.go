package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/longhorn-go/longhorn/api"
	"github.com/longhorn-go/longhorn/controller"
	"github.com/longhorn-go/longhorn/datastore"
	"github.com/longhorn-go/longhorn/engineapi"
	"github.com/longhorn-go/longhorn/internal/fstrim"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/metrics"
	"github.com/longhorn-go/longhorn/types"
	"github.com/longhorn-go/longhorn/webhook"
)

func init() { registerCommand(managerCommand()) }

func managerCommand() *cli.Command {
	return &cli.Command{
		Name:    "manager",
		Aliases: []string{"daemon"},
		Usage:   "run the Longhorn manager of one node: controllers, admission webhook, readiness endpoint",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "engine-image", EnvVars: []string{"ENGINE_IMAGE"}, Usage: "image of the longhorn binary that runs engines and replicas (setting default-engine-image)"},
			&cli.StringFlag{Name: "instance-manager-image", EnvVars: []string{"INSTANCE_MANAGER_IMAGE"}, Usage: "image of the instance-manager pods"},
			&cli.BoolFlag{Name: "instance-manager-no-proxy", EnvVars: []string{"LONGHORN_INSTANCE_MANAGER_NO_PROXY"},
				Usage: "start instance-manager pods as an instance manager older than the engine proxy (`instance-manager --no-proxy`), to test the upgrade path; a pod started otherwise (with or without --no-proxy) is replaced once it runs no instance"},
			&cli.StringFlag{Name: "manager-image", EnvVars: []string{"MANAGER_IMAGE"}, Usage: "image of the manager itself, run by the CronJobs of recurring jobs (empty: --instance-manager-image)"},
			&cli.StringFlag{Name: "service-account", Value: "longhorn-service-account", EnvVars: []string{"SERVICE_ACCOUNT"}, Usage: "service account of the instance-manager pods"},
			&cli.StringFlag{Name: "kubeconfig", EnvVars: []string{"KUBECONFIG"}, Usage: "kubeconfig file; empty means in-cluster"},
			&cli.StringFlag{Name: "node-name", EnvVars: []string{"NODE_NAME"}, Usage: "this manager's node (required)"},
			&cli.StringFlag{Name: "namespace", Value: types.DefaultNamespace, EnvVars: []string{"POD_NAMESPACE"}, Usage: "namespace of Longhorn's objects"},
			&cli.StringFlag{Name: "pod-ip", EnvVars: []string{"POD_IP"}, Usage: "address to serve on and put in certificates; empty means all addresses"},
			&cli.IntFlag{Name: "webhook-port", Value: webhook.DefaultPort, Usage: "admission webhook port (HTTPS)"},
			&cli.IntFlag{Name: "conversion-port", Value: 9501, Usage: "conversion webhook port (HTTPS); serves the readiness check /v1/healthz; 0 disables"},
			&cli.StringFlag{Name: "webhook-url", Usage: "https://HOST:PORT the API server uses for the webhook instead of Service " + webhook.ServiceName},
			&cli.IntFlag{Name: "readiness-port", Value: 9500, Usage: "HTTP port of the REST API /v1 (Service longhorn-backend) with /v1/healthz (liveness) and /v1/readyz (readiness); 0 disables it"},
			&cli.IntFlag{Name: "workers", Value: 5, Usage: "workers per controller"},
			&cli.StringFlag{Name: "blockdev-dev-dir", EnvVars: []string{"LONGHORN_BLOCKDEV_DEV_DIR"},
				Usage: "this node's /dev/longhorn (blockdev device nodes) as the manager sees it, for trimFilesystem; empty: /host/dev/longhorn in the manager pod, else /dev/longhorn"},
			&cli.BoolFlag{Name: "upgrade-version-check", Usage: "refuse to start when the installed version (Setting current-longhorn-version) cannot be upgraded to this one (Longhorn's upgrade path enforcement)"},
		},
		Action: runManager,
	}
}

// managerConfig is the validated command line.
type managerConfig struct {
	opts           controller.Options
	kubeconfig     string
	podIP          string
	webhookPort    int
	conversionPort int
	webhookURL     string
	readinessPort  int
	versionCheck   bool
	devDir         string
}

func parseManagerFlags(c *cli.Context) (managerConfig, error) {
	cfg := managerConfig{
		opts: controller.Options{NodeName: c.String("node-name"), Namespace: c.String("namespace"),
			EngineImage: c.String("engine-image"), InstanceManagerImage: c.String("instance-manager-image"),
			InstanceManagerNoProxy: c.Bool("instance-manager-no-proxy"), ManagerImage: c.String("manager-image"),
			ServiceAccount: c.String("service-account"), Workers: c.Int("workers")},
		kubeconfig: c.String("kubeconfig"), podIP: c.String("pod-ip"), webhookPort: c.Int("webhook-port"), conversionPort: c.Int("conversion-port"),
		webhookURL: c.String("webhook-url"), readinessPort: c.Int("readiness-port"),
		versionCheck: c.Bool("upgrade-version-check"), devDir: c.String("blockdev-dev-dir"),
	}
	switch {
	case cfg.opts.NodeName == "":
		return cfg, errors.New("--node-name (NODE_NAME) is required")
	case cfg.opts.EngineImage == "":
		return cfg, errors.New("--engine-image (ENGINE_IMAGE) is required")
	case cfg.opts.InstanceManagerImage == "":
		return cfg, errors.New("--instance-manager-image (INSTANCE_MANAGER_IMAGE) is required")
	case cfg.webhookPort < 1 || cfg.webhookPort > 65535:
		return cfg, fmt.Errorf("--webhook-port %d is outside 1-65535", cfg.webhookPort)
	case cfg.conversionPort < 0 || cfg.conversionPort > 65535:
		return cfg, fmt.Errorf("--conversion-port %d is outside 0-65535", cfg.conversionPort)
	case cfg.readinessPort < 0 || cfg.readinessPort > 65535:
		return cfg, fmt.Errorf("--readiness-port %d is outside 0-65535", cfg.readinessPort)
	case cfg.opts.Workers < 1:
		return cfg, fmt.Errorf("--workers %d must be at least 1", cfg.opts.Workers)
	}
	if cfg.podIP != "" && net.ParseIP(cfg.podIP) == nil {
		return cfg, fmt.Errorf("--pod-ip %q is not an IP address", cfg.podIP)
	}
	return cfg, nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}

// longhornClientset returns a longhorn.io clientset for kubeconfig (empty:
// in-cluster), for the one-shot subcommands (adopt, pre-upgrade).
func longhornClientset(kubeconfig string) (versioned.Interface, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return versioned.NewForConfig(cfg)
}

// managerRestConfig is the manager's client configuration; with
// --upgrade-version-check it first refuses a refused upgrade path. It makes
// client-go report to the manager's /metrics first: before the first client
// and workqueue exist (client-go keeps the first provider).
func managerRestConfig(ctx context.Context, cfg managerConfig) (*rest.Config, error) {
	metrics.RegisterKubeClientMetrics()
	rc, err := restConfig(cfg.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config: %w", err)
	}
	rc.QPS, rc.Burst = 100, 200
	// Longhorn's finalizer "longhorn.io" draws a warning on every write; say it once.
	rc.WarningHandler = rest.NewWarningWriter(os.Stderr, rest.WarningWriterOptions{Deduplicate: true})
	if cfg.versionCheck {
		if err := managerVersionCheck(ctx, rc, cfg.opts.Namespace); err != nil {
			return nil, err
		}
	}
	return rc, nil
}

func runManager(c *cli.Context) error {
	cfg, err := parseManagerFlags(c)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	rc, err := managerRestConfig(ctx, cfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ds, err := datastore.NewForConfig(rc, cfg.opts.Namespace, datastore.DefaultResyncPeriod)
	if err != nil {
		return err
	}
	engines, err := managerEngineHandler(ctx, kube, cfg.opts.Namespace)
	if err != nil {
		return err
	}
	defer engines.Close()
	m, err := controller.New(cfg.opts, kube, ds, engines)
	if err != nil {
		return err
	}
	var ready atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	events := api.NewEventInformer(kube, cfg.opts.Namespace, datastore.DefaultResyncPeriod)
	if cfg.readinessPort > 0 {
		// The REST API (/v1) with /v1/healthz and /v1/readyz; it answers 503
		// until the manager is ready.
		router := api.NewRouter(ds, apiOptions(cfg, kube, events, ready.Load, api.EngineSnapshots{DS: ds, Handler: engines}))
		engineMetrics := &engineapi.MetricsClient{}
		defer engineMetrics.Close()
		srv, err := serveHTTP(net.JoinHostPort(cfg.podIP, strconv.Itoa(cfg.readinessPort)),
			withMetrics(router, ds, kube, cfg.opts, engineMetrics))
		if err != nil {
			return err
		}
		defer shutdownHTTP(srv)
	}
	ds.Start(ctx)
	go events.Run(ctx.Done())
	if err := ds.WaitForCacheSync(ctx); err != nil {
		return err
	}
	if !cache.WaitForCacheSync(ctx.Done(), events.HasSynced) {
		return fmt.Errorf("event informer not synced: %w", context.Cause(ctx))
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	if err := startWebhook(ctx, cfg, kube, ds, webhook.NewNADLookup(dyn), ready.Load, &wg, errs); err != nil {
		return err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs <- m.Run(ctx)
	}()
	ready.Store(true)
	logrus.WithFields(logrus.Fields{"node": cfg.opts.NodeName, "namespace": cfg.opts.Namespace}).Info("Manager started")
	var runErr error
	select {
	case <-ctx.Done():
		logrus.Info("Manager: signal received, shutting down")
	case runErr = <-errs:
		logrus.WithError(runErr).Error("Manager: component failed, shutting down")
		stop()
	}
	ready.Store(false)
	wg.Wait()
	return runErr
}

// startWebhook makes sure the CA exists, serves the admission webhook with a
// certificate for the Service names and the pod IP, and points the webhook
// configurations at it.
func startWebhook(ctx context.Context, cfg managerConfig, kube kubernetes.Interface, ds *datastore.DataStore,
	nads webhook.NADLookup, ready func() bool, wg *sync.WaitGroup, errs chan<- error) error {
	ca, err := webhook.EnsureCA(ctx, kube, cfg.opts.Namespace, time.Now())
	if err != nil {
		return err
	}
	var ips []net.IP
	if ip := net.ParseIP(cfg.podIP); ip != nil {
		ips = append(ips, ip)
	}
	cert, err := ca.ServingCert(time.Now(), webhook.ServiceDNSNames(webhook.ServiceName, cfg.opts.Namespace), ips)
	if err != nil {
		return err
	}
	reg := webhook.NewRegistryFor(ds, cfg.opts.EngineImage, webhook.WithNADLookup(nads))
	reg.Ready = ready
	ports := []int{cfg.webhookPort}
	if cfg.conversionPort > 0 {
		ports = append(ports, cfg.conversionPort)
	}
	for _, port := range ports {
		srv, err := webhook.Listen(ctx, net.JoinHostPort(cfg.podIP, strconv.Itoa(port)), cert, reg)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(ctx); err != nil {
				errs <- fmt.Errorf("webhook on port %d: %w", port, err)
			}
		}()
	}
	ep := webhook.Endpoint{Namespace: cfg.opts.Namespace, Service: webhook.ServiceName, Port: int32(cfg.webhookPort), URL: cfg.webhookURL}
	return retryConflict(ctx, func() error { return reg.EnsureConfigurations(ctx, kube, ep, ca.CertPEM) })
}

// retryConflict retries fn a few times while managers race on the same
// webhook configuration.
func retryConflict(ctx context.Context, fn func() error) error {
	var err error
	for i := range 5 {
		if err = fn(); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(100*(i+1)) * time.Millisecond):
		}
	}
	return err
}

// apiOptions are the REST API's options that come from the command line
// and the clients (ready and the engine snapshot operations given):
// trimFilesystem trims through this node's /dev/longhorn
// (--blockdev-dev-dir) and forwards to the manager pods of other nodes.
func apiOptions(cfg managerConfig, kube kubernetes.Interface, events cache.SharedIndexInformer, ready func() bool,
	snapshots api.SnapshotOps) api.Options {
	host := fstrim.DefaultHost(cfg.devDir)
	return api.Options{Ready: ready, Snapshots: snapshots, Kube: kube, Events: events, EngineImage: cfg.opts.EngineImage,
		NodeName:       cfg.opts.NodeName,
		Trim:           func(v string) (uint64, error) { r, err := host.Trim(v); return r.Trimmed, err },
		ManagerAddress: api.ManagerPodAddress(kube, cfg.opts.Namespace)}
}

// serveHTTP serves h on addr (the REST API port) until shut down.
// withMetrics serves Prometheus metrics (GET /metrics) beside the API, as
// Longhorn does on port 9500.
// The instance managers' CPU and memory come from the host's proc file
// system (/host/proc in the manager pod, else /proc), the manager's from its
// own.
func withMetrics(router http.Handler, ds *datastore.DataStore, kube kubernetes.Interface, opts controller.Options, engines *engineapi.MetricsClient) http.Handler {
	hostProc := "/host/proc"
	if _, err := os.Stat(filepath.Join(hostProc, "uptime")); err != nil {
		hostProc = "/proc"
	}
	pod := func(ctx context.Context, name string) (*corev1.Pod, error) {
		return kube.CoreV1().Pods(opts.Namespace).Get(ctx, name, metav1.GetOptions{})
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler(metrics.Options{Source: metrics.DataStoreSource{DS: ds},
		NodeName: opts.NodeName, Engine: engines.EngineMetrics, Procs: &metrics.UsageMeter{Root: hostProc}, Pod: pod,
		Self: &metrics.UsageMeter{}, SelfPID: os.Getpid(), ManagerName: os.Getenv("POD_NAME")}))
	mux.Handle("/", router)
	return mux
}

func serveHTTP(addr string, h http.Handler) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("API listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "API server: %v\n", err)
		}
	}()
	return srv, nil
}

func shutdownHTTP(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
}
