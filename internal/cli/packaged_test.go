package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/testutil"
)

// The production config the packages install in /etc/haroute/config
// (packaging/etc) is read as the service reads it: check accepts it, and
// the rendered HAProxy listens on 80, 443 and 1936 with the /stats page
// behind the credentials file, which the real haproxy -c accepts. The
// credentials file is an absolute path, /etc/haroute/secrets/…, so the
// test points it at a file of its own.
func TestPackagedConfigServesProductionPorts(t *testing.T) {
	const packagedCreds = "/etc/haroute/secrets/stats-credentials"
	src, err := os.ReadFile("../../packaging/etc/config/routerconfig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "credentialsFile: "+packagedCreds+"\n") {
		t.Fatalf("packaged routerconfig.yaml no longer names %s; the postinstall script writes that file", packagedCreds)
	}
	creds := filepath.Join(t.TempDir(), "stats-credentials")
	if err := os.WriteFile(creds, []byte("admin:0123456789abcdef0123456789abcdef0123\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, map[string]string{
		"routerconfig.yaml": strings.Replace(string(src), packagedCreds, creds, 1),
	})
	if code, stdout, stderr := run(t, "check", "--strict", dir); code != ExitOK {
		t.Fatalf("check --strict: exit %d\n%s%s", code, stdout, stderr)
	}
	out := filepath.Join(t.TempDir(), "bundle")
	if code, stdout, stderr := run(t, "render", dir, "--out", out); code != ExitOK {
		t.Fatalf("render: exit %d\n%s%s", code, stdout, stderr)
	}
	cfgPath := filepath.Join(out, "haproxy.cfg")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  bind :80\n", "  bind :443\n", "  bind :1936\n",
		"  stats auth 'admin:0123456789abcdef0123456789abcdef0123'\n"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("haproxy.cfg lacks %q", want)
		}
	}
	if msg, err := exec.Command(testutil.HAProxy(t), "-c", "-q", "-f", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c refuses the packaged config: %v\n%s", err, msg)
	}
}

// Nothing under packaging/etc is an example: no routes, no endpoints and
// no private key, whatever a later edit adds.
func TestPackagedConfigHasNoDemoRoutesOrKeys(t *testing.T) {
	err := filepath.WalkDir("../../packaging/etc", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, bad := range []string{"PRIVATE KEY", "\nkind: Route\n", "\nkind: Endpoints\n", "\nkind: EndpointSlice\n"} {
			if strings.Contains(string(data), bad) {
				t.Errorf("%s contains %q", path, strings.TrimSpace(bad))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
