// Package text is how Munin reads words, at the bottom of the search
// packages: the analyzers every indexed text and every query go through (each
// word with its English and German stem, function words of both languages
// dropped), the fields a text is indexed in, a query's distinct terms and the
// checks a query passes before it is searched, and the snippet of a hit with
// its matched words marked. It knows nothing of indexes, ranking or
// projects; internal/search/index maps its fields, internal/search/rank
// searches its terms.
package text
