package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/gochannelbroker"
	"github.com/ackgap/ackgap/console"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/telemetry"
)

// Environment of the browser test.
const (
	// envChromium names the browser binary; default /usr/bin/chromium
	// (Debian's chromium package, which tools/test.sh installs).
	envChromium = "ACKGAP_CHROMIUM"
	// envScreenshots is the directory the test saves its screenshots in;
	// default a temporary directory of the test.
	envScreenshots = "ACKGAP_CONSOLE_SCREENSHOTS"
)

// consumerApp is a consumer process with the console mounted: a router on
// GoChannel and PostgreSQL whose handler writes a charge to the outbox,
// telemetry feeding a Recorder, and a relay whose payment provider
// declines order-2 until declined is cleared.
type consumerApp struct {
	store    *pgxstore.Store
	pub      message.Publisher
	declined atomic.Bool
	charged  sync.Map // idempotency key -> calls
	url      string   // the console's base URL
}

func startConsumerApp(t *testing.T) *consumerApp {
	t.Helper()
	ctx := context.Background()
	pool, schema := testdb.Schema(t, 0)
	store, err := pgxstore.New(pool, &pgxstore.Config{Schema: schema})
	require.NoError(t, err)
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	app := &consumerApp{store: store}
	app.declined.Store(true)

	rec := console.NewRecorder()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rec.Reader()))
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = mp.Shutdown(ctx); _ = tp.Shutdown(ctx) })
	tel, err := telemetry.New(&telemetry.Config{MeterProvider: mp, TracerProvider: tp})
	require.NoError(t, err)
	mw, err := tel.Middleware("orders", telemetry.SystemGoChannel)
	require.NoError(t, err)

	broker := gochannelbroker.New(nil)
	pub, err := broker.Publisher()
	require.NoError(t, err)
	sub, err := broker.Subscriber("billing")
	require.NoError(t, err)
	app.pub = pub
	r, err := router.New[pgx.Tx](store, &router.Config{DeadLetter: pub, Middlewares: []message.HandlerMiddleware{mw},
		Logger: watermill.NopLogger{}})
	require.NoError(t, err)
	require.NoError(t, r.AddHandler("billing", "orders", sub, func(ctx context.Context, _ pgx.Tx, msg *message.Message) error {
		id, _ := ackgap.EventIDFromContext(ctx)
		return ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:" + id, Payload: msg.Payload})
	}))
	routerCtx, stopRouter := context.WithCancel(ctx)
	routerDone := make(chan error, 1)
	go func() { routerDone <- r.Run(routerCtx) }()
	t.Cleanup(func() {
		stopRouter()
		require.NoError(t, r.Close())
		require.NoError(t, <-routerDone)
		require.NoError(t, tel.Close())
		require.NoError(t, broker.Close())
	})
	<-r.Running()

	h, err := console.New(store, &console.Config{Prefix: "/ackgap", Token: token, Recorder: rec, StatsTTL: time.Millisecond})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ackgap/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	app.url = srv.URL + "/ackgap"
	return app
}

// publish publishes order events through the router: GoChannel's Publish
// returns once the handler acked.
func (a *consumerApp) publish(t *testing.T, eventID string) {
	t.Helper()
	msg := message.NewMessage(watermill.NewUUID(), []byte(`{"order":"`+eventID+`","amount_cents":4200}`))
	if eventID != "" {
		msg.Metadata.Set(ackgap.MetadataEventIDKey, eventID)
	}
	require.NoError(t, a.pub.Publish("orders", msg))
}

// relay carries the charges out until the returned stop is called.
func (a *consumerApp) relay(t *testing.T) (stop func()) {
	t.Helper()
	effect := func(_ context.Context, row stores.OutboxRow) error {
		if a.declined.Load() && row.IdempotencyKey == "charge:order-2" {
			return errors.New("payment provider: 402 card declined")
		}
		n, _ := a.charged.LoadOrStore(row.IdempotencyKey, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		return nil
	}
	rl, err := outbox.New(a.store, &outbox.Config{Effects: map[string]outbox.Effect{"charge": effect}, MaxAttempts: 2,
		RetryInitialInterval: time.Millisecond, RetryMaxInterval: time.Millisecond, PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rl.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	return stop
}

// rowState returns the state and attempts of the row with key.
func (a *consumerApp) row(t *testing.T, key string) stores.OutboxRow {
	t.Helper()
	res, err := a.store.FindOutbox(context.Background(), &stores.FindOutboxParams{KeyPrefix: key, Limit: 1})
	require.NoError(t, err)
	require.Len(t, res.Rows, 1)
	return res.Rows[0]
}

// TestBrowser drives the console in headless Chromium: overview, follow
// the dead row, log in, redrive it, and see the relay carry it out.
func TestBrowser(t *testing.T) {
	chromium := os.Getenv(envChromium)
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("no browser at %s (%v): apt-get install -y chromium, or set %s", chromium, err, envChromium)
	}
	shots := os.Getenv(envScreenshots)
	if shots == "" {
		shots = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))

	app := startConsumerApp(t)
	for i := 1; i <= 5; i++ {
		app.publish(t, "order-"+strconv.Itoa(i))
	}
	app.publish(t, "order-1") // a duplicate: skipped by the inbox
	app.publish(t, "")        // no event id: dead-lettered
	stopRelay := app.relay(t)
	require.Eventually(t, func() bool {
		return app.row(t, "charge:order-2").State == stores.OutboxDead && app.row(t, "charge:order-5").State == stores.OutboxDone
	}, 30*time.Second, 20*time.Millisecond, "order-2's charge dies after 2 declines; the others are done")
	// The provider is fixed, and the relay stopped so that the test sees
	// the redriven row pending before it is carried out.
	stopRelay()
	app.declined.Store(false)
	deadID := app.row(t, "charge:order-2").ID

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 760),
	)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	defer cancelCtx()
	// The first Run starts the browser and must not have a timeout; the
	// steps after it do.
	require.NoError(t, chromedp.Do(ctx))
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	// Every message of the page's console, its uncaught exceptions and
	// the browser's log (a failed load, a refused script) is collected;
	// errors and warnings fail the test.
	messages := chromedp.Console(ctx)
	var pageErrors []string
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning {
				pageErrors = append(pageErrors, m.String()+" "+m.URL)
			}
		}
	}()
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			png, err := chromedp.CaptureScreenshot()(ctx, t)
			if err != nil {
				return chromedp.Void{}, err
			}
			return chromedp.Void{}, os.WriteFile(filepath.Join(shots, "console-"+name+".png"), png, 0o644)
		}
	}
	text := func(sel chromedp.CSS) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(sel))
		require.NoError(t, err, "text of %s", sel)
		return strings.TrimSpace(s)
	}

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(app.url+"/"),
		chromedp.WaitVisible(chromedp.ID("outbox-kinds")),
		shot("overview"),
	))
	overview := text("main")
	// With JavaScript the refresh box is shown and ticked; the server
	// renders it hidden and unticked (console_test checks the HTML).
	refreshOn, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("autorefresh").checked`))
	require.NoError(t, err)
	refreshShown, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.getElementById("autorefresh-label").hidden`))
	require.NoError(t, err)
	require.True(t, refreshOn, "ticked by the script")
	require.True(t, refreshShown, "shown by the script")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("a.dead-link")),
		chromedp.WaitVisible(chromedp.ID("outbox-rows")),
		shot("outbox"),
		chromedp.Click(chromedp.CSS("a.row-link")),
		chromedp.WaitVisible(chromedp.ID("row-state")),
	))
	require.Contains(t, overview, "billing")
	require.Equal(t, "dead", text("#row-state"))
	require.Contains(t, text("#row-error"), "402 card declined")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`a[href*="/login"]`)),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitEnabled(chromedp.ID("redrive")),
		shot("row"),
		chromedp.Click(chromedp.ID("redrive")),
		chromedp.WaitVisible(chromedp.ID("flash")),
	))
	require.Contains(t, text("#flash"), "pending again")
	require.Equal(t, "pending", text("#row-state"), "the redriven row is pending")
	require.Equal(t, "0", text("#row-attempts"), "a redrive resets the attempts")
	require.Equal(t, stores.OutboxPending, app.row(t, "charge:order-2").State)

	// The relay runs again and carries the row out; the page shows it.
	app.relay(t)
	require.Eventually(t, func() bool {
		if err := chromedp.Do(ctx, chromedp.Navigate(app.url+"/outbox/"+strconv.FormatInt(deadID, 10))); err != nil {
			return false
		}
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("row-state")))
		return err == nil && strings.TrimSpace(s) == "done"
	}, 30*time.Second, 100*time.Millisecond, "the relay carried the redriven row out")
	// The done row keeps its old error, marked as past (issue 25).
	require.Contains(t, text("#row-error"), "402 card declined")
	require.Contains(t, text("#row-error-past"), "Past: the row was carried out after this error")
	n, ok := app.charged.Load("charge:order-2")
	require.True(t, ok)
	require.EqualValues(t, 1, n.(*atomic.Int64).Load(), "charged once, after the redrive")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`a[href*="/event?id=order-2"]`)),
		chromedp.WaitVisible(chromedp.ID("event-inbox")),
		shot("event"),
	))
	require.Contains(t, text("main"), "charge:order-2")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(app.url+"/live"),
		chromedp.WaitVisible(chromedp.CSS("svg")),
		shot("live"),
	))
	live := text("main")
	require.Contains(t, live, "gochannel · orders")
	require.Regexp(t, `\d+ acks`, live)

	cancelTimeout()
	cancelCtx()
	<-collected
	require.Empty(t, pageErrors, "the pages logged no error")
	t.Logf("screenshots in %s", shots)
	for _, name := range []string{"overview", "outbox", "row", "event", "live"} {
		_, err := os.Stat(filepath.Join(shots, "console-"+name+".png"))
		require.NoError(t, err)
	}
}
