// Package llm is the model client of agentsdk agents: OpenAI-compatible
// chat completions (openai-go) configured from agent-config or from
// LITELLM_BASE_URL / LITELLM_API_KEY, with MCP tool descriptors rendered
// as function tools and every provider failure mapped to a typed
// *agentsdk.Failure, so a run that hits a broken or slow model ends as a
// failed task with a stable error code instead of hanging or leaking the
// provider's error text.
//
//	c, err := llm.New(llm.Config{Model: "gpt-4o-mini"}) // base URL and key from the environment
//	defs, err := llm.OpenAITools(tools, nil)             // nil: each tool under its own name
//	resp, err := c.Complete(ctx, openai.ChatCompletionNewParams{Messages: msgs, Tools: defs})
package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentenv/agentenv/agentsdk"
)

// Error codes of the failures Complete returns.
const (
	CodeNoEndpoint  = "model_endpoint_missing"
	CodeNoAPIKey    = "model_api_key_missing"
	CodeRateLimited = "provider_rate_limited"
	CodeAuthFailed  = "provider_auth_failed"
	CodeBadRequest  = "provider_bad_request"
	CodeProviderErr = "provider_error"
	CodeTimeout     = "provider_timeout"
	CodeUnreachable = "provider_unreachable"
	CodeEmptyAnswer = "provider_empty_response"
	defaultTimeout  = 120 * time.Second
	envBaseURL      = "LITELLM_BASE_URL"
	envAPIKey       = "LITELLM_API_KEY"
)

// Config selects the endpoint and model.
type Config struct {
	// BaseURL of the OpenAI-compatible API; "" means $LITELLM_BASE_URL.
	// Requests go to {base}/v1/chat/completions, or {base}/chat/completions
	// when the base already ends in /v1.
	BaseURL string
	// APIKey; "" means $LITELLM_API_KEY.
	APIKey string
	// Model used when a request names none.
	Model string
	// Timeout bounds each call; 0 means 120 s.
	Timeout time.Duration
	// MaxRetries of retryable provider errors (429, 5xx); 0 means none.
	MaxRetries int
	// HTTPClient; nil means http.DefaultClient.
	HTTPClient *http.Client
}

// Client calls one model endpoint.
type Client struct {
	c       openai.Client
	model   string
	timeout time.Duration
}

// New builds a client. It fails with a *agentsdk.Failure (infra_error)
// when no endpoint or key is configured.
func New(cfg Config) (*Client, error) {
	base := strings.TrimSpace(cfg.BaseURL)
	if base == "" {
		base = strings.TrimSpace(os.Getenv(envBaseURL))
	}
	key := cfg.APIKey
	if key == "" {
		key = os.Getenv(envAPIKey)
	}
	if base == "" {
		return nil, agentsdk.InfraFail(CodeNoEndpoint, "No model endpoint configured")
	}
	if key == "" {
		return nil, agentsdk.InfraFail(CodeNoAPIKey, "No model API key configured")
	}
	opts := []option.RequestOption{option.WithBaseURL(APIBase(base)), option.WithAPIKey(key), option.WithMaxRetries(cfg.MaxRetries)}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	t := cfg.Timeout
	if t <= 0 {
		t = defaultTimeout
	}
	return &Client{c: openai.NewClient(opts...), model: cfg.Model, timeout: t}, nil
}

// APIBase applies the reference's base URL rule and returns the base the
// OpenAI client appends "chat/completions" to.
func APIBase(base string) string {
	base = strings.TrimRight(base, "/")
	if strings.HasSuffix(base, "/v1") {
		return base + "/"
	}
	return base + "/v1/"
}

// Complete runs one chat completion. Provider failures come back as a
// *agentsdk.Failure naming the kind of failure, never the provider's
// message; a cancelled ctx comes back as ctx's error.
func (c *Client) Complete(ctx context.Context, p openai.ChatCompletionNewParams) (*openai.ChatCompletion, error) {
	if p.Model == "" {
		p.Model = shared.ChatModel(c.model)
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.c.Chat.Completions.New(cctx, p)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, classify(err, cctx)
	}
	if len(resp.Choices) == 0 {
		return nil, agentsdk.Fail(CodeEmptyAnswer, "The model returned no choices")
	}
	return resp, nil
}

func classify(err error, cctx context.Context) *agentsdk.Failure {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		switch s := apiErr.StatusCode; {
		case s == http.StatusTooManyRequests:
			return agentsdk.Fail(CodeRateLimited, "The model provider is temporarily unavailable")
		case s == http.StatusUnauthorized || s == http.StatusForbidden:
			return agentsdk.Fail(CodeAuthFailed, "The model provider refused the API key")
		case s >= 400 && s < 500:
			return agentsdk.Fail(CodeBadRequest, "The model provider rejected the request")
		default:
			return agentsdk.Fail(CodeProviderErr, "The model provider failed")
		}
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || cctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
		return agentsdk.Fail(CodeTimeout, "The model provider did not answer in time")
	}
	return agentsdk.InfraFail(CodeUnreachable, "The model provider could not be reached")
}

// OpenAITools renders MCP tools as chat-completions function tools, under
// the given names (nil means each tool's own name; otherwise names[i] is
// tools[i]'s, and a length mismatch is an error).
func OpenAITools(tools []agentsdk.Tool, names []string) ([]openai.ChatCompletionToolUnionParam, error) {
	if names != nil && len(names) != len(tools) {
		return nil, fmt.Errorf("llm: %d names for %d tools", len(names), len(tools))
	}
	defs, err := agentsdk.ToolDefinitions(tools, agentsdk.APIOpenAIChat)
	if err != nil {
		return nil, err
	}
	out := make([]openai.ChatCompletionToolUnionParam, len(defs))
	for i, d := range defs {
		fn := d["function"].(map[string]any)
		name := tools[i].Name
		if names != nil {
			name = names[i]
		}
		def := shared.FunctionDefinitionParam{Name: name, Parameters: shared.FunctionParameters(fn["parameters"].(map[string]any))}
		if tools[i].Description != "" {
			def.Description = openai.String(tools[i].Description)
		}
		out[i] = openai.ChatCompletionFunctionTool(def)
	}
	return out, nil
}
