package chart

import (
	"fmt"
	"go/ast"
	"go/types"
	"path"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Need is one permission the manager's code needs: verb on group/resource
// (resource may carry a subresource, "volumes/status").
type Need struct {
	Group, Resource, Verb string
	// Where is the first source position that needs it.
	Where string
}

func (n Need) key() string { return n.Group + "|" + n.Resource + "|" + n.Verb }

func (n Need) String() string {
	g := n.Group
	if g == "" {
		g = "core"
	}
	return fmt.Sprintf("%s %s/%s (%s)", n.Verb, g, n.Resource, n.Where)
}

// typedClientGroups maps a typed-client package (its last two path elements
// name group and version) to the API group.
var typedClientGroups = map[string]string{
	"core": "", "apps": "apps", "storage": "storage.k8s.io", "admissionregistration": "admissionregistration.k8s.io",
	"coordination": "coordination.k8s.io", "events": "events.k8s.io", "policy": "policy", "batch": "batch",
	"rbac": "rbac.authorization.k8s.io", "scheduling": "scheduling.k8s.io", "networking": "networking.k8s.io",
	"discovery": "discovery.k8s.io", "longhorn": "longhorn.io", "apiextensions": "apiextensions.k8s.io",
}

// clientPackagePrefixes are the typed client and informer packages analysed.
var clientPackagePrefixes = []string{
	"k8s.io/client-go/kubernetes/typed/",
	"k8s.io/client-go/informers/",
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/",
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned/typed/",
	"github.com/longhorn-go/longhorn/k8s/pkg/client/informers/externalversions/",
}

// methodVerbs maps typed-client methods to RBAC verbs (and a subresource).
var methodVerbs = map[string][2]string{
	"Get": {"get", ""}, "List": {"list", ""}, "Watch": {"watch", ""}, "Create": {"create", ""},
	"Update": {"update", ""}, "UpdateStatus": {"update", "status"}, "Delete": {"delete", ""},
	"DeleteCollection": {"deletecollection", ""}, "Patch": {"patch", ""}, "Apply": {"patch", ""},
	"ApplyStatus": {"patch", "status"}, "GetLogs": {"get", "log"}, "Evict": {"create", "eviction"},
	"EvictV1": {"create", "eviction"}, "Bind": {"create", "binding"},
}

// escapedVerbs are assumed for a typed client that is passed on rather than
// called (e.g. handed to the datastore's generic store).
var escapedVerbs = []string{"get", "list", "watch", "create", "update", "delete"}

// funcNeeds are needs implied by calling a function (package path.Name).
var funcNeeds = map[string][]Need{
	"k8s.io/client-go/tools/record.NewBroadcaster": {{Group: "", Resource: "events", Verb: "create"},
		{Group: "", Resource: "events", Verb: "patch"}, {Group: "", Resource: "events", Verb: "update"}},
	"k8s.io/client-go/tools/events.NewBroadcaster": {{Group: "events.k8s.io", Resource: "events", Verb: "create"},
		{Group: "events.k8s.io", Resource: "events", Verb: "patch"}, {Group: "events.k8s.io", Resource: "events", Verb: "update"}},
	// The storage-network setting's NetworkAttachmentDefinition check (a
	// dynamic-client GET).
	"github.com/longhorn-go/longhorn/webhook.NewNADLookup": {{Group: "k8s.cni.cncf.io", Resource: "network-attachment-definitions", Verb: "get"}},
	"k8s.io/client-go/tools/leaderelection/resourcelock.New": {{Group: "coordination.k8s.io", Resource: "leases", Verb: "get"},
		{Group: "coordination.k8s.io", Resource: "leases", Verb: "create"}, {Group: "coordination.k8s.io", Resource: "leases", Verb: "update"}},
}

// unanalysable are packages whose calls this analysis cannot map to
// permissions; using them is reported so a person adds the grants.
var unanalysable = []string{"k8s.io/client-go/dynamic", "sigs.k8s.io/controller-runtime/pkg/client"}

// clientType returns group, resource and kind ("client" or "informer") of a
// typed client/informer interface type, or ok=false.
func clientType(t types.Type) (group, resource, kind string, ok bool) {
	if p, isPtr := t.(*types.Pointer); isPtr {
		t = p.Elem()
	}
	named, isNamed := t.(*types.Named)
	if !isNamed || named.Obj().Pkg() == nil {
		return "", "", "", false
	}
	pkg, name := named.Obj().Pkg().Path(), named.Obj().Name()
	for _, prefix := range clientPackagePrefixes {
		if !strings.HasPrefix(pkg, prefix) {
			continue
		}
		grp, known := typedClientGroups[path.Base(path.Dir(pkg))]
		if !known {
			return "", "", "", false
		}
		var k string
		switch {
		case strings.HasSuffix(name, "Informer") && strings.Contains(prefix, "informers"):
			kind, k = "informer", strings.TrimSuffix(name, "Informer")
		case strings.HasSuffix(name, "Interface") && strings.Contains(prefix, "typed"):
			kind, k = "client", strings.TrimSuffix(name, "Interface")
		default:
			return "", "", "", false
		}
		// client-go 0.37 names some types Typed<Kind>Informer behind aliases.
		if rest, ok := strings.CutPrefix(k, "Typed"); ok && rest != "" {
			k = rest
		}
		if k == "" || strings.HasSuffix(k, "V1") || strings.HasSuffix(k, "V1beta2") || strings.HasSuffix(k, "V1beta1") {
			return "", "", "", false // group clients (CoreV1Interface) make no API call
		}
		gvr, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Group: grp, Kind: k})
		return grp, gvr.Resource, kind, true
	}
	return "", "", "", false
}

// ManagerNeeds loads the packages (patterns relative to dir, e.g.
// "./controller/...") and returns the permissions their Kubernetes client
// calls need, plus the positions of uses this analysis cannot map.
func ManagerNeeds(dir string, patterns ...string) ([]Need, []string, error) {
	cfg := &packages.Config{Dir: dir, Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
		packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, nil, err
	}
	needs := map[string]Need{}
	var unknown []string
	var loadErrs []string
	for _, p := range pkgs {
		for _, e := range p.Errors {
			loadErrs = append(loadErrs, e.Error())
		}
		for imp := range p.Imports {
			for _, u := range unanalysable {
				if imp == u {
					unknown = append(unknown, p.PkgPath+" imports "+u)
				}
			}
		}
		for _, f := range p.Syntax {
			inspectFile(p, f, needs)
		}
	}
	if len(loadErrs) > 0 {
		return nil, nil, fmt.Errorf("loading packages: %s", strings.Join(loadErrs, "; "))
	}
	out := make([]Need, 0, len(needs))
	for _, n := range needs {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out, unknown, nil
}

// inspectFile records the needs of one file: method calls on typed clients
// and informers, typed clients passed on, and the functions of funcNeeds.
func inspectFile(p *packages.Package, f *ast.File, needs map[string]Need) {
	add := func(n Need, pos ast.Node) {
		if _, ok := needs[n.key()]; !ok {
			n.Where = p.Fset.Position(pos.Pos()).String()
			needs[n.key()] = n
		}
	}
	receivers := map[ast.Expr]bool{}
	ast.Inspect(f, func(node ast.Node) bool {
		call, ok := node.(*ast.CallExpr)
		if !ok {
			return true
		}
		if fn := calledFunc(p, call); fn != "" {
			for _, n := range funcNeeds[fn] {
				add(n, call)
			}
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		group, res, kind, ok := clientType(p.TypesInfo.TypeOf(sel.X))
		if !ok {
			return true
		}
		receivers[sel.X] = true
		switch kind {
		case "informer":
			add(Need{Group: group, Resource: res, Verb: "list"}, call)
			add(Need{Group: group, Resource: res, Verb: "watch"}, call)
		case "client":
			if v, ok := methodVerbs[sel.Sel.Name]; ok {
				r := res
				if v[1] != "" {
					r += "/" + v[1]
				}
				add(Need{Group: group, Resource: r, Verb: v[0]}, call)
			}
		}
		return true
	})
	inspectEscapes(p, f, add)
}

// inspectEscapes adds the needs of typed clients passed on (as an argument,
// in a composite literal or returned) rather than called in f: it assumes
// the usual verbs.
func inspectEscapes(p *packages.Package, f *ast.File, add func(Need, ast.Node)) {
	escape := func(e ast.Expr) {
		group, res, kind, ok := clientType(p.TypesInfo.TypeOf(e))
		if !ok || kind != "client" {
			return
		}
		if res == "events" { // handed to an event sink: it only writes events
			for _, v := range []string{"create", "update", "patch"} {
				add(Need{Group: group, Resource: res, Verb: v}, e)
			}
			return
		}
		for _, v := range escapedVerbs {
			add(Need{Group: group, Resource: res, Verb: v}, e)
		}
		add(Need{Group: group, Resource: res + "/status", Verb: "update"}, e)
	}
	ast.Inspect(f, func(node ast.Node) bool {
		switch n := node.(type) {
		case *ast.CallExpr:
			for _, a := range n.Args {
				escape(a)
			}
		case *ast.CompositeLit:
			for _, e := range n.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					e = kv.Value
				}
				escape(e)
			}
		case *ast.ReturnStmt:
			for _, r := range n.Results {
				escape(r)
			}
		}
		return true
	})
}

// calledFunc returns "pkgpath.Name" of a call to a package-level function.
func calledFunc(p *packages.Package, call *ast.CallExpr) string {
	var id *ast.Ident
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		id = fn
	case *ast.SelectorExpr:
		id = fn.Sel
	default:
		return ""
	}
	obj, ok := p.TypesInfo.Uses[id].(*types.Func)
	if !ok || obj.Pkg() == nil {
		return ""
	}
	if sig, ok := obj.Type().(*types.Signature); ok && sig.Recv() != nil {
		return ""
	}
	return obj.Pkg().Path() + "." + obj.Name()
}

// Rule is an RBAC rule as rendered (apiGroups, resources, verbs).
type Rule struct {
	APIGroups []string `json:"apiGroups"`
	Resources []string `json:"resources"`
	Verbs     []string `json:"verbs"`
}

// Grants reports whether rule allows n.
func (r Rule) Grants(n Need) bool {
	return matches(r.APIGroups, n.Group) && matches(r.Resources, n.Resource) && matches(r.Verbs, n.Verb)
}

// matches reports whether list holds s or "*" ("*" also covers
// subresources, as in RBAC).
func matches(list []string, s string) bool {
	for _, v := range list {
		if v == s || v == "*" {
			return true
		}
	}
	return false
}
