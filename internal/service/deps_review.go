package service

// ReviewStore is the part of DataStore that keeps proposals and the
// project's review setting (stage 11).
type ReviewStore interface{}
