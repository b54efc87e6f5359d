package agents

import "github.com/corpsim/corpsim/org"

// purse is what the budgets a member's purchases are paid from have left,
// as its observation shows them and as the purchases it completes this
// turn draw them down: its team's (the observation's budget) and those of
// the other teams its tasks charge (a task's or a request's charges).
type purse struct {
	own    int64            // its team's; unlimited when it sees none
	others map[string]int64 // by team, made on the first task that charges another team
}

// unlimited is what a purse holds of a budget no observation shows.
const unlimited = 1 << 62

func newPurse(o org.Observation) purse {
	if o.Budget == nil {
		return purse{own: unlimited}
	}
	return purse{own: o.Budget.Remaining}
}

// left is what the budget charges names has left (the member's own when
// charges is nil).
func (p *purse) left(charges *org.BudgetView) int64 {
	if charges == nil {
		return p.own
	}
	if n, ok := p.others[charges.Team]; ok {
		return n
	}
	return charges.Remaining
}

// covers reports whether the budget charges names can pay a purchase of
// amount. Work that buys nothing needs no budget: a team whose hourly
// rates overran it may still complete and take such work (the
// within-budget rule reads purchases only).
func (p *purse) covers(charges *org.BudgetView, amount int64) bool {
	return amount <= 0 || amount <= p.left(charges)
}

// spend draws amount from the budget charges names.
func (p *purse) spend(charges *org.BudgetView, amount int64) {
	if charges == nil {
		p.own -= amount
		return
	}
	if p.others == nil {
		p.others = map[string]int64{}
	}
	p.others[charges.Team] = p.left(charges) - amount
}

// affords reports whether the budget a purchase of amount is paid from
// (charges, else the member's own) covers it as o shows it.
func affords(o org.Observation, charges *org.BudgetView, amount int64) bool {
	p := newPurse(o)
	return p.covers(charges, amount)
}
