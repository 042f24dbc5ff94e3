package pipesim

import "fmt"

// policy is how a resource chooses its next task.
type policy uint8

const (
	fixedOrder policy = iota // the next task of order, once ready
	firstCome                // the oldest transfer queued (a link of one boundary and direction)
	dynamic                  // the schedule's choice among the ready tasks (TiMePReSt's devices)
)

// resource is a device (one task at a time) or a link (one transfer at a time).
type resource struct {
	name   string
	policy policy
	busy   bool
	cur    task
	start  float64
	order  []task
	fifo   []task
	next   int // into order or fifo
	wake   float64
	busyT  float64
}

// event is the end of the task running on resource res, or a wake-up of res (a paced
// forward's release time).
type event struct {
	t    float64
	seq  uint64
	res  int32
	wake bool
}

// Before orders events by (time, seq) for the event queue (minheap): at most one event per
// resource is pending, so it stays small.
func (e event) Before(f event) bool { return e.t < f.t || e.t == f.t && e.seq < f.seq }

func (s *sim) push(t float64, r int, wake bool) {
	s.seq++
	s.events.Push(event{t: t, seq: s.seq, res: int32(r), wake: wake})
}

// wakeAt asks for resource r to be dispatched again at time t.
func (s *sim) wakeAt(t float64, r int) {
	if s.res[r].wake != t {
		s.res[r].wake = t
		s.push(t, r, true)
	}
}

// mark asks for resource r to be dispatched at the current instant.
func (s *sim) mark(r int) {
	if !s.marked[r] {
		s.marked[r] = true
		s.markList = append(s.markList, int32(r))
	}
}

// enqueue hands transfer t to link l: queued on a first-come link, or waiting for its turn
// in a link's fixed order.
func (s *sim) enqueue(l int, t task) {
	if s.res[l].policy == firstCome {
		s.res[l].fifo = append(s.res[l].fifo, t)
	}
	s.mark(l)
}

// run is the event loop: at each instant every task ending then ends (releases before
// allocations), then every resource that may start something is dispatched, in index
// order. It returns an error when tasks remain that nothing can start (a deadlock: a
// plan's order that contradicts its dependencies).
func (s *sim) run() error {
	for r := range s.res {
		s.dispatch(r)
	}
	for s.events.Len() > 0 {
		s.now = s.events.Peek().t
		for s.events.Len() > 0 && s.events.Peek().t == s.now {
			e := s.events.Pop()
			r := int(e.res)
			if e.wake {
				if s.res[r].wake == e.t {
					s.res[r].wake = -1
				}
				s.mark(r)
				continue
			}
			res := &s.res[r]
			t := res.cur
			res.busy = false
			res.busyT += s.now - res.start
			s.end(t, res.start, r)
			s.mark(r)
			s.dependents(t)
		}
		// Starting a task marks nothing, so one pass dispatches every marked resource.
		list := append(s.scratch[:0], s.markList...)
		s.markList = s.markList[:0]
		for _, r := range sortSmall(list) {
			s.marked[r] = false
			s.dispatch(int(r))
		}
		s.scratch = list
		s.settle()
	}
	if s.doneTasks != s.totalTasks {
		return s.deadlock()
	}
	return nil
}

// sortSmall sorts a short list of resource indices in place (insertion sort: a handful
// per instant) and returns it.
func sortSmall(l []int32) []int32 {
	for i := 1; i < len(l); i++ {
		for j := i; j > 0 && l[j] < l[j-1]; j-- {
			l[j], l[j-1] = l[j-1], l[j]
		}
	}
	return l
}

// dispatch starts the next task of resource r when it is idle and that task is ready.
func (s *sim) dispatch(r int) {
	res := &s.res[r]
	if res.busy {
		return
	}
	var t task
	switch res.policy {
	case fixedOrder:
		if res.next >= len(res.order) || !s.ready(res.order[res.next], r) {
			return
		}
		t = res.order[res.next]
		res.next++
	case firstCome:
		if res.next >= len(res.fifo) {
			return
		}
		t = res.fifo[res.next]
		res.next++
		if res.next == len(res.fifo) { // reuse the queue's storage
			res.fifo, res.next = res.fifo[:0], 0
		}
	default:
		var ok bool
		if t, ok = s.pickTiMePReSt(r); !ok {
			return
		}
	}
	res.busy, res.cur, res.start = true, t, s.now
	s.begin(t)
	s.push(s.now+s.duration(t), r, false)
}

// deadlock describes what each resource waits for when tasks remain.
func (s *sim) deadlock() error {
	msg := fmt.Sprintf("%d of %d tasks never start:", s.totalTasks-s.doneTasks, s.totalTasks)
	shown := 0
	for r := range s.res {
		res := &s.res[r]
		if res.policy == fixedOrder && res.next < len(res.order) && shown < 4 {
			t := res.order[res.next]
			msg += fmt.Sprintf(" %s waits to run %s of stage %d, unit %d, whose inputs never come;", res.name, t.kind, t.stage, t.unit)
			shown++
		}
	}
	if s.su.plan != nil {
		return fmt.Errorf("%w: the plan's order of operations deadlocks: %s", errInvalidPlan, msg)
	}
	panic("pipesim: internal error: " + msg)
}
