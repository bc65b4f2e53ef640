package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/daemon"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
	"github.com/haroute/haroute/test/testenv"
)

// The config directory vanishing, a link pointing nowhere, and then a new
// directory in its place: routes keep being served throughout, and the new
// content is followed once it appears.
func TestDirectoryVanishesAndLinkDangles(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	_, link := serveViaGitSync(t, r, oneRoute(r, one), "one")
	root := filepath.Dir(link)

	// The link now points nowhere.
	target, err := os.Readlink(link)
	must(t, err)
	must(t, os.Remove(link))
	must(t, os.Symlink("does-not-exist", link))
	r.reportsError("read")
	r.keepsServing("one.e2e.test", "one", 10, "dangling link")
	// A gauge says so while it lasts (an alert watches it); the error
	// counter alone rose once, then only at each resync.
	r.eventually(10*time.Second, "haroute_config_dir_unreadable 1", func() error {
		return r.metricsHave("haroute_config_dir_unreadable 1")
	})
	// Pointed back at the same generation: the read error is over, though
	// nothing changed to apply.
	must(t, os.Remove(link))
	must(t, os.Symlink(target, link))
	r.eventually(10*time.Second, "the read error cleared", func() error {
		if e := r.store.Get().LastError; e != nil {
			return fmt.Errorf("last error still %q", e.Message)
		}
		return r.metricsHave("haroute_config_dir_unreadable 0")
	})
	must(t, os.Remove(link))
	must(t, os.Symlink("does-not-exist", link))
	r.reportsError("read")
	// The target directory itself vanishes.
	must(t, os.RemoveAll(filepath.Join(root, target)))
	time.Sleep(300 * time.Millisecond) // no state to wait for: nothing should change
	r.keepsServing("one.e2e.test", "one", 10, "target directory gone")

	// A new generation appears: followed.
	must(t, os.Remove(link))
	g2 := publish.NewGitSync(root, link)
	must(t, g2.Publish(oneRoute(r, two)))
	r.serves("one.e2e.test", "/", "two")
}

// A file that cannot be read keeps the objects it held; the rest follows.
func TestUnreadableFileKeepsItsRoutes(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	must(t, os.WriteFile(filepath.Join(r.dir, "router.yaml"), []byte(r.routerConfig("")), 0o644))
	must(t, os.WriteFile(filepath.Join(r.dir, "a.yaml"), []byte(join(routeYAML("a", "a.e2e.test", "", "one"), endpointsYAML("one", one))), 0o644))
	r.start("plain")
	r.serves("a.e2e.test", "/", "one")
	// a.yaml becomes unreadable: a directory of the same name would be
	// skipped silently, so use an oversized file, which is a read error.
	big := make([]byte, 9<<20)
	for i := range big {
		big[i] = '#'
	}
	must(t, os.WriteFile(filepath.Join(r.dir, "a.yaml"), big, 0o644))
	must(t, os.WriteFile(filepath.Join(r.dir, "b.yaml"), []byte(join(routeYAML("b", "b.e2e.test", "", "two"), endpointsYAML("two", two))), 0o644))
	r.serves("b.e2e.test", "/", "two")
	r.serves("a.e2e.test", "/", "one")
	if st := r.store.Get(); st.LastError == nil {
		t.Fatal("no error reported for the oversized file")
	}
	// Counted and shown as what it is: a route serving its last good
	// version, an input error (it read "admitted", 0 errors, 0 stale).
	st := r.routeStatus("a", model.RouteStale)
	if len(st.Reasons) != 1 || !strings.Contains(st.Reasons[0], "a.yaml: file is") {
		t.Fatalf("stale a's reasons %q, want the read error", st.Reasons)
	}
	r.eventually(10*time.Second, "the read error counted", func() error {
		// a's route and its Endpoints are stale.
		return r.metricsHave(`haroute_input_problems{severity="error"} 1`, "haroute_stale_objects 2")
	})
	r.reportsStanding(10*time.Second, "a.yaml: file is", "its last good content stays in force")
	// A file new in the tree and unreadable from the start never had a
	// last good content to keep.
	must(t, os.WriteFile(filepath.Join(r.dir, "c.yaml"), big, 0o644))
	r.reportsStanding(10*time.Second, "c.yaml: file is", "it contributes nothing until it can be read")
}

// Start-up errors an operator must fix are clear: a port in use is named,
// a missing HAProxy binary names the path tried.
func TestStartupErrorsAreClear(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", r.http))
	must(t, err)
	defer ln.Close()
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(oneRoute(r, one)))
	d, err := daemon.New(daemon.Options{ConfigDir: r.dir, RunDir: r.runDir, StateDir: t.TempDir(), HAProxy: testutil.HAProxy(t)})
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = d.Run(ctx)
	// The field that names the port, as a running router says it (the
	// message named only the line of haproxy.cfg).
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("127.0.0.1:%d", r.http)) || !strings.Contains(err.Error(), "in use") ||
		!strings.Contains(err.Error(), "router.yaml:") || !strings.Contains(err.Error(), ": spec.bindOptions.ports.http: ") {
		t.Fatalf("port in use: error = %v; want one naming router.yaml's spec.bindOptions.ports.http, 127.0.0.1:%d and 'in use'", err, r.http)
	}

	_, err = daemon.New(daemon.Options{ConfigDir: r.dir, RunDir: r.runDir, StateDir: t.TempDir(), HAProxy: "/nonexistent/haproxy"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/haproxy") {
		t.Fatalf("missing binary: error = %v; want one naming /nonexistent/haproxy", err)
	}

	// A ',' in the state dir's path split the paths HAProxy was given
	// (bind lists, converter arguments): every start failed.
	comma := filepath.Join(t.TempDir(), "a,b")
	_, err = daemon.New(daemon.Options{ConfigDir: r.dir, RunDir: r.runDir, StateDir: comma, HAProxy: testutil.HAProxy(t)})
	if err == nil || !strings.Contains(err.Error(), comma) || !strings.Contains(err.Error(), "','") || !strings.HasPrefix(err.Error(), "--state-dir ") {
		t.Fatalf("state dir with a comma: error = %v; want one naming --state-dir, it and ','", err)
	}
	// A '#' starts a comment in haproxy.cfg: nothing rendered, and
	// haroute ran on, not ready.
	hash := filepath.Join(t.TempDir(), "a#b")
	if _, err = daemon.New(daemon.Options{ConfigDir: r.dir, RunDir: r.runDir, StateDir: hash, HAProxy: testutil.HAProxy(t)}); err == nil || !strings.Contains(err.Error(), "'#'") {
		t.Fatalf("state dir with a '#': error = %v; want one naming '#'", err)
	}

	// A file where a directory should be: the error says which flag.
	file := filepath.Join(t.TempDir(), "afile")
	must(t, os.WriteFile(file, nil, 0o600))
	for _, tc := range []struct{ flag, run, state string }{{"--run-dir", file, t.TempDir()}, {"--state-dir", r.runDir, file}} {
		_, err = daemon.New(daemon.Options{ConfigDir: r.dir, RunDir: tc.run, StateDir: tc.state, HAProxy: testutil.HAProxy(t)})
		if want := tc.flag + ": create " + file + ": "; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s is a file: error = %v; want one starting %q", tc.flag, err, want)
		}
	}
}

// HAProxy dying in the middle of a stream of endpoint changes: the router
// restarts it and converges on the last generation.
func TestHAProxyRestartMidChangesConverges(t *testing.T) {
	r := newRouter(t)
	r.breaksHAProxy = true
	var bs []*backend
	for i := 0; i < 6; i++ {
		bs = append(bs, startBackend(t, fmt.Sprintf("b%d", i)))
	}
	w := serveWeb(t, r, "", bs[:1]...)
	pid := r.store.Get().HAProxy.PID
	for n := 2; n <= 6; n++ {
		must(t, w.Publish(scaleFiles(r, "", bs[n-1:n])))
		if n == 3 {
			must(t, syscall.Kill(pid, syscall.SIGKILL))
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.eventually(30*time.Second, "converged on the last generation after a restart", func() error {
		st := r.store.Get()
		if st.HAProxy.PID == pid || !st.Ready {
			return fmt.Errorf("pid %d ready %v", st.HAProxy.PID, st.Ready)
		}
		for i := 0; i < 10; i++ {
			got, err := r.get("web.e2e.test", "/")
			if err != nil {
				return err
			}
			if got != "b5" {
				return fmt.Errorf("answered by %q, want b5", got)
			}
		}
		return nil
	})
}

// A change that cannot be written (in life, a full or read-only disk;
// here the live directory leads into /proc, where no file can be made,
// even by root) is retried once writing works again: the periodic resync
// picks it up, with no new change needed. (A plain file where a bundle
// directory belongs is replaced instead:
// TestBundleDirReplacesWhatStandsWhereItsDirectoriesBelong.)
func TestUnwritableChangeIsRetried(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := serveWeb(t, r, "", one)
	live := filepath.Join(r.stateDir, "live")
	must(t, os.Rename(live, live+".away"))
	must(t, os.Symlink("/proc/1", live))
	must(t, w.Publish(scaleFiles(r, "", []*backend{two})))
	r.reportsError("write live bundle")
	r.keepsServing("web.e2e.test", "one", 1, "while the change cannot be written")
	must(t, os.Remove(live))
	must(t, os.Rename(live+".away", live))
	r.serves("web.e2e.test", "/", "two") // within a resync (2 s here)
}

// Files of the live bundle removed behind haroute's back (here the maps
// directory) made a crashed HAProxy fail to start again, and every reload
// fail, until haroute itself was restarted: haroute remembered having
// written them. Before HAProxy loads the directory it is checked, and what
// is missing is written again.
func TestLiveFilesRemovedAreWrittenBeforeHAProxyLoads(t *testing.T) {
	r := newRouter(t)
	r.breaksHAProxy = true
	one := startBackend(t, "one")
	w := serveWeb(t, r, "", one)
	pid := r.store.Get().HAProxy.PID
	must(t, os.RemoveAll(filepath.Join(r.stateDir, "live", "maps")))
	must(t, syscall.Kill(pid, syscall.SIGKILL))
	r.eventually(30*time.Second, "a new HAProxy serving", func() error {
		if st := r.store.Get(); st.HAProxy.PID == pid || !st.Ready {
			return fmt.Errorf("pid %d ready %v", st.HAProxy.PID, st.Ready)
		}
		if got, err := r.get("web.e2e.test", "/"); err != nil || got != "one" {
			return fmt.Errorf("answered %q, %v", got, err)
		}
		return nil
	})

	// And before a reload: a route that needs one is served.
	must(t, os.RemoveAll(filepath.Join(r.stateDir, "live", "maps")))
	gen := scaleFiles(r, "", []*backend{one})
	gen["reload.yaml"] = []byte(reloadingRouteYAML("reload", "reload.e2e.test", "web"))
	must(t, w.Publish(gen))
	r.serves("reload.e2e.test", "/", "one")
	r.serves("web.e2e.test", "/", "one")
}

// The candidate directory removed behind haroute's back (a clean-up of
// the state dir): the next candidate lacked the files haroute remembered
// writing, `haproxy -c` refused it, the refusal was pinned on the
// RouterConfig, and no change that needs a reload applied until haroute
// was restarted. The candidate is checked for drift at every write.
func TestRemovedCandidateIsWrittenWhole(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	w := serveWeb(t, r, "", one)
	gen := scaleFiles(r, "", []*backend{one})
	gen["reload.yaml"] = []byte(reloadingRouteYAML("reload", "reload.e2e.test", "web"))
	must(t, w.Publish(gen))
	r.serves("reload.e2e.test", "/", "one")

	must(t, os.RemoveAll(filepath.Join(r.stateDir, "candidate")))
	gen["reload2.yaml"] = []byte(reloadingRouteYAML("reload2", "reload2.e2e.test", "web"))
	must(t, w.Publish(gen))
	r.serves("reload2.e2e.test", "/", "one")
	if st := r.store.Get(); st.LastError != nil {
		t.Errorf("last error %q, want none", st.LastError.Message)
	}
}

// While HAProxy is down and cannot start again (here a wrapper refuses to
// start it), status and metrics say so: they went on naming the dead
// master and counting its worker, and the failed start is the last error.
func TestStatusForgetsAnExitedHAProxy(t *testing.T) {
	r := newRouter(t)
	r.breaksHAProxy = true
	flag := filepath.Join(t.TempDir(), "refuse")
	r.haproxy = filepath.Join(t.TempDir(), "haproxy")
	must(t, os.WriteFile(r.haproxy, []byte(fmt.Sprintf("#!/bin/sh\n[ -e %s ] && [ \"$1\" = -W ] && { echo '[ALERT] refused by the test' >&2; exit 1; }\nexec %s \"$@\"\n",
		flag, testutil.HAProxy(t))), 0o755))
	one := startBackend(t, "one")
	serveWeb(t, r, "", one)
	pid := r.store.Get().HAProxy.PID
	must(t, os.WriteFile(flag, nil, 0o644))
	must(t, syscall.Kill(pid, syscall.SIGKILL))
	r.eventually(20*time.Second, "status and metrics without the dead HAProxy", func() error {
		st := r.store.Get()
		if st.Ready || st.HAProxy.PID != 0 || len(st.HAProxy.Workers) != 0 {
			return fmt.Errorf("ready %v, haproxy %+v", st.Ready, st.HAProxy)
		}
		if st.LastError == nil || !strings.Contains(st.LastError.Message, "refused by the test") {
			return fmt.Errorf("last error %+v", st.LastError)
		}
		m, err := r.scrapeMetrics()
		if err != nil {
			return err
		}
		if !strings.Contains(m, `haroute_haproxy_processes{role="current"} 0`) {
			return errors.New("haroute_haproxy_processes still counts a current worker")
		}
		return nil
	})
	must(t, os.Remove(flag))
	r.eventually(30*time.Second, "served again once HAProxy starts", func() error {
		if got, err := r.get("web.e2e.test", "/"); err != nil || got != "one" {
			return fmt.Errorf("answered %q, %v", got, err)
		}
		return nil
	})
	// The refusal is over once HAProxy runs the state again: it stood as
	// the last error until the next change.
	r.eventually(5*time.Second, "the refusal resolved", func() error {
		if st := r.store.Get(); st.LastError != nil {
			return fmt.Errorf("last error %+v", st.LastError)
		}
		return nil
	})
}

// A stopped HAProxy worker (SIGSTOP) answers nothing: its sockets read as
// dead and every reload failed, since it cannot hand its listeners over,
// until someone sent SIGCONT. The heal resumes it.
func TestStoppedHAProxyWorkerIsResumed(t *testing.T) {
	r := newRouter(t)
	r.breaksHAProxy = true
	one := startBackend(t, "one")
	serveWeb(t, r, "", one)
	workers := testenv.ShowProc(t, r.runDir).Workers
	if len(workers) != 1 {
		t.Fatalf("workers %+v", workers)
	}
	worker := workers[0].PID
	must(t, syscall.Kill(worker, syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(worker, syscall.SIGCONT) })
	r.eventually(30*time.Second, "served again", func() error {
		if got, err := r.get("web.e2e.test", "/"); err != nil || got != "one" {
			return fmt.Errorf("answered %q, %v", got, err)
		}
		return nil
	})
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", worker))
	if err == nil && strings.Contains(string(stat), ") T ") {
		t.Fatalf("worker %d is still stopped", worker)
	}
}

// The default certificate lives outside the config dir, so no event
// announces its rotation: the periodic resync compares the files' stamps
// and reads them again when one moved. It waited for an unrelated change
// in the config dir (or a SIGHUP) before.
func TestDefaultCertificateRotationIsPickedUpByTheResync(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	certFile := filepath.Join(t.TempDir(), "default.pem")
	install := func(serial int64) {
		cert, key := makeCert(t, "*.e2e.test", serial)
		tmp := certFile + ".tmp"
		must(t, os.WriteFile(tmp, []byte(cert+key), 0o600))
		must(t, os.Rename(tmp, certFile))
	}
	install(7001)
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(files("router.yaml", r.routerConfig("  defaultCertificate: "+certFile+"\n"),
		"edge.yaml", routeYAML("edge", "edge.e2e.test", "", "one")+"  tls:\n    termination: edge\n",
		"endpoints.yaml", endpointsYAML("one", one))))
	r.start("atomic")
	served := func() (int64, error) {
		c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.https), &tls.Config{InsecureSkipVerify: true, ServerName: "edge.e2e.test"})
		if err != nil {
			return 0, err
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
	}
	wantSerial := func(want int64) func() error {
		return func() error {
			got, err := served()
			if err != nil || got != want {
				return fmt.Errorf("serial %d, %v; want %d", got, err, want)
			}
			return nil
		}
	}
	r.eventually(10*time.Second, "the first certificate", wantSerial(7001))
	install(7002)
	r.eventually(15*time.Second, "the rotated certificate, with no change in the config dir", wantSerial(7002))
	if got, err := r.getTLS("edge.e2e.test"); err != nil || got != "one" {
		t.Fatalf("edge route after the rotation: %q, %v", got, err)
	}

	// A rotation that writes a broken file: the last good certificate
	// keeps serving, and that is an input error and a stale object, at
	// the field naming the file (no alert fired on it before).
	tmp := certFile + ".tmp"
	must(t, os.WriteFile(tmp, []byte("garbage\n"), 0o600))
	must(t, os.Rename(tmp, certFile))
	r.eventually(15*time.Second, "the broken certificate reported", func() error {
		if err := r.metricsHave(`haroute_input_problems{severity="error"} 1`, "haroute_stale_objects 1"); err != nil {
			return err
		}
		if st := r.store.Get(); st.InputProblems.Errors != 1 || st.LastError == nil ||
			!strings.HasPrefix(st.LastError.Message, "router.yaml:") || !strings.Contains(st.LastError.Message, "spec.defaultCertificate") ||
			len(st.StaleObjects) != 1 || !strings.Contains(st.StaleObjects[0], "the last good content of the file it names serves") {
			return fmt.Errorf("status: %d errors, last error %+v, stale objects %q", st.InputProblems.Errors, st.LastError, st.StaleObjects)
		}
		return nil
	})
	if got, err := served(); err != nil || got != 7002 {
		t.Fatalf("after a broken rotation: serial %d, %v; want the last good 7002", got, err)
	}
	install(7003)
	r.eventually(15*time.Second, "the mended certificate", wantSerial(7003))
	r.eventually(10*time.Second, "no input error left", func() error {
		if n := r.store.Get().InputProblems.Errors; n != 0 {
			return fmt.Errorf("%d input errors", n)
		}
		return nil
	})
}

// A default certificate file broken while the RouterConfig naming it is
// unchanged keeps its last good content, and an edit of other settings
// still applies: the file was judged again with every edit, and each was
// refused until the certificate was fixed.
func TestBrokenDefaultCertificateFileLetsOtherSettingsChange(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	certFile := defaultCertificateFile(t, 7001)
	w := publish.NewAtomicWriter(r.dir)
	gen := edgeWithDefaultCertificate(r, certFile, one)
	must(t, w.Publish(gen("")))
	r.start("atomic")
	r.eventually(10*time.Second, "the default certificate", func() error { return servedSerial(r, "edge.e2e.test", 7001) })

	must(t, os.WriteFile(certFile, []byte("garbage\n"), 0o600))
	must(t, w.Publish(gen("    clientTimeout: 31s\n")))
	r.onDisk("haproxy.cfg", "timeout client 31s")
	if err := servedSerial(r, "edge.e2e.test", 7001); err != nil {
		t.Fatalf("with the file broken: %v", err)
	}
	r.reportsError("defaultCertificate")
}

// A default certificate file rotated to content Go takes and HAProxy
// refuses (here a wrapper's `haproxy -c` refuses any candidate holding
// it): no route and no setting is to blame, and every later change was
// refused with the file. The file's last good content serves, the error
// names the field, other changes apply, and the file's next content is
// judged afresh.
func TestDefaultCertificateFileHAProxyRefusesKeepsItsLastGood(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	certFile := defaultCertificateFile(t, 7001)
	badCert, badKey := makeCert(t, "*.e2e.test", 7002)
	r.haproxy = refusingCertificates(t, badKey)
	w := publish.NewAtomicWriter(r.dir)
	gen := edgeWithDefaultCertificate(r, certFile, one)
	must(t, w.Publish(gen("")))
	r.start("atomic")
	r.eventually(10*time.Second, "the default certificate", func() error { return servedSerial(r, "edge.e2e.test", 7001) })

	// The rotation alone, found by the resync.
	must(t, os.WriteFile(certFile, []byte(badCert+badKey), 0o600))
	r.trigger <- struct{}{}
	r.reportsError("spec.defaultCertificate: HAProxy refused the file's content")
	if err := servedSerial(r, "edge.e2e.test", 7001); err != nil {
		t.Fatalf("with the refused content in the file: %v", err)
	}
	// Other changes apply.
	must(t, w.Publish(gen("    clientTimeout: 31s\n")))
	r.onDisk("haproxy.cfg", "timeout client 31s")
	if err := servedSerial(r, "edge.e2e.test", 7001); err != nil {
		t.Fatalf("with the refused content in the file, after a change: %v", err)
	}
	r.reportsError("spec.defaultCertificate: HAProxy refused the file's content")

	// A restart finds the refusal again, with the saved last good content
	// to fall back on: it stayed down, not ready, before.
	r.stop()
	r.start("atomic")
	r.eventually(10*time.Second, "the last good default certificate after a restart", func() error { return servedSerial(r, "edge.e2e.test", 7001) })
	r.onDisk("haproxy.cfg", "timeout client 31s")
	r.reportsError("spec.defaultCertificate: HAProxy refused the file's content")

	good, goodKey := makeCert(t, "*.e2e.test", 7003)
	must(t, os.WriteFile(certFile, []byte(good+goodKey), 0o600))
	r.trigger <- struct{}{}
	r.eventually(10*time.Second, "the next content of the file", func() error { return servedSerial(r, "edge.e2e.test", 7003) })
}

// A change that comes while the HAProxy worker is stopped (SIGSTOP, a
// debugger) resumes it and applies at runtime: the session waited its
// whole timeout (15 s, the loop blocked) and fell back to a reload.
func TestRuntimeChangeResumesStoppedWorker(t *testing.T) {
	r := newRouter(t)
	r.breaksHAProxy = true
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := serveWeb(t, r, "", one)
	worker := testenv.ShowProc(t, r.runDir).Workers[0].PID
	before := r.store.Get().Fallbacks
	must(t, syscall.Kill(worker, syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(worker, syscall.SIGCONT) })
	start := time.Now()
	must(t, w.Publish(scaleFiles(r, "", []*backend{two})))
	r.serves("web.e2e.test", "/", "two")
	if got := r.store.Get().Fallbacks - before; got != 0 {
		t.Errorf("%d fallback reloads after %s, want the change applied at runtime once the worker was resumed", got, time.Since(start))
	}
}

// edgeWithDefaultCertificate is a generation of an edge route on the
// default certificate, which certFile holds, with extra RouterConfig spec.
func edgeWithDefaultCertificate(r *router, certFile string, one *backend) func(extra string) map[string][]byte {
	return func(extra string) map[string][]byte {
		return files("router.yaml", r.routerConfig(extra+"  defaultCertificate: "+certFile+"\n"),
			"edge.yaml", edgeRouteYAML("edge", "edge.e2e.test", "one"),
			"endpoints.yaml", endpointsYAML("one", one))
	}
}

// refusingCertificates writes a wrapper of the real haproxy that, as
// HAProxy refuses material OpenSSL cannot load, refuses to check or start
// a configuration whose certificates hold keyPEM, and returns its path:
// material Go takes and HAProxy refuses, which the tests cannot otherwise
// make on demand.
func refusingCertificates(t *testing.T, keyPEM string) string {
	marker := strings.Split(keyPEM, "\n")[2] // a base64 line of the key's own
	path := filepath.Join(t.TempDir(), "haproxy")
	must(t, os.WriteFile(path, []byte(fmt.Sprintf("#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in *haproxy.cfg) d=$(dirname \"$a\");; esac; done\n"+
		"if [ -n \"$d\" ] && grep -rqF '%s' \"$d/certs\"; then echo '[ALERT] unable to load the certificate (the test refuses it)' >&2; exit 1; fi\nexec %s \"$@\"\n",
		marker, testutil.HAProxy(t))), 0o755))
	return path
}

// defaultCertificateFile writes a certificate for *.e2e.test with its key
// to a file outside the config dir, as a RouterConfig's
// defaultCertificate names one, and returns its path.
func defaultCertificateFile(t *testing.T, serial int64) string {
	path := filepath.Join(t.TempDir(), "default.pem")
	cert, key := makeCert(t, "*.e2e.test", serial)
	must(t, os.WriteFile(path, []byte(cert+key), 0o600))
	return path
}

// What the reader skips with a warning (a symlink to a directory, which
// is not followed) counts among the input's warnings in status and
// metrics, as `check --strict` counts it: it was only logged, so a tree
// whose routes sat behind such a link showed "input problems: none".
func TestSkippedDirectoryLinkIsAWarning(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	must(t, os.WriteFile(filepath.Join(r.dir, "router.yaml"), []byte(r.routerConfig("")), 0o644))
	must(t, os.WriteFile(filepath.Join(r.dir, "a.yaml"), []byte(join(routeYAML("a", "a.e2e.test", "", "one"), endpointsYAML("one", one))), 0o644))
	r.start("plain")
	r.serves("a.e2e.test", "/", "one")
	shared := t.TempDir()
	must(t, os.Symlink(shared, filepath.Join(r.dir, "shared")))
	r.eventually(10*time.Second, "the link counted as a warning", func() error {
		if n := r.store.Get().InputProblems.Warnings; n == 0 {
			return fmt.Errorf("no warning counted")
		}
		if err := r.metricsHave(`haroute_input_problems{severity="warning"} 0`); err == nil {
			return fmt.Errorf("metrics count no warning")
		}
		return nil
	})
	r.serves("a.e2e.test", "/", "one")
}

// A first start on a directory with nothing to read (a git-sync root,
// whose link to the checkout is a symlink to a directory and not
// followed) does not start HAProxy on the default ports to serve
// nothing: not ready, with the reason, until files appear.
func TestFirstStartOnAnEmptyDirectoryWaits(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	checkout := t.TempDir()
	must(t, os.Symlink(checkout, filepath.Join(r.dir, "config")))
	// And a file it cannot read: no more a file to read than none.
	must(t, os.Symlink("/nonexistent/router.yaml", filepath.Join(r.dir, "router.yaml")))
	r.startNoWait("plain")
	r.reportsError("has no file to read (config: symlink to a directory")
	if st := r.store.Get(); st.Ready || st.HAProxy.PID != 0 {
		t.Fatalf("ready %v, haproxy pid %d: want not ready and no HAProxy", st.Ready, st.HAProxy.PID)
	}
	// An input error, as the alert on those sees it, with the file's.
	r.eventually(10*time.Second, "counted as input errors", func() error {
		if list := r.store.Get().InputProblems.ErrorList; len(list) != 2 || !strings.HasPrefix(list[1], "router.yaml:") {
			return fmt.Errorf("status lists %q", list)
		}
		return r.metricsHave(`haroute_input_problems{severity="error"} 2`)
	})
	must(t, os.Remove(filepath.Join(r.dir, "router.yaml")))
	must(t, os.WriteFile(filepath.Join(r.dir, "router.yaml"), []byte(r.routerConfig("")), 0o644))
	must(t, os.WriteFile(filepath.Join(r.dir, "a.yaml"), []byte(join(routeYAML("a", "a.e2e.test", "", "one"), endpointsYAML("one", one))), 0o644))
	r.serves("a.e2e.test", "/", "one")
}

// A ConfigMap volume torn down leaves its mount point empty: ..data and
// every link gone together. Read as a plain directory that was a
// generation without routes, which the deletion guard applied after its
// quiet period; it is a directory whose commit point is gone, and the last
// good state keeps serving past the quiet period until a generation is
// published again.
func TestEmptiedAtomicDirectoryKeepsServing(t *testing.T) {
	r := newRouter(t)
	r.deletionQuiet = time.Second
	one, two := startBackend(t, "one"), startBackend(t, "two")
	must(t, publish.NewAtomicWriter(r.dir).Publish(oneRoute(r, one)))
	r.start("auto")
	r.serves("one.e2e.test", "/", "one")

	entries, err := os.ReadDir(r.dir)
	must(t, err)
	for _, e := range entries {
		must(t, os.RemoveAll(filepath.Join(r.dir, e.Name())))
	}
	r.reportsError("commit point is gone")
	time.Sleep(3 * r.deletionQuiet)
	r.keepsServing("one.e2e.test", "one", 10, "emptied atomic directory")

	must(t, publish.NewAtomicWriter(r.dir).Publish(oneRoute(r, two)))
	r.serves("one.e2e.test", "/", "two")
}

// A git-sync worktree emptied under its link, which stays: the link names
// an empty directory. Read as a generation without routes, every route
// was deleted once the deletion guard's quiet period had passed (an
// audit); it is reported like a missing directory, and the last good
// state keeps serving until a generation is published again.
func TestLinkToAnEmptiedWorktreeKeepsServing(t *testing.T) {
	r := newRouter(t)
	r.deletionQuiet = time.Second
	one, two := startBackend(t, "one"), startBackend(t, "two")
	g, link := serveViaGitSync(t, r, oneRoute(r, one), "one")
	target, err := filepath.EvalSymlinks(link)
	must(t, err)
	entries, err := os.ReadDir(target)
	must(t, err)
	for _, e := range entries {
		must(t, os.RemoveAll(filepath.Join(target, e.Name())))
	}
	r.trigger <- struct{}{} // link mode does not watch inside the target
	r.reportsError("names an empty directory")
	time.Sleep(3 * r.deletionQuiet)
	r.keepsServing("one.e2e.test", "one", 10, "worktree emptied under its link")

	must(t, g.Publish(oneRoute(r, two)))
	r.serves("one.e2e.test", "/", "two")
}

// The same volume torn down while haroute is stopped: the saved state
// names the layout it was read from, so the empty directory at start is
// not taken for a generation without routes either, and the saved state
// serves past the deletion guard's quiet period.
func TestTornVolumeAtRestartServesSaved(t *testing.T) {
	r := newRouter(t)
	r.deletionQuiet = time.Second
	one := startBackend(t, "one")
	must(t, publish.NewAtomicWriter(r.dir).Publish(oneRoute(r, one)))
	r.start("auto")
	r.serves("one.e2e.test", "/", "one")
	time.Sleep(1500 * time.Millisecond) // the save runs off the loop, at most once a second
	r.stop()

	entries, err := os.ReadDir(r.dir)
	must(t, err)
	for _, e := range entries {
		must(t, os.RemoveAll(filepath.Join(r.dir, e.Name())))
	}
	r.start("auto")
	r.reportsError("commit point is gone")
	time.Sleep(3 * r.deletionQuiet)
	r.keepsServing("one.e2e.test", "one", 10, "volume torn down across a restart")
}

// A resync asked for (SIGHUP) that finds the same tree is no new
// generation: dashboards and alerts key on the generation HAProxy runs.
func TestResyncOfTheSameTreeKeepsTheGeneration(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	must(t, publish.NewAtomicWriter(r.dir).Publish(oneRoute(r, one)))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "one")
	gen := r.store.Get().Generation
	for range 3 {
		r.trigger <- struct{}{}
		time.Sleep(300 * time.Millisecond)
	}
	if got := r.store.Get().Generation; got != gen {
		t.Errorf("generation %d after resyncs of the same tree, want %d", got, gen)
	}
}

// A reload needs room in the run dir: the master a reload re-executes
// binds its sockets afresh, and on 2.6, when the run dir takes no new
// file (no inode left), it exits, and every route went down until there
// was room again. The reload waits instead, HAProxy serving what it has,
// and goes ahead once the run dir has room. A tmpfs with few inodes
// stands for the run dir (root only: CI runs as root).
func TestReloadWaitsForRoomInTheRunDir(t *testing.T) {
	r := newRouter(t)
	smallRunDir(t, r)
	w := publish.NewAtomicWriter(r.dir)
	one, other := startBackend(t, "one"), startBackend(t, "other")
	gen := oneRoute(r, one)
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "one")
	before := r.reloads()

	fillers := fillInodes(t, r.runDir)
	gen["two.yaml"] = []byte(reloadingRouteYAML("two", "two.e2e.test", "one"))
	must(t, w.Publish(gen))
	r.reportsError("takes no new file")
	r.keepsServing("one.e2e.test", "one", 20, "while the run dir has no room")
	// What needs no reload does not wait for it (DESIGN §5: runtime
	// updates are not throttled): a new route that binds a spare, and an
	// endpoint replaced, serve while the reload waits for room. They
	// waited with it, and an endpoint scaled away kept its traffic.
	gen["three.yaml"] = []byte(routeYAML("three", "three.e2e.test", "", "one"))
	gen["endpoints.yaml"] = []byte(endpointsYAML("one", other))
	must(t, w.Publish(gen))
	r.serves("three.e2e.test", "/", "other")
	r.serves("one.e2e.test", "/", "other")
	// Accepting that clean change does not make the failing reload's
	// error "resolved": it did.
	for _, e := range r.store.Get().RecentErrors {
		if strings.Contains(e.Message, "takes no new file") && !e.Resolved.IsZero() {
			t.Fatalf("the reload's error was resolved while the run dir still had no room: %+v", e)
		}
	}
	r.reportsStanding(5*time.Second, "takes no new file")
	if got := r.reloads(); got != before {
		t.Fatalf("HAProxy reloaded %d time(s) while the run dir had no room", got-before)
	}

	for _, path := range fillers {
		must(t, os.Remove(path))
	}
	r.servesWithin(30*time.Second, "two.e2e.test", "/", "other")
	r.serves("one.e2e.test", "/", "other")
	r.serves("three.e2e.test", "/", "other")
	if got := r.reloads(); got != before+1 {
		t.Errorf("%d reload(s) once there was room, want 1", got-before)
	}
	r.eventually(10*time.Second, "the reload's error resolved once it reloaded", func() error {
		for _, e := range r.store.Get().RecentErrors {
			if strings.Contains(e.Message, "takes no new file") && e.Resolved.IsZero() {
				return fmt.Errorf("still standing: %s", e.Message)
			}
		}
		return nil
	})
}

// Idle connections a tool leaves open on the admin socket do not push
// haroute's runtime commands out: HAProxy allowed 10 at a time, and the
// 11th, haroute's, made an endpoint change fall back on a reload (which
// fetches the listening sockets through the same socket, and refused
// connections). 30 idle connections later, an endpoint added still
// applies at runtime.
func TestIdleAdminConnectionsLeaveRoomForRuntime(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	gen := oneRoute(r, one)
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "one")
	before := r.reloads()

	for range 30 {
		c, err := net.DialTimeout("unix", filepath.Join(r.runDir, "admin.sock"), time.Second)
		must(t, err)
		t.Cleanup(func() { c.Close() })
	}
	gen["endpoints.yaml"] = []byte(endpointsYAML("one", one, two))
	must(t, w.Publish(gen))
	r.serves("one.e2e.test", "/", "two")
	if got := r.reloads(); got != before {
		t.Errorf("adding an endpoint beside 30 idle admin connections took %d reload(s), want 0", got-before)
	}
}

// fillInodes creates empty files in dir until its file system has no
// inode left, and returns their paths.
func fillInodes(t *testing.T, dir string) []string {
	t.Helper()
	var fillers []string
	for i := 0; ; i++ {
		path := filepath.Join(dir, fmt.Sprintf("filler-%d", i))
		f, err := os.Create(path)
		if errors.Is(err, syscall.ENOSPC) {
			return fillers
		}
		must(t, err)
		f.Close()
		fillers = append(fillers, path)
	}
}

// While a reload waits, a route whose change needs it keeps serving as
// before, and a route that takes the host it leaves waits with it: the
// runtime share put both on the host, and which one answered depended on
// their names. After the reload, each serves as the directory says.
func TestRouteTakingAWaitingRoutesHostWaitsToo(t *testing.T) {
	r := newRouter(t)
	smallRunDir(t, r)
	w := publish.NewAtomicWriter(r.dir)
	one, other := startBackend(t, "one"), startBackend(t, "other")
	gen := files("router.yaml", r.routerConfig(""),
		"w.yaml", routeYAML("w", "w.e2e.test", "", "one"),
		"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("other", other)))
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("w.e2e.test", "/", "one")
	before := r.reloads()

	fillers := fillInodes(t, r.runDir)
	// w moves to w2 in a change that needs a reload; a takes its host.
	gen["w.yaml"] = []byte(reloadingRouteYAML("w", "w2.e2e.test", "one"))
	gen["a.yaml"] = []byte(routeYAML("a", "w.e2e.test", "", "other"))
	must(t, w.Publish(gen))
	r.reportsError("takes no new file")
	r.keepsServing("w.e2e.test", "one", 20, "while w's move waits for the reload")

	for _, path := range fillers {
		must(t, os.Remove(path))
	}
	r.servesWithin(30*time.Second, "w2.e2e.test", "/", "one")
	r.serves("w.e2e.test", "/", "other")
	if got := r.reloads(); got != before+1 {
		t.Errorf("%d reload(s), want 1", got-before)
	}
}

// While a reload waits, a route that leaves a host a waiting route takes
// in the directory keeps serving it until the reload: the share applied
// the leaving at once, and the host answered 503 for the whole wait (a
// route moved off its host, or replaced by a new route under another
// name that needs the reload).
func TestHostAWaitingRouteTakesIsServedUntilTheReload(t *testing.T) {
	for _, tc := range []struct {
		name string
		// change edits gen in one publish; during are the answers while
		// the reload waits, after those once it ran.
		change        func(gen map[string][]byte)
		during, after map[string]string
	}{
		{"moved off", func(gen map[string][]byte) {
			gen["w.yaml"] = []byte(reloadingRouteYAML("w", "hv.e2e.test", "one")) // takes hv; needs the reload
			gen["v.yaml"] = []byte(routeYAML("v", "hz.e2e.test", "", "other"))    // leaves hv for hz
		}, map[string]string{"hv.e2e.test": "other"}, map[string]string{"hv.e2e.test": "one", "hz.e2e.test": "other"}},
		// The deleted v's backend is kept, empty, in the pool: the share
		// serves v's own instead, and u's new endpoint does not wait.
		{"replaced under another name", func(gen map[string][]byte) {
			delete(gen, "v.yaml")
			gen["v2.yaml"] = []byte(reloadingRouteYAML("v2", "hv.e2e.test", "third"))
			gen["u.yaml"] = []byte(routeYAML("u", "hu.e2e.test", "", "third"))
		}, map[string]string{"hv.e2e.test": "other", "hu.e2e.test": "third"},
			map[string]string{"hv.e2e.test": "third", "hw.e2e.test": "one", "hu.e2e.test": "third"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRouter(t)
			smallRunDir(t, r)
			w := publish.NewAtomicWriter(r.dir)
			one, other, third := startBackend(t, "one"), startBackend(t, "other"), startBackend(t, "third")
			gen := files("router.yaml", r.routerConfig(""),
				"w.yaml", routeYAML("w", "hw.e2e.test", "", "one"),
				"v.yaml", routeYAML("v", "hv.e2e.test", "", "other"),
				"u.yaml", routeYAML("u", "hu.e2e.test", "", "one"),
				"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("other", other), endpointsYAML("third", third)))
			must(t, w.Publish(gen))
			r.start("atomic")
			r.serves("hv.e2e.test", "/", "other")
			before := r.reloads()

			fillers := fillInodes(t, r.runDir)
			tc.change(gen)
			must(t, w.Publish(gen))
			r.reportsError("takes no new file")
			for host, want := range tc.during {
				r.serves(host, "/", want)
				r.keepsServing(host, want, 20, "while a route waits for the reload")
			}

			for _, path := range fillers {
				must(t, os.Remove(path))
			}
			for host, want := range tc.after {
				r.servesWithin(30*time.Second, host, "/", want)
			}
			if got := r.reloads(); got != before+1 {
				t.Errorf("%d reload(s), want 1", got-before)
			}
		})
	}
}

// smallRunDir puts r's run dir on a tmpfs of 256 inodes, which
// fillInodes fills (root only: CI runs as root).
func smallRunDir(t *testing.T, r *router) {
	t.Helper()
	testutil.Tmpfs(t, r.runDir, "4m")
	testutil.Mount(t, "-o", "remount,nr_inodes=256", r.runDir)
}

// While a file the RouterConfig names cannot be used, each resync reads
// it again (a rotation made readable must be picked up), but the
// unchanged directory's own unreadable file is not counted again as a
// snapshot error at every resync, or forced one:
// `increase(haroute_snapshot_errors_total)` fired for as long as the
// certificate stayed broken (T49, T51).
func TestBrokenMaterialResyncCountsNoNewSnapshotErrors(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	certFile := defaultCertificateFile(t, 7101)
	for name, data := range edgeWithDefaultCertificate(r, certFile, one)("") {
		must(t, os.WriteFile(filepath.Join(r.dir, name), data, 0o644))
	}
	must(t, syscall.Mkfifo(filepath.Join(r.dir, "pipe.yaml"), 0o644)) // a standing file error
	r.start("plain")
	r.eventually(10*time.Second, "the default certificate", func() error { return servedSerial(r, "edge.e2e.test", 7101) })
	must(t, os.WriteFile(certFile, []byte("garbage\n"), 0o600))
	r.trigger <- struct{}{}
	r.reportsError("defaultCertificate")
	snapshotErrors := func() string {
		m, err := r.scrapeMetrics()
		must(t, err)
		for line := range strings.Lines(m) {
			if strings.HasPrefix(line, "haroute_snapshot_errors_total ") {
				return strings.TrimSpace(line)
			}
		}
		t.Fatalf("no haroute_snapshot_errors_total in /metrics")
		return ""
	}
	before := snapshotErrors()
	time.Sleep(7 * time.Second) // three resyncs (2 s)
	if after := snapshotErrors(); after != before {
		t.Errorf("resyncs of the unchanged directory counted snapshot errors: %s, then %s", before, after)
	}
	// Nor do forced ones (SIGHUP; a write retried, a deletion held and
	// the certificate renewal force them too: T51).
	for range 3 {
		r.trigger <- struct{}{}
		time.Sleep(300 * time.Millisecond)
	}
	if after := snapshotErrors(); after != before {
		t.Errorf("forced resyncs of the unchanged directory counted snapshot errors: %s, then %s", before, after)
	}
	if st := r.store.Get(); st.InputProblems.Errors != 2 {
		t.Errorf("status counts %d input errors, want 2 (the FIFO and the certificate): %+v", st.InputProblems.Errors, st.InputProblems)
	}
	// A line added above the field moves the error: the one at the old
	// line is over, not standing beside it (T51).
	standing := func() []string {
		var out []string
		for _, e := range r.store.Get().RecentErrors {
			if e.Resolved.IsZero() && strings.Contains(e.Message, "defaultCertificate") {
				out = append(out, e.Message)
			}
		}
		return out
	}
	was := standing()
	if len(was) != 1 {
		t.Fatalf("standing certificate errors %q, want one", was)
	}
	rc := filepath.Join(r.dir, "router.yaml")
	data, err := os.ReadFile(rc)
	must(t, err)
	must(t, os.WriteFile(rc, append([]byte("# moved down a line\n"), data...), 0o644))
	r.eventually(10*time.Second, "the certificate error at its new line, alone", func() error {
		if now := standing(); len(now) != 1 || now[0] == was[0] {
			return fmt.Errorf("standing %q (was %q)", now, was[0])
		}
		return nil
	})
	// The rotation that mends it is still read by a resync.
	cert, key := makeCert(t, "*.e2e.test", 7102)
	must(t, os.WriteFile(certFile, []byte(cert+key), 0o600))
	r.eventually(15*time.Second, "the mended certificate", func() error { return servedSerial(r, "edge.e2e.test", 7102) })
}
