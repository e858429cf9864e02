// Package envclient is the client side of the environment protocol:
// read an env card, detect v1 servers, drive the
// JSON-RPC data plane and call REST extensions. The runner, the gateway
// and tests use it to talk to any env server, Go or Python.
//
// It depends only on protocol and the standard library.
//
//	c := envclient.New("http://slack:18765", nil)
//	card, err := c.GetCard(ctx)
//	err = c.ResetData(ctx)
//	err = c.AddData(ctx, []protocol.Part{protocol.DataPart(seed)})
//	out, err := c.InvokeExtension(ctx, card, protocol.URIClock, map[string]any{"env_get_time_url": u}, "")
//
// A JSON-RPC error comes back as a *protocol.Error, whose text is
// "message (data or code)"; branch on it with errors.Is/As.
package envclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentenv/agentenv/protocol"
)

// Default timeouts of the reference.
const (
	CardTimeout  = 10 * time.Second
	ResetTimeout = 30 * time.Second
	AddTimeout   = 120 * time.Second
	GetTimeout   = 30 * time.Second
)

// Options configure a Client. The zero value is usable.
type Options struct {
	// HTTPClient sends requests; nil means a client without a timeout of
	// its own (each call has a context deadline).
	HTTPClient *http.Client
	// Header is added to every request (for example AgentEnv-Role).
	Header http.Header
	// AddTimeout bounds data/add; 0 means AddTimeout (120 s). Large loads
	// should use DataLoadTimeout.
	AddTimeout time.Duration
	// MaxResponseBytes bounds response bodies; 0 means 1 GiB.
	MaxResponseBytes int64
}

// Client talks to one env server.
type Client struct {
	base string
	opts Options
}

// New returns a client for the env at base (for example
// "http://slack:18765" or a gateway path "http://gw:18765/svc/mcp-slack").
func New(base string, opts *Options) *Client {
	c := &Client{base: strings.TrimRight(base, "/")}
	if opts != nil {
		c.opts = *opts
	}
	if c.opts.HTTPClient == nil {
		c.opts.HTTPClient = &http.Client{}
	}
	if c.opts.AddTimeout == 0 {
		c.opts.AddTimeout = AddTimeout
	}
	if c.opts.MaxResponseBytes == 0 {
		c.opts.MaxResponseBytes = 1 << 30
	}
	return c
}

// Base returns the base URL.
func (c *Client) Base() string { return c.base }

// DataLoadTimeout is the runner's data-load timeout for a payload of n
// bytes: 900 s plus 1200 s per GB, capped at 3600 s.
func DataLoadTimeout(n int64) time.Duration {
	d := 900*time.Second + time.Duration(float64(n)/1e9*1200*float64(time.Second))
	return min(d, 3600*time.Second)
}

// HTTPError is a non-2xx answer.
type HTTPError struct {
	URL    string
	Status int
	Body   string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s", e.URL, e.Status, e.Body)
}

func (c *Client) do(ctx context.Context, timeout time.Duration, method, u string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return nil, err
	}
	for k, v := range c.opts.Header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxResponseBytes))
	if err != nil {
		return nil, fmt.Errorf("%s: read body: %w", u, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &HTTPError{URL: u, Status: resp.StatusCode, Body: truncate(string(b), 512)}
	}
	return b, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// GetCard fetches and validates the env card (timeout 10 s).
func (c *Client) GetCard(ctx context.Context) (*protocol.EnvCard, error) {
	b, err := c.do(ctx, CardTimeout, http.MethodGet, c.base+protocol.EnvCardPath, nil)
	if err != nil {
		return nil, err
	}
	return protocol.DecodeEnvCard(b)
}

// SupportsV1 reports whether the server serves a v1 card: any failure
// (404, other HTTP errors, connection errors) means legacy.
func (c *Client) SupportsV1(ctx context.Context) bool {
	_, err := c.do(ctx, CardTimeout, http.MethodGet, c.base+protocol.EnvCardPath, nil)
	return err == nil
}

// call posts one data-plane request with id 1 and returns its result.
func (c *Client) call(ctx context.Context, timeout time.Duration, method string, params any) (json.RawMessage, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%s: encode params: %w", method, err)
	}
	body, _ := json.Marshal(protocol.Request{JSONRPC: "2.0", ID: json.RawMessage("1"), Method: method, Params: p})
	b, err := c.do(ctx, timeout, http.MethodPost, c.base+protocol.DataPlanePath, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	var resp protocol.Response
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, fmt.Errorf("%s: bad response %q: %w", method, truncate(string(b), 200), err)
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	return resp.Result, nil
}

// ResetData calls data/reset (timeout 30 s).
func (c *Client) ResetData(ctx context.Context) error {
	_, err := c.call(ctx, ResetTimeout, protocol.MethodDataReset, struct{}{})
	return err
}

// AddData calls data/add with the parts (timeout Options.AddTimeout).
func (c *Client) AddData(ctx context.Context, parts []protocol.Part) error {
	if parts == nil {
		parts = []protocol.Part{}
	}
	_, err := c.call(ctx, c.opts.AddTimeout, protocol.MethodDataAdd, protocol.AddParams{Parts: parts})
	return err
}

// GetData calls data/get (timeout 30 s). writeNamespace, when not nil, is
// sent as the write_namespace grant; send one only to envs advertising
// protocol.URIDataObjects.
//
// data/get changes nothing, so a call whose answer was lost in transit (a
// connection cut before or during the body) is sent once more. Answers
// that arrived, errors included, are never retried.
func (c *Client) GetData(ctx context.Context, writeNamespace json.RawMessage) ([]protocol.Part, error) {
	params := protocol.GetParams{WriteNamespace: writeNamespace}
	res, err := c.call(ctx, GetTimeout, protocol.MethodDataGet, params)
	if err != nil && ctx.Err() == nil && lostInTransit(err) {
		res, err = c.call(ctx, GetTimeout, protocol.MethodDataGet, params)
	}
	if err != nil {
		return nil, err
	}
	var out protocol.GetResult
	if err := json.Unmarshal(res, &out); err != nil {
		return nil, fmt.Errorf("data/get: result: %w", err)
	}
	return out.Parts, nil
}

// ExtensionParams returns the REST params of the extension, zero when the
// card does not declare it.
func ExtensionParams(card *protocol.EnvCard, uri string) (protocol.ExtensionParams, error) {
	e := card.FindExtension(uri)
	if e == nil {
		return protocol.ExtensionParams{}, nil
	}
	return e.MethodParams()
}

// FindExtensionMethod returns the method merged with its endpoint and
// upper-cased verb; nil when the URI or method is unknown. An empty name
// selects the first listed method.
func FindExtensionMethod(card *protocol.EnvCard, uri, name string) *protocol.ExtensionMethod {
	p, err := ExtensionParams(card, uri)
	if err != nil {
		return nil
	}
	return p.FindMethod(name)
}

// ErrUnknownExtension is returned by InvokeExtension for a URI the card
// does not declare.
var ErrUnknownExtension = errors.New("unknown extension")

// ErrUnknownMethod is returned by InvokeExtension for a method the
// extension does not advertise.
var ErrUnknownMethod = errors.New("unknown extension method")

// InvokeExtension calls a REST extension method of the card (the first
// listed when method is ""). GET sends params as a query string, other
// verbs as a JSON body. Paths in the card are relative to the client's
// base unless absolute. The timeout is the caller's context.
func (c *Client) InvokeExtension(ctx context.Context, card *protocol.EnvCard, uri string, params map[string]any, method string) (json.RawMessage, error) {
	e := card.FindExtension(uri)
	if e == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownExtension, uri)
	}
	p, err := e.MethodParams()
	if err != nil {
		return nil, err
	}
	m := p.FindMethod(method)
	if m == nil {
		names := strings.Join(p.MethodNames(), ", ")
		if names == "" {
			names = "none"
		}
		return nil, fmt.Errorf("%w: %s has no method %q (advertised: %s)", ErrUnknownMethod, uri, method, names)
	}
	u := m.Endpoint
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		u = c.base + "/" + strings.TrimLeft(u, "/")
	}
	var body []byte
	if m.Method == http.MethodGet {
		q := url.Values{}
		for k, v := range params {
			switch x := v.(type) {
			case string:
				q.Set(k, x)
			case []string:
				q[k] = x
			default:
				b, _ := json.Marshal(x)
				q.Set(k, strings.Trim(string(b), `"`))
			}
		}
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
	} else {
		if params == nil {
			params = map[string]any{}
		}
		body, err = json.Marshal(params)
		if err != nil {
			return nil, err
		}
	}
	timeout := 600 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	return c.do(ctx, timeout, m.Method, u, body)
}

// GetInterfaceManifest fetches {endpoint}/{iface}; endpoint "" means
// /agentenv/interface-manifest.
func (c *Client) GetInterfaceManifest(ctx context.Context, iface, endpoint string) (json.RawMessage, error) {
	if endpoint == "" {
		endpoint = "/agentenv/interface-manifest"
	}
	u := endpoint
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		u = c.base + "/" + strings.TrimLeft(u, "/")
	}
	return c.do(ctx, CardTimeout, http.MethodGet, strings.TrimRight(u, "/")+"/"+url.PathEscape(iface), nil)
}

// ProbeAdd tells whether data/add is registered without side effects, by
// sending it with no parts: -32602 proves it is registered,
// -32601 that it is not. Any other answer is returned as an error (a
// gateway answers -32000 when it cannot forward).
func (c *Client) ProbeAdd(ctx context.Context) (bool, error) {
	err := c.AddData(ctx, []protocol.Part{})
	var pe *protocol.Error
	switch {
	case errors.As(err, &pe) && pe.Code == protocol.CodeInvalidParams:
		return true, nil
	case errors.As(err, &pe) && pe.Code == protocol.CodeMethodNotFound:
		return false, nil
	case err == nil:
		return true, errors.New("data/add: probe with no parts was accepted")
	}
	return false, err
}

// lostInTransit reports a failure where no complete answer arrived: not an
// HTTP status, not a JSON-RPC error.
func lostInTransit(err error) bool {
	var he *HTTPError
	var pe *protocol.Error
	return !errors.As(err, &he) && !errors.As(err, &pe) && !errors.Is(err, context.DeadlineExceeded)
}
