// Package datastore is the only way controllers, the webhook and the REST API
// read and write Longhorn objects. Reads come from shared informer caches;
// writes go to the API server.
//
// Read contract: GetX/ListX return deep copies the caller may change;
// GetXRO/ListXRO return the cache's own pointers, which must never be
// modified (only read-only objects cross into pure decide functions). Every
// method takes a context. The store is split per resource (volume_store.go,
// engine_store.go, ...) around one generic core (store.go), and holds only
// the kinds and accessors something outside the package calls: a controller
// that needs a new kind adds its store (a field, a line in initStores) and
// the typed accessors it calls, each one line over the generic core.
package datastore

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/informers/externalversions"
)

// DefaultResyncPeriod is the informer resync period used by New.
const DefaultResyncPeriod = 30 * time.Second

// DataStore holds the shared informer factory, the Longhorn clientset and
// one store per kind. Create it with New, register event handlers on the
// informers (e.g. VolumeInformer) and then call Start and WaitForCacheSync.
type DataStore struct {
	namespace string
	client    versioned.Interface
	factory   externalversions.SharedInformerFactory

	volumes           *store[volumeT, *volumeT]
	engines           *store[engineT, *engineT]
	replicas          *store[replicaT, *replicaT]
	nodes             *store[nodeT, *nodeT]
	instanceManagers  *store[instanceManagerT, *instanceManagerT]
	settings          *store[settingT, *settingT]
	engineImages      *store[engineImageT, *engineImageT]
	backupTargets     *store[backupTargetT, *backupTargetT]
	volumeAttachments *store[volumeAttachmentT, *volumeAttachmentT]
	recurringJobs     *store[recurringJobT, *recurringJobT]
	orphans           *store[orphanT, *orphanT]
	snapshots         *store[snapshotT, *snapshotT]
	backups           *store[backupT, *backupT]
	backupVolumes     *store[backupVolumeT, *backupVolumeT]
}

// New builds a DataStore for the objects in namespace (usually
// "longhorn-system"). Informers for every kind are created, with the
// by-node and by-volume indexers, but not started. resync 0 disables
// periodic resync. Errors come from adding indexers.
func New(namespace string, client versioned.Interface, resync time.Duration) (*DataStore, error) {
	factory := externalversions.NewSharedInformerFactoryWithOptions(client, resync,
		externalversions.WithNamespace(namespace))
	ds := &DataStore{namespace: namespace, client: client, factory: factory}
	ds.initStores()
	if err := ds.addIndexers(); err != nil {
		return nil, err
	}
	return ds, nil
}

// NewForConfig is New with a clientset built from cfg.
func NewForConfig(cfg *rest.Config, namespace string, resync time.Duration) (*DataStore, error) {
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("longhorn clientset: %w", err)
	}
	return New(namespace, client, resync)
}

// Namespace returns the namespace the store reads and writes.
func (ds *DataStore) Namespace() string { return ds.namespace }

// Client returns the Longhorn clientset, for watches and writes the store
// does not wrap. Prefer the store's methods.
func (ds *DataStore) Client() versioned.Interface { return ds.client }

// Start runs every informer until ctx is done. It returns at once.
func (ds *DataStore) Start(ctx context.Context) {
	ds.factory.Start(ctx.Done())
}

// WaitForCacheSync blocks until every informer has synced, or ctx is done
// (then it returns an error naming the informers that did not sync).
func (ds *DataStore) WaitForCacheSync(ctx context.Context) error {
	var unsynced []string
	for typ, ok := range ds.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			unsynced = append(unsynced, typ.String())
		}
	}
	if len(unsynced) > 0 {
		return fmt.Errorf("informer caches not synced: %v: %w", unsynced, context.Cause(ctx))
	}
	return nil
}

// informers lists every informer, for tests and health checks.
func (ds *DataStore) informers() []cache.SharedIndexInformer {
	return []cache.SharedIndexInformer{
		ds.volumes.informer, ds.engines.informer, ds.replicas.informer, ds.nodes.informer,
		ds.instanceManagers.informer, ds.settings.informer, ds.engineImages.informer,
		ds.volumeAttachments.informer, ds.backupTargets.informer, ds.recurringJobs.informer, ds.orphans.informer, ds.snapshots.informer,
		ds.backups.informer, ds.backupVolumes.informer,
	}
}
