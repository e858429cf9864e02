package agentsdk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/agentenv/agentenv/protocol"
)

// Conversation snapshots (urn:agentenv:snapshot/v1): save a context's
// state to objects the caller grants, load it back into a context.

// Snapshot is a context's saved state.
type Snapshot struct {
	// Trajectory is the conversation (the object every portable snapshot
	// holds); its format is the agent's own, typically JSON.
	Trajectory []byte
	// Workspace is an optional archive of the agent's work folder; nil
	// when the agent keeps none.
	Workspace []byte
}

// Snapshotter is implemented by agents whose conversations can be saved
// and restored; the server then advertises the snapshot extension. The
// SDK moves the bytes (grants, size and digest checks); the agent only
// produces and consumes them.
type Snapshotter interface {
	// SaveSnapshot returns the state of contextID. An unknown context
	// returns an error wrapping ErrUnknownContext (answered 404).
	SaveSnapshot(ctx context.Context, contextID string) (*Snapshot, error)
	// LoadSnapshot restores s into targetContextID ("" = a new context of
	// the agent's choosing) and returns the context id to continue in.
	LoadSnapshot(ctx context.Context, s *Snapshot, targetContextID string) (string, error)
}

// ErrUnknownContext is returned by a Snapshotter for a context it has no
// state for.
var ErrUnknownContext = errors.New("agentsdk: unknown context")

// snapshotTransferTimeout bounds one object transfer (the reference's
// limit for calls moving objects).
const snapshotTransferTimeout = 600 * time.Second

// transferClient moves snapshot objects: no redirects (a grant names one
// place), no transparent decompression.
func transferClient() *http.Client {
	return &http.Client{Timeout: snapshotTransferTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (s *Server) snapshotExtension(sn Snapshotter) *extension {
	return &extension{
		uri:         protocol.URISnapshot,
		description: "Save a conversation's state to granted objects and load it back.",
		endpoint:    protocol.AgentSnapshotPath,
		methods: []*extMethod{
			{
				name: "save", verb: http.MethodPost,
				request:  fields([]string{"context_id", "objects"}, nil),
				response: fields([]string{"context_id", "objects"}, nil),
				handle: func(r *http.Request, body []byte) (any, error) {
					req, err := protocol.DecodeSnapshotSave(body)
					if err != nil {
						return nil, badRequest(err)
					}
					snap, err := sn.SaveSnapshot(r.Context(), req.ContextID)
					if errors.Is(err, ErrUnknownContext) {
						return nil, notFound("unknown context_id")
					}
					if err != nil {
						return nil, err
					}
					out := protocol.SnapshotSaveResponse{ContextID: req.ContextID, Objects: map[string]protocol.Uploaded{}}
					for name, data := range map[string][]byte{protocol.SnapshotTrajectory: snap.Trajectory, protocol.SnapshotWorkspace: snap.Workspace} {
						w, asked := req.Objects[name]
						if !asked || (data == nil && name == protocol.SnapshotWorkspace) {
							continue
						}
						up, err := upload(r.Context(), w, data)
						if err != nil {
							return nil, &httpError{http.StatusBadGateway, fmt.Sprintf("objects.%s: %v", name, err)}
						}
						out.Objects[name] = up
					}
					return out, nil
				},
			},
			{
				name: "load", verb: http.MethodPut,
				request:  fields([]string{"objects"}, []string{"target_context_id"}),
				response: fields([]string{"context_id"}, nil),
				handle: func(r *http.Request, body []byte) (any, error) {
					req, err := protocol.DecodeSnapshotLoad(body)
					if err != nil {
						return nil, badRequest(err)
					}
					snap := &Snapshot{}
					for name, o := range req.Objects {
						data, err := download(r.Context(), o)
						if err != nil {
							return nil, &httpError{http.StatusBadGateway, fmt.Sprintf("objects.%s: %v", name, err)}
						}
						if name == protocol.SnapshotTrajectory {
							snap.Trajectory = data
						} else {
							snap.Workspace = data
						}
					}
					id, err := sn.LoadSnapshot(r.Context(), snap, req.TargetContextID)
					if err != nil {
						return nil, err
					}
					return protocol.SnapshotLoadResponse{ContextID: id}, nil
				},
			},
		},
	}
}

// upload PUTs data through a write grant. Errors never carry the grant's
// URL or headers (they hold signatures).
func upload(ctx context.Context, w protocol.WriteObject, data []byte) (protocol.Uploaded, error) {
	if time.Now().After(w.Write.ExpiresAt) {
		return protocol.Uploaded{}, errors.New("the write grant has expired")
	}
	if int64(len(data)) > w.MaxBytes {
		return protocol.Uploaded{}, fmt.Errorf("%d bytes exceed max_bytes %d", len(data), w.MaxBytes)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, w.Write.URL, bytes.NewReader(data))
	if err != nil {
		return protocol.Uploaded{}, errors.New("invalid write grant url")
	}
	for k, v := range w.Write.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", w.MediaType)
	req.ContentLength = int64(len(data))
	resp, err := transferClient().Do(req)
	if err != nil {
		return protocol.Uploaded{}, errors.New("upload failed: the object store could not be reached")
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return protocol.Uploaded{}, fmt.Errorf("upload rejected with status %d", resp.StatusCode)
	}
	sum := sha256.Sum256(data)
	return protocol.Uploaded{SizeBytes: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}, nil
}

// download GETs an object through a read grant, enforcing max_bytes and
// the declared size and digest.
func download(ctx context.Context, o protocol.ReadObject) ([]byte, error) {
	if time.Now().After(o.Read.ExpiresAt) {
		return nil, errors.New("the read grant has expired")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.Read.URL, nil)
	if err != nil {
		return nil, errors.New("invalid read grant url")
	}
	for k, v := range o.Read.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := transferClient().Do(req)
	if err != nil {
		return nil, errors.New("download failed: the object store could not be reached")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download rejected with status %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, o.MaxBytes+1))
	if err != nil {
		return nil, errors.New("download interrupted")
	}
	if int64(len(data)) > o.MaxBytes {
		return nil, fmt.Errorf("object exceeds max_bytes %d", o.MaxBytes)
	}
	if o.SizeBytes != nil && *o.SizeBytes != int64(len(data)) {
		return nil, errors.New("integrity_mismatch: size is " + strconv.Itoa(len(data)))
	}
	if o.SHA256 != "" {
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != o.SHA256 {
			return nil, errors.New("integrity_mismatch: sha256 differs")
		}
	}
	return data, nil
}
