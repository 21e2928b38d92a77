// Package plugin is Neighborly's kube-scheduler framework plugin: it asks the
// Neighborly extender, over the gRPC service neighborly.placement.v1, once per
// extension point per pod, and applies the answer per node.
package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// Name is the plugin's name in a KubeSchedulerConfiguration profile.
const Name = "Neighborly"

// Args are the plugin's pluginConfig args. The plugin's score weight is not
// here: kube-scheduler reads it from the profile's plugin entry
// (plugins.multiPoint.enabled[].weight), where the chart puts the extender
// mode's weight.
type Args struct {
	// Address of the extender's placement port, host:port.
	Address string `json:"address"`
	// TLS: the CA that signed the extender's certificate and this scheduler's
	// client certificate and key (PEM files, reread when they change). Either
	// all three, or Insecure.
	CAFile   string `json:"caFile,omitempty"`
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
	// ServerName overrides the name checked in the extender's certificate
	// (default: the host part of Address).
	ServerName string `json:"serverName,omitempty"`
	// Insecure: plaintext gRPC, for tests and loopback only.
	Insecure bool `json:"insecure,omitempty"`
	// Per-call deadlines (Go durations, e.g. "300ms").
	FilterTimeout  Duration `json:"filterTimeout,omitempty"`
	ScoreTimeout   Duration `json:"scoreTimeout,omitempty"`
	ReserveTimeout Duration `json:"reserveTimeout,omitempty"`
	// PeersAddress: host:port of a name that resolves to every extender
	// replica's placement port (the chart's headless Service). Reserve and
	// Unreserve go to each of them too, so the replica that takes over when
	// the one behind Address dies already holds the in-flight bookings.
	// Empty: only Address.
	PeersAddress string `json:"peersAddress,omitempty"`
	// How often PeersAddress is resolved again (default 10s).
	PeersResolveInterval Duration `json:"peersResolveInterval,omitempty"`
	// FailOpen: when the extender cannot answer in time, schedule as if the
	// plugin were not there (counted and logged), like an `ignorable: true`
	// extender. False: the pod waits for the extender (its cycle fails and it
	// is retried).
	FailOpen *bool `json:"failOpen,omitempty"`
	// StreamedVerdicts (default true; issue 25): Filter and Score read the
	// extender's verdict tables, kept current over one long-lived stream,
	// instead of calling it in every cycle (a pod shape seen for the first
	// time takes the calls once); Reserve and Unreserve go on that stream
	// without waiting. False: the calls of every cycle.
	StreamedVerdicts *bool `json:"streamedVerdicts,omitempty"`
	// BookingLinger (default 10ms; streamed verdicts only): how long a
	// booking on the stream is held back for those that follow, to be sent
	// with them in one message. A cycle that waits for a booking's ack sends
	// the held ones at once. "0s": each booking is sent at once.
	BookingLinger *Duration `json:"bookingLinger,omitempty"`
}

// Duration is a time.Duration written as a Go duration string in JSON/YAML.
type Duration struct{ time.Duration }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"300ms\", got %s", string(b))
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// Defaults: the deadlines fit inside the HTTP extender's httpTimeout budget
// the chart uses (300 ms for a whole filter or prioritize call).
const (
	DefaultFilterTimeout  = 300 * time.Millisecond
	DefaultScoreTimeout   = 300 * time.Millisecond
	DefaultReserveTimeout = 100 * time.Millisecond
	DefaultPeersResolve   = 10 * time.Second
	DefaultBookingLinger  = 10 * time.Millisecond
	maxTimeout            = 30 * time.Second
	maxBookingLinger      = time.Second
)

// SetDefaults fills what is unset.
func (a *Args) SetDefaults() {
	if a.FilterTimeout.Duration == 0 {
		a.FilterTimeout.Duration = DefaultFilterTimeout
	}
	if a.ScoreTimeout.Duration == 0 {
		a.ScoreTimeout.Duration = DefaultScoreTimeout
	}
	if a.ReserveTimeout.Duration == 0 {
		a.ReserveTimeout.Duration = DefaultReserveTimeout
	}
	if a.PeersResolveInterval.Duration == 0 {
		a.PeersResolveInterval.Duration = DefaultPeersResolve
	}
	if a.FailOpen == nil {
		t := true
		a.FailOpen = &t
	}
	if a.StreamedVerdicts == nil {
		t := true
		a.StreamedVerdicts = &t
	}
	if a.BookingLinger == nil {
		a.BookingLinger = &Duration{DefaultBookingLinger}
	}
}

// DecodeArgs reads the plugin's args strictly (an unknown field is an error,
// so a typo does not silently fall back to a default), sets defaults and
// validates them.
func DecodeArgs(obj runtime.Object) (Args, error) {
	var a Args
	if obj != nil {
		var raw []byte
		switch o := obj.(type) {
		case *runtime.Unknown:
			raw = o.Raw
			if o.ContentType == runtime.ContentTypeYAML {
				j, err := yaml.YAMLToJSON(raw)
				if err != nil {
					return a, fmt.Errorf("pluginConfig[%s].args: %w", Name, err)
				}
				raw = j
			}
		default:
			return a, fmt.Errorf("pluginConfig[%s].args: want raw args, got %T", Name, obj)
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&a); err != nil {
				return a, fmt.Errorf("pluginConfig[%s].args: %w", Name, err)
			}
		}
	}
	a.SetDefaults()
	if errs := a.Validate(field.NewPath("pluginConfig").Key(Name).Child("args")); len(errs) > 0 {
		return a, errs.ToAggregate()
	}
	return a, nil
}

// Validate names every problem with its field path.
func (a *Args) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if a.Address == "" {
		errs = append(errs, field.Required(path.Child("address"), "the extender's placement address, host:port"))
	} else if host, port, err := net.SplitHostPort(a.Address); err != nil || host == "" || port == "" {
		errs = append(errs, field.Invalid(path.Child("address"), a.Address, "want host:port"))
	}
	if a.PeersAddress != "" {
		if host, port, err := net.SplitHostPort(a.PeersAddress); err != nil || host == "" || port == "" {
			errs = append(errs, field.Invalid(path.Child("peersAddress"), a.PeersAddress, "want host:port"))
		}
	}
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"filterTimeout", a.FilterTimeout.Duration}, {"scoreTimeout", a.ScoreTimeout.Duration}, {"reserveTimeout", a.ReserveTimeout.Duration},
		{"peersResolveInterval", a.PeersResolveInterval.Duration}} {
		if t.d <= 0 || t.d > maxTimeout {
			errs = append(errs, field.Invalid(path.Child(t.name), t.d.String(), fmt.Sprintf("want a duration in (0, %s]", maxTimeout)))
		}
	}
	if a.BookingLinger != nil && (a.BookingLinger.Duration < 0 || a.BookingLinger.Duration > maxBookingLinger) {
		d := a.BookingLinger.Duration
		errs = append(errs, field.Invalid(path.Child("bookingLinger"), d.String(), fmt.Sprintf("want a duration in [0, %s]", maxBookingLinger)))
	}
	files := map[string]string{"caFile": a.CAFile, "certFile": a.CertFile, "keyFile": a.KeyFile}
	if a.Insecure {
		for name, f := range files {
			if f != "" {
				errs = append(errs, field.Invalid(path.Child(name), f, "insecure is true: no TLS files"))
			}
		}
		return errs
	}
	for _, name := range []string{"caFile", "certFile", "keyFile"} {
		f := files[name]
		if f == "" {
			errs = append(errs, field.Required(path.Child(name), "TLS needs caFile, certFile and keyFile (or insecure: true)"))
			continue
		}
		if _, err := os.Stat(f); err != nil {
			errs = append(errs, field.Invalid(path.Child(name), f, err.Error()))
		}
	}
	return errs
}
