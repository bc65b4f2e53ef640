package haproxy

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	cnruntime "github.com/haproxytech/client-native/v5/runtime"
	"github.com/haproxytech/client-native/v5/runtime/options"
)

func TestExploreNative(t *testing.T) {
	r := newRig(t)
	r.start(t)
	sr := &cnruntime.SingleRuntime{}
	if err := sr.Init(filepath.Join(r.Run, "admin.sock"), 0, 0, options.RuntimeOptions{DoNotCheckRuntimeOnInit: true}); err != nil {
		t.Fatal(err)
	}
	dump := func(name string, v any) { b, _ := json.MarshalIndent(v, "", " "); t.Logf("%s: %s", name, b) }
	dump("info", sr.GetInfo())
	raw, err := sr.ExecuteRaw("show info typed")
	t.Logf("raw info err=%v\n%s", err, raw)
	c, err := sr.ShowCertificate(filepath.Join(r.Run, "site.pem"))
	dump("cert", c)
	t.Log(err)
	raw, _ = sr.ExecuteRaw("show ssl cert " + filepath.Join(r.Run, "site.pem"))
	t.Logf("raw cert\n%s", raw)
	cs, err := sr.ShowCerts()
	dump("certs", cs)
	t.Log(err)
	c, err = sr.ShowCertificate(filepath.Join(r.Run, "nope.pem"))
	dump("nocert", c)
	t.Log(err)
	ms, err := sr.ShowMaps()
	dump("maps", ms)
	t.Log(err)
	st := sr.GetStats()
	dump("stats", st)
	cert := selfSigned(t, 123456789)
	cmd, _ := SSLCertCommand(filepath.Join(r.Run, "site.pem"), cert)
	execOK(t, r.rt, cmd)
	raw, _ = sr.ExecuteRaw("show ssl cert " + filepath.Join(r.Run, "site.pem"))
	t.Logf("raw cert during tx\n%s", raw)
	raw, _ = sr.ExecuteRaw("show ssl cert")
	t.Logf("raw certs during tx\n%s", raw)
	cs, err = sr.ShowCerts()
	dump("certs tx", cs)
	raw, _ = sr.ExecuteRaw("show ssl cert *" + filepath.Join(r.Run, "site.pem"))
	t.Logf("raw cert * during tx\n%s", raw)
	execOK(t, r.rt, "commit ssl cert "+filepath.Join(r.Run, "site.pem"))
	c, err = sr.ShowCertificate(filepath.Join(r.Run, "site.pem"))
	dump("cert after", c)
	_ = time.Second
}
