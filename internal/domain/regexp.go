package domain

import (
	"regexp"
	"sync"
)

// lazyPatterns is every pattern given to LazyRegexp, for MustCompileAll.
var (
	lazyMu       sync.Mutex
	lazyPatterns []string
)

// LazyRegexp returns a function that compiles pattern on its first call and
// returns the same *regexp.Regexp on every call.
//
// A package-level regexp.MustCompile runs in every start of the binary,
// whichever command runs: Go expands a counted repetition such as {1,255}
// into that many copies, and the project's ~30 patterns cost ~1 ms of a
// server's cold start (issue 18) before main. A pattern that does not
// compile panics at its first use instead of at start; MustCompileAll,
// called by a test of the binary's packages, keeps that a test failure.
func LazyRegexp(pattern string) func() *regexp.Regexp {
	lazyMu.Lock()
	lazyPatterns = append(lazyPatterns, pattern)
	lazyMu.Unlock()
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}

// MustCompileAll compiles every pattern given to LazyRegexp in the packages
// linked so far and returns how many there were. It panics, like
// regexp.MustCompile, on one that does not compile.
func MustCompileAll() int {
	lazyMu.Lock()
	defer lazyMu.Unlock()
	for _, p := range lazyPatterns {
		regexp.MustCompile(p)
	}
	return len(lazyPatterns)
}
