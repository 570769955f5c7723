package nodeagent

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node/api"
)

// Container logs are stored one line per record, as CRI runtimes do:
//
//	<RFC3339Nano time> <stdout|stderr> <F|P> <text>
//
// F ends a line; P is a partial chunk (lines longer than maxLogChunk) that
// the next record continues.
const maxLogChunk = 16 << 10

// logSink copies a container's stdout and stderr into its log file.
type logSink struct {
	f                *os.File
	mu               sync.Mutex
	stdoutW, stderrW *os.File
	wg               sync.WaitGroup
}

func newLogSink(path string) (*logSink, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	l := &logSink{f: f}
	for _, stream := range []string{"stdout", "stderr"} {
		r, w, err := os.Pipe()
		if err != nil {
			l.closeWriters()
			f.Close()
			return nil, err
		}
		if stream == "stdout" {
			l.stdoutW = w
		} else {
			l.stderrW = w
		}
		l.wg.Add(1)
		go l.copy(stream, r)
	}
	return l, nil
}

func (l *logSink) copy(stream string, r *os.File) {
	defer l.wg.Done()
	defer r.Close()
	br := bufio.NewReaderSize(r, maxLogChunk)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			tag := "P"
			if line[len(line)-1] == '\n' {
				tag, line = "F", line[:len(line)-1]
			}
			l.write(stream, tag, line)
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

func (l *logSink) write(stream, tag string, text []byte) {
	var b bytes.Buffer
	b.WriteString(time.Now().UTC().Format(time.RFC3339Nano))
	b.WriteString(" " + stream + " " + tag + " ")
	b.Write(text)
	b.WriteByte('\n')
	l.mu.Lock()
	_, _ = l.f.Write(b.Bytes())
	l.mu.Unlock()
}

// closeWriters closes the parent's copies of the pipe write ends.
func (l *logSink) closeWriters() {
	for _, w := range []*os.File{l.stdoutW, l.stderrW} {
		if w != nil {
			w.Close()
		}
	}
}

// wait waits until every writer (the container and anything it started)
// closed its output, then closes the file.
func (l *logSink) wait() {
	l.wg.Wait()
	l.f.Close()
}

// logRecord is one parsed log line.
type logRecord struct {
	ts      time.Time
	partial bool
	text    string
}

// parseLogRecord parses one stored line (without its newline).
func parseLogRecord(line string) (logRecord, bool) {
	f := strings.SplitN(line, " ", 4)
	if len(f) < 3 {
		return logRecord{}, false
	}
	ts, err := time.Parse(time.RFC3339Nano, f[0])
	if err != nil {
		return logRecord{}, false
	}
	text := ""
	if len(f) == 4 {
		text = f[3]
	}
	return logRecord{ts: ts, partial: f[2] == "P", text: text}, true
}

// renderLogs turns stored records into what `kubectl logs` prints, applying
// sinceTime/sinceSeconds, tailLines and timestamps (limitBytes is applied
// by the caller on the stream). now is for sinceSeconds.
func renderLogs(recs []logRecord, opts api.ContainerLogOpts, now time.Time) []byte {
	since := opts.SinceTime
	if opts.SinceSeconds > 0 {
		since = now.Add(-time.Duration(opts.SinceSeconds) * time.Second)
	}
	var lines []string
	var cur strings.Builder
	first := true
	for _, r := range recs {
		if !since.IsZero() && r.ts.Before(since) {
			continue
		}
		if first && opts.Timestamps {
			cur.WriteString(r.ts.Format(time.RFC3339Nano) + " ")
		}
		cur.WriteString(r.text)
		first = !r.partial
		if !r.partial {
			lines = append(lines, cur.String()+"\n")
			cur.Reset()
		}
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	if opts.Tail > 0 && len(lines) > opts.Tail {
		lines = lines[len(lines)-opts.Tail:]
	}
	return []byte(strings.Join(lines, ""))
}

// readRecords parses the complete lines of data; rest is the incomplete tail.
func readRecords(data []byte) (recs []logRecord, used int) {
	for {
		i := bytes.IndexByte(data[used:], '\n')
		if i < 0 {
			return recs, used
		}
		if r, ok := parseLogRecord(string(data[used : used+i])); ok {
			recs = append(recs, r)
		}
		used += i + 1
	}
}

// streamLogs writes the log file at path to w per opts; with Follow it keeps
// reading new records until ctx ends or stillWriting reports false (the run
// is over) and the file is drained.
func streamLogs(ctx context.Context, path string, opts api.ContainerLogOpts, w io.Writer, stillWriting func() bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	recs, used := readRecords(data)
	pending := data[used:]
	if _, err := w.Write(renderLogs(recs, opts, time.Now())); err != nil || !opts.Follow {
		return err
	}
	follow := opts
	follow.Tail = 0
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			pending = append(pending, buf[:n]...)
			recs, used := readRecords(pending)
			pending = append([]byte(nil), pending[used:]...)
			if _, err := w.Write(renderLogs(recs, follow, time.Now())); err != nil {
				return err
			}
			continue
		}
		if err != nil && err != io.EOF {
			return err
		}
		if !stillWriting() {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// limitWriter passes at most limit bytes (limitBytes), then fails writes
// with errLimit; limit <= 0 means no limit.
type limitWriter struct {
	w       io.Writer
	left    int
	limited bool
}

func newLimitWriter(w io.Writer, limit int) *limitWriter {
	return &limitWriter{w: w, left: limit, limited: limit > 0}
}

var errLimit = io.ErrShortWrite

func (l *limitWriter) Write(p []byte) (int, error) {
	if !l.limited {
		return l.w.Write(p)
	}
	if l.left <= 0 {
		return 0, errLimit
	}
	if len(p) > l.left {
		k, err := l.w.Write(p[:l.left])
		l.left -= k
		if err == nil {
			err = errLimit
		}
		return k, err
	}
	k, err := l.w.Write(p)
	l.left -= k
	return k, err
}
