package wire

// FastReply and StrictReply are the two ways ParseReply decodes, for the
// differential tests of package wire_test.
var (
	FastReply   = fastReply
	StrictReply = strictReply
)
