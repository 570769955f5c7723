package controller

import (
	"context"
	"time"

	"github.com/longhorn-go/longhorn/engineapi"
)

// imTarget is what one instance-manager monitor watches: the instance
// manager at Addr; Key is its queue key.
type imTarget struct {
	Key  string
	Addr engineapi.IMAddress
}

// imMonitors run one InstanceWatch stream per running instance manager this
// manager owns. A stream only enqueues the instance manager's key; the
// reconcile lists the instances and writes status.
type imMonitors = monitors[imTarget, struct{}]

func newIMMonitors(api instanceAPI, enqueue func(string)) *imMonitors {
	return newMonitors(func(ctx context.Context, t imTarget, _ func(struct{})) {
		watchInstanceManager(ctx, api, t, enqueue)
	})
}

// watchInstanceManager keeps an InstanceWatch stream open, enqueueing the
// key after each (re)subscription and on every event, with a 1 s pause
// between attempts.
func watchInstanceManager(ctx context.Context, api instanceAPI, t imTarget, enqueue func(string)) {
	for ctx.Err() == nil {
		if client, err := api.InstanceManager(ctx, t.Addr); err == nil {
			if w, err := client.InstanceWatch(ctx); err == nil {
				enqueue(t.Key)
				for {
					if _, err := w.Recv(); err != nil {
						break
					}
					enqueue(t.Key)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
