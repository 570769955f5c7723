package syncagent

import (
	"context"
	"time"

	"golang.org/x/time/rate"
)

// MiB is the unit of Longhorn's rebuild bandwidth limits: "MB/s" there
// means 2^20 bytes per second (its SPDK QoS and shard-group code multiply
// by 1024*1024).
const MiB = 1 << 20

// paceBurst is the token bucket's depth: one full batch, the largest
// writeData body, so a body never waits for more tokens than the bucket
// holds, and a limit is kept within one batch over any interval.
const paceBurst = BatchSize

// newPacer returns the token bucket of a transfer limited to limit bytes
// per second, nil for no limit (limit <= 0). The bucket starts empty: a
// rebuild under a limit does not open with a burst.
func newPacer(limit int64) *rate.Limiter {
	if limit <= 0 {
		return nil
	}
	l := rate.NewLimiter(rate.Limit(limit), paceBurst)
	l.AllowN(time.Now(), paceBurst) // drain the initial burst
	return l
}

// waitPace takes n bytes' worth of tokens from l, waiting as long as the
// limit asks; a nil l does not wait. It fails only when ctx ends first.
func waitPace(ctx context.Context, l *rate.Limiter, n int) error {
	if l == nil {
		return nil
	}
	for n > 0 {
		k := min(n, paceBurst)
		if err := l.WaitN(ctx, k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}
