package service

// AsOfStore is the part of DataStore that reads the memory as it was at a
// time (stage 11).
type AsOfStore interface{}
