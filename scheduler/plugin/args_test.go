package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

func raw(s string) runtime.Object {
	return &runtime.Unknown{Raw: []byte(s), ContentType: runtime.ContentTypeJSON}
}

func TestDecodeArgsDefaults(t *testing.T) {
	a, err := DecodeArgs(raw(`{"address":"127.0.0.1:9444","insecure":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.FilterTimeout.Duration != DefaultFilterTimeout || a.ScoreTimeout.Duration != DefaultScoreTimeout ||
		a.ReserveTimeout.Duration != DefaultReserveTimeout {
		t.Errorf("timeouts not defaulted: %+v", a)
	}
	if a.FailOpen == nil || !*a.FailOpen {
		t.Errorf("failOpen should default to true")
	}
	if a.BookingLinger == nil || a.BookingLinger.Duration != DefaultBookingLinger {
		t.Errorf("bookingLinger = %v, want %v", a.BookingLinger, DefaultBookingLinger)
	}
	// "0s" is kept, not defaulted: each booking at once.
	a, err = DecodeArgs(raw(`{"address":"127.0.0.1:9444","insecure":true,"bookingLinger":"0s"}`))
	if err != nil || a.BookingLinger == nil || a.BookingLinger.Duration != 0 {
		t.Errorf("bookingLinger \"0s\" = %v, %v; want 0", a.BookingLinger, err)
	}
}

func TestDecodeArgsYAMLAndValues(t *testing.T) {
	obj := &runtime.Unknown{ContentType: runtime.ContentTypeYAML, Raw: []byte(
		"address: extender.neighborly.svc:9444\ninsecure: true\nfilterTimeout: 150ms\nscoreTimeout: 1s\nfailOpen: false\n")}
	a, err := DecodeArgs(obj)
	if err != nil {
		t.Fatal(err)
	}
	if a.Address != "extender.neighborly.svc:9444" || a.FilterTimeout.Duration != 150*time.Millisecond ||
		a.ScoreTimeout.Duration != time.Second || *a.FailOpen {
		t.Errorf("decoded %+v", a)
	}
}

func TestDecodeArgsErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, args, want string
	}{
		{"no address", `{"insecure":true}`, "pluginConfig[Neighborly].args.address: Required value"},
		{"address without port", `{"address":"extender","insecure":true}`, "args.address: Invalid value"},
		{"unknown field (typo)", `{"address":"a:1","insecure":true,"filterTimout":"1s"}`, `unknown field "filterTimout"`},
		{"bad duration", `{"address":"a:1","insecure":true,"filterTimeout":"fast"}`, "invalid duration"},
		{"number duration", `{"address":"a:1","insecure":true,"scoreTimeout":5}`, "want a duration string"},
		{"negative timeout", `{"address":"a:1","insecure":true,"reserveTimeout":"-1s"}`, "args.reserveTimeout: Invalid value"},
		{"too long timeout", `{"address":"a:1","insecure":true,"scoreTimeout":"1h"}`, "args.scoreTimeout: Invalid value"},
		{"negative linger", `{"address":"a:1","insecure":true,"bookingLinger":"-1ms"}`, "args.bookingLinger: Invalid value"},
		{"too long linger", `{"address":"a:1","insecure":true,"bookingLinger":"2s"}`, "args.bookingLinger: Invalid value"},
		{"TLS incomplete", `{"address":"a:1","caFile":"` + ca + `"}`, "args.certFile: Required value"},
		{"TLS file missing", `{"address":"a:1","caFile":"/nonexistent/ca","certFile":"` + ca + `","keyFile":"` + ca + `"}`, "args.caFile: Invalid value"},
		{"insecure with files", `{"address":"a:1","insecure":true,"caFile":"` + ca + `"}`, "insecure is true"},
		{"not JSON", `address: [`, "pluginConfig[Neighborly].args"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeArgs(raw(c.args))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("args %s: got error %v, want it to contain %q", c.args, err, c.want)
			}
		})
	}
}

func TestDecodeArgsRejectsTypedObject(t *testing.T) {
	if _, err := DecodeArgs(&runtime.Unknown{}); err == nil || !strings.Contains(err.Error(), "address") {
		t.Fatalf("empty args must fail on the missing address, got %v", err)
	}
}
