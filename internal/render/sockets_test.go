package render

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/model"
)

// With renamed sockets and a backup hop, HAProxy binds the new names, and
// TLS traffic falls over to the backup hop when the first one's file is
// deleted: no request fails. Without the backup too, TLS fails, so it is
// the backup that carried the traffic.
func TestLiveSocketNamesAndBackupHop(t *testing.T) {
	s := edgeSettings(t)
	var in Input
	e := startEdge(t, s, func(i *Input) {
		backupDir := filepath.Join(filepath.Dir(i.RunDir), "s")
		if err := os.MkdirAll(backupDir, 0o700); err != nil {
			t.Fatal(err)
		}
		i.Sockets = Sockets{Admin: "admin-1.sock", SNI: "fe_sni-2.sock", SNIBackup: filepath.Join(backupDir, "fe_sni.sock")}
		in = *i
	}, route("t", "edge", "edge.example.com", "", edge(model.InsecurePolicyNone, model.RouteTLS{}), svc("s", 100, echoBackend(t))))
	for _, name := range []string{"admin-1.sock", "fe_sni-2.sock"} {
		c, err := net.Dial("unix", filepath.Join(e.in.RunDir, name))
		if err != nil {
			t.Fatalf("socket %s: %v", name, err)
		}
		c.Close()
	}
	if _, err := os.Stat(filepath.Join(e.in.RunDir, AdminSocket)); !os.IsNotExist(err) {
		t.Errorf("the default admin socket name is bound too: %v", err)
	}
	cl := client(s.HTTPSPort, &tls.Config{InsecureSkipVerify: true})
	fetch := func() error {
		resp, err := cl.Get("https://edge.example.com/x")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return nil
	}
	if err := fetch(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(e.in.RunDir, "fe_sni-2.sock")); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := fetch(); err != nil {
			t.Fatalf("request %d with the first hop deleted: %v", i, err)
		}
	}
	if err := os.Remove(in.Sockets.SNIBackup); err != nil {
		t.Fatal(err)
	}
	if err := fetch(); err == nil {
		t.Fatal("TLS served with both hops deleted: the test does not show what the backup does")
	}
}

// A socket name must be a plain file name, the backup an absolute path.
func TestSocketNamesChecked(t *testing.T) {
	tc := loadTestCerts(t)
	for _, c := range []struct {
		s    Sockets
		want string
	}{
		{Sockets{Admin: "../admin.sock"}, "must be a file name"},
		{Sockets{SNI: "a b.sock"}, "not allowed in haproxy syntax"},
		{Sockets{SNIBackup: "rel/fe_sni.sock"}, "absolute, clean path"},
	} {
		in := Input{Desired: desired(model.DefaultSettings()), Dir: "/b", RunDir: "/r", DefaultCertificate: []byte(tc.Default), Sockets: c.s}
		if _, err := Render(in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.s, err, c.want)
		}
	}
}
