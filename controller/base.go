// Package controller holds the manager's controllers: one root kind each,
// client-go workqueues in the sample-controller shape, and a
// reconcile(ctx, key) (Result, error) contract borrowed from
// controller-runtime. Decisions live in pure functions (package lifecycle,
// package scheduler and the decide* functions here); controllers observe the
// cache, decide, then act.
package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Result tells the worker loop what to do after a successful reconcile.
// RequeueAfter > 0 means "look again after this long" (polling an outside
// process, waiting for a timer); zero means done until the next event.
type Result struct {
	RequeueAfter time.Duration
}

// Named results for common waits.
var (
	// Done: nothing more to do until something changes.
	Done = Result{}
	// WaitShort: waiting for another process (instance manager, engine) to
	// report a state change that is not delivered as a watch event.
	WaitShort = Result{RequeueAfter: 2 * time.Second}
)

// After returns a Result that requeues after d.
func After(d time.Duration) Result { return Result{RequeueAfter: d} }

// terminalError marks an error that retrying cannot fix (an invalid spec).
type terminalError struct{ err error }

func (e *terminalError) Error() string { return "terminal: " + e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

// Terminal wraps err so that the worker logs it and does not retry; the
// reconcile should also record it in a condition or an event.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// IsTerminal reports whether err was wrapped with Terminal.
func IsTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}

// ReconcileFunc reconciles the object named by key ("namespace/name").
// Contract: return an error to retry with backoff, or a Result; never both
// (the error wins and the Result is ignored). A NotFound root object returns
// Done, nil.
type ReconcileFunc func(ctx context.Context, key string) (Result, error)

// Rate limiter bounds: per-item exponential backoff from 5 ms doubling up to
// 60 s, combined (max-of) with a 100 qps / burst 1000 bucket for the whole
// queue. Longhorn caps the per-item backoff at 1000 s; 60 s keeps a key that
// waits on another node (ownership hand-over, conflicts) responsive.
const (
	backoffBase = 5 * time.Millisecond
	backoffMax  = 60 * time.Second
)

// newRateLimiter returns the max-of limiter described above.
func newRateLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](backoffBase, backoffMax),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(100), 1000)},
	)
}

// Worker is the sample-controller loop for one controller: a rate-limited
// queue of keys, N goroutines calling the reconcile function, Forget on
// success, AddRateLimited on error, and no key ever dropped after a number of
// retries.
type Worker struct {
	name      string
	queue     workqueue.TypedRateLimitingInterface[string]
	reconcile ReconcileFunc
	log       *logrus.Entry
}

// NewWorker returns a worker whose queue is named after the controller.
func NewWorker(name string, reconcile ReconcileFunc) *Worker {
	q := workqueue.NewTypedRateLimitingQueueWithConfig(newRateLimiter(),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
	return &Worker{name: name, queue: q, reconcile: reconcile, log: logrus.WithField("controller", name)}
}

// Enqueue adds a key now.
func (w *Worker) Enqueue(key string) { w.queue.Add(key) }

// EnqueueAfter adds a key after d.
func (w *Worker) EnqueueAfter(key string, d time.Duration) { w.queue.AddAfter(key, d) }

// EnqueueObject adds the key of a cache object (or a tombstone).
func (w *Worker) EnqueueObject(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		runtime.HandleError(fmt.Errorf("%s: cannot get key of %T: %w", w.name, obj, err))
		return
	}
	w.queue.Add(key)
}

// Len returns the number of queued keys (for tests).
func (w *Worker) Len() int { return w.queue.Len() }

// Run waits for the caches, starts `workers` goroutines and blocks until ctx
// is done; then it shuts the queue down and waits for the workers to finish
// their current item.
func (w *Worker) Run(ctx context.Context, workers int, synced ...cache.InformerSynced) error {
	defer w.queue.ShutDown()
	if !cache.WaitForNamedCacheSync(w.name, ctx.Done(), synced...) {
		return fmt.Errorf("%s: caches did not sync: %w", w.name, ctx.Err())
	}
	done := make(chan struct{})
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for w.processNextWorkItem(ctx) {
			}
		}()
	}
	w.log.WithField("workers", workers).Info("Started controller")
	<-ctx.Done()
	w.queue.ShutDown()
	for range workers {
		<-done
	}
	w.log.Info("Stopped controller")
	return nil
}

// processNextWorkItem handles one key. It returns false when the queue is
// shut down.
func (w *Worker) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := w.queue.Get()
	if shutdown {
		return false
	}
	defer w.queue.Done(key)
	res, err := w.reconcileSafely(ctx, key)
	w.handleResult(key, res, err)
	return true
}

// reconcileSafely calls the reconcile function with a logger for the key in
// the context, turning a panic into an error so one bad object cannot stop
// the worker.
func (w *Worker) reconcileSafely(ctx context.Context, key string) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in reconcile: %v", r)
		}
	}()
	ctx = WithLogger(ctx, w.log.WithField("key", key))
	return w.reconcile(ctx, key)
}

// handleResult is the outcome reporter: every reconcile ends here.
func (w *Worker) handleResult(key string, res Result, err error) {
	log := w.log.WithField("key", key)
	switch {
	case err != nil && IsTerminal(err):
		log.WithError(err).Error("Reconcile failed; not retrying until the object changes")
		w.queue.Forget(key)
	case err != nil && apierrors.IsConflict(err):
		// Another writer (often another manager) got there first.
		log.WithError(err).Debug("Reconcile hit a conflict; retrying")
		w.queue.AddRateLimited(key)
	case err != nil:
		log.WithError(err).WithField("retries", w.queue.NumRequeues(key)).Warn("Reconcile failed; retrying")
		w.queue.AddRateLimited(key)
	case res.RequeueAfter > 0:
		w.queue.Forget(key)
		w.queue.AddAfter(key, res.RequeueAfter)
	default:
		w.queue.Forget(key)
	}
}

type loggerKey struct{}

// WithLogger returns ctx carrying log.
func WithLogger(ctx context.Context, log *logrus.Entry) context.Context {
	return context.WithValue(ctx, loggerKey{}, log)
}

// LoggerFrom returns the logger in ctx, or the standard logger.
func LoggerFrom(ctx context.Context) *logrus.Entry {
	if l, ok := ctx.Value(loggerKey{}).(*logrus.Entry); ok {
		return l
	}
	return logrus.NewEntry(logrus.StandardLogger())
}
