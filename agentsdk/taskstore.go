package agentsdk

import (
	"context"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
)

// taskStore is a bounded in-memory A2A task store: a2a-go's default
// keeps every task forever. The least recently saved or read tasks are
// dropped past the limit (tasks/get then answers task not found). Tasks
// are deep-copied on the way in and out.
type taskStore struct{ tasks *lru[*a2a.Task] }

var _ a2asrv.TaskStore = (*taskStore)(nil)

func newTaskStore(max int) *taskStore { return &taskStore{tasks: newLRU[*a2a.Task](max)} }

func (s *taskStore) Save(_ context.Context, t *a2a.Task) error {
	c, err := deepCopyTask(t)
	if err != nil {
		return err
	}
	s.tasks.put(string(t.ID), c)
	return nil
}

func (s *taskStore) Get(_ context.Context, id a2a.TaskID) (*a2a.Task, error) {
	t, ok := s.tasks.get(string(id))
	if !ok {
		return nil, a2a.ErrTaskNotFound
	}
	return deepCopyTask(t)
}
