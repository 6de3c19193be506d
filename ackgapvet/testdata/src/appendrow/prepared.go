package appendrow

import "github.com/ThreeDotsLabs/watermill/message"

// onSignup inserts through a statement prepared first (field trial, wave
// 52: score's users INSERT): the text is the Prepare's, and a redelivery
// inserts a second user.
func (s *S) onSignup(msg *message.Message) error {
	stmt, err := s.db.Prepare("INSERT INTO users (email) VALUES (?)")
	if err != nil {
		return err
	}
	defer stmt.Close()
	_, err = stmt.Exec(string(msg.Payload)) // want `an INSERT without ON CONFLICT \(sql.Stmt.Exec\) on the consumer path of watermill handler onSignup appends a row`
	return err
}

// onSignupOnce prepares an insert that ignores a duplicate: no finding.
func (s *S) onSignupOnce(msg *message.Message) error {
	stmt, err := s.db.Prepare("INSERT INTO users (email) VALUES (?) ON CONFLICT DO NOTHING")
	if err != nil {
		return err
	}
	defer stmt.Close()
	_, err = stmt.Exec(string(msg.Payload))
	return err
}

func (s *S) registerPrepared(r *message.Router) {
	r.AddNoPublisherHandler("signup", "signup", nil, s.onSignup)
	r.AddNoPublisherHandler("signup-once", "signup", nil, s.onSignupOnce)
}
