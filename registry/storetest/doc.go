// Package storetest holds the conformance suites every store backend must
// pass, written once and run against each implementation (the way Nomad's
// drivers share one harness):
//
//	func TestConformance(t *testing.T) {
//		storetest.RunDocumentStore(t, func(t *testing.T) registry.DocumentStore { return openFresh(t) })
//	}
//
// Suites never sleep and never assert on timing; concurrency is checked by
// outcome (50 concurrent puts of one id yield versions 1..50 exactly).
package storetest
