package store

import "fmt"

// ControlSchemaVersion names the newest migration of the control database,
// e.g. "control/3"; munin version prints it beside SchemaVersion, so that a
// bug report says which files the binary writes.
func ControlSchemaVersion() (string, error) {
	ms, err := loadMigrations(schemaControl)
	if err != nil || len(ms) == 0 {
		return "", fmt.Errorf("control schema version: %v", err)
	}
	return fmt.Sprintf("%s/%d", schemaControl, ms[len(ms)-1].version), nil
}
