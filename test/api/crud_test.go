package api_test

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/longhorn-go/longhorn/datastore"
)

// kindClient is the generated typed client of one kind (e.g. VolumeInterface).
type kindClient[P runtime.Object, L runtime.Object] interface {
	Create(ctx context.Context, obj P, opts metav1.CreateOptions) (P, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (P, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Update(ctx context.Context, obj P, opts metav1.UpdateOptions) (P, error)
	UpdateStatus(ctx context.Context, obj P, opts metav1.UpdateOptions) (P, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// kindCase drives one kind through its lifecycle.
type kindCase[P interface {
	runtime.Object
	metav1.Object
}] struct {
	// obj is a valid new object named name in ns.
	obj P
	// setSpec changes the spec (or value); specSet reports whether it shows.
	setSpec func(P)
	specSet func(P) bool
	// setStatus changes the status; statusSet reports whether it shows.
	setStatus func(P)
	statusSet func(P) bool
	// cached reads the object from the datastore (RO); nil for kinds the
	// datastore does not serve (nothing in the product reads them yet).
	cached func(ctx context.Context, ds *datastore.DataStore, name string) (P, error)
}

// exerciseKind: create, get, list, watch, update, update status (and that a
// plain update does not write status), datastore sees it, delete.
func exerciseKind[P interface {
	runtime.Object
	metav1.Object
}, L runtime.Object](t *testing.T, ds *datastore.DataStore, c kindClient[P, L], kc kindCase[P]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := kc.obj.GetName()
	// RV "0": start from the watch cache, never wait for it to catch up with etcd.
	w, err := c.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: "0"})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	created, err := c.Create(ctx, kc.obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	expectEvent(t, w, watch.Added, name)
	got, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil || got.GetUID() != created.GetUID() {
		t.Fatalf("get: %v (uid %v, want %v)", err, got.GetUID(), created.GetUID())
	}
	expectListed(t, ctx, c, name)

	kc.setSpec(got)
	updated, err := c.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil || !kc.specSet(updated) {
		t.Fatalf("update: %v, spec change kept: %v", err, err == nil && kc.specSet(updated))
	}
	expectEvent(t, w, watch.Modified, name)

	// Status goes through the subresource only.
	sneaky := updated.DeepCopyObject().(P)
	kc.setStatus(sneaky)
	if after, err := c.Update(ctx, sneaky, metav1.UpdateOptions{}); err != nil || kc.statusSet(after) {
		t.Fatalf("plain update wrote status (err %v)", err)
	}
	got, err = c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kc.setStatus(got)
	withStatus, err := c.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil || !kc.statusSet(withStatus) || !kc.specSet(withStatus) {
		t.Fatalf("update status: %v", err)
	}

	if kc.cached != nil {
		eventually(t, "datastore sees the status", func() bool {
			o, err := kc.cached(ctx, ds, name)
			return err == nil && kc.statusSet(o) && kc.specSet(o) && o.GetResourceVersion() == withStatus.GetResourceVersion()
		})
	}

	if err := c.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	expectEventually(t, w, watch.Deleted, name)
	if kc.cached != nil {
		eventually(t, "datastore sees the deletion", func() bool {
			_, err := kc.cached(ctx, ds, name)
			return apierrors.IsNotFound(err)
		})
	}
}

func expectListed[P runtime.Object, L runtime.Object](t *testing.T, ctx context.Context, c kindClient[P, L], name string) {
	t.Helper()
	list, err := c.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if m, _ := meta.Accessor(it); m != nil && m.GetName() == name {
			return
		}
	}
	t.Fatalf("list of %d items lacks %s", len(items), name)
}

// expectEvent reads the next watch event and checks its type and object name.
func expectEvent(t *testing.T, w watch.Interface, typ watch.EventType, name string) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch closed waiting for %s", typ)
		}
		m, err := meta.Accessor(ev.Object)
		if ev.Type != typ || err != nil || m.GetName() != name {
			t.Fatalf("watch event %s %v, want %s %s", ev.Type, ev.Object, typ, name)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s watch event within 30s", typ)
	}
}

// expectEventually skips other events until one of type typ arrives.
func expectEventually(t *testing.T, w watch.Interface, typ watch.EventType, name string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed waiting for %s", typ)
			}
			if m, err := meta.Accessor(ev.Object); ev.Type == typ && err == nil && m.GetName() == name {
				return
			}
		case <-timeout:
			t.Fatalf("no %s watch event within 30s", typ)
		}
	}
}
