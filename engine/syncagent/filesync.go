package syncagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	gosync "sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"golang.org/x/time/rate"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/engine/sparse"
)

// Rebuild file retries (Longhorn's SyncRetryCount and its backoff): a file
// may fail this many times, waiting from syncRetryFirst up to syncRetryMax
// between tries, before the whole FilesSync fails. Variables so tests can
// shorten them.
var (
	syncRetryCount = 3
	syncRetryFirst = 10 * time.Second
	syncRetryMax   = 30 * time.Second
)

// defaultFileSendTimeout bounds one FileSend call when the request gives
// no grpc_timeout_seconds (Longhorn: 24 h).
const defaultFileSendTimeout = 24 * time.Hour

// hostRoot is where an instance manager pod sees the host's root file
// system, under which FileLocalSync paths are looked up first.
const hostRoot = "/host"

// syncSources returns the source replicas of a FilesSync: the keys of
// from_address_map, sorted, or from_address when the map is empty (older
// callers).
func syncSources(req *enginerpc.FilesSyncRequest) []string {
	var out []string
	for a := range req.GetFromAddressMap() {
		out = append(out, a)
	}
	sort.Strings(out)
	if len(out) == 0 && req.GetFromAddress() != "" {
		out = []string{req.GetFromAddress()}
	}
	return out
}

// checkFilesSync validates a FilesSync request.
func (a *Agent) checkFilesSync(req *enginerpc.FilesSyncRequest, sources []string) error {
	if len(sources) == 0 {
		return invalid(errors.New("from_address_map (or from_address) names no source replica"))
	}
	for _, s := range sources {
		if _, _, err := ParseReplicaAddress(s); err != nil {
			return invalid(err)
		}
	}
	if req.GetToHost() == "" {
		return invalid(errors.New("to_host is empty"))
	}
	if n := req.GetBandwidthLimitBytesPerSecond(); n < 0 {
		return invalid(fmt.Errorf("bandwidth_limit_bytes_per_second %d: want 0 (no limit) or more", n))
	}
	for _, fi := range req.GetSyncFileInfoList() {
		if _, err := a.r.FilePath(fi.GetToFileName()); err != nil {
			return invalid(err)
		}
		if _, err := a.r.FilePath(fi.GetFromFileName()); err != nil {
			return invalid(err)
		}
	}
	return nil
}

// FilesSync pulls the listed files from the source replicas into this one,
// as the target of a rebuild (Longhorn's FilesSync), and returns when every
// file arrived or the sync failed; ReplicaRebuildStatus reports progress
// meanwhile. One worker per source (at most one per file) takes files in
// turn; a file that fails is tried again, from any source, up to 3 times.
func (a *Agent) FilesSync(ctx context.Context, req *enginerpc.FilesSyncRequest) (*emptypb.Empty, error) {
	sources := syncSources(req)
	if err := a.checkFilesSync(req, sources); err != nil {
		return nil, err
	}
	ctx, cancel, err := a.startRebuild(ctx, sources)
	if err != nil {
		return nil, err
	}
	defer cancel()
	err = a.syncFiles(ctx, sources, req)
	a.finishRebuild(err)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "files sync: %v", err)
	}
	return &emptypb.Empty{}, nil
}

func (a *Agent) startRebuild(ctx context.Context, sources []string) (context.Context, context.CancelFunc, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rebuild.active {
		return nil, nil, status.Error(codes.FailedPrecondition, "replica is already rebuilding")
	}
	if a.purge.active {
		return nil, nil, status.Error(codes.FailedPrecondition, "cannot rebuild: the replica is purging snapshots")
	}
	a.rebuild = opStatus{active: true, state: StateInProgress, from: sources}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(a.ctx, cancel)
	a.cancel = cancel
	a.wg.Add(1)
	return ctx, func() { stop(); cancel(); a.wg.Done() }, nil
}

func (a *Agent) finishRebuild(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rebuild.active = false
	a.cancel = nil
	if err != nil {
		a.rebuild.state, a.rebuild.err = StateError, err.Error()
		a.log.WithError(err).Error("sync agent: files sync failed")
		return
	}
	a.rebuild.state, a.rebuild.progress = StateComplete, 100
}

// syncProgress adds up the bytes received per file; only files with an
// actual size count (Longhorn: the .meta files do not).
type syncProgress struct {
	a     *Agent
	mu    gosync.Mutex
	total int64
	done  map[int]int64
}

func (p *syncProgress) set(i int, n, size int64) {
	if size <= 0 {
		return
	}
	p.mu.Lock()
	p.done[i] = min(n, size)
	var sum int64
	for _, d := range p.done {
		sum += d
	}
	p.mu.Unlock()
	p.a.mu.Lock()
	p.a.rebuild.progress = percent(sum, p.total)
	p.a.mu.Unlock()
}

func (a *Agent) syncFiles(ctx context.Context, sources []string, req *enginerpc.FilesSyncRequest) error {
	files := req.GetSyncFileInfoList()
	prog := &syncProgress{a: a, done: map[int]int64{}}
	for _, fi := range files {
		prog.total += max(fi.GetActualSize(), 0)
	}
	todo := make([]int, 0, len(files))
	for i, fi := range files {
		if ls := req.GetLocalSync(); ls != nil && a.syncLocal(ctx, ls, fi) == nil {
			prog.set(i, fi.GetActualSize(), fi.GetActualSize())
			continue
		}
		todo = append(todo, i)
	}
	if len(todo) == 0 {
		return nil
	}
	return a.syncRemote(ctx, sources, req, todo, prog)
}

// syncLocal copies one file from a source replica on this node
// (FileLocalSync): the paths are looked up under /host first.
func (a *Agent) syncLocal(ctx context.Context, ls *enginerpc.FileLocalSync, fi *enginerpc.SyncFileInfo) error {
	dst, err := a.r.FilePath(fi.GetToFileName())
	if err != nil {
		return err
	}
	src := hostPath(filepath.Join(ls.GetSourcePath(), filepath.Base(fi.GetFromFileName())))
	if err := sparse.CopyFile(ctx, dst, src, nil); err != nil {
		a.log.WithError(err).WithField("file", fi.GetFromFileName()).Warn("sync agent: local sync failed, syncing remotely")
		return err
	}
	return nil
}

func hostPath(p string) string {
	if h := filepath.Join(hostRoot, p); exists(h) {
		return h
	}
	return p
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// syncRemote runs one worker per source over the files in todo.
func (a *Agent) syncRemote(ctx context.Context, sources []string, req *enginerpc.FilesSyncRequest, todo []int, prog *syncProgress) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	queue := make(chan int, len(todo))
	for _, i := range todo {
		queue <- i
	}
	limit := req.GetBandwidthLimitBytesPerSecond()
	q := &fileQueue{queue: queue, pending: len(todo), tries: map[int]int{}, limit: limit, pace: newPacer(limit)}
	var wg gosync.WaitGroup
	for _, src := range sources[:min(len(sources), len(todo))] {
		wg.Add(1)
		go func(src string) {
			defer wg.Done()
			if err := a.syncWorker(ctx, src, req, q, prog); err != nil {
				cancel(err)
			}
		}(src)
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	// Hashed once every file is in, so the hash does not compete with the
	// rest of the sync (a local copy recorded no checksum here).
	for _, p := range q.unhashed {
		a.hashLater(p)
	}
	return nil
}

// fileQueue hands files to workers and counts what is left.
type fileQueue struct {
	queue   chan int
	mu      gosync.Mutex
	pending int
	tries   map[int]int
	// limit is the sync's bandwidth limit, bytes per second (0 = none):
	// each FileSend's sender paces itself to it, and pace, the token
	// bucket every receiver of the sync shares, holds the sum of the
	// sources that send at once to it too.
	limit int64
	pace  *rate.Limiter
	// unhashed are the files received (pullFile), handed to hashLater
	// after the sync: it hashes those a local copy left without a record.
	unhashed []string
}

// next returns the next file, waiting while others are being retried;
// false when every file is done.
func (q *fileQueue) next(ctx context.Context) (int, bool) {
	for {
		q.mu.Lock()
		left := q.pending
		q.mu.Unlock()
		if left == 0 {
			return 0, false
		}
		select {
		case i := <-q.queue:
			return i, true
		case <-ctx.Done():
			return 0, false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (q *fileQueue) finished() {
	q.mu.Lock()
	q.pending--
	q.mu.Unlock()
}

// failed records a failed try of file i and says whether it may be retried.
func (q *fileQueue) failed(i int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.tries[i]++
	return q.tries[i] < syncRetryCount
}

func (a *Agent) syncWorker(ctx context.Context, src string, req *enginerpc.FilesSyncRequest, q *fileQueue, prog *syncProgress) error {
	conn, agent, err := a.dialAgent(src)
	if err != nil {
		return err
	}
	defer conn.Close()
	wait := syncRetryFirst
	for {
		i, ok := q.next(ctx)
		if !ok {
			return ctx.Err()
		}
		fi := req.GetSyncFileInfoList()[i]
		err := a.pullFile(ctx, agent, src, req, fi, q, func(n int64) { prog.set(i, n, fi.GetActualSize()) })
		if err == nil {
			prog.set(i, fi.GetActualSize(), fi.GetActualSize())
			q.finished()
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !q.failed(i) {
			return fmt.Errorf("%s failed %d times, last from %s: %w", fi.GetFromFileName(), syncRetryCount, src, err)
		}
		a.log.WithError(err).WithField("file", fi.GetFromFileName()).Warn("sync agent: file sync failed, retrying")
		q.queue <- i
		if err := sleepCtx(ctx, wait); err != nil {
			return err
		}
		wait = min(wait*2, syncRetryMax)
	}
}

// pullFile receives one file: a receiver here, FileSend on the source
// agent, both within the sync's bandwidth limit (q.limit, q.pace).
func (a *Agent) pullFile(ctx context.Context, src enginerpc.SyncAgentServiceClient, srcAddr string,
	req *enginerpc.FilesSyncRequest, fi *enginerpc.SyncFileInfo, q *fileQueue, progress func(int64)) error {
	recv, err := a.launch(fi.GetToFileName())
	if err != nil {
		return err
	}
	recv.SetPace(q.pace)
	defer recv.Close()
	stopWatch := watchProgress(recv, progress)
	defer stopWatch()
	timeout := time.Duration(req.GetGrpcTimeoutSeconds()) * time.Second
	if timeout <= 0 {
		timeout = defaultFileSendTimeout
	}
	cctx, cancel := context.WithTimeout(a.outgoing(ctx), timeout)
	defer cancel()
	_, err = src.FileSend(cctx, &enginerpc.FileSendRequest{
		FromFileName: fi.GetFromFileName(), Host: req.GetToHost(), Port: int32(recv.Port()),
		FastSync: req.GetFastSync(), FileSyncHttpClientTimeout: req.GetFileSyncHttpClientTimeout(),
		BandwidthLimitBytesPerSecond: q.limit,
	})
	if err != nil {
		return fmt.Errorf("sync %s from %s: %w", fi.GetFromFileName(), srcAddr, err)
	}
	select {
	case <-recv.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := recv.Err(); err != nil {
		return fmt.Errorf("receive %s: %w", fi.GetToFileName(), err)
	}
	q.mu.Lock()
	q.unhashed = append(q.unhashed, recv.path)
	q.mu.Unlock()
	return nil
}

// watchProgress reports recv's progress every 500 ms until the returned
// function is called (which waits for the last report).
func watchProgress(recv *Receiver, progress func(int64)) func() {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				progress(recv.Processed())
			}
		}
	}()
	return func() { close(stop); <-done }
}
