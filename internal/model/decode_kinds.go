package model

import (
	"cmp"
	"encoding/base64"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// The schemas of the kinds haroute reads. Field names are written out as
// constants where they can be, so decoding a route allocates no names.

const (
	apiRoute         = "route.openshift.io/v1"
	apiRouteLegacy   = "v1" // OpenShift still accepts the pre-group spelling
	apiCore          = "v1"
	apiDiscovery     = "discovery.k8s.io/v1"
	apiRouterConfig  = "haroute.io/v1alpha1"
	defaultNamespace = "default"
)

// document decodes one parsed YAML document. Empty documents are fine.
func (w *walker) document(root *yaml.Node) {
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return
		}
		root = root.Content[0]
	}
	if root.Kind == 0 || isNull(resolve(root)) {
		return
	}
	w.object(root)
}

// maxMergeDepth bounds how deep typeNodes follows merge keys.
const maxMergeDepth = 8

// typeNodes finds the values of kind and apiVersion in the map m, or in
// the maps it merges (`<<: *base`), its own keys first, as the fields
// are decoded. A YAML library resolves such merges, and the object then
// read as "kind: required".
func typeNodes(m *yaml.Node, depth int) (kind, api *yaml.Node) {
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		switch k := resolve(m.Content[i]); {
		case k.Tag == "!!merge":
			merges = append(merges, m.Content[i+1])
		case k.Value == "kind":
			kind = m.Content[i+1]
		case k.Value == "apiVersion":
			api = m.Content[i+1]
		}
	}
	if depth >= maxMergeDepth {
		return kind, api
	}
	for _, src := range merges {
		r := resolve(src)
		maps := []*yaml.Node{r}
		if r.Kind == yaml.SequenceNode {
			maps = r.Content
		}
		for _, mm := range maps {
			if mm = resolve(mm); mm.Kind != yaml.MappingNode {
				continue
			}
			k, a := typeNodes(mm, depth+1)
			kind, api = cmp.Or(kind, k), cmp.Or(api, a)
		}
	}
	return kind, api
}

// object decodes one Kubernetes object (or a List of them) at n. A Route,
// Endpoints or EndpointSlice with a name that decodes with errors is
// taken out of the objects and listed as broken, with its errors counted
// as explained (walker.broken): the rest of its file can still apply
// (Loader.decodeWithMemos).
func (w *walker) object(n *yaml.Node) {
	start, explained := len(w.diags), w.explained
	before := w.objs.counts()
	w.decodeObject(n)
	errs := w.diags[start:].errorCount() - (w.explained - explained)
	if errs == 0 {
		return
	}
	if id, ok := w.objs.dropNew(before); ok {
		w.broken = append(w.broken, id)
		w.explained += errs
	}
}

// decodeObject is object's decoding. Its field paths are the object's
// own: those of a List's items do not start with "items".
func (w *walker) decodeObject(n *yaml.Node) {
	outer := w.field
	w.field = w.field[len(w.field):]
	defer func() { w.field = outer }()
	m := resolve(n)
	if m.Kind != yaml.MappingNode {
		w.report(SeverityError, n, "expected a Kubernetes object (a map), got %s", describe(m))
		return
	}
	kindNode, apiNode := typeNodes(m, 0)
	w.fields = w.fields[:0]
	w.unknown = SeverityWarning
	kind, apiVersion, ok := w.typeMeta(m, kindNode, apiNode)
	if !ok {
		return
	}

	switch kind {
	case "Route":
		if w.checkAPIVersion(apiNode, kind, apiVersion, apiRoute, apiRouteLegacy) {
			w.route(m)
		}
	case "Endpoints":
		if w.checkAPIVersion(apiNode, kind, apiVersion, apiCore) {
			w.endpoints(m)
		}
	case "EndpointSlice":
		if w.checkAPIVersion(apiNode, kind, apiVersion, apiDiscovery) {
			w.endpointSlice(m)
		}
	case "Secret":
		if w.checkAPIVersion(apiNode, kind, apiVersion, apiCore) {
			w.secret(m)
		}
	case "RouterConfig":
		if w.checkAPIVersion(apiNode, kind, apiVersion, apiRouterConfig) {
			w.unknown = SeverityError
			w.routerConfig(m)
		}
	default:
		if strings.HasSuffix(kind, "List") {
			w.listKind(m, kind, apiVersion)
			return
		}
		if kind == "Template" {
			// An OpenShift Template holds Routes as parameterized
			// objects; skipping it quietly would drop them.
			w.reportKey("kind", SeverityWarning, resolve(kindNode), "Template %q is skipped: haroute does not process OpenShift templates; run `oc process` and write its output here instead",
				objectName(m))
			return
		}
		if like, ok := nearMissKind(kind, apiVersion); ok {
			// A typo must not drop a route as quietly as a Service is
			// skipped: warn, so `check --strict` fails.
			w.reportKey("kind", SeverityWarning, resolve(kindNode), "%s %q (%s) is not a kind haroute reads but looks like %s (%s): the object is skipped",
				kind, objectName(m), apiVersion, like.kind, like.apiVersions[0])
			return
		}
		w.report(SeverityNote, m, "skipped %s %q: haroute reads only Route, Endpoints, EndpointSlice and RouterConfig", kind, objectName(m))
	}
}

// ourKind is a kind haroute reads and the apiVersions it reads it under.
type ourKind struct {
	kind        string
	apiVersions []string
}

var ourKinds = []ourKind{
	{"Route", []string{apiRoute, apiRouteLegacy}},
	{"Endpoints", []string{apiCore}},
	{"EndpointSlice", []string{apiDiscovery}},
	{"RouterConfig", []string{apiRouterConfig}},
}

// ownGroups are API groups in which haroute reads every kind there is
// (route.openshift.io has only Route, discovery.k8s.io only
// EndpointSlice): any other kind in them is a mistake.
var ownGroups = []string{"route.openshift.io", "discovery.k8s.io", "haroute.io"}

// nearMissKind reports which of haroute's kinds an unknown kind most
// likely meant: one spelled the same but for case, one in a group that
// holds only haroute's kinds, or one at most two edits away under the
// apiVersion of that kind. The last test needs the apiVersion, or
// Kubernetes' Role (rbac.authorization.k8s.io) would pass for a Route.
func nearMissKind(kind, apiVersion string) (ourKind, bool) {
	group := "" // the core group, apiVersion "v1"
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		group = g
	}
	for _, k := range ourKinds {
		if strings.EqualFold(kind, k.kind) {
			return k, true
		}
	}
	for _, k := range ourKinds {
		for _, v := range k.apiVersions {
			g, _, grouped := strings.Cut(v, "/")
			if grouped && g == group && slices.Contains(ownGroups, group) {
				return k, true
			}
			if v == apiVersion && withinTwoEdits(strings.ToLower(kind), strings.ToLower(k.kind)) {
				return k, true
			}
		}
	}
	return ourKind{}, false
}

// withinTwoEdits reports whether a Levenshtein distance of at most 2
// separates a and b. Kinds are short, and only unknown kinds get here.
func withinTwoEdits(a, b string) bool {
	const most = 2
	if len(a)-len(b) > most || len(b)-len(a) > most {
		return false
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)] <= most
}

// typeMeta checks that kind and apiVersion are present strings.
func (w *walker) typeMeta(m, kindNode, apiNode *yaml.Node) (kind, apiVersion string, ok bool) {
	kind, kindOK := w.typeField(m, kindNode, "kind")
	apiVersion, apiOK := w.typeField(m, apiNode, "apiVersion")
	return kind, apiVersion, kindOK && apiOK
}

// typeField decodes kind or apiVersion, at n, of the object m.
func (w *walker) typeField(m, n *yaml.Node, key string) (string, bool) {
	defer w.leave(w.enter(key))
	if n == nil {
		w.report(SeverityError, m, "required")
		return "", false
	}
	s, _ := w.str(n)
	if s == "" {
		if isNull(resolve(n)) || resolve(n).Tag == "!!str" {
			w.report(SeverityError, n, "required")
		}
		return "", false
	}
	return s, true
}

func (w *walker) checkAPIVersion(n *yaml.Node, kind, got string, want ...string) bool {
	for _, v := range want {
		if got == v {
			return true
		}
	}
	w.reportKey("apiVersion", SeverityError, resolve(n), "unsupported apiVersion %q for kind %s, want %s", got, kind, want[0])
	return false
}

// objectName finds metadata.name for notes about skipped objects.
func objectName(m *yaml.Node) string {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if resolve(m.Content[i]).Value != "metadata" {
			continue
		}
		md := resolve(m.Content[i+1])
		for j := 0; j+1 < len(md.Content); j += 2 {
			if resolve(md.Content[j]).Value == "name" {
				return resolve(md.Content[j+1]).Value
			}
		}
	}
	return ""
}

// listKind decodes a List (kubectl get -o yaml): each item is an object.
// A typed list as the API server returns it (RouteList from `oc get --raw`)
// omits kind and apiVersion on its items; they take the list's.
func (w *walker) listKind(m *yaml.Node, kind, apiVersion string) {
	itemKind := strings.TrimSuffix(kind, "List")
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "apiVersion", "kind", "metadata":
		case "items":
			for _, item := range w.list(v) {
				if itemKind != "" {
					defaultTypeMeta(item, itemKind, apiVersion)
				}
				w.object(item)
			}
		default:
			// Not w.unknownField: an item may have left w.unknown at error.
			w.report(SeverityWarning, k, "unknown field")
		}
	})
}

// meta decodes metadata; server-side fields are ignored silently.
func (w *walker) meta(k, v *yaml.Node, meta *ObjectMeta) {
	w.record(k)
	m, ok := w.mapping(v)
	if !ok {
		return
	}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "name":
			meta.Name, _ = w.str(v)
		case "namespace":
			meta.Namespace, _ = w.str(v)
		case "labels":
			w.record(k)
			meta.Labels = w.stringMap(v)
		case "annotations":
			w.record(k)
			meta.Annotations = w.stringMap(v)
		case "creationTimestamp":
			meta.CreationTimestamp = w.timestamp(v)
		case "managedFields", "resourceVersion", "uid", "generation", "selfLink",
			"ownerReferences", "finalizers", "generateName", "deletionTimestamp",
			"deletionGracePeriodSeconds", "clusterName":
		default:
			w.unknownField(k)
		}
	})
}

// finish completes an object: defaults the namespace, requires a name
// (once: not when a diagnostic since start already named it) and builds
// its Source.
func (w *walker) finish(m *yaml.Node, meta *ObjectMeta, start int) Source {
	if meta.Namespace == "" {
		meta.Namespace = defaultNamespace
	}
	src := w.source(m)
	const name = "metadata.name"
	if meta.Name == "" && !w.reported(start, name) {
		pos, ok := src.Lookup(name)
		if !ok {
			pos = src.At("metadata")
		}
		w.diags = append(w.diags, Diagnostic{Pos: pos, Severity: SeverityError, Field: name, Message: "required"})
	}
	return src
}

// reported tells whether a diagnostic about field was made since start.
func (w *walker) reported(start int, field string) bool {
	for _, d := range w.diags[start:] {
		if d.Field == field {
			return true
		}
	}
	return false
}

func (w *walker) route(m *yaml.Node) {
	var r Route
	start := len(w.diags)
	w.homes, w.slips = routeFieldHomes, nil
	defer func() { w.homes = nil }()
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "apiVersion", "kind", "status":
		case "metadata":
			w.meta(k, v, &r.Meta)
		case "spec":
			w.record(k)
			w.routeSpec(v, &r.Spec)
		default:
			w.unknownField(k)
		}
	})
	if r.Spec.WildcardPolicy == "" {
		r.Spec.WildcardPolicy = WildcardPolicyNone
	}
	r.Source = w.finish(m, &r.Meta, start)
	r.slips = w.slips
	for _, d := range w.diags[start:] {
		if d.Severity == SeverityWarning {
			// Shown on the route's status too: an unknown field is
			// often why a route does not do what its author meant.
			r.warnings = append(r.warnings, d)
		}
	}
	w.objs.Routes = append(w.objs.Routes, &r)
}

func (w *walker) routeSpec(n *yaml.Node, spec *RouteSpec) {
	m, ok := w.mapping(n)
	if !ok {
		return
	}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "host":
			spec.Host, _ = w.str(v)
		case "path":
			spec.Path, _ = w.str(v)
		case "to":
			w.record(k)
			w.target(v, &spec.To)
		case "alternateBackends":
			w.record(k)
			w.eachItem(w.list(v), func(item *yaml.Node) {
				w.record(item)
				var t RouteTargetReference
				w.target(item, &t)
				spec.AlternateBackends = append(spec.AlternateBackends, t)
			})
		case "port":
			w.record(k)
			if pm, ok := w.mapping(v); ok {
				spec.Port = &RoutePort{}
				w.eachPair(pm, func(key string, k, v *yaml.Node) {
					if key == "targetPort" {
						spec.Port.TargetPort = w.intOrString(v)
					} else {
						w.unknownField(k)
					}
				})
			}
		case "tls":
			w.record(k)
			spec.TLS = w.tls(v)
		case "wildcardPolicy":
			s, _ := w.str(v)
			spec.WildcardPolicy = WildcardPolicy(s)
		case "subdomain":
			spec.Subdomain, _ = w.str(v)
		case "httpHeaders":
			w.record(k)
			spec.HTTPHeaders = w.routeHTTPHeaders(v)
		default:
			w.unknownField(k)
		}
	})
}

// routeHTTPHeaders decodes a Route's spec.httpHeaders (its actions; the
// RouterConfig's spec.httpHeaders has more, see decode_edge.go).
func (w *walker) routeHTTPHeaders(n *yaml.Node) *RouteHTTPHeaders {
	m, ok := w.mapping(n)
	if !ok {
		return nil
	}
	h := &RouteHTTPHeaders{}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		if key != "actions" {
			w.unknownField(k)
			return
		}
		w.record(k)
		am, ok := w.mapping(v)
		if !ok {
			return
		}
		w.eachPair(am, func(key string, k, v *yaml.Node) {
			switch key {
			case "request":
				w.record(k)
				h.Request = w.headerActions(v)
			case "response":
				w.record(k)
				h.Response = w.headerActions(v)
			default:
				w.unknownField(k)
			}
		})
	})
	return h
}

// target decodes spec.to or one of spec.alternateBackends.
func (w *walker) target(n *yaml.Node, t *RouteTargetReference) {
	m, ok := w.mapping(n)
	if !ok {
		return
	}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "kind":
			t.Kind, _ = w.str(v)
		case "name":
			t.Name, _ = w.str(v)
		case "weight":
			t.Weight = w.int32Ptr(v)
		default:
			w.unknownField(k)
		}
	})
}

func (w *walker) tls(n *yaml.Node) *TLSConfig {
	m, ok := w.mapping(n)
	if !ok {
		return nil
	}
	var t TLSConfig
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "termination":
			s, _ := w.str(v)
			t.Termination = Termination(s)
		case "certificate":
			t.Certificate, _ = w.str(v)
		case "key":
			t.Key, _ = w.str(v)
		case "caCertificate":
			t.CACertificate, _ = w.str(v)
		case "destinationCACertificate":
			t.DestinationCACertificate, _ = w.str(v)
		case "insecureEdgeTerminationPolicy":
			s, _ := w.str(v)
			t.InsecureEdgeTerminationPolicy = InsecureEdgeTerminationPolicy(s)
		case "externalCertificate":
			w.record(k)
			if em, ok := w.mapping(v); ok {
				w.eachPair(em, func(key string, k, v *yaml.Node) {
					if key == "name" {
						t.ExternalCertificate, _ = w.str(v)
						return
					}
					w.unknownField(k)
				})
			}
		default:
			w.unknownField(k)
		}
	})
	return &t
}

// secret decodes a core v1 Secret. Its values never appear in messages.
func (w *walker) secret(m *yaml.Node) {
	var sec Secret
	start := len(w.diags)
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "apiVersion", "kind", "immutable":
		case "metadata":
			w.meta(k, v, &sec.Meta)
		case "type":
			sec.Type, _ = w.str(v)
		case "data", "stringData":
			w.record(k)
			dataKey := k
			w.eachString(v, func(dk string, _ *yaml.Node, dv string) {
				if key == "data" {
					b, err := base64.StdEncoding.DecodeString(dv)
					if err != nil {
						w.report(SeverityError, dataKey, "value of %s is not base64", dk)
						return
					}
					dv = string(b)
				}
				if sec.Data == nil {
					sec.Data = map[string]string{}
				}
				sec.Data[dk] = dv
			})
		default:
			w.unknownField(k)
		}
	})
	sec.Source = w.finish(m, &sec.Meta, start)
	w.objs.Secrets = append(w.objs.Secrets, sec)
}

func (w *walker) endpoints(m *yaml.Node) {
	var e Endpoints
	start := len(w.diags)
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "apiVersion", "kind":
		case "metadata":
			w.meta(k, v, &e.Meta)
		case "subsets":
			w.record(k)
			items := w.list(v)
			e.Subsets = make([]EndpointSubset, 0, len(items))
			w.eachItem(items, func(item *yaml.Node) {
				w.record(item)
				e.Subsets = append(e.Subsets, w.subset(item))
			})
		default:
			w.unknownField(k)
		}
	})
	e.Source = w.finish(m, &e.Meta, start)
	w.objs.Endpoints = append(w.objs.Endpoints, &e)
}

func (w *walker) subset(n *yaml.Node) EndpointSubset {
	var s EndpointSubset
	m, ok := w.mapping(n)
	if !ok {
		return s
	}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "addresses":
			s.Addresses = w.addresses(k, v)
		case "notReadyAddresses":
			s.NotReadyAddresses = w.addresses(k, v)
		case "ports":
			s.Ports = w.ports(k, v)
		default:
			w.unknownField(k)
		}
	})
	return s
}

func (w *walker) addresses(k, v *yaml.Node) []EndpointAddress {
	w.record(k)
	items := w.list(v)
	if len(items) == 0 {
		return nil
	}
	out := make([]EndpointAddress, 0, len(items))
	w.eachItem(items, func(item *yaml.Node) {
		w.record(item)
		m, ok := w.mapping(item)
		if !ok {
			return
		}
		var a EndpointAddress
		w.eachPair(m, func(key string, k, v *yaml.Node) {
			switch key {
			case "ip":
				a.IP, _ = w.str(v)
			case "hostname":
				a.Hostname, _ = w.str(v)
			case "nodeName", "targetRef":
			default:
				w.unknownField(k)
			}
		})
		out = append(out, a)
	})
	return out
}

// ports decodes the ports of an Endpoints subset or an EndpointSlice.
func (w *walker) ports(k, v *yaml.Node) []EndpointPort {
	w.record(k)
	items := w.list(v)
	if len(items) == 0 {
		return nil
	}
	out := make([]EndpointPort, 0, len(items))
	w.eachItem(items, func(item *yaml.Node) {
		w.record(item)
		m, ok := w.mapping(item)
		if !ok {
			return
		}
		var p EndpointPort
		w.eachPair(m, func(key string, k, v *yaml.Node) {
			switch key {
			case "name":
				p.Name, _ = w.str(v)
			case "port":
				if n, ok := w.integer(v, minInt32, maxInt32); ok {
					p.Port = int32(n)
				}
			case "protocol":
				p.Protocol, _ = w.str(v)
			case "appProtocol":
				p.AppProtocol, _ = w.str(v)
			default:
				w.unknownField(k)
			}
		})
		if p.Protocol == "" {
			p.Protocol = "TCP"
		}
		out = append(out, p)
	})
	return out
}

func (w *walker) endpointSlice(m *yaml.Node) {
	var s EndpointSlice
	start := len(w.diags)
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "apiVersion", "kind":
		case "metadata":
			w.meta(k, v, &s.Meta)
		case "addressType":
			s.AddressType, _ = w.str(v)
		case "endpoints":
			w.record(k)
			items := w.list(v)
			s.Endpoints = make([]SliceEndpoint, 0, len(items))
			w.eachItem(items, func(item *yaml.Node) {
				w.record(item)
				s.Endpoints = append(s.Endpoints, w.sliceEndpoint(item))
			})
		case "ports":
			s.Ports = w.ports(k, v)
		default:
			w.unknownField(k)
		}
	})
	s.Source = w.finish(m, &s.Meta, start)
	w.objs.EndpointSlices = append(w.objs.EndpointSlices, s)
}

func (w *walker) sliceEndpoint(n *yaml.Node) SliceEndpoint {
	var e SliceEndpoint
	m, ok := w.mapping(n)
	if !ok {
		return e
	}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "addresses":
			w.record(k)
			e.Addresses = w.stringList(v)
		case "conditions":
			w.record(k)
			cm, ok := w.mapping(v)
			if !ok {
				return
			}
			w.eachPair(cm, func(key string, k, v *yaml.Node) {
				switch key {
				case "ready":
					e.Ready = w.boolPtr(v)
				case "serving", "terminating":
					w.boolean(v)
				default:
					w.unknownField(k)
				}
			})
		case "hostname", "nodeName", "zone", "targetRef", "hints", "deprecatedTopology":
		default:
			w.unknownField(k)
		}
	})
	return e
}

func (w *walker) routerConfig(m *yaml.Node) {
	var rc RouterConfig
	start := len(w.diags)
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "apiVersion", "kind", "status":
		case "metadata":
			w.meta(k, v, &rc.Meta)
		case "spec":
			w.record(k)
			w.routerConfigSpec(v, &rc.Spec)
		default:
			w.unknownField(k)
		}
	})
	rc.Source = w.finish(m, &rc.Meta, start)
	w.objs.RouterConfigs = append(w.objs.RouterConfigs, rc)
}

func (w *walker) routerConfigSpec(n *yaml.Node, spec *RouterConfigSpec) {
	m, ok := w.mapping(n)
	if !ok {
		return
	}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "bindOptions":
			w.record(k)
			w.bindOptions(v, &spec.BindOptions)
		case "tuningOptions":
			w.record(k)
			w.tuningOptions(v, &spec.TuningOptions)
		case "dynamicConfigManager":
			spec.DynamicConfigManager = w.boolPtr(v)
		case "defaultCertificate":
			spec.DefaultCertificate, _ = w.str(v)
		case "defaultDestinationCA":
			spec.DefaultDestinationCA, _ = w.str(v)
		case "routeSelector":
			w.record(k)
			spec.RouteSelector = w.labelSelector(v)
		case "namespaces":
			w.record(k)
			spec.Namespaces = w.stringList(v)
		case "allowWildcardRoutes":
			spec.AllowWildcardRoutes, _ = w.boolean(v)
		case "domain":
			spec.Domain, _ = w.str(v)
		case "routeAdmission":
			w.record(k)
			w.routeAdmission(v, &spec.RouteAdmission)
		case "stats":
			w.record(k)
			w.statsOptions(v, &spec.Stats)
		case "httpEmptyRequestsPolicy":
			spec.HTTPEmptyRequestsPolicy, _ = w.str(v)
		case "idleConnectionTerminationPolicy":
			spec.IdleConnectionTerminationPolicy, _ = w.str(v)
		case "logging":
			w.record(k)
			w.logging(v, &spec.Logging)
		case "endpointPublishingStrategy":
			w.record(k)
			w.publishingStrategy(v, &spec.EndpointPublishingStrategy)
		case "tlsSecurityProfile":
			w.record(k)
			spec.TLSSecurityProfile = w.tlsSecurityProfile(v)
		case "clientTLS":
			w.record(k)
			spec.ClientTLS = w.clientTLS(v)
		case "httpHeaders":
			w.record(k)
			w.httpHeaders(v, &spec.HTTPHeaders)
		case "httpCompression":
			w.record(k)
			w.httpCompression(v, &spec.HTTPCompression)
		case "http2":
			spec.HTTP2 = w.boolPtr(v)
		case "httpErrorCodePages":
			if r := resolve(v); r.Kind == yaml.MappingNode {
				// The IngressController's form names a ConfigMap.
				w.report(SeverityError, k, "httpErrorCodePages names a ConfigMap; haroute reads the pages itself: give the absolute path of a directory holding error-page-503.http and error-page-404.http")
				return
			}
			spec.HTTPErrorCodePages, _ = w.str(v)
		default:
			w.unknownField(k)
		}
	})
}

func (w *walker) routeAdmission(n *yaml.Node, ra *RouteAdmissionPolicy) {
	m, ok := w.mapping(n)
	if !ok {
		return
	}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "namespaceOwnership":
			ra.NamespaceOwnership, _ = w.str(v)
		case "wildcardPolicy":
			ra.WildcardPolicy, _ = w.str(v)
		default:
			w.unknownField(k)
		}
	})
}

func (w *walker) statsOptions(n *yaml.Node, s *StatsOptions) {
	m, ok := w.mapping(n)
	if !ok {
		return
	}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "credentialsFile":
			s.CredentialsFile, _ = w.str(v)
		default:
			w.unknownField(k)
		}
	})
}

func (w *walker) bindOptions(n *yaml.Node, b *BindOptions) {
	m, ok := w.mapping(n)
	if !ok {
		return
	}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "address":
			b.Address, _ = w.str(v)
		case "addresses":
			w.record(k)
			b.Addresses = w.stringList(v)
		case "ports":
			w.record(k)
			pm, ok := w.mapping(v)
			if !ok {
				return
			}
			w.eachPair(pm, func(key string, k, v *yaml.Node) {
				switch key {
				case "http":
					b.Ports.HTTP = w.intPtr(v)
				case "https":
					b.Ports.HTTPS = w.intPtr(v)
				case "stats":
					b.Ports.Stats = w.intPtr(v)
				default:
					w.unknownField(k)
				}
			})
		default:
			w.unknownField(k)
		}
	})
}

func (w *walker) tuningOptions(n *yaml.Node, t *TuningOptions) {
	m, ok := w.mapping(n)
	if !ok {
		return
	}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		var dst *string
		switch key {
		case "maxConnections":
			t.MaxConnections = w.intPtr(v)
			return
		case "threadCount":
			t.ThreadCount = w.intPtr(v)
			return
		case "headerBufferBytes":
			t.HeaderBufferBytes = w.intPtr(v)
			return
		case "headerBufferMaxRewriteBytes":
			t.HeaderBufferMaxRewriteBytes = w.intPtr(v)
			return
		case "httpKeepAliveTimeout":
			dst = &t.HTTPKeepAliveTimeout
		case "httpRequestTimeout":
			dst = &t.HTTPRequestTimeout
		case "reloadInterval":
			dst = &t.ReloadInterval
		case "healthCheckInterval":
			dst = &t.HealthCheckInterval
		case "clientTimeout":
			dst = &t.ClientTimeout
		case "serverTimeout":
			dst = &t.ServerTimeout
		case "connectTimeout":
			dst = &t.ConnectTimeout
		case "tunnelTimeout":
			dst = &t.TunnelTimeout
		case "clientFinTimeout":
			dst = &t.ClientFinTimeout
		case "serverFinTimeout":
			dst = &t.ServerFinTimeout
		case "tlsInspectDelay":
			dst = &t.TLSInspectDelay
		case "hardStopAfter":
			dst = &t.HardStopAfter
		default:
			w.unknownField(k)
			return
		}
		*dst = w.durationText(v)
	})
}

func (w *walker) labelSelector(n *yaml.Node) *LabelSelector {
	m, ok := w.mapping(n)
	if !ok {
		return nil
	}
	var sel LabelSelector
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "matchLabels":
			w.record(k)
			sel.MatchLabels = w.stringMap(v)
		case "matchExpressions":
			w.record(k)
			w.eachItem(w.list(v), func(item *yaml.Node) {
				w.record(item)
				em, ok := w.mapping(item)
				if !ok {
					return
				}
				var req LabelSelectorRequirement
				w.eachPair(em, func(key string, k, v *yaml.Node) {
					switch key {
					case "key":
						req.Key, _ = w.str(v)
					case "operator":
						req.Operator, _ = w.str(v)
					case "values":
						w.record(k)
						req.Values = w.stringList(v)
					default:
						w.unknownField(k)
					}
				})
				sel.MatchExpressions = append(sel.MatchExpressions, req)
			})
		default:
			w.unknownField(k)
		}
	})
	return &sel
}

// defaultTypeMeta adds kind and apiVersion to a list item that has neither
// key, positioned at the item so diagnostics still point at it.
func defaultTypeMeta(item *yaml.Node, kind, apiVersion string) {
	item = resolve(item)
	if item.Kind != yaml.MappingNode {
		return
	}
	has := map[string]bool{}
	for i := 0; i+1 < len(item.Content); i += 2 {
		has[resolve(item.Content[i]).Value] = true
	}
	add := func(key, value string) {
		if has[key] {
			return
		}
		pos := func(v string) *yaml.Node {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Line: item.Line, Column: item.Column}
		}
		item.Content = append(item.Content, pos(key), pos(value))
	}
	add("kind", kind)
	add("apiVersion", apiVersion)
}
