package eval

// PassAtK is the unbiased estimator of pass@k from n runs of which c
// passed: 1 - C(n-c, k) / C(n, k), the chance that at least one of k runs
// drawn without replacement passed. It is computed as the product
// 1 - Π_{i=n-c+1..n} (1 - k/i), which never forms the binomials (they
// overflow for large n). k must be in 1..n and c in 0..n; otherwise the
// estimate is undefined and ok is false.
func PassAtK(n, c, k int) (p float64, ok bool) {
	if n < 1 || k < 1 || k > n || c < 0 || c > n {
		return 0, false
	}
	if n-c < k {
		return 1, true // every k-subset holds a pass
	}
	q := 1.0
	for i := n - c + 1; i <= n; i++ {
		q *= 1 - float64(k)/float64(i)
	}
	return 1 - q, true
}
