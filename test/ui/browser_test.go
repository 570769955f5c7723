package ui

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/internal/testutil"
	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/testbed/framework"
	"github.com/longhorn-go/longhorn/ui"
)

// playwrightTimeout bounds the whole browser suite.
const playwrightTimeout = 15 * time.Minute

// TestBrowser runs the Playwright suite (ui/e2e/*.spec.ts) in Debian's
// chromium against the UI served by ui.NewFrontend with /v1 proxied to the
// manager on node-1. Screenshots of every page land in LONGHORN_UI_ARTIFACTS
// (default bin/ui-e2e).
func TestBrowser(t *testing.T) {
	c := requireCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), playwrightTimeout+time.Minute)
	defer cancel()
	f, err := framework.Connect(ctx, c.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	uiURL, backend, err := frontend(ctx, c, f)
	if err != nil {
		t.Fatal(err)
	}
	ctlURL, err := serve(ctx, control{f: f}.routes())
	if err != nil {
		t.Fatal(err)
	}
	s3Env, stopS3, err := backupTargetEnv(ctx, c, f, testutil.ToolsRequired())
	if err != nil {
		t.Fatal(err)
	}
	defer stopS3()
	artifacts := os.Getenv("LONGHORN_UI_ARTIFACTS")
	if artifacts == "" {
		artifacts = filepath.Join(moduleRoot(), "bin", "ui-e2e")
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	logf("UI at %s (API %s), control at %s, artifacts in %s", uiURL, backend, ctlURL, artifacts)
	pctx, pcancel := context.WithTimeout(ctx, playwrightTimeout)
	defer pcancel()
	args := []string{"--no-install", "playwright", "test"}
	// PLAYWRIGHT_ARGS adds arguments, e.g. "--grep rebuild" for one spec.
	args = append(args, strings.Fields(os.Getenv("PLAYWRIGHT_ARGS"))...)
	cmd := exec.CommandContext(pctx, "npx", args...)
	cmd.Dir = filepath.Join(moduleRoot(), "ui")
	cmd.Env = append(os.Environ(), "LONGHORN_UI_URL="+uiURL+"/", "LONGHORN_UI_CONTROL="+ctlURL,
		"LONGHORN_UI_ARTIFACTS="+artifacts, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1")
	cmd.Env = append(cmd.Env, s3Env...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.WaitDelay = 10 * time.Second
	_ = os.Remove(filepath.Join(artifacts, "report.json"))
	if err := cmd.Run(); err != nil {
		noteFailures(t, artifacts)
		t.Fatalf("playwright test: %v (report and screenshots in %s)", err, artifacts)
	}
}

// frontend returns the URL the browser loads and what serves /v1 behind it.
// On real nodes that is the product's longhorn-ui Deployment through
// `kubectl port-forward svc/longhorn-frontend` (as a user reaches it); the
// node-agent cluster routes no Service addresses, so there the test serves
// ui.NewFrontend (the code of `longhorn ui`) itself, proxying to a manager pod.
func frontend(ctx context.Context, c *cluster.Config, f *framework.Cluster) (string, string, error) {
	if c.Real() {
		u, err := portForward(ctx, c)
		return u, "Service longhorn-backend via Deployment longhorn-ui", err
	}
	backend, err := managerAPI(ctx, c, f)
	if err != nil {
		return "", "", err
	}
	front, err := ui.NewFrontend(ui.FrontendOptions{Backend: backend})
	if err != nil {
		return "", "", err
	}
	u, err := serve(ctx, front)
	return u, backend, err
}

// portForward waits for Deployment longhorn-ui and forwards a free
// loopback port to Service longhorn-frontend until ctx ends.
func portForward(ctx context.Context, c *cluster.Config) (string, error) {
	if b, err := c.Kubectl(ctx, "-n", framework.Namespace, "rollout", "status", "deployment/longhorn-ui", "--timeout=3m").CombinedOutput(); err != nil {
		return "", fmt.Errorf("deployment longhorn-ui: %w\n%s", err, b)
	}
	cmd := c.Kubectl(ctx, "-n", framework.Namespace, "port-forward", "--address", "127.0.0.1", "svc/longhorn-frontend", ":80")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	go func() { _ = cmd.Wait() }()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// "Forwarding from 127.0.0.1:PORT -> 8000"
	re := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+) ->`)
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return "", errors.New("kubectl port-forward svc/longhorn-frontend exited")
			}
			if m := re.FindStringSubmatch(l); m != nil {
				go func() {
					for range lines { // drain "Handling connection" lines
					}
				}()
				return "http://" + m[1], nil
			}
		case <-timeout:
			return "", errors.New("kubectl port-forward svc/longhorn-frontend: no local port after 30 s")
		}
	}
}

// managerAPI returns http://IP:9500 of the ready manager pod on node-1,
// after checking that the root namespace routes IP to the cluster's bridge.
func managerAPI(ctx context.Context, c *cluster.Config, f *framework.Cluster) (string, error) {
	pods, err := f.Kube.CoreV1().Pods(framework.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=longhorn-manager"})
	if err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != c.NodeName(1) || p.Status.PodIP == "" {
			continue
		}
		if err := routedToBridge(c, p.Status.PodIP); err != nil {
			return "", err
		}
		return "http://" + net.JoinHostPort(p.Status.PodIP, "9500"), nil
	}
	return "", fmt.Errorf("no manager pod with an IP on %s (%d manager pods)", c.NodeName(1), len(pods.Items))
}

// routedToBridge refuses an address the root namespace would not send to
// the cluster's bridge (the test bed's network-safety rule).
func routedToBridge(c *cluster.Config, ip string) error {
	out, err := exec.Command("ip", "-o", "route", "get", ip).Output()
	if err != nil {
		return fmt.Errorf("ip route get %s: %w", ip, err)
	}
	fields := strings.Fields(string(out))
	for i := 0; i+1 < len(fields); i++ {
		if fields[i] == "dev" && fields[i+1] == c.Bridge() {
			return nil
		}
	}
	return fmt.Errorf("refusing %s: the root namespace routes it as %q, not via bridge %s", ip, strings.TrimSpace(string(out)), c.Bridge())
}
