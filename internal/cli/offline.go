package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/haroute/haroute/internal/certgen"
	"github.com/haroute/haroute/internal/daemon"
	"github.com/haroute/haroute/internal/fsutil"
	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/paths"
	"github.com/haroute/haroute/internal/plan"
	"github.com/haroute/haroute/internal/render"
	"github.com/haroute/haroute/internal/snapshot"
)

// The offline commands (check, render, plan) read a directory exactly as
// the daemon does, without HAProxy.

// loadDir reads and admits dir. File read errors become diagnostics.
func loadDir(ctx context.Context, dir string) (model.Result, error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		// `haroute check route.yaml` read "config dir not found: not a
		// directory", about a path that is there.
		return model.Result{}, fmt.Errorf("%s is a file: give the directory that holds it (haroute reads a whole tree, as the router does)", dir)
	}
	var r snapshot.Reader
	snap, err := r.Read(ctx, dir, snapshot.ModeAuto)
	if err != nil {
		return model.Result{}, err
	}
	res := model.NewLoader().Load(snap.Files)
	if len(snap.Files) == 0 {
		// As `haroute run` judges it: a first start on it waits.
		res.Diagnostics = append(res.Diagnostics, model.Diagnostic{
			Pos: model.Position{Path: dir, Line: 1, Col: 1}, Severity: model.SeverityWarning,
			Message: "no file to read: haroute run would not start HAProxy on this directory (a symlink to a directory inside it is not followed)",
		})
	}
	for _, fe := range snap.Errors {
		res.Diagnostics = append(res.Diagnostics, model.Diagnostic{
			Pos:      model.Position{Path: fe.Path, Line: 1, Col: 1},
			Severity: model.SeverityError,
			Message:  fe.Err.Error(),
		})
	}
	for _, fe := range snap.Warnings {
		res.Diagnostics = append(res.Diagnostics, model.Diagnostic{
			Pos:      model.Position{Path: fe.Path, Line: 1, Col: 1},
			Severity: model.SeverityWarning,
			Message:  fe.Err.Error(),
		})
	}
	// Files the RouterConfig names are read as the daemon reads them, so
	// what check admits, the daemon can load.
	for _, p := range certgen.CheckFiles(res.Desired.Router) {
		res.Diagnostics = append(res.Diagnostics, model.Diagnostic{
			Pos: routerConfigField(res.Objects, p.Field), Severity: model.SeverityError, Field: p.Field, Message: p.Err.Error(),
		})
	}
	res.Diagnostics.Sort()
	return res, nil
}

// routerConfigField is where field is written in the RouterConfig.
func routerConfigField(objs model.Objects, field string) model.Position {
	if len(objs.RouterConfigs) == 0 {
		return model.Position{}
	}
	rc := objs.RouterConfigs[0]
	if p, ok := rc.Source.Lookup(field); ok {
		return p
	}
	return rc.Source.Pos
}

func checkCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("check", stderr)
	strict := fs.Bool("strict", false, "treat warnings (unknown fields, ignored annotations) as errors")
	nofile := fs.Uint64("limit-nofile", daemon.UnitNOFILE, "file-descriptor hard limit the router will run under (LimitNOFILE; the packaged unit's by default)")
	bin := fs.String("haproxy", "", "haproxy binary that judges the RouterConfig's log formats, ciphers and patterns, and loads the whole configuration the routes make (default: haproxy from PATH, else /usr/local/sbin or /usr/sbin)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return parseErr(err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: haroute check DIR [--strict] [--limit-nofile N] [--haproxy PATH]")
		return ExitUsage
	}
	// Asked for by name, it must be there: without it the whole
	// configuration goes unchecked, which a CI job with a wrong path
	// would take for a pass. (Without --haproxy, a host with no HAProxy
	// gets a note: the shape checks still run.)
	unusable := usableHAProxy(ctx, *bin)
	if *bin != "" && unusable != nil {
		fmt.Fprintf(stderr, "haroute check: --haproxy: %v\n", unusable)
		return ExitUsage
	}
	res, err := loadDir(ctx, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "haroute check: %v\n", err)
		return ExitInvalid
	}
	refused, err := judgeByHAProxy(ctx, *bin, unusable, &res)
	if err != nil {
		fmt.Fprintf(stderr, "haroute check: %v\n", err)
		return ExitInvalid
	}
	res.Diagnostics = append(res.Diagnostics, expiryDiagnostics(res, time.Now())...)
	// Notes too (a skipped kind, an annotation haroute ignores): they
	// explain why the served state differs from the files, and do not
	// change the exit code.
	for _, d := range res.Diagnostics {
		fmt.Fprintln(stdout, d.String())
	}
	if res.RouterUnsettled {
		// A wildcard route was reported "not allowed" although the broken
		// RouterConfig allows wildcards: say what the routes were judged by.
		fmt.Fprintln(stdout, "note: the RouterConfig has errors, so the routes were judged with the default settings; "+
			"a running router keeps its last good settings, and errors that depend on them (wildcards, namespaces, selectors) may not apply there")
	}
	admitted, rejected := 0, 0
	for _, s := range res.Desired.Statuses {
		if _, ok := refused[s.Key]; ok || s.State == model.RouteRejected {
			rejected++
		} else {
			admitted++
		}
	}
	if res.Diagnostics.HasErrors(*strict) {
		fmt.Fprintf(stderr, "%s: invalid (%d routes admitted, %d rejected)\n", pos[0], admitted, rejected)
		return ExitInvalid
	}
	// The descriptor budget: a tree that starts fine in a test shell can
	// leave HAProxy no room under the unit's LimitNOFILE, which the
	// router refuses; one that only lowers maxconn is a warning.
	if res.Desired != nil {
		var noRoom *daemon.NoRoomError
		switch err := daemon.FDBudgetProblem(res.Desired, *nofile); {
		case errors.As(err, &noRoom):
			fmt.Fprintf(stdout, "error: %v\n", err)
			fmt.Fprintf(stderr, "%s: invalid under LimitNOFILE %d (%d routes admitted)\n", pos[0], *nofile, admitted)
			return ExitInvalid
		case err != nil:
			fmt.Fprintf(stdout, "warning: %v\n", err)
			if *strict {
				fmt.Fprintf(stderr, "%s: invalid (a warning, under --strict)\n", pos[0])
				return ExitInvalid
			}
		}
	}
	fmt.Fprintf(stderr, "%s: valid (%d routes admitted)\n", pos[0], admitted)
	return ExitOK
}

// judgeByHAProxy adds to res's diagnostics what only HAProxy can judge,
// once the input has no error of its own: the RouterConfig's values, then
// the routes, each with the settings. It returns the routes HAProxy
// refuses, with why. unusable is usableHAProxy(bin), asked once by the
// caller: each ask runs the binary.
func judgeByHAProxy(ctx context.Context, bin string, unusable error, res *model.Result) (map[model.RouteKey]string, error) {
	if !res.Diagnostics.HasErrors(false) && len(res.Objects.RouterConfigs) > 0 {
		ds, err := judgeRouterConfig(ctx, bin, unusable, *res)
		if err != nil {
			return nil, err
		}
		res.Diagnostics = append(res.Diagnostics, ds...)
		res.Diagnostics.Sort()
	}
	if res.Diagnostics.HasErrors(false) || res.Desired == nil {
		return nil, nil
	}
	if unusable != nil || len(res.Desired.Routes) == 0 {
		return nil, nil
	}
	ds, refused, err := judgeRoutes(ctx, bin, *res)
	if err != nil {
		return nil, err
	}
	res.Diagnostics = append(res.Diagnostics, ds...)
	res.Diagnostics.Sort()
	return refused, nil
}

// usableHAProxy says why bin cannot judge configurations, or nil: it is
// missing, or it is not an HAProxy that runs. Such a binary (its
// libraries missing, /bin/true) had its failure pinned on the
// RouterConfig, or passed everything.
func usableHAProxy(ctx context.Context, bin string) error {
	if _, err := haproxy.Binary(bin); err != nil {
		return err
	}
	if _, err := haproxy.BinaryVersion(ctx, bin); err != nil {
		return fmt.Errorf("not an HAProxy that runs: %w", err)
	}
	return nil
}

// judgeRouterConfig asks HAProxy what only it can judge of the settings
// (model.JudgeSettings): it must load a configuration made with them and
// no routes. HAProxy's refusals come back as errors at their fields;
// without an HAProxy at hand, as a note that the check was not made.
func judgeRouterConfig(ctx context.Context, bin string, unusable error, res model.Result) (model.Diagnostics, error) {
	rc := res.Objects.RouterConfigs[0]
	if unusable != nil {
		return model.Diagnostics{{Pos: rc.Source.Pos, Severity: model.SeverityNote,
			Message: fmt.Sprintf("log formats, cipher lists and subject patterns were checked for shape only: %v", unusable)}}, nil
	}
	tmp, err := os.MkdirTemp("", "haroute-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	check := func(s model.Settings) (string, error) { return haproxyJudges(ctx, bin, tmp, &model.Desired{Router: s}) }
	msg, err := check(res.Desired.Router)
	if err != nil || msg == "" {
		return nil, err
	}
	problems, err := model.JudgeSettings(res.Desired.Router, msg, check)
	if err != nil {
		return nil, err
	}
	var ds model.Diagnostics
	for _, p := range problems {
		ds = append(ds, model.Diagnostic{Pos: rc.Source.At(p.Field), Severity: model.SeverityError, Field: p.Field, Message: p.Message})
	}
	return ds, nil
}

// haproxyJudges renders d into dir and asks HAProxy to load it: HAProxy's
// refusal, or "". The files of an earlier call are written over, not
// removed: what they hold that d lacks no configuration names, and the
// default certificate generated into dir is made once for all the calls
// of a search.
func haproxyJudges(ctx context.Context, bin, dir string, d *model.Desired) (string, error) {
	in, err := offlineInput(d, dir, paths.RunDir)
	if err != nil {
		return "", err
	}
	b, err := render.Render(in)
	if err != nil {
		return err.Error(), nil
	}
	for _, f := range b.Files {
		if err := writeBundleFile(dir, f); err != nil {
			return "", err
		}
	}
	err = haproxy.Check(ctx, bin, filepath.Join(dir, render.ConfigFile))
	if ce := new(haproxy.CheckError); errors.As(err, &ce) {
		// HAProxy's alerts name lines of a temporary file: the field
		// says where the value is.
		return strings.Join(ce.Lines, "; "), nil
	}
	return "", err
}

// judgeRoutes asks HAProxy to load the whole configuration the routes
// make, as the router's `haproxy -c` does before it reloads: what
// validation cannot see (material OpenSSL reads otherwise than Go) then
// fails here, not at the router. The routes HAProxy refuses are found as
// the router finds them (daemon.RefusedRoutes), each an error at its
// route; it returns them too.
func judgeRoutes(ctx context.Context, bin string, res model.Result) (model.Diagnostics, map[model.RouteKey]string, error) {
	tmp, err := os.MkdirTemp("", "haroute-check-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	check := func(routes []*model.AdmittedRoute) (string, error) {
		d := *res.Desired
		d.Routes = routes
		return haproxyJudges(ctx, bin, filepath.Join(tmp, "b"), &d)
	}
	refused, err := daemon.RefusedRoutes(res.Desired.Routes, check)
	if err != nil || len(refused) == 0 {
		return nil, nil, err
	}
	var ds model.Diagnostics
	for _, r := range res.Objects.Routes {
		// (The decoder gave every object a namespace.)
		if msg, ok := refused[model.RouteKey{Namespace: r.Meta.Namespace, Name: r.Meta.Name}]; ok {
			ds = append(ds, model.Diagnostic{Pos: r.Source.At("metadata.name"), Severity: model.SeverityError, Field: "metadata.name",
				Message: "HAProxy refused this route: " + msg})
		}
	}
	return ds, refused, nil
}

// expiryDiagnostics tells of the routes' own certificates that have
// expired (a warning) or expire within a week (a note). They are served
// all the same, as OpenShift serves them, and so admitted: an operator
// told only "admitted" looked for the fault of a route clients refused
// everywhere but there (T42).
func expiryDiagnostics(res model.Result, now time.Time) model.Diagnostics {
	if res.Desired == nil {
		return nil
	}
	objects := make(map[model.RouteKey]*model.Route, len(res.Objects.Routes))
	for _, r := range res.Objects.Routes {
		objects[model.RouteKey{Namespace: r.Meta.Namespace, Name: r.Meta.Name}] = r
	}
	var ds model.Diagnostics
	for _, r := range res.Desired.Routes {
		o := objects[r.Key]
		if r.TLS.Certificate == "" || o == nil {
			continue
		}
		at := model.CertificateNotAfter(r.TLS.Certificate)
		switch {
		case at.IsZero():
		case !at.After(now):
			ds = append(ds, model.Diagnostic{Pos: o.Source.At("spec.tls.certificate"), Severity: model.SeverityWarning, Field: "spec.tls.certificate",
				Message: fmt.Sprintf("the certificate expired on %s: it is served all the same, as OpenShift does, and clients that verify it refuse the route", at.UTC().Format(time.RFC3339))})
		case at.Sub(now) < 7*24*time.Hour:
			ds = append(ds, model.Diagnostic{Pos: o.Source.At("spec.tls.certificate"), Severity: model.SeverityNote, Field: "spec.tls.certificate",
				Message: fmt.Sprintf("the certificate expires on %s, in %s", at.UTC().Format(time.RFC3339), at.Sub(now).Round(time.Hour))})
		}
	}
	return ds
}

func renderCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("render", stderr)
	out := fs.String("out", "", "output directory for the bundle")
	runDir := fs.String("run-dir", paths.RunDir, "run dir the config refers to for its sockets")
	allowErrors := fs.Bool("allow-errors", false, "render what is admitted even when the input has errors (exit 0)")
	nofile := fs.Uint64("limit-nofile", daemon.UnitNOFILE, "file-descriptor hard limit HAProxy will run under (LimitNOFILE; the packaged unit's by default): maxconn is fitted to it as the router fits it")
	bin := fs.String("haproxy", "", "haproxy binary that judges what only it can, as check does (default: haproxy from PATH, else /usr/local/sbin or /usr/sbin)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return parseErr(err)
	}
	if len(pos) != 1 || *out == "" {
		fmt.Fprintln(stderr, "usage: haroute render DIR --out OUTDIR [--allow-errors] [--limit-nofile N] [--haproxy PATH]")
		return ExitUsage
	}
	unusable := usableHAProxy(ctx, *bin)
	if *bin != "" && unusable != nil {
		fmt.Fprintf(stderr, "haroute render: --haproxy: %v\n", unusable)
		return ExitUsage
	}
	outDir, err := filepath.Abs(*out)
	if err != nil {
		fmt.Fprintf(stderr, "haroute render: %v\n", err)
		return ExitInvalid
	}
	res, err := loadDir(ctx, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "haroute render: %v\n", err)
		return ExitInvalid
	}
	if !*allowErrors {
		// As check judges it: a log format, cipher or pattern only
		// HAProxy reads would otherwise render a configuration it
		// refuses, with exit 0. (What --allow-errors renders is what
		// the router would try to serve, judged when it loads.)
		if unusable != nil {
			fmt.Fprintf(stderr, "note: log formats, cipher lists, subject patterns and the whole configuration were not judged by HAProxy: %v\n", unusable)
		}
		if _, err := judgeByHAProxy(ctx, *bin, unusable, &res); err != nil {
			fmt.Fprintf(stderr, "haroute render: %v\n", err)
			return ExitInvalid
		}
	}
	for _, d := range res.Diagnostics {
		if d.Severity != model.SeverityNote {
			fmt.Fprintln(stderr, d.String())
		}
	}
	// As check: input with errors fails, and then nothing is written,
	// unless the caller asks for what the daemon would serve of it.
	if res.Diagnostics.HasErrors(false) && !*allowErrors {
		fmt.Fprintf(stderr, "%s: invalid, nothing rendered (--allow-errors renders what is admitted)\n", pos[0])
		return ExitInvalid
	}
	// What the router would run: HAProxy refuses to start when maxconn
	// does not fit the descriptor limit.
	desired, err := daemon.FitToLimit(res.Desired, *nofile)
	if err != nil {
		fmt.Fprintf(stderr, "haroute render: %v\n", err)
		return ExitInvalid
	}
	if desired != res.Desired && !desired.Router.MaxConnectionsAuto {
		fmt.Fprintf(stderr, "haroute render: maxConnections %d lowered to %d to fit --limit-nofile %d\n",
			res.Desired.Router.MaxConnections, desired.Router.MaxConnections, *nofile)
	}
	in, err := offlineInput(desired, outDir, *runDir)
	if err != nil {
		fmt.Fprintf(stderr, "haroute render: %v\n", err)
		return ExitInvalid
	}
	b, err := render.Render(in)
	if err != nil {
		fmt.Fprintf(stderr, "haroute render: %v\n", err)
		return ExitInvalid
	}
	for _, f := range b.Files {
		if err := writeBundleFile(outDir, f); err != nil {
			fmt.Fprintf(stderr, "haroute render: %v\n", err)
			return ExitInvalid
		}
	}
	fmt.Fprintf(stdout, "wrote %d files to %s\n", len(b.Files), outDir)
	if generatesDefaultCertificate(res.Desired.Router) {
		// Not part of the bundle, but written all the same, and a key.
		fmt.Fprintf(stdout, "and the generated self-signed default certificate with its private key to %s (mode 0600), which later renders into %s reuse\n",
			filepath.Join(outDir, offlineStateDir, certgen.DefaultFile), outDir)
	}
	return ExitOK
}

// offlineStateDir, under the output directory, keeps what render
// generates when the RouterConfig names no default certificate.
const offlineStateDir = ".state"

// generatesDefaultCertificate says whether certgen.Resolve makes (or
// reuses) a self-signed default certificate in the state dir.
func generatesDefaultCertificate(s model.Settings) bool {
	return s.DefaultCertificate == "" && s.DefaultCertificateFile == ""
}

func writeBundleFile(outDir string, f render.File) error {
	path := filepath.Join(outDir, filepath.FromSlash(f.Name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return fsutil.WriteAtomic(path, f.Mode, func(w io.Writer) error {
		_, err := f.WriteTo(w)
		return err
	})
}

// offlineInput is render.Input for commands without a state dir: the
// default certificate, when none is configured, is generated into the
// output directory itself.
func offlineInput(d *model.Desired, outDir, runDir string) (render.Input, error) {
	m, err := certgen.Resolve(d.Router, filepath.Join(outDir, offlineStateDir), nowFunc)
	if err != nil {
		return render.Input{}, err
	}
	return render.Input{
		Desired: d, Dir: outDir, RunDir: runDir,
		DefaultCertificate: m.DefaultCertificate, DefaultDestinationCA: m.DefaultDestinationCA,
		StatsCredentials: m.StatsCredentials, ClientCA: m.ClientCA, ErrorPages: m.ErrorPages,
	}, nil
}

func planCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("plan", stderr)
	from := fs.String("from", "", "directory with the applied state")
	to := fs.String("to", "", "directory with the desired state")
	if err := fs.Parse(args); err != nil {
		return parseErr(err)
	}
	if *from == "" || *to == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: haroute plan --from DIR --to DIR")
		return ExitUsage
	}
	// Both sides render into the same (virtual) directory, as the daemon's
	// live bundle does, so only real differences show.
	tmp, err := os.MkdirTemp("", "haroute-plan-")
	if err != nil {
		fmt.Fprintf(stderr, "haroute plan: %v\n", err)
		return ExitInvalid
	}
	defer os.RemoveAll(tmp)
	var states [2]plan.State
	for i, dir := range []string{*from, *to} {
		res, err := loadDir(ctx, dir)
		if err != nil {
			fmt.Fprintf(stderr, "haroute plan: %v\n", err)
			return ExitInvalid
		}
		if res.Diagnostics.HasErrors(false) {
			fmt.Fprintf(stderr, "haroute plan: %s has errors (run haroute check %s); planning with what is valid\n", dir, dir)
		}
		in, err := offlineInput(res.Desired, tmp, paths.RunDir)
		if err != nil {
			fmt.Fprintf(stderr, "haroute plan: %v\n", err)
			return ExitInvalid
		}
		b, err := render.Render(in)
		if err != nil {
			fmt.Fprintf(stderr, "haroute plan: %s: %v\n", dir, err)
			return ExitInvalid
		}
		states[i] = plan.State{Desired: res.Desired, Bundle: b, Input: in}
	}
	p := plan.Compute(states[0], states[1])
	p.Format(stdout)
	return ExitOK
}
