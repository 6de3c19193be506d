package earlyack

import (
	"database/sql"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Invoicer marks the invoice sent with a guarded UPDATE, then emails it
// (a new user's report): a failed or interrupted email leaves the row
// "sent", and the redelivery finds no row to change and skips it.
type Invoicer struct {
	db   *sql.DB
	mail *http.Client
}

func (v *Invoicer) Send(msg *message.Message) error {
	res, err := v.db.ExecContext(msg.Context(), "UPDATE invoices SET status = 'sent' WHERE id = $1 AND status = 'pending'", string(msg.Payload))
	if err != nil {
		return err
	}
	n, err := res.RowsAffected() // want `claims the message with res.RowsAffected \(a guarded UPDATE\) before the work \(an HTTP request \(http.Client.Post\) at line 30\)`
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	_, err = v.mail.Post("https://mail.example/invoices", "text/plain", nil)
	return err
}

// SendInTx emails inside the transaction that marks it: the UPDATE rolls
// back when the email fails, so no finding.
func (v *Invoicer) SendInTx(msg *message.Message) error {
	tx, err := v.db.BeginTx(msg.Context(), nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(msg.Context(), "UPDATE invoices SET status = 'sent' WHERE id = $1 AND status = 'pending'", string(msg.Payload))
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	if _, err := v.mail.Post("https://mail.example/invoices", "text/plain", nil); err != nil {
		return err
	}
	return tx.Commit()
}

func registerInvoicer(r *message.Router, v *Invoicer) {
	r.AddNoPublisherHandler("invoice", "invoices", nil, v.Send)
	r.AddNoPublisherHandler("invoice-tx", "invoices", nil, v.SendInTx)
}
