package pipesim

// This file keeps the books of a running simulation: what each stage and device holds
// (activations, weight versions), which weights each micro-batch uses, and when each
// mini-batch starts and ends. begin runs when a task starts, end when it ends; at one
// instant every end comes before every begin, so a release precedes an allocation (the
// validator's convention, planner/pipeline), and the peaks are taken once the instant is
// settled (settle): what a stage or device holds between two instants.

// units returns the micro-batches a task of kind B (or CB) covers.
func (s *sim) units() int64 {
	if s.minibatchUnits() {
		return int64(s.N)
	}
	return 1
}

// begin books the start of t.
func (s *sim) begin(t task) {
	st, u := int(t.stage), int(t.unit)
	switch t.kind {
	case kF:
		k := u / s.N
		if st == 0 {
			if u%s.N == 0 {
				s.mb[k].Start = s.now
			}
			s.assignVersion(u, k)
		}
		if s.o.Schedule == TwoBW {
			s.addRef(st, int(s.ver[u]))
		}
		keep := s.stored[st]
		if s.su.ckpt[st] {
			keep = s.input[st]
		}
		s.hold(st, keep, 1)
		s.transient(st, s.fExtra[st])
	case kB:
		s.transient(st, s.bExtra[st]*s.units())
		if s.su.ckpt[st] {
			s.hold(st, (s.stored[st]-s.input[st])*s.units(), 0)
		}
		if st == s.S-1 {
			k := u
			if !s.minibatchUnits() {
				k = u / s.N
			}
			if s.mb[k].BackwardStart < 0 {
				s.mb[k].BackwardStart = s.now
			}
			if s.minibatchUnits() { // the backward uses the newest complete update
				s.mb[k].BackwardVersion = int(s.cur[0])
			}
		}
	}
}

// end books the end of t, which ran on resource r from start.
func (s *sim) end(t task, start float64, r int) {
	st, u, S := int(t.stage), int(t.unit), s.S
	s.doneTasks++
	switch t.kind {
	case kF:
		s.fEnd[u*S+st] = s.now
		s.stageBusy[st] += s.now - start
		s.transient(st, -s.fExtra[st])
		k := u / s.N
		if st == S-1 {
			s.fLastCount[k]++
			s.mb[k].ForwardEnd = max(s.mb[k].ForwardEnd, s.now)
		}
		if s.o.Schedule == TiMePReSt { // no stashing: the version is needed for the forward only
			s.dropRef(st, int(s.ver[u]))
		}
		s.record(r, "F", t, start, s.now)
	case kB:
		s.bEnd[u*S+st] = s.now
		s.stageBusy[st] += s.now - start
		n := s.units()
		s.hold(st, -s.stored[st]*n, -int32(n))
		s.transient(st, -s.bExtra[st]*n)
		k := u
		if !s.minibatchUnits() {
			k = u / s.N
			s.dropRef(st, int(s.ver[u])) // the stashed version is no longer needed
		}
		s.bCount[k*S+st]++
		if int(s.bCount[k*S+st]) == s.N/int(n) {
			s.update(st, k)
			if st == 0 {
				s.mb[k].End = s.now
			}
		}
		if s.su.ckpt[st] && s.o.Record {
			mid := start + s.rDur[st]
			s.record(r, "R", t, start, mid)
			start = mid
		}
		s.record(r, "B", t, start, s.now)
	case kCF:
		s.cfEnd[u*S+st] = s.now
		s.record(r, "CF", t, start, s.now)
	case kCB:
		s.cbEnd[u*S+st] = s.now
		s.record(r, "CB", t, start, s.now)
	}
}

// record appends a span to the timeline when asked to.
func (s *sim) record(r int, kind string, t task, start, end float64) {
	if !s.o.Record {
		return
	}
	sp := Span{Resource: r, Kind: kind, Stage: int(t.stage), Start: start, End: end}
	if (t.kind == kB || t.kind == kCB) && s.minibatchUnits() {
		sp.Minibatch, sp.Microbatch = int(t.unit), -1
	} else {
		sp.Minibatch, sp.Microbatch = int(t.unit)/s.N, int(t.unit)%s.N
	}
	s.timeline = append(s.timeline, sp)
}

// hold adds bytes of activations (and n micro-batches) to stage st and its device.
func (s *sim) hold(st int, bytes int64, n int32) {
	s.act[st] += bytes
	s.inflight[st] += n
	s.dyn[s.su.stages[st].GPU] += bytes
	s.touch(st)
}

// transient adds bytes that an operation of stage st holds while it runs (its
// temporaries, Problem.Cost's FwdExtra and BwdExtra) to its device, not to the stage's
// activations.
func (s *sim) transient(st int, bytes int64) {
	if bytes == 0 {
		return
	}
	s.dyn[s.su.stages[st].GPU] += bytes
	s.touch(st)
}

// touch marks stage st for settle.
func (s *sim) touch(st int) {
	if !s.dirty[st] {
		s.dirty[st] = true
		s.dirtyList = append(s.dirtyList, int32(st))
	}
}

// settle takes the peaks of the stages touched at this instant and of their devices.
func (s *sim) settle() {
	for _, st32 := range s.dirtyList {
		st := int(st32)
		s.dirty[st] = false
		x := &s.stats[st]
		x.PeakInflight = max(x.PeakInflight, int(s.inflight[st]))
		x.PeakActivationBytes = max(x.PeakActivationBytes, s.act[st])
		s.setHeld(st)
	}
	for _, st := range s.dirtyList {
		d := s.su.stages[st].GPU
		s.dynPeak[d] = max(s.dynPeak[d], s.dyn[d])
		if s.o.Record && s.dyn[d] != s.lastDyn[d] {
			s.lastDyn[d] = s.dyn[d]
			s.memory = append(s.memory, MemorySample{Time: s.now, Device: d, Bytes: s.dyn[d]})
		}
	}
	s.dirtyList = s.dirtyList[:0]
}

// assignVersion gives micro-batch u of mini-batch k (0-based) the weights its forward
// uses, when its forward starts at the first stage. Every schedule but 2BW uses the newest
// update complete at the first stage (vertical sync: one version at every stage); 2BW uses
// the weights after k−1 updates (delay 1). Under vertical sync each stage keeps that
// version from now on, until the forward (TiMePReSt) or the backward (stashing) has used it.
func (s *sim) assignVersion(u, k int) {
	v := int(s.cur[0])
	if s.o.Schedule == TwoBW {
		v = max(0, k-1)
	}
	s.ver[u] = int32(v)
	if s.o.Schedule != TwoBW {
		for st := range s.S {
			s.addRef(st, v)
		}
	}
	if !s.minibatchUnits() {
		if s.mb[k].BackwardVersion < 0 || v < s.mb[k].BackwardVersion {
			s.mb[k].BackwardVersion = v // stashed: the backward uses the forward's weights
		}
	}
	s.mb[k].ForwardVersions = append(s.mb[k].ForwardVersions, v)
}

// update applies mini-batch k's update at stage st, whose last backward has just ended.
func (s *sim) update(st, k int) {
	if int(s.cur[st]) != k {
		panic("pipesim: internal error: updates out of order")
	}
	s.cur[st]++
	s.touch(st)
}

func (s *sim) addRef(st, v int) {
	i := st*(s.K+1) + v
	if s.ref[i] == 0 {
		s.distinct[st]++
	}
	s.ref[i]++
	s.touch(st)
}

func (s *sim) dropRef(st, v int) {
	i := st*(s.K+1) + v
	s.ref[i]--
	if s.ref[i] == 0 {
		s.distinct[st]--
	}
	s.touch(st)
}

// setHeld recounts the weight versions stage st holds: its newest, and every version a
// micro-batch still needs there. Each version beyond the first costs one more copy of the
// stage's weights on its device, except in a replayed plan, whose weight_copies count them.
func (s *sim) setHeld(st int) {
	held := s.distinct[st]
	if s.ref[st*(s.K+1)+int(s.cur[st])] == 0 {
		held++
	}
	if s.su.plan == nil && held != s.held[st] {
		s.dyn[s.su.stages[st].GPU] += int64(held-s.held[st]) * s.weights[st]
	}
	s.held[st] = held
	s.stats[st].WeightVersions = max(s.stats[st].WeightVersions, int(held))
}
