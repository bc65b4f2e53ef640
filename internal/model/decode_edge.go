package model

import "gopkg.in/yaml.v3"

// Decoding of the RouterConfig's edge settings (logging, TLS), shaped as the
// IngressController's.

func (w *walker) logging(n *yaml.Node, l *LoggingOptions) {
	m, ok := w.mapping(n)
	if !ok {
		return
	}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "access":
			w.record(k)
			l.Access = w.accessLogging(v)
		default:
			w.unknownField(k)
		}
	})
}

func (w *walker) accessLogging(n *yaml.Node) *AccessLogging {
	m, ok := w.mapping(n)
	if !ok {
		return nil
	}
	var a AccessLogging
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "destination":
			w.record(k)
			w.loggingDestination(v, &a.Destination)
		case "httpLogFormat":
			a.HTTPLogFormat, _ = w.str(v)
		case "httpCaptureHeaders":
			w.record(k)
			hm, ok := w.mapping(v)
			if !ok {
				return
			}
			w.eachPair(hm, func(key string, k, v *yaml.Node) {
				switch key {
				case "request":
					w.record(k)
					a.HTTPCaptureHeaders.Request = w.captureHeaders(v)
				case "response":
					w.record(k)
					a.HTTPCaptureHeaders.Response = w.captureHeaders(v)
				default:
					w.unknownField(k)
				}
			})
		case "httpCaptureCookies":
			w.record(k)
			w.eachItem(w.list(v), func(item *yaml.Node) {
				w.record(item)
				im, ok := w.mapping(item)
				if !ok {
					return
				}
				var c CaptureHTTPCookie
				w.eachPair(im, func(key string, k, v *yaml.Node) {
					switch key {
					case "matchType":
						c.MatchType, _ = w.str(v)
					case "name":
						c.Name, _ = w.str(v)
					case "namePrefix":
						c.NamePrefix, _ = w.str(v)
					case "maxLength":
						c.MaxLength = w.intPtr(v)
					default:
						w.unknownField(k)
					}
				})
				a.HTTPCaptureCookies = append(a.HTTPCaptureCookies, c)
			})
		case "logEmptyRequests":
			a.LogEmptyRequests, _ = w.str(v)
		default:
			w.unknownField(k)
		}
	})
	return &a
}

func (w *walker) loggingDestination(n *yaml.Node, d *LoggingDestination) {
	m, ok := w.mapping(n)
	if !ok {
		return
	}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "type":
			d.Type, _ = w.str(v)
		case "syslog":
			w.record(k)
			sm, ok := w.mapping(v)
			if !ok {
				return
			}
			d.Syslog = &SyslogDestination{}
			w.eachPair(sm, func(key string, k, v *yaml.Node) {
				switch key {
				case "address":
					d.Syslog.Address, _ = w.str(v)
				case "port":
					d.Syslog.Port = w.intPtr(v)
				case "facility":
					d.Syslog.Facility, _ = w.str(v)
				case "maxLength":
					d.Syslog.MaxLength = w.intPtr(v)
				default:
					w.unknownField(k)
				}
			})
		case "container":
			w.record(k)
			cm, ok := w.mapping(v)
			if !ok {
				return
			}
			d.Container = &ContainerDestination{}
			w.eachPair(cm, func(key string, k, v *yaml.Node) {
				switch key {
				case "maxLength":
					d.Container.MaxLength = w.intPtr(v)
				default:
					w.unknownField(k)
				}
			})
		default:
			w.unknownField(k)
		}
	})
}

func (w *walker) captureHeaders(n *yaml.Node) []CaptureHTTPHeader {
	var out []CaptureHTTPHeader
	w.eachItem(w.list(n), func(item *yaml.Node) {
		w.record(item)
		im, ok := w.mapping(item)
		if !ok {
			return
		}
		var h CaptureHTTPHeader
		w.eachPair(im, func(key string, k, v *yaml.Node) {
			switch key {
			case "name":
				h.Name, _ = w.str(v)
			case "maxLength":
				h.MaxLength = w.intPtr(v)
			default:
				w.unknownField(k)
			}
		})
		out = append(out, h)
	})
	return out
}

func (w *walker) tlsSecurityProfile(n *yaml.Node) *TLSSecurityProfile {
	m, ok := w.mapping(n)
	if !ok {
		return nil
	}
	var p TLSSecurityProfile
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "type":
			p.Type, _ = w.str(v)
		case "old", "intermediate", "modern":
			// Empty objects in the API: the type says it all.
			w.record(k)
			w.mapping(v)
		case "custom":
			w.record(k)
			cm, ok := w.mapping(v)
			if !ok {
				return
			}
			p.Custom = &CustomTLSProfile{}
			w.eachPair(cm, func(key string, k, v *yaml.Node) {
				switch key {
				case "ciphers":
					w.record(k)
					p.Custom.Ciphers = w.stringList(v)
				case "minTLSVersion":
					p.Custom.MinTLSVersion, _ = w.str(v)
				default:
					w.unknownField(k)
				}
			})
		default:
			w.unknownField(k)
		}
	})
	return &p
}

func (w *walker) publishingStrategy(n *yaml.Node, e *EndpointPublishingStrategy) {
	m, ok := w.mapping(n)
	if !ok {
		return
	}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "type":
			e.Type, _ = w.str(v)
		case "hostNetwork":
			w.record(k)
			hm, ok := w.mapping(v)
			if !ok {
				return
			}
			w.eachPair(hm, func(key string, k, v *yaml.Node) {
				switch key {
				case "protocol":
					e.HostNetwork.Protocol, _ = w.str(v)
				default:
					// Ports are spec.bindOptions.ports here.
					w.unknownField(k)
				}
			})
		default:
			w.unknownField(k)
		}
	})
}

func (w *walker) clientTLS(n *yaml.Node) *ClientTLS {
	m, ok := w.mapping(n)
	if !ok {
		return nil
	}
	var c ClientTLS
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "clientCertificatePolicy":
			c.ClientCertificatePolicy, _ = w.str(v)
		case "clientCA":
			if r := resolve(v); r.Kind == yaml.MappingNode {
				// The IngressController's form names a ConfigMap, which
				// haroute has no cluster to read.
				w.report(SeverityError, k, "clientCA names a ConfigMap; haroute reads the CA bundle itself: give its file's absolute path or inline PEM")
				return
			}
			c.ClientCA, _ = w.str(v)
		case "allowedSubjectPatterns":
			w.record(k)
			c.AllowedSubjectPatterns = w.stringList(v)
		default:
			w.unknownField(k)
		}
	})
	return &c
}

func (w *walker) httpHeaders(n *yaml.Node, h *HTTPHeaders) {
	m, ok := w.mapping(n)
	if !ok {
		return
	}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "uniqueId":
			w.record(k)
			um, ok := w.mapping(v)
			if !ok {
				return
			}
			w.eachPair(um, func(key string, k, v *yaml.Node) {
				switch key {
				case "name":
					h.UniqueID.Name, _ = w.str(v)
				case "format":
					h.UniqueID.Format, _ = w.str(v)
				default:
					w.unknownField(k)
				}
			})
		case "forwardedHeaderPolicy":
			h.ForwardedHeaderPolicy, _ = w.str(v)
		case "actions":
			w.record(k)
			am, ok := w.mapping(v)
			if !ok {
				return
			}
			w.eachPair(am, func(key string, k, v *yaml.Node) {
				switch key {
				case "request":
					w.record(k)
					h.Actions.Request = w.headerActions(v)
				case "response":
					w.record(k)
					h.Actions.Response = w.headerActions(v)
				default:
					w.unknownField(k)
				}
			})
		case "headerNameCaseAdjustments":
			w.unsupported(k)
		default:
			w.unknownField(k)
		}
	})
}

func (w *walker) headerActions(n *yaml.Node) []HTTPHeaderAction {
	var out []HTTPHeaderAction
	w.eachItem(w.list(n), func(item *yaml.Node) {
		w.record(item)
		im, ok := w.mapping(item)
		if !ok {
			return
		}
		var a HTTPHeaderAction
		w.eachPair(im, func(key string, k, v *yaml.Node) {
			switch key {
			case "name":
				a.Name, _ = w.str(v)
			case "action":
				w.record(k)
				am, ok := w.mapping(v)
				if !ok {
					return
				}
				w.eachPair(am, func(key string, k, v *yaml.Node) {
					switch key {
					case "type":
						a.Type, _ = w.str(v)
					case "set":
						w.record(k)
						sm, ok := w.mapping(v)
						if !ok {
							return
						}
						a.HasSet = true
						w.eachPair(sm, func(key string, k, v *yaml.Node) {
							switch key {
							case "value":
								a.Value, _ = w.str(v)
							default:
								w.unknownField(k)
							}
						})
					default:
						w.unknownField(k)
					}
				})
			default:
				w.unknownField(k)
			}
		})
		out = append(out, a)
	})
	return out
}

func (w *walker) httpCompression(n *yaml.Node, c *HTTPCompression) {
	m, ok := w.mapping(n)
	if !ok {
		return
	}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "mimeTypes":
			w.record(k)
			c.MimeTypes = w.stringList(v)
		default:
			w.unknownField(k)
		}
	})
}
