package manager_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/internal/testutil"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// TestLiveUpgradeNewEngineDiesAfterDone is the drained-volume gap of a live
// upgrade: the new engine takes the volume over, serves writes, has the old
// engine drop its hand-over state (VolumeUpgradeDone) and then dies before
// the manager switches to it (here: its gRPC port is taken, so it cannot
// listen). The old engine no longer holds any replica and never serves
// again by itself. The engine controller gives up on it after its grace
// (30 s): it deletes the old engine's process (event FailedEngineUpgrade),
// the upgrade is rolled back, and the volume restarts its engine on the old
// image and the old replicas. Every byte written, through the old engine
// and through the new one in its short life, is read back.
//
// The order is forced with signals on the real processes: the new engine
// is held (SIGSTOP) while its port is taken, a new replica is held until the
// old engine has handed the volume over, the old engine is held so that the
// new engine's VolumeUpgradeDone waits while its frontend already serves,
// and released once the test has written through the new engine.
func TestLiveUpgradeNewEngineDiesAfterDone(t *testing.T) {
	testutil.RequireTool(t, "nbdcopy")
	c := newCluster(t)
	const vol = "gap-vol"
	c.applyVolume(t, vol)
	c.attach(vol, "n1")
	c.waitState(vol, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 120*time.Second)
	endpoint := c.hostEndpoint("n1", c.engineOf(vol).Status.Endpoint)
	sock := socketOf(t, endpoint)
	q := testutil.StartQemuShell(t, sock, vol)
	w := testutil.NewModelWriter(q, upgVolSize, upgChunk, 31)
	for range 10 {
		w.Round()
	}
	oldIM := c.engineOf(vol).Status.InstanceManagerName
	c.upgradeManagers(image2)
	s := &upgradeSaboteur{c: c, vol: vol, log: filepath.Join(c.dir, "n1", "instance-manager", "logs", c.engineOf(vol).Name+".log"),
		ready: make(chan struct{})}
	s.oldPID = c.onePID(t, "engine controller "+vol+" ")
	defer s.release()
	done := make(chan error, 1)
	proceed := make(chan struct{})
	go func() { done <- s.run(proceed) }()
	if out, err := c.patchImage(vol, image2); err != nil {
		t.Fatalf("spec.image %s: %v\n%s", image2, err, out)
	}
	through := writeThroughNewEngine(t, w, s, done, proceed)
	released := time.Now()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s.checkLog(t)
	back := c.waitRestartedOnOldImage(t, vol, oldIM, released)
	for _, pid := range c.pids("qemu-io", sock) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	img := filepath.Join(t.TempDir(), "volume.raw")
	if out, err := exec.Command("nbdcopy", endpoint, img).CombinedOutput(); err != nil {
		t.Fatalf("nbdcopy: %v\n%s", err, out)
	}
	got, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, w.Expected()) {
		t.Fatalf("volume differs from the model of its writes (%d rounds through the new engine)", through)
	}
	qemuIO(t, endpoint, "write -P 0x5a 0 64k", "read -P 0x5a 0 64k")
	c.checkEngineImageDeleteRefused(t)
	c.deleteUnusedEngineImage(t, vol)
	t.Logf("MEASURE drained-volume gap (load %s): %d rounds through the new engine before it died; volume attached and healthy "+
		"on the old image %v after it was let die (grace 30 s included); %d bytes verified", loadAvg(), through,
		back.Round(time.Millisecond), len(got))
	t.Logf("old engine held for %v while the new one served and waited in VolumeUpgradeDone", s.held.Round(time.Millisecond))
}

// writeThroughNewEngine writes rounds until the saboteur says the new
// engine serves with the old one held, then ten more (they can only reach
// the new engine), releases the old engine and returns the number of rounds
// written through the new engine.
func writeThroughNewEngine(t *testing.T, w *testutil.ModelWriter, s *upgradeSaboteur, done chan error, proceed chan struct{}) int {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !s.serving() {
		select {
		case err := <-done:
			t.Fatalf("saboteur ended early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the new engine did not serve within 3 min")
		}
		w.Round()
	}
	const n = 10
	for range n {
		w.Round()
	}
	close(proceed)
	return n
}

// upgradeSaboteur holds and releases the processes of a live upgrade of
// vol on n1 (see TestLiveUpgradeNewEngineDiesAfterDone). The fields above
// ready are set before run; run closes ready once the new engine serves
// with the old engine held; the rest belongs to run (and release, after
// run ended).
type upgradeSaboteur struct {
	c      *cluster
	vol    string
	log    string // the engine's log file (old and new engine append to it)
	oldPID int
	ready  chan struct{}

	newPID, twinPID int
	hold            int           // the socket reserving the new engine's port (0: none)
	held            time.Duration // how long the old engine was held
}

// serving reports whether run has closed ready.
func (s *upgradeSaboteur) serving() bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

// run: hold the new engine as soon as it runs, take its gRPC port, hold one
// new replica, let the new engine go; once the old engine logged the
// hand-over, hold it and let the new replica go (the new engine opens its
// replicas, serves, and waits in VolumeUpgradeDone); after proceed, let the
// old engine go and wait until the new engine is gone.
func (s *upgradeSaboteur) run(proceed <-chan struct{}) error {
	start, err := os.Stat(s.log)
	if err != nil {
		return err
	}
	if s.newPID, err = s.await("the new engine", func() []int { return s.c.pids("engine controller "+s.vol+" ", "--upgrade-from") }); err != nil {
		return err
	}
	if err := syscall.Kill(s.newPID, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("hold the new engine: %w", err)
	}
	listen, err := argAfter(s.newPID, "--listen")
	if err != nil {
		return err
	}
	if s.hold, err = reservePort(listen); err != nil {
		return fmt.Errorf("take the new engine's port %s: %w", listen, err)
	}
	if s.twinPID, err = s.await("a new replica", s.twinPIDs); err != nil {
		return err
	}
	if err := syscall.Kill(s.twinPID, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("hold the new replica: %w", err)
	}
	_ = syscall.Kill(s.newPID, syscall.SIGCONT)
	if err := s.awaitLog(start.Size(), "volume handed to the new engine"); err != nil {
		return err
	}
	if err := syscall.Kill(s.oldPID, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("hold the old engine: %w", err)
	}
	_ = syscall.Kill(s.twinPID, syscall.SIGCONT)
	heldAt := time.Now()
	close(s.ready)
	<-proceed
	_ = syscall.Kill(s.oldPID, syscall.SIGCONT)
	s.held = time.Since(heldAt)
	_, err = s.await("the new engine's end", func() []int {
		if processGone(s.newPID) {
			return []int{s.newPID}
		}
		return nil
	})
	return err
}

// checkLog: the engine log (both engines write it) shows the order the
// test forced: the old engine dropped the volume on VolumeUpgradeDone, the
// new engine had taken it over and then could not listen.
// The instance manager copies a process's output into the log, so the
// last lines may land a moment after the process exited.
func (s *upgradeSaboteur) checkLog(t *testing.T) {
	t.Helper()
	s.c.eventually("the forced order in the engine log", 30*time.Second, func() (bool, string) {
		b, err := os.ReadFile(s.log)
		if err != nil {
			return false, err.Error()
		}
		for _, want := range []string{"hand-over done: the new engine serves the volume", "live upgrade: took the volume over",
			"bind: address already in use"} {
			if !bytes.Contains(b, []byte(want)) {
				return false, fmt.Sprintf("no %q in:\n%s", want, b)
			}
		}
		return true, ""
	})
}

// release lets every held process go and frees the port (idempotent).
func (s *upgradeSaboteur) release() {
	for _, pid := range []int{s.newPID, s.twinPID, s.oldPID} {
		if pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	if s.hold > 0 {
		_ = syscall.Close(s.hold)
		s.hold = 0
	}
}

// twinPIDs lists the processes of vol's inactive (new) replicas.
func (s *upgradeSaboteur) twinPIDs() []int {
	var out []int
	for _, r := range s.c.replicasOf(s.vol) {
		if !r.Spec.Active && r.Status.CurrentState == longhorn.InstanceStateRunning {
			out = append(out, s.c.pids("--replica-instance-name "+r.Name+" ")...)
		}
	}
	return out
}

// await polls find every 2 ms for up to 3 min and returns its first pid.
func (s *upgradeSaboteur) await(what string, find func() []int) (int, error) {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if p := find(); len(p) > 0 {
			return p[0], nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return 0, fmt.Errorf("%s: not found within 3 min", what)
}

// awaitLog waits up to 60 s until the log has line after offset from.
func (s *upgradeSaboteur) awaitLog(from int64, line string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(s.log)
		if err == nil && int64(len(b)) > from && bytes.Contains(b[from:], []byte(line)) {
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("no %q in %s within 60 s", line, s.log)
}

// reservePort binds a TCP socket to addr (IPv4 host:port) without
// listening and without SO_REUSEADDR: a process that then binds addr fails
// with "address already in use", while a connect to addr is refused (the
// instance manager, which takes a port that answers for a ready process,
// never sees one). It returns the socket.
func reservePort(addr string) (int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	p, err := strconv.Atoi(port)
	ip := net.ParseIP(host).To4()
	if err != nil || ip == nil {
		return 0, fmt.Errorf("%q is no IPv4 host:port", addr)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	sa := &syscall.SockaddrInet4{Port: p}
	copy(sa.Addr[:], ip)
	if err := syscall.Bind(fd, sa); err != nil {
		_ = syscall.Close(fd)
		return 0, err
	}
	return fd, nil
}

// argAfter returns the argument after flag in pid's command line.
func argAfter(pid int, flag string) (string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return "", err
	}
	args := strings.Split(string(b), "\x00")
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1], nil
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("process %d has no %s in %q", pid, flag, args)
}

// processGone: pid has exited (no such process, or a zombie).
func processGone(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

// onePID returns the single process of this cluster whose command line
// contains every part.
func (c *cluster) onePID(t *testing.T, parts ...string) int {
	t.Helper()
	p := c.pids(parts...)
	if len(p) != 1 {
		t.Fatalf("processes with %q: %v, want one", parts, p)
	}
	return p[0]
}

// waitRestartedOnOldImage waits up to 3 min until vol runs again on the old
// image after the failed upgrade: spec.image and status.currentImage the old
// image, attached and healthy, no inactive replica left, the engine running
// in an instance manager of the old image, an engine event saying the old
// engine was given up; it returns the time since since.
func (c *cluster) waitRestartedOnOldImage(t *testing.T, vol, oldIM string, since time.Time) time.Duration {
	t.Helper()
	c.eventually(vol+" back on the old image", 3*time.Minute, func() (bool, string) {
		v, e := c.volume(vol), c.engineOf(vol)
		if v == nil || e == nil {
			return false, "no volume or engine"
		}
		inactive := 0
		for _, r := range c.replicasOf(vol) {
			if !r.Spec.Active {
				inactive++
			}
		}
		gaveUp := c.engineEvent(e.Name, "FailedEngineUpgrade", "did not serve")
		msg := fmt.Sprintf("spec.image %s currentImage %s state %s/%s inactive %d engine %s in %s (%s) gave-up event %v conditions %+v",
			v.Spec.Image, v.Status.CurrentImage, v.Status.State, v.Status.Robustness, inactive, e.Status.CurrentState,
			e.Status.InstanceManagerName, e.Status.CurrentImage, gaveUp, e.Status.Conditions)
		return v.Spec.Image == image && v.Status.CurrentImage == image && v.Status.State == longhorn.VolumeStateAttached &&
			v.Status.Robustness == longhorn.VolumeRobustnessHealthy && inactive == 0 && gaveUp &&
			e.Status.CurrentState == longhorn.InstanceStateRunning && e.Status.InstanceManagerName == oldIM &&
			e.Status.CurrentImage == image && e.Status.Endpoint != "", msg
	})
	return time.Since(since)
}

// engineEvent reports whether Engine name has an event of reason whose
// message contains part.
func (c *cluster) engineEvent(name, reason, part string) bool {
	evs, err := c.kube.CoreV1().Events(ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == "Engine" && e.InvolvedObject.Name == name && e.Reason == reason && strings.Contains(e.Message, part) {
			return true
		}
	}
	return false
}

// checkEngineImageDeleteRefused: with the managers on image2, kubectl may
// delete neither the default engine image (image2's) nor the old image's
// while a volume uses it; the admission webhook says why.
func (c *cluster) checkEngineImageDeleteRefused(t *testing.T) {
	t.Helper()
	for img, want := range map[string]string{
		image2: "unable to delete the default engine image " + image2,
		image:  "unable to delete the engine image " + image + " while being used and refCount is",
	} {
		out, err := c.kubectl("", "-n", ns, "delete", "engineimages.longhorn.io", types.EngineImageName(img))
		if err == nil || !strings.Contains(out, want) {
			t.Fatalf("kubectl delete engine image of %s: %v\n%s", img, err, out)
		}
	}
	if _, err := c.lh.LonghornV1beta2().EngineImages(ns).Get(c.ctx, types.EngineImageName(image), metav1.GetOptions{}); err != nil {
		t.Fatal(errors.Join(errors.New("the old engine image went after a refused delete"), err))
	}
}

// deleteUnusedEngineImage detaches and deletes vol, the last user of the
// old image, waits until the old EngineImage says so (refCount 0,
// noRefSince set) and deletes it with kubectl, which the webhook now lets
// through.
func (c *cluster) deleteUnusedEngineImage(t *testing.T, vol string) {
	t.Helper()
	c.attach(vol, "")
	c.waitState(vol, longhorn.VolumeStateDetached, "", 120*time.Second)
	if out, err := c.kubectl("", "-n", ns, "delete", "volumes.longhorn.io", vol, "--wait=false"); err != nil {
		t.Fatalf("delete %s: %v\n%s", vol, err, out)
	}
	name := types.EngineImageName(image)
	c.eventually("engine image of "+image+" unused", 120*time.Second, func() (bool, string) {
		ei, err := c.lh.LonghornV1beta2().EngineImages(ns).Get(c.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return ei.Status.RefCount == 0 && ei.Status.NoRefSince != "", fmt.Sprintf("refCount %d noRefSince %q", ei.Status.RefCount, ei.Status.NoRefSince)
	})
	if out, err := c.kubectl("", "-n", ns, "delete", "engineimages.longhorn.io", name); err != nil {
		t.Fatalf("kubectl delete of the unused engine image %s: %v\n%s", name, err, out)
	}
	c.eventually("engine image "+name+" gone", 30*time.Second, func() (bool, string) {
		_, err := c.lh.LonghornV1beta2().EngineImages(ns).Get(c.ctx, name, metav1.GetOptions{})
		return err != nil, fmt.Sprint(err)
	})
}
