package worlds

import (
	"fmt"
	"slices"
	"strings"
)

// DelegateLimit limits what a leave's delegate may approve for the member
// on leave (version 2). A step beyond it goes to the absent approver's
// manager instead; when there is none it waits for the approver's return.
type DelegateLimit struct {
	// Below: the delegate approves only amounts below it; 0 for any amount.
	Below int64
	// Chains: the delegate approves only steps of these chains; empty for
	// any chain.
	Chains []string
}

// Allows reports whether the delegate may approve a step of chain for amount.
// A nil limit allows everything.
func (l *DelegateLimit) Allows(chain string, amount int64) bool {
	if l == nil {
		return true
	}
	return (l.Below == 0 || amount < l.Below) && (len(l.Chains) == 0 || slices.Contains(l.Chains, chain))
}

// String describes the limit, as in "below 50000 on chains payouts".
func (l *DelegateLimit) String() string {
	var parts []string
	if l.Below > 0 {
		parts = append(parts, fmt.Sprintf("below %d", l.Below))
	}
	if len(l.Chains) > 0 {
		parts = append(parts, "on chains "+strings.Join(l.Chains, ", "))
	}
	return strings.Join(parts, " ")
}

// fileDelegateLimit is a leave's delegate_limit.
type fileDelegateLimit struct {
	Below  *int64   `yaml:"below"`
	Chains []string `yaml:"chains"`
}

// delegateLimits reads each leave's delegate_limit into w.Interruptions.
// A limit needs version 2 and a delegate; its chains must exist; an amount
// limit must be more than zero and must name (or, naming none, the world
// must have) a chain through which some task or ticket spends money.
func (v *validator) delegateLimits(f *file, w *World, r *refs) {
	spends := map[string]bool{} // chains some task or ticket template spends through
	for _, p := range w.Projects {
		for _, t := range p.Tasks {
			if t.Purchase > 0 && t.Chain != "" {
				spends[t.Chain] = true
			}
		}
	}
	for _, a := range w.Arrivals {
		if a.Ticket.Purchase.Kind != "" && a.Ticket.Chain != "" {
			spends[a.Ticket.Chain] = true
		}
	}
	for _, in := range w.Interruptions {
		if in.Ticket != nil && in.Ticket.Purchase.Kind != "" && in.Ticket.Chain != "" {
			spends[in.Ticket.Chain] = true
		}
	}
	// A case step needing approval has an amount: its chain's attribute or
	// its charge (the loader refuses one with neither).
	for _, c := range w.Cases {
		for _, st := range c.Steps {
			if st.Chain != "" {
				spends[st.Chain] = true
			}
		}
	}
	for i, in := range f.Interrupts {
		fl := in.DelegateLimit
		if fl == nil {
			continue
		}
		p := fmt.Sprintf("interruptions[%d].delegate_limit", i)
		if !v.needs(2, p, "delegate_limit") {
			continue
		}
		switch {
		case in.Kind != Leave:
			v.errf(p, "a delegate_limit limits a leave's delegate; this interruption is %q", in.Kind)
			continue
		case in.Delegate == "":
			v.errf(p, "a delegate_limit needs a delegate to limit")
			continue
		}
		lim := &DelegateLimit{}
		for j, c := range fl.Chains {
			cp := fmt.Sprintf("%s.chains[%d]", p, j)
			if !v.ref(cp, "approval chain", c, r.chains) {
				continue
			}
			if fl.Below != nil && !spends[c] {
				v.errf(cp, "a delegation limit on a chain that has no amount: no task, ticket or case step spends money or reads an amount through %q", c)
			}
			lim.Chains = append(lim.Chains, c)
		}
		if fl.Below != nil {
			switch {
			case *fl.Below <= 0:
				v.errf(p+".below", "a delegation limit must be more than zero, got %d", *fl.Below)
			case len(fl.Chains) == 0 && len(spends) == 0:
				v.errf(p+".below", "a delegation limit on a chain that has no amount: no task, ticket or case step spends money or reads an amount through any chain")
			default:
				lim.Below = *fl.Below
			}
		}
		if fl.Below == nil && len(fl.Chains) == 0 {
			v.errf(p, "an empty delegate_limit limits nothing: give below, chains or both")
		}
		if i < len(w.Interruptions) {
			w.Interruptions[i].DelegateLimit = lim
		}
	}
}
