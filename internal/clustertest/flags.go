//go:build cluster

// The -cluster.* flags. They are registered on the standard flag set at
// package level, so the test binary of the top-level package that imports
// clustertest parses them together with the go test flags. Names and help
// texts are German, like the load and crash tests' flags.

package clustertest

import (
	"flag"
	"time"
)

var (
	clusterRunden        = flag.Int("cluster.runden", 20, "Runden mit kill -9 des meistbeschäftigten Eigentümers (und seines Litestream) und leerem Neustart")
	clusterAgenten       = flag.Int("cluster.agenten", 16, "schreibende Agenten während der Runden, reihum auf die Knoten verteilt")
	clusterBereiche      = flag.Int("cluster.arbeitsbereiche", 6, "Arbeitsbereiche mit je einem Projekt")
	clusterSlugs         = flag.Int("cluster.slugs", 4, "eigene Slugs je Agent")
	clusterVorschlagende = flag.Int("cluster.vorschlagende", 6, "Agenten mit propose-Schlüssel während der Runden (höchstens einer je Arbeitsbereich); je Arbeitsbereich mit Vorschlägen genehmigt und verwirft ein Prüfer (admin-Schlüssel) über REST, stets über einen Knoten, der den Arbeitsbereich nicht besitzt; 0: keine Vorschläge")
	clusterTTL           = flag.Duration("cluster.ttl", 2*time.Second, "Lease-TTL der Knoten (--lease-ttl)")
	clusterModus         = flag.String("cluster.modus", "sync", "Replikation: sync oder async (--replication)")
	clusterDauer         = flag.Duration("cluster.dauer", 3*time.Second, "Schreibzeit je Runde vor dem kill -9 (zufällig zwischen der Hälfte und dem Anderthalbfachen)")
	clusterLastAgenten   = flag.Int("cluster.lastagenten", 32, "Agenten der Durchsatzmessung (Cluster und ein Knoten, nur remember)")
	clusterMessdauer     = flag.Duration("cluster.messdauer", 10*time.Second, "Dauer der Durchsatzmessung je Aufbau; 0: keine Messung")
	clusterAnhalten      = flag.Bool("cluster.anhalten", true, "SIGSTOP-Phase: ein Eigentümer wird für 2 × TTL angehalten")
	clusterMunin         = flag.String("cluster.munin", "", "dieses fertige munin statt eines frisch gebauten")
	clusterProtokolle    = flag.String("cluster.protokolle", "", "Verzeichnis, in dem die Protokolle der Knoten bleiben (leer: Temp-Verzeichnis des Tests)")
	clusterProtokollVer  = flag.String("cluster.protokoll", "", "MCP-Version der Agenten: leer = 2025-11-25 (mit Sitzungen, 404 nach Ausfall), 2026-07-28 = ohne Sitzungen")
	clusterMCPAbonnenten = flag.Int("cluster.mcpabonnenten", 2, "MCP-Abonnenten während der Runden: je eine 2025-11-25-Sitzung mit GET-Strom und resources/subscribe der Projekt-URIs, deren Arbeitsbereich ihr Startknoten nicht besitzt; nach einem Sitzungsende (kill -9, 404) eine neue Sitzung über den nächsten Knoten; 0: keine")
)
