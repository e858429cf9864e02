package browser

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/agentenv/agentenv/gateway"
	"github.com/agentenv/agentenv/registry"
)

// Tools implements gateway.ToolSource, in the documented order.
func (s *Source) Tools() []gateway.NativeTool {
	return []gateway.NativeTool{
		{Descriptor: descriptor("browser_screenshot", "Take a PNG screenshot of the browser viewport.", `{}`, nil, true), CallRecorded: s.screenshot},
		{Descriptor: descriptor("browser_click", "Click in the browser: at viewport coordinates x,y (CSS pixels from the top left), or on the element a CSS selector names.",
			`{"x":{"type":"number"},"y":{"type":"number"},"selector":{"type":"string"},"button":{"type":"string","enum":["left","right","middle"]},"clicks":{"type":"integer","minimum":1,"maximum":3}}`, nil, false), Call: s.tool(s.click)},
		{Descriptor: descriptor("browser_type", "Type text into the focused element of the browser (or into the element a CSS selector names, after focusing it).",
			`{"text":{"type":"string"},"selector":{"type":"string"}}`, []string{"text"}, false), Call: s.tool(s.typeText)},
		{Descriptor: descriptor("browser_key", "Press a key in the browser: Enter, Tab, Escape, Backspace, Delete, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, Home, End, PageUp, PageDown or Space.",
			`{"key":{"type":"string"}}`, []string{"key"}, false), Call: s.tool(s.key)},
		{Descriptor: descriptor("browser_scroll", "Scroll the browser by dx,dy CSS pixels (positive dy scrolls down), with the mouse at x,y (the viewport centre by default).",
			`{"dx":{"type":"number"},"dy":{"type":"number"},"x":{"type":"number"},"y":{"type":"number"}}`, nil, false), Call: s.tool(s.scroll)},
		{Descriptor: descriptor("browser_navigate", "Open an http(s) URL in the browser and wait for it to load; or open a website of the env by name (website, with an optional path), as list_website_urls names them.",
			`{"url":{"type":"string"},"website":{"type":"string"},"path":{"type":"string"}}`, nil, false), Call: s.tool(s.navigate)},
		{Descriptor: descriptor("browser_read", "Read the page: its URL, title, visible text, and the interactive elements (role, name, centre x,y) in the viewport.", `{}`, nil, true), Call: s.tool(s.read)},
	}
}

func descriptor(name, desc, props string, required []string, readOnly bool) json.RawMessage {
	schema := map[string]any{"type": "object", "properties": json.RawMessage(props), "additionalProperties": false}
	if len(required) > 0 {
		schema["required"] = required
	}
	b, err := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": schema,
		"annotations": map[string]bool{"readOnlyHint": readOnly}})
	if err != nil {
		panic(err) // constant descriptors
	}
	return b
}

// argError is bad input from the caller: an isError result naming the field.
type argError struct{ field, reason string }

func (e *argError) Error() string { return e.field + ": " + e.reason }

// tool adapts a handler returning a text value: bad arguments and an
// unreachable or failing browser become isError results the model can read.
func (s *Source) tool(h func(ctx context.Context, args json.RawMessage) (string, error)) func(context.Context, *gateway.ToolCall) (json.RawMessage, error) {
	return func(ctx context.Context, call *gateway.ToolCall) (json.RawMessage, error) {
		text, err := h(ctx, call.Arguments)
		if err != nil {
			return content(true, textContent(err.Error())), nil
		}
		return content(false, textContent(text)), nil
	}
}

func content(isError bool, items ...map[string]any) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": items, "isError": isError})
	return b
}

func textContent(t string) map[string]any { return map[string]any{"type": "text", "text": t} }

// decodeArgs decodes the arguments strictly; an unknown or mistyped field
// is named.
func decodeArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			kind := te.Type.String()
			switch te.Type.Kind() {
			case reflect.Float64, reflect.Pointer:
				kind = "number"
			case reflect.Int:
				kind = "integer"
			}
			return &argError{te.Field, "must be a " + kind}
		}
		return &argError{"arguments", err.Error()}
	}
	return nil
}

func (s *Source) screenshot(ctx context.Context, call *gateway.ToolCall) (gateway.NativeResult, error) {
	var none struct{}
	if err := decodeArgs(call.Arguments, &none); err != nil {
		return gateway.NativeResult{Raw: content(true, textContent(err.Error()))}, nil
	}
	var png []byte
	n := 0
	err := s.do(ctx, func(tab context.Context) error {
		var err error
		png, err = chromedp.Run(tab, capture)
		if err == nil {
			s.shots++
			n = s.shots
		}
		return err
	})
	if err != nil {
		return gateway.NativeResult{Raw: content(true, textContent(err.Error()))}, nil
	}
	image := map[string]any{"type": "image", "data": base64.StdEncoding.EncodeToString(png), "mimeType": "image/png"}
	if s.opts.Objects == nil {
		return gateway.NativeResult{Raw: content(false, image)}, nil
	}
	key := fmt.Sprintf("%s%04d.png", s.opts.KeyPrefix, n)
	info, err := s.opts.Objects.Put(ctx, key, strings.NewReader(string(png)), &registry.ObjectPutOptions{ContentType: "image/png"})
	if err != nil {
		// The agent still gets its screenshot; the trajectory says why
		// it holds the bytes.
		s.log.Warn("screenshot not stored", "key", key, "err", err)
		return gateway.NativeResult{Raw: content(false, image, textContent("screenshot not stored: "+err.Error()))}, nil
	}
	link := map[string]any{"type": "resource_link", "uri": info.URL, "name": key, "mimeType": "image/png", "size": info.Size}
	note := textContent(fmt.Sprintf("screenshot %dx%d stored as %s", s.opts.Width, s.opts.Height, key))
	return gateway.NativeResult{Raw: content(false, image, link), Recorded: content(false, link, note)}, nil
}

// capture takes a PNG of the viewport. optimizeForSpeed trades some PNG
// size for encoding time, most of a screenshot's latency.
func capture(ctx context.Context, t *chromedp.Target) ([]byte, error) {
	speed, surface := true, true
	r, err := cdp.Call(ctx, t, page.CaptureScreenshot, page.CaptureScreenshotParams{
		Format: page.CaptureScreenshotFormatPng, FromSurface: &surface, OptimizeForSpeed: &speed})
	if err != nil {
		return nil, err
	}
	return r.Data, nil
}

func (s *Source) click(ctx context.Context, raw json.RawMessage) (string, error) {
	var a struct {
		X        *float64 `json:"x"`
		Y        *float64 `json:"y"`
		Selector string   `json:"selector"`
		Button   string   `json:"button"`
		Clicks   int      `json:"clicks"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if a.Selector == "" && (a.X == nil || a.Y == nil) {
		return "", &argError{"x", "x and y, or selector, are required"}
	}
	button := input.MouseButtonLeft
	switch a.Button {
	case "", "left":
	case "right":
		button = input.MouseButtonRight
	case "middle":
		button = input.MouseButtonMiddle
	default:
		return "", &argError{"button", fmt.Sprintf("must be left, right or middle, got %q", a.Button)}
	}
	if a.Clicks == 0 {
		a.Clicks = 1
	}
	if a.Clicks < 1 || a.Clicks > 3 {
		return "", &argError{"clicks", "must be 1, 2 or 3"}
	}
	var at string
	err := s.do(ctx, func(tab context.Context) error {
		x, y := 0.0, 0.0
		if a.Selector != "" {
			pt, err := chromedp.Run(tab, chromedp.Evaluate[[]float64](centreJS(a.Selector)))
			if err != nil {
				return err
			}
			if len(pt) != 2 {
				return &argError{"selector", fmt.Sprintf("no visible element matches %q", a.Selector)}
			}
			x, y = pt[0], pt[1]
		} else {
			x, y = *a.X, *a.Y
		}
		at = fmt.Sprintf("%.0f,%.0f", x, y)
		m := s.mark()
		if err := chromedp.Do(tab, chromedp.MouseClickXY(x, y, chromedp.ButtonType(button), chromedp.ClickCount(a.Clicks))); err != nil {
			return err
		}
		s.settle(tab, m)
		return nil
	})
	if err != nil {
		return "", err
	}
	return "clicked at " + at, nil
}

// centreJS evaluates to the viewport centre [x, y] of the first visible
// element matching sel (scrolled into view), or [] when none.
func centreJS(sel string) string {
	q, _ := json.Marshal(sel)
	return `(() => { const e = document.querySelector(` + string(q) + `); if (!e) return [];
e.scrollIntoView({block: "center", inline: "center"}); const r = e.getBoundingClientRect();
if (r.width === 0 && r.height === 0) return []; return [r.left + r.width / 2, r.top + r.height / 2]; })()`
}

func (s *Source) typeText(ctx context.Context, raw json.RawMessage) (string, error) {
	var a struct {
		Text     *string `json:"text"`
		Selector string  `json:"selector"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if a.Text == nil {
		return "", &argError{"text", "is required"}
	}
	err := s.do(ctx, func(tab context.Context) error {
		if a.Selector != "" {
			q, _ := json.Marshal(a.Selector)
			ok, err := chromedp.Run(tab, chromedp.Evaluate[bool](`(() => { const e = document.querySelector(`+string(q)+`); if (!e) return false; e.focus(); return true; })()`))
			if err != nil {
				return err
			}
			if !ok {
				return &argError{"selector", fmt.Sprintf("no element matches %q", a.Selector)}
			}
		}
		return chromedp.Do(tab, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, input.InsertText, input.InsertTextParams{Text: *a.Text})
			return err
		}))
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("typed %d characters", len([]rune(*a.Text))), nil
}

// keys maps the browser_key names to chromedp's key runes.
var keys = map[string]string{
	"Enter": kb.Enter, "Tab": kb.Tab, "Escape": kb.Escape, "Backspace": kb.Backspace, "Delete": kb.Delete,
	"ArrowUp": kb.ArrowUp, "ArrowDown": kb.ArrowDown, "ArrowLeft": kb.ArrowLeft, "ArrowRight": kb.ArrowRight,
	"Home": kb.Home, "End": kb.End, "PageUp": kb.PageUp, "PageDown": kb.PageDown, "Space": " ",
}

func (s *Source) key(ctx context.Context, raw json.RawMessage) (string, error) {
	var a struct {
		Key string `json:"key"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	k, ok := keys[a.Key]
	if !ok {
		return "", &argError{"key", fmt.Sprintf("unknown key %q (Enter, Tab, Escape, Backspace, Delete, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, Home, End, PageUp, PageDown, Space)", a.Key)}
	}
	err := s.do(ctx, func(tab context.Context) error {
		m := s.mark()
		if err := chromedp.Do(tab, chromedp.KeyEvent(k)); err != nil {
			return err
		}
		s.settle(tab, m)
		return nil
	})
	if err != nil {
		return "", err
	}
	return "pressed " + a.Key, nil
}

func (s *Source) scroll(ctx context.Context, raw json.RawMessage) (string, error) {
	var a struct {
		DX *float64 `json:"dx"`
		DY *float64 `json:"dy"`
		X  *float64 `json:"x"`
		Y  *float64 `json:"y"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	val := func(p *float64, def float64) float64 {
		if p == nil {
			return def
		}
		return *p
	}
	dx, dy := val(a.DX, 0), val(a.DY, 0)
	if dx == 0 && dy == 0 {
		return "", &argError{"dy", "dx or dy must be non-zero"}
	}
	x, y := val(a.X, float64(s.opts.Width)/2), val(a.Y, float64(s.opts.Height)/2)
	at := ""
	err := s.do(ctx, func(tab context.Context) error {
		before, err := chromedp.Run(tab, chromedp.Evaluate[string](`scrollX + ',' + scrollY`))
		if err != nil {
			return err
		}
		if err := chromedp.Do(tab, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, wheelEvent, wheelParams{Type: "mouseWheel", X: x, Y: y, DeltaX: dx, DeltaY: dy})
			return err
		})); err != nil {
			return err
		}
		// The wheel scrolls asynchronously (and smoothly): wait until the
		// position stops changing, at most 1 s.
		at, err = chromedp.Run(tab, chromedp.Evaluate[string](scrollSettleJS(before, dx, dy), chromedp.EvalAwaitPromise))
		return err
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("scrolled by %.0f,%.0f; the page is at %s", dx, dy, at), nil
}

func (s *Source) navigate(ctx context.Context, raw json.RawMessage) (string, error) {
	var a struct {
		URL     string `json:"url"`
		Website string `json:"website"`
		Path    string `json:"path"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	switch {
	case a.Website != "" && a.URL != "":
		return "", &argError{"url", "give url or website, not both"}
	case a.Website != "":
		base, ok := s.opts.Websites[a.Website]
		if !ok {
			names := slices.Sorted(maps.Keys(s.opts.Websites))
			return "", &argError{"website", fmt.Sprintf("no website %q (websites: %s)", a.Website, strings.Join(names, ", "))}
		}
		a.URL = strings.TrimRight(base, "/") + "/" + strings.TrimLeft(a.Path, "/")
	case a.URL == "":
		return "", &argError{"url", "url or website is required"}
	}
	u, err := url.Parse(a.URL)
	// Only web pages: file:// or chrome:// would let an agent read the
	// browser's machine.
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", &argError{"url", fmt.Sprintf("must be an http(s) URL, got %q", a.URL)}
	}
	err = s.do(ctx, func(tab context.Context) error { return chromedp.Do(tab, chromedp.Navigate(a.URL)) })
	if err != nil {
		return "", err
	}
	return "opened " + a.URL, nil
}

// wheelParams is Input.dispatchMouseEvent for a wheel: cdproto omits a
// zero delta, and Chromium wants both.
type wheelParams struct {
	Type   string  `json:"type"`
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	DeltaX float64 `json:"deltaX"`
	DeltaY float64 `json:"deltaY"`
}

var wheelEvent = cdp.Command[wheelParams, cdp.Empty]{Method: input.CommandDispatchMouseEvent}

// scrollSettleJS waits for the wheel to move the page (up to 300 ms),
// scrolls by script when it did not (a page that handles no wheel, or a
// compositor that ignores synthetic ones), then resolves once the position
// has held for three frames (at most 1 s).
func scrollSettleJS(before string, dx, dy float64) string {
	return fmt.Sprintf(`new Promise(r => { const t0 = performance.now(); let last = '', same = 0, nudged = false;
const pos = () => scrollX + ',' + scrollY;
const step = () => { const p = pos(), now = performance.now() - t0;
if (!nudged && p === %q && now > 300) { nudged = true; scrollBy(%g, %g); }
same = p === last ? same + 1 : 0; last = p;
if ((p !== %q && same >= 3) || now > 1000) r(pos()); else requestAnimationFrame(step); };
requestAnimationFrame(step); })`, before, dx, dy, before)
}

// readJS collects what browser_read returns.
const readJS = `(() => {
const vw = window.innerWidth, vh = window.innerHeight, out = [];
const sel = 'a[href],button,input,textarea,select,[role=button],[role=link],[role=tab],[role=menuitem],[role=checkbox],[contenteditable=true]';
for (const e of document.querySelectorAll(sel)) {
  const r = e.getBoundingClientRect();
  if (r.width === 0 || r.height === 0 || r.bottom < 0 || r.right < 0 || r.top > vh || r.left > vw) continue;
  const st = getComputedStyle(e); if (st.visibility === 'hidden' || st.display === 'none') continue;
  const tag = e.tagName.toLowerCase();
  let role = e.getAttribute('role') || {a: 'link', button: 'button', textarea: 'textbox', select: 'combobox'}[tag] || '';
  if (tag === 'input') { const t = (e.type || 'text').toLowerCase(); role = {submit: 'button', button: 'button', checkbox: 'checkbox', radio: 'radio'}[t] || 'textbox'; }
  let name = e.getAttribute('aria-label') || '';
  if (!name && e.labels && e.labels.length) name = e.labels[0].innerText;
  if (!name) name = (e.innerText || e.value || e.getAttribute('placeholder') || e.getAttribute('name') || e.getAttribute('title') || '').trim();
  const el = {role: role, name: name.slice(0, 200), x: Math.round(r.left + r.width / 2), y: Math.round(r.top + r.height / 2)};
  if (role === 'textbox' && e.value) el.value = String(e.value).slice(0, 200);
  out.push(el);
}
return {url: location.href, title: document.title, text: (document.body ? document.body.innerText : '').slice(0, 65536), elements: out};
})()`

func (s *Source) read(ctx context.Context, raw json.RawMessage) (string, error) {
	var none struct{}
	if err := decodeArgs(raw, &none); err != nil {
		return "", err
	}
	var pageJSON json.RawMessage
	err := s.do(ctx, func(tab context.Context) error {
		var err error
		pageJSON, err = chromedp.Run(tab, chromedp.Evaluate[json.RawMessage](readJS))
		return err
	})
	if err != nil {
		return "", err
	}
	return string(pageJSON), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
