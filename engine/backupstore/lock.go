package backupstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Lock types of Longhorn's lock files (lock.go: BACKUP_LOCK = RESTORE_LOCK = 1,
// DELETION_LOCK = 2). Locks of different types exclude each other; locks of
// the same type do not.
const (
	LockTypeBackup   = 1
	LockTypeRestore  = 1
	LockTypeDeletion = 2
)

// Lock operations. Longhorn's lock file has no such field; ours adds
// "Operation" (Longhorn ignores unknown fields), and two locks that both say
// "backup" exclude each other too, so concurrent backups of one volume run
// one after the other instead of racing on volume.cfg. A lock without the
// field (written by Longhorn) follows Longhorn's rule only.
const (
	opBackup  = "backup"
	opRestore = "restore"
	opDelete  = "delete"
)

// Longhorn's lock timing (lock.go).
const (
	LockDuration        = 150 * time.Second // a lock not refreshed for this long is expired
	LockRefreshInterval = 60 * time.Second
	LockMaxWait         = 30 * time.Second // give up on a conflicting lock of another type
	LockCheckInterval   = 10 * time.Second
	LockCheckWait       = 2 * time.Second // wait after creating the file, before looking at the others
)

// lockFile is the JSON of locks/lock-<16 hex>.lck: Longhorn's exported
// FileLock fields plus our Operation.
type lockFile struct {
	Name      string
	Type      int
	Acquired  bool
	Operation string `json:",omitempty"`
}

// serverLock is a lock file as found in the store, with its modification time.
type serverLock struct {
	lockFile
	serverTime time.Time
}

// Lock is one held or wanted lock on a backup volume.
type Lock struct {
	s      *Store
	volume string
	file   lockFile

	mu         sync.Mutex
	serverTime time.Time
	created    time.Time // when create wrote the file
	// sawOther: a lock of another type (a deletion, for a backup) was in the
	// store right after create or at a check; only such a lock's holder can
	// have changed the store (removed blocks) before this lock was acquired
	sawOther bool
	// sawSame: a lock that this one waits behind by our backup-after-backup
	// rule was in the store right after create, or came first at a check
	sawSame bool
	stop    chan struct{}
	done    chan struct{}
}

func (s *Store) newLock(volume string, typ int, op string) *Lock {
	return &Lock{s: s, volume: volume, file: lockFile{Name: GenerateName(lockPrefix), Type: typ, Operation: op}}
}

// compareLocks orders locks as Longhorn does: acquired first, then by the
// server's modification time, then by name.
func compareLocks(a, b serverLock) int {
	if a.Acquired != b.Acquired {
		if a.Acquired {
			return -1
		}
		return 1
	}
	switch {
	case a.serverTime.Before(b.serverTime):
		return -1
	case a.serverTime.After(b.serverTime):
		return 1
	}
	return strings.Compare(a.Name, b.Name)
}

// conflict says whether lock o keeps me from acquiring: typeConflict is
// Longhorn's rule, opConflict our backup-after-backup rule.
func conflict(me, o lockFile) (typeConflict, opConflict bool) {
	return o.Type != me.Type, o.Type == me.Type && me.Operation == opBackup && o.Operation == opBackup
}

// blockers returns the unexpired conflicting locks that come before me.
func blockers(me serverLock, locks []serverLock, now time.Time, expiry time.Duration) (typ, op []serverLock) {
	for _, o := range locks {
		if o.Name == me.Name || now.Sub(o.serverTime) > expiry {
			continue
		}
		tc, oc := conflict(me.lockFile, o.lockFile)
		if (tc || oc) && compareLocks(o, me) < 0 {
			if tc {
				typ = append(typ, o)
			} else {
				op = append(op, o)
			}
		}
	}
	return typ, op
}

func (l *Lock) save(ctx context.Context) error {
	p := lockPath(l.volume, l.file.Name)
	if err := saveConfig(ctx, l.s.d, p, &l.file); err != nil {
		return fmt.Errorf("save lock %s: %w", p, err)
	}
	fi, err := l.s.d.Stat(ctx, p)
	if err != nil {
		return fmt.Errorf("stat lock %s: %w", p, err)
	}
	l.mu.Lock()
	l.serverTime = fi.ModTime
	l.mu.Unlock()
	return nil
}

func (l *Lock) remove(ctx context.Context) error {
	return l.s.d.Remove(ctx, lockPath(l.volume, l.file.Name))
}

// Acquire creates the lock file and waits until no conflicting lock comes
// first (Longhorn's FileLock.Lock): a lock of another type that outlasts
// LockMaxWait fails with ErrLocked naming it; another backup of the same
// volume is waited for as long as ctx allows. The held lock is refreshed
// every LockRefreshInterval until Release.
func (l *Lock) Acquire(ctx context.Context) error {
	if err := l.create(ctx); err != nil {
		return err
	}
	return l.wait(ctx)
}

// create writes the lock file (not acquired yet); wait then acquires it.
// Between the two the caller may read the store (never write it): what it
// read must be read again once the lock is held.
func (l *Lock) create(ctx context.Context) error {
	if err := l.save(ctx); err != nil {
		return err
	}
	l.created = time.Now()
	locks, err := l.s.listLocks(ctx, l.volume)
	if err != nil {
		return l.abandon(err)
	}
	l.noteOthers(locks)
	for _, o := range locks {
		if _, oc := conflict(l.file, o.lockFile); oc && o.Name != l.file.Name && l.s.opts.Now().Sub(o.serverTime) <= l.s.opts.LockDuration {
			l.sawSame = true
		}
	}
	return nil
}

func (l *Lock) noteOthers(locks []serverLock) {
	for _, o := range locks {
		if o.Name != l.file.Name && o.Type != l.file.Type {
			l.sawOther = true
		}
	}
}

// wait is Acquire after create: it sleeps what is left of LockCheckWait
// since the file was written, then checks the other locks every
// LockCheckInterval until none comes first. On failure the file is removed.
func (l *Lock) wait(ctx context.Context) error {
	o := l.s.opts
	start, t0, checks := l.serverTime, l.created, 0
	if err := sleepCtx(ctx, o.LockCheckWait-time.Since(t0)); err != nil {
		return l.abandon(err)
	}
	for ; ; checks++ {
		locks, err := l.s.listLocks(ctx, l.volume)
		if err != nil {
			return l.abandon(err)
		}
		l.noteOthers(locks)
		me := serverLock{lockFile: l.file, serverTime: l.serverTime}
		typ, op := blockers(me, locks, o.Now(), o.LockDuration)
		if len(op) > 0 {
			l.sawSame = true
		}
		if len(typ) == 0 && len(op) == 0 {
			l.file.Acquired = true
			if err := l.save(ctx); err != nil {
				return l.abandon(err)
			}
			l.startRefresh()
			o.Log.WithFields(map[string]any{"volume": l.volume, "lock": l.file.Name, "type": l.file.Type,
				"operation": l.file.Operation, "waited": time.Since(t0).Round(time.Millisecond), "rechecks": checks}).Info("backupstore: lock acquired")
			return nil
		}
		if checks == 0 {
			var who []string
			for _, b := range append(typ, op...) {
				who = append(who, fmt.Sprintf("%s(type %d, %s)", b.Name, b.Type, b.Operation))
			}
			o.Log.WithFields(map[string]any{"volume": l.volume, "lock": l.file.Name, "operation": l.file.Operation,
				"blockers": strings.Join(who, ",")}).Info("backupstore: lock waits behind other locks")
		}
		if len(typ) > 0 && o.Now().Sub(start) > o.LockMaxWait {
			return l.abandon(fmt.Errorf("%w: volume %s: lock %s (type %d) is held by %s (type %d), waited %v",
				ErrLocked, l.volume, l.file.Name, l.file.Type, typ[0].Name, typ[0].Type, o.LockMaxWait))
		}
		if err := sleepCtx(ctx, o.LockCheckInterval); err != nil {
			return l.abandon(err)
		}
	}
}

func (l *Lock) abandon(err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = l.remove(ctx)
	return err
}

func (l *Lock) startRefresh() {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(l.s.opts.LockRefreshInterval)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), max(l.s.opts.LockRefreshInterval, 30*time.Second))
				if err := l.save(ctx); err != nil {
					l.s.opts.Log.WithError(err).Warn("backupstore: lock refresh failed")
				}
				cancel()
			}
		}
	}()
}

// Release stops the refresh and removes the lock file.
func (l *Lock) Release() error {
	if l.stop != nil {
		close(l.stop)
		<-l.done
		l.stop = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return l.remove(ctx)
}

// listLocks loads every lock file of a volume; unreadable ones are skipped,
// as Longhorn does.
func (s *Store) listLocks(ctx context.Context, volume string) ([]serverLock, error) {
	names, err := s.d.List(ctx, LocksPath(volume))
	if err != nil {
		return nil, err
	}
	var out []serverLock
	for _, n := range extractNames(names, "", lockSuffix) {
		p := lockPath(volume, n)
		var lf lockFile
		if err := loadConfig(ctx, s.d, p, &lf); err != nil {
			if errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt) {
				continue
			}
			return nil, err
		}
		fi, err := s.d.Stat(ctx, p)
		if err != nil {
			continue
		}
		out = append(out, serverLock{lockFile: lf, serverTime: fi.ModTime})
	}
	return out, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
