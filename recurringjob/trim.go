package recurringjob

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultManagerURL is the manager's REST API as the CronJob's pod reaches
// it (Longhorn's default manager URL: Service longhorn-backend).
const DefaultManagerURL = "http://longhorn-backend:9500/v1"

// trimTimeout bounds one volume's trimFilesystem call (the manager answers
// once the trim is done; a large filesystem takes a while).
const trimTimeout = 10 * time.Minute

// trimFilesystem asks the manager to trim the volume's filesystem, as
// Longhorn's recurring filesystem-trim job calls the volume's
// trimFilesystem action: POST <ManagerURL>/volumes/<volume>?action=trimFilesystem.
// The manager that gets it forwards it to the manager of the node the volume
// is attached to. An answer other than 200 fails with the manager's message.
func (r *Runner) trimFilesystem(ctx context.Context, volume string) error {
	base := r.ManagerURL
	if base == "" {
		base = DefaultManagerURL
	}
	u, err := url.Parse(strings.TrimSuffix(base, "/") + "/volumes/" + url.PathEscape(volume))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("manager URL %q: want http(s)://HOST[:PORT]/v1", base)
	}
	u.RawQuery = url.Values{"action": {"trimFilesystem"}}.Encode()
	ctx, cancel := context.WithTimeout(ctx, trimTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader("{}"))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("trimFilesystem: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil || e.Message == "" {
		e.Message = strings.TrimSpace(string(body))
	}
	return fmt.Errorf("trimFilesystem: the manager answered %d: %s", resp.StatusCode, e.Message)
}
