// Package certcheck makes an HTTP request that is no effect (the
// configuration's not_effects says so).
package certcheck

import "net/http"

// Verify fetches a revocation list.
func Verify(client *http.Client) error {
	_, err := client.Get("https://crl.example/list")
	return err
}
