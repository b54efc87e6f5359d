package org

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// listRequests shows a member's pending requests first (up to the listed
// limit), then its latest decided ones, in the order made, counting the
// rest; as requests are decided and made over a session, what it shows is
// what a scan of all of them would, and what a fresh state's view (a
// restore, whose lists start again) shows.
func TestListRequestsIsTheScan(t *testing.T) {
	const listed = 3
	rng := rand.New(rand.NewPCG(1, 2))
	s := &State{tasks: map[string]*Task{}, Limits: Limits{Listed: listed}}
	m := &Member{ID: "ana"}
	scan := func(all []*Request) (ids []string, more int) {
		var mine []*Request
		for _, r := range all {
			if r.Requester == m.ID {
				mine = append(mine, r)
			}
		}
		pending, decided := 0, 0
		for _, r := range mine {
			if r.Status == RequestPending {
				pending++
			} else {
				decided++
			}
		}
		showP := min(pending, listed)
		showD := min(decided, listed-showP)
		skipD := decided - showD
		for _, r := range mine {
			if r.Status == RequestPending {
				if showP > 0 {
					showP--
					ids = append(ids, r.ID)
				}
			} else if skipD > 0 {
				skipD--
			} else {
				ids = append(ids, r.ID)
			}
		}
		return ids, len(mine) - len(ids)
	}
	view := func(st *State) ([]string, int) {
		st.catchUp()
		var o Observation
		st.listRequests(&o, m)
		var ids []string
		for _, r := range o.Requests {
			ids = append(ids, r.ID)
		}
		return ids, o.RequestsMore
	}
	cut := 0
	for step := range 300 {
		if rng.IntN(3) > 0 { // a new request, of ana's or someone else's
			who := []string{"ana", "ana", "bo"}[rng.IntN(3)]
			s.Requests = append(s.Requests, &Request{ID: fmt.Sprintf("r%d", len(s.Requests)+1), Requester: who, Status: RequestPending})
		}
		for _, r := range s.Requests { // some pending ones are decided
			if r.Status == RequestPending && rng.IntN(4) == 0 {
				r.Status = RequestApproved
			}
		}
		want, wantMore := scan(s.Requests)
		got, more := view(s)
		if !slices.Equal(got, want) || more != wantMore {
			t.Fatalf("step %d: listed %v, %d more; the scan %v, %d more", step, got, more, want, wantMore)
		}
		fresh := &State{tasks: map[string]*Task{}, Limits: Limits{Listed: listed}, Requests: s.Requests}
		if got, more := view(fresh); !slices.Equal(got, want) || more != wantMore {
			t.Fatalf("step %d: a fresh state lists %v, %d more; the scan %v, %d more", step, got, more, want, wantMore)
		}
		if wantMore > 0 {
			cut++
		}
	}
	if cut == 0 || len(s.lists.mine[m.ID]) > 2*listed+10 {
		t.Fatalf("%d views cut, %d requests kept in the list: the test tests nothing, or the list keeps what it never shows", cut, len(s.lists.mine[m.ID]))
	}
}
