// Package memory holds Munin's domain: projects, entries and their versions,
// keys and roles, the one error type, and input validation. It imports nothing
// internal; every other package speaks in these types.
package memory
