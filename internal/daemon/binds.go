package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

// A reload onto a listener HAProxy cannot bind (a port another process
// holds, an address the host does not have) passes `haproxy -c`, which
// binds nothing, and then fails; and a failed reload is not free:
// HAProxy pauses the serving worker's listeners and retries the bind for
// about 2 s before it gives up and resumes them. So the listeners that
// new settings add are bound once here first, and a refusal is pinned on
// the RouterConfig (its last good settings stay in force) rather than
// tried at every reload interval.

// listener is one address and port HAProxy binds, with the RouterConfig
// field that asked for it.
type listener struct {
	network, addr string
	port          int
	field         string
}

// listeners are the TCP listeners settings make HAProxy bind.
func listeners(s *model.Settings) []listener {
	addrs := s.ListenAddresses()
	withV4 := slices.ContainsFunc(addrs, func(a string) bool { return !strings.Contains(a, ":") })
	var out []listener
	for _, p := range []struct {
		port  int
		field string
	}{{s.HTTPPort, "spec.bindOptions.ports.http"}, {s.HTTPSPort, "spec.bindOptions.ports.https"}, {s.StatsPort, "spec.bindOptions.ports.stats"}} {
		if p.port <= 0 {
			continue
		}
		for _, a := range addrs {
			// As HAProxy binds them: no address is IPv4's any; "::"
			// beside IPv4 addresses is v6only (render.binds), which Go
			// sets for tcp6.
			network := "tcp4"
			switch {
			case a == "":
				a = "0.0.0.0"
			case a == "::" && !withV4:
				network = "tcp"
			case strings.Contains(a, ":"):
				network = "tcp6"
			}
			out = append(out, listener{network: network, addr: render.HostPort(a, p.port), port: p.port, field: p.field})
		}
	}
	return out
}

// unbindable returns, as problems of the RouterConfig, the listeners of
// next that applied (nil: none) does not have and that cannot be bound
// now. A port in use only by this router's own HAProxy (own: the inodes
// of its listening sockets; nil when unknown) is no problem: the listener
// moves to another address of the same port (127.0.0.1 to 0.0.0.0), and
// the reload pauses the old listener while it binds the new. Such moves
// are returned apart, for the log: connections are refused meanwhile.
func unbindable(applied, next *model.Settings, own func() map[uint64]bool) (problems []model.SettingsProblem, moves []string) {
	if own != nil {
		// Looked up once, and only if a port turns out to be taken.
		own = sync.OnceValue(own)
	}
	held := map[string]bool{}
	if applied != nil {
		for _, l := range listeners(applied) {
			held[l.network+" "+l.addr] = true
		}
	}
	for _, l := range listeners(next) {
		if held[l.network+" "+l.addr] {
			continue // HAProxy holds it; a reload takes it over
		}
		ln, err := net.Listen(l.network, l.addr)
		if err == nil {
			_ = ln.Close()
			continue
		}
		why := "it cannot be bound"
		switch {
		case errors.Is(err, syscall.EADDRINUSE) && own != nil && heldByOwn(l.port, own()):
			moves = append(moves, l.addr)
			continue
		case errors.Is(err, syscall.EADDRINUSE):
			why = "another process listens there"
		case errors.Is(err, syscall.EADDRNOTAVAIL):
			why = "this host has no such address"
		case errors.Is(err, syscall.EACCES):
			why = "binding it needs CAP_NET_BIND_SERVICE"
		}
		problems = append(problems, model.SettingsProblem{Field: l.field,
			Message: fmt.Sprintf("HAProxy cannot listen on %s: %s (%v); fix the RouterConfig, or free the address: it is applied once HAProxy can bind it", l.addr, why, err)})
	}
	return problems, moves
}

// heldByOwn reports whether every TCP socket listening on port is one of
// own (and there is one).
func heldByOwn(port int, own map[uint64]bool) bool {
	inodes, err := listeningOn(port)
	if err != nil || len(inodes) == 0 {
		return false
	}
	for _, ino := range inodes {
		if !own[ino] {
			return false
		}
	}
	return true
}

// listeningOn returns the inodes of the TCP sockets listening on port, on
// any address of either family, from this process's network namespace's
// tcp and tcp6 tables. /proc/self/net, not /proc/net: the packaged unit's
// ProcSubset=pid mounts a /proc without net, and every listener then read
// as another process's, so an address change was refused.
func listeningOn(port int) ([]uint64, error) {
	var out []uint64
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		data, err := os.ReadFile(table)
		if errors.Is(err, fs.ErrNotExist) && table == "/proc/self/net/tcp6" {
			continue // no IPv6
		}
		if err != nil {
			return nil, err
		}
		out = append(out, parseListening(string(data), port)...)
	}
	return out, nil
}

// parseListening reads a /proc/net/tcp table: the inodes of its sockets
// in LISTEN state (0A) whose local port is port. Lines read
// "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt
// uid timeout inode …", addresses as hex "0100007F:1F90".
func parseListening(table string, port int) []uint64 {
	var out []uint64
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" {
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		p, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil || int(p) != port {
			continue
		}
		if ino, err := strconv.ParseUint(f[9], 10, 64); err == nil {
			out = append(out, ino)
		}
	}
	return out
}

// retryUnbound tries again a RouterConfig refused only because listeners
// could not be bound (d.unbound) once they can be: an operator who stops
// the process holding the port expects the router to notice, not to have
// to save the file again. Called each second; while the port is still
// taken it costs a bind attempt, and nothing is logged or reloaded.
func (d *Daemon) retryUnbound(ctx context.Context) error {
	if d.unbound == nil || d.applied.Desired == nil {
		return nil
	}
	problems := d.loader.RouterConfigRefusal()
	if len(problems) == 0 {
		d.unbound = nil // the file changed: it was tried afresh
		return nil
	}
	for _, p := range problems {
		if !strings.HasPrefix(p.Field, "spec.bindOptions") {
			d.unbound = nil // HAProxy refused a value: refused until edited
			return nil
		}
	}
	if problems, _ := unbindable(&d.applied.Desired.Router, d.unbound, d.sup.OwnListeners); len(problems) > 0 {
		return nil
	}
	d.unbound = nil
	d.loader.RetryRouterConfig()
	d.log.Info("the listeners of the refused RouterConfig can be bound now; applying it")
	d.lastHash = ""
	return d.sync(ctx, true)
}
