package portable

import (
	"context"
	"fmt"
	"io"
	"time"

	"munin/internal/store"
)

// Backup runs store.Backup from dataDir into dest and prints one line per
// verified file and a summary to w.
func Backup(ctx context.Context, dataDir, dest string, w io.Writer) (store.BackupReport, error) {
	fmt.Fprintf(w, "backing up %s to %s\n", dataDir, dest)
	rep, err := store.Backup(ctx, dataDir, dest, store.BackupOptions{Progress: func(f store.BackupFile) {
		versions := "-"
		if f.Versions >= 0 {
			versions = fmt.Sprint(f.Versions)
		}
		fmt.Fprintf(w, "  %-24s %8d pages %10s  versions %-8s integrity ok  %v\n",
			f.Name, f.Pages, sizeString(f.Bytes), versions, f.Duration.Round(time.Millisecond))
	}})
	if err != nil {
		return rep, err
	}
	var bytes int64
	versions := 0
	for _, f := range rep.Files {
		bytes += f.Bytes
		versions += max(f.Versions, 0)
	}
	fmt.Fprintf(w, "backup complete: %d files, %s, %d versions in %v\n",
		len(rep.Files), sizeString(bytes), versions, rep.Duration.Round(time.Millisecond))
	return rep, nil
}

// sizeString renders a byte count for people.
func sizeString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
