package daemon

import (
	"bytes"
	"sync"
	"time"

	"github.com/haroute/haroute/internal/certgen"
	"github.com/haroute/haroute/internal/metrics"
	"github.com/haroute/haroute/internal/model"
)

// Certificates that expire. As OpenShift, haroute serves an expired
// certificate and lets the client decide (model/pem.go): refusing it would
// take the route down. But the operator must hear of it before the
// clients do: the expiry of every certificate served is exported for an
// alert (haroute_route_certificate_expiry_timestamp_seconds), and one found
// expired is logged, once.

// certExpiry remembers when the certificates served expire, by route, with
// the certificate text it read: a certificate is parsed once, when it
// changes. Unchanged, the route's text is the very string it was (routes
// and their strings are shared from load to load, and a route bound to a
// spare is a copy naming its slot), so comparing it costs no more than a
// pointer: a scrape or a check at 10k routes is map lookups.
type certExpiry struct {
	mu      sync.Mutex
	byRoute map[model.RouteKey]certSeen
	def     []byte
	defAt   time.Time
	// warned are the routes (and the default certificate, under the
	// zero key) logged as expired, with the expiry they were logged for.
	warned map[model.RouteKey]time.Time
}

// certSeen is a route's certificate and its expiry (zero: none read).
type certSeen struct {
	cert string
	at   time.Time
}

// setDefault notes the default certificate served now.
func (c *certExpiry) setDefault(pemData []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bytes.Equal(pemData, c.def) {
		return
	}
	c.def, c.defAt = bytes.Clone(pemData), model.CertificateNotAfter(string(pemData))
}

// defaultNotAfter is when the default certificate served expires (zero:
// none read).
func (c *certExpiry) defaultNotAfter() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.defAt
}

// routes returns the expiry of the certificate of each route of d that
// serves one of its own, and the default certificate's.
func (c *certExpiry) routes(d *model.Desired) ([]metrics.CertificateExpiry, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d == nil {
		return nil, c.defAt
	}
	next := make(map[model.RouteKey]certSeen, len(c.byRoute))
	var out []metrics.CertificateExpiry
	for _, r := range d.Routes {
		if r.TLS.Certificate == "" || (r.Termination != model.TerminationEdge && r.Termination != model.TerminationReencrypt) {
			continue
		}
		seen, ok := c.byRoute[r.Key]
		if !ok || seen.cert != r.TLS.Certificate {
			seen = certSeen{cert: r.TLS.Certificate, at: model.CertificateNotAfter(r.TLS.Certificate)}
		}
		next[r.Key] = seen
		at := seen.at
		if !at.IsZero() {
			out = append(out, metrics.CertificateExpiry{Namespace: r.Key.Namespace, Route: r.Key.Name, NotAfter: at})
		}
	}
	c.byRoute = next
	return out, c.defAt
}

// newlyExpired returns what serves a certificate expired at now and was
// not reported yet for that expiry: routes by key, the default
// certificate as the zero key.
func (c *certExpiry) newlyExpired(d *model.Desired, now time.Time) map[model.RouteKey]time.Time {
	routes, def := c.routes(d)
	c.mu.Lock()
	defer c.mu.Unlock()
	var out map[model.RouteKey]time.Time
	note := func(k model.RouteKey, at time.Time) {
		if at.IsZero() || now.Before(at) || c.warned[k].Equal(at) {
			return
		}
		if c.warned == nil {
			c.warned = map[model.RouteKey]time.Time{}
		}
		if out == nil {
			out = map[model.RouteKey]time.Time{}
		}
		c.warned[k], out[k] = at, at
	}
	serving := make(map[model.RouteKey]bool, len(routes))
	for _, r := range routes {
		k := model.RouteKey{Namespace: r.Namespace, Name: r.Route}
		serving[k] = true
		note(k, r.NotAfter)
	}
	note(model.RouteKey{}, def)
	// Routes gone, or serving no certificate of their own any more, are
	// forgotten: under churn the map grew by every route ever warned of.
	for k := range c.warned {
		if k != (model.RouteKey{}) && !serving[k] {
			delete(c.warned, k)
		}
	}
	return out
}

// certsEvery is how often the certificates served are checked for one
// that expired meanwhile (and after every generation).
const certsEvery = time.Minute

// checkCertificates logs each certificate served that has expired, once
// for each expiry.
func (d *Daemon) checkCertificates(now time.Time) {
	if now.Sub(d.certsCheckedAt) < certsEvery {
		return
	}
	d.certsCheckedAt = now
	for k, at := range d.certs.newlyExpired(d.served.Load(), now) {
		if k == (model.RouteKey{}) {
			d.log.Warn("the default certificate has expired; clients that verify it refuse the routes it serves (haroute serves it, as OpenShift does)", "expired", at)
			continue
		}
		d.log.Warn("a route serves an expired certificate; clients that verify it refuse the route (haroute serves it, as OpenShift does)", "route", k.String(), "expired", at)
	}
}

// now is the clock certificates are judged by (Options.Now).
func (d *Daemon) now() time.Time {
	if d.opts.Now != nil {
		return d.opts.Now()
	}
	return time.Now()
}

// renewDefaultCertificate reports whether the default certificate served
// is the one haroute generated and is due to be made anew: a forced read
// then makes it (certgen.EnsureDefault), and it goes to HAProxy as any
// new default certificate does. Without one, the generated certificate
// expired a year after it was made, or at once on a host whose clock was
// set after the first start, and was served expired until the directory
// changed. It is asked at most once a certsEvery, so a state dir that
// cannot take the new one is not written to at every tick.
func (d *Daemon) renewDefaultCertificate() bool {
	settings := d.desired.Desired
	if settings == nil || settings.Router.DefaultCertificate != "" || settings.Router.DefaultCertificateFile != "" {
		return false
	}
	now := d.now()
	if now.Sub(d.renewTriedAt) < certsEvery {
		return false
	}
	notAfter := d.certs.defaultNotAfter()
	if notAfter.IsZero() || !certgen.ExpiresSoon(notAfter, now) {
		return false
	}
	d.renewTriedAt = now
	d.log.Info("making the generated default certificate anew", "expires", notAfter)
	return true
}
