package api

import (
	"context"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// NewEventInformer returns an (unstarted) informer of the Kubernetes Events
// in namespace, for Options.Events; the caller runs it (informer.Run or a
// factory Start) and waits for its sync before serving.
func NewEventInformer(kube kubernetes.Interface, namespace string, resync time.Duration) cache.SharedIndexInformer {
	f := informers.NewSharedInformerFactoryWithOptions(kube, resync, informers.WithNamespace(namespace))
	return f.Core().V1().Events().Informer()
}

// Event is an event resource (Longhorn's api/model.go Event): the
// Kubernetes Event as it is, and its type.
type Event struct {
	Resource
	Event     corev1.Event `json:"event"`
	EventType string       `json:"eventType"`
}

func (u urls) event(e *corev1.Event) Event {
	res := Resource{ID: e.Name, Type: "event", Links: map[string]string{"self": u.collection("events")}, Actions: map[string]string{}}
	return Event{Resource: res, Event: *e, EventType: e.Type}
}

// listEvents answers GET /v1/events: the Events of Longhorn's namespace
// (Longhorn's EventList), from the informer cache.
func (s *Server) listEvents(_ context.Context, _ *http.Request, u urls) (int, any, error) {
	var out []Event
	if s.opts.Events != nil {
		for _, o := range s.opts.Events.GetStore().List() {
			if e, ok := o.(*corev1.Event); ok {
				out = append(out, u.event(e))
			}
		}
	}
	return http.StatusOK, u.newCollection("event", "events", sortResources(out)), nil
}
