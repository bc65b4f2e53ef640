package model

import "gopkg.in/yaml.v3"

// Decoding of the RouterConfig's edge settings (logging, TLS), shaped as the
// IngressController's.

func (w *walker) logging(n *yaml.Node, l *LoggingOptions) {
	const f = "spec.logging"
	m, ok := w.mapping(n, f)
	if !ok {
		return
	}
	w.eachPair(m, f, func(key string, k, v *yaml.Node) {
		switch key {
		case "access":
			w.record(f+".access", k)
			l.Access = w.accessLogging(v)
		default:
			w.unknownField(k, f+"."+key)
		}
	})
}

func (w *walker) accessLogging(n *yaml.Node) *AccessLogging {
	const f = "spec.logging.access"
	m, ok := w.mapping(n, f)
	if !ok {
		return nil
	}
	var a AccessLogging
	w.eachPair(m, f, func(key string, k, v *yaml.Node) {
		switch key {
		case "destination":
			w.record(f+".destination", k)
			w.loggingDestination(v, &a.Destination)
		case "httpLogFormat":
			a.HTTPLogFormat, _ = w.str(v, f+".httpLogFormat")
		case "httpCaptureHeaders":
			w.record(f+".httpCaptureHeaders", k)
			hm, ok := w.mapping(v, f+".httpCaptureHeaders")
			if !ok {
				return
			}
			w.eachPair(hm, f+".httpCaptureHeaders", func(key string, k, v *yaml.Node) {
				hf := f + ".httpCaptureHeaders." + key
				switch key {
				case "request":
					w.record(hf, k)
					a.HTTPCaptureHeaders.Request = w.captureHeaders(v, hf)
				case "response":
					w.record(hf, k)
					a.HTTPCaptureHeaders.Response = w.captureHeaders(v, hf)
				default:
					w.unknownField(k, hf)
				}
			})
		case "httpCaptureCookies":
			cf := f + ".httpCaptureCookies"
			w.record(cf, k)
			for i, item := range w.list(v, cf) {
				fi := index(cf, i)
				w.record(fi, item)
				im, ok := w.mapping(item, fi)
				if !ok {
					continue
				}
				var c CaptureHTTPCookie
				w.eachPair(im, fi, func(key string, k, v *yaml.Node) {
					switch key {
					case "matchType":
						c.MatchType, _ = w.str(v, fi+".matchType")
					case "name":
						c.Name, _ = w.str(v, fi+".name")
					case "namePrefix":
						c.NamePrefix, _ = w.str(v, fi+".namePrefix")
					case "maxLength":
						c.MaxLength = w.intPtr(v, fi+".maxLength")
					default:
						w.unknownField(k, fi+"."+key)
					}
				})
				a.HTTPCaptureCookies = append(a.HTTPCaptureCookies, c)
			}
		case "logEmptyRequests":
			a.LogEmptyRequests, _ = w.str(v, f+".logEmptyRequests")
		default:
			w.unknownField(k, f+"."+key)
		}
	})
	return &a
}

func (w *walker) loggingDestination(n *yaml.Node, d *LoggingDestination) {
	const f = "spec.logging.access.destination"
	m, ok := w.mapping(n, f)
	if !ok {
		return
	}
	w.eachPair(m, f, func(key string, k, v *yaml.Node) {
		switch key {
		case "type":
			d.Type, _ = w.str(v, f+".type")
		case "syslog":
			const sf = f + ".syslog"
			w.record(sf, k)
			sm, ok := w.mapping(v, sf)
			if !ok {
				return
			}
			d.Syslog = &SyslogDestination{}
			w.eachPair(sm, sf, func(key string, k, v *yaml.Node) {
				switch key {
				case "address":
					d.Syslog.Address, _ = w.str(v, sf+".address")
				case "port":
					d.Syslog.Port = w.intPtr(v, sf+".port")
				case "facility":
					d.Syslog.Facility, _ = w.str(v, sf+".facility")
				case "maxLength":
					d.Syslog.MaxLength = w.intPtr(v, sf+".maxLength")
				default:
					w.unknownField(k, sf+"."+key)
				}
			})
		case "container":
			const cf = f + ".container"
			w.record(cf, k)
			cm, ok := w.mapping(v, cf)
			if !ok {
				return
			}
			d.Container = &ContainerDestination{}
			w.eachPair(cm, cf, func(key string, k, v *yaml.Node) {
				switch key {
				case "maxLength":
					d.Container.MaxLength = w.intPtr(v, cf+".maxLength")
				default:
					w.unknownField(k, cf+"."+key)
				}
			})
		default:
			w.unknownField(k, f+"."+key)
		}
	})
}

func (w *walker) captureHeaders(n *yaml.Node, field string) []CaptureHTTPHeader {
	var out []CaptureHTTPHeader
	for i, item := range w.list(n, field) {
		fi := index(field, i)
		w.record(fi, item)
		im, ok := w.mapping(item, fi)
		if !ok {
			continue
		}
		var h CaptureHTTPHeader
		w.eachPair(im, fi, func(key string, k, v *yaml.Node) {
			switch key {
			case "name":
				h.Name, _ = w.str(v, fi+".name")
			case "maxLength":
				h.MaxLength = w.intPtr(v, fi+".maxLength")
			default:
				w.unknownField(k, fi+"."+key)
			}
		})
		out = append(out, h)
	}
	return out
}

func (w *walker) tlsSecurityProfile(n *yaml.Node) *TLSSecurityProfile {
	const f = "spec.tlsSecurityProfile"
	m, ok := w.mapping(n, f)
	if !ok {
		return nil
	}
	var p TLSSecurityProfile
	w.eachPair(m, f, func(key string, k, v *yaml.Node) {
		switch key {
		case "type":
			p.Type, _ = w.str(v, f+".type")
		case "old", "intermediate", "modern":
			// Empty objects in the API: the type says it all.
			w.record(f+"."+key, k)
			w.mapping(v, f+"."+key)
		case "custom":
			const cf = f + ".custom"
			w.record(cf, k)
			cm, ok := w.mapping(v, cf)
			if !ok {
				return
			}
			p.Custom = &CustomTLSProfile{}
			w.eachPair(cm, cf, func(key string, k, v *yaml.Node) {
				switch key {
				case "ciphers":
					w.record(cf+".ciphers", k)
					p.Custom.Ciphers = w.stringList(v, cf+".ciphers")
				case "minTLSVersion":
					p.Custom.MinTLSVersion, _ = w.str(v, cf+".minTLSVersion")
				default:
					w.unknownField(k, cf+"."+key)
				}
			})
		default:
			w.unknownField(k, f+"."+key)
		}
	})
	return &p
}

func (w *walker) publishingStrategy(n *yaml.Node, e *EndpointPublishingStrategy) {
	const f = "spec.endpointPublishingStrategy"
	m, ok := w.mapping(n, f)
	if !ok {
		return
	}
	w.eachPair(m, f, func(key string, k, v *yaml.Node) {
		switch key {
		case "type":
			e.Type, _ = w.str(v, f+".type")
		case "hostNetwork":
			const hf = f + ".hostNetwork"
			w.record(hf, k)
			hm, ok := w.mapping(v, hf)
			if !ok {
				return
			}
			w.eachPair(hm, hf, func(key string, k, v *yaml.Node) {
				switch key {
				case "protocol":
					e.HostNetwork.Protocol, _ = w.str(v, hf+".protocol")
				default:
					// Ports are spec.bindOptions.ports here.
					w.unknownField(k, hf+"."+key)
				}
			})
		default:
			w.unknownField(k, f+"."+key)
		}
	})
}

func (w *walker) clientTLS(n *yaml.Node) *ClientTLS {
	const f = "spec.clientTLS"
	m, ok := w.mapping(n, f)
	if !ok {
		return nil
	}
	var c ClientTLS
	w.eachPair(m, f, func(key string, k, v *yaml.Node) {
		switch key {
		case "clientCertificatePolicy":
			c.ClientCertificatePolicy, _ = w.str(v, f+".clientCertificatePolicy")
		case "clientCA":
			const cf = f + ".clientCA"
			if r := resolve(v); r.Kind == yaml.MappingNode {
				// The IngressController's form names a ConfigMap, which
				// haroute has no cluster to read.
				w.report(SeverityError, k, cf, "clientCA names a ConfigMap; haroute reads the CA bundle itself: give its file's absolute path or inline PEM")
				return
			}
			c.ClientCA, _ = w.str(v, cf)
		case "allowedSubjectPatterns":
			w.record(f+".allowedSubjectPatterns", k)
			c.AllowedSubjectPatterns = w.stringList(v, f+".allowedSubjectPatterns")
		default:
			w.unknownField(k, f+"."+key)
		}
	})
	return &c
}

func (w *walker) httpHeaders(n *yaml.Node, h *HTTPHeaders) {
	const f = "spec.httpHeaders"
	m, ok := w.mapping(n, f)
	if !ok {
		return
	}
	w.eachPair(m, f, func(key string, k, v *yaml.Node) {
		switch key {
		case "uniqueId":
			const uf = f + ".uniqueId"
			w.record(uf, k)
			um, ok := w.mapping(v, uf)
			if !ok {
				return
			}
			w.eachPair(um, uf, func(key string, k, v *yaml.Node) {
				switch key {
				case "name":
					h.UniqueID.Name, _ = w.str(v, uf+".name")
				case "format":
					h.UniqueID.Format, _ = w.str(v, uf+".format")
				default:
					w.unknownField(k, uf+"."+key)
				}
			})
		case "forwardedHeaderPolicy":
			h.ForwardedHeaderPolicy, _ = w.str(v, f+".forwardedHeaderPolicy")
		case "actions":
			const af = f + ".actions"
			w.record(af, k)
			am, ok := w.mapping(v, af)
			if !ok {
				return
			}
			w.eachPair(am, af, func(key string, k, v *yaml.Node) {
				switch key {
				case "request":
					w.record(af+".request", k)
					h.Actions.Request = w.headerActions(v, af+".request")
				case "response":
					w.record(af+".response", k)
					h.Actions.Response = w.headerActions(v, af+".response")
				default:
					w.unknownField(k, af+"."+key)
				}
			})
		case "headerNameCaseAdjustments":
			w.unsupported(k, f+"."+key)
		default:
			w.unknownField(k, f+"."+key)
		}
	})
}

func (w *walker) headerActions(n *yaml.Node, field string) []HTTPHeaderAction {
	var out []HTTPHeaderAction
	for i, item := range w.list(n, field) {
		fi := index(field, i)
		w.record(fi, item)
		im, ok := w.mapping(item, fi)
		if !ok {
			continue
		}
		var a HTTPHeaderAction
		w.eachPair(im, fi, func(key string, k, v *yaml.Node) {
			switch key {
			case "name":
				a.Name, _ = w.str(v, fi+".name")
			case "action":
				af := fi + ".action"
				w.record(af, k)
				am, ok := w.mapping(v, af)
				if !ok {
					return
				}
				w.eachPair(am, af, func(key string, k, v *yaml.Node) {
					switch key {
					case "type":
						a.Type, _ = w.str(v, af+".type")
					case "set":
						w.record(af+".set", k)
						sm, ok := w.mapping(v, af+".set")
						if !ok {
							return
						}
						a.HasSet = true
						w.eachPair(sm, af+".set", func(key string, k, v *yaml.Node) {
							switch key {
							case "value":
								a.Value, _ = w.str(v, af+".set.value")
							default:
								w.unknownField(k, af+".set."+key)
							}
						})
					default:
						w.unknownField(k, af+"."+key)
					}
				})
			default:
				w.unknownField(k, fi+"."+key)
			}
		})
		out = append(out, a)
	}
	return out
}

func (w *walker) httpCompression(n *yaml.Node, c *HTTPCompression) {
	const f = "spec.httpCompression"
	m, ok := w.mapping(n, f)
	if !ok {
		return
	}
	w.eachPair(m, f, func(key string, k, v *yaml.Node) {
		switch key {
		case "mimeTypes":
			w.record(f+".mimeTypes", k)
			c.MimeTypes = w.stringList(v, f+".mimeTypes")
		default:
			w.unknownField(k, f+"."+key)
		}
	})
}
