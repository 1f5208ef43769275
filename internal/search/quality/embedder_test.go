package quality

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
)

// conceptEmbedder is a deterministic stand-in for an embedding model, for
// the paraphrase queries of the benchmark. It is NOT a model and says
// nothing about how a real one ranks: it maps words to hand-made concepts
// (backup, sicherung, disk, platte … → "data-safety", "storage") written
// for this corpus, so "how do we keep data safe if the disk dies?" lands
// near the German note on nightly backups. Each concept is one dimension;
// words of no concept are hashed into a few more dimensions at a lower
// weight, as a model would still see shared words. The vector is normalized.
//
// It measures the plumbing of a meaning path (vectors stored, searched,
// fused with keyword hits) on queries whose answers are known, not the
// quality of any model. Real models were not available on this machine.
type conceptEmbedder struct{}

// conceptModel is the model name the stand-in reports.
const conceptModel = "munin-test-concepts-v1"

// hashDims is how many dimensions take the words of no concept.
const hashDims = 32

// hashWeight is a hashed word's weight against a concept's 1.
const hashWeight = 0.3

// concepts maps a concept to its words: lower case, exact, or a prefix when
// the entry ends in "*". English and German words share concepts.
var concepts = map[string][]string{
	"data-safety":  {"backup*", "sicherung*", "sichert", "sichern", "safe", "copy", "copies", "kopie*", "restore*", "prüfsumme*", "checksum*"},
	"storage":      {"disk*", "platte*", "festplatte*", "datenträger*", "volume*", "nas", "storage", "speicherplatz", "space"},
	"failure":      {"dies", "dying", "died", "kaputt", "broken", "ausfall*", "outage*", "down", "panne*", "störung*", "kill*", "killed", "crash*", "damaged"},
	"customer":     {"customer*", "kunde*", "kunden*", "client", "clients"},
	"idea":         {"feature", "features", "wunsch*", "wünsch*", "sonderwünsch*", "wish*", "idee*", "idea*", "asks", "ask"},
	"night-duty":   {"nachts", "nacht*", "night*", "geweckt", "wake*", "woke", "paged", "page", "pager*", "bereitschaft*", "shift*", "schicht*", "oncall", "rotation"},
	"bug-report":   {"bug", "bugs", "fehler", "bericht*", "report*", "melden", "meldet", "ticket*", "issue*", "file"},
	"sign-in":      {"sso", "login*", "sign", "signs", "anmeld*", "keycloak", "identity", "redirect"},
	"frontend":     {"interface", "ui", "browser*", "frontend*", "library", "framework*", "javascript", "react", "spa", "html", "htmx", "render*"},
	"meeting":      {"meeting*", "besprechung*", "sitzung*", "retro*", "rückblick*", "termin*"},
	"decision":     {"beschlossen", "beschluss*", "entschieden", "entscheidung*", "decided", "decision*", "vereinbart", "agreed"},
	"record":       {"protokoll*", "notiz*", "minutes", "steht", "festhalten", "aufschreiben"},
	"personal":     {"names", "namen", "personenbezogen*", "person", "dsgvo", "gdpr", "datenschutz*", "privacy"},
	"retention":    {"löschfrist*", "frist*", "retention", "gelöscht", "löscht", "delete*", "purge", "keep", "kept", "long", "aufbewahrung*"},
	"search-log":   {"suchprotokoll*", "queries", "query", "anfragen"},
	"dns":          {"resolved", "resolve*", "dns", "nameserver*", "domain*", "registrar*", "nxdomain", "zone", "zonen", "website", "erreichbar", "unreachable"},
	"provider":     {"provider*", "anbieter*", "vendor*"},
	"change":       {"change", "umstellung*", "switch*", "wechsel*", "moved"},
	"payment":      {"paid", "pay", "payment*", "zahlung*", "charge*", "charged", "checkout*", "invoice*", "rechnung*", "billing", "order", "orders", "bestellung*", "card", "refund*"},
	"double":       {"twice", "double", "doppelt", "zweimal", "two"},
	"abuse":        {"misbehav*", "spam*", "runaway", "flood*", "loop", "hammer*", "missbrauch*"},
	"throttle":     {"throttl*", "ratelimit*", "budget*", "burst*", "429"},
	"time-zone":    {"zeitzone*", "timezone*", "zone", "zones", "utc", "daylight", "sommerzeit", "timestamp*", "zeitstempel*"},
	"newcomer":     {"neu", "neue", "neuen", "new", "newcomer*", "einarbeitung*", "onboarding", "willkommen", "welcome", "anfang*", "fange", "beginn*", "erste", "ersten"},
	"memory":       {"ram", "memory", "heap*", "oom", "leak", "leaks", "arbeitsspeicher"},
	"toggle":       {"enable*", "aktivier*", "einschalt*", "toggle*", "flag", "flags", "switched", "dark", "half-done", "half"},
	"secret":       {"zugangsdaten", "credential*", "secret*", "geheim*", "passwort*", "passwörter*", "password*", "token*", "schlüssel"},
	"exposure":     {"veröffentlich*", "published", "exposed", "geleakt", "leaked", "gelandet", "versehentlich", "accident*"},
	"production":   {"produktion", "production", "prod", "live"},
	"first-steps":  {"schritte", "steps", "first", "erste", "acknowledge"},
	"monitoring":   {"notice", "merken", "bemerkt", "erkannt", "detect*", "alert*", "alarm*", "monitor*", "überwachung*", "dashboard*", "metric*", "kennzahl*", "prometheus", "grafana"},
	"full":         {"voll", "full", "filled", "fill", "filling"},
	"build-host":   {"build", "builds", "ci", "runner", "runners", "maschine", "machine", "agents", "host"},
	"release-plan": {"releaseplan", "release", "releases", "version", "versionen", "termin"},
	"data-export":  {"csv", "export*", "mandant", "mandanten", "download*"},
	"cost":         {"kosten", "cost", "costs", "preis*", "price*", "günstig*", "teuer*", "cheap*", "expensive"},
	"performance":  {"leistung", "performance", "latenz*", "latency", "durchsatz", "throughput", "langsam*", "slow*", "renderzeit*", "antwortzeit*", "messwert*", "dauer"},
}

// conceptIndex maps a concept name to its dimension, in sorted order so the
// vectors are the same on every run.
var conceptNames = func() []string {
	names := make([]string, 0, len(concepts))
	for c := range concepts {
		names = append(names, c)
	}
	sort.Strings(names)
	return names
}()

// conceptDims is the length of every vector.
var conceptDims = len(conceptNames) + hashDims

// Model names the stand-in, as an embedding client would.
func (conceptEmbedder) Model() string { return conceptModel }

// Embed returns one vector per text; it never fails.
func (conceptEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = conceptVector(t)
	}
	return out, nil
}

// conceptVector is the normalized vector of text.
func conceptVector(text string) []float32 {
	v := make([]float64, conceptDims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r == '-' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && r != '—' && r != '–' && r != '„' && r != '“')
	}) {
		w = strings.Trim(w, "-")
		if w == "" || stopWords[w] {
			continue
		}
		hit := false
		for d, c := range conceptNames {
			if matchesConcept(w, concepts[c]) {
				v[d]++
				hit = true
			}
		}
		if !hit {
			h := fnv.New32a()
			h.Write([]byte(w))
			v[len(conceptNames)+int(h.Sum32()%hashDims)] += hashWeight
		}
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	out := make([]float32, conceptDims)
	if norm == 0 {
		out[0] = 1 // an empty text still gets a unit vector
		return out
	}
	norm = math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}

// matchesConcept tells whether w is one of list's words, or a compound
// whose head is (agentenschlüssel: schlüssel; supportticket: ticket*), as a
// model's subword tokens would see the head in it. A head has
// minHeadBytes letters at least and follows minModifierBytes; a word with a
// hyphen is met as written only.
func matchesConcept(w string, list []string) bool {
	for _, e := range list {
		p, prefix := strings.CutSuffix(e, "*")
		for i := 0; i < len(w); i++ {
			if i > 0 && (len(p) < minHeadBytes || strings.Contains(w, "-")) {
				break
			}
			if i > 0 && i < minModifierBytes {
				continue
			}
			if rest := w[i:]; prefix && strings.HasPrefix(rest, p) || !prefix && rest == p {
				return true
			}
		}
	}
	return false
}

// minModifierBytes and minHeadBytes bound the compounds matchesConcept
// meets by their head.
const (
	minModifierBytes = 3
	minHeadBytes     = 5
)

func cosine(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// embedRequest and embedResponse are the OpenAI embeddings API's shapes, as
// far as the stand-in endpoint needs them.
type embedRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type embedResponse struct {
	Object string       `json:"object"`
	Model  string       `json:"model"`
	Data   []embedDatum `json:"data"`
}

type embedDatum struct {
	Object    string    `json:"object"`
	Index     int       `json:"index"`
	Embedding []float32 `json:"embedding"`
}

// newEmbedServer starts an OpenAI-compatible POST /v1/embeddings endpoint
// that answers with conceptVector, for tests of a meaning path that talks
// HTTP. It is stopped when the test ends.
func newEmbedServer(t testing.TB) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		var req embedRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&req); err != nil || len(req.Input) == 0 {
			http.Error(w, `{"error":{"message":"want {model, input: [texts]}"}}`, http.StatusBadRequest)
			return
		}
		vs, _ := conceptEmbedder{}.Embed(r.Context(), req.Input)
		res := embedResponse{Object: "list", Model: conceptModel, Data: make([]embedDatum, len(vs))}
		for i, v := range vs {
			res.Data[i] = embedDatum{Object: "embedding", Index: i, Embedding: v}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(res)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestEmbedServer: the stand-in endpoint answers as the OpenAI API does,
// with the in-process vectors, and refuses a request without input.
func TestEmbedServer(t *testing.T) {
	srv := newEmbedServer(t)
	body := `{"model":"x","input":["nightly backup to the NAS","Festplatte voll"]}`
	resp, err := http.Post(srv.URL+"/v1/embeddings", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res embedResponse
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(res.Data) != 2 {
		t.Fatalf("status %d, %d vectors; want 200 and 2", resp.StatusCode, len(res.Data))
	}
	for i, text := range []string{"nightly backup to the NAS", "Festplatte voll"} {
		if d := res.Data[i]; d.Index != i || !slices.Equal(d.Embedding, conceptVector(text)) {
			t.Errorf("vector %d differs from conceptVector(%q)", i, text)
		}
	}
	resp2, err := http.Post(srv.URL+"/v1/embeddings", "application/json", strings.NewReader(`{"model":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusBadRequest {
		t.Errorf("no input: status %d, want 400", resp2.StatusCode)
	}
}
