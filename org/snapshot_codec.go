package org

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"

	"github.com/corpsim/corpsim/events/payload/fastjson"
	"github.com/corpsim/corpsim/worlds"
)

// appendTasks encodes tasks as encoding/json does, without reflection:
// a long session's snapshot (a checkpoint, the state hash) is mostly its
// tasks. ok is false when a task holds what only encoding/json may say
// (a non-finite figure, which it refuses).
func appendTasks(dst []byte, tasks []*Task) ([]byte, bool) {
	if tasks == nil {
		return append(dst, "null"...), true
	}
	dst = append(dst, '[')
	for i, t := range tasks {
		if i > 0 {
			dst = append(dst, ',')
		}
		if t == nil {
			dst = append(dst, "null"...)
			continue
		}
		var ok bool
		if dst, ok = t.appendJSON(dst); !ok {
			return dst, false
		}
	}
	return append(dst, ']'), true
}

func (t *Task) appendJSON(dst []byte) ([]byte, bool) {
	if !fastjson.Finite(t.Value) || t.made && !fastjson.Finite(t.Spec.Value) {
		return dst, false
	}
	dst = append(dst, '{')
	if t.made {
		dst = append(dst, `"def":`...)
		dst = appendDef(dst, t.Spec)
		dst = append(dst, ',')
	}
	dst = append(dst, `"id":`...)
	dst = fastjson.AppendString(dst, t.ID)
	dst = append(dst, `,"kind":`...)
	dst = fastjson.AppendString(dst, t.Kind)
	if t.Project != "" {
		dst = append(dst, `,"project":`...)
		dst = fastjson.AppendString(dst, t.Project)
	}
	dst = append(dst, `,"queue":`...)
	dst = fastjson.AppendString(dst, t.Queue)
	dst = append(dst, `,"team":`...)
	dst = fastjson.AppendString(dst, t.Team)
	dst = append(dst, `,"created":`...)
	dst = strconv.AppendInt(dst, int64(t.Created), 10)
	dst = append(dst, `,"deadline":`...)
	dst = strconv.AppendInt(dst, int64(t.Deadline), 10)
	if t.Hidden {
		dst = append(dst, `,"hidden":true`...)
	}
	if t.Breached {
		dst = append(dst, `,"breached":true`...)
	}
	dst = append(dst, `,"effort":`...)
	dst = strconv.AppendInt(dst, int64(t.Effort), 10)
	dst = append(dst, `,"value":`...)
	dst = fastjson.AppendFloat(dst, t.Value)
	if t.Priority != 0 {
		dst = append(dst, `,"priority":`...)
		dst = strconv.AppendInt(dst, int64(t.Priority), 10)
	}
	if t.Arrival != "" {
		dst = append(dst, `,"arrival":`...)
		dst = fastjson.AppendString(dst, t.Arrival)
	}
	if t.Case != "" {
		dst = append(dst, `,"case":`...)
		dst = fastjson.AppendString(dst, t.Case)
	}
	dst = append(dst, `,"status":`...)
	dst = fastjson.AppendString(dst, t.Status)
	if t.Assignee != "" {
		dst = append(dst, `,"assignee":`...)
		dst = fastjson.AppendString(dst, t.Assignee)
	}
	dst = append(dst, `,"spent":`...)
	dst = strconv.AppendInt(dst, int64(t.Spent), 10)
	if t.WorkUntil != 0 {
		dst = append(dst, `,"work_until":`...)
		dst = strconv.AppendInt(dst, int64(t.WorkUntil), 10)
	}
	if t.Stint != 0 {
		dst = append(dst, `,"stint":`...)
		dst = strconv.AppendInt(dst, int64(t.Stint), 10)
	}
	if t.Request != "" {
		dst = append(dst, `,"request":`...)
		dst = fastjson.AppendString(dst, t.Request)
	}
	if t.DoneAt != 0 {
		dst = append(dst, `,"done_at":`...)
		dst = strconv.AppendInt(dst, int64(t.DoneAt), 10)
	}
	if t.DoneBy != "" {
		dst = append(dst, `,"done_by":`...)
		dst = fastjson.AppendString(dst, t.DoneBy)
	}
	if t.DoneSeq != 0 {
		dst = append(dst, `,"done_seq":`...)
		dst = strconv.AppendUint(dst, t.DoneSeq, 10)
	}
	return append(dst, '}'), true
}

// appendDef encodes a made task's definition d as encoding/json encodes
// ticketDefOf(d), without making it.
func appendDef(dst []byte, d *worlds.Task) []byte {
	dst = fastjson.AppendKeyString(dst, `{"ID":`, d.ID)
	dst = fastjson.AppendKeyString(dst, `,"Title":`, d.Title)
	dst = fastjson.AppendKeyString(dst, `,"Role":`, d.Role)
	dst = fastjson.AppendKeyInt(dst, `,"Effort":`, int64(d.Effort))
	dst = fastjson.AppendList(dst, `,"Deps":`, d.Deps, fastjson.AppendStringAt)
	dst = append(dst, `,"Value":`...)
	dst = fastjson.AppendFloat(dst, d.Value)
	dst = fastjson.AppendKeyInt(dst, `,"Purchase":`, d.Purchase)
	dst = fastjson.AppendKeyString(dst, `,"Chain":`, d.Chain)
	dst = fastjson.AppendKeyString(dst, `,"Skill":`, d.Skill)
	dst = fastjson.AppendKeyInt(dst, `,"Priority":`, int64(d.Priority))
	if in := d.Info; in != nil {
		dst = fastjson.AppendKeyString(dst, `,"Info":{"From":`, in.From)
		dst = fastjson.AppendKeyString(dst, `,"Topic":`, in.Topic)
		dst = append(dst, '}')
	} else {
		dst = append(dst, `,"Info":null`...)
	}
	dst = fastjson.AppendKeyStringOmit(dst, `,"Case":`, d.Case)
	dst = fastjson.AppendKeyStringOmit(dst, `,"Step":`, d.Step)
	dst = fastjson.AppendKeyIntOmit(dst, `,"Amount":`, d.Amount)
	dst = fastjson.AppendKeyStringOmit(dst, `,"NPC":`, d.NPC)
	return append(dst, '}')
}

// tasksNull is where the tasks go in a snapshot encoded without them; the
// quotes cannot appear unescaped inside a string, so it is the key.
var tasksNull = []byte(`,"tasks":null,`)

// encodeSnapshot is json.Marshal(sn) with the tasks encoded by hand.
func encodeSnapshot(sn snapshot) ([]byte, error) {
	tasks := sn.Tasks
	sn.Tasks = nil
	rest, err := json.Marshal(sn)
	if err != nil {
		return nil, err
	}
	i := bytes.Index(rest, tasksNull)
	if i < 0 {
		sn.Tasks = tasks
		return json.Marshal(sn)
	}
	out := make([]byte, 0, len(rest)+len(tasks)*512)
	out = append(out, rest[:i+len(`,"tasks":`)]...)
	out, ok := appendTasks(out, tasks)
	if !ok {
		sn.Tasks = tasks
		return json.Marshal(sn)
	}
	return append(out, rest[i+len(tasksNull)-1:]...), nil
}

// hashSnapshot is sha256.Sum256(encodeSnapshot(sn)), without holding the
// whole encoding: the tasks are encoded a block at a time into the hash.
// A long session's state hash would otherwise build a buffer of hundreds
// of megabytes at its end.
func hashSnapshot(sn snapshot) ([32]byte, error) {
	tasks := sn.Tasks
	sn.Tasks = nil
	rest, err := json.Marshal(sn)
	if err != nil {
		return [32]byte{}, err
	}
	i := bytes.Index(rest, tasksNull)
	if i < 0 {
		sn.Tasks = tasks
		return hashJSON(sn)
	}
	h := sha256.New()
	h.Write(rest[:i+len(`,"tasks":`)])
	if tasks == nil {
		h.Write([]byte("null"))
	} else {
		const block = 64 << 10
		buf := make([]byte, 0, block+4096)
		buf = append(buf, '[')
		for j, t := range tasks {
			if j > 0 {
				buf = append(buf, ',')
			}
			if t == nil {
				buf = append(buf, "null"...)
			} else {
				var ok bool
				if buf, ok = t.appendJSON(buf); !ok {
					sn.Tasks = tasks
					return hashJSON(sn)
				}
			}
			if len(buf) >= block {
				h.Write(buf)
				buf = buf[:0]
			}
		}
		h.Write(append(buf, ']'))
	}
	h.Write(rest[i+len(tasksNull)-1:])
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, nil
}

// MarshalJSON encodes t as its snapshot lists it: what encoding/json
// makes of the struct, with a made task's definition ("def") written from
// Spec, where a live state keeps it (Def is nil there). A figure only
// encoding/json may say (a non-finite one) is left to it, and refused.
func (t *Task) MarshalJSON() ([]byte, error) {
	if b, ok := t.appendJSON(nil); ok {
		return b, nil
	}
	return json.Marshal(t.reflected())
}

// taskJSON is Task without its methods: encoding/json encodes it by
// reflection, from its fields and their tags.
type taskJSON Task

// reflected returns a copy of t for encoding/json to encode by reflection,
// with a made task's Def set from Spec.
func (t *Task) reflected() *taskJSON {
	c := taskJSON(*t)
	if t.made {
		c.Def = ticketDefOf(t.Spec)
	}
	return &c
}

func hashJSON(v any) ([32]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(b), nil
}

// appendRecord encodes t as the retired digest of log format 5 chains it
// (RecordFormat): every field its snapshot lists, in a fixed order, with
// strings length-prefixed, integers as varints, figures as their IEEE 754
// bits and the flags in one byte. It is a fifth of the snapshot's JSON,
// and no value is refused. The definition is the Spec's when the snapshot
// lists it ("def"), else absent; its Deps and Info are there for
// completeness (a retiring ticket has none).
func (t *Task) appendRecord(dst []byte) []byte {
	var flags byte
	for i, b := range []bool{t.made, t.Hidden, t.Breached, t.made && t.Spec.Info != nil} {
		if b {
			flags |= 1 << i
		}
	}
	dst = append(dst, recordVersion, flags)
	if t.made {
		d := t.Spec
		dst = appendStrings(dst, d.ID, d.Title, d.Role)
		dst = binary.AppendVarint(dst, int64(d.Effort))
		dst = binary.AppendUvarint(dst, uint64(len(d.Deps)))
		dst = appendStrings(dst, d.Deps...)
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(d.Value))
		dst = binary.AppendVarint(dst, d.Purchase)
		dst = appendStrings(dst, d.Chain, d.Skill)
		dst = binary.AppendVarint(dst, int64(d.Priority))
		if d.Info != nil {
			dst = appendStrings(dst, d.Info.From, d.Info.Topic)
		}
		dst = appendStrings(dst, d.Case, d.Step)
		dst = binary.AppendVarint(dst, d.Amount)
		dst = appendStrings(dst, d.NPC)
	}
	dst = appendStrings(dst, t.ID, t.Kind, t.Project, t.Queue, t.Team)
	for _, n := range []int64{int64(t.Created), int64(t.Deadline), int64(t.Effort)} {
		dst = binary.AppendVarint(dst, n)
	}
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(t.Value))
	dst = binary.AppendVarint(dst, int64(t.Priority))
	dst = appendStrings(dst, t.Arrival, t.Case, t.Status, t.Assignee)
	for _, n := range []int64{int64(t.Spent), int64(t.WorkUntil), int64(t.Stint)} {
		dst = binary.AppendVarint(dst, n)
	}
	dst = appendStrings(dst, t.Request)
	dst = binary.AppendVarint(dst, int64(t.DoneAt))
	dst = appendStrings(dst, t.DoneBy)
	return binary.AppendUvarint(dst, t.DoneSeq)
}

// recordVersion opens every record appendRecord writes, so that a later
// layout cannot be read as this one.
const recordVersion = 1

func appendStrings(dst []byte, ss ...string) []byte {
	for _, s := range ss {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return dst
}
