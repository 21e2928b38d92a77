// Command neighborly-rebalancer acts on Neighborly's rebalancing advice: it
// polls the extender's GET /v1/rebalance and evicts a proposed pod through the
// Eviction API once the proposal has persisted, at most --max-evictions per
// --eviction-window. Dry-run unless --dry-run=false. See docs/operations.md,
// "Rebalancing".
//
//	neighborly-rebalancer --extender-url https://neighborly-extender:8889 \
//	  --ca-file /etc/neighborly-tls/ca.crt --token-file /etc/neighborly-operator/tokens
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"neighborly.dev/scheduler/internal/rebalancer"
)

// version is stamped by the build (-ldflags -X main.version=...).
var version = "0.1.0"

type config struct {
	extenderURL, tokenFile, kubeconfig, metricsAddress, logLevel string
	tls                                                          rebalancer.TLSFiles
	interval                                                     time.Duration
	options                                                      rebalancer.Options
	showVersion                                                  bool
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("neighborly-rebalancer", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.StringVar(&c.extenderURL, "extender-url", "", "the extender's operator API, e.g. https://neighborly-extender:8889 (required)")
	fs.StringVar(&c.tls.CAFile, "ca-file", "", "CA bundle that verifies the extender's HTTPS certificate (required for https://)")
	fs.StringVar(&c.tls.CertFile, "cert-file", "", "client certificate, for a port that asks for one (optional, with --key-file)")
	fs.StringVar(&c.tls.KeyFile, "key-file", "", "client certificate's key")
	fs.StringVar(&c.tls.ServerName, "tls-server-name", "", "name to verify in the extender's certificate (default: the URL's host)")
	fs.StringVar(&c.tokenFile, "token-file", "", "bearer token of the operator API, read at every poll (the extender's tokens file format)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig file (default: the in-cluster configuration)")
	fs.DurationVar(&c.interval, "interval", 30*time.Second, "how often the advice is read")
	fs.BoolVar(&c.options.DryRun, "dry-run", true, "evaluate evictions with dryRun=All and delete nothing")
	fs.IntVar(&c.options.MinPolls, "min-polls", 3, "consecutive polls a proposal must appear in before it is acted on")
	fs.DurationVar(&c.options.MinDuration, "min-duration", time.Minute, "how long a proposal must persist before it is acted on")
	fs.IntVar(&c.options.MaxEvictions, "max-evictions", 1, "evictions at most per --eviction-window")
	fs.DurationVar(&c.options.EvictionWindow, "eviction-window", 10*time.Minute, "the rate limit's window")
	fs.StringVar(&c.metricsAddress, "metrics-address", ":9095", "address of /metrics and /healthz; empty: none")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.showVersion {
		return c, nil
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	u, err := url.Parse(c.extenderURL)
	switch {
	case c.extenderURL == "":
		return c, errors.New("--extender-url is required")
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return c, fmt.Errorf("--extender-url %q: want http(s)://HOST:PORT", c.extenderURL)
	case u.Scheme == "https" && c.tls.CAFile == "":
		return c, errors.New("--extender-url is https: --ca-file is required")
	case u.Scheme == "http" && (c.tls.CAFile != "" || c.tls.CertFile != ""):
		return c, errors.New("--extender-url is plain http: TLS files make no sense")
	case c.interval < 100*time.Millisecond:
		return c, fmt.Errorf("--interval must be at least 100ms, got %v", c.interval)
	}
	if err := c.options.Validate(); err != nil {
		return c, fmt.Errorf("--%w", err)
	}
	return c, nil
}

func main() {
	c, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "neighborly-rebalancer: %v\n", err)
		os.Exit(2)
	}
	if c.showVersion {
		fmt.Println("neighborly-rebalancer", version)
		return
	}
	if err := run(c); err != nil {
		fmt.Fprintf(os.Stderr, "neighborly-rebalancer: %v\n", err)
		os.Exit(1)
	}
}

func run(c config) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: %w", c.logLevel, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	transport := http.DefaultTransport.(*http.Transport).Clone()
	if c.tls.CAFile != "" {
		cfg, err := rebalancer.ClientTLS(c.tls)
		if err != nil {
			return err
		}
		transport.TLSClientConfig = cfg
	}
	advice := &rebalancer.HTTPAdvice{BaseURL: c.extenderURL, TokenFile: c.tokenFile,
		Client: &http.Client{Timeout: 10 * time.Second, Transport: transport}}

	var restConfig *rest.Config
	var err error
	if c.kubeconfig != "" {
		restConfig, err = clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	} else {
		restConfig, err = rest.InClusterConfig()
	}
	if err != nil {
		return fmt.Errorf("Kubernetes client configuration: %w", err)
	}
	restConfig.UserAgent = "neighborly-rebalancer/" + version
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	metrics := rebalancer.NewMetrics(reg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if c.metricsAddress != "" {
		l, err := net.Listen("tcp", c.metricsAddress)
		if err != nil {
			return fmt.Errorf("--metrics-address: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
		server := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = server.Serve(l) }()
		defer server.Close()
		c.metricsAddress = l.Addr().String()
	}
	r := rebalancer.New(advice, client, c.options, log, metrics, nil)
	log.Info("neighborly-rebalancer started", "version", version, "extender", c.extenderURL,
		"dryRun", c.options.DryRun, "interval", c.interval, "minPolls", c.options.MinPolls,
		"minDuration", c.options.MinDuration, "maxEvictions", c.options.MaxEvictions,
		"evictionWindow", c.options.EvictionWindow, "metrics", c.metricsAddress)
	tick := time.NewTicker(c.interval)
	defer tick.Stop()
	for {
		pollCtx, cancel := context.WithTimeout(ctx, c.interval+10*time.Second)
		if _, err := r.Poll(pollCtx); err != nil && ctx.Err() == nil {
			log.Warn("reading the advice failed", "error", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			log.Info("neighborly-rebalancer stopping")
			return nil
		case <-tick.C:
		}
	}
}
