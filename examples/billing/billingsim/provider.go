package billingsim

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/ackgap/ackgap/examples/billing/orders"
)

// Paths of the demo's two HTTP services.
const (
	// ChargesPath is the payment provider's endpoint: POST a orders.ChargePayload
	// with an Idempotency-Key header.
	ChargesPath = "/v1/charges"
	// ReceiptsPath is the mailer's endpoint: POST a orders.ReceiptPayload with an
	// Idempotency-Key header.
	ReceiptsPath = "/v1/receipts"
)

// maxRequestBody bounds what the services read from a request.
const maxRequestBody = 64 << 10

// paymentProvider is a card-payment API that keeps its promise the way
// real ones do (Stripe, Adyen): it stores its response per Idempotency-Key.
// The same key with the same body gets the original response again,
// marked Idempotent-Replayed, and charges nothing; the same key with
// another body is refused with 422; a request without a key with 400.
// Requests are handled one at a time, so two in flight with one key
// cannot both charge.
type paymentProvider struct {
	mu sync.Mutex
	// byKey is the stored response per idempotency key.
	byKey map[string]storedResponse
	// calls counts POSTs to ChargesPath; replays those answered from
	// byKey; conflicts those refused for a reused key.
	calls, replays, conflicts int
}

type storedResponse struct {
	bodyHash [sha256.Size]byte
	status   int
	body     []byte
}

// chargeResponse is what the provider answers for a new charge.
type chargeResponse struct {
	ID          string `json:"id"`
	OrderID     string `json:"order_id"`
	AmountCents int64  `json:"amount_cents"`
	Status      string `json:"status"`
}

func newPaymentProvider() *paymentProvider {
	return &paymentProvider{byKey: map[string]storedResponse{}}
}

// ServeHTTP handles POST ChargesPath.
func (p *paymentProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != ChargesPath {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unreadable body"})
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Idempotency-Key header required"})
		return
	}
	hash := sha256.Sum256(body)
	if s, ok := p.byKey[key]; ok {
		if s.bodyHash != hash {
			p.conflicts++
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": "Idempotency-Key reused with another request body"})
			return
		}
		p.replays++
		w.Header().Set("Idempotent-Replayed", "true")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s.status)
		_, _ = w.Write(s.body)
		return
	}
	var c orders.ChargePayload
	if err := json.Unmarshal(body, &c); err != nil || c.OrderID == "" || c.AmountCents <= 0 {
		// Stored too: a retry with the same key and body gets the same 400.
		p.store(w, key, hash, http.StatusBadRequest, map[string]string{"error": "order_id and a positive amount_cents required"})
		return
	}
	p.store(w, key, hash, http.StatusCreated, chargeResponse{
		ID: fmt.Sprintf("ch_%06d", len(p.byKey)+1), OrderID: c.OrderID, AmountCents: c.AmountCents, Status: "succeeded",
	})
}

// store records the response for key and writes it.
func (p *paymentProvider) store(w http.ResponseWriter, key string, hash [sha256.Size]byte, status int, v any) {
	body, _ := json.Marshal(v)
	p.byKey[key] = storedResponse{bodyHash: hash, status: status, body: body}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// providerCounts is what the provider saw.
type providerCounts struct {
	// calls is every POST (charges attempted); charged the distinct keys
	// charged (charges made); replays and conflicts as in paymentProvider.
	calls, charged, replays, conflicts int
}

func (p *paymentProvider) counts() providerCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := providerCounts{calls: p.calls, replays: p.replays, conflicts: p.conflicts}
	for _, s := range p.byKey {
		if s.status == http.StatusCreated {
			c.charged++
		}
	}
	return c
}

// mailer is an e-mail API that sends one receipt per Idempotency-Key: a
// repeat is acknowledged (200) and not sent again.
type mailer struct {
	mu sync.Mutex
	// sent is the number of mails sent per key (at most 1); calls counts
	// every POST.
	sent  map[string]int
	calls int
}

func newMailer() *mailer { return &mailer{sent: map[string]int{}} }

// ServeHTTP handles POST ReceiptsPath.
func (m *mailer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != ReceiptsPath {
		http.NotFound(w, r)
		return
	}
	var rc orders.ReceiptPayload
	err := json.NewDecoder(io.LimitReader(r.Body, maxRequestBody)).Decode(&rc)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	key := r.Header.Get("Idempotency-Key")
	switch {
	case key == "":
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Idempotency-Key header required"})
	case err != nil || rc.Email == "":
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "email required"})
	case m.sent[key] > 0:
		writeJSON(w, http.StatusOK, map[string]string{"status": "already sent"})
	default:
		m.sent[key]++
		writeJSON(w, http.StatusAccepted, map[string]string{"status": "sent", "to": rc.Email})
	}
}

// counts returns the POSTs received and the receipts sent.
func (m *mailer) counts() (calls, sent int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls, len(m.sent)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// services are the payment provider and the mailer, each a net/http server
// on its own loopback port, and the client the relays call them with.
type services struct {
	provider *paymentProvider
	mailer   *mailer
	// chargesURL and receiptsURL are the endpoints.
	chargesURL, receiptsURL string
	client                  *http.Client
	servers                 []*http.Server
	served                  sync.WaitGroup
}

// startServices starts the provider and the mailer on 127.0.0.1, on ports
// the system picks.
func startServices() (*services, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64 // the relays' concurrency; the default 2 would open a connection per call
	s := &services{provider: newPaymentProvider(), mailer: newMailer(), client: &http.Client{Transport: transport}}
	for _, h := range []struct {
		handler http.Handler
		url     *string
		path    string
	}{{s.provider, &s.chargesURL, ChargesPath}, {s.mailer, &s.receiptsURL, ReceiptsPath}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errors.Join(fmt.Errorf("listen: %w", err), s.close())
		}
		srv := &http.Server{Handler: h.handler, ReadHeaderTimeout: 5 * time.Second}
		s.servers = append(s.servers, srv)
		s.served.Go(func() { _ = srv.Serve(ln) })
		*h.url = "http://" + ln.Addr().String() + h.path
	}
	return s, nil
}

// close closes the client's idle connections, then shuts the servers
// down and waits for them. The client goes first: a connection it dialled
// but never used would otherwise hold Shutdown for 5 s (net/http waits that
// long for a new connection's first request).
func (s *services) close() error {
	s.client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for _, srv := range s.servers {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, err, srv.Close())
		}
	}
	s.served.Wait()
	return errors.Join(errs...)
}
