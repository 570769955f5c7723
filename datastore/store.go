package datastore

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// object is what every Longhorn kind's pointer type satisfies: a runtime and
// meta object with a typed DeepCopy.
type object[T any] interface {
	*T
	runtime.Object
	metav1.Object
	DeepCopy() *T
}

// writer is the write half of a generated typed client (e.g. VolumeInterface),
// plus its Get for the rare read that must not see a stale cache.
type writer[P any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (P, error)
	Create(ctx context.Context, obj P, opts metav1.CreateOptions) (P, error)
	Update(ctx context.Context, obj P, opts metav1.UpdateOptions) (P, error)
	UpdateStatus(ctx context.Context, obj P, opts metav1.UpdateOptions) (P, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// store is the cache-plus-client core shared by every kind's store. Reads come
// from the informer's indexer; RO methods return the cache pointers, the
// others deep copies. Writes go to the API server through the typed client.
type store[T any, P object[T]] struct {
	namespace string
	resource  schema.GroupResource
	informer  cache.SharedIndexInformer
	client    writer[P]
}

func newStore[T any, P object[T]](namespace string, gr schema.GroupResource,
	inf cache.SharedIndexInformer, client writer[P]) *store[T, P] {
	return &store[T, P]{namespace: namespace, resource: gr, informer: inf, client: client}
}

// getRO returns the cached object; NotFound is an apierrors NotFound error.
func (s *store[T, P]) getRO(name string) (P, error) {
	obj, exists, err := s.informer.GetIndexer().GetByKey(s.namespace + "/" + name)
	if err != nil {
		return nil, fmt.Errorf("get %s %q from cache: %w", s.resource, name, err)
	}
	if !exists {
		return nil, apierrors.NewNotFound(s.resource, name)
	}
	p, ok := obj.(P)
	if !ok {
		return nil, fmt.Errorf("cache holds %T for %s %q", obj, s.resource, name)
	}
	return p, nil
}

func (s *store[T, P]) get(name string) (P, error) {
	p, err := s.getRO(name)
	if err != nil {
		return nil, err
	}
	return p.DeepCopy(), nil
}

// listRO returns the cached objects matching selector (nil = everything).
func (s *store[T, P]) listRO(selector labels.Selector) ([]P, error) {
	if selector == nil {
		selector = labels.Everything()
	}
	var out []P
	err := cache.ListAllByNamespace(s.informer.GetIndexer(), s.namespace, selector, func(o any) {
		if p, ok := o.(P); ok {
			out = append(out, p)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.resource, err)
	}
	return out, nil
}

// byIndexRO returns the cached objects whose index entry equals value.
func (s *store[T, P]) byIndexRO(index, value string) ([]P, error) {
	objs, err := s.informer.GetIndexer().ByIndex(index, value)
	if err != nil {
		return nil, fmt.Errorf("list %s by %s=%q: %w", s.resource, index, value, err)
	}
	out := make([]P, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(P); ok && p.GetNamespace() == s.namespace {
			out = append(out, p)
		}
	}
	return out, nil
}

// getLive reads name from the API server, not the cache: for a read that
// must see this manager's own write of a moment ago (read-your-writes).
func (s *store[T, P]) getLive(ctx context.Context, name string) (P, error) {
	return s.client.Get(ctx, name, metav1.GetOptions{})
}

func (s *store[T, P]) create(ctx context.Context, obj P) (P, error) {
	if obj.GetNamespace() == "" {
		obj.SetNamespace(s.namespace)
	}
	out, err := s.client.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create %s %q: %w", s.resource, obj.GetName(), err)
	}
	return out, nil
}

func (s *store[T, P]) update(ctx context.Context, obj P) (P, error) {
	out, err := s.client.Update(ctx, obj, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update %s %q: %w", s.resource, obj.GetName(), err)
	}
	return out, nil
}

func (s *store[T, P]) updateStatus(ctx context.Context, obj P) (P, error) {
	out, err := s.client.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update status of %s %q: %w", s.resource, obj.GetName(), err)
	}
	return out, nil
}

func (s *store[T, P]) delete(ctx context.Context, name string) error {
	if err := s.client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete %s %q: %w", s.resource, name, err)
	}
	return nil
}
