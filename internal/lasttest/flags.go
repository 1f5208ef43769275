//go:build last

// The -last.* flags. They are registered on the standard flag set at package
// level, so the test binary of the top-level package that imports lasttest
// parses them together with the go test flags.

package lasttest

import (
	"flag"
	"time"
)

var (
	lastAgenten       = flag.Int("last.agenten", 32, "Agenten je Aufbau")
	lastDauer         = flag.Duration("last.dauer", 10*time.Second, "Dauer je Aufbau (und je Stufe)")
	lastProjekte      = flag.Int("last.projekte", 4, "Projekte bzw. Arbeitsbereiche in Aufbau 2, 3 und 4")
	lastEintraege     = flag.Int("last.eintraege", 500, "vorab angelegte Einträge je Projekt")
	lastSlugs         = flag.Int("last.slugs", 20, "umkämpfte Slugs je Projekt")
	lastSchreibanteil = flag.Int("last.schreibanteil", 30, "Anteil remember in Prozent; der Rest recall:get 2:1")
	lastStufen        = flag.String("last.stufen", "", "Stufen-Sweep, z. B. 1,2,4,8,16,32,64,128,256 (ein Projekt)")
	lastSynchronous   = flag.String("last.synchronous", "", "SQLite synchronous des Servers: NORMAL oder FULL (leer: Serverstandard)")
	lastSuchprotokoll = flag.String("last.suchprotokoll", "an", "Suchprotokoll: an, aus oder vergleich (Aufbau 1 mit und ohne)")
	lastAufbauten     = flag.String("last.aufbauten", "1,2,3,4,5", "welche Aufbauten laufen (4: mehrere Projekte je Agent, 5: mit Prüfung)")
	lastProfil        = flag.String("last.profil", "", "CPU-Profil der Lastphase von Aufbau 1 in diese Datei (mit -last.abonnenten: des ersten Laufs mit Abonnenten)")
	lastProtokoll     = flag.String("last.protokoll", "", "MCP-Version der Agenten: leer = 2025-11-25 (mit Sitzungen), 2026-07-28 = ohne Sitzungen")
	lastZulassung     = flag.Int("last.zulassung", -1, "Zulassungsgrenze des Servers (--max-inflight): -1 aus, 0 Serverstandard, N Anfragen gleichzeitig")
	lastGenau         = flag.Bool("last.genau", false, "recall nur nach den Wörtern wie geschrieben: ohne Komposita und Tippfehler (Server --recall-exact)")
	lastSuchmix       = flag.Int("last.suchmix", 30, "Anteil der recalls in Prozent, die mit Tippfehler, Kompositum oder getrennt geschriebenen Teilen eines Kompositums suchen (0: nur die acht Fachwörter wie vor dem 2026-12-01)")
	lastMixRichtig    = flag.Bool("last.suchmixrichtig", false, "Suchmix richtig geschrieben: jede Anfrage so, wie sie dieselben Einträge ohne die Stufen findet (Vergleichsbasis: was die Stufen allein kosten)")
	lastKaltstart     = flag.Int("last.kaltstart", 0, "nur die Kaltstart-Messung mit so vielen Einträgen in einem Projekt (munin als eigener Prozess: import, reindex, erstes recall, RSS, p50/p99, Nachholen von 1000 Änderungen); 0: aus")
	lastMunin         = flag.String("last.munin", "", "Kaltstart mit diesem fertigen munin statt eines frisch gebauten (etwa dem Stand vor einer Änderung, für vorher/nachher in einem Lauf)")
	lastNeu           = flag.Int("last.neu", 0, "Aufbau 1–4: Anteil der remember in Prozent, die einen neuen Slug anlegen (mit Suche nach ähnlichen Einträgen) statt einen umkämpften fortzuschreiben")
	lastPruefer       = flag.Int("last.pruefer", 16, "Aufbau 5: Vorschläge, die der Prüfer gleichzeitig entscheidet (die eines Slugs nacheinander)")
	lastAehnlichAus   = flag.Bool("last.aehnlichaus", false, "Server ohne Dubletten-Hinweis (--similar-off): remember sucht keine ähnlichen Einträge")
	lastAbonnenten    = flag.Int("last.abonnenten", 0, "der erste gewählte der Aufbauten 1–4 zusätzlich mit so vielen abonnierten MCP-Sitzungen (2025-11-25, GET-Strom, Projekt und ein umkämpfter Eintrag), abwechselnd mit und ohne: Benachrichtigungszeit, verpasste, Speicher, Durchsatz (0: aus)")
	lastAboPaare      = flag.Int("last.abonnenten.paare", 3, "Paare von Läufen mit und ohne Abonnenten (-last.abonnenten), je auf frischem Server; der Durchsatzvergleich nimmt den Median der Verhältnisse")
	lastKurve         = flag.String("last.kurve", "", "nur die Messkurve mit munin serve als eigenem Prozess (Server-CPU aus /proc, getrennt von den Agenten): kurz (CI-Profil, prüft nur Richtigkeit) oder voll; leer: aus")
	lastKurveTeile    = flag.String("last.kurve.teile", "misch,groessen,projekte,agenten", "welche Teile der Messkurve laufen: misch (Server-CPU je gemischtem Aufruf, mit -last.vergleich A/B), groessen, projekte, agenten")
	lastKurveGroessen = flag.String("last.kurve.groessen", "", "Einträge in einem Projekt je Zeile der Größentabelle, z. B. 1000,10000,100000,1000000 (leer: kurz 1000,10000, voll 1000,10000,100000,1000000)")
	lastKurveProjekte = flag.Int("last.kurve.projekte", 0, "kleine Projekte zu je 100 Einträgen (0: kurz 20, voll 1000)")
	lastKurveBereiche = flag.Int("last.kurve.bereiche", 0, "Arbeitsbereiche, auf die sich die kleinen Projekte in der zweiten Zeile verteilen (0: kurz 5, voll 100)")
	lastKurveAgenten  = flag.String("last.kurve.agenten", "", "Agentenzahlen der Nebenläufigkeitstabelle (leer: kurz 1,8, voll 1,8,32,128)")
	lastKurveDauer    = flag.Duration("last.kurve.dauer", 0, "Dauer je Messpunkt der Messkurve (0: kurz 2 s, voll 10 s)")
	lastKurveRunden   = flag.Int("last.kurve.runden", 0, "Runden des Teils misch, je Runde ein frischer Server je Binärdatei (0: kurz 1, voll 5)")
	lastVergleich     = flag.String("last.vergleich", "", "Teil misch der Messkurve: dieses (ältere) munin abwechselnd mit dem neuen (alt, neu, alt, neu …), Verhältnisse neu/alt je Runde und ihr Median")
	lastEinbettung    = flag.Duration("last.einbettung", 0, "Einbettungen an: startet einen Test-Endpunkt, der nach dieser Zeit antwortet (0: aus)")
)
