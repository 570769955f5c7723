package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/longhorn-go/longhorn/datastore"
	"github.com/longhorn-go/longhorn/engineapi"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned/scheme"
)

// Options configure the controllers of one manager.
type Options struct {
	// NodeName is this manager's node (NODE_NAME) and its controller ID.
	NodeName string
	// Namespace holds every Longhorn object and pod (POD_NAMESPACE).
	Namespace string
	// EngineImage is the image of the longhorn binary that runs engines and
	// replicas (--engine-image); it becomes setting default-engine-image.
	EngineImage string
	// InstanceManagerImage is the instance-manager pod image
	// (--instance-manager-image).
	InstanceManagerImage string
	// InstanceManagerNoProxy starts instance-manager pods with --no-proxy
	// (an instance manager older than the engine proxy; upgrade tests).
	InstanceManagerNoProxy bool
	// ManagerImage is the manager's own image (--manager-image), which the
	// CronJobs of recurring jobs run; "" uses InstanceManagerImage (the
	// same product image).
	ManagerImage string
	// ServiceAccount runs the instance-manager pods and the recurring
	// jobs' CronJob pods (--service-account).
	ServiceAccount string
	// Workers per controller; 0 means 5 (Longhorn's).
	Workers int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// env is what every controller shares: options, clients and caches.
type env struct {
	opts     Options
	ds       *datastore.DataStore
	kube     kubernetes.Interface
	api      instanceAPI
	recorder record.EventRecorder

	kubeNodes  corelisters.NodeLister
	pods       corelisters.PodLister
	leases     coordlisters.LeaseLister
	configMaps corelisters.ConfigMapLister
	// pdbs are the namespace's PodDisruptionBudgets (the instance
	// managers', reconcilePDB).
	pdbs policylisters.PodDisruptionBudgetLister
	// storageClasses is cluster-wide (the default StorageClass).
	storageClasses storagelisters.StorageClassLister
	synced         []cache.InformerSynced

	kubeFactory informers.SharedInformerFactory
	nsFactory   informers.SharedInformerFactory

	// skipped records, by kind/name, the resourceVersion last reported as
	// skipped (one SkipReconcile event per version).
	skipped sync.Map
}

func (e *env) now() time.Time { return e.opts.Now() }

// Manager runs every controller of one node.
type Manager struct {
	env         *env
	controllers []runner
	broadcaster record.EventBroadcaster
}

// runner is a controller as the manager starts it.
type runner interface {
	run(ctx context.Context, workers int) error
}

// New wires the controllers. Nothing runs until Run.
func New(opts Options, kube kubernetes.Interface, ds *datastore.DataStore, api *engineapi.Handler) (*Manager, error) {
	return newManager(opts, kube, ds, handlerAPI{api})
}

// newManager is New over any instanceAPI (the fixture tests' fake).
func newManager(opts Options, kube kubernetes.Interface, ds *datastore.DataStore, api instanceAPI) (*Manager, error) {
	if opts.NodeName == "" || opts.Namespace == "" {
		return nil, errors.New("controller options: NodeName and Namespace are required")
	}
	if opts.Workers == 0 {
		opts.Workers = 5
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	kf := informers.NewSharedInformerFactory(kube, 0)
	nf := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(opts.Namespace))
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events(opts.Namespace)})
	e := &env{
		opts: opts, ds: ds, kube: kube, api: api,
		recorder:       b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "longhorn-manager", Host: opts.NodeName}),
		kubeNodes:      kf.Core().V1().Nodes().Lister(),
		pods:           nf.Core().V1().Pods().Lister(),
		leases:         nf.Coordination().V1().Leases().Lister(),
		configMaps:     nf.Core().V1().ConfigMaps().Lister(),
		pdbs:           nf.Policy().V1().PodDisruptionBudgets().Lister(),
		storageClasses: kf.Storage().V1().StorageClasses().Lister(),
		synced: []cache.InformerSynced{
			kf.Core().V1().Nodes().Informer().HasSynced, nf.Core().V1().Pods().Informer().HasSynced,
			nf.Coordination().V1().Leases().Informer().HasSynced, nf.Core().V1().ConfigMaps().Informer().HasSynced,
			kf.Storage().V1().StorageClasses().Informer().HasSynced, nf.Policy().V1().PodDisruptionBudgets().Informer().HasSynced,
		},
		kubeFactory: kf, nsFactory: nf,
	}
	m := &Manager{env: e, broadcaster: b}
	cs, err := newControllers(e)
	if err != nil {
		return nil, err
	}
	m.controllers = cs
	return m, nil
}

// newControllers builds every controller and registers its event handlers.
func newControllers(e *env) ([]runner, error) {
	var out []runner
	builders := []func(*env) (runner, error){
		newSettingController, newNodeController, newInstanceManagerController,
		newVolumeController, newVolumeAttachmentController, newEngineController, newReplicaController,
		newKubernetesConfigMapController, newEngineImageController,
		newBackupTargetController, newBackupVolumeController, newBackupController, newSnapshotController,
		newRecurringJobController, newOrphanController,
	}
	for _, b := range builders {
		c, err := b(e)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Run starts the informers, the lease heartbeat and every controller, and
// blocks until ctx is done and every controller has stopped.
func (m *Manager) Run(ctx context.Context) error {
	defer m.broadcaster.Shutdown()
	e := m.env
	e.ds.Start(ctx)
	e.kubeFactory.Start(ctx.Done())
	e.nsFactory.Start(ctx.Done())
	if err := e.ds.WaitForCacheSync(ctx); err != nil {
		return err
	}
	if !cache.WaitForCacheSync(ctx.Done(), e.synced...) {
		return fmt.Errorf("kubernetes informer caches did not sync: %w", ctx.Err())
	}
	// Renew the lease before any controller runs, so no manager (this one
	// included) sees this node as missing its manager at start-up.
	if err := renewLease(ctx, e.kube, e.opts.Namespace, e.opts.NodeName, e.now()); err != nil {
		return fmt.Errorf("manager lease: %w", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runLeaseHeartbeat(ctx, e.kube, e.opts.Namespace, e.opts.NodeName, e.now)
	}()
	errs := make(chan error, len(m.controllers))
	for _, c := range m.controllers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- c.run(ctx, e.opts.Workers)
		}()
	}
	wg.Wait()
	e.kubeFactory.Shutdown()
	e.nsFactory.Shutdown()
	close(errs)
	var all []error
	for err := range errs {
		if err != nil {
			all = append(all, err)
		}
	}
	return errors.Join(all...)
}
