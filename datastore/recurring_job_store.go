package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// RecurringJobInformer returns the shared informer of RecurringJob objects, for event handlers.
func (ds *DataStore) RecurringJobInformer() cache.SharedIndexInformer {
	return ds.recurringJobs.informer
}

// GetRecurringJob returns a deep copy of the cached RecurringJob name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetRecurringJob(_ context.Context, name string) (*longhorn.RecurringJob, error) {
	return ds.recurringJobs.get(name)
}

// GetRecurringJobRO returns the cached RecurringJob name itself. It must not be modified.
func (ds *DataStore) GetRecurringJobRO(_ context.Context, name string) (*longhorn.RecurringJob, error) {
	return ds.recurringJobs.getRO(name)
}

// ListRecurringJobsRO returns the cached RecurringJobs matching selector (nil = all); read-only.
func (ds *DataStore) ListRecurringJobsRO(_ context.Context, selector labels.Selector) ([]*longhorn.RecurringJob, error) {
	return ds.recurringJobs.listRO(selector)
}

// CreateRecurringJob creates a RecurringJob (in the store's namespace when obj has none).
func (ds *DataStore) CreateRecurringJob(ctx context.Context, obj *longhorn.RecurringJob) (*longhorn.RecurringJob, error) {
	return ds.recurringJobs.create(ctx, obj)
}

// UpdateRecurringJob writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateRecurringJob(ctx context.Context, obj *longhorn.RecurringJob) (*longhorn.RecurringJob, error) {
	return ds.recurringJobs.update(ctx, obj)
}

// UpdateRecurringJobStatus writes obj's status (the status subresource).
func (ds *DataStore) UpdateRecurringJobStatus(ctx context.Context, obj *longhorn.RecurringJob) (*longhorn.RecurringJob, error) {
	return ds.recurringJobs.updateStatus(ctx, obj)
}

// DeleteRecurringJob deletes the RecurringJob name.
func (ds *DataStore) DeleteRecurringJob(ctx context.Context, name string) error {
	return ds.recurringJobs.delete(ctx, name)
}
