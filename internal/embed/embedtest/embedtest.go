// Package embedtest is an OpenAI-compatible embedding endpoint for tests and
// the load test: deterministic vectors (hashed words), an optional delay,
// and switchable failures (status 500, any status quoting the input, HTML,
// NaN, wrong dimension, wrong count, a bloated answer, blocking until
// released).
package embedtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
)

// Mode is how the endpoint answers.
type Mode int

// The modes; OK is the zero value.
const (
	OK         Mode = iota // deterministic vectors
	Status500              // 500 with a JSON error
	HTML                   // 200 with an HTML page
	NaN                    // a vector holding "NaN" (not JSON)
	Huge                   // a number beyond float32 (1e39)
	WrongDim               // the last vector one dimension short
	WrongCount             // one vector fewer than texts
	Block                  // wait until Release (or the request ends)
	Poison                 // 400 for a batch holding a text with "POISON", else OK
	Failing                // the status set by Fail, with an error quoting the input
	Bloated                // 200 with valid vectors padded to BloatedSize bytes, streamed
)

// BloatedSize is the size of a Bloated answer: 10 MiB, far beyond what a
// client should read for a few vectors.
const BloatedSize = 10 << 20

// Server is a running endpoint; Close stops it.
type Server struct {
	*httptest.Server
	// Dim is the dimension of the vectors (default 16).
	Dim int

	mode     atomic.Int64
	delay    atomic.Int64
	calls    atomic.Int64
	texts    atomic.Int64
	mu       sync.Mutex
	release  chan struct{}
	blocked  chan struct{} // receives one value per request that blocks
	cancel   chan struct{} // receives one value per blocked request its client gave up
	status   atomic.Int64  // of Failing mode
	auth     atomic.Value  // string: the last Authorization header
	maxBatch atomic.Int64
}

// New starts an endpoint answering vectors of dim dimensions (0: 16).
func New(dim int) *Server {
	if dim <= 0 {
		dim = 16
	}
	s := &Server{Dim: dim, release: make(chan struct{}), blocked: make(chan struct{}, 1024), cancel: make(chan struct{}, 1024)}
	s.auth.Store("")
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// SetMode switches how later requests are answered.
func (s *Server) SetMode(m Mode) { s.mode.Store(int64(m)) }

// Fail makes later requests answer status code with a JSON error that
// quotes the request's input, as some model servers do ("cannot embed
// '<text>'"): what a client logs of such an answer would leak the text.
func (s *Server) Fail(code int) {
	s.status.Store(int64(code))
	s.SetMode(Failing)
}

// SetDelay makes every answer wait d first.
func (s *Server) SetDelay(d time.Duration) { s.delay.Store(int64(d)) }

// Release lets every blocked request (and later ones in Block mode) go on
// with vectors.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.release:
	default:
		close(s.release)
	}
}

// Blocked receives one value for every request that entered Block mode.
func (s *Server) Blocked() <-chan struct{} { return s.blocked }

// Cancelled receives one value for every blocked request whose client went
// away (cancelled the call) before Release.
func (s *Server) Cancelled() <-chan struct{} { return s.cancel }

// Calls is the number of requests answered so far (any mode).
func (s *Server) Calls() int { return int(s.calls.Load()) }

// Texts is the number of texts received so far.
func (s *Server) Texts() int { return int(s.texts.Load()) }

// MaxBatch is the most texts one request carried.
func (s *Server) MaxBatch() int { return int(s.maxBatch.Load()) }

// Authorization is the Authorization header of the last request.
func (s *Server) Authorization() string { return s.auth.Load().(string) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	s.auth.Store(r.Header.Get("Authorization"))
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/v1/embeddings") {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	s.texts.Add(int64(len(req.Input)))
	for n := int64(len(req.Input)); ; {
		m := s.maxBatch.Load()
		if n <= m || s.maxBatch.CompareAndSwap(m, n) {
			break
		}
	}
	if d := time.Duration(s.delay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	mode := Mode(s.mode.Load())
	if mode == Poison {
		for _, t := range req.Input {
			if strings.Contains(t, "POISON") {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":"input too long"}`)
				return
			}
		}
	}
	if mode == Block {
		s.blocked <- struct{}{}
		select {
		case <-s.release:
		case <-r.Context().Done():
			s.cancel <- struct{}{}
			return
		}
		mode = OK
	}
	switch mode {
	case Failing:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(s.status.Load()))
		q, _ := json.Marshal(fmt.Sprintf("cannot embed %q", req.Input))
		fmt.Fprintf(w, `{"error":%s}`, q)
		return
	case Status500:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":"model crashed"}`)
		return
	case HTML:
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>Bad Gateway</body></html>")
		return
	}
	vecs := make([][]float64, len(req.Input))
	for i, t := range req.Input {
		vecs[i] = Vector(t, s.Dim)
	}
	if mode == WrongDim && len(vecs) > 0 {
		vecs[len(vecs)-1] = vecs[len(vecs)-1][1:]
	}
	if mode == WrongCount && len(vecs) > 0 {
		vecs = vecs[1:]
	}
	// Written by hand with strconv: the endpoint stands in for a model
	// server in another process, so in benchmarks its CPU should be small.
	b := make([]byte, 0, 64+len(vecs)*(s.Dim*12+48))
	b = append(b, `{"object":"list","model":`...)
	m, _ := json.Marshal(req.Model)
	b = append(b, m...)
	b = append(b, `,"data":[`...)
	for i, v := range vecs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"embedding":`...)
		switch {
		case mode == NaN && i == 0:
			b = append(b, `[NaN]`...)
		case mode == Huge && i == 0:
			b = append(b, `[1e39]`...)
		default:
			b = append(b, '[')
			for j, f := range v {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, f, 'g', -1, 32)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `]}`...)
	w.Header().Set("Content-Type", "application/json")
	if mode == Bloated {
		writeBloated(w, r, b)
		return
	}
	_, _ = w.Write(b)
}

// writeBloated streams answer padded with spaces to BloatedSize bytes
// (valid JSON, chunked: no Content-Length warns the client), stopping when
// the client goes away.
func writeBloated(w http.ResponseWriter, r *http.Request, answer []byte) {
	pad := make([]byte, 64<<10)
	for i := range pad {
		pad[i] = ' '
	}
	if _, err := w.Write(answer[:len(answer)-1]); err != nil {
		return
	}
	for n := len(answer); n < BloatedSize && r.Context().Err() == nil; n += len(pad) {
		if _, err := w.Write(pad); err != nil {
			return
		}
	}
	_, _ = w.Write(answer[len(answer)-1:])
}

// Vector is the deterministic vector of a text: its lower-cased words hashed
// into dim buckets, normalized. Texts sharing words point the same way. The
// endpoint sends it as float32s.
func Vector(text string, dim int) []float64 {
	v := make([]float64, dim)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		h := fnv.New32a()
		_, _ = h.Write([]byte(w))
		v[h.Sum32()%uint32(dim)]++
	}
	var n float64
	for _, f := range v {
		n += f * f
	}
	if n == 0 {
		v[0], n = 1, 1 // a text without words still gets a valid vector
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] /= n
	}
	return v
}

// Close releases blocked requests and stops the server.
func (s *Server) Close() {
	s.Release()
	s.Server.Close()
}
