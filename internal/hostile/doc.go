//go:build hostile

// Package hostile is the hostile-load test (Stufe 5 in AUSBAUSTUFEN.md): one project's keys
// attack a running Munin while another project's readers measure their
// recall latency. It builds the binary, starts it as a child process on
// 127.0.0.1 (so that /metrics shows the server's heap alone), and checks
// that the victim's recall p99 under attack stays within 3× its quiet value
// (compared against at least -feind.boden), that the victim is never
// refused (no 429 for its recalls, and a session probe of its project —
// initialize and DELETE every 250 ms — always answered), that the server's
// live heap stays under a stated bound, that the search log cannot grow the
// disk faster than a stated rate, that the server stays up and stops on
// SIGTERM, and that no request got a 5xx other than 503.
//
// The attacks are numbered by their threat in Stufe 5 (1, 2, 4, 5, 6) and,
// from 12 on, by the findings of issue 21: 12 slow sign-in bodies without
// a key (more connections than the server has admission slots), 13 and 14
// MCP sessions and recalls of all of -feind.schluessel read keys of the
// attacker's project, 15 the web UI's heaviest pages (a diff of two 64 KiB
// versions, an entry of 65,536 ">") from one signed-in read key, 16 the
// OAuth endpoints without a key (authorize for unknown clients, token with
// codes nobody issued, registrations).
//
// Three processes take part: the server, the test (the victim, the heap
// sampler, the checks) and, during each attack phase, an attacker process:
// the test binary run again as TestHostileAttacker with the attack spec in
// FEIND_AUFTRAG, which reports its answers as JSON on stdout. The test asks
// how the server holds against an attacker elsewhere on the network; with
// the attack clients in the test's own process the victim's latency would
// include its wait behind them in the test's scheduler. The attacker runs
// with GOMAXPROCS=1, so on the two cores the test is made for it takes one
// at most, as if its CPU were elsewhere, and leaves the other to the
// server; its priority stays normal (a lower one would favour the server
// over an attacker who, elsewhere, would not be slowed down at all). It
// does not back off: 429, 404 and 400 send it straight to the next request.
//
// The victim recalls one query at a time, one every -feind.takt, with a
// team of read keys in turn (each under the server's recall rate per key).
// A phase lasts -feind.dauer and at least until the victim has
// -feind.proben recalls, so that p99 is not one unlucky sample, and ends by
// -feind.hoechstdauer in any case.
//
//	go test -tags hostile -run TestHostile -count=1 -v ./internal/hostile/ [-feind.dauer=5s]
//
// Every file carries the build tag hostile, so go test ./... leaves it out.
// Its flags and printed tables are German, like the load test's.
package hostile

import (
	"flag"
	"time"
)

var (
	feindDauer          = flag.Duration("feind.dauer", 4*time.Second, "Dauer je Angriffsphase")
	feindEintraege      = flag.Int("feind.eintraege", 200, "vorab angelegte Einträge im Opfer- und im Angreiferprojekt")
	feindAbfragen       = flag.Int("feind.abfragen", 200, "recalls des Opfers für den ruhigen Wert")
	feindProben         = flag.Int("feind.proben", 200, "recalls des Opfers je Angriffsphase mindestens (die Phase dauert so lange; p99 aus weniger ist Zufall)")
	feindHoechstdauer   = flag.Duration("feind.hoechstdauer", 30*time.Second, "längste Dauer einer Angriffsphase, auch mit weniger als feind.proben recalls (dann scheitert sie)")
	feindTakt           = flag.Duration("feind.takt", 20*time.Millisecond, "Abstand der recalls des Opfers (es muss unter der recall-Grenze je Schlüssel bleiben)")
	feindAngriffe       = flag.String("feind.angriffe", "5,6,12,14,16,1,4,13,15,2,alle", "Phasen in dieser Reihenfolge (was Zustand hinterlässt, zuletzt): Angriffe 1, 2, 4, 5, 6, 12, 13, 14, 15, 16 einzeln, alle = gleichzeitig, ruhig = ohne Angriff, wie eine Angriffsphase gemessen und geprüft (das Rauschen der Messung)")
	feindParallel       = flag.Int("feind.parallel", 16, "gleichzeitige Anfragen je Angriff im Angreiferprozess (Angriff 2: ein Viertel, 15: die Hälfte, 13 und 14: das Vierfache, 12: das Fünffache und mindestens 80 Verbindungen)")
	feindSchluessel     = flag.Int("feind.schluessel", 160, "Leseschlüssel des Angreiferprojekts (Angriffe 13, 14); 160 × 64 Sitzungen je Schlüssel sind mehr als die 10.000 des Servers")
	feindFaktor         = flag.Float64("feind.faktor", 3, "erlaubtes Vielfaches des ruhigen p99 unter Angriff")
	feindWiederholungen = flag.Int("feind.wiederholungen", 2, "so oft wird eine Angriffsphase über der Grenze nach einer neuen Ruhemessung wiederholt")
	feindBoden          = flag.Duration("feind.boden", 5*time.Millisecond, "Untergrenze des ruhigen p99 für den Vergleich (Loopback misst sonst Bruchteile einer Millisekunde)")
	feindHeap           = flag.Int64("feind.heap", 256<<20, "Grenze für den lebenden Heap des Servers in Bytes (aus go_memstats_next_gc_bytes)")
	feindWachstum       = flag.Int64("feind.wachstum", 64<<20, "erlaubtes Wachstum der Angreiferdatei (Seiten × Seitengröße, WAL eingerechnet) durch die recall-Flut in Bytes je Stunde, dazu 1 MiB")
	feindNotbremse      = flag.Int64("feind.notbremse", 4<<30, "RSS des Servers, bei der der Test abbricht, um die Maschine zu schützen")
	feindServerflag     = flag.String("feind.server", "", "zusätzliche Flags für munin serve, durch Leerzeichen getrennt")
)
