package station

import (
	"context"
	"errors"
	"fmt"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/store"
)

// notInstalledError is returned when a call names a module that is not
// installed. It matches store.ErrNotFound.
type notInstalledError struct{ id string }

func (e notInstalledError) Error() string {
	return fmt.Sprintf("module %s is not installed (station module list shows what is)", e.id)
}

func (e notInstalledError) Is(target error) bool { return target == store.ErrNotFound }

// Reload drops this process's warm copy of module id, if it has one, so that
// the next call loads the module from the store again, checking its approval
// and digest afresh. Calls in flight finish under the old copy. A daemon is
// asked to do this when another process installed, upgraded or removed the
// module. What the advisory gate knows is looked up afresh too
// (AdvisoriesChanged): the other process may have changed the module's
// version, its origin or the operator's allowances.
func (s *Station) Reload(ctx context.Context, id string) error {
	s.AdvisoriesChanged()
	unlock := s.lockModule(id)
	defer unlock()
	if err := s.Host.Unload(ctx, id); err != nil && !errors.Is(err, host.ErrUnknownModule) {
		return err
	}
	return nil
}
