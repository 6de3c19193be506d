package console

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/ackgap/ackgap/stores"
)

// Defaults and limits of [Config].
const (
	// QueryTimeoutDefault bounds each store call of a page when
	// Config.QueryTimeout is 0.
	QueryTimeoutDefault = 5 * time.Second
	// PageSizeDefault is the outbox rows per page when Config.PageSize is 0.
	PageSizeDefault = 50
	// PageSizeMax is the largest Config.PageSize.
	PageSizeMax = 500
	// StatsTTLDefault is how long the overview reuses its counts when
	// Config.StatsTTL is 0.
	StatsTTLDefault = 5 * time.Second
	// RefreshDefault is the auto-refresh interval when Config.Refresh is 0.
	RefreshDefault = 5 * time.Second
	// BulkMax is the most rows one bulk write (redrive every dead row of a
	// filter, prune the done rows of a filter) changes; click again for
	// more.
	BulkMax = 1000
	// bulkBatch is the rows per statement of a bulk write.
	bulkBatch = 500
)

// Config configures [New]. nil means every default: read-only, no
// payloads, no live page, mounted at "/".
type Config struct {
	// Prefix is the path the handler is mounted at, without a trailing
	// slash ("/ackgap"); mount the handler at Prefix + "/". Default ""
	// (the root).
	Prefix string
	// Token, when set, enables writes (redrive): a browser opens a session
	// by entering it on the login page, a script sends it as
	// "Authorization: Bearer <Token>". At least 16 bytes. Default "":
	// read-only.
	Token string
	// ShowPayloads shows outbox payloads on the row page. They may hold
	// personal data. Default false: only their size.
	ShowPayloads bool
	// Recorder, when set, adds the live page (ack gap and lease headroom
	// histograms, and the Kafka engine's partitions when kafkabroker
	// publishes on the Recorder's MeterProvider) and the duplicate and
	// dead-letter counts of the overview, from this process's telemetry.
	// Default nil.
	Recorder *Recorder
	// QueryTimeout bounds each store call. A call that runs out shows
	// "database busy" (HTTP 503) and changes nothing (the batches of a bulk
	// write before it stay written). Default
	// QueryTimeoutDefault (5 s).
	QueryTimeout time.Duration
	// PageSize is the outbox rows per page. Default PageSizeDefault (50),
	// at most PageSizeMax (500).
	PageSize int
	// StatsTTL is how long the overview's counts (one scan of the inbox,
	// one of the outbox) are reused before the store is asked again.
	// Default StatsTTLDefault (5 s).
	StatsTTL time.Duration
	// Refresh is the auto-refresh interval of the overview and live pages
	// (when the browser runs the page's script). Default RefreshDefault
	// (5 s).
	Refresh time.Duration
	// TraceURL, when set, turns trace ids into links to a tracing backend:
	// "{trace_id}" in it is replaced by the 32 hex digits, e.g.
	// "http://jaeger:16686/trace/{trace_id}". It must be an http or https
	// URL. Default "": trace ids are shown as text.
	TraceURL string
	// Logger receives one record per write (who, what, result) and the
	// store errors pages show. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock of ages shown on pages. Default time.Now.
	Now func() time.Time
}

// tokenMinLen is the shortest Token accepted.
const tokenMinLen = 16

// WithDefaults returns a copy of c with every zero field set to its
// default.
func (c Config) WithDefaults() Config {
	if c.QueryTimeout == 0 {
		c.QueryTimeout = QueryTimeoutDefault
	}
	if c.PageSize == 0 {
		c.PageSize = PageSizeDefault
	}
	if c.StatsTTL == 0 {
		c.StatsTTL = StatsTTLDefault
	}
	if c.Refresh == 0 {
		c.Refresh = RefreshDefault
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Prefix != "" && (!strings.HasPrefix(c.Prefix, "/") || strings.HasSuffix(c.Prefix, "/")) {
		errs = append(errs, fmt.Errorf("Prefix is %q, must start with / and not end with one (or be empty)", c.Prefix))
	}
	if c.Token != "" && len(c.Token) < tokenMinLen {
		errs = append(errs, fmt.Errorf("Token has %d bytes, must have at least %d", len(c.Token), tokenMinLen))
	}
	if c.TraceURL != "" {
		if u, err := url.Parse(strings.ReplaceAll(c.TraceURL, "{trace_id}", "0")); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("TraceURL is %q, must be an http or https URL", c.TraceURL))
		}
	}
	if c.QueryTimeout < 0 {
		errs = append(errs, fmt.Errorf("QueryTimeout is %s, must not be negative", c.QueryTimeout))
	}
	if c.PageSize < 0 || c.PageSize > PageSizeMax {
		errs = append(errs, fmt.Errorf("PageSize is %d, must be in [0, %d]", c.PageSize, PageSizeMax))
	}
	if c.StatsTTL < 0 {
		errs = append(errs, fmt.Errorf("StatsTTL is %s, must not be negative", c.StatsTTL))
	}
	if c.Refresh < 0 {
		errs = append(errs, fmt.Errorf("Refresh is %s, must not be negative", c.Refresh))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Handler serves the console's pages. Build it with [New]; it is safe for
// concurrent use.
type Handler struct {
	store  stores.Operator
	cfg    Config
	secret []byte // signs sessions and CSRF tokens; new per Handler
	tmpl   *template.Template
	mux    *http.ServeMux
	cop    *http.CrossOriginProtection

	loginMu    sync.Mutex
	loginFails []time.Time   // wrong tokens within loginWindow
	slowCheck  chan struct{} // the one slot of a throttled token check (capacity 1)

	statsMu   sync.Mutex
	stats     *stores.StatsResult
	statsAt   time.Time
	statsTake chan struct{} // held by the one goroutine asking the store
}

// New returns the console over store (required) with cfg (nil means every
// default). It returns an error wrapping "invalid config" naming every bad
// field.
func New(store stores.Operator, cfg *Config) (*Handler, error) {
	if store == nil {
		return nil, errors.New("invalid config: store is nil")
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	c = c.WithDefaults()
	h := &Handler{store: store, cfg: c, secret: make([]byte, 32), statsTake: make(chan struct{}, 1), slowCheck: make(chan struct{}, 1),
		cop: http.NewCrossOriginProtection()}
	if _, err := rand.Read(h.secret); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	tmpl, err := template.New("").Funcs(h.funcs()).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	h.tmpl = tmpl
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	m := http.NewServeMux()
	p := c.Prefix
	m.Handle("GET "+p+"/static/", http.StripPrefix(p+"/static/", cacheStatic(http.FileServerFS(static))))
	m.HandleFunc("GET "+p+"/{$}", h.overview)
	m.HandleFunc("GET "+p+"/outbox", h.outboxList)
	m.HandleFunc("GET "+p+"/outbox/{id}", h.outboxRow)
	m.HandleFunc("GET "+p+"/event", h.event)
	m.HandleFunc("GET "+p+"/live", h.live)
	m.HandleFunc("GET "+p+"/login", h.loginPage)
	m.Handle("POST "+p+"/login", h.cop.Handler(http.HandlerFunc(h.login)))
	m.Handle("POST "+p+"/logout", h.cop.Handler(http.HandlerFunc(h.logout)))
	m.Handle("POST "+p+"/outbox/{id}/redrive", h.write(h.redriveOne))
	m.Handle("POST "+p+"/outbox/redrive", h.write(h.redriveFilter))
	m.Handle("POST "+p+"/outbox/prune", h.write(h.pruneFilter))
	h.mux = m
	return h, nil
}

// ServeHTTP implements [http.Handler].
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; form-action 'self'; frame-ancestors 'none'")
	h.mux.ServeHTTP(w, r)
}

// Writable reports whether the console accepts writes (a Token is set).
func (h *Handler) Writable() bool { return h.cfg.Token != "" }

func cacheStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		next.ServeHTTP(w, r)
	})
}

// query returns a context for one store call, bounded by QueryTimeout.
func (h *Handler) query(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), h.cfg.QueryTimeout)
}

// statsCached returns the store's Stats, reused for StatsTTL; one request
// at a time asks the store, the others wait for its answer.
func (h *Handler) statsCached(r *http.Request) (*stores.StatsResult, error) {
	select {
	case h.statsTake <- struct{}{}:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	defer func() { <-h.statsTake }()
	h.statsMu.Lock()
	s, at := h.stats, h.statsAt
	h.statsMu.Unlock()
	if s != nil && time.Since(at) < h.cfg.StatsTTL {
		return s, nil
	}
	ctx, cancel := h.query(r)
	defer cancel()
	s, err := h.store.Stats(ctx, &stores.StatsParams{})
	if err != nil {
		// Not cached: the next request tries again.
		return nil, err
	}
	h.statsMu.Lock()
	h.stats, h.statsAt = s, time.Now()
	h.statsMu.Unlock()
	return s, nil
}

// forget drops the cached stats, after a write.
func (h *Handler) forget() {
	h.statsMu.Lock()
	h.stats, h.statsAt = nil, time.Time{}
	h.statsMu.Unlock()
}
