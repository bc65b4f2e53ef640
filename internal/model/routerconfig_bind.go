package model

import (
	"fmt"
	"net/netip"
)

// Listen addresses: bindOptions.address (one) or bindOptions.addresses
// (several, IPv4 and IPv6). The IngressController has no such field: on
// OpenShift the pod's network decides; haroute listens on the host's.

func (v *rcCheck) bindAddresses(b *BindOptions, s *Settings) {
	const (
		fa  = "spec.bindOptions.address"
		fas = "spec.bindOptions.addresses"
	)
	if b.Address != "" && len(b.Addresses) > 0 {
		v.errorf(fas, "address and addresses are both set: list every address in addresses")
		return
	}
	if a := b.Address; a != "" {
		if ip, ok := v.bindAddress(fa, a); ok {
			s.BindAddress = ip.String()
		}
		return
	}
	if len(b.Addresses) == 0 {
		return
	}
	var ips []netip.Addr
	ok := true
	for i, a := range b.Addresses {
		ip, good := v.bindAddress(index(fas, i), a)
		if !good {
			ok = false
			continue
		}
		clash := ""
		for _, prev := range ips {
			if clash = bindClash(prev, ip); clash != "" {
				break
			}
		}
		if clash != "" {
			v.errorf(index(fas, i), "%s", clash)
			ok = false
			continue
		}
		ips = append(ips, ip)
	}
	if !ok {
		return
	}
	s.BindAddresses = make([]string, len(ips))
	for i, ip := range ips {
		s.BindAddresses[i] = ip.String()
	}
	s.BindAddress = s.BindAddresses[0]
}

func (v *rcCheck) bindAddress(field, a string) (netip.Addr, bool) {
	ip, err := netip.ParseAddr(a)
	switch {
	case err != nil:
		v.errorf(field, "address %q is not an IP address", a)
		return netip.Addr{}, false
	case ip.Zone() != "":
		v.errorf(field, "address %q has a zone; only plain IP addresses are supported", a)
		return netip.Addr{}, false
	}
	// An IPv4-mapped IPv6 address is an IPv4 one to the kernel.
	return ip.Unmap(), true
}

// bindClash says why HAProxy could not bind both a and b on one port:
// the same address twice, or a specific address beside the unspecified
// one of its family, which already covers it (haroute does not share
// ports: noreuseport).
func bindClash(a, b netip.Addr) string {
	switch {
	case a == b:
		return fmt.Sprintf("address %s is listed twice", b)
	case a.Is4() != b.Is4():
		return ""
	case a.IsUnspecified() || b.IsUnspecified():
		return fmt.Sprintf("addresses %s and %s overlap: %s already listens on every address of its family", a, b, unspecified(a, b))
	}
	return ""
}

func unspecified(a, b netip.Addr) netip.Addr {
	if a.IsUnspecified() {
		return a
	}
	return b
}
