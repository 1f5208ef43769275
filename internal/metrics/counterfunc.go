package metrics

import "github.com/prometheus/client_golang/prometheus"

// CounterFunc registers a counter read at scrape time from a count kept
// elsewhere. With a label name, each call adds one series of the same
// counter (label = value); without, the counter has no labels.
func (m *Metrics) CounterFunc(name, help, label, value string, fn func() float64) {
	if m == nil {
		return
	}
	opts := prometheus.CounterOpts{Name: name, Help: help}
	if label != "" {
		opts.ConstLabels = prometheus.Labels{label: value}
	}
	m.registry.MustRegister(prometheus.NewCounterFunc(opts, fn))
}
