package remote

// asOfMethods adds the server sides of the as-of reads (stage 11, in progress).
func asOfMethods(d Data, m map[string]handler) {}
