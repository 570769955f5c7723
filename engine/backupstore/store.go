package backupstore

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"
)

// Options tune a Store. Zero values take Longhorn's defaults; tests shorten
// the lock timing.
type Options struct {
	LockDuration        time.Duration // default LockDuration (150 s)
	LockRefreshInterval time.Duration // default LockRefreshInterval (60 s)
	LockMaxWait         time.Duration // default LockMaxWait (30 s)
	LockCheckInterval   time.Duration // default LockCheckInterval (10 s)
	LockCheckWait       time.Duration // default LockCheckWait (2 s); negative = none
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Log receives warnings that do not fail an operation.
	Log logrus.FieldLogger
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.LockDuration, LockDuration)
	def(&o.LockRefreshInterval, LockRefreshInterval)
	def(&o.LockMaxWait, LockMaxWait)
	def(&o.LockCheckInterval, LockCheckInterval)
	def(&o.LockCheckWait, LockCheckWait)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = logrus.StandardLogger()
	}
	return o
}

// Store is a Longhorn backupstore on one target: backups, restores,
// deletion and inspection of backup volumes. It is safe for concurrent use;
// operations on one volume coordinate through the store's lock files, so
// several processes (and Longhorn itself) may share a target.
type Store struct {
	d    Driver
	opts Options
}

// New returns a Store on an opened driver.
func New(d Driver, opts Options) *Store { return &Store{d: d, opts: opts.withDefaults()} }

// Open opens the driver for target (see OpenDriver) and returns a Store.
func Open(ctx context.Context, target string, cred Credential, opts Options) (*Store, error) {
	d, err := OpenDriver(ctx, target, cred)
	if err != nil {
		return nil, err
	}
	return New(d, opts), nil
}

// Driver returns the store's driver.
func (s *Store) Driver() Driver { return s.d }

// URL returns the target URL.
func (s *Store) URL() string { return s.d.URL() }

// Close closes the driver.
func (s *Store) Close() error { return s.d.Close() }
