package model

import (
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Desired is the validated, admitted state of one snapshot: what HAProxy
// should serve. Render turns it into files; plan diffs two of them.
type Desired struct {
	Router Settings
	// Routes holds the admitted routes, sorted by namespace then name.
	// They are shared: a route unchanged from one load to the next is the
	// same pointer (copying 10k routes into a fresh slice was 10 ms of
	// every change at 10k routes, most of it faulting in new pages), so
	// they are read-only. To change one, replace its pointer with a
	// changed copy.
	Routes []*AdmittedRoute
	// Statuses holds one entry per route seen, admitted or not, sorted
	// by namespace then name. Like Routes they are shared from load to
	// load (a route's status unchanged is the same pointer: a fresh
	// array of 10k statuses was 1.5 MB to fault in at every route added
	// or deleted) and read-only.
	Statuses []*RouteStatus
}

// Settings is a RouterConfig with defaults applied and values clamped.
type Settings struct {
	BindAddress string // "" = all addresses
	// BindAddresses is every address listened on when the RouterConfig
	// lists them (bindOptions.addresses); BindAddress is then the first.
	// nil: BindAddress alone. Read both through ListenAddresses.
	BindAddresses []string

	HTTPPort  int
	HTTPSPort int
	StatsPort int

	ReloadInterval      time.Duration
	HealthCheckInterval time.Duration

	MaxConnections int
	// MaxConnectionsAuto is set by maxConnections -1 (OpenShift's
	// "automatic"): MaxConnections is then the bound, fitted to the
	// file-descriptor limit without a warning.
	MaxConnectionsAuto bool
	ThreadCount        int // 0 = HAProxy's default
	ClientTimeout      time.Duration
	ServerTimeout      time.Duration
	ConnectTimeout     time.Duration
	TunnelTimeout      time.Duration
	ClientFinTimeout   time.Duration
	ServerFinTimeout   time.Duration
	TLSInspectDelay    time.Duration
	HardStopAfter      time.Duration // 0 = unset

	// HeaderBufferBytes and HeaderBufferMaxRewriteBytes are tune.bufsize
	// and tune.maxrewrite.
	HeaderBufferBytes           int
	HeaderBufferMaxRewriteBytes int
	HTTPKeepAliveTimeout        time.Duration
	HTTPRequestTimeout          time.Duration
	// IgnoreEmptyRequests is httpEmptyRequestsPolicy: Ignore.
	IgnoreEmptyRequests bool
	// DeferIdleClose is idleConnectionTerminationPolicy: Deferred.
	DeferIdleClose bool
	// AccessLog is nil when requests are not logged.
	AccessLog *AccessLog

	// TLS is what the tlsSecurityProfile asks of every TLS bind.
	TLS TLSPolicy
	// ProxyProtocol is hostNetwork.protocol: PROXY: the HTTP and HTTPS
	// listeners expect a PROXY protocol header (v1 or v2) first.
	ProxyProtocol bool
	// ClientTLS is nil unless clients must (or may) present a
	// certificate.
	ClientTLS *ClientTLSPolicy
	// UniqueID is nil unless requests get a unique id header.
	UniqueID *UniqueID
	// ForwardedHeaderPolicy is what routes without a set-forwarded-headers
	// annotation get: append ("" here), replace, if-none or never, in the
	// annotation's words.
	ForwardedHeaderPolicy string
	// RequestHeaderActions and ResponseHeaderActions are
	// spec.httpHeaders.actions, in order.
	RequestHeaderActions  []HeaderAction
	ResponseHeaderActions []HeaderAction
	// CompressionMIMETypes are the response types compressed with gzip;
	// nil: no compression.
	CompressionMIMETypes []string
	// ErrorPagesDir holds custom error pages (ErrorPageFiles); "" =
	// HAProxy's own. The caller reads them (see CheckErrorPage).
	ErrorPagesDir string
	// HTTP2 offers h2 (ALPN) on routes with their own certificate, never
	// on the default one.
	HTTP2 bool

	DynamicConfigManager bool

	// DefaultCertificate is PEM (certificate chain + key). Empty means the
	// daemon supplies a generated self-signed one from the state dir.
	DefaultCertificate string
	// DefaultCertificateFile is set when the RouterConfig named a path;
	// the caller (not model, which does no I/O) reads it.
	DefaultCertificateFile string
	// DefaultDestinationCA is PEM; empty means the system trust store.
	DefaultDestinationCA     string
	DefaultDestinationCAFile string

	RouteSelector       *LabelSelector
	Namespaces          []string
	AllowWildcardRoutes bool
	// InterNamespaceAllowed is routeAdmission.namespaceOwnership
	// InterNamespaceAllowed: routes of several namespaces may serve
	// different paths of one host. The default, Strict, gives a host to
	// the namespace of its oldest route.
	InterNamespaceAllowed bool
	// Domain is where hosts are generated for routes without spec.host
	// ("" = such routes are rejected).
	Domain string

	// StatsCredentialsFile names the file with the /stats page's
	// "user:password"; "" = no /stats page. The caller reads it (see
	// ParseStatsCredentials).
	StatsCredentialsFile string
}

// ListenAddresses returns the addresses the public and stats frontends
// bind; "" is every IPv4 address.
func (s *Settings) ListenAddresses() []string {
	if len(s.BindAddresses) > 0 {
		return s.BindAddresses
	}
	return []string{s.BindAddress}
}

// AccessLog is spec.logging.access, validated.
type AccessLog struct {
	// Target is HAProxy's log target: "stdout", "ip:port" (UDP) or the
	// absolute path of a unix datagram socket.
	Target    string
	Facility  string
	MaxLength int
	// Format is the HTTP log-format; "" is HAProxy's httplog format,
	// which is OpenShift's default.
	Format                 string
	CaptureRequestHeaders  []CaptureHeader
	CaptureResponseHeaders []CaptureHeader
	CaptureCookie          *CaptureCookie
	// IgnoreEmpty is logEmptyRequests: Ignore (option dontlognull).
	IgnoreEmpty bool
}

// CaptureHeader is a header to capture in the log, truncated to MaxLength.
type CaptureHeader struct {
	Name      string
	MaxLength int
}

// CaptureCookie is the cookie to capture: its name followed by "=" when
// matched exactly, a prefix otherwise, as HAProxy's capture cookie takes it.
type CaptureCookie struct {
	Name      string
	MaxLength int
}

// Defaults as documented in DESIGN §3 (OpenShift's IngressController values).
const (
	DefaultHTTPPort            = 80
	DefaultHTTPSPort           = 443
	DefaultStatsPort           = 1936
	DefaultReloadInterval      = 5 * time.Second
	DefaultHealthCheckInterval = 5 * time.Second
	DefaultMaxConnections      = 50000
	DefaultClientTimeout       = 30 * time.Second
	DefaultServerTimeout       = 30 * time.Second
	DefaultConnectTimeout      = 5 * time.Second
	DefaultTunnelTimeout       = time.Hour
	DefaultClientFinTimeout    = time.Second
	DefaultServerFinTimeout    = time.Second
	DefaultTLSInspectDelay     = 5 * time.Second
	// OpenShift raised HAProxy's 16 KiB buffers to be comparable to
	// cloud load balancers: request heads up to 24 KiB are accepted.
	DefaultHeaderBufferBytes           = 32768
	DefaultHeaderBufferMaxRewriteBytes = 8192
	DefaultHTTPKeepAliveTimeout        = 300 * time.Second
	DefaultHTTPRequestTimeout          = 10 * time.Second
)

// DefaultSettings returns the settings used when no RouterConfig exists.
func DefaultSettings() Settings {
	return Settings{
		HTTPPort:             DefaultHTTPPort,
		HTTPSPort:            DefaultHTTPSPort,
		StatsPort:            DefaultStatsPort,
		ReloadInterval:       DefaultReloadInterval,
		HealthCheckInterval:  DefaultHealthCheckInterval,
		MaxConnections:       DefaultMaxConnections,
		ClientTimeout:        DefaultClientTimeout,
		ServerTimeout:        DefaultServerTimeout,
		ConnectTimeout:       DefaultConnectTimeout,
		TunnelTimeout:        DefaultTunnelTimeout,
		ClientFinTimeout:     DefaultClientFinTimeout,
		ServerFinTimeout:     DefaultServerFinTimeout,
		TLSInspectDelay:      DefaultTLSInspectDelay,
		DynamicConfigManager: true,

		HeaderBufferBytes:           DefaultHeaderBufferBytes,
		HeaderBufferMaxRewriteBytes: DefaultHeaderBufferMaxRewriteBytes,
		HTTPKeepAliveTimeout:        DefaultHTTPKeepAliveTimeout,
		HTTPRequestTimeout:          DefaultHTTPRequestTimeout,
		TLS:                         tlsProfiles["Intermediate"],
	}
}

// RouteKey identifies a route.
type RouteKey struct {
	Namespace string
	Name      string
}

func (k RouteKey) String() string {
	if k.Namespace == "" {
		return k.Name // a spare backend's (daemon's pool): no route's
	}
	return k.Namespace + "/" + k.Name
}

// Compare orders keys by namespace, then name: the order admission gives
// routes in.
func (k RouteKey) Compare(o RouteKey) int {
	if c := strings.Compare(k.Namespace, o.Namespace); c != 0 {
		return c
	}
	return strings.Compare(k.Name, o.Name)
}

// BackendName is the HAProxy backend of one route, e.g. "be_http:ns:name".
type BackendName string

// ServerName is the HAProxy server name of one endpoint. It is derived from
// the endpoint address and whether the server is health checked
// (CheckedServerName), so a server keeps its name across reloads and
// runtime additions.
type ServerName string

// ServerNameFor derives the stable server name for an endpoint:
// "ep_10.0.0.1_8080", or "ep_fd00--1_8080" for IPv6 (':' is replaced so the
// name stays readable in `be/srv` runtime arguments).
func ServerNameFor(ip string, port int) ServerName {
	// Built in one allocation: admission names every endpoint of a
	// snapshot, and plan and render ask again.
	var b strings.Builder
	b.Grow(len("ep__") + len(ip) + len("-2147483648"))
	b.WriteString("ep_")
	for i := 0; i < len(ip); i++ {
		if c := ip[i]; c == ':' {
			b.WriteByte('-')
		} else {
			b.WriteByte(c)
		}
	}
	b.WriteByte('_')
	var num [20]byte
	b.Write(strconv.AppendInt(num[:0], int64(port), 10))
	return ServerName(b.String())
}

// CheckedServerName is the name of the same endpoint on a route whose
// servers are health checked: "ck_10.0.0.1_8080" for "ep_10.0.0.1_8080".
// HAProxy 2.6 cannot add or drop `check` on a server at runtime, and a
// route's servers render `check` only while two or more endpoints share
// its traffic; so a route crossing one/two endpoints trades its servers
// for their twins under the other name (new ones added, old ones
// drained), at runtime, and haproxy.cfg still names exactly what runs.
// Dynamic cookies derive from the address, so sticky sessions survive.
func CheckedServerName(unchecked ServerName) ServerName {
	return "ck_" + unchecked[len("ep_"):]
}

// NameServers names r's servers for whether r is health checked
// (CheckedServerName). Admission calls it once the weights are known.
func (r *AdmittedRoute) NameServers() {
	checked := r.HealthChecked()
	for i := range r.Services {
		for j := range r.Services[i].Servers {
			s := &r.Services[i].Servers[j]
			s.Name = ServerNameFor(s.Address, s.Port)
			if checked {
				s.Name = CheckedServerName(s.Name)
			}
		}
	}
}

// AdmittedRoute is a route that passed validation and admission, with its
// services resolved to endpoints and its annotations parsed.
type AdmittedRoute struct {
	Key RouteKey
	// CreationTimestamp decides host conflicts in admission; nothing after
	// admission reads it.
	CreationTimestamp time.Time

	Host string // lowercased, no port
	Path string // "" or starting with "/"
	// Wildcard is true for wildcardPolicy Subdomain: the route also serves
	// every host in the parent domain of Host ("*.example.com" for
	// "www.example.com").
	Wildcard bool

	Termination    Termination
	InsecurePolicy InsecureEdgeTerminationPolicy // "" for plain HTTP; None, Allow or Redirect for TLS routes (passthrough: None or Redirect)
	TLS            RouteTLS

	Backend BackendSettings
	// Services is spec.to followed by spec.alternateBackends.
	Services []ServiceBackend

	// Slot, when set, is the spare backend of the pool this route is bound
	// to (the daemon binds new routes to spares so that adding them needs
	// no reload); the route renders to it instead of its own backend.
	Slot BackendName
}

// SameOutput reports whether a and b yield the same HAProxy configuration:
// they are equal in every field but CreationTimestamp. The render cache
// reuses a route's output on it and the planner skips unchanged routes on
// it; TestSameOutputCoversEveryField keeps it complete.
func (a *AdmittedRoute) SameOutput(b *AdmittedRoute) bool {
	if a.Key != b.Key || a.Slot != b.Slot || a.Host != b.Host || a.Path != b.Path || a.Wildcard != b.Wildcard ||
		a.Termination != b.Termination || a.InsecurePolicy != b.InsecurePolicy || a.TLS != b.TLS ||
		a.Backend != b.Backend || len(a.Services) != len(b.Services) {
		return false
	}
	for i := range a.Services {
		sa, sb := &a.Services[i], &b.Services[i]
		if sa.Name != sb.Name || sa.Weight != sb.Weight || !slices.Equal(sa.Servers, sb.Servers) {
			return false
		}
	}
	return true
}

// BackendName returns the one backend this route renders to.
func (r *AdmittedRoute) BackendName() BackendName {
	if r.Slot != "" {
		return r.Slot
	}
	prefix := "be_http"
	switch r.Termination {
	case TerminationEdge:
		prefix = "be_edge_http"
	case TerminationReencrypt:
		prefix = "be_secure"
	case TerminationPassthrough:
		prefix = "be_tcp"
	}
	return BackendName(prefix + ":" + r.Key.Namespace + ":" + r.Key.Name)
}

// RouteKey returns the key of the route whose own backend (BackendName,
// not bound to a spare) could be named b: the part after the prefix. A
// namespace and a name hold no ':'. The route may not exist, or may have
// another termination: compare its BackendName.
func (b BackendName) RouteKey() (RouteKey, bool) {
	_, rest, ok := strings.Cut(string(b), ":")
	if !ok {
		return RouteKey{}, false
	}
	ns, name, ok := strings.Cut(rest, ":")
	return RouteKey{Namespace: ns, Name: name}, ok
}

// FindRoute returns the index of the route with key in routes, which are
// in key order (as a Desired's are), and whether it is there.
func FindRoute(routes []*AdmittedRoute, key RouteKey) (int, bool) {
	return slices.BinarySearchFunc(routes, key, func(r *AdmittedRoute, k RouteKey) int { return r.Key.Compare(k) })
}

// FindStatus returns the index of the status with key in statuses, which
// are in key order (as a Desired's are), and whether it is there.
func FindStatus(statuses []*RouteStatus, key RouteKey) (int, bool) {
	return slices.BinarySearchFunc(statuses, key, func(s *RouteStatus, k RouteKey) int { return s.Key.Compare(k) })
}

// ChangedByKey walks two slices in key order together and yields what
// differs between them: an element of olds alone (new is the zero value),
// of news alone (old is the zero value), or the two with the same key.
// An element in both at the same place is passed over without comparing
// keys: a route shared from load to load, the usual case, costs a pointer
// comparison.
func ChangedByKey[T comparable](olds, news []T, key func(T) RouteKey) iter.Seq2[T, T] {
	return func(yield func(old, new T) bool) {
		i, j := 0, 0
		for i < len(olds) || j < len(news) {
			var old, cur T
			switch {
			case i < len(olds) && j < len(news) && olds[i] == news[j]:
				i++
				j++
				continue
			case j == len(news) || (i < len(olds) && key(olds[i]).Compare(key(news[j])) < 0):
				old = olds[i]
				i++
			case i == len(olds) || key(olds[i]).Compare(key(news[j])) > 0:
				cur = news[j]
				j++
			default:
				old, cur = olds[i], news[j]
				i++
				j++
			}
			if !yield(old, cur) {
				return
			}
		}
	}
}

// RouteKeyOf is the key of an admitted route, for ChangedByKey.
func RouteKeyOf(r *AdmittedRoute) RouteKey { return r.Key }

// InKeyOrder reports whether routes are in key order. The slices
// admission builds are known to be (admitOnce vouches for them, and a
// Desired's routes are replaced pointer for pointer, never reordered);
// any other is checked, and remembered when it is. At 10k routes the
// check is 10k key comparisons, about a millisecond that every change
// paid for the slice admission had just sorted.
func InKeyOrder(routes []*AdmittedRoute) bool {
	if keyOrdered.known(routes) {
		return true
	}
	for i := 1; i < len(routes); i++ {
		if routes[i-1].Key.Compare(routes[i].Key) > 0 {
			return false
		}
	}
	keyOrdered.remember(routes)
	return true
}

// keyOrdered remembers the last route slices known to be in key order:
// the newest admission's, and the one before it, which the next plan
// compares against as applied. Holding the slices keeps their memory from
// being reused by another.
var keyOrdered orderedSlices

type orderedSlices struct {
	mu   sync.Mutex
	last [2][]*AdmittedRoute
}

func (s *orderedSlices) known(rs []*AdmittedRoute) bool {
	if len(rs) == 0 {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.last {
		if len(l) == len(rs) && &l[0] == &rs[0] {
			return true
		}
	}
	return false
}

func (s *orderedSlices) remember(rs []*AdmittedRoute) {
	if len(rs) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.last[0]) == len(rs) && &s.last[0][0] == &rs[0] {
		return
	}
	s.last[1], s.last[0] = s.last[0], rs
}

// Servers returns every server of the route across its services, in order.
func (r *AdmittedRoute) Servers() []Server {
	var out []Server
	for _, s := range r.Services {
		out = append(out, s.Servers...)
	}
	return out
}

// ActiveServers counts servers with a non-zero weight: the endpoints that
// receive traffic, which decide whether health checks run (two or more).
func (r *AdmittedRoute) ActiveServers() int {
	n := 0
	for _, svc := range r.Services {
		for _, s := range svc.Servers {
			if s.Weight > 0 {
				n++
			}
		}
	}
	return n
}

// HealthChecked reports whether the route's servers are actively checked:
// only when two or more endpoints share the traffic (DESIGN §3).
func (r *AdmittedRoute) HealthChecked() bool { return r.ActiveServers() >= 2 }

// RouteTLS holds PEM material as written in the route (already validated).
type RouteTLS struct {
	Certificate              string
	Key                      string
	CACertificate            string
	DestinationCACertificate string
	// ExternalCertificate is the Secret Certificate and Key came from
	// ("" when written inline).
	ExternalCertificate string
}

// ServiceBackend is one service behind a route with its ready endpoints.
type ServiceBackend struct {
	Name    string
	Weight  int32 // the route's weight for this service, 0..256
	Servers []Server
}

// Server is one ready endpoint address of a service.
type Server struct {
	Name    ServerName
	Address string // IP literal
	Port    int
	// Weight is the HAProxy server weight, 0..256: the service weight
	// spread over the service's endpoints (OpenShift's scheme).
	Weight int
	// H2C is set when the endpoint's port has appProtocol h2c: HAProxy
	// speaks HTTP/2 to it in clear text (`proto h2`) on http and edge
	// routes, as the OpenShift router does.
	H2C bool
}

// BalanceAlgorithm is one of the dynamic-server compatible algorithms.
type BalanceAlgorithm string

const (
	BalanceRoundRobin BalanceAlgorithm = "roundrobin"
	BalanceLeastConn  BalanceAlgorithm = "leastconn"
	BalanceSource     BalanceAlgorithm = "source"
	BalanceRandom     BalanceAlgorithm = "random"
)

// BackendSettings is what the route's annotations set. Zero values mean
// "not set, use the router default". It is comparable: two routes' backend
// settings are equal when ==; the annotation table (annotation_table.go)
// names each field for plan.
type BackendSettings struct {
	Balance             BalanceAlgorithm // always set by validation: the annotation, else defaultBalance (roundrobin; source for passthrough with one active service)
	Timeout             time.Duration    // haproxy.router.openshift.io/timeout (timeout server)
	TunnelTimeout       time.Duration    // …/timeout-tunnel
	HealthCheckInterval time.Duration    // resolved: annotation > RouterConfig > 5s
	IPAllowlist         AddressList      // CIDRs or IPs
	HSTSHeader          string           // value of Strict-Transport-Security
	DisableCookies      bool
	CookieName          string
	CookieSameSite      string    // Lax, Strict, None
	RateLimit           RateLimit // zero = off
	// PodConcurrentConnections caps connections per server (maxconn).
	PodConcurrentConnections int
	RewriteTarget            string // "" = unset
	ForwardedHeaders         string // append (default), replace, never, if-none
	// RequestHeaders and ResponseHeaders are spec.httpHeaders.actions.
	RequestHeaders  HeaderActions
	ResponseHeaders HeaderActions
}

// RateLimit is the rate-limit-connections family of annotations.
type RateLimit struct {
	ConcurrentTCP int
	RateTCP       int
	RateHTTP      int
}

// RouteState is the outcome of admission for one route.
type RouteState string

const (
	RouteAdmitted             RouteState = "admitted"
	RouteAdmittedWithWarnings RouteState = "admitted-with-warnings"
	RouteRejected             RouteState = "rejected"
	// RouteStale is a route whose current version is rejected and whose
	// last good version keeps serving (Reasons say what is wrong now).
	RouteStale RouteState = "stale"
	// RouteHeld is a route the directory no longer has that keeps
	// serving while the deletion guard holds its deletion.
	RouteHeld RouteState = "held"
)

// RouteStatus is what `status` and metrics show for each route.
type RouteStatus struct {
	Key      RouteKey
	Host     string // the host it claims: *.domain for a wildcard route
	Path     string
	State    RouteState
	Reasons  []string // why rejected
	Warnings []string
	// Notes say what the route serves that its file does not show: a
	// service without endpoints, so the route answers 503.
	Notes  []string
	Source Position
}

// Same reports whether s and o are equal in every field;
// TestRouteStatusSameCoversEveryField keeps it complete.
func (s *RouteStatus) Same(o *RouteStatus) bool {
	return s.Key == o.Key && s.Host == o.Host && s.Path == o.Path && s.State == o.State &&
		s.Source == o.Source && slices.Equal(s.Reasons, o.Reasons) && slices.Equal(s.Warnings, o.Warnings) && slices.Equal(s.Notes, o.Notes)
}
