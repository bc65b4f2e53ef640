// Package testroutes builds model.Desired route lists for tests. It is
// apart from testutil, which model's own tests import.
package testroutes

import "github.com/haroute/haroute/internal/model"

// Of returns pointers to copies of rs, as model.Desired holds its routes:
// tests write their routes as values.
func Of(rs []model.AdmittedRoute) []*model.AdmittedRoute {
	out := make([]*model.AdmittedRoute, len(rs))
	for i := range rs {
		r := rs[i]
		out[i] = &r
	}
	return out
}
