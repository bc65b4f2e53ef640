package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Per-route traffic, labelled namespace and route whatever the backend is
// called: a route served by a spare backend of the pool keeps its
// metrics (OpenShift's DCM lost them for its blueprint routes). HAProxy's
// own exporter on the stats port labels by backend; these are read from
// `show stat` at scrape time and mapped to routes by the daemon.

// RouteStat is one route's traffic. Counters are HAProxy's since its
// current worker started.
type RouteStat struct {
	Namespace, Route                 string
	Sessions, Requests               uint64
	BytesIn, BytesOut                uint64
	Responses                        [6]uint64 // 1xx … 5xx, other
	CurSessions, Queued              int
	Up, Down, Maintenance, Unchecked int
}

// RouteStatsSource returns the current per-route traffic.
type RouteStatsSource func(ctx context.Context) ([]RouteStat, error)

var responseCodes = [6]string{"1xx", "2xx", "3xx", "4xx", "5xx", "other"}

var (
	routeLabels      = []string{"namespace", "route"}
	routeSessions    = routeDesc("route_sessions_total", "Connections (sessions) HAProxy passed to the route's backend.")
	routeRequests    = routeDesc("route_requests_total", "HTTP requests HAProxy passed to the route's backend (0 for passthrough routes).")
	routeResponses   = prometheus.NewDesc(namespace+"_route_responses_total", "HTTP responses from the route's backend, by status class.", append(routeLabels, "code"), nil)
	routeBytesIn     = routeDesc("route_bytes_in_total", "Bytes received from clients for the route.")
	routeBytesOut    = routeDesc("route_bytes_out_total", "Bytes sent to clients for the route.")
	routeCurSessions = routeDesc("route_current_sessions", "Connections the route's backend carries now.")
	routeQueued      = routeDesc("route_queued_requests", "Requests waiting for a free server of the route.")
	routeServers     = prometheus.NewDesc(namespace+"_route_servers", "Servers of the route, by state (up, down, maint: set so, draining or of weight 0, and unchecked: not health-checked, as a route's only endpoint is, so not known to be up).", append(routeLabels, "state"), nil)
	routeScrapeError = prometheus.NewDesc(namespace+"_route_stats_up", "1 if HAProxy's per-route stats could be read at this scrape, 0 if not.", nil, nil)
)

func routeDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(namespace+"_"+name, help, routeLabels, nil)
}

// routeCollector reads per-route stats at each scrape.
type routeCollector struct {
	source  RouteStatsSource
	timeout time.Duration
}

// RegisterRouteStats adds the per-route metrics, read from source at each
// scrape (bounded by a few seconds).
func (m *Metrics) RegisterRouteStats(source RouteStatsSource) {
	m.registry.MustRegister(&routeCollector{source: source, timeout: 5 * time.Second})
}

func (c *routeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{routeSessions, routeRequests, routeResponses, routeBytesIn, routeBytesOut,
		routeCurSessions, routeQueued, routeServers, routeScrapeError} {
		ch <- d
	}
}

func (c *routeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	stats, err := c.source(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(routeScrapeError, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(routeScrapeError, prometheus.GaugeValue, 1)
	for _, s := range stats {
		l := []string{s.Namespace, s.Route}
		counter := func(d *prometheus.Desc, v uint64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), l...)
		}
		gauge := func(d *prometheus.Desc, v int) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), l...)
		}
		counter(routeSessions, s.Sessions)
		counter(routeRequests, s.Requests)
		counter(routeBytesIn, s.BytesIn)
		counter(routeBytesOut, s.BytesOut)
		gauge(routeCurSessions, s.CurSessions)
		gauge(routeQueued, s.Queued)
		for i, code := range responseCodes {
			ch <- prometheus.MustNewConstMetric(routeResponses, prometheus.CounterValue, float64(s.Responses[i]), s.Namespace, s.Route, code)
		}
		for state, n := range map[string]int{"up": s.Up, "down": s.Down, "maint": s.Maintenance, "unchecked": s.Unchecked} {
			ch <- prometheus.MustNewConstMetric(routeServers, prometheus.GaugeValue, float64(n), s.Namespace, s.Route, state)
		}
	}
}
