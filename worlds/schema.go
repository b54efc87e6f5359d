package worlds

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/invopop/jsonschema"
)

// Schema returns a JSON Schema (draft 2020-12) of the world-file format, as
// indented JSON ending in a newline. Editors use it to check and complete
// world files as they are typed:
//
//	os.WriteFile("corpsim-world.schema.json", worlds.Schema(), 0o644)
//
// The schema is reflected from the structs Load decodes into, so it has
// every field Load reads and no other; the constraints it adds (required
// fields, id and duration patterns, enumerations) are the ones Load checks.
// Cross-references (a task's role must be a defined role, no dependency
// cycles, max not below min) are beyond a schema: only Load reports those.
// The schema is a little stricter than Load in two ways: it wants a string
// where Load also takes a number or boolean (title: 2024), and it rejects
// an empty value (description:) that Load reads as absent.
//
// The result is the same bytes on every call and every platform. The caller
// owns the returned slice; Schema is safe for concurrent use.
func Schema() []byte { return bytes.Clone(schemaJSON()) }

var schemaJSON = sync.OnceValue(func() []byte {
	b, err := json.MarshalIndent(buildSchema(), "", "  ")
	if err != nil {
		panic("worlds: cannot encode the world-file schema: " + err.Error())
	}
	return append(b, '\n')
})

// Patterns the loader enforces, written in the subset of regular-expression
// syntax that Go's regexp and the ECMA-262 dialect of JSON Schema share.
var (
	// durationPattern is what clock.ParseDuration accepts: numbers, each with
	// an optional fraction, each followed by a unit.
	durationPattern = regexp.MustCompile(`^(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ms|s|m|h|d|w))+$`)
	// extraEffortPattern is a change interruption's extra effort: a
	// duration, optionally written with a leading "+".
	extraEffortPattern = regexp.MustCompile(`^\+?` + strings.TrimPrefix(durationPattern.String(), "^"))
	// hoursPattern is calendar.hours: two times of day as timeOfDay reads
	// them, joined by "-".
	hoursPattern = regexp.MustCompile(`^\s*([01]?[0-9]|2[0-3]):[0-5][0-9]\s*-\s*(([01]?[0-9]|2[0-3]):[0-5][0-9]|24:00)\s*$`)
	// datePattern is a holiday, read with the layout "2006-01-02".
	datePattern = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	// instantPattern is an RFC 3339 instant, as time.RFC3339 reads it.
	instantPattern = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`)
	// whenPattern is a time as when reads it: an offset (a duration) or,
	// from version 2, an RFC 3339 instant.
	whenPattern = regexp.MustCompile(`^(` + inner(durationPattern) + `|` + inner(instantPattern) + `)$`)
	// priorityKeyPattern is a key of a ticket template's priority weights.
	priorityKeyPattern = regexp.MustCompile(`^-?[0-9]+$`)
)

// A fieldSpec documents one field of a world file and constrains it beyond
// the type the reflector reads from the struct.
type fieldSpec struct {
	doc      string
	required bool                       // Load reports the field when it is missing
	apply    func(s *jsonschema.Schema) // nil: the reflected type says it all
}

// A typeSpec documents one mapping of a world file: the struct Load decodes
// it into, each of its fields by YAML name, and rules that tie fields together.
type typeSpec struct {
	doc    string
	fields map[string]fieldSpec
	extend func(s *jsonschema.Schema)
}

// Ways to constrain a field.

func id(s *jsonschema.Schema)       { s.Pattern = idPattern.String() }
func ids(s *jsonschema.Schema)      { id(s.Items) }
func duration(s *jsonschema.Schema) { s.Pattern = durationPattern.String() }
func offsets(s *jsonschema.Schema)  { when(s.Items) }
func when(s *jsonschema.Schema)     { s.Pattern = whenPattern.String() }

// inner is a pattern without its anchors, to be joined with others.
func inner(p *regexp.Regexp) string {
	return strings.TrimSuffix(strings.TrimPrefix(p.String(), "^"), "$")
}
func atLeast(n int) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Minimum = json.Number(fmt.Sprint(n)) }
}
func nonEmpty(s *jsonschema.Schema) { s.MinItems = ptr[uint64](1) }
func oneOf(values ...string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Enum = oneOfValues(values) }
}
func oneOfValues(values []string) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}
func both(fs ...func(*jsonschema.Schema)) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		for _, f := range fs {
			f(s)
		}
	}
}
func defaults(v any) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Default = v }
}

func ptr[T any](v T) *T { return &v }

// weekdayNames lists the loader's weekday names from Monday to Sunday.
func weekdayNames() []string {
	var out []string
	for d := range 7 {
		wd := time.Weekday((d + 1) % 7)
		for _, name := range slices.Sorted(maps.Keys(weekdays)) {
			if weekdays[name] == wd {
				out = append(out, name)
			}
		}
	}
	return out
}

// weekday is a weekday name as the loader reads it: editors offer the
// lower-case names, and any case is accepted.
func weekday(s *jsonschema.Schema) {
	var alts []string
	for _, name := range weekdayNames() {
		var b strings.Builder
		for _, c := range name {
			fmt.Fprintf(&b, "[%c%c]", unicode.ToUpper(c), c)
		}
		alts = append(alts, b.String())
	}
	s.AnyOf = []*jsonschema.Schema{
		{Enum: oneOfValues(weekdayNames())},
		{Pattern: "^(" + strings.Join(alts, "|") + ")$"},
	}
}

// whenConst is a condition on one field's value, for if/then rules.
func whenConst(field, value string) *jsonschema.Schema {
	props := jsonschema.NewProperties()
	props.Set(field, &jsonschema.Schema{Const: value})
	return &jsonschema.Schema{Properties: props, Required: []string{field}}
}

func requires(fields ...string) *jsonschema.Schema { return &jsonschema.Schema{Required: fields} }

// specs describes every struct a world file is decoded into, keyed by
// type and then by YAML field name. Every field must have an entry and
// every entry must name a field (TestSchemaMatchesStructs checks).
var specs = map[reflect.Type]typeSpec{
	reflect.TypeFor[file](): {
		doc: "A corpsim world: an organization (calendar, roles, teams, members, work queues, approval chains), " +
			"the work it must do (projects, ticket arrivals, interruptions) and how a session is scored.",
		fields: map[string]fieldSpec{
			"version": {doc: fmt.Sprintf("World-file format version. This corpsim reads versions 1 to %d; constructs added in a later version are refused in an earlier file.", Version), required: true,
				apply: func(s *jsonschema.Schema) { s.Minimum = json.Number("1"); s.Maximum = json.Number(fmt.Sprint(Version)) }},
			"name":        {doc: "Short name of the world, shown in listings and logs.", required: true},
			"description": {doc: "One sentence saying what the world exercises."},
			"start": {doc: "The instant the session starts (simulated time 0), in RFC 3339 with an explicit offset, such as 2026-01-05T09:00:00Z. " +
				"Its offset is the time zone of the calendar, unless calendar.timezone names one (version 2).", required: true,
				apply: func(s *jsonschema.Schema) { s.Format = "date-time"; s.Pattern = instantPattern.String() }},
			"horizon": {doc: "How long the session runs, in working time from the start, such as 15d. " +
				"Units: w (5 working days), d (one working day), h, m, s, ms. " +
				"From version 2 also an RFC 3339 instant, such as 2026-01-26T17:00:00Z.", required: true, apply: when},
			"dispatch": {doc: "Which agent seats are asked when work becomes available (a ticket arrives, a task's dependencies are done, a project starts). " +
				"all (the default): every idle seat that may take it; they compete and the first in member order wins. " +
				"one: one idle seat at a time, taking turns by member order within each role; a seat that passes hands the offer on to the next.",
				apply: func(s *jsonschema.Schema) { s.Enum = []any{DispatchAll, DispatchOne} }},
			"calendar":      {doc: "Working hours, working days and holidays. Omitted: 09:00-17:00, Monday to Friday, no holidays."},
			"roles":         {doc: "The roles members hold. Tasks, queues and approval steps name roles."},
			"teams":         {doc: "The teams members and projects belong to; each has a budget."},
			"members":       {doc: "The people: agent seats, and NPCs (members with an npc section) that the simulation plays."},
			"queues":        {doc: "Work queues that project tasks and tickets wait in until a member claims them."},
			"approvals":     {doc: "Approval chains that purchases must pass, step by step, by amount."},
			"projects":      {doc: "Projects: tasks with dependencies and a deadline, worth a bonus when all are done in time."},
			"arrivals":      {doc: "Processes that bring new tickets into queues during the session."},
			"interruptions": {doc: "Things that happen to the company at set times: reprioritization, leave, outages, changed requirements, urgent tickets."},
			"scoring":       {doc: "How a session is scored. Omitted fields take their defaults."},
			"cases":         {doc: "Version 2: case templates. A case is arriving work with its own workflow: steps with roles, efforts and dependencies, attributes drawn per case, optional steps, a deadline and an SLA."},
			"separation":    {doc: "Version 2: separation-of-duties rules over the steps of a case."},
			"costs":         {doc: "Version 2: the working time each action takes the member who does it. Omitted actions keep their defaults."},
			"message_latency": {doc: "Version 2: how long a message takes to arrive, in working time. Default 10m.",
				apply: both(duration, defaults("10m"))},
		},
	},
	reflect.TypeFor[fileCosts](): {
		doc: "Action costs in working time (version 2). NPCs' bookkeeping takes no time.",
		fields: map[string]fieldSpec{
			"turn":             {doc: "Every turn takes at least this long; more than zero. Default 1m.", apply: both(duration, defaults("1m"))},
			"claim":            {doc: "Claiming a task or ticket. Default 5m.", apply: both(duration, defaults("5m"))},
			"work":             {doc: "How long a work action without for lasts (at most the effort left); more than zero. Default 2h.", apply: both(duration, defaults("2h"))},
			"complete":         {doc: "Marking a task done. Default 15m.", apply: both(duration, defaults("15m"))},
			"request_approval": {doc: "Asking for a purchase's approval. Default 10m.", apply: both(duration, defaults("10m"))},
			"decide":           {doc: "Approving or rejecting a request. Default 10m.", apply: both(duration, defaults("10m"))},
			"message":          {doc: "Sending a message (its delivery takes message_latency more). Default 5m.", apply: both(duration, defaults("5m"))},
			"handoff":          {doc: "Handing a task back to its queue or to a colleague. Default 5m.", apply: both(duration, defaults("5m"))},
			"escalate":         {doc: "Escalating a pending request. Default 5m.", apply: both(duration, defaults("5m"))},
		},
	},
	reflect.TypeFor[fileCalendar](): {
		doc: "The business calendar. Durations in the file are working time on this calendar.",
		fields: map[string]fieldSpec{
			"hours": {doc: "Working hours on a working day, such as \"09:00-17:00\"; \"00:00-24:00\" for the whole day. " +
				"The length of this day is the unit d.",
				apply: both(defaults("09:00-17:00"), func(s *jsonschema.Schema) { s.Pattern = hoursPattern.String() })},
			"workdays": {doc: "Working days, such as [mon, tue, wed, thu, fri] (the default). Case does not matter.",
				apply: func(s *jsonschema.Schema) { weekday(s.Items) }},
			"holidays": {doc: "Dates that are not working days, such as [\"2026-01-19\"].",
				apply: func(s *jsonschema.Schema) { s.Items.Format = "date"; s.Items.Pattern = datePattern.String() }},
			"timezone": {doc: "Version 2. The IANA time zone the hours, days and holidays are read in, such as Europe/Warsaw. " +
				"Omitted: the offset of start (the company's calendar) or the company's zone (a team's)."},
		},
	},
	reflect.TypeFor[fileRole](): {
		doc: "A role members hold.",
		fields: map[string]fieldSpec{
			"id":    {doc: "The role's id: lower-case letters, digits, '-' and '_'.", required: true, apply: id},
			"title": {doc: "The role's title, shown to agents."},
			"rate":  {doc: "Cost of one working hour, charged to the team's budget.", apply: atLeast(0)},
		},
	},
	reflect.TypeFor[fileTeam](): {
		doc: "A team.",
		fields: map[string]fieldSpec{
			"id":     {doc: "The team's id: lower-case letters, digits, '-' and '_'.", required: true, apply: id},
			"name":   {doc: "The team's name, shown to agents."},
			"budget": {doc: "Money the team may spend on purchases and working hours.", apply: atLeast(0)},
			"calendar": {doc: "Version 2. The team's own calendar for its members (hours may cross midnight, such as \"22:00-06:00\"). " +
				"Fields it omits are the company calendar's."},
			"shifts": {doc: "Version 2. The team's shift rota: a member on a shift works, and is asked to decide, only in its shift's hours."},
			"coverage": {doc: "Version 2. 24/7 asserts that the rota serves each queue the team's members serve at every hour of the week; a gap is refused.",
				apply: oneOf(Coverage247)},
			"rotate": {doc: "Version 2. weekly: the shifts' member lists rotate every week (Monday to Sunday on the team's clock): in the k-th week of the session the members listed on shift i work shift i+k (wrapping). A member is on one list.",
				apply: oneOf(RotateWeekly)},
			"handover": {doc: "Version 2. required: a member holding a claimed or in-progress item when its shift (or working day) ends commits a policy violation (rule handover); hand it over to the next shift first. optional (the default): work waits for its holder.",
				apply: oneOf(HandoverRequired, HandoverOptional)},
		},
	},
	reflect.TypeFor[fileShift](): {
		doc: "A shift of a team's rota (version 2).",
		fields: map[string]fieldSpec{
			"id": {doc: "The shift's id: lower-case letters, digits, '-' and '_'.", required: true, apply: id},
			"hours": {doc: "The shift's hours, such as \"06:00-14:00\"; a shift may cross midnight (\"22:00-06:00\" ends the next day).", required: true,
				apply: func(s *jsonschema.Schema) { s.Pattern = hoursPattern.String() }},
			"days": {doc: "The weekdays the shift starts on. Omitted: every day.",
				apply: func(s *jsonschema.Schema) { weekday(s.Items) }},
			"members": {doc: "The ids of the team's members who work the shift.", required: true, apply: both(ids, nonEmpty)},
		},
	},
	reflect.TypeFor[fileMember](): {
		doc: "A member of the company: an agent seat, or an NPC when it has an npc section.",
		fields: map[string]fieldSpec{
			"id":      {doc: "The member's id: lower-case letters, digits, '-' and '_'.", required: true, apply: id},
			"name":    {doc: "The member's name, shown to others."},
			"role":    {doc: "The id of the role the member holds.", required: true, apply: id},
			"team":    {doc: "The id of the team the member belongs to.", required: true, apply: id},
			"manager": {doc: "The id of the member this one reports to. Reporting lines must not loop.", apply: id},
			"skills":  {doc: "Skills the member has; tasks and tickets that name a skill need a member who has it."},
			"npc":     {doc: "Makes the member an NPC played by the simulation rather than an agent seat."},
		},
	},
	reflect.TypeFor[fileNPC](): {
		doc: "How an NPC behaves.",
		fields: map[string]fieldSpec{
			"reply":  {doc: "How long the NPC takes to answer a message or decide an approval, in working time.", required: true},
			"serves": {doc: "Ids of queues the NPC works as a server, taking items itself.", apply: ids},
			"knows":  {doc: "Topics the NPC can tell about when asked, each with its answer. A task's info names one of these."},
			"absent": {doc: "Windows of working time when the NPC is away."},
		},
	},
	reflect.TypeFor[fileRange](): {
		doc: "A range of durations; each draw is uniform between min and max.",
		fields: map[string]fieldSpec{
			"min": {doc: "The shortest duration, such as 30m.", required: true, apply: duration},
			"max": {doc: "The longest duration, such as 3h; not less than min.", required: true, apply: duration},
		},
	},
	reflect.TypeFor[fileWindow](): {
		doc: "A window of working time.",
		fields: map[string]fieldSpec{
			"from": {doc: "When the window opens, in working time from the start, such as 6d, or (version 2) an RFC 3339 instant.", required: true, apply: when},
			"for":  {doc: "How long the window lasts, in working time, such as 1d.", required: true, apply: duration},
		},
	},
	reflect.TypeFor[fileQueue](): {
		doc: "A work queue.",
		fields: map[string]fieldSpec{
			"id":        {doc: "The queue's id: lower-case letters, digits, '-' and '_'.", required: true, apply: id},
			"served_by": {doc: "Ids of the roles whose members may claim items from the queue.", required: true, apply: both(ids, nonEmpty)},
			"order": {doc: "The order items are offered in: fifo (oldest first) or priority (highest priority first, then oldest).",
				apply: both(oneOf("fifo", "priority"), defaults("fifo"))},
			"wip": {doc: "The most items claimed and not done at once; 0 for no limit. A queue with a limit takes claims of ready work only (its dependencies done).", apply: atLeast(0)},
		},
	},
	reflect.TypeFor[fileChain](): {
		doc: "An approval chain: the steps a purchase passes, in order.",
		fields: map[string]fieldSpec{
			"id":    {doc: "The chain's id: lower-case letters, digits, '-' and '_'.", required: true, apply: id},
			"steps": {doc: "The steps, in order.", required: true, apply: nonEmpty},
		},
	},
	reflect.TypeFor[fileStep](): {
		doc: "One step of an approval chain.",
		fields: map[string]fieldSpec{
			"role":           {doc: "The id of the role that decides this step; some member must hold it.", required: true, apply: id},
			"above":          {doc: "The step applies only to purchases above this amount.", apply: atLeast(0)},
			"escalate_after": {doc: "Working time after which an undecided request goes to the approver's manager, such as 2h.", apply: duration},
		},
	},
	reflect.TypeFor[fileProject](): {
		doc: "A project: tasks with dependencies and a deadline.",
		fields: map[string]fieldSpec{
			"id":       {doc: "The project's id: lower-case letters, digits, '-' and '_'.", required: true, apply: id},
			"title":    {doc: "The project's title, shown to agents."},
			"team":     {doc: "The id of the team that owns the project.", required: true, apply: id},
			"queue":    {doc: "The id of the queue the project's tasks wait in.", required: true, apply: id},
			"value":    {doc: "Bonus scored when every task is done by the deadline."},
			"deadline": {doc: "The deadline, in working time from the start, such as 12d, or (version 2) an RFC 3339 instant.", required: true, apply: when},
			"start":    {doc: "The project's tasks appear this far into the session, in working time, or (version 2) at an RFC 3339 instant; before the deadline.", apply: when},
			"tasks":    {doc: "The project's tasks.", required: true, apply: nonEmpty},
		},
	},
	reflect.TypeFor[fileTask](): {
		doc: "A task of a project.",
		fields: map[string]fieldSpec{
			"id":    {doc: "The task's id, unique across all projects: lower-case letters, digits, '-' and '_'.", required: true, apply: id},
			"title": {doc: "The task's title, shown to agents."},
			"role": {doc: "The id of the role that does the task; it must serve the project's queue and be held by an agent seat.",
				required: true, apply: id},
			"effort": {doc: "Working time the task takes, such as 2h or 3d.", required: true, apply: duration},
			"deps":   {doc: "Ids of tasks (in any project) that must be done first. Dependencies must not loop.", apply: ids},
			"value":  {doc: "Score for doing the task. Omitted: the effort in hours."},
			"purchase": {doc: "Amount the task spends, charged to the team's budget after approval. 0 for none.",
				apply: atLeast(0)},
			"approval": {doc: "The id of the approval chain the purchase passes. May be omitted when there is one chain.", apply: id},
			"skill":    {doc: "A skill the member doing the task must have."},
			"priority": {doc: "Priority in a priority queue: higher goes first."},
			"info":     {doc: "Information the task needs that only one NPC holds and gives when asked."},
		},
	},
	reflect.TypeFor[fileInfo](): {
		doc: "Information held by one NPC, given when asked about a topic.",
		fields: map[string]fieldSpec{
			"from":  {doc: "The id of the NPC who holds the information.", required: true, apply: id},
			"topic": {doc: "The topic to ask about; one of the NPC's npc.knows.", required: true},
		},
	},
	reflect.TypeFor[fileScoring](): {
		doc: "How a session is scored.",
		fields: map[string]fieldSpec{
			"late_half_life": {doc: "A late task's value halves every this much working time past the deadline. Default 5d.",
				apply: both(duration, defaults("5d"))},
			"violation_penalty": {doc: "Points lost per attempted policy violation. Default 1.", apply: defaults(1)},
			"sla_penalty":       {doc: "Points lost per ticket still open when its SLA passed. Default 1.", apply: defaults(1)},
			"budget_penalty":    {doc: "Points lost per unit of money spent beyond a team's budget. Default 0.01.", apply: defaults(0.01)},
			"wrong_penalty": {doc: "Points lost per case step completed with its outcome unmet (a wrong outcome), on top of the value it does not earn: what a guess costs. Default 0.",
				apply: defaults(0)},
		},
	},
	reflect.TypeFor[fileArrival](): {
		doc: "A process that brings new tickets into a queue. Gaps are working time; --load scales them.",
		fields: map[string]fieldSpec{
			"id":    {doc: "The process's id: lower-case letters, digits, '-' and '_'.", required: true, apply: id},
			"queue": {doc: "The id of the queue the tickets arrive in. Not with case (a case goes to its template's queue).", apply: id},
			"process": {doc: "poisson: random gaps with mean every; scheduled: every exactly, or at the instants in at; bursty: burst tickets at once, every apart.",
				required: true, apply: oneOf("poisson", "scheduled", "bursty")},
			"every":  {doc: "poisson: the mean gap; scheduled: the gap; bursty: the gap between bursts. Such as 12m.", apply: duration},
			"burst":  {doc: "bursty: tickets per burst."},
			"at":     {doc: "scheduled: instants (working time from the start, or from version 2 RFC 3339 instants) instead of every, such as [1d, 2d4h].", apply: offsets},
			"start":  {doc: "When the first ticket may arrive, in working time from the start, or (version 2) an RFC 3339 instant.", apply: when},
			"until":  {doc: "When arrivals stop, in working time from the start, or (version 2) an RFC 3339 instant. Omitted: the horizon.", apply: when},
			"count":  {doc: "Stop after this many tickets (before load scaling); leave it out for no limit.", apply: atLeast(1)},
			"ticket": {doc: "The tickets the process brings. Required unless case is given."},
			"case":   {doc: "Version 2: the id of the case template whose cases the process opens, instead of tickets.", apply: id},
		},
		extend: func(s *jsonschema.Schema) {
			bursty := requires("every", "burst")
			bursty.Properties = jsonschema.NewProperties()
			bursty.Properties.Set("burst", &jsonschema.Schema{Minimum: "1"})
			atList := requires("at")
			atList.Properties = jsonschema.NewProperties()
			atList.Properties.Set("at", &jsonschema.Schema{MinItems: ptr[uint64](1)})
			s.AllOf = append(s.AllOf,
				&jsonschema.Schema{OneOf: []*jsonschema.Schema{requires("ticket", "queue"), requires("case")}},
				&jsonschema.Schema{If: whenConst("process", "poisson"), Then: requires("every")},
				&jsonschema.Schema{If: whenConst("process", "bursty"), Then: bursty},
				// Either every or a non-empty at, not both.
				&jsonschema.Schema{If: whenConst("process", "scheduled"), Then: &jsonschema.Schema{OneOf: []*jsonschema.Schema{requires("every"), atList}}},
			)
		},
	},
	reflect.TypeFor[fileTemplate](): {
		doc: "The tickets an arrival process or an urgent interruption brings.",
		fields: map[string]fieldSpec{
			"title":  {doc: "The tickets' title, shown to agents.", apply: defaults("ticket")},
			"role":   {doc: "The id of the role that works the tickets; it must serve the queue.", required: true, apply: id},
			"skill":  {doc: "A skill the member working a ticket must have."},
			"team":   {doc: "The id of the team the tickets belong to, whose budget pays for them. Omitted: the team of a member serving the queue.", apply: id},
			"effort": {doc: "Working time a ticket takes.", required: true},
			"value":  {doc: "Score for resolving a ticket. Omitted: the mean effort in hours."},
			"sla": {doc: "Working time within which a ticket should be resolved, such as 4h; " +
				"from version 2 also per priority, such as {1: 1d, 2: 4h, 3: 1h}, with an entry for every priority tickets can get."},
			"priority": {doc: "Weights of the priorities tickets get, such as {1: 70, 2: 25, 3: 5}: priority -> weight.",
				apply: func(s *jsonschema.Schema) {
					s.PatternProperties = map[string]*jsonschema.Schema{
						priorityKeyPattern.String(): {Type: "integer", Minimum: "0"},
					}
				}},
			"purchase": {doc: "Amount a ticket spends, after approval."},
			"approval": {doc: "The id of the approval chain purchases pass. May be omitted when there is one chain.", apply: id},
			"info":     {doc: "Information a ticket needs that only one NPC holds and gives when asked."},
		},
	},
	reflect.TypeFor[fileDelegateLimit](): {
		doc: "A limit on what a leave's delegate may approve (version 2): below an amount, on some chains, or both.",
		fields: map[string]fieldSpec{
			"below":  {doc: "The delegate approves only amounts below this; more than zero.", apply: atLeast(1)},
			"chains": {doc: "Ids of the approval chains whose steps the delegate may approve; omitted: any chain.", apply: both(ids, nonEmpty)},
		},
	},
	reflect.TypeFor[fileInterruption](): {
		doc: "Something that happens to the company at a set time.",
		fields: map[string]fieldSpec{
			"at": {doc: "When it happens, in working time from the start, such as 3d, or (version 2) an RFC 3339 instant such as 2026-02-17T09:00:00Z; " +
				"an instant outside working hours means the next working moment.", required: true, apply: when},
			"kind": {doc: "reprioritize: a task gets a new value or priority; leave: a member is away (and may delegate); " +
				"outage: a queue stops; change: a task needs more effort; urgent: an urgent ticket arrives.",
				required: true, apply: oneOf(Reprioritize, Leave, Outage, Change, Urgent)},
			"task":     {doc: "reprioritize, change: the id of the task.", apply: id},
			"member":   {doc: "leave: the id of the member who is away.", apply: id},
			"delegate": {doc: "leave: the id of the member who acts for them meanwhile.", apply: id},
			"queue":    {doc: "outage: the id of the queue that stops; urgent: the queue the ticket arrives in.", apply: id},
			"for":      {doc: "leave, outage: how long, in working time.", apply: duration},
			"value":    {doc: "reprioritize: the task's new value."},
			"priority": {doc: "reprioritize: the task's new priority; urgent: the ticket's priority."},
			"effort": {doc: "change: the extra effort, such as +2d.",
				apply: func(s *jsonschema.Schema) { s.Pattern = extraEffortPattern.String() }},
			"note":           {doc: "What agents are told happened: once it has happened, every observation lists it under news (the latest five), and the interruption's event records it (an urgent ticket's task.created does not)."},
			"ticket":         {doc: "urgent: the ticket that arrives."},
			"delegate_limit": {doc: "leave (version 2): what the delegate may approve meanwhile. A step beyond it goes to the absent member's manager; with no manager it waits for the member's return."},
		},
		extend: func(s *jsonschema.Schema) {
			s.AllOf = append(s.AllOf,
				&jsonschema.Schema{If: whenConst("kind", Reprioritize), Then: &jsonschema.Schema{
					Required: []string{"task"}, AnyOf: []*jsonschema.Schema{requires("value"), requires("priority")}}},
				&jsonschema.Schema{If: whenConst("kind", Leave), Then: requires("member", "for")},
				&jsonschema.Schema{If: whenConst("kind", Outage), Then: requires("queue", "for")},
				&jsonschema.Schema{If: whenConst("kind", Change), Then: requires("task", "effort")},
				&jsonschema.Schema{If: whenConst("kind", Urgent), Then: requires("queue", "ticket")},
			)
		},
	},
}

// distSchema is a fileDist: a duration, or a mapping with mean or with min and max.
func distSchema() *jsonschema.Schema {
	dur := func(doc string) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "string", Pattern: durationPattern.String(), Description: doc}
	}
	mean := jsonschema.NewProperties()
	mean.Set("mean", dur("The mean duration; draws are exponential."))
	uniform := jsonschema.NewProperties()
	uniform.Set("min", dur("The shortest duration; draws are uniform."))
	uniform.Set("max", dur("The longest duration; not less than min."))
	return &jsonschema.Schema{
		Description: "A duration such as 2h (fixed), {mean: 2h} (exponential) or {min: 1h, max: 3h} (uniform).",
		OneOf: []*jsonschema.Schema{
			dur("A fixed duration, such as 2h."),
			{Type: "object", Properties: mean, Required: []string{"mean"}, AdditionalProperties: jsonschema.FalseSchema},
			{Type: "object", Properties: uniform, Required: []string{"min", "max"}, AdditionalProperties: jsonschema.FalseSchema},
		},
	}
}

// slaSchema is a fileSLA: a duration, or a mapping of priority to duration.
func slaSchema() *jsonschema.Schema {
	dur := &jsonschema.Schema{Type: "string", Pattern: durationPattern.String()}
	return &jsonschema.Schema{
		Description: "A duration such as 4h, or (version 2) a mapping of priority to duration such as {1: 1d, 2: 4h, 3: 1h}.",
		OneOf: []*jsonschema.Schema{
			{Type: "string", Pattern: durationPattern.String(), Description: "The SLA of every ticket, such as 4h."},
			{Type: "object", Description: "The SLA of each priority.", MinProperties: ptr[uint64](1),
				PatternProperties: map[string]*jsonschema.Schema{priorityKeyPattern.String(): dur}, AdditionalProperties: jsonschema.FalseSchema},
		},
	}
}

// amountDistSchema is a fileAmountDist: an amount, or a mapping with mean or with min and max.
func amountDistSchema() *jsonschema.Schema {
	amount := func(doc, min string) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "integer", Minimum: json.Number(min), Description: doc}
	}
	mean := jsonschema.NewProperties()
	mean.Set("mean", amount("The mean amount; draws are exponential.", "1"))
	uniform := jsonschema.NewProperties()
	uniform.Set("min", amount("The smallest amount; draws are uniform.", "0"))
	uniform.Set("max", amount("The largest amount; not less than min.", "1"))
	return &jsonschema.Schema{
		Description: "An amount such as 3000 (fixed), {mean: 2000} (exponential) or {min: 100, max: 9000} (uniform).",
		OneOf: []*jsonschema.Schema{
			amount("A fixed amount, such as 3000.", "1"),
			{Type: "object", Properties: mean, Required: []string{"mean"}, AdditionalProperties: jsonschema.FalseSchema},
			{Type: "object", Properties: uniform, Required: []string{"min", "max"}, AdditionalProperties: jsonschema.FalseSchema},
		},
	}
}

// defName is the name under $defs of a struct of the file format:
// fileCalendar is "calendar", fileNPC is "npc".
func defName(t reflect.Type) string {
	n := strings.TrimPrefix(t.Name(), "file")
	if n == strings.ToUpper(n) {
		return strings.ToLower(n)
	}
	return strings.ToLower(n[:1]) + n[1:]
}

// buildSchema reflects the file structs into a schema and applies specs.
func buildSchema() *jsonschema.Schema {
	r := &jsonschema.Reflector{
		FieldNameTag:               "yaml",
		Anonymous:                  true, // no $id: the schema is a file on the user's disk
		ExpandedStruct:             true, // the world file is the root, not a $ref
		RequiredFromJSONSchemaTags: true, // required comes from specs, not from yaml tags
		Namer:                      defName,
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			switch t {
			case reflect.TypeFor[fileDist]():
				return distSchema()
			case reflect.TypeFor[fileAmountDist]():
				return amountDistSchema()
			case reflect.TypeFor[fileSLA]():
				return slaSchema()
			}
			if m, ok := mappers[t]; ok {
				return m()
			}
			return nil
		},
	}
	root := r.Reflect(&file{})
	root.Title = "corpsim world file"
	root.Comments = fmt.Sprintf("World-file format version %d. Generated by `corpsim worlds schema`; do not edit.", Version)
	for t, ts := range specs { // order: each spec changes only its own type's definition
		s := root
		if t != reflect.TypeFor[file]() {
			s = root.Definitions[defName(t)]
		}
		if s != nil && s.Properties != nil {
			applySpec(s, ts)
		}
	}
	return root
}

// applySpec documents and constrains the properties of s. A property
// without a spec keeps its reflected type and goes undocumented, and a spec
// without a property is ignored: TestSchemaMatchesStructs reports both, so
// that a field added to a struct cannot go unnoticed, without the command
// failing meanwhile.
func applySpec(s *jsonschema.Schema, ts typeSpec) {
	s.Description = ts.doc
	s.Required = nil
	for name, prop := range s.Properties.FromOldest() {
		fs := ts.fields[name]
		prop.Description = fs.doc
		if fs.apply != nil {
			fs.apply(prop)
		}
		if fs.required {
			s.Required = append(s.Required, name)
		}
	}
	if ts.extend != nil {
		ts.extend(s)
	}
}
