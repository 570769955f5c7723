package main

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// warm reads every regular file under paths (files or directories) once, so
// that a row's data is in the page cache when its job starts, as it was right
// after the prefill. Errors are the first open or read error.
//
// Why: this VM pages out file pages that were not touched for about a minute
// (a DAMON "pageout" scheme, /sys/kernel/mm/damon/admin), so in a full run a
// row's data, written at the start, was partly back on disk when its job ran
// minutes later, and rows met different caches depending on their place in
// the run (3 replicas, 4 KiB random reads at depth 32: 0.21-0.28x of nbdkit in
// full runs, 0.43-0.71x in short runs of the same binary).
func warm(paths []string) error {
	buf := make([]byte, 1<<20)
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			// Plain Reads into buf: the wrapper hides *os.File's WriteTo and
			// io.Discard's ReadFrom, which would read 8 KiB at a time.
			_, err = io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
