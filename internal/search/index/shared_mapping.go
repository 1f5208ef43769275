package index

import (
	"errors"
	"reflect"
	"unsafe"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/util"
)

// One mapping for every index. bleve stores an index's mapping as JSON among
// its internal values and, when it opens the index, parses it into a mapping
// of that index alone, with its own analyzers: 82 KiB of live heap per open
// project (the analyzers' word lists and the parsed JSON; 8 KiB more for the
// JSON kept in the scorch snapshot), the most an open small project held
// (BenchmarkManyProjects/reopened, issue 27). The mapping is fixed by this
// server's code, and the index records its format (indexFormat), so the
// stored copy says nothing the server does not know. So an index stores a
// stub instead, and an opened index is given the registry's shared mapping
// (Config.Mapping) before anyone uses it.
//
// bleve has no way to open an index with a given mapping; the upstream-shaped
// fix is an OpenUsing runtime option that carries one. Until then
// adoptMapping sets the mapping field of bleve's index (v2.6.3, index_impl.go:
// indexImpl.m) and checks that Mapping() answers it; with another bleve it
// fails, every open is refused and the index is rebuilt on each use, which
// TestOpenedIndexSharesTheMapping catches first.

// stubMapping is the mapping an index stores: the smallest JSON bleve
// accepts. An older server that trusted it would search with bleve's default
// mapping, which is why storing it raised indexFormat.
var stubMapping = []byte("{}")

// storeStubMapping replaces the mapping bleve stored in a new index, in the
// batch that records the index's format.
func storeStubMapping(b *bleve.Batch) {
	b.SetInternal(util.MappingInternalKey, stubMapping)
}

var errMappingNotAdopted = errors.New("cannot give the opened index the shared mapping (bleve's index changed)")

// adoptMapping makes idx, just opened, use m. Nothing uses idx yet: the
// project's lock is held and idx is not installed.
func adoptMapping(idx bleve.Index, m mapping.IndexMapping) error {
	v := reflect.ValueOf(idx)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return errMappingNotAdopted
	}
	f := v.Elem().FieldByName("m")
	if !f.IsValid() || f.Type() != reflect.TypeFor[mapping.IndexMapping]() {
		return errMappingNotAdopted
	}
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(m))
	if idx.Mapping() != m {
		return errMappingNotAdopted
	}
	return nil
}
