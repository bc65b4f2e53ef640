package daemon

import (
	"bytes"
	"context"
	"errors"
	"reflect"

	"github.com/haroute/haroute/internal/certgen"
	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/plan"
	"github.com/haroute/haroute/internal/render"
)

// When `haproxy -c` refuses a candidate that validation admitted, one bad
// route must not block every other change (DESIGN §7). The last accepted
// state passed `haproxy -c` (or was built from one that did), so the
// culprits are among the routes that are new or changed since: the
// candidate is checked with subsets of those, halving until each failure
// is pinned on single routes, which are then rejected alone with HAProxy's
// own message. A candidate with new settings (or a first start's) that
// fails even without any changed route has its settings at fault: the
// refusal is pinned on the RouterConfig's fields (model.JudgeSettings).
// One that fails so with the settings unchanged is refused as a whole.

// culprit is a route HAProxy refused, with its message, the settings of
// the RouterConfig HAProxy refused, at their fields, or the content of
// files the RouterConfig names (files: their fields), with the message.
type culprit struct {
	key      model.RouteKey
	msg      string
	settings []model.SettingsProblem
	files    []string
}

// culprits returns the routes of next that make `haproxy -c` fail, or the
// settings that do: new settings (or a first start's) that fail without
// any changed route are judged field by field (model.JudgeSettings).
// whole is HAProxy's message about next as a whole.
func (d *Daemon) culprits(ctx context.Context, next plan.State, whole string) ([]culprit, error) {
	var prev []*model.AdmittedRoute
	if d.desired.Desired != nil {
		prev = d.desired.Desired.Routes
	}
	stable, changed := splitChanged(prev, next.Desired.Routes)
	settingsNew := d.desired.Desired == nil || !reflect.DeepEqual(next.Desired.Router, d.desired.Desired.Router)
	env, files := d.withLastFileContent(next)
	if len(changed) == 0 && !settingsNew && len(files) == 0 {
		return nil, nil
	}
	// checkIn renders next with settings and routes in env, and asks
	// HAProxy.
	checkIn := func(env renderEnv, settings model.Settings, routes []*model.AdmittedRoute) (string, error) {
		cp := *next.Desired
		cp.Router, cp.Routes = settings, routes
		cand, err := d.prepare(&cp, d.cand.path, env)
		if err != nil {
			return err.Error(), nil
		}
		if _, err := d.cand.write(cand.Bundle); err != nil {
			return "", err
		}
		if err := haproxy.Check(ctx, d.sup.Binary(), d.cand.path+"/"+render.ConfigFile); err != nil {
			if !errors.As(err, new(*haproxy.CheckError)) {
				return "", err // no verdict: nothing is blamed for it
			}
			return err.Error(), nil
		}
		return "", nil
	}
	check := func(settings model.Settings, routes []*model.AdmittedRoute) (string, error) {
		return checkIn(envOf(next), settings, routes)
	}
	if len(files) > 0 {
		// A file the RouterConfig names changed: if next passes with its
		// last good content, the new content is at fault, whatever else
		// changed with it.
		msg, err := checkIn(env, next.Desired.Router, next.Desired.Routes)
		if err != nil {
			return nil, err
		}
		if msg == "" {
			return []culprit{{files: files, msg: whole}}, nil
		}
	}
	settings := next.Desired.Router
	with := func(subset []*model.AdmittedRoute) []*model.AdmittedRoute {
		return append(append(make([]*model.AdmittedRoute, 0, len(stable)+len(subset)), stable...), subset...)
	}
	if msg, err := check(settings, stable); err != nil || msg != "" {
		if err == nil && settingsNew {
			// The routes that passed before (or none, at a first start)
			// fail with the new settings: the RouterConfig is at fault.
			// What HAProxy judges of them is in the frontends, so each
			// is asked about without routes (milliseconds, not the
			// second a check of 10k routes takes).
			problems, err := model.JudgeSettings(settings, msg, func(s model.Settings) (string, error) { return check(s, nil) })
			if err != nil || len(problems) == 0 {
				return nil, err
			}
			return []culprit{{settings: problems}}, nil
		}
		return nil, err // refused as a whole
	}
	return bisect(changed, func(subset []*model.AdmittedRoute) (string, error) { return check(settings, with(subset)) })
}

// withLastFileContent is next's render environment with the last good
// content in place of the content of each file the RouterConfig names,
// under the same name as when it was good, that changed since; and those
// files' fields. Inline material is the settings' own, judged with them.
func (d *Daemon) withLastFileContent(next plan.State) (renderEnv, []string) {
	env := envOf(next)
	last := d.loader.Settings() // the settings d.material was read for
	if d.material == nil || last == nil {
		return env, nil
	}
	prev, now := *last, next.Desired.Router
	var fields []string
	for _, f := range materialFields {
		name := certgen.FileNamed(now, f.field)
		if name == "" || name != certgen.FileNamed(prev, f.field) {
			continue
		}
		content, good := f.of(&env.material), f.of(d.material)
		if len(*good) == 0 || bytes.Equal(*content, *good) {
			continue
		}
		*content = *good
		fields = append(fields, f.field)
	}
	return env, fields
}

// RefusedRoutes pins the failures of check, which renders the routes it
// is given and asks HAProxy, on single routes of set, as the router pins
// a refused candidate's: each with HAProxy's message. For `haroute check`.
func RefusedRoutes(set []*model.AdmittedRoute, check func([]*model.AdmittedRoute) (string, error)) (map[model.RouteKey]string, error) {
	cs, err := bisect(set, check)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	out := make(map[model.RouteKey]string, len(cs))
	for _, c := range cs {
		out[c.key] = c.msg
	}
	return out, nil
}

// bisect pins the failures of check on single routes of set, which fails
// as a whole. Two halves that pass alone but fail together are all
// reported, with the message of the whole.
func bisect(set []*model.AdmittedRoute, check func([]*model.AdmittedRoute) (string, error)) ([]culprit, error) {
	msg, err := check(set)
	if err != nil || msg == "" {
		return nil, err
	}
	if len(set) == 1 {
		return []culprit{{key: set[0].Key, msg: msg}}, nil
	}
	half := len(set) / 2
	a, err := bisect(set[:half], check)
	if err != nil {
		return nil, err
	}
	b, err := bisect(set[half:], check)
	if err != nil {
		return nil, err
	}
	if len(a)+len(b) > 0 {
		return append(a, b...), nil
	}
	out := make([]culprit, len(set))
	for i, r := range set {
		out[i] = culprit{key: r.Key, msg: msg}
	}
	return out, nil
}

// splitChanged divides cur into routes equal to their version in prev and
// routes that are new or changed. It runs only after a refusal, so a deep
// comparison is affordable.
func splitChanged(prev, cur []*model.AdmittedRoute) (stable, changed []*model.AdmittedRoute) {
	byKey := make(map[model.RouteKey]*model.AdmittedRoute, len(prev))
	for _, r := range prev {
		byKey[r.Key] = r
	}
	for _, r := range cur {
		if old, ok := byKey[r.Key]; ok && (old == r || reflect.DeepEqual(*old, *r)) {
			stable = append(stable, r)
		} else {
			changed = append(changed, r)
		}
	}
	return stable, changed
}

// materialOf is the TLS material a rendered state was made with.
func materialOf(s plan.State) certgen.Material {
	return certgen.Material{DefaultCertificate: s.Input.DefaultCertificate, DefaultDestinationCA: s.Input.DefaultDestinationCA,
		StatsCredentials: s.Input.StatsCredentials, ClientCA: s.Input.ClientCA, ErrorPages: s.Input.ErrorPages}
}
