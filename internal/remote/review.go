package remote

// reviewMethods adds the server sides of the proposal methods (stage 11, in progress).
func reviewMethods(d Data, m map[string]handler) {}
