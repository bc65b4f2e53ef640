package model

import "time"

// The types in this file mirror the Kubernetes/OpenShift objects as they are
// written in YAML. They are what the decoder produces; validation and
// admission turn them into the Desired state that render consumes.

// ObjectMeta is the part of Kubernetes metadata haroute uses. Server-side
// fields (uid, resourceVersion, managedFields, …) are ignored by the decoder.
type ObjectMeta struct {
	Name              string
	Namespace         string // "default" when absent
	Labels            map[string]string
	Annotations       map[string]string
	CreationTimestamp time.Time // zero when absent: such routes lose ties
}

// Source locates an object, and its fields, in the input.
type Source struct {
	Pos Position
	// Fields maps a dotted field path ("spec.tls.key",
	// "metadata.annotations.haproxy.router.openshift.io/timeout") to where
	// its value was written, so later stages can report exact positions.
	// The decoder leaves it nil and records positions in a compact form
	// instead (a map per object was a tenth of a cold load's allocations);
	// read positions with Lookup or At, which consult both.
	Fields map[string]Position
	// fields is what the decoder recorded, in the order it walked the
	// object: a later entry for the same name wins, as a map write would.
	// All of them are in the file Pos.Path names; names holds their paths.
	fields []fieldPos
	names  *fieldNames
}

// At returns the position of field, falling back to the object itself.
func (s Source) At(field string) Position {
	if p, ok := s.Lookup(field); ok {
		return p
	}
	return s.Pos
}

// Lookup returns the position of field and whether it was written. Callers
// should use it (or At) rather than index Fields, so the representation
// of recorded positions can change without touching them.
func (s Source) Lookup(field string) (Position, bool) {
	if p, ok := s.Fields[field]; ok {
		return p, true
	}
	// Lookups happen only when a diagnostic is made, so a scan is cheaper
	// overall than an index built for every object.
	for i := len(s.fields) - 1; i >= 0; i-- {
		if f := &s.fields[i]; s.names.list[f.name] == field {
			return Position{Path: s.Pos.Path, Line: int(f.line), Col: int(f.col)}, true
		}
	}
	return Position{}, false
}

// IntOrString is Kubernetes' intstr: a port given by number or by name.
type IntOrString struct {
	IsString bool
	Int      int32
	Str      string
}

// Route is route.openshift.io/v1 Route (also read under apiVersion: v1).
type Route struct {
	Meta   ObjectMeta
	Spec   RouteSpec
	Source Source
	// warnings are what decoding found (unknown fields), for the route's
	// status; slips, fields of the Route's own one level off, errors of
	// the route's (walker.misplaced).
	warnings, slips Diagnostics
}

type RouteSpec struct {
	Host              string
	Subdomain         string // without Host: the host is <subdomain>.<RouterConfig spec.domain>
	Path              string
	To                RouteTargetReference
	AlternateBackends []RouteTargetReference
	Port              *RoutePort
	TLS               *TLSConfig
	WildcardPolicy    WildcardPolicy // "None" when absent
	HTTPHeaders       *RouteHTTPHeaders
}

// RouteHTTPHeaders is spec.httpHeaders of a Route: header actions on
// requests and responses (OpenShift 4.14+).
type RouteHTTPHeaders struct {
	Request  []HTTPHeaderAction // spec.httpHeaders.actions.request
	Response []HTTPHeaderAction // spec.httpHeaders.actions.response
}

type RouteTargetReference struct {
	Kind   string // "Service"
	Name   string
	Weight *int32 // nil = 100; 0..256
}

type RoutePort struct {
	TargetPort IntOrString
}

type Termination string

const (
	TerminationNone        Termination = "" // plain HTTP route
	TerminationEdge        Termination = "edge"
	TerminationReencrypt   Termination = "reencrypt"
	TerminationPassthrough Termination = "passthrough"
)

type InsecureEdgeTerminationPolicy string

const (
	InsecurePolicyNone     InsecureEdgeTerminationPolicy = "None"
	InsecurePolicyAllow    InsecureEdgeTerminationPolicy = "Allow"
	InsecurePolicyRedirect InsecureEdgeTerminationPolicy = "Redirect"
)

type WildcardPolicy string

const (
	WildcardPolicyNone      WildcardPolicy = "None"
	WildcardPolicySubdomain WildcardPolicy = "Subdomain"
)

type TLSConfig struct {
	Termination                   Termination
	Certificate                   string
	Key                           string
	CACertificate                 string
	DestinationCACertificate      string
	InsecureEdgeTerminationPolicy InsecureEdgeTerminationPolicy
	// ExternalCertificate names a Secret of type kubernetes.io/tls in the
	// route's namespace whose tls.crt and tls.key serve the route
	// (spec.tls.externalCertificate.name).
	ExternalCertificate string
}

// Secret is core v1 Secret; haroute reads those a route's
// spec.tls.externalCertificate names.
type Secret struct {
	Meta ObjectMeta
	Type string
	// Data holds data (base64-decoded) and stringData, by key.
	Data   map[string]string
	Source Source
}

// SecretTypeTLS is the type externalCertificate needs.
const SecretTypeTLS = "kubernetes.io/tls"

// Endpoints is core v1 Endpoints.
type Endpoints struct {
	Meta    ObjectMeta
	Subsets []EndpointSubset
	Source  Source
}

type EndpointSubset struct {
	Addresses         []EndpointAddress
	NotReadyAddresses []EndpointAddress
	Ports             []EndpointPort
}

type EndpointAddress struct {
	IP       string
	Hostname string
}

type EndpointPort struct {
	Name     string
	Port     int32
	Protocol string // TCP when absent
	// AppProtocol is the port's application protocol; only h2c
	// (kubernetes.io/h2c) changes how haroute talks to it (H2C).
	AppProtocol string
}

// H2C reports whether the port speaks HTTP/2 without TLS, as the OpenShift
// router reads appProtocol: "h2c" or "kubernetes.io/h2c".
func (p EndpointPort) H2C() bool {
	return p.AppProtocol == "h2c" || p.AppProtocol == "kubernetes.io/h2c"
}

// EndpointSlice is discovery.k8s.io/v1 EndpointSlice. The service it belongs
// to is the label kubernetes.io/service-name.
type EndpointSlice struct {
	Meta        ObjectMeta
	AddressType string
	Endpoints   []SliceEndpoint
	Ports       []EndpointPort
	Source      Source
}

type SliceEndpoint struct {
	Addresses []string
	Ready     *bool // nil counts as ready, as in Kubernetes
}

// ServiceNameLabel ties an EndpointSlice to its Service.
const ServiceNameLabel = "kubernetes.io/service-name"

// RouterConfig is haroute.io/v1alpha1 RouterConfig. Pointer fields are nil
// when the field was not written, so "unset" and "explicit zero" differ.
type RouterConfig struct {
	Meta   ObjectMeta
	Spec   RouterConfigSpec
	Source Source
}

type RouterConfigSpec struct {
	BindOptions          BindOptions
	TuningOptions        TuningOptions
	DynamicConfigManager *bool
	DefaultCertificate   string // inline PEM (cert + key) or a file path
	DefaultDestinationCA string // inline PEM or a file path
	RouteSelector        *LabelSelector
	Namespaces           []string
	AllowWildcardRoutes  bool
	// Domain is the IngressController's domain: what hosts are generated
	// in for routes without spec.host.
	Domain         string
	RouteAdmission RouteAdmissionPolicy
	Stats          StatsOptions
	// HTTPEmptyRequestsPolicy is Respond (the default) or Ignore: close
	// connections that time out before a request without a response
	// or a log line (load balancer probes, browser preconnects).
	HTTPEmptyRequestsPolicy string
	// IdleConnectionTerminationPolicy is Immediate (the default) or
	// Deferred: at a reload, the old process answers the next request of
	// an idle keep-alive connection (with Connection: close) instead of
	// closing it at once.
	IdleConnectionTerminationPolicy string
	Logging                         LoggingOptions
	TLSSecurityProfile              *TLSSecurityProfile
	// EndpointPublishingStrategy is read for hostNetwork.protocol only:
	// haroute always listens on the host network.
	EndpointPublishingStrategy EndpointPublishingStrategy
	ClientTLS                  *ClientTLS
	HTTPHeaders                HTTPHeaders
	HTTPCompression            HTTPCompression
	// HTTPErrorCodePages is the absolute path of a directory holding
	// error-page-503.http and/or error-page-404.http (the IngressController
	// names a ConfigMap with these keys).
	HTTPErrorCodePages string
	// HTTP2 offers h2 to clients of routes with their own certificate;
	// nil: the metadata annotation ingress.operator.openshift.io/
	// default-enable-http2 decides, as on OpenShift, else off.
	HTTP2 *bool
}

// HTTPCompression is the IngressController's spec.httpCompression.
type HTTPCompression struct {
	MimeTypes []string
}

// HTTPHeaders is the IngressController's spec.httpHeaders.
type HTTPHeaders struct {
	UniqueID UniqueIDHeader
	// ForwardedHeaderPolicy is Append (default), Replace, IfNone or Never.
	ForwardedHeaderPolicy string
	Actions               HTTPHeaderActions
}

// HTTPHeaderActions are spec.httpHeaders.actions.
type HTTPHeaderActions struct {
	Request  []HTTPHeaderAction
	Response []HTTPHeaderAction
}

// HTTPHeaderAction is one header to set or delete.
type HTTPHeaderAction struct {
	Name   string
	Type   string // Set or Delete
	HasSet bool   // action.set was written
	Value  string // action.set.value
}

// UniqueIDHeader is spec.httpHeaders.uniqueId.
type UniqueIDHeader struct {
	Name   string
	Format string
}

// ClientTLS is the IngressController's spec.clientTLS, with clientCA a
// CA bundle (inline PEM or a file path) rather than a ConfigMap.
type ClientTLS struct {
	ClientCertificatePolicy string // Required or Optional
	ClientCA                string
	AllowedSubjectPatterns  []string
}

type EndpointPublishingStrategy struct {
	Type        string // HostNetwork (the only one haroute has) or unset
	HostNetwork struct {
		Protocol string // TCP (default) or PROXY
	}
}

// TLSSecurityProfile is the IngressController's spec.tlsSecurityProfile.
type TLSSecurityProfile struct {
	Type   string // Old, Intermediate, Modern or Custom
	Custom *CustomTLSProfile
}

type CustomTLSProfile struct {
	Ciphers       []string
	MinTLSVersion string // VersionTLS10 … VersionTLS13
}

// LoggingOptions is the IngressController's spec.logging.
type LoggingOptions struct {
	Access *AccessLogging // nil: no access log
}

// AccessLogging is the IngressController's spec.logging.access.
type AccessLogging struct {
	Destination        LoggingDestination
	HTTPLogFormat      string
	HTTPCaptureHeaders CaptureHTTPHeaders
	HTTPCaptureCookies []CaptureHTTPCookie
	LogEmptyRequests   string // Log (default) or Ignore
}

// LoggingDestination is Container (HAProxy's stdout, collected into
// haroute's log) or Syslog.
type LoggingDestination struct {
	Type      string
	Syslog    *SyslogDestination
	Container *ContainerDestination
}

// SyslogDestination is a UDP endpoint (Address an IP, with Port) or, as a
// haroute extension, a unix datagram socket (Address an absolute path).
type SyslogDestination struct {
	Address   string
	Port      *int
	Facility  string
	MaxLength *int
}

type ContainerDestination struct {
	MaxLength *int
}

type CaptureHTTPHeaders struct {
	Request  []CaptureHTTPHeader
	Response []CaptureHTTPHeader
}

type CaptureHTTPHeader struct {
	Name      string
	MaxLength *int
}

type CaptureHTTPCookie struct {
	MatchType  string // Exact or Prefix
	Name       string
	NamePrefix string
	MaxLength  *int
}

// RouteAdmissionPolicy is the IngressController's spec.routeAdmission.
type RouteAdmissionPolicy struct {
	// NamespaceOwnership is Strict (default) or InterNamespaceAllowed.
	NamespaceOwnership string
	// WildcardPolicy is WildcardsAllowed or WildcardsDisallowed, another
	// spelling of allowWildcardRoutes.
	WildcardPolicy string
}

// StatsOptions configures the stats port's /stats page (OpenShift's
// ROUTER_METRICS_USERNAME/PASSWORD, as a file so the password is not in
// the config tree).
type StatsOptions struct {
	// CredentialsFile is an absolute path to a file holding
	// "user:password" on one line. Unset: no /stats page.
	CredentialsFile string
}

type BindOptions struct {
	Address string
	// Addresses lists several addresses to listen on (IPv4 and IPv6);
	// Address and Addresses are exclusive.
	Addresses []string
	Ports     BindPorts
}

type BindPorts struct {
	HTTP  *int
	HTTPS *int
	Stats *int
}

// TuningOptions holds durations as written; validation parses them.
type TuningOptions struct {
	MaxConnections      *int
	ThreadCount         *int
	ReloadInterval      string
	HealthCheckInterval string
	ClientTimeout       string
	ServerTimeout       string
	ConnectTimeout      string
	TunnelTimeout       string
	ClientFinTimeout    string
	ServerFinTimeout    string
	TLSInspectDelay     string
	HardStopAfter       string
	// HeaderBufferBytes is HAProxy's tune.bufsize: the largest request
	// head is HeaderBufferBytes - HeaderBufferMaxRewriteBytes.
	HeaderBufferBytes           *int
	HeaderBufferMaxRewriteBytes *int
	HTTPKeepAliveTimeout        string
	// HTTPRequestTimeout bounds how long a client may take to send a
	// complete request head (OpenShift's ROUTER_SLOWLORIS_TIMEOUT; the
	// IngressController has no field for it).
	HTTPRequestTimeout string
}

// LabelSelector is metav1.LabelSelector.
type LabelSelector struct {
	MatchLabels      map[string]string
	MatchExpressions []LabelSelectorRequirement
}

type LabelSelectorRequirement struct {
	Key      string
	Operator string // In, NotIn, Exists, DoesNotExist
	Values   []string
}

// Objects is everything decoded from one snapshot (or one file).
type Objects struct {
	Routes         []*Route
	Endpoints      []*Endpoints
	EndpointSlices []EndpointSlice
	RouterConfigs  []RouterConfig
	Secrets        []Secret
}
