package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
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
			out = append(out, listener{network: network, addr: render.HostPort(a, p.port), field: p.field})
		}
	}
	return out
}

// unbindable returns, as problems of the RouterConfig, the listeners of
// next that applied (nil: none) does not have and that cannot be bound
// now.
func unbindable(applied, next *model.Settings) []model.SettingsProblem {
	held := map[string]bool{}
	if applied != nil {
		for _, l := range listeners(applied) {
			held[l.network+" "+l.addr] = true
		}
	}
	var out []model.SettingsProblem
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
		case errors.Is(err, syscall.EADDRINUSE):
			why = "another process listens there"
		case errors.Is(err, syscall.EADDRNOTAVAIL):
			why = "this host has no such address"
		case errors.Is(err, syscall.EACCES):
			why = "binding it needs CAP_NET_BIND_SERVICE"
		}
		out = append(out, model.SettingsProblem{Field: l.field,
			Message: fmt.Sprintf("HAProxy cannot listen on %s: %s (%v); fix the RouterConfig, or free the address: it is applied once HAProxy can bind it", l.addr, why, err)})
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
	if len(unbindable(&d.applied.Desired.Router, d.unbound)) > 0 {
		return nil
	}
	d.unbound = nil
	d.loader.RetryRouterConfig()
	d.log.Info("the listeners of the refused RouterConfig can be bound now; applying it")
	d.lastHash = ""
	return d.sync(ctx, true)
}
