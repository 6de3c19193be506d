package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/ackgap/ackgap/console"
)

// consoleShutdownTimeout bounds how long the console waits for requests in
// flight once it is told to stop.
const consoleShutdownTimeout = 5 * time.Second

func (a *app) consoleCommand() *cobra.Command {
	var listen, token, traceURL string
	var payloads bool
	var queryTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the web console (overview, outbox, events) on 127.0.0.1",
		Long: `Serve ackgap's web console over the database: per consumer what it applied,
the outbox backlog by kind and state, dead rows and why, one event's way.
The live ack gap histograms need the console mounted in the consumer's
process (package console); here only the database is at hand.

It listens on 127.0.0.1:8080 unless --listen says otherwise, and is read-only
unless a token is given (--token or, better, ACKGAP_CONSOLE_TOKEN, which does
not show in the process list; 16 bytes at least): then redrives need a login
with the token, a CSRF token and a same-origin request, and each is logged on
stderr with who and what. Payloads stay hidden unless --payloads. --trace-url
links trace ids to a tracing backend, as in "ackgap event". It stops on Ctrl-C
or SIGTERM.`,
		Example: `  ackgap console --dsn sqlite:./app.db
  ACKGAP_CONSOLE_TOKEN=$(openssl rand -hex 16) ackgap console --listen 127.0.0.1:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.fallback(cmd, "token", "ACKGAP_CONSOLE_TOKEN", &token)
			a.fallback(cmd, "listen", "ACKGAP_CONSOLE_LISTEN", &listen)
			a.fallback(cmd, "trace-url", "ACKGAP_TRACE_URL", &traceURL)
			host, _, err := net.SplitHostPort(listen)
			if err != nil {
				return usageErrorf("--listen %q: %v", listen, err)
			}
			ctx := cmd.Context()
			s, closeFn, err := a.open(ctx, openMigrated)
			if err != nil {
				return err
			}
			defer closeFn()
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			h, err := console.New(s, &console.Config{Token: token, ShowPayloads: payloads, QueryTimeout: queryTimeout,
				TraceURL: traceURL, Logger: logger})
			if err != nil {
				return usageErrorf("%w", err)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return failed(err)
			}
			mode := "read-only (no token)"
			if h.Writable() {
				mode = "redrive enabled with the token"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ackgap console on http://%s/ (%s); Ctrl-C stops it\n", ln.Addr(), mode)
			if ip := net.ParseIP(host); host == "" || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
				fmt.Fprintf(cmd.ErrOrStderr(), "ackgap: warning: --listen %s is reachable from other hosts; put it behind TLS and access control\n", listen)
			}
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
				WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ln) }()
			select {
			case err := <-served:
				return failed(err)
			case <-ctx.Done():
			}
			sctx, cancel := context.WithTimeout(context.Background(), consoleShutdownTimeout)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				return failed(err)
			}
			if err := <-served; !errors.Is(err, http.ErrServerClosed) {
				return failed(err)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&listen, "listen", "127.0.0.1:8080", "address to listen on, host:port (env ACKGAP_CONSOLE_LISTEN)")
	fs.StringVar(&token, "token", "", "enable redrives for whoever logs in with it, at least 16 bytes (env ACKGAP_CONSOLE_TOKEN)")
	fs.BoolVar(&payloads, "payloads", false, "show outbox payloads (they may hold personal data)")
	fs.StringVar(&traceURL, "trace-url", "", "link trace ids to this URL, {trace_id} replaced (env ACKGAP_TRACE_URL)")
	fs.DurationVar(&queryTimeout, "query-timeout", console.QueryTimeoutDefault, "bound of each database query")
	return cmd
}
