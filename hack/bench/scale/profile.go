package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	gosync "sync"
	"time"
)

// profileProcs fetches a CPU profile of d from each named net/http/pprof
// endpoint (name -> HOST:PORT) in the background, into
// dir/pprof-<prefix>-<name>.pb.gz (`go tool pprof` reads them); the
// returned function waits for all. Part 2's -rebuild-profile: where a
// rebuild's CPU goes, per process (a profile shorter than the rebuild
// covers its start).
func profileProcs(ctx context.Context, dir, prefix string, addrs map[string]string, d time.Duration) func() {
	var wg gosync.WaitGroup
	for name, addr := range addrs {
		wg.Add(1)
		go func(name, addr string) {
			defer wg.Done()
			out := filepath.Join(dir, "pprof-"+prefix+"-"+name+".pb.gz")
			if err := fetchProfile(ctx, addr, d, out); err != nil {
				fmt.Fprintf(os.Stderr, "bench-scale: profile of %s: %v\n", name, err)
			}
		}(name, addr)
	}
	return wg.Wait
}

// fetchProfile writes the CPU profile of d seconds of the process serving
// pprof at addr to out.
func fetchProfile(ctx context.Context, addr string, d time.Duration, out string) error {
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	u := "http://" + addr + "/debug/pprof/profile?seconds=" + strconv.Itoa(max(1, int(d/time.Second)))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
