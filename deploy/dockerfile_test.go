package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// instruction is one Dockerfile instruction with continuation lines joined.
type instruction struct {
	cmd  string // upper-case: FROM, COPY, RUN, ...
	args []string
	line int
}

// stage is one FROM ... [AS name] block.
type stage struct {
	image, name string
	instrs      []instruction
}

// parseDockerfile reads instructions and stages, substituting ${ARG}
// defaults declared before the first FROM in FROM lines.
func parseDockerfile(t *testing.T, file string) []stage {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		stages  []stage
		globals = map[string]string{}
		buf     string
		start   int
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if buf == "" && (l == "" || strings.HasPrefix(l, "#")) {
			continue
		}
		if buf == "" {
			start = n
		}
		if strings.HasSuffix(l, "\\") {
			buf += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		fields := strings.Fields(buf + l)
		buf = ""
		in := instruction{cmd: strings.ToUpper(fields[0]), args: fields[1:], line: start}
		switch {
		case in.cmd == "ARG" && len(stages) == 0:
			k, v, _ := strings.Cut(in.args[0], "=")
			globals[k] = v
		case in.cmd == "FROM":
			st := stage{image: os.Expand(in.args[0], func(k string) string { return globals[k] })}
			if len(in.args) == 3 && strings.EqualFold(in.args[1], "AS") {
				st.name = in.args[2]
			}
			stages = append(stages, st)
		case len(stages) == 0:
			t.Fatalf("%s:%d: %s before FROM", file, start, in.cmd)
		default:
			stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return stages
}

// flagValue returns --name=value from args and the args without flags.
func flagValue(args []string, name string) (string, []string) {
	var val string
	var rest []string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			val = v
		} else if !strings.HasPrefix(a, "--") {
			rest = append(rest, a)
		}
	}
	return val, rest
}

func dockerignore(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, strings.TrimSuffix(l, "/"))
		}
	}
	return out
}

// ignored reports whether a context path is excluded by a .dockerignore
// pattern (plain paths, globs and a leading **/).
func ignored(patterns []string, p string) bool {
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, p); ok || strings.HasPrefix(p, pat+"/") {
			return true
		}
		if sub, ok := strings.CutPrefix(pat, "**/"); ok {
			if ok, _ := path.Match(sub, path.Base(p)); ok {
				return true
			}
		}
	}
	return false
}

func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t, "../package/Dockerfile")
	if len(stages) != 2 || stages[0].name != "build" {
		t.Fatalf("want a build stage and a runtime stage, got %+v", stages)
	}
	build, final := stages[0], stages[1]
	checkGoVersion(t, build.image)
	if !strings.HasPrefix(final.image, "debian:") {
		t.Errorf("runtime base %q, want Debian", final.image)
	}
	workdir := ""
	ign := dockerignore(t)
	for _, in := range build.instrs {
		switch in.cmd {
		case "WORKDIR":
			workdir = in.args[0]
		case "COPY":
			checkContextSources(t, in, ign)
		}
	}
	if !slices.ContainsFunc(build.instrs, func(in instruction) bool {
		return in.cmd == "RUN" && slices.Contains(in.args, "make") && slices.Contains(in.args, "build")
	}) {
		t.Error("build stage does not run make build")
	}
	// make build writes $(CURDIR)/bin/longhorn; the runtime copies it onto PATH
	// under the name the manifest's command uses.
	wantSrc := path.Join(workdir, "bin", "longhorn")
	dest := ""
	for _, in := range final.instrs {
		if in.cmd != "COPY" {
			continue
		}
		from, args := flagValue(in.args, "from")
		if from != "build" {
			checkContextSources(t, in, ign)
			continue
		}
		if len(args) == 2 && args[0] == wantSrc {
			dest = args[1]
		}
	}
	if dest == "" {
		t.Fatalf("runtime stage does not COPY --from=build %s", wantSrc)
	}
	if dir := path.Dir(dest); !slices.Contains([]string{"/usr/local/bin", "/usr/bin", "/bin"}, dir) {
		t.Errorf("binary copied to %s, not on the default PATH", dest)
	}
	ds := find[*appsv1.DaemonSet](manifestObjects(t), "longhorn-manager")
	if cmd := ds.Spec.Template.Spec.Containers[0].Command[0]; cmd != path.Base(dest) {
		t.Errorf("manifest runs %q, image has %s", cmd, dest)
	}
	checkPackages(t, final)
}

func checkContextSources(t *testing.T, in instruction, ign []string) {
	t.Helper()
	_, args := flagValue(in.args, "from")
	for _, src := range args[:len(args)-1] {
		if _, err := os.Stat(filepath.Join("..", src)); err != nil {
			t.Errorf("Dockerfile line %d: COPY source %s: %v", in.line, src, err)
		}
		if src != "." && ignored(ign, path.Clean(src)) {
			t.Errorf("Dockerfile line %d: COPY source %s is excluded by .dockerignore", in.line, src)
		}
	}
	for _, need := range []string{"go.mod", "go.sum", "main.go", "Makefile"} {
		if ignored(ign, need) {
			t.Errorf(".dockerignore excludes %s, which the build needs", need)
		}
	}
}

// checkGoVersion: the build image's Go is the go.mod toolchain (major.minor).
func checkGoVersion(t *testing.T, image string) {
	t.Helper()
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	if !strings.HasPrefix(image, "golang:"+string(m[1])+"-") {
		t.Errorf("build image %q, want golang:%s-<debian>", image, m[1])
	}
}

// checkPackages: the runtime stage installs exactly the packages of
// package/node-packages.txt, the list make image (hack/image) gives
// debootstrap: it copies the file in, and its install command reads it
// (the same filter, run here on the file, yields the file's packages) and
// names no package of its own.
func checkPackages(t *testing.T, final stage) {
	t.Helper()
	const list = "package/node-packages.txt"
	copied := slices.ContainsFunc(final.instrs, func(in instruction) bool {
		return in.cmd == "COPY" && len(in.args) == 2 && in.args[0] == list
	})
	if !copied {
		t.Fatalf("runtime stage does not COPY %s", list)
	}
	var install *instruction
	for i, in := range final.instrs {
		if in.cmd == "RUN" && slices.Contains(in.args, "install") {
			install = &final.instrs[i]
		}
	}
	if install == nil {
		t.Fatal("runtime stage installs no packages")
	}
	run := strings.Join(install.args, " ")
	// The install words: what follows "apt-get install" up to the next &&.
	_, after, _ := strings.Cut(run, "apt-get install")
	after, _, _ = strings.Cut(after, "&&")
	for _, w := range strings.Fields(after) {
		if !strings.HasPrefix(w, "-") {
			t.Errorf("Dockerfile line %d installs %q itself; packages belong in %s", install.line, w, list)
		}
	}
	filter := regexp.MustCompile(`(grep [^|]*) \| xargs apt-get install`).FindStringSubmatch(run)
	if filter == nil || !strings.Contains(filter[1], "/tmp/node-packages.txt") {
		t.Fatalf("Dockerfile line %d does not read the list with grep ... | xargs apt-get install: %s", install.line, run)
	}
	cmd := strings.ReplaceAll(filter[1], "/tmp/node-packages.txt", filepath.Join("..", list))
	out, err := exec.Command("sh", "-c", cmd).Output()
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	got := strings.Fields(string(out))
	want := nodePackages(t, filepath.Join("..", list))
	if !slices.Equal(got, want) {
		t.Errorf("the Dockerfile's filter yields %v, the list holds %v", got, want)
	}
	for _, p := range []string{"iproute2", "e2fsprogs", "xfsprogs", "nfs-common", "util-linux", "open-iscsi", "nbd-client", "ca-certificates"} {
		if !slices.Contains(want, p) {
			t.Errorf("%s lacks %s", list, p)
		}
	}
}

// nodePackages reads the package list: one name per line, # comments.
func nodePackages(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}
