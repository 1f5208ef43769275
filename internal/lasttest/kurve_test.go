//go:build last

package lasttest

import (
	"slices"
	"testing"
	"time"
)

// TestKurvenprofil pins that a set flag takes the place of the profile's
// value and an unset one keeps it, and that the workspaces never outnumber
// the projects.
func TestKurvenprofil(t *testing.T) {
	defer func(k, g string, pr int) { *lastKurve, *lastKurveGroessen, *lastKurveProjekte = k, g, pr }(*lastKurve, *lastKurveGroessen, *lastKurveProjekte)
	*lastKurve, *lastKurveGroessen, *lastKurveProjekte = "kurz", "2000, 3000", 3
	p := kurvenprofil(t)
	if !slices.Equal(p.groessen, []int{2000, 3000}) || p.projekte != 3 || p.bereiche != 3 {
		t.Errorf("kurz mit Größen und 3 Projekten: %+v", p)
	}
	if !slices.Equal(p.agenten, []int{1, 8}) || p.dauer != 2*time.Second || p.runden != 1 {
		t.Errorf("kurz: ungesetzte Flags nicht aus dem Profil: %+v", p)
	}
	*lastKurve, *lastKurveGroessen, *lastKurveProjekte = "voll", "", 0
	if p := kurvenprofil(t); slices.Max(p.groessen) != 1000000 || p.projekte != 1000 || p.bereiche != 100 || slices.Max(p.agenten) != 128 {
		t.Errorf("voll: %+v", p)
	}
}

// TestPaired pins the A/B ratios: new over old, round by round.
func TestPaired(t *testing.T) {
	point := func(calls int, cpu time.Duration) mischPunkt {
		pt := mischPunkt{server: cpu, res: result{dur: time.Second, lat: map[string][]time.Duration{}}}
		pt.res.lat["get"] = make([]time.Duration, calls)
		return pt
	}
	old := []mischPunkt{point(100, 100*time.Millisecond), point(200, 100*time.Millisecond)}
	neu := []mischPunkt{point(100, 70*time.Millisecond), point(100, 100*time.Millisecond)}
	cpu, rate := paired(old, neu)
	if want := []float64{0.7, 2}; !slices.Equal(cpu, want) {
		t.Errorf("CPU neu/alt %v, erwartet %v", cpu, want)
	}
	if want := []float64{1, 0.5}; !slices.Equal(rate, want) {
		t.Errorf("Aufrufe je s neu/alt %v, erwartet %v", rate, want)
	}
}
