package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/ackgap/ackgap/console"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

// Mount the console under /ackgap/ beside the service's own routes,
// read-only (no token).
func Example() {
	dir, _ := os.MkdirTemp("", "console-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, filepath.Join(dir, "app.db"), nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	if _, err := store.Migrate(ctx, &stores.MigrateParams{}); err != nil {
		panic(err)
	}

	h, err := console.New(store, &console.Config{Prefix: "/ackgap"})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ackgap/", h)

	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/ackgap/")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"), h.Writable())
	// Output: 200 OK true false
}
