package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// When the certificates haroute serves expire. OpenShift serves an
// expired certificate and lets the client decide, and so does haroute;
// these let an alert tell the operator before the clients do.

// CertificateExpiry is when the certificate one route serves expires.
type CertificateExpiry struct {
	Namespace, Route string
	NotAfter         time.Time
}

// CertificatesSource returns the routes' own certificates and the default
// certificate's expiry (zero when there is none to report).
type CertificatesSource func() (routes []CertificateExpiry, defaultCert time.Time)

var (
	routeCertExpiry = routeDesc("route_certificate_expiry_timestamp_seconds",
		"When the certificate of the route's own (spec.tls.certificate or externalCertificate) expires, as a Unix time. Routes served with the default certificate have no series.")
	defaultCertExpiry = prometheus.NewDesc(namespace+"_default_certificate_expiry_timestamp_seconds",
		"When the default certificate expires, as a Unix time.", nil, nil)
)

type certificateCollector struct{ source CertificatesSource }

// RegisterCertificates adds the certificate expiry metrics, read from
// source at each scrape.
func (m *Metrics) RegisterCertificates(source CertificatesSource) {
	m.registry.MustRegister(certificateCollector{source: source})
}

func (c certificateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- routeCertExpiry
	ch <- defaultCertExpiry
}

func (c certificateCollector) Collect(ch chan<- prometheus.Metric) {
	routes, def := c.source()
	for _, r := range routes {
		ch <- prometheus.MustNewConstMetric(routeCertExpiry, prometheus.GaugeValue, float64(r.NotAfter.Unix()), r.Namespace, r.Route)
	}
	if !def.IsZero() {
		ch <- prometheus.MustNewConstMetric(defaultCertExpiry, prometheus.GaugeValue, float64(def.Unix()))
	}
}
