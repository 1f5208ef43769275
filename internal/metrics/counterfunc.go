package metrics

// GaugeFunc registers a gauge read at scrape time. Deprecated: declare the
// series in scraped.go instead; kept until the last caller moved there.
func (m *Metrics) GaugeFunc(name, help string, fn func() float64) { m.gaugeFunc(name, help, fn) }

// CounterFunc registers a counter read at scrape time. Deprecated: declare
// the series in scraped.go instead; kept until the last caller moved there.
func (m *Metrics) CounterFunc(name, help, label, value string, fn func() float64) {
	m.counterFunc(name, help, label, value, fn)
}
